"""What every ``zatile`` subcommand shares: the one-line user error, argument types, snapshots,
``--json`` and ``--quiet``, and the help layout (a line per option, an example per command)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from zatile.sim.state import ArchState, SnapshotError, check_user_space
from zatile.sw.arch.asm import disassemble
from zatile.sw.arch.config import MAX_ZA_CONTEXTS, SVL_CHOICES
from zatile.sw.arch.isa import decode

__all__ = ["CliError", "Parser", "error_line", "add_command", "read_text", "read_program",
           "read_words", "write_bytes", "output_path", "svl", "svl_list", "backend_list", "count",
           "positive_count", "za_contexts", "initial_state", "print_json"]


class CliError(Exception):
    """A user error: printed as one line, exit status 2."""


def error_line(message: str) -> str:
    """``zatile: error: <message>`` and a newline; line breaks and other control characters a
    user typed into an argument are shown escaped, so the error stays one line."""
    escaped = "".join(char if char.isprintable() else repr(char)[1:-1] for char in str(message))
    return f"zatile: error: {escaped}\n"


class Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (``zatile: error: ...``), exit status 2."""

    def error(self, message: str):
        self.exit(2, error_line(message))


def add_command(commands, name: str, summary: str, example: str) -> Parser:
    """A subcommand with a one-line ``summary``, ``example`` in its ``--help`` and ``--quiet``."""
    command = commands.add_parser(name, help=summary, description=summary,
                                  epilog=f"example:\n  {example}",
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    command.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS,
                         help="no progress messages or bars (sets ZATILE_QUIET=1)")
    return command


def read_text(path: str) -> str:
    """The text of ``path``; a missing, unreadable or binary file is a :class:`CliError`."""
    try:
        return Path(path).read_text()
    except OSError as error:
        raise CliError(f"cannot read '{path}': {error.strerror}") from None
    except UnicodeDecodeError:
        raise CliError(f"'{path}' is not a text file (assembly source, or a .bin of words, "
                       f"expected)") from None


def read_words(path: str) -> list[int]:
    """The little-endian 32-bit words of binary file ``path`` (what ``zatile asm`` writes)."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise CliError(f"cannot read '{path}': {error.strerror}") from None
    if len(data) % 4:
        raise CliError(f"'{path}' is {len(data)} bytes, not a whole number of 32-bit words")
    return [int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data), 4)]


def read_program(path: str) -> str:
    """The assembly of program ``path``: its text, or a ``.bin`` of words disassembled.

    A word of a ``.bin`` outside the instruction subset is a :class:`CliError` naming its offset
    and, when binutils is installed, the instruction it is.
    """
    if Path(path).suffix.lower() != ".bin":
        return read_text(path)
    lines = []
    for index, word in enumerate(read_words(path)):
        if decode(word) is None:
            raise CliError(f"'{path}': word 0x{word:08x} at offset 0x{4 * index:x}"
                           f"{_binutils_name(word)} is not an instruction of the subset")
        lines.append(disassemble(word).replace("\t", " "))
    return "\n".join(lines) + "\n"


def _binutils_name(word: int) -> str:
    """`` ('<objdump's text>')`` for ``word``, or nothing without binutils or for a word objdump
    does not know either."""
    from zatile.sim.binutils import gnu_disassemble  # local: keeps `zatile --help` fast
    from zatile.sim.tools import ToolMissing  # local: keeps `zatile --help` fast

    try:
        text = gnu_disassemble([word])[0]
    except ToolMissing:
        return ""
    if text.startswith(".inst") or text.endswith("undefined"):
        return ""
    return f" ('{text.replace(chr(9), ' ')}')"


def output_path(text: str) -> Path:
    """An argument naming a file to write: its folder must exist and it must not be a folder."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"'{text}' is a directory, not a file")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write '{text}': folder '{path.parent}' does "
                                         f"not exist")
    return path


def print_json(value) -> None:
    """``value`` as indented JSON on stdout (the ``--json`` output of every command)."""
    json.dump(value, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path``; a missing folder or a directory in the way is a :class:`CliError`."""
    try:
        Path(path).write_bytes(data)
    except OSError as error:
        raise CliError(f"cannot write '{path}': {error.strerror}") from None


def count(text: str) -> int:
    """A non-negative integer argument."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not '{text}'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, not {value}")
    return value


