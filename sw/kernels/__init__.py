"""The kernel library: vector-length-agnostic SME kernels generated as A64 assembly.

:func:`library` builds (once, cached by content) one static aarch64 executable holding every
generated kernel and :file:`harness.c`, a command-line driver for backends that run whole
programs. The same bytes serve every backend: the model and the RTL call the kernels in the
executable directly (:meth:`zatile.sw.abi.elf_process.ElfProcess.call`), QEMU runs its harness.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from importlib.metadata import version
from pathlib import Path

from zatile.sw import toolchain
from zatile.sw.kernels.elementwise import elementwise_kernels
from zatile.sw.kernels.gemm import GEMM_KERNELS, gemm_kernel
from zatile.sw.runtime import RUNTIME_SOURCES

__all__ = ["HARNESS", "kernels", "library", "library_source", "kernel_table_source"]

#: The command-line harness linked into the library.
HARNESS = Path(__file__).with_name("harness.c")


def kernels() -> dict[str, str]:
    """Every kernel of the library: its assembly source by function name."""
    sources = {name: gemm_kernel(name, kernel) for name, kernel in GEMM_KERNELS.items()}
    sources.update(elementwise_kernels())
    return sources


def library_source() -> str:
    """The assembly source of every kernel of the library."""
    return "".join(kernels().values())


def kernel_table_source() -> str:
    """C source of the harness's table of kernels: ``KERNELS[]`` (name, function) and
    ``KERNEL_COUNT``; every kernel is declared with the harness's 8-argument prototype."""
    names = list(kernels())
    prototypes = "".join(f"void {name}(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, "
                         f"uint64_t, uint64_t, uint64_t);\n" for name in names)
    entries = "".join(f"    {{\"{name}\", (kernel_function){name}}},\n" for name in names)
    return (f'#include "harness.h"\n{prototypes}const struct kernel KERNELS[] = {{\n{entries}}};\n'
            f"const int KERNEL_COUNT = {len(names)};\n")


def library() -> Path:
    """The library executable, built with ``zatile cc -O2`` on first use and cached in
    ``$ZATILE_CACHE/kernels`` by the hash of its sources, the runtime and the compiler.

    Raises
    ------
    zatile.sw.toolchain.ToolchainError
        If ziglang is not installed.
    """
    source, table = library_source(), kernel_table_source()
    digest = hashlib.sha256((source + table).encode())
    for path in (HARNESS, HARNESS.with_suffix(".h"), *RUNTIME_SOURCES):
        digest.update(path.read_bytes())
    digest.update(repr((toolchain.TARGET, toolchain.CPU, version("ziglang"))).encode())
    directory = toolchain.cache_directory().parent / "kernels"
    directory.mkdir(parents=True, exist_ok=True)
    output = directory / f"library-{digest.hexdigest()[:16]}"
    if not output.exists():
        with tempfile.TemporaryDirectory(dir=directory) as scratch:
            assembly, kernels = Path(scratch) / "kernels.S", Path(scratch) / "kernels.c"
            assembly.write_text(source)
            kernels.write_text(table)
            partial = Path(scratch) / "library"
            toolchain.compile_program([HARNESS, kernels, assembly], partial,
                                      ["-O2", "-I", str(HARNESS.parent)])
            os.replace(partial, output)
    return output
