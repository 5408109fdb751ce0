"""``zatile asm``, ``disasm``, ``run`` and ``compare``: straight-line programs on the backends.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from zatile.sw.arch.asm import AsmError, assemble, objdump_lines
from zatile.sw.cli.common import (
    CliError, backend_list, initial_state, read_text, svl, write_bytes,
)

__all__ = ["register", "show_tile"]


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
    from zatile.sw.backends import run_program  # local: keeps `zatile --help` fast

    initial = initial_state(args)
    try:
        outcome = run_program(args.backend, read_text(args.program), initial)
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
        try:
            final.save(args.state_out)
        except OSError as error:
            raise CliError(f"cannot write '{args.state_out}': {error.strerror}") from None
        print(f"final state -> {args.state_out}")
    return 0


def _cmd_compare(args) -> int:
    from zatile.sw.backends import compare  # local: keeps `zatile --help` fast

    initial = initial_state(args)
    try:
        result = compare(read_text(args.program), initial, args.backends)
    except AsmError as error:
        raise CliError(f"{args.program}: {error}") from None
    used = result.divergences
    note = f" (modelled QEMU divergences: {', '.join(used)})" if used else ""
    if result.agree:
        print(f"{args.program}: {', '.join(args.backends)} agree at SVL {args.svl}{note}")
        return 0
    print(f"{args.program}: MISMATCH at SVL {args.svl}: {result.difference}{note}")
    return 1


def register(commands) -> None:
    """Add the subcommands to ``commands`` (an argparse subparsers object)."""
    asm = commands.add_parser("asm", help="assemble a program to little-endian words")
    asm.add_argument("source")
    asm.add_argument("-o", "--output")
    asm.set_defaults(run=_cmd_asm)

    disasm = commands.add_parser("disasm", help="disassemble words (objdump 2.40 text)")
    disasm.add_argument("binary")
    disasm.set_defaults(run=_cmd_disasm)

    run = commands.add_parser("run", help="run a program and summarise the final state")
    run.add_argument("program")
    run.add_argument("--svl", type=svl, required=True, help="streaming vector length in bits")
    run.add_argument("--state-in")
    run.add_argument("--state-out")
    run.add_argument("--backend", choices=("model", "qemu", "rtl"), default="model")
    run.add_argument("--show", action="append", metavar="TILE", help="print a tile, e.g. za1.s")
    run.set_defaults(run=_cmd_run)

    comparison = commands.add_parser("compare", help="run on several backends, name differences")
    comparison.add_argument("program")
    comparison.add_argument("--svl", type=svl, required=True)
    comparison.add_argument("--backends", type=backend_list, default=["model", "qemu"])
    comparison.add_argument("--state-in")
    comparison.set_defaults(run=_cmd_compare)
