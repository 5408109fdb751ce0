"""``zatile asm``, ``disasm``, ``run`` and ``compare``: straight-line programs on the backends.
"""

from __future__ import annotations

from pathlib import Path

from zatile.sw.arch.asm import AsmError, assemble, objdump_lines
from zatile.sw.arch.constants import FpsrFlag
from zatile.sw.cli.common import (
    CliError, add_command, backend_list, initial_state, output_path, print_json, read_program,
    read_text, read_words, svl, write_bytes,
)
from zatile.sw.cli.views import TileView, format_tile, register_list, register_values, \
    tile_view, written_registers

__all__ = ["register"]


def _cmd_asm(args) -> int:
    try:
        words = assemble(read_text(args.source))
    except AsmError as error:
        raise CliError(f"{args.source}: {error}") from None
    output = Path(args.output or Path(args.source).with_suffix(".bin"))
    write_bytes(output, b"".join(word.to_bytes(4, "little") for word in words))
    print(f"{len(words)} instructions -> {output}")
    return 0


def _cmd_disasm(args) -> int:
    for line in objdump_lines(read_words(args.binary)):
        print(line)
    return 0


def _run(args, initial, source: str):
    """Run on ``args.backend``; the RTL directly, for its counters and ``--waves``."""
    from zatile.sw.backends import run_program  # local: keeps `zatile --help` fast
    from zatile.tb.rtl_run import run_rtl  # local: keeps `zatile --help` fast

    try:
        if args.backend == "rtl":
            return run_rtl(source, initial, waves=args.waves)
        return run_program(args.backend, source, initial)
    except AsmError as error:
        raise CliError(f"{args.program}: {error}") from None


def _outcome_json(args, outcome, source: str) -> dict:
    final = outcome.final
    report = {
        "program": args.program, "backend": args.backend, "svl": final.svl,
        "instructions": len(outcome.outcomes),
        "trapped": [{"index": o.index, "text": o.text, "status": o.status, "smtc": o.smtc,
                     "fault_address": o.fault_address} for o in outcome.trapped],
        "svcr": final.svcr, "fpcr": final.fpcr, "fpsr": final.fpsr, "nzcv": final.nzcv,
        "written": written_registers(source, outcome),
        "tiles": {spec: tile_view(final, spec)[1] for spec in args.show or ()},
    }
    if args.regs:
        report["registers"] = register_values(final, args.regs)
    if args.backend == "rtl":
        report["rtl"] = {"cycles": outcome.cycles, "perf": outcome.perf,
                         "seconds": round(outcome.seconds, 3)}
    if args.waves:
        report["waveform"] = str(outcome.waveform)
    if args.state_out:
        report["state_out"] = str(args.state_out)
    return report


def _fpsr_flags_text(fpsr: int) -> str:
    """`` (IOC IXC)``: the cumulative exception bits set in ``fpsr``, or nothing."""
    names = [flag.name for flag in FpsrFlag if fpsr & flag]
    return f" ({' '.join(names)})" if names else ""


def _print_outcome(args, outcome, source: str) -> None:
    final = outcome.final
    print(f"{args.program}: {len(outcome.outcomes)} instructions on {args.backend} at SVL "
          f"{final.svl}; {len(outcome.trapped)} trapped")
    for trapped in outcome.trapped:
        detail = f" (SMTC {trapped.smtc})" if trapped.smtc is not None else ""
        detail += f" at 0x{trapped.fault_address:x}" if trapped.fault_address is not None else ""
        print(f"  #{trapped.index} {trapped.text}: {trapped.status}{detail}")
    print(f"SVCR=0x{final.svcr:x} (SM={int(final.sm)} ZA={int(final.za_enabled)}) "
          f"FPCR=0x{final.fpcr:08x} FPSR=0x{final.fpsr:08x}{_fpsr_flags_text(final.fpsr)} "
          f"NZCV={final.nzcv:04b}")
    written = written_registers(source, outcome)
    if written:
        print("scalar results: " + ", ".join(f"{name}=0x{value:x} ({value})"
                                             for name, value in written.items()))
    if args.backend == "rtl":
        print(f"RTL: {outcome.perf.get('cycles', 0)} cycles for the program "
              f"({outcome.cycles} simulated with the state load, {outcome.seconds:.1f} s)")
        print("  " + ", ".join(f"{name}={count}" for name, count in outcome.perf.items()))
    for name, value in register_values(final, args.regs or ()).items():
        print(f"{name:>4} = " + (f"0x{value:016x} ({value})" if isinstance(value, int)
                                 else value))
    for spec in args.show or ():
        print(format_tile(*tile_view(final, spec)))
    if args.waves:
        print(f"waveform -> {outcome.waveform}")
    if args.state_out:
        print(f"final state -> {args.state_out}")