def positive_count(text: str) -> int:
    """A positive integer argument."""
    value = count(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be at least 1, not 0")
    return value


def za_contexts(text: str) -> int:
    """A number of physical ZA contexts."""
    value = positive_count(text)
    if value > MAX_ZA_CONTEXTS:
        raise argparse.ArgumentTypeError(f"an engine has at most {MAX_ZA_CONTEXTS} ZA contexts, "
                                         f"not {value}")
    return value


def svl(text: str) -> int:
    """A streaming vector length argument, in bits."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"SVL must be a number of bits, not '{text}'") from None
    if value not in SVL_CHOICES:
        raise argparse.ArgumentTypeError(
            f"SVL must be a power of two between 128 and 2048 bits, not {value}")
    return value


def svl_list(text: str) -> list[int]:
    """A comma-separated list of SVLs; at least one."""
    values = [svl(part) for part in text.split(",") if part.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"expected SVLs like 128,256, not '{text}'")
    return values


#: The ``EngineConfig`` argument of each option :func:`add_engine_options` adds.
_ENGINE_OPTIONS = {"features": "features", "lanes": "array_rows",
                   "vector_bits": "vector_bits_per_cycle", "queue_depth": "queue_depth",
                   "issue_lanes": "issue_lanes"}


def add_engine_options(command) -> None:
    """``--features``, ``--lanes``, ``--vector-bits``, ``--queue-depth`` and ``--issue-lanes``:
    the features an engine has, and the area it spends on them (:class:`~zatile.sw.arch.config.EngineConfig`)."""
    command.add_argument("--features", help="comma-separated subset (default: all)")
    command.add_argument("--lanes", type=positive_count, metavar="N",
                         help="tile rows each outer-product array computes per cycle: a power "
                              "of two up to SVL/32 (default SVL/32, one outer product per "
                              "cycle); fewer take less area and more cycles")
    command.add_argument("--vector-bits", type=positive_count, metavar="BITS",
                         help="bits of a vector the vector ALU, shifter and FP compare make per "
                              "cycle: a power of two from 64 to SVL (default SVL); fewer take "
                              "less area and more cycles")
    command.add_argument("--queue-depth", type=positive_count, metavar="N",
                         help="instructions each of the engine's two queues holds: a power of "
                              "two from 2 to 64 (default 16); fewer take less area and overlap "
                              "less memory traffic with execution")
    command.add_argument("--issue-lanes", type=positive_count, metavar="N",
                         help="instructions per transfer of the issue and result ports, each "
                              "with a decoder of its own: 1 or 2 (default 2); the SoC wrapper "
                              "issues one per transfer, so 1 costs it nothing")


def engine_options(args) -> dict:
    """The ``EngineConfig`` arguments the options of :func:`add_engine_options` give (those
    left out take the configuration's defaults)."""
    chosen = {argument: getattr(args, option) for option, argument in _ENGINE_OPTIONS.items()
              if getattr(args, option) is not None}
    if "features" in chosen:
        chosen["features"] = frozenset(part.strip().upper()
                                       for part in chosen["features"].split(",") if part.strip())
    return chosen


def backend_list(text: str) -> list[str]:
    """A comma-separated list of two or more distinct backend names."""
    from zatile.sw.backends import BACKENDS   # local: keeps `zatile --help` fast

    names = [part.strip() for part in text.split(",") if part.strip()]
    for name in names:
        if name not in BACKENDS:
            raise argparse.ArgumentTypeError(
                f"unknown backend '{name}'; choose from {', '.join(BACKENDS)}")
    if len(names) < 2:
        raise argparse.ArgumentTypeError(f"compare needs at least two backends, not '{text}'")
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"each backend may be named once, not '{text}'")
    return names


def initial_state(args):
    """The ``--state-in`` snapshot at ``--svl``, or a zero state.

    Its memory must lie where every backend maps it (:func:`zatile.sim.state.check_user_space`).
    """
    if not args.state_in:
        return ArchState(svl=args.svl)
    try:
        state = ArchState.load(args.state_in, svl=args.svl)
    except SnapshotError as error:
        raise CliError(str(error)) from None
    try:
        check_user_space(state.memory)
    except ValueError as error:
        raise CliError(f"snapshot '{args.state_in}': {error}") from None
    return state
