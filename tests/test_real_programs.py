"""Compiled aarch64 programs: ``zatile cc`` (zig's clang + musl + the SME runtime), and
``zatile exec`` on the host CPU with the engine behind it, against QEMU as the oracle.

The C programs are in ``tests/programs/``, each self-checking. Compiled programs are cached by
a hash of the source, the runtime and the compiler options (in ``$ZATILE_CACHE/programs``), so
a rerun only executes them. Tests needing ziglang or QEMU skip with the reason when those are
absent (fail instead when ZATILE_REQUIRE_TOOLS=1).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import subprocess
from importlib.metadata import version
from pathlib import Path
from typing import Sequence

import numpy as np
import pytest

from tests.conftest import need_tool
from tests.deferred_engine import DeferredEngine
from zatile.sim.host_cpu import PROT_READ, PROT_WRITE, SimdClass, simd_class
from zatile.sim.qemu import qemu_sme_cpu_option
from zatile.sim.tools import tools_required
from zatile.sw import toolchain
from zatile.sw.abi.elf_process import ElfProcess, load_elf_image
from zatile.sw.abi.runner import run_program
from zatile.sw.abi.rtl_exec import run_program_rtl
from zatile.sw.cli import main
from zatile.sw.runtime import INCLUDE_DIRECTORY, RUNTIME_HEADERS, RUNTIME_SOURCES

PROGRAMS = Path(__file__).with_name("programs")
OPTIONS = ("-O2",)


def _need_zig() -> None:
    problem = toolchain.tool_problem()
    if problem:
        if tools_required():
            pytest.fail(f"{problem} (ZATILE_REQUIRE_TOOLS=1)")
        pytest.skip(problem)


def build_sources(name: str, sources: Sequence[Path], options: Sequence[str] = OPTIONS,
                  headers: Sequence[Path] = ()) -> Path:
    """``sources`` compiled and linked with ``zatile cc``, cached in ``$ZATILE_CACHE/programs``
    by the content of the sources, the ``headers`` they include and the runtime, the options
    and the ziglang version. ``sources`` may include objects (:func:`build_object`)."""
    return _cached_build(name, sources, options, headers)


def build_object(source: Path, options: Sequence[str] = OPTIONS,
                 headers: Sequence[Path] = ()) -> Path:
    """``source`` compiled alone with ``zatile cc -c`` into an object, a separately compiled
    unit to link with :func:`build_sources`; cached like it."""
    return _cached_build(source.stem, [source], [*options, "-c"], headers, suffix=".o")


def _cached_build(name: str, sources: Sequence[Path], options: Sequence[str],
                  headers: Sequence[Path], suffix: str = "") -> Path:
    _need_zig()
    digest = hashlib.sha256()
    for path in (*sources, *headers, *RUNTIME_HEADERS, *RUNTIME_SOURCES):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    digest.update(repr((list(options), toolchain.TARGET, toolchain.CPU,
                        version("ziglang"))).encode())
    cache = toolchain.cache_directory().parent / "programs"
    cache.mkdir(parents=True, exist_ok=True)
    output = cache / f"{name}-{digest.hexdigest()[:16]}{suffix}"
    if not output.exists():
        partial = output.with_name(f"{output.stem}.{os.getpid()}.tmp{suffix}")
        toolchain.compile_program(sources, partial, options)
        partial.replace(output)
    return output


def build(name: str) -> Path:
    """``tests/programs/<name>.c`` (or ``.cpp``), with the headers of tests/programs."""
    return build_sources(name, [next(PROGRAMS.glob(f"{name}.c*"))],
                         headers=sorted(PROGRAMS.glob("*.h")))


def test_cc_builds_a_static_aarch64_executable_with_the_runtime():
    program = build("hello")
    header = program.read_bytes()[:20]
    assert header[:4] == b"\x7fELF" and header[4] == 2          # ELF64
    assert int.from_bytes(header[18:20], "little") == 183       # EM_AARCH64
    symbols = load_elf_image(program).symbols
    assert {"__arm_tpidr2_save", "__arm_sme_restore", "__arm_sc_memchr", "main"} <= set(symbols)


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


def test_cc_passes_compiler_options_through(tmp_path):
    _need_zig()
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "answer.h").write_text("#define ANSWER (SCALE * 7)\n")
    source = tmp_path / "answer.c"
    source.write_text('#include <stdio.h>\n#include "answer.h"\n'
                      'int main(void) { printf("%d\\n", ANSWER); return 0; }\n')
    program = tmp_path / "answer"
    assert main(["cc", "-O1", "-g", "-DSCALE=6", "-I", str(tmp_path / "include"), str(source),
                 f"-o{program}"]) == 0
    assert run_model(program)[:2] == (0, b"42\n")


def test_cc_command_keeps_target_and_adds_runtime_only_when_linking():
    linking = toolchain.compile_command(["a.c"], "a", ["-O2"])
    assert "--target=aarch64-linux-musl" in linking and "-mcpu=generic+sme" in linking
    assert all(str(source) in linking for source in RUNTIME_SOURCES)
    compiling = toolchain.compile_command(["a.c"], "a.o", ["-c"])
    assert not any(str(source) in compiling for source in RUNTIME_SOURCES)
    # The runtime's headers are reachable either way, after the user's own -I directories.
    for command in (linking, compiling):
        include = command.index("-isystem")
        assert command[include + 1] == str(INCLUDE_DIRECTORY)
        assert include < command.index("-O2" if command is linking else "-c")
    # A C++ link compiles the runtime's C as C++, under the user's -std=c++NN.
    cxx = toolchain.compile_command(["a.cpp"], "a", ["-std=c++17"])
    runtime_c = str(next(source for source in RUNTIME_SOURCES if source.suffix == ".c"))
    at = cxx.index(runtime_c)
    assert cxx[at - 2:at + 3] == ["-x", "c++", runtime_c, "-x", "none"]


def run_model(program: Path, *arguments: str, svl: int = 512):
    """(exit status, stdout, stderr, result) of ``program`` on the host CPU + reference model."""
    stdout, stderr = io.BytesIO(), io.BytesIO()
    result = run_program(program, [str(program), *arguments], svl=svl, stdout=stdout,
                         stderr=stderr)
    return result.status, stdout.getvalue(), stderr.getvalue(), result


def run_oracle(program: Path, *arguments: str, svl: int = 512):
    """(exit status, stdout) of ``program`` under qemu-aarch64 at ``svl``."""
    need_tool("qemu")
    completed = subprocess.run(
        ["qemu-aarch64", "-cpu", qemu_sme_cpu_option(svl), "-0", str(program), str(program),
         *arguments], capture_output=True, timeout=60)
    status = completed.returncode
    return (128 - status if status < 0 else status), completed.stdout


SME_ABI_OUTPUT = "".join(f"{check:<44} ok\n" for check in (
    "__arm_has_sme", "not streaming in main", "lazy save committed by a new-ZA callee",
    "lazy save abandoned by a plain callee", "agnostic-ZA callee, ZA left dormant",
    "agnostic-ZA callee, lazy save committed", "locally streaming",
    "streaming-compatible from non-streaming", "streaming-compatible from streaming",
    "__arm_get_current_vg non-streaming", "__arm_get_current_vg streaming",
    "__arm_sme_state_size with ZA off", "__arm_sc_memcpy/memmove/memset/memchr",
    "__arm_za_disable with ZA off")).encode() \
    + b"SME ABI: ok\n"

SYSCALLS_OUTPUT = "".join(f"{check:<46} ok\n" for check in (
    "uname", "malloc small and 10 MiB", "brk grows", "mmap anonymous", "mprotect read-only",
    "munmap", "mmap with a bad offset: EINVAL", "mmap of a file descriptor never opened: EBADF",
    "mmap of 2^50 bytes: ENOMEM", "clock_gettime monotonic", "getrandom",
    "prctl(PR_SME_GET_VL) is the streaming VL", "open of a missing file: ENOENT",
    "getpid == gettid")).encode() + b"system calls: ok\n"

SIGNALS_OUTPUT = (
    b"raise with ZA live: handler SM=0 ZA=0, ZA after: kept\n"
    b"SIGSEGV in streaming mode: si_addr ok, handler SM=0 ZA=0, frame: SVE record streaming "
    b"at the streaming VL ok, ZA record VL ok; after it: ZA kept, vector kept\n"
    b"blocked SIGUSR2: 0 handled while blocked, 1 after unblocking, handler reset: yes\n"
    b"nested handlers: depth 2\n")

THREADS_OUTPUT = b"".join(f"thread {n}: ZA kept over 12 rounds\n".encode() for n in range(3)) \
    + b"main: ZA kept; counter 48 of 48; 36 turns, in order\n"

FORK_OUTPUT = (b"child: inherited ZA yes, own ZA kept\n"
               b"parent: ZA kept; child reaped, exit status 42\nno child left: ECHILD\n")

CASES = [
    ("hello", ("world",), 7, b"hello from world with 1 argument(s)\n"),
    ("streaming_add", (), 0, b"rounding: nearest 3f800001, towards zero 3f800000\n"
                             b"streaming add: 77 elements, ok\nvector bytes: at least 16\n"),
    ("za_mopa", (), 0, b"svmopa into ZA: ok\n"),
    ("faults", ("segv",), 139, b"dying by segv\n"),
    ("faults", ("engine-segv",), 139, b"dying by engine-segv\n"),
    ("faults", ("neon",), 132, b"dying by neon\n"),
    ("faults", ("abort",), 134, b"dying by abort\n"),
    ("faults", ("fp",), 0, b"dying by fp\n2.5\n"),
    ("faults", ("tpidr2-reserved",), 134, b"dying by tpidr2-reserved\n"),
    ("faults", ("sme-save-misaligned",), 134, b"dying by sme-save-misaligned\n"),
    ("sme_abi", (), 0, SME_ABI_OUTPUT),
    ("syscalls", (), 0, SYSCALLS_OUTPUT),
    ("gemm_f32", (), 0, b"gemm 19x23x7: ok; hash 8c1fd4496fdf35c3\n"),
    ("gemm_i8", (), 0, b"gemm int8 19x23x13: ok\n"),
    ("gemm_f16", (), 0, b"gemm fp16 19x23x13: ok\n"),
    ("gemm_bf16", (), 0, b"gemm bf16 19x23x13: ok\n"),
    ("signals_sme", (), 0, SIGNALS_OUTPUT),
    ("threads_za", (), 0, THREADS_OUTPUT),
    ("fork_za", (), 0, FORK_OUTPUT),
]


@pytest.mark.parametrize("svl", [128, 256, 512])
@pytest.mark.parametrize("name, arguments, status, output", CASES,
                         ids=[" ".join((case[0], *case[1])) for case in CASES])
def test_program_matches_qemu(name, arguments, status, output, svl):
    program = build(name)
    model = run_model(program, *arguments, svl=svl)
    assert model[:2] == (status, output), model[2].decode()
    assert run_oracle(program, *arguments, svl=svl) == (status, output)


@pytest.mark.parametrize("name, arguments, status, output", CASES,
                         ids=[" ".join((case[0], *case[1])) for case in CASES])
def test_programs_cannot_tell_that_the_host_runs_ahead(name, arguments, status, output):
    """Every program on an engine that runs streamed instructions only when the host drains
    them (tests/deferred_engine.py): the same status and output — the host waits wherever a
    program could see the difference (system calls, signals, threads, FPSR, its own loads and
    stores)."""
    program = build(name)
    stdout, stderr = io.BytesIO(), io.BytesIO()
    result = run_program(program, [str(program), *arguments], svl=128, stdout=stdout,
                         stderr=stderr, engine_class=DeferredEngine)
    assert (result.status, stdout.getvalue()) == (status, output), stderr.getvalue().decode()


#: The programs CI runs with the RTL engine (SVL 128, random stalls on every handshake):
#: SVE and SME instructions, ZA and the lazy-save runtime, an engine fault, a streaming-mode trap.
RTL_SELECTION = ["streaming_add", "za_mopa", "faults engine-segv", "faults neon", "sme_abi",
                 "gemm_f32", "gemm_i8", "gemm_bf16", "signals_sme", "threads_za"]


def run_rtl_case(name: str, arguments, status: int, output: bytes, svl: int) -> None:
    """Run a :data:`CASES` program with the RTL engine and check its status and output, and that
    the engine's counters saw at least the program's own SVE/SME instructions (the host CPU
    also issues some: V/Z transfers, kernel entry)."""
    program = build(name)
    stdout, stderr = io.BytesIO(), io.BytesIO()
    result = run_program_rtl(program, [str(program), *arguments], svl=svl, stdout=stdout,
                             stderr=stderr, pauses="light", seed=svl)
    assert (result.status, stdout.getvalue()) == (status, output), stderr.getvalue().decode()
    perf = result.engine_perf
    assert perf["retired"] + perf["traps"] >= result.engine_instructions > 0, perf
    assert result.engine_cycles >= perf["busy_cycles"] > 0


@pytest.mark.parametrize("name, arguments, status, output",
                         [case for case in CASES if " ".join((case[0], *case[1])) in RTL_SELECTION],
                         ids=RTL_SELECTION)
def test_program_runs_on_the_rtl(name, arguments, status, output):
    run_rtl_case(name, arguments, status, output, svl=128)


def test_the_host_runs_ahead_of_the_rtl_engine_and_the_program_cannot_tell():
    """gemm_f32 on the RTL with the host streaming and in lock step: the same output; streamed,
    most engine instructions do not wait, and the engine finishes in fewer cycles."""
    program = build("gemm_f32")
    (expected,) = [output for name, _, _, output in CASES if name == "gemm_f32"]
    runs = []
    for run_ahead in (True, False):
        stdout = io.BytesIO()
        result = run_program_rtl(program, [str(program)], svl=128, stdout=stdout,
                                 stderr=io.BytesIO(), run_ahead=run_ahead)
        assert (result.status, stdout.getvalue()) == (0, expected)
        runs.append(result)
    ahead, lock_step = runs
    print(f"gemm_f32 19x23x7 at SVL 128: {ahead.engine_streamed} of "
          f"{ahead.engine_instructions} engine instructions streamed, "
          f"{ahead.engine_perf['busy_cycles']} busy cycles ({lock_step.engine_perf['busy_cycles']} "
          f"in lock step)")
    assert lock_step.engine_streamed == 0
    assert ahead.engine_streamed > 0.5 * ahead.engine_instructions
    assert ahead.engine_perf["busy_cycles"] < 0.8 * lock_step.engine_perf["busy_cycles"]


@pytest.mark.soak
@pytest.mark.parametrize("svl", [128, 256, 512])
@pytest.mark.parametrize("name, arguments, status, output", CASES,
                         ids=[" ".join((case[0], *case[1])) for case in CASES])
def test_every_program_runs_on_the_rtl(name, arguments, status, output, svl):
    run_rtl_case(name, arguments, status, output, svl)


def test_exec_rtl_backend(tmp_path, capfd):
    figures = tmp_path / "stats.json"
    assert main(["exec", str(build("hello")), "--backend", "rtl", "--svl", "128", "q",
                 "--stats-json", str(figures)]) == 7
    assert capfd.readouterr().out == "hello from q with 1 argument(s)\n"
    stats = json.loads(figures.read_text())
    assert stats["backend"] == "rtl" and stats["engine_cycles"] > 0
    assert stats["engine_instructions"] == 0


@pytest.mark.soak
def test_cplusplus_program_matches_qemu():
    """Soak only: the first C++ link builds libc++ for the target (about 6 minutes here)."""
    program = build("locally_streaming")
    expected = (0, b"sum of squares below 41: 22140 (ok)\n")
    assert run_model(program, svl=256)[:2] == expected
    assert run_oracle(program, svl=256) == expected


def test_streaming_code_reaches_the_engine_and_v_follows_z():
    status, _, _, result = run_model(build("streaming_add"), svl=128)
    assert status == 0
    # At SVL 128 the 77-element loops take 20 iterations each: tens of engine instructions.
    assert result.engine_by_class["streaming"] > 100
    # The float sums come back in S0 across SMSTOP (V read from the engine's Z0) and the scale
    # goes in through a reload of S0 in streaming mode (V written to the engine's Z0).
    assert result.v_transfers >= 2


def procfs_output(default_vl: int, max_vl: int) -> bytes:
    """What ``tests/programs/procfs.c`` prints on Linux ≥ 6.16 (docs/abi.md, "sysctl": a
    length the system does not support is rounded down to one it does)."""
    return (f"default vector length: {default_vl} (then 0)\nwrite 32: ok\n"
            f"after 32: {min(32, max_vl)} (then 0)\nwrite 17: Invalid argument\nwrite -1: ok\n"
            f"after -1: {max_vl} (then 0)\n/proc/cpuinfo: sme listed\n"
            f"lseek to 10: 10, SEEK_END: Invalid argument\n"
            f"read of a closed descriptor: Bad file descriptor\n"
            f"/etc/passwd: No such file or directory\n").encode()


@pytest.mark.parametrize("svl", [128, 512])
def test_procfs_files_of_a_real_program(svl):
    """The sysctl starts at --svl's length and follows the kernel's parsing and rounding; no
    host file is reachable. QEMU linux-user has no such sysctl: the divergence is shown."""
    program = build("procfs")
    status, output, errors, _ = run_model(program, svl=svl)
    assert (status, output) == (0, procfs_output(svl // 8, svl // 8)), errors.decode()
    oracle_status, oracle_output = run_oracle(program, svl=svl)
    assert oracle_status == 0
    assert oracle_output.startswith(
        b"default vector length: open: No such file or directory\n"
        b"write 32: open: No such file or directory\n")
    assert b"/proc/cpuinfo: sme listed\n" in oracle_output


PRCTL_VL_OUTPUT = (b"get: 32\nset 16: 16\nrdsvl: 16\nset 32 with inherit: 32 inherit\n"
                   b"get: 32 inherit\nset 0: Invalid argument\nset 24: Invalid argument\n"
                   b"set with an unknown flag: Invalid argument\n")


def test_prctl_vector_length_of_a_real_program():
    """Linux ≥ 6.16's prctl (docs/abi.md, "prctl"): the model. QEMU 10 rejects the inherit
    flag and accepts a request of 0 (docs/divergences.md, "QEMU linux-user"): shown here."""
    program = build("prctl_vl")
    status, output, errors, _ = run_model(program, svl=256)
    assert (status, output) == (0, PRCTL_VL_OUTPUT), errors.decode()
    oracle = PRCTL_VL_OUTPUT.replace(b"set 32 with inherit: 32 inherit\nget: 32 inherit",
                                     b"set 32 with inherit: Invalid argument\nget: 16")
    assert run_oracle(program, svl=256) == (0, oracle.replace(b"set 0: Invalid argument",
                                                              b"set 0: 16"))


@pytest.mark.parametrize("mode, linux_output, qemu_output", [
    ("signal", b"TPIDR2_EL0 in the handler: zero, after it: restored\n",
     b"TPIDR2_EL0 in the handler: the interrupted value, after it: restored\n"),
    ("fork-settls", b"TPIDR2_EL0 in a fork child with CLONE_SETTLS: the parent's\n",
     b"TPIDR2_EL0 in a fork child with CLONE_SETTLS: zero\n"),
])
def test_tpidr2_rules_of_linux_and_qemus_divergences(mode, linux_output, qemu_output):
    """Linux ≥ 6.16 gives a signal handler TPIDR2_EL0 = 0 and a fork child its parent's value
    (the model, through a real handler and a real fork); QEMU 10 keeps TPIDR2_EL0 in the
    handler and zeroes it for CLONE_SETTLS, the pre-6.16 rules (docs/divergences.md)."""
    program = build("tpidr2_rules")
    assert run_model(program, mode, svl=256)[:2] == (0, linux_output)
    assert run_oracle(program, mode, svl=256) == (0, qemu_output)


def altstack_output(autodisarm: bool) -> bytes:
    """What ``tests/programs/altstack_sme.c`` prints on Linux ≥ 6.16 (``autodisarm``) and, with
    SS_AUTODISARM refused, under QEMU 10."""
    disarm = (b"SS_AUTODISARM set: handler on it yes, flags there SS_DISABLE, sigaltstack there: "
              b"allowed, re-armed after sigreturn: yes; ZA kept\n") if autodisarm else (
        b"SS_AUTODISARM refused: handler on it yes, flags there other, sigaltstack there: "
        b"refused, re-armed after sigreturn: no; ZA kept\n")
    return (b"sigaltstack of AT_MINSIGSTKSZ + 4 KiB: ok\n"
            b"handler on the alternate stack: yes, flags SS_ONSTACK, sigaltstack there: EPERM; "
            b"after: streaming, ZA kept\n" + disarm
            + b"1024-byte stack: ENOMEM; flags 7: EINVAL\n")


@pytest.mark.parametrize("svl", [128, 512, 2048])
def test_alternate_signal_stack_with_sme_state(svl):
    """The model follows Linux at every SVL (the frame fits in AT_MINSIGSTKSZ). QEMU 10 refuses
    SS_AUTODISARM, and gives no AT_MINSIGSTKSZ, so at SVL 2048 the frame overflows the stack
    the program sizes with musl's MINSIGSTKSZ instead and it dies (docs/divergences.md)."""
    program = build("altstack_sme")
    status, output, errors, _ = run_model(program, svl=svl)
    assert (status, output) == (0, altstack_output(autodisarm=True)), errors.decode()
    if svl == 2048:
        assert run_oracle(program, svl=svl) == (139, b"sigaltstack of AT_MINSIGSTKSZ + 4 KiB: ok\n")
    else:
        assert run_oracle(program, svl=svl) == (0, altstack_output(autodisarm=False))


