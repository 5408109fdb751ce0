"""Locating the external oracles (binutils, QEMU, Icarus) zatile checks itself against."""

from __future__ import annotations

import os
import shutil

__all__ = ["ToolMissing", "find_tool", "tools_required"]

#: Where each oracle is looked for, in order.
TOOL_CANDIDATES: dict[str, tuple[str, ...]] = {
    "as": ("aarch64-linux-gnu-as",),
    "ld": ("aarch64-linux-gnu-ld",),
    "objdump": ("aarch64-linux-gnu-objdump",),
    "objcopy": ("aarch64-linux-gnu-objcopy",),
    "qemu": ("qemu-aarch64", "qemu-aarch64-static"),
    "iverilog": ("iverilog",),
}

#: How each oracle is installed on Debian bookworm (quoted in error messages).
TOOL_PACKAGES: dict[str, str] = {
    "as": "binutils-aarch64-linux-gnu",
    "ld": "binutils-aarch64-linux-gnu",
    "objdump": "binutils-aarch64-linux-gnu",
    "objcopy": "binutils-aarch64-linux-gnu",
    "qemu": "qemu-user (10.x, from bookworm-backports)",
    "iverilog": "iverilog",
}


class ToolMissing(RuntimeError):
    """An external tool zatile needs is not installed."""


def tools_required() -> bool:
    """Whether a missing tool must fail rather than skip (``ZATILE_REQUIRE_TOOLS=1``, as in CI)."""
    return os.environ.get("ZATILE_REQUIRE_TOOLS", "") not in ("", "0")


def find_tool(name: str) -> str:
    """The path of oracle ``name`` (a key of :data:`TOOL_CANDIDATES`).

    Raises
    ------
    ToolMissing
        If it is not on PATH; the message names the Debian package that provides it.
    """
    if name not in TOOL_CANDIDATES:
        raise ValueError(f"unknown tool {name!r}; known: {', '.join(TOOL_CANDIDATES)}")
    for candidate in TOOL_CANDIDATES[name]:
        path = shutil.which(candidate)
        if path:
            return path
    raise ToolMissing(f"{TOOL_CANDIDATES[name][0]} not found; install {TOOL_PACKAGES[name]}")
