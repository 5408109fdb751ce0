"""Packing A for the fp32 GEMM: through ZA on the engine, or on the host (what matmul does).

    .venv/bin/python scripts/bench_pack.py [--svl 128] [--size 64 128]

For each size M = K: the RTL's busy cycles for ``zatile_transpose_32`` of A (the engine-side
packing, :mod:`zatile.sw.kernels.pack`) next to the busy cycles of the GEMM itself (M = N = K),
and the host's time for the numpy packing ``matmul`` uses (median of 100 runs).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from zatile.sw import ops


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--svl", type=int, default=128)
    parser.add_argument("--size", type=int, nargs="+", default=[64, 128])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    for size in args.size:
        a = rng.standard_normal((size, size)).astype(np.float32)
        pack: dict = {}
        assert np.array_equal(ops.transpose(a, backend="rtl", svl=args.svl, stats=pack), a.T)
        gemm: dict = {}
        ops.matmul(a, a, backend="rtl", svl=args.svl, stats=gemm)
        host = []
        for _ in range(100):
            started = time.perf_counter()
            np.ascontiguousarray(a.T).tobytes()
            host.append(time.perf_counter() - started)
        print(f"M = K = {size} at SVL {args.svl}: packing A through ZA {pack['busy_cycles']:,} "
              f"busy cycles ({pack['engine_instructions']:,} engine instructions) = "
              f"{pack['busy_cycles'] / gemm['busy_cycles']:.1%} of the GEMM's "
              f"{gemm['busy_cycles']:,}; on the host {statistics.median(host) * 1e6:.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
