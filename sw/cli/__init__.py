"""``zatile``: the command-line face of the library (every command is a thin wrapper).

Each module here adds its subcommands with ``register(commands)``; :data:`COMMAND_MODULES` lists
them in ``--help`` order. To add a subcommand, write a module with a ``register`` function and
list it there.
"""

from __future__ import annotations

import sys

from zatile.sw.cli import campaign, hardware, programs
from zatile.sw.cli.common import CliError, Parser

__all__ = ["main", "COMMAND_MODULES"]

#: The modules that add subcommands, in ``--help`` order.
COMMAND_MODULES = (programs, campaign, hardware)


def _parser() -> Parser:
    parser = Parser(prog="zatile", description="zatile: the SME matrix tile engine, its model, 'oracles and tools.")
    commands = parser.add_subparsers(dest="command", required=True)
    for module in COMMAND_MODULES:
        module.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``zatile`` console script and of ``python -m zatile``."""
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except CliError as error:
        print(f"zatile: error: {error}", file=sys.stderr)
        return 2
