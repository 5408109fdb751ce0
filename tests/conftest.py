"""Shared fixtures: oracle tools that skip when absent, or fail when ZATILE_REQUIRE_TOOLS=1."""

import pytest

from zatile.sim.tools import ToolMissing, find_tool, tools_required


def need_tool(name: str) -> str:
    """Path of an external tool; skip the test with a reason if it is missing (fail in CI)."""
    try:
        return find_tool(name)
    except ToolMissing as missing:
        if tools_required():
            pytest.fail(f"{missing} (ZATILE_REQUIRE_TOOLS=1)")
        pytest.skip(str(missing))


@pytest.fixture
def binutils():
    """Paths of (as, objdump, ld) for aarch64."""
    return need_tool("as"), need_tool("objdump"), need_tool("ld")


@pytest.fixture
def qemu():
    """Path of qemu-aarch64."""
    need_tool("as")
    need_tool("ld")
    return need_tool("qemu")
