#!/usr/bin/env python3
"""Throughput of the reference model (sim.model), in instructions per second.

The workloads are :data:`zatile.sw.bench.MODEL_WORKLOADS` (``zatile bench --backend model`` runs
the same): ``mopa`` (FMOPA .S and SMOPA .S over the four .S tiles) and ``ldst`` (LD1W/ST1W of
horizontal and vertical .S tile slices, LDR/STR ZA).

Usage: ``python scripts/bench_model.py [--instructions N] [--svl 128 256 512]``
"""

from __future__ import annotations

import argparse
import sys

from zatile.sw.bench import MODEL_WORKLOADS, bench_model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instructions", type=int, default=20_000,
                        help="instructions per measurement (default 20000)")
    parser.add_argument("--svl", type=int, nargs="+", default=[128, 256, 512])
    args = parser.parse_args(argv)
    print(f"{'workload':10} " + " ".join(f"{f'SVL {svl}':>12}" for svl in args.svl))
    for workload in MODEL_WORKLOADS:
        rates = [bench_model(svl, workload, args.instructions)["instructions_per_second"]
                 for svl in args.svl]
        print(f"{workload:10} " + " ".join(f"{rate:>12,.0f}" for rate in rates) + "  insn/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