def _cmd_run(args) -> int:
    if args.waves and args.backend != "rtl":
        raise CliError("--waves needs --backend rtl")
    initial = initial_state(args)
    source = read_program(args.program)
    outcome = _run(args, initial, source)
    if args.state_out:
        try:
            with open(args.state_out, "wb") as file:
                outcome.final.save(file)
        except OSError as error:
            raise CliError(f"cannot write '{args.state_out}': {error.strerror}") from None
    if args.json:
        print_json(_outcome_json(args, outcome, source))
    else:
        _print_outcome(args, outcome, source)
    return 0


def _cmd_compare(args) -> int:
    from zatile.sw.backends import compare  # local: keeps `zatile --help` fast

    initial = initial_state(args)
    try:
        result = compare(read_program(args.program), initial, args.backends)
    except AsmError as error:
        raise CliError(f"{args.program}: {error}") from None
    status = 0 if result.agree else 1
    if args.json:
        print_json({"program": args.program, "svl": args.svl, "backends": args.backends,
                    "agree": result.agree, **result.to_json_dict()})
        return status
    modelled = sorted(set(result.divergences) - set(result.explained_ids))
    note = f" (QEMU divergences modelled: {', '.join(modelled)})" if modelled else ""
    if result.agree:
        print(f"{args.program}: {', '.join(args.backends)} agree at SVL {args.svl}{note}")
    else:
        print(f"{args.program}: MISMATCH at SVL {args.svl}: {result.difference}{note}")
    for explained in result.explained:
        print(f"  explained by a known divergence: {explained}")
    return status


def register(commands) -> None:
    """Add the subcommands to ``commands`` (an argparse subparsers object)."""
    asm = add_command(commands, "asm", "assemble a program to little-endian words",
                      "zatile asm prog.s -o prog.bin")
    asm.add_argument("source", help="assembly source (GNU as syntax, the subset only)")
    asm.add_argument("-o", "--output", type=output_path,
                     help="file to write (default: the source with .bin)")
    asm.set_defaults(run=_cmd_asm)

    disasm = add_command(commands, "disasm", "disassemble words (objdump 2.40 text)",
                         "zatile disasm prog.bin | head")
    disasm.add_argument("binary", help="little-endian 32-bit words, as asm writes them")
    disasm.set_defaults(run=_cmd_disasm)

    run = add_command(commands, "run", "run a program and summarise the final state",
                      "zatile run prog.s --svl 256 --show za1.s:f32 --regs x,z3 --json")
    _program_arguments(run)
    run.add_argument("--backend", choices=("model", "qemu", "rtl"), default="model",
                     help="where to run it (default: model)")
    run.add_argument("--state-out", type=output_path, metavar="FILE.npz",
                     help="write the final state as a snapshot")
    run.add_argument("--show", action="append", type=TileView, metavar="TILE[:VIEW]",
                     help="print a tile, e.g. za1.s, za1.s:f32, za0.h:bf16, za0.b:u8, za0.d:hex "
                          "(views: i8-i64, u8-u64, f16, bf16, f32, f64, hex); repeatable")
    run.add_argument("--regs", type=register_list, metavar="LIST",
                     help="print registers: groups x (X0-X30, SP), z, p, ffr, or single ones "
                          "like x3,z1,p0 (Z/P/FFR as hex bytes, lane 0 first)")
    run.add_argument("--waves", type=output_path, metavar="FILE",
                     help="with --backend rtl: write the waveform there (FST; VCD from a "
                          "Verilator without liblz4-dev)")
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    run.set_defaults(run=_cmd_run)

    comparison = add_command(commands, "compare", "run on several backends, name differences",
                             "zatile compare prog.s --svl 256 --backends model,qemu,rtl")
    _program_arguments(comparison)
    comparison.add_argument("--backends", type=backend_list, default=["model", "qemu"],
                            metavar="A,B[,...]", help="backends to compare with the first "
                                                      "(default: model,qemu)")
    comparison.add_argument("--json", action="store_true", help="print the result as JSON")
    comparison.set_defaults(run=_cmd_compare)


def _program_arguments(parser) -> None:
    """The program, its SVL and its initial state (``run`` and ``compare``)."""
    parser.add_argument("program", help="assembly source, or a .bin of words from asm")
    parser.add_argument("--svl", type=svl, required=True,
                        help="streaming vector length in bits (128-2048)")
    parser.add_argument("--state-in", metavar="FILE.npz",
                        help="initial state snapshot (default: all zero, no memory)")
