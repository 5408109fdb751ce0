"""Thin wrappers around the binutils oracle: assemble text and disassemble words with GNU tools.

Used by the ISA proof tests and by ``zatile`` itself wherever a second opinion is wanted.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from zatile.sim.tools import find_tool

__all__ = ["ARCH_FLAGS", "gnu_assemble", "gnu_disassemble"]

#: The architecture flags binutils 2.40 needs for every form of the subset (docs/isa.md, "Toolchain").
ARCH_FLAGS = ("-march=armv9-a+sme+sme-f64+sme-i64",)

_OBJDUMP_LINE = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f]{8}) \t(.*)$")


def gnu_assemble(lines: list[str]) -> list[int]:
    """Assemble one instruction per line with ``aarch64-linux-gnu-as``; returns the words.

    Raises
    ------
    subprocess.CalledProcessError
        If the assembler rejects the input (its message is in ``stderr``).
    """
    with tempfile.TemporaryDirectory() as work:
        source, objfile = Path(work, "in.s"), Path(work, "in.o")
        source.write_text("\n".join(lines) + "\n")
        subprocess.run([find_tool("as"), *ARCH_FLAGS, str(source), "-o", str(objfile)],
                       check=True, capture_output=True, text=True)
        binary = Path(work, "in.bin")
        subprocess.run([find_tool("objcopy"), "-O", "binary",
                        "--only-section=.text", str(objfile), str(binary)], check=True,
                       capture_output=True)
        data = binary.read_bytes()
    return [int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data), 4)]


def gnu_disassemble(words: list[int]) -> list[str]:
    """objdump's text (mnemonic, tab, operands) for each word, in order."""
    with tempfile.TemporaryDirectory() as work:
        source, objfile = Path(work, "in.s"), Path(work, "in.o")
        source.write_text("".join(f".inst 0x{w:08x}\n" for w in words))
        subprocess.run([find_tool("as"), *ARCH_FLAGS, str(source), "-o", str(objfile)],
                       check=True, capture_output=True, text=True)
        listing = subprocess.run([find_tool("objdump"), "-d", str(objfile)], check=True,
                                 capture_output=True, text=True).stdout
    texts = []
    for line in listing.splitlines():
        match = _OBJDUMP_LINE.match(line)
        if match:
            texts.append(match.group(3).rstrip())
    if len(texts) != len(words):
        raise RuntimeError(f"objdump listed {len(texts)} instructions for {len(words)} words")
    return texts
