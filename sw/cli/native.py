"""``zatile cc`` and ``zatile exec``: compiled aarch64 Linux programs, built and run.
"""

from __future__ import annotations

import argparse
import sys

import json

from zatile.sw.cli.common import (CliError, Parser, add_command, output_path,
                                  positive_count, svl, za_contexts)

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


_EXEC_BACKENDS = ("model", "rtl", "qemu")
#: The options of ``zatile exec`` that take a value.
_VALUED_EXEC_OPTIONS = ("--svl", "--backend", "--stats-json", "--quantum", "--za-contexts")


def _exec_arguments(args) -> None:
    """Take zatile's own options from after PROGRAM too (until ``--``); the rest is ARGS."""
    own = Parser(prog="zatile exec", add_help=False)
    _add_exec_options(own, defaults=False)
    program_arguments, index, rest = [], 0, args.arguments
    while index < len(rest):
        argument = rest[index]
        if argument == "--":
            program_arguments += rest[index + 1:]
            break
        name = argument.split("=", 1)[0]
        if name in _VALUED_EXEC_OPTIONS and "=" not in argument:
            own.parse_args([argument, *rest[index + 1:index + 2]], namespace=args)
            index += 2
            continue
        if name in (*_VALUED_EXEC_OPTIONS, "--stats"):
            own.parse_args([argument], namespace=args)
        else:
            program_arguments.append(argument)
        index += 1
    args.arguments = program_arguments


def _add_exec_options(parser, defaults: bool = True) -> None:
    keep = {} if defaults else {"default": argparse.SUPPRESS}
    parser.add_argument("--svl", type=svl, metavar="BITS", **({"default": 512} | keep),
                        help="the engine's largest SVL and the default SME vector length "
                             "(default 512)")
    parser.add_argument("--backend", choices=_EXEC_BACKENDS, **({"default": "model"} | keep),
                        help="model: the host CPU with the reference model (default); rtl: "
                             "the host CPU with the engine's Verilog under Verilator (built "
                             "once per SVL; output appears when the program ends); qemu: "
                             "qemu-aarch64 -cpu max,sme=on as the oracle")
    parser.add_argument("--quantum", type=positive_count, metavar="N",
                        **({"default": None} | keep),
                        help="a thread's time slice in host instructions, after which the "
                             "kernel model preempts it (default: the kernel model's, "
                             "zatile.sw.abi.host_tasks.DEFAULT_HOST_QUANTUM; model and rtl "
                             "backends)")
    parser.add_argument("--za-contexts", type=za_contexts, metavar="N",
                        **({"default": 1} | keep),
                        help="the engine's physical ZA contexts, on which the kernel keeps "
                             "threads' and virtual ZA contexts' ZA resident (default 1; model "
                             "and rtl backends)")
    parser.add_argument("--stats", action="store_true", **keep,
                        help="print instruction counts, the kernel's context switches, "
                             "signals and ZA traffic, and wall time to stderr afterwards")
    parser.add_argument("--stats-json", type=output_path, metavar="FILE", **keep,
                        help="write the same figures as one JSON object")


