"""``zatile cc``: C, C++ and assembly with the ACLE SME attributes to static aarch64 Linux ELFs.

The compiler is the clang (LLVM 21) and musl that the PyPI ``ziglang`` package bundles, run as
``python -m ziglang cc --target=aarch64-linux-musl`` (``c++`` when a source is C++, which links
libc++). The CPU is ``generic+sme``: SME and streaming SVE inside streaming functions, and no
non-streaming SVE, so ordinary code is not auto-vectorized with SVE instructions that an
SME-only CPU (ours, Apple's M4) does not have (``-march=armv9-a+sme`` would allow that).

Every linked program gets the runtime of :mod:`zatile.sw.runtime` (the SME ABI support routines
and the virtual ZA context calls), and every compilation has the runtime's headers on its
system include path (``#include <zatile_za.h>``).

zig's cache (the musl it builds for the target on first use, minutes on two cores, and every
compiled object) lives in ``${ZATILE_CACHE:-<repository>/.zatile-cache}/zig``, so CI can keep it
between runs.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from zatile.sw.runtime import INCLUDE_DIRECTORY, RUNTIME_SOURCES

__all__ = ["TARGET", "CPU", "ToolchainError", "CompileError", "cache_directory", "tool_problem",
           "compile_command", "compile_program"]

#: The target triple: static executables linked against musl.
TARGET = "aarch64-linux-musl"
#: The CPU: SME without non-streaming SVE (zig takes ``-mcpu=...+feature``, not ``-march``).
CPU = "generic+sme"

_REPOSITORY = Path(__file__).resolve().parent.parent

# Sources that make zig compile and link as C++ (``zig c++``: libc++ and libc++abi, built on
# first use like musl).
_CXX_SUFFIXES = frozenset({".cc", ".cpp", ".cxx", ".c++", ".C"})

# Options after which nothing is linked, so the runtime must not be added as an input.
_NO_LINK_OPTIONS = frozenset({"-c", "-S", "-E", "-M", "-MM", "-fsyntax-only"})


class ToolchainError(Exception):
    """The compiler cannot run here (ziglang missing)."""


class CompileError(Exception):
    """The compiler ran and failed; the message is its diagnostics."""


def cache_directory() -> Path:
    """zig's global cache: ``$ZATILE_CACHE/zig``, by default in the repository's cache."""
    base = Path(os.environ.get("ZATILE_CACHE") or _REPOSITORY / ".zatile-cache")
    return base / "zig"


def tool_problem() -> str | None:
    """Why ``zatile cc`` cannot run here, or None."""
    if importlib.util.find_spec("ziglang") is None:
        return "the ziglang package is not installed (pip install ziglang)"
    return None


def compile_command(files: Sequence[str | Path], output: str | Path,
                    options: Sequence[str] = ()) -> list[str]:
    """The zig command line that builds ``files`` into ``output`` with the user's ``options``.

    The target, CPU, ``-static`` and the runtime's include directory come first so that the
    user's options can override anything but the target (their ``-I`` directories are searched
    before it); the runtime is added when the command links. A C++ link compiles the runtime's
    C as C++ (``-x c++``), so that the user's C++ options (``-std=c++17``) apply to it too.
    """
    cxx = any(Path(f).suffix in _CXX_SUFFIXES for f in files)
    command = [sys.executable, "-m", "ziglang", "c++" if cxx else "cc", f"--target={TARGET}",
               f"-mcpu={CPU}", "-static", "-isystem", str(INCLUDE_DIRECTORY), *options,
               *(str(f) for f in files)]
    if not _NO_LINK_OPTIONS.intersection(options):
        for source in RUNTIME_SOURCES:
            if cxx and source.suffix == ".c":
                command += ["-x", "c++", str(source), "-x", "none"]
            else:
                command.append(str(source))
    return command + ["-o", str(output)]


def compile_program(files: Sequence[str | Path], output: str | Path,
                    options: Sequence[str] = ()) -> None:
    """Compile and link ``files`` into the static executable ``output``.

    Raises
    ------
    ToolchainError
        If ziglang is not installed.
    ValueError
        If no input file is given.
    FileNotFoundError
        If an input file does not exist.
    CompileError
        If the compiler fails (its diagnostics are the message).
    """
    problem = tool_problem()
    if problem:
        raise ToolchainError(problem)
    if not files:
        raise ValueError("no input files")
    for name in files:
        if not Path(name).is_file():
            raise FileNotFoundError(f"no such file: '{name}'")
    cache = cache_directory()
    cache.mkdir(parents=True, exist_ok=True)
    environment = dict(os.environ, ZIG_GLOBAL_CACHE_DIR=str(cache),
                       ZIG_LOCAL_CACHE_DIR=str(cache))
    result = subprocess.run(compile_command(files, output, options), env=environment,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise CompileError(result.stderr.strip() or f"zig cc exited with {result.returncode}")
    if result.stderr:
        sys.stderr.write(result.stderr)