def test_scalar_fp16_and_bfcvt_performed_by_the_host_cpu_match_qemu():
    """FEAT_FP16 scalar and BFCVT (sim/host_fp.py; Unicorn's A72 lacks them): 22 x 22 operand
    pairs of specials in 8 FPCR settings (every rounding mode, FZ16, FZ, DN) per instruction,
    results and FPSR flags, identical to QEMU's native implementation."""
    program = build("fp16_scalar")
    status, output, errors, _ = run_model(program, svl=128)
    assert status == 0, errors.decode()
    assert len(output.splitlines()) == 43
    assert run_oracle(program, svl=128) == (0, output)


def test_python_api_calls_an_exported_streaming_function_after_the_run():
    image = load_elf_image(build("za_mopa"))
    process = ElfProcess(image, ["za_mopa"], svl=256, stdout=io.BytesIO())
    assert process.run().status == 0
    cpu = process.cpu
    buffer = 0x7000_0000
    cpu.map(buffer, 0x1000, PROT_READ | PROT_WRITE)
    a, b = list(range(1, 20)), [3 * i - 7 for i in range(19)]
    cpu.write_memory(buffer, struct.pack("<19i", *a))
    cpu.write_memory(buffer + 0x100, struct.pack("<19i", *b))
    result = process.call("dot_s32", buffer, buffer + 0x100, 19, streaming=True)
    assert result == sum(x * y for x, y in zip(a, b))
    assert not cpu.streaming
    assert cpu.read_memory(buffer, 8) == struct.pack("<2i", 1, 2)


