"""``zatile demo`` and ``zatile verilog``: the shipped example, and the engine's Verilog.
"""

from __future__ import annotations

from pathlib import Path

from zatile.sw.arch.config import FEATURES, EngineConfig
from zatile.sw.cli.common import (CliError, add_command, positive_count, svl, svl_list,
                                  za_contexts)

__all__ = ["register"]


def _cmd_demo(args) -> int:
    if args.model == "digits":
        from zatile.sw.models.digits import run_demo  # local: keeps `zatile --help` fast

        return run_demo(backend=args.backend, svl=args.svl or 128, limit=args.limit)
    if args.svl is not None or args.limit is not None:
        raise CliError("--svl and --limit belong to 'zatile demo --model digits'")
    from zatile.sw.demo import run_demo  # local: keeps `zatile --help` fast

    return run_demo(backend=args.backend)


def _cmd_verilog(args) -> int:
    from zatile.hw.verilog import TOPLEVEL, generate_verilog  # local: keeps `zatile --help` fast

    output = Path(args.output)
    if output.exists() and not output.is_dir():
        raise CliError(f"'{output}' is a file; -o names the folder to write {TOPLEVEL}.v, .vlt "
                       f"and .json into")
    if not output.parent.is_dir():
        raise CliError(f"cannot create '{output}': folder '{output.parent}' does not exist")
    existing = [output / f"{TOPLEVEL}{suffix}" for suffix in (".v", ".vlt", ".json")
                if (output / f"{TOPLEVEL}{suffix}").exists()]
    if existing and not args.force:
        raise CliError(f"'{existing[0]}' exists; pass --force to overwrite")

    features = FEATURES if args.features is None else tuple(
        f.strip().upper() for f in args.features.split(",") if f.strip())
    try:
        config = EngineConfig(max_svl=args.svl, supported_svls=args.supported_svls,
                              features=frozenset(features), mem_data_width=args.mem_width,
                              za_contexts=args.za_contexts)
    except ValueError as error:
        raise CliError(str(error)) from None
    written = generate_verilog(config, output)
    for path in written:
        print(path)
    return 0


def register(commands) -> None:
    """Add the subcommands to ``commands`` (an argparse subparsers object)."""
    demo = add_command(commands, "demo", "run the shipped int8 GEMM example, or the digits CNN, "
                       "check vs numpy", "zatile demo --model digits --backend rtl --limit 20")
    demo.add_argument("--backend", choices=("model", "qemu", "rtl"), default="model",
                      help="where to run it (default: model)")
    demo.add_argument("--model", choices=("gemm", "digits"), default="gemm",
                      help="gemm: a 16x16 int8 GEMM program; digits: the quantized CNN on the "
                           "held-out handwritten digits (default: gemm)")
    demo.add_argument("--svl", type=svl, help="SVL in bits for --model digits (default 128)")
    demo.add_argument("--limit", type=positive_count, metavar="N",
                      help="classify only the first N held-out digits (--model digits)")
    demo.set_defaults(run=_cmd_demo)

    verilog = add_command(commands, "verilog", "write the engine's Verilog and config JSON",
                          "zatile verilog --svl 128 --features I8I32,F32F32 -o build/")
    verilog.add_argument("--svl", type=svl, required=True, help="largest SVL in bits")
    verilog.add_argument("--supported-svls", type=svl_list, metavar="BITS,...",
                         help="every supported SVL (default: all powers of two up to --svl)")
    verilog.add_argument("--features", help="comma-separated subset (default: all)")
    verilog.add_argument("--mem-width", type=positive_count, metavar="BITS",
                         help="memory data width (default: --svl, one slice per beat)")
    verilog.add_argument("--za-contexts", type=za_contexts, default=1, metavar="N",
                         help="physical ZA contexts (default 1)")
    verilog.add_argument("-o", "--output", required=True, metavar="DIR",
                         help="folder for zatile_engine.v, .vlt and .json (created)")
    verilog.add_argument("--force", action="store_true",
                         help="overwrite those files if the folder already has them")
    verilog.set_defaults(run=_cmd_verilog)
