"""``zatile demo`` and ``zatile verilog``: the shipped example, and the engine's Verilog.
"""

from __future__ import annotations

from pathlib import Path

from zatile.sw.arch.config import FEATURES, EngineConfig
from zatile.sw.cli.common import CliError, svl, svl_list

__all__ = ["register"]


def _cmd_demo(args) -> int:
    from zatile.sw.demo import run_demo  # local: keeps `zatile --help` fast

    return run_demo(backend=args.backend)


def _cmd_verilog(args) -> int:
    from zatile.hw.verilog import generate_verilog  # local: keeps `zatile --help` fast

    features = FEATURES if args.features is None else tuple(
        f.strip().upper() for f in args.features.split(",") if f.strip())
    try:
        config = EngineConfig(max_svl=args.svl, supported_svls=args.supported_svls,
                              features=frozenset(features), mem_data_width=args.mem_width,
                              za_contexts=args.za_contexts)
    except ValueError as error:
        raise CliError(str(error)) from None
    written = generate_verilog(config, Path(args.output))
    for path in written:
        print(path)
    return 0


def register(commands) -> None:
    """Add the subcommands to ``commands`` (an argparse subparsers object)."""
    demo = commands.add_parser("demo", help="run the shipped int8 GEMM example, check vs numpy")
    demo.add_argument("--backend", choices=("model", "qemu", "rtl"), default="model")
    demo.set_defaults(run=_cmd_demo)

    verilog = commands.add_parser("verilog", help="write the engine's Verilog and config JSON")
    verilog.add_argument("--svl", type=svl, required=True, help="largest SVL in bits")
    verilog.add_argument("--supported-svls", type=svl_list, metavar="BITS,...",
                         help="every supported SVL (default: all powers of two up to --svl)")
    verilog.add_argument("--features", help="comma-separated subset (default: all)")
    verilog.add_argument("--mem-width", type=int, metavar="BITS",
                         help="memory data width (default: --svl, one slice per beat)")
    verilog.add_argument("--za-contexts", type=int, default=1, metavar="N",
                         help="physical ZA contexts (default 1)")
    verilog.add_argument("-o", "--output", required=True)
    verilog.set_defaults(run=_cmd_verilog)
