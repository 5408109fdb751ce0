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
    from zatile.sw.fpga import (BITSTREAM_NAME, REPORT_NAME,  # local: likewise
                                check_board_options, place_design)

    if args.device is not None and args.device not in ECP5_DEVICES:
        raise CliError(f"unknown ECP5 device '{args.device}' (known: "
                       f"{', '.join(ECP5_DEVICES)})")
    if not 1 <= args.frequency <= 1000:
        raise CliError(f"--frequency must be between 1 and 1000 MHz, not {args.frequency:g}")
    config = _config(args)
    if args.board is not None:
        try:
            check_board_options(config, args.board, design=args.design, device=args.device,
                                package=args.package, frequency_mhz=args.frequency,
                                ram_bytes=args.board_ram)
        except (ImportError, ValueError) as error:
            raise CliError(str(error)) from None
    elif args.board_ram is not None:
        raise CliError("--board-ram belongs to --board")
    output = _output_folder(args, f"for the Verilog, the nextpnr log and {REPORT_NAME}",
                            [REPORT_NAME, *([BITSTREAM_NAME] if args.board else [])])
    try:
        report = place_design(config, output, design=args.design, device=args.device,
                              package=args.package, frequency_mhz=args.frequency,
                              seed=args.seed, board=args.board, board_ram_bytes=args.board_ram)
    except DoesNotFit as problem:
        sys.stderr.write(error_line(f"{problem} (report: {output / REPORT_NAME})"))
        return 1
    except (SynthesisError, PlaceRouteError) as problem:
        first = str(problem).splitlines()[0]
        sys.stderr.write(error_line(f"{first} (log: {output / 'nextpnr.log'})"))
        return 1
    if args.board is None:
        clock = ", ".join(f"{clock} {mhz:.1f} MHz" for clock, mhz in report["fmax_mhz"].items())
        timing = (f"{clock} (constraint {args.frequency:g} MHz"
                  f"{'' if report['timing_met'] else ', not met'})")
        where = f"{report['device']} {report['package']}"
    else:
        engine = report["engine_clock"]
        timing = (f"engine clock {engine['fmax_mhz']:.1f} MHz (PLL {engine['constraint_mhz']:g}"
                  f" MHz{'' if engine['timing_met'] else ', not met'})" if engine else
                  "engine clock not reported")
        where = f"{args.board} ({report['device']} {report['package']})"
    print(f"{report['toplevel']} on {where}: {report['LUT4']:,} LUT4, {report['FF']:,} FF, "
          f"{report['MULT18X18D']} MULT18X18D, {report['DP16KD']} DP16KD; Fmax {timing}")
    print(output / REPORT_NAME)
    if args.board is not None:
        print(report["bitstream"])
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
    fpga.add_argument("--device", help="ECP5 part (default LFE5U-85F, or the board's)")
    fpga.add_argument("--package", help="package (default CABGA381, or the board's)")
    fpga.add_argument("--frequency", type=float, default=100.0, metavar="MHZ",
                      help="clock constraint for nextpnr; with --board, the engine clock the "
                           "board's PLL makes (default 100)")
    fpga.add_argument("--board", metavar="BOARD",
                      help="place the soc design on a board's pins in its board top (PLL, USB "
                           "serial to the control port, on-chip RAM) and write a bitstream: "
                           "ulx3s (ULX3S 85F) or ecpix5 (ECPIX-5 85F)")
    fpga.add_argument("--board-ram", type=positive_count, metavar="BYTES",
                      help="the board top's on-chip RAM (a power of two; default 16384)")
    fpga.add_argument("--seed", type=int, default=1, help="nextpnr placement seed (default 1)")
    fpga.add_argument("-o", "--output", required=True, metavar="DIR",
                      help="folder for the Verilog, nextpnr.log, zatile_fpga.json and the "
                           "bitstream (created)")
    fpga.add_argument("--force", action="store_true",
                      help="overwrite a report (or bitstream) the folder already has")
    fpga.set_defaults(run=_cmd_fpga)


def _design_names() -> list[str]:
    from zatile.sw.fpga import DESIGNS  # local: keeps `zatile --help` fast

    return list(DESIGNS)
