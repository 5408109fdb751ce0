"""``zatile``: the command-line face of the library (every command is a thin wrapper)."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

__all__ = ["main"]


class CliError(Exception):
    """A user error: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (``zatile: error: ...``), exit status 2."""

    def error(self, message: str):
        self.exit(2, f"zatile: error: {message}\n")


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as error:
        raise CliError(f"cannot read '{path}': {error.strerror}") from None


def _svl(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"SVL must be a number of bits, not '{text}'") from None
    if value not in (128, 256, 512, 1024, 2048):
        raise argparse.ArgumentTypeError(
            f"SVL must be a power of two between 128 and 2048 bits, not {value}")
    return value


def _svl_list(text: str) -> list[int]:
    return [_svl(part) for part in text.split(",") if part]


def _backend_list(text: str) -> list[str]:
    from sim.backends import BACKENDS

    names = [part.strip() for part in text.split(",") if part.strip()]
    for name in names:
        if name not in BACKENDS:
            raise argparse.ArgumentTypeError(
                f"unknown backend '{name}'; choose from {', '.join(BACKENDS)}")
    if len(names) < 2:
        raise argparse.ArgumentTypeError(f"compare needs at least two backends, not '{text}'")
    return names


# ----------------------------------------------------------------------------- commands
def _cmd_asm(args) -> int:
    from sw.asm import AsmError, assemble

    try:
        words = assemble(_read_text(args.source))
    except AsmError as error:
        raise CliError(f"{args.source}: {error}") from None
    output = Path(args.output or Path(args.source).with_suffix(".bin"))
    output.write_bytes(b"".join(word.to_bytes(4, "little") for word in words))
    print(f"{len(words)} instructions -> {output}")
    return 0


def _cmd_disasm(args) -> int:
    from sw.asm import objdump_lines

    try:
        data = Path(args.binary).read_bytes()
    except OSError as error:
        raise CliError(f"cannot read '{args.binary}': {error.strerror}") from None
    if len(data) % 4:
        raise CliError(f"'{args.binary}' is {len(data)} bytes, not a whole number of 32-bit words")
    words = [int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data), 4)]
    for line in objdump_lines(words):
        print(line)
    return 0


def _initial_state(args):
    from sim.state import ArchState, SnapshotError

    if args.state_in:
        try:
            return ArchState.load(args.state_in, svl=args.svl)
        except SnapshotError as error:
            raise CliError(str(error)) from None
    return ArchState(svl=args.svl)


_TILE = re.compile(r"za(\d+)\.([bhsdq])$")


def show_tile(state, spec: str) -> str:
    """A typed matrix view of one ZA tile, e.g. ``za1.s`` (integers; hex for .q)."""
    match = _TILE.match(spec.lower())
    if not match:
        raise CliError(f"--show takes a tile like za1.s or za0.b, not '{spec}'")
    tile, letter = int(match.group(1)), match.group(2)
    esize = {"b": 1, "h": 2, "s": 4, "d": 8, "q": 16}[letter]
    if tile >= esize:
        raise CliError(f"there is no tile {spec}: .{letter} tiles are za0-za{esize - 1}")
    dim = state.svl_bytes // esize
    rows = state.za[tile::esize][:dim]
    if esize == 16:
        body = [" ".join(row[c * 16:(c + 1) * 16][::-1].tobytes().hex() for c in range(dim))
                for row in rows]
    else:
        dtype = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[esize]
        values = rows.copy().view(dtype)
        width = max(len(str(v)) for v in values.flat)
        body = [" ".join(f"{v:>{width}}" for v in row) for row in values]
    return f"{spec} ({dim}x{dim}, int{8 * esize} view):\n" + "\n".join(body)


def _cmd_run(args) -> int:
    from sim.backends import run_program
    from sw.asm import AsmError

    initial = _initial_state(args)
    try:
        outcome = run_program(args.backend, _read_text(args.program), initial)
    except AsmError as error:
        raise CliError(f"{args.program}: {error}") from None
    final = outcome.final
    print(f"{args.program}: {len(outcome.outcomes)} instructions on {args.backend} at SVL "
          f"{final.svl}; {len(outcome.trapped)} trapped")
    for trapped in outcome.trapped:
        detail = f" (SMTC {trapped.smtc})" if trapped.smtc is not None else ""
        detail += f" at 0x{trapped.fault_address:x}" if trapped.fault_address is not None else ""
        print(f"  #{trapped.index} {trapped.text}: {trapped.status}{detail}")
    print(f"SVCR=0x{final.svcr:x} (SM={int(final.sm)} ZA={int(final.za_enabled)}) "
          f"FPCR=0x{final.fpcr:08x} FPSR=0x{final.fpsr:08x}")
    for spec in args.show or ():
        print(show_tile(final, spec))
    if args.state_out:
        final.save(args.state_out)
        print(f"final state -> {args.state_out}")
    return 0


def _cmd_compare(args) -> int:
    from sim.backends import compare
    from sw.asm import AsmError

    initial = _initial_state(args)
    try:
        result = compare(_read_text(args.program), initial, args.backends)
    except AsmError as error:
        raise CliError(f"{args.program}: {error}") from None
    used = sorted({d for o in result.outcomes.values() for d in o.divergences})
    note = f" (modelled QEMU divergences: {', '.join(used)})" if used else ""
    if result.agree:
        print(f"{args.program}: {', '.join(args.backends)} agree at SVL {args.svl}{note}")
        return 0
    print(f"{args.program}: MISMATCH at SVL {args.svl}: {result.difference}{note}")
    return 1


def _cmd_campaign(args) -> int:
    from sim.campaign import run_campaign

    report = run_campaign(programs=args.programs, svls=args.svl, length=args.length,
                          seed=args.seed, backends=args.backends)
    print(report.summary())
    return 0 if report.ok else 1


def _cmd_demo(args) -> int:
    from sw.demo import run_demo

    return run_demo(backend=args.backend)


def _cmd_verilog(args) -> int:
    from hw.verilog import generate_verilog
    from sw.config import FEATURES, EngineConfig

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


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="zatile", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    asm = commands.add_parser("asm", help="assemble a program to little-endian words")
    asm.add_argument("source")
    asm.add_argument("-o", "--output")
    asm.set_defaults(run=_cmd_asm)

    disasm = commands.add_parser("disasm", help="disassemble words (objdump 2.40 text)")
    disasm.add_argument("binary")
    disasm.set_defaults(run=_cmd_disasm)

    run = commands.add_parser("run", help="run a program and summarise the final state")
    run.add_argument("program")
    run.add_argument("--svl", type=_svl, required=True, help="streaming vector length in bits")
    run.add_argument("--state-in")
    run.add_argument("--state-out")
    run.add_argument("--backend", choices=("model", "qemu", "rtl"), default="model")
    run.add_argument("--show", action="append", metavar="TILE", help="print a tile, e.g. za1.s")
    run.set_defaults(run=_cmd_run)

    comparison = commands.add_parser("compare", help="run on several backends, name differences")
    comparison.add_argument("program")
    comparison.add_argument("--svl", type=_svl, required=True)
    comparison.add_argument("--backends", type=_backend_list, default=["model", "qemu"])
    comparison.add_argument("--state-in")
    comparison.set_defaults(run=_cmd_compare)

    campaign = commands.add_parser("campaign", help="random differential campaign")
    campaign.add_argument("--programs", type=int, default=100, help="programs per SVL")
    campaign.add_argument("--svl", type=_svl_list, default=[128, 256, 512])
    campaign.add_argument("--length", type=int, default=40)
    campaign.add_argument("--seed", type=int, default=1)
    campaign.add_argument("--backends", type=_backend_list, default=["model", "qemu"])
    campaign.set_defaults(run=_cmd_campaign)

    demo = commands.add_parser("demo", help="run the shipped int8 GEMM example, check vs numpy")
    demo.add_argument("--backend", choices=("model", "qemu", "rtl"), default="model")
    demo.set_defaults(run=_cmd_demo)

    verilog = commands.add_parser("verilog", help="write the engine's Verilog and config JSON")
    verilog.add_argument("--svl", type=_svl, required=True, help="largest SVL in bits")
    verilog.add_argument("--supported-svls", type=_svl_list, metavar="BITS,...",
                         help="every supported SVL (default: all powers of two up to --svl)")
    verilog.add_argument("--features", help="comma-separated subset (default: all)")
    verilog.add_argument("--mem-width", type=int, metavar="BITS",
                         help="memory data width (default: --svl, one slice per beat)")
    verilog.add_argument("--za-contexts", type=int, default=1, metavar="N",
                         help="physical ZA contexts (default 1)")
    verilog.add_argument("-o", "--output", required=True)
    verilog.set_defaults(run=_cmd_verilog)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``zatile`` console script."""
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except CliError as error:
        print(f"zatile: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
