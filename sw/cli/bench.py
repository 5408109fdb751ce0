"""``zatile bench``: the model's instruction rate and the RTL engine's cycle figures
(:mod:`zatile.sw.bench`)."""

from __future__ import annotations

import argparse

from zatile.sw.cli.common import CliError, add_command, positive_count, print_json, svl_list

__all__ = ["register"]


def _workload_list(text: str) -> list[str]:
    """A comma-separated list of workload names (checked against the backend's when it runs)."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected workload names like mopa,ldst, not '{text}'")
    return names


def _rtl_line(name: str, figures: dict) -> str:
    if "outer_products_per_cycle" in figures:
        return (f"{figures['outer_products_per_cycle']:.3f} outer products/cycle "
                f"({figures['retired_mopa']} in {figures['busy_cycles']} busy cycles)")
    if "slices_per_beat" in figures:
        return (f"{figures['slices_per_beat']:.2f} slices/beat, "
                f"{figures['cycles_per_slice']:.2f} cycles/slice")
    return f"{figures['cycles_per_second']:,.0f} simulated cycles/s"


def _cmd_bench(args) -> int:
    from zatile.sw import bench  # local: keeps `zatile --help` fast
    from zatile.sw.arch.config import EngineConfig  # local: keeps `zatile --help` fast

    results = {}
    try:
        for svl in args.svl:
            if args.backend == "model":
                workloads = args.workloads or list(bench.MODEL_WORKLOADS)
                results[svl] = {name: bench.bench_model(svl, name, args.instructions)
                                for name in workloads}
            else:
                workloads = args.workloads or list(bench.rtl_workloads())
                results[svl] = bench.bench_rtl(EngineConfig(max_svl=svl), workloads)
    except ValueError as error:           # an unknown workload, in the benchmark's own words
        raise CliError(str(error)) from None
    if args.json:
        print_json({"backend": args.backend,
                    "results": {str(svl): figures for svl, figures in results.items()}})
        return 0
    for svl, figures in results.items():
        print(f"{args.backend} at SVL {svl}:")
        for name, measured in figures.items():
            line = f"{measured['instructions_per_second']:,.0f} instructions/s" \
                if args.backend == "model" else _rtl_line(name, measured)
            print(f"  {name:<22} {line}")
    return 0


def register(commands) -> None:
    """Add the subcommand to ``commands`` (an argparse subparsers object)."""
    bench = add_command(commands, "bench", "measure the model's speed or the RTL's cycle figures",
                        "zatile bench --backend rtl --svl 128 --workloads mopa_rotating_fp --json")
    bench.add_argument("--backend", choices=("model", "rtl"), default="model",
                       help="model: instructions/s; rtl: cycles under cocotb (default model)")
    bench.add_argument("--svl", type=svl_list, default=[128, 256, 512], metavar="BITS,...",
                       help="SVLs to measure at (default 128,256,512)")
    bench.add_argument("--workloads", type=_workload_list, metavar="NAME,...",
                       help="workloads to run (default: all of the backend's: model mopa,ldst; "
                            "rtl mopa_rotating_int, ..., free_running)")
    bench.add_argument("--instructions", type=positive_count, default=20_000,
                       help="model: instructions per measurement (default 20000)")
    bench.add_argument("--json", action="store_true", help="print the figures as JSON")
    bench.set_defaults(run=_cmd_bench)
