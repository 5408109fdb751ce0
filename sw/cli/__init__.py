"""``zatile``: the command-line face of the library (every command is a thin wrapper).

Each module here adds its subcommands with ``register(commands)``; :data:`COMMAND_MODULES` lists
them in ``--help`` order. To add a subcommand, write a module with a ``register`` function and
list it there.
"""

from __future__ import annotations

import argparse
import os
import sys
from importlib.metadata import version

from zatile.sw.cli import bench, campaign, hardware, native, programs
from zatile.sw.cli.common import CliError, Parser, error_line

__all__ = ["main", "COMMAND_MODULES"]

#: The modules that add subcommands, in ``--help`` order.
COMMAND_MODULES = (programs, native, campaign, bench, hardware)


def _parser() -> Parser:
    parser = Parser(prog="zatile",
                    description="zatile: the SME matrix tile engine, its model, oracles and tools.",
                    epilog="example:\n  zatile run prog.s --svl 256 --show za0.s:f32\n"
                           "`zatile COMMAND --help` describes each command's options.",
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"zatile {version('zatile')}",
                        help="print the version and exit")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress messages or bars (sets ZATILE_QUIET=1)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``zatile`` console script and of ``python -m zatile``."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if args.quiet:
        os.environ["ZATILE_QUIET"] = "1"
    try:
        return args.run(args)
    except CliError as error:
        sys.stderr.write(error_line(str(error)))
        return 2
    except KeyboardInterrupt:
        print("zatile: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`zatile disasm big.bin | head`): stop quietly, as Unix tools do;
        # stdout is pointed at /dev/null so that flushing it at exit cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
