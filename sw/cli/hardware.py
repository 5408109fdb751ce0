"""``zatile demo``, ``zatile verilog`` and ``zatile fpga``: the shipped example, the engine's
Verilog, and a design placed and routed on an ECP5 (:mod:`zatile.sw.fpga`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from zatile.sw.arch.config import EngineConfig
from zatile.sw.cli.common import (CliError, add_command, add_engine_options, engine_options,
                                  error_line, positive_count, svl, svl_list, za_contexts)

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

    output = _output_folder(args, f"to write {TOPLEVEL}.v, .vlt and .json into",
                            [f"{TOPLEVEL}{suffix}" for suffix in (".v", ".vlt", ".json")])
    written = generate_verilog(_config(args), output)
    for path in written:
        print(path)
    return 0


def _output_folder(args, purpose: str, names: list[str]) -> Path:
    """The ``-o`` folder, checked: a folder or creatable, and without the files ``names``
    unless ``--force``."""
    output = Path(args.output)
    if output.exists() and not output.is_dir():
        raise CliError(f"'{output}' is a file; -o names the folder {purpose}")
    if not output.parent.is_dir():
        raise CliError(f"cannot create '{output}': folder '{output.parent}' does not exist")
    existing = [output / name for name in names if (output / name).exists()]
    if existing and not args.force:
        raise CliError(f"'{existing[0]}' exists; pass --force to overwrite")
    return output


def _config(args) -> EngineConfig:
    """The engine configuration the options of :func:`_add_config_options` describe."""
    try:
        return EngineConfig(max_svl=args.svl, supported_svls=args.supported_svls,
                            mem_data_width=args.mem_width, za_contexts=args.za_contexts,
                            **engine_options(args))
    except ValueError as error:
        raise CliError(str(error)) from None


def _add_config_options(command) -> None:
    command.add_argument("--svl", type=svl, required=True, help="largest SVL in bits")
    command.add_argument("--supported-svls", type=svl_list, metavar="BITS,...",
                         help="every supported SVL (default: all powers of two up to --svl)")
    add_engine_options(command)
    command.add_argument("--mem-width", type=positive_count, metavar="BITS",
                         help="memory data width (default: --svl, one slice per beat)")
    command.add_argument("--za-contexts", type=za_contexts, default=1, metavar="N",
                         help="physical ZA contexts (default 1)")


def _cmd_fpga(args) -> int:
    # local (this and the next two): keeps `zatile --help` fast
    from zatile.hw.place_route import ECP5_DEVICES, DoesNotFit, PlaceRouteError
    from zatile.hw.synthesis import SynthesisError  # local: keeps `zatile --help` fast
    from zatile.sw.fpga import REPORT_NAME, place_design  # local: keeps `zatile --help` fast

    if args.device not in ECP5_DEVICES:
        raise CliError(f"unknown ECP5 device '{args.device}' (known: "
                       f"{', '.join(ECP5_DEVICES)})")
    if not 1 <= args.frequency <= 1000:
        raise CliError(f"--frequency must be between 1 and 1000 MHz, not {args.frequency:g}")
    output = _output_folder(args, f"for the Verilog, the nextpnr log and {REPORT_NAME}",
                            [REPORT_NAME])
    config = _config(args)
    try:
        report = place_design(config, output, design=args.design, device=args.device,
                              package=args.package, frequency_mhz=args.frequency,
                              seed=args.seed)
    except DoesNotFit as problem:
        sys.stderr.write(error_line(f"{problem} (report: {output / REPORT_NAME})"))
        return 1
    except (SynthesisError, PlaceRouteError) as problem:
        first = str(problem).splitlines()[0]
        sys.stderr.write(error_line(f"{first} (log: {output / 'nextpnr.log'})"))
        return 1
    clock = ", ".join(f"{clock} {mhz:.1f} MHz" for clock, mhz in report["fmax_mhz"].items())
    print(f"{report['toplevel']} on {args.device} {args.package}: {report['LUT4']:,} LUT4, "
          f"{report['FF']:,} FF, {report['MULT18X18D']} MULT18X18D, {report['DP16KD']} DP16KD; "
          f"Fmax {clock} (constraint {args.frequency:g} MHz"
          f"{'' if report['timing_met'] else ', not met'})")
    print(output / REPORT_NAME)
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
    _add_config_options(verilog)
    verilog.add_argument("-o", "--output", required=True, metavar="DIR",
                         help="folder for zatile_engine.v, .vlt and .json (created)")
    verilog.add_argument("--force", action="store_true",
                         help="overwrite those files if the folder already has them")
    verilog.set_defaults(run=_cmd_verilog)

    fpga = add_command(commands, "fpga", "place and route a design on a Lattice ECP5, report "
                       "its cells and Fmax",
                       "zatile fpga --device LFE5U-85F --package CABGA381 --svl 128 "
                       "--features I8I32,F32F32 -o build/")
    _add_config_options(fpga)
    fpga.add_argument("--design", default="soc", choices=_design_names(), metavar="DESIGN",
                      help="soc (the AXI SoC wrapper, default), engine, or one unit alone: "
                           + ", ".join(_design_names()[2:]))
    fpga.add_argument("--device", default="LFE5U-85F", help="ECP5 part (default LFE5U-85F)")
    fpga.add_argument("--package", default="CABGA381", help="package (default CABGA381)")
    fpga.add_argument("--frequency", type=float, default=100.0, metavar="MHZ",
                      help="clock constraint for nextpnr (default 100)")
    fpga.add_argument("--seed", type=int, default=1, help="nextpnr placement seed (default 1)")
    fpga.add_argument("-o", "--output", required=True, metavar="DIR",
                      help="folder for the Verilog, nextpnr.log and zatile_fpga.json (created)")
    fpga.add_argument("--force", action="store_true",
                      help="overwrite a report the folder already has")
    fpga.set_defaults(run=_cmd_fpga)


def _design_names() -> list[str]:
    from zatile.sw.fpga import DESIGNS  # local: keeps `zatile --help` fast

    return list(DESIGNS)