def _cmd_exec(args) -> int:
    # local: keeps `zatile --help` fast
    from zatile.sw.abi.elf_process import ExecError, load_elf_image
    from zatile.sw.abi.runner import run_program  # local: keeps `zatile --help` fast

    if not args.command_line:
        raise CliError("no PROGRAM given (usage: zatile exec PROGRAM [ARGS...] [--svl BITS] "
                       "[--backend model|rtl|qemu] [--stats])")
    args.program, args.arguments = args.command_line[0], args.command_line[1:]
    _exec_arguments(args)
    try:
        load_elf_image(args.program)
    except ExecError as error:
        raise CliError(str(error)) from None
    argv = [args.program, *args.arguments]
    sys.stdout.flush()
    sys.stderr.flush()
    if args.backend == "qemu":
        from zatile.sim.qemu import run_qemu_program  # local: keeps `zatile --help` fast
        from zatile.sim.tools import ToolMissing  # local: keeps `zatile --help` fast

        try:
            return run_qemu_program(args.program, argv, args.svl)
        except ToolMissing as error:
            raise CliError(str(error)) from None
    counting = bool(args.stats or args.stats_json)
    if args.backend == "rtl":
        from zatile.sw.abi.rtl_exec import run_program_rtl  # local: keeps `zatile --help` fast

        result = run_program_rtl(args.program, argv, svl=args.svl, count_instructions=counting,
                                 quantum=args.quantum, za_contexts=args.za_contexts)
    else:
        result = run_program(args.program, argv, svl=args.svl, count_instructions=counting,
                             quantum=args.quantum, za_contexts=args.za_contexts)
    figures = result.to_json_dict()
    figures.update(backend=args.backend, svl=args.svl, za_contexts=args.za_contexts)
    if args.stats:
        seconds = max(result.wall_seconds, 1e-9)
        classes = ", ".join(f"{name} {count}" for name, count
                            in sorted(result.engine_by_class.items()))
        sys.stderr.write(
            f"zatile: {result.host_instructions} host instructions, "
            f"{result.engine_instructions} engine instructions ({classes or 'none'}), "
            f"{result.syscalls} system calls, {result.v_transfers} V/Z transfers, "
            f"{result.wall_seconds:.3f} s, {result.engine_seconds:.3f} s of it in the engine "
            f"({result.host_instructions / seconds:,.0f} host/s, "
            f"{result.engine_instructions / seconds:,.0f} engine/s)\n"
            f"zatile: kernel: {result.context_switches} context switches "
            f"({result.preemptions} at the end of a quantum), {result.sme_saves} SME state "
            f"saves and {result.lazy_restores} lazy restores, {result.signals_delivered} "
            f"signals delivered to handlers, {result.za_bytes_saved} bytes of ZA saved and "
            f"{result.za_bytes_restored} restored; {args.za_contexts} physical ZA context(s): "
            f"{result.za_loads} loads, {result.za_evictions} evictions, "
            f"{result.za_resident_hits} found resident\n")
        if result.engine_cycles is not None:
            sys.stderr.write(f"zatile: {result.engine_cycles} engine clock cycles simulated, "
                             f"{result.kernel_engine_cycles} of them in the kernel's "
                             f"instructions; the host streamed {result.engine_streamed} "
                             f"engine instructions without waiting and waited for them "
                             f"{result.engine_drains} times\n")
    if args.stats_json:
        args.stats_json.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")
    return result.status


def register(commands) -> None:
    command = add_command(
        commands, "exec", "run a static aarch64 Linux program: scalar code on the host CPU, "
                          "SME on the engine; exits with the program's status",
        "zatile exec ./gemm 64 --svl 256 --stats")
    # One positional for PROGRAM and its arguments: argparse drops a "--" that directly
    # follows a positional of its own, and "--" must reach _exec_arguments.
    command.add_argument("command_line", nargs=argparse.REMAINDER, metavar="PROGRAM [ARGS...]",
                         help="a static aarch64 ELF executable and its arguments (zatile's "
                              "options may follow; everything after -- is the program's)")
    _add_exec_options(command)
    command.set_defaults(run=_cmd_exec)

    # Compiler options begin with '-', so this parser's own options begin with '+' (it has
    # none): everything after `cc` reaches the compiler unchanged.
    command = commands.add_parser(
        "cc", help=_CC_SUMMARY, description=_CC_SUMMARY, usage=_CC_USAGE, prefix_chars="+",
        add_help=False,
        epilog="example:\n  zatile cc -O2 gemm.c -o gemm && zatile exec gemm --svl 512",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    command.add_argument("arguments", nargs=argparse.REMAINDER,
                         help="compiler options (-O2, -g, -D, -I ... pass through), source "
                              "files and -o OUT")
    command.set_defaults(run=_cmd_cc, parser=command)
