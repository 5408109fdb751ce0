#!/usr/bin/env python3
"""Real-program speed: the fp32 GEMM of ``tests/programs/gemm_f32.c`` under ``zatile exec``.

Compiles the program with ``zatile cc -O2`` and runs it with the reference model and with the
RTL engine (Verilator; the first run at an SVL builds it) behind the host CPU, at each SVL.
Prints, per backend and SVL: host (Unicorn) instructions and engine instructions executed, wall
time, the share of it spent in the engine's ``issue`` (the rest is the host CPU, its hooks and
the system calls), host and engine instructions per second, and for the RTL the simulated
engine cycles. Host instructions are counted (a hook per translated block), which slows the
host CPU a little. Seconds depend on the machine; instruction and cycle counts do not.

Usage: ``python scripts/bench_exec.py [--svl 128 512] [--backends model rtl] [--size 32 32 32]``
"""

from __future__ import annotations

import argparse
import io
import json
import tempfile
from pathlib import Path

from zatile.sw.abi.runner import run_program
from zatile.sw.abi.rtl_exec import run_program_rtl
from zatile.sw.toolchain import compile_program

PROGRAM = Path(__file__).resolve().parents[1] / "tests" / "programs" / "gemm_f32.c"


def measure(program: Path, backend: str, svl: int, size: list[int]) -> dict:
    """One run's figures (``ProcessResult.to_json_dict`` plus rates)."""
    argv = [str(program), *map(str, size), "0"]          # no scalar loop: the GEMM alone
    runner = run_program_rtl if backend == "rtl" else run_program
    stdout = io.BytesIO()
    result = runner(program, argv, svl=svl, stdout=stdout, count_instructions=True)
    if result.status != 0 or b": ok" not in stdout.getvalue():
        raise RuntimeError(f"the GEMM failed on {backend} at SVL {svl}: status {result.status}, "
                           f"output {stdout.getvalue()!r}")
    figures = result.to_json_dict()
    seconds = max(result.wall_seconds, 1e-9)
    figures.update(backend=backend, svl=svl, size=size,
                   host_per_second=result.host_instructions / seconds,
                   engine_per_second=result.engine_instructions / seconds,
                   engine_share=result.engine_seconds / seconds)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--svl", type=int, nargs="+", default=[128, 512])
    parser.add_argument("--backends", nargs="+", choices=("model", "rtl"),
                        default=["model", "rtl"])
    parser.add_argument("--size", type=int, nargs=3, default=[32, 32, 32], metavar=("M", "N", "K"))
    parser.add_argument("--json", action="store_true", help="one JSON object per run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        program = Path(scratch) / "gemm_f32"
        compile_program([PROGRAM], program, ["-O2"])
        for svl in args.svl:
            for backend in args.backends:
                figures = measure(program, backend, svl, args.size)
                if args.json:
                    print(json.dumps(figures), flush=True)
                    continue
                cycles = (f", {figures['engine_cycles']:,} engine cycles"
                          if "engine_cycles" in figures else "")
                print(f"{backend:>5} SVL {svl}: gemm {'x'.join(map(str, args.size))}: "
                      f"{figures['host_instructions']:,} host + "
                      f"{figures['engine_instructions']:,} engine instructions in "
                      f"{figures['wall_seconds']:.2f} s ({figures['engine_share']:.0%} in the "
                      f"engine): {figures['host_per_second']:,.0f} host/s, "
                      f"{figures['engine_per_second']:,.0f} engine/s{cycles}", flush=True)


if __name__ == "__main__":
    main()