def test_python_api_passes_floating_point_arguments_and_shares_za():
    process = ElfProcess(load_elf_image(build("za_mopa")), ["za_mopa"], svl=256,
                         stdout=io.BytesIO())
    assert process.run().status == 0
    cpu = process.cpu
    buffer = 0x7000_0000
    cpu.map(buffer, 0x1000, PROT_READ | PROT_WRITE)
    values = np.arange(1, 38, dtype=np.float32)
    cpu.write_memory(buffer, values.tobytes())
    total = process.call("scaled_sum_f32", buffer, 37, np.float32(0.5), streaming=True,
                         result=np.float32)
    assert type(total) is np.float32 and total == values.sum() * 0.5
    assert process.call("mixed_arguments", -3, 0.25, np.float32(1.5), 40, np.float16(2.0),
                        result=float) == -3000 + 25 + 15 + 40 + 0.25
    # Shared ZA: contents written from Python, changed by the callee, read back.
    cpu.start_za()
    vector = cpu.engine.svl // 8
    before = np.arange(vector * vector // 4, dtype=np.float32)
    cpu.write_za(before.tobytes())
    assert process.call("za_add_to_row", 5, np.float32(1.25), streaming=True, shared_za=True,
                        result=None) is None
    after = np.frombuffer(cpu.read_za(), np.float32).reshape(vector, vector // 4)
    expected = before.reshape(vector, vector // 4).copy()
    expected[4 * 5] += 1.25                 # ZA0.S horizontal slice 5 is array vector 20
    assert np.array_equal(after, expected) and not cpu.streaming
    with pytest.raises(RuntimeError, match="private-ZA interface and ZA is active"):
        process.call("dot_s32", buffer, buffer, 1, streaming=True)
    cpu.exit_za()
    with pytest.raises(TypeError, match="not 'x'"):
        process.call("dot_s32", "x")
    with pytest.raises(ValueError, match="at most 8 floating-point arguments"):
        process.call("mixed_arguments", *[1.0] * 9)
    with pytest.raises(ValueError, match="result must be"):
        process.call("mixed_arguments", result=complex)


def test_exec_forwards_output_and_status(capfd):
    program = build("hello")
    assert main(["exec", str(program), "there", "--svl", "256"]) == 7
    assert capfd.readouterr().out == "hello from there with 1 argument(s)\n"
    assert main(["exec", str(program), "--", "--svl"]) == 7
    assert capfd.readouterr().out == "hello from --svl with 1 argument(s)\n"


def test_exec_stats_json(tmp_path, capfd):
    stats = tmp_path / "stats.json"
    assert main(["exec", str(build("za_mopa")), "--stats", "--stats-json", str(stats)]) == 0
    figures = json.loads(stats.read_text())
    assert figures["exit_status"] == 0 and figures["engine_instructions"] > 0
    assert figures["host_instructions"] > 1000
    assert {"wall_seconds", "context_switches", "signals", "za_bytes_saved"} <= set(figures)
    assert "engine instructions" in capfd.readouterr().err


def test_exec_qemu_backend(capfd):
    need_tool("qemu")
    assert main(["exec", str(build("hello")), "--backend", "qemu", "q"]) == 7
    assert capfd.readouterr().out == "hello from q with 1 argument(s)\n"


def test_exec_rejects_what_it_cannot_run(tmp_path, capfd):
    text = tmp_path / "notes.txt"
    text.write_text("not a program\n")
    truncated = tmp_path / "truncated"
    truncated.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(9))
    x86 = tmp_path / "x86"
    x86.write_bytes(_elf_header(machine=62))
    for path, message in ((tmp_path / "missing", "cannot read"), (text, "not an ELF"),
                          (truncated, "not a valid ELF"), (x86, "AArch64")):
        assert main(["exec", str(path)]) == 2
        err = capfd.readouterr().err
        assert err.count("\n") == 1 and err.startswith("zatile: error:") and message in err, err


def _elf_header(machine: int) -> bytes:
    """A 64-byte ELF64 header with no program headers."""
    ident = b"\x7fELF\x02\x01\x01" + bytes(9)
    return ident + struct.pack("<HHIQQQIHHHHHH", 2, machine, 1, 0, 0, 0, 0, 64, 56, 0, 64, 0, 0)


def test_simd_classes():
    assert simd_class(0x4EA08400) is SimdClass.ILLEGAL     # add v0.4s, v0.4s, v0.4s
    assert simd_class(0x5EE08400) is SimdClass.ILLEGAL     # add d0, d0, d0 (AdvSIMD scalar)
    assert simd_class(0x4C407000) is SimdClass.ILLEGAL     # ld1 {v0.16b}, [x0]
    assert simd_class(0x1E222820) is SimdClass.LEGAL       # fadd s0, s1, s2
    assert simd_class(0x3DC00000) is SimdClass.LEGAL       # ldr q0, [x0]
    assert simd_class(0x9E670000) is SimdClass.LEGAL       # fmov d0, x0
    assert simd_class(0x8B020020) is SimdClass.NONE        # add x0, x1, x2
    assert simd_class(0xF9400000) is SimdClass.NONE        # ldr x0, [x0]
