"""Compiled aarch64 programs: ``zatile cc`` (zig's clang + musl + the SME runtime), and
``zatile exec`` on the host CPU with the engine behind it, against QEMU as the oracle.

The C programs are in ``tests/programs/``, each self-checking. Compiled programs are cached by
a hash of the source, the runtime and the compiler options (in ``$ZATILE_CACHE/programs``), so
a rerun only executes them. Tests needing ziglang or QEMU skip with the reason when those are
absent (fail instead when ZATILE_REQUIRE_TOOLS=1).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from zatile.sim.tools import tools_required
from zatile.sw import toolchain
from zatile.sw.cli import main
from zatile.sw.runtime import RUNTIME_SOURCES

PROGRAMS = Path(__file__).with_name("programs")
OPTIONS = ("-O2",)


def _need_zig() -> None:
    problem = toolchain.tool_problem()
    if problem:
        if tools_required():
            pytest.fail(f"{problem} (ZATILE_REQUIRE_TOOLS=1)")
        pytest.skip(problem)


def build(name: str) -> Path:
    """``tests/programs/<name>.c`` compiled with ``zatile cc``, cached by content."""
    _need_zig()
    source = PROGRAMS / f"{name}.c"
    digest = hashlib.sha256()
    for path in (source, *RUNTIME_SOURCES):
        digest.update(path.read_bytes())
    digest.update(repr((OPTIONS, toolchain.TARGET, toolchain.CPU)).encode())
    cache = toolchain.cache_directory().parent / "programs"
    cache.mkdir(parents=True, exist_ok=True)
    output = cache / f"{name}-{digest.hexdigest()[:16]}"
    if not output.exists():
        partial = output.with_suffix(f".{os.getpid()}.tmp")
        toolchain.compile_program([source], partial, OPTIONS)
        partial.replace(output)
    return output


def test_cc_builds_a_static_aarch64_executable_with_the_runtime():
    program = build("hello")
    header = program.read_bytes()[:20]
    assert header[:4] == b"\x7fELF" and header[4] == 2          # ELF64
    assert int.from_bytes(header[18:20], "little") == 183       # EM_AARCH64
    symbols = subprocess.run(["nm", str(program)], capture_output=True, text=True).stdout \
        if Path("/usr/bin/nm").exists() else ""
    if symbols:
        assert "__arm_tpidr2_save" in symbols


def test_cc_command_line_errors_are_one_line_and_status_2(tmp_path, capsys):
    assert main(["cc", "-O2", str(PROGRAMS / "hello.c")]) == 2
    assert capsys.readouterr().err.startswith("zatile: error: no output file")
    assert main(["cc", str(tmp_path / "missing.c"), "-o", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err.count("zatile: error:") == 1


def test_cc_reports_compiler_errors_with_status_2(tmp_path, capsys):
    _need_zig()
    bad = tmp_path / "bad.c"
    bad.write_text("int main(void) { return undeclared; }\n")
    assert main(["cc", str(bad), "-o", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err
    assert "undeclared" in err and err.rstrip().splitlines()[-1].startswith("zatile: error:")


def test_cc_command_keeps_target_and_adds_runtime_only_when_linking():
    linking = toolchain.compile_command(["a.c"], "a", ["-O2"])
    assert "--target=aarch64-linux-musl" in linking and "-mcpu=generic+sme" in linking
    assert str(RUNTIME_SOURCES[0]) in linking
    assert str(RUNTIME_SOURCES[0]) not in toolchain.compile_command(["a.c"], "a.o", ["-c"])
