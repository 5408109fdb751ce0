"""``zatile bench``: the model's instruction rate and the RTL engine's cycle figures
(:mod:`zatile.sw.bench`)."""

from __future__ import annotations

import argparse
import json

from zatile.sw.cli.common import (
    CliError, add_command, add_engine_options, engine_options, output_path, positive_count,
    print_json, svl_list,
)

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
    if "instructions_per_cycle" in figures:
        return (f"{figures['instructions_per_cycle']:.3f} instructions/cycle "
                f"({figures['instructions']} in {figures['busy_cycles']} busy cycles)")
    if "slices_per_beat" in figures:
        return (f"{figures['slices_per_beat']:.2f} slices/beat, "
                f"{figures['cycles_per_slice']:.2f} cycles/slice")
    return f"{figures['cycles_per_second']:,.0f} simulated cycles/s"


def _dtype_list(text: str) -> list[str]:
    """A comma-separated list of ``zatile bench gemm`` dtypes."""
    from zatile.sw.bench import GEMM_DTYPES  # local: keeps `zatile --help` fast

    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in GEMM_DTYPES]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"expected dtypes from {', '.join(GEMM_DTYPES)}, not '{text}'")
    return names


def _cmd_gemm(args) -> int:
    from zatile.sw import bench  # local: keeps `zatile --help` fast

    if args.workloads:
        raise CliError("--workloads does not apply to 'zatile bench gemm'")
    rows = [bench.bench_gemm(dtype, m, n, k, svl, args.backend)
            for dtype in args.dtype or ["fp32"] for m, n, k in args.size or [(64, 64, 64)]
            for svl in args.svl]
    for figures in rows:
        if args.json:               # one object per run, each on one line
            print(json.dumps(figures, sort_keys=True))
            continue
        line = (f"gemm {figures['dtype']} {figures['m']}x{figures['n']}x{figures['k']} on the "
                f"{args.backend} at SVL {figures['svl']}: {figures['mopas']:,} outer products "
                f"needed, {figures['engine_instructions']:,} engine instructions")
        if figures["utilization"] is not None:
            line += (f", {figures['busy_cycles']:,} busy cycles: utilization "
                     f"{figures['utilization']:.1%}, {figures['loads_per_outer_product']:.2f} "
                     f"memory instructions per outer product, {figures['bytes_moved']:,} bytes "
                     f"moved")
        print(line + ("" if figures["exact"] else "; THE RESULT DIFFERS FROM THE REFERENCE"))
    if args.plot:
        _plot(rows, args.plot)
    return 0 if all(figures["exact"] for figures in rows) else 1


def _plot(rows: list[dict], path) -> None:
    """Utilization against M·N·K, a line per dtype and SVL."""
    measured = [row for row in rows if row["utilization"] is not None]
    if not measured:
        raise CliError("--plot needs utilization figures: run with --backend rtl")
    import matplotlib  # local: keeps `zatile --help` fast

    matplotlib.use("Agg")
    from matplotlib import pyplot  # local: after choosing the non-interactive backend

    figure, axes = pyplot.subplots(figsize=(6, 4))
    for dtype, svl in dict.fromkeys((row["dtype"], row["svl"]) for row in measured):
        line = sorted((row["m"] * row["n"] * row["k"], row["utilization"]) for row in measured
                      if (row["dtype"], row["svl"]) == (dtype, svl))
        axes.plot(*zip(*line), "o-", label=f"{dtype}, SVL {svl}")
    axes.set_xscale("log", base=2)
    axes.set_xlabel("M·N·K")
    axes.set_ylabel("outer products needed / busy cycles")
    axes.set_ylim(0, 1)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path)


def _cmd_bench(args) -> int:
    from zatile.sw import bench  # local: keeps `zatile --help` fast
    from zatile.sw.arch.config import EngineConfig  # local: keeps `zatile --help` fast

    knobs = engine_options(args)
    if knobs and (args.what == "gemm" or args.backend == "model"):
        raise CliError("--features, --lanes, --vector-bits and --queue-depth belong to the RTL "
                       "workloads ('zatile bench --backend rtl')")
    if args.what == "gemm":
        return _cmd_gemm(args)
    if args.dtype or args.size or args.plot:
        raise CliError("--dtype, --size and --plot belong to 'zatile bench gemm'")
    results = {}
    try:
        for svl in args.svl:
            if args.backend == "model":
                workloads = args.workloads or list(bench.MODEL_WORKLOADS)
                results[svl] = {name: bench.bench_model(svl, name, args.instructions)
                                for name in workloads}
            else:
                config = EngineConfig(max_svl=svl, **knobs)
                workloads = args.workloads or list(bench.rtl_workloads(config))
                results[svl] = bench.bench_rtl(config, workloads)
    except ValueError as error:   # a bad configuration or workload, in their own words
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
                            "rtl mopa_rotating_int, ..., free_running, those the features "
                            "allow)")
    bench.add_argument("--instructions", type=positive_count, default=20_000,
                       help="model: instructions per measurement (default 20000)")
    bench.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_engine_options(bench)
    bench.add_argument("what", nargs="?", choices=("gemm",),
                       help="gemm: one GEMM of the kernel library (zatile.sw.ops.matmul); the "
                            "engine's utilization on the RTL")
    bench.add_argument("--dtype", type=_dtype_list, metavar="fp32|int8[,...]",
                       help="gemm: operand types (default fp32)")
    bench.add_argument("--size", type=positive_count, nargs=3, action="append",
                       metavar=("M", "N", "K"),
                       help="gemm: the product's M, N and K; repeat for several (default 64 64 "
                            "64)")
    bench.add_argument("--plot", type=output_path, metavar="FILE.png",
                       help="gemm: draw utilization against M·N·K per dtype and SVL "
                            "(matplotlib; needs --backend rtl)")
    bench.set_defaults(run=_cmd_bench)
