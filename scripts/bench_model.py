#!/usr/bin/env python3
"""Throughput of the reference model (sim.model), in instructions per second.

Two instruction streams per SVL, all predicates all-true, all accesses mapped:

* ``mopa``: FMOPA .S and SMOPA .S alternating over the four .S tiles and varying Z registers;
* ``ldst``: LD1W/ST1W of horizontal and vertical .S tile slices, and LDR/STR ZA.

Usage: ``python scripts/bench_model.py [--instructions N] [--svl 128 256 512]``
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np


from zatile.sim.model import ReferenceModel
from zatile.sw.arch.engine import Status
from zatile.sim.state import ArchState, Memory
from zatile.sw.arch.asm import assemble
from zatile.sw.arch.config import EngineConfig

DATA = 0x10_0000


def mopa_stream() -> list[int]:
    lines = []
    for index in range(64):
        tile, zn, zm = index % 4, index % 16, 16 + index % 16
        if index % 2:
            lines.append(f"smopa za{tile}.s, p0/m, p1/m, z{zn}.b, z{zm}.b")
        else:
            lines.append(f"fmopa za{tile}.s, p0/m, p1/m, z{zn}.s, z{zm}.s")
    return assemble("\n".join(lines))


def load_store_stream() -> list[int]:
    lines = []
    for index in range(64):
        tile, selector, hv = index % 4, 12 + index % 4, "hv"[index // 4 % 2]
        kind = index % 4
        if kind == 0:
            lines.append(f"ld1w {{za{tile}{hv}.s[w{selector}, 1]}}, p0/z, [x0, x1, lsl #2]")
        elif kind == 1:
            lines.append(f"st1w {{za{tile}{hv}.s[w{selector}, 2]}}, p1, [x2, x1, lsl #2]")
        elif kind == 2:
            lines.append(f"ldr za[w{selector}, 3], [x0, #3, mul vl]")
        else:
            lines.append(f"str za[w{selector}, 5], [x2, #5, mul vl]")
    return assemble("\n".join(lines))


def make_model(svl: int) -> ReferenceModel:
    rng = np.random.default_rng(svl)
    svl_b = svl // 8
    state = ArchState(svl=svl, svcr=3, za=rng.integers(0, 256, (svl_b, svl_b)),
                      memory=Memory({DATA: rng.integers(0, 256, 1 << 16, dtype=np.uint8)}))
    # Z: finite fp32 values (and arbitrary bytes for SMOPA); P0/P1 all true.
    state.z[...] = np.frombuffer(rng.uniform(-2, 2, 8 * svl_b).astype(np.float32).tobytes(),
                                 np.uint8).reshape(32, svl_b)
    state.p[...] = 0xFF
    state.x[0], state.x[1], state.x[2] = DATA, 3, DATA + 0x8000
    state.x[12:16] = (0, 5, 70000, 0xFFFF_FFFF)
    return ReferenceModel(EngineConfig(max_svl=svl), state)


def measure(model: ReferenceModel, words: list[int], instructions: int) -> float:
    executed, start = 0, time.perf_counter()
    while executed < instructions:
        for word in words:
            result = model.execute(word)
            if result.status is not Status.OK:
                raise RuntimeError(f"benchmark instruction 0x{word:08x} ended {result}")
        executed += len(words)
    return executed / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instructions", type=int, default=20_000,
                        help="instructions per measurement (default 20000)")
    parser.add_argument("--svl", type=int, nargs="+", default=[128, 256, 512])
    args = parser.parse_args(argv)
    streams = {"mopa (fmopa.s + smopa.s)": mopa_stream(),
               "ldst (ld1w/st1w H+V, ldr/str za)": load_store_stream()}
    print(f"{'stream':36} " + " ".join(f"{f'SVL {svl}':>12}" for svl in args.svl))
    for name, words in streams.items():
        rates = []
        for svl in args.svl:
            model = make_model(svl)
            measure(model, words, len(words))                 # warm the decode cache
            rates.append(measure(model, words, args.instructions))
        print(f"{name:36} " + " ".join(f"{rate:>12,.0f}" for rate in rates) + "  insn/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
