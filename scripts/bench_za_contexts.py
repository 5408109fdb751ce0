#!/usr/bin/env python3
"""Virtual ZA contexts: what context switches cost with 1, 2 and 4 physical ZA contexts.

Runs two multi-threaded SME programs of ``tests/programs/`` under ``zatile exec`` with the RTL
engine (Verilator; each configuration is built once) or the model, at one SVL (512 by default):

* ``threads_za``: three threads and main, each with its own ZA kept across 12 rounds of work,
  yields and futex waits (four threads' ZA: resident in four physical contexts);
* ``za_libs threads``: the same four threads each calling two libraries that keep private state
  in virtual ZA contexts of their own (twelve virtual contexts, mostly with ZA on).

Prints per program and count of physical contexts: context switches, ZA contexts loaded and
evicted and binds that found theirs resident, the ZA bytes the kernel moved (and per switch),
and on the RTL the engine cycles of the kernel's own instructions (and per switch) and of the
whole run. Counts and cycles are deterministic for a program, SVL and count.

Usage: ``python scripts/bench_za_contexts.py [--svl 512] [--contexts 1 2 4] [--backend rtl]``
"""

from __future__ import annotations

import argparse
import io
import tempfile
from pathlib import Path

from zatile.sw.abi.rtl_exec import run_program_rtl
from zatile.sw.abi.runner import run_program
from zatile.sw.toolchain import compile_program

PROGRAMS = Path(__file__).resolve().parents[1] / "tests" / "programs"
#: name: (sources, arguments)
WORKLOADS = {
    "threads_za": (["threads_za.c"], []),
    "za_libs threads": (["za_libs.c", "za_lib_sum.c", "za_lib_dot.c"], ["threads"]),
}


def measure(program: Path, arguments: list[str], backend: str, svl: int, contexts: int) -> dict:
    runner = run_program_rtl if backend == "rtl" else run_program
    stdout, stderr = io.BytesIO(), io.BytesIO()
    result = runner(program, [str(program), *arguments], svl=svl, za_contexts=contexts,
                    stdout=stdout, stderr=stderr)
    if result.status != 0:
        raise RuntimeError(f"{program.name} failed with {contexts} contexts: status "
                           f"{result.status}, {stdout.getvalue()!r} {stderr.getvalue()!r}")
    return result.to_json_dict()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--svl", type=int, default=512)
    parser.add_argument("--contexts", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--backend", choices=("rtl", "model"), default="rtl")
    args = parser.parse_args()
    print(f"| program | physical contexts | switches | loads / evictions / resident | "
          f"ZA bytes moved | per switch | kernel engine cycles | per switch | engine cycles |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name, (sources, arguments) in WORKLOADS.items():
            program = Path(folder) / name.split()[0]
            compile_program([PROGRAMS / source for source in sources], program, ["-O2"])
            for contexts in args.contexts:
                figures = measure(program, arguments, args.backend, args.svl, contexts)
                switches = max(figures["context_switches"], 1)
                moved = figures["za_bytes_saved"] + figures["za_bytes_restored"]
                cycles = figures["kernel_engine_cycles"]
                print(f"| `{name}` | {contexts} | {figures['context_switches']} | "
                      f"{figures['za_loads']} / {figures['za_evictions']} / "
                      f"{figures['za_resident_hits']} | {moved:,} | {moved / switches:,.0f} | "
                      f"{cycles:,} | {cycles / switches:,.1f} | "
                      f"{figures.get('engine_cycles', 0):,} |", flush=True)


if __name__ == "__main__":
    main()
