"""What every ``zatile`` subcommand shares: the one-line user error, argument types, snapshots."""

from __future__ import annotations

import argparse
from pathlib import Path

from zatile.sim.state import ArchState, SnapshotError
from zatile.sw.arch.config import SVL_CHOICES

__all__ = ["CliError", "Parser", "read_text", "write_bytes", "svl", "svl_list", "backend_list",
           "count", "positive_count", "initial_state"]


class CliError(Exception):
    """A user error: printed as one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (``zatile: error: ...``), exit status 2."""

    def error(self, message: str):
        self.exit(2, f"zatile: error: {message}\n")


def read_text(path: str) -> str:
    """The text of ``path``; a missing, unreadable or binary file is a :class:`CliError`."""
    try:
        return Path(path).read_text()
    except OSError as error:
        raise CliError(f"cannot read '{path}': {error.strerror}") from None
    except UnicodeDecodeError:
        raise CliError(f"'{path}' is not a text file (assembly source expected)") from None


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


def svl(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"SVL must be a number of bits, not '{text}'") from None
    if value not in SVL_CHOICES:
        raise argparse.ArgumentTypeError(
            f"SVL must be a power of two between 128 and 2048 bits, not {value}")
    return value


def svl_list(text: str) -> list[int]:
    return [svl(part) for part in text.split(",") if part]


def backend_list(text: str) -> list[str]:
    from zatile.sw.backends import BACKENDS   # local: keeps `zatile --help` fast

    names = [part.strip() for part in text.split(",") if part.strip()]
    for name in names:
        if name not in BACKENDS:
            raise argparse.ArgumentTypeError(
                f"unknown backend '{name}'; choose from {', '.join(BACKENDS)}")
    if len(names) < 2:
        raise argparse.ArgumentTypeError(f"compare needs at least two backends, not '{text}'")
    return names


def initial_state(args):
    """The ``--state-in`` snapshot at ``--svl``, or a zero state."""
    if args.state_in:
        try:
            return ArchState.load(args.state_in, svl=args.svl)
        except SnapshotError as error:
            raise CliError(str(error)) from None
    return ArchState(svl=args.svl)
