"""``zatile cc`` and ``zatile exec``: compiled aarch64 Linux programs, built and run.
"""

from __future__ import annotations

import argparse
import sys

from zatile.sw.cli.common import CliError

__all__ = ["register"]

_CC_USAGE = "zatile cc [compiler options] FILES... -o OUT"
_CC_SUMMARY = ("compile C, C++ or assembly with the ACLE SME attributes into a static aarch64 "
               "Linux executable (zig's clang and musl, SME runtime linked in)")


def _cc_arguments(arguments: list[str]) -> tuple[list[str], list[str], str]:
    """Split ``zatile cc``'s arguments into (options, input files, output)."""
    options, files, output = [], [], None
    # Options that take the next argument as their value.
    with_value = {"-o", "-I", "-D", "-U", "-L", "-l", "-include", "-isystem", "-x", "-MF",
                  "-MT", "-Xlinker"}
    index = 0
    while index < len(arguments):
        argument = arguments[index]
        if argument in with_value:
            if index + 1 == len(arguments):
                raise CliError(f"option '{argument}' needs a value")
            value = arguments[index + 1]
            if argument == "-o":
                output = value
            else:
                options += [argument, value]
            index += 2
            continue
        if argument.startswith("-o") and len(argument) > 2:
            output = argument[2:]
        elif argument.startswith("-"):
            options.append(argument)
        else:
            files.append(argument)
        index += 1
    if not files:
        raise CliError(f"no input files (usage: {_CC_USAGE})")
    if output is None:
        raise CliError(f"no output file: give -o OUT (usage: {_CC_USAGE})")
    return options, files, output


def _cmd_cc(args) -> int:
    from zatile.sw import toolchain  # local: keeps `zatile --help` fast

    if not args.arguments or args.arguments[0] in ("-h", "--help"):
        args.parser.print_help()
        return 0
    options, files, output = _cc_arguments(args.arguments)
    try:
        toolchain.compile_program(files, output, options)
    except (toolchain.ToolchainError, FileNotFoundError, ValueError) as error:
        raise CliError(str(error)) from None
    except toolchain.CompileError as error:
        lines = str(error).splitlines()
        # The compiler's own diagnostics first, then the one error line of zatile.
        for line in lines[:-1]:
            print(line, file=sys.stderr)
        raise CliError(f"compilation failed: {lines[-1] if lines else 'zig cc failed'}") from None
    return 0


def register(commands) -> None:
    # Compiler options begin with '-', so this parser's own options begin with '+' (it has
    # none): everything after `cc` reaches the compiler unchanged.
    command = commands.add_parser(
        "cc", help=_CC_SUMMARY, description=_CC_SUMMARY, usage=_CC_USAGE, prefix_chars="+", add_help=False,
        epilog="example:\n  zatile cc -O2 gemm.c -o gemm && zatile exec gemm --svl 512",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    command.add_argument("arguments", nargs=argparse.REMAINDER,
                         help="compiler options (-O2, -g, -D, -I ... pass through), source "
                              "files and -o OUT")
    command.set_defaults(run=_cmd_cc, parser=command)
