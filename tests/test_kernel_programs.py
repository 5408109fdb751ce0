"""Compiled programs as processes of the kernel model (sw/abi/host_tasks.py).

``tests/test_real_programs.py`` runs the signal, thread and fork programs against QEMU with the
default time slice. Here:

* ptrace and execve of real programs, which QEMU linux-user cannot run (it has no ptrace, and
  its execve of an aarch64 program needs binfmt_misc on the host): the model's output is
  checked against what Linux ≥ 6.16 prints by the rules of docs/abi.md;
* the core dump of a real program killed in streaming mode;
* hostile system calls (random numbers and arguments) and memory exhaustion: errors for the
  program, never an exception or an unbounded allocation in the simulator;
* preemption: the slices are short and random Here the slices are short and random (``Kernel.run(rng=...)``), so threads
and processes are preempted at arbitrary host instructions, in the middle of the C library's
locks and of their SME work, and the kernel's lazy ZA switching is exercised hundreds of times:

* the programs still print exactly what Linux (and QEMU) print, every kernel save area is
  freed at the end, and the figures show the switching happened;
* the programs' own checks catch a kernel that restores ZA wrongly (a planted bug: the restore
  sequence skips one row of ZA) — the check is shown to catch;
* ``zatile exec --quantum`` and ``--stats`` report the kernel's figures.
"""

from __future__ import annotations

import io
import json
import random

import pytest

from elftools.elf.elffile import ELFFile

from test_abi_common import DATA_BASE, load_za, pattern, store_za
from tests.test_real_programs import FORK_OUTPUT, THREADS_OUTPUT, build, run_model
from zatile.sw.abi import constants as c
from zatile.sw.abi import engine_context, za_contexts
from zatile.sw.abi.elf_process import GUEST_MEMORY_LIMIT, load_elf_image
from zatile.sw.abi.kernel import Kernel
from zatile.sw.abi.program import Call, Executable, Syscall
from zatile.sw.arch.config import EngineConfig
from zatile.sw.cli import main


def system_call(kernel: Kernel, thread, number: int, *arguments: int) -> int:
    """``SVC #0`` of ``thread`` with X8 = ``number`` and X0.. = ``arguments``: X0, signed."""
    thread.cpu.x[8] = number
    thread.cpu.x[:len(arguments)] = [argument & ((1 << 64) - 1) for argument in arguments]
    kernel._switch_to(thread)
    kernel._host_syscall(thread)
    result = thread.cpu.x[0]
    return result - (1 << 64) if result >> 63 else result


def run_preempted(name: str, svl: int, quantum: int, seed: int):
    """(process, stdout, kernel) after running ``name`` with random slices of 1..quantum host
    instructions and a random choice of the next thread."""
    program = build(name)
    kernel = Kernel(EngineConfig(max_svl=svl), host_quantum=quantum)
    kernel.sme_default_vl = svl // 8
    stdout = io.BytesIO()
    process = kernel.spawn_elf(load_elf_image(program), [str(program)], stdout=stdout,
                               stderr=io.BytesIO())
    rng = random.Random(seed)
    while kernel.run(max_steps=1 << 40, quantum=8, rng=rng):
        pass
    return process, stdout.getvalue(), kernel


@pytest.mark.parametrize("name, output", [("threads_za", THREADS_OUTPUT),
                                          ("fork_za", FORK_OUTPUT)])
@pytest.mark.parametrize("svl", [128, 512])
def test_programs_survive_random_preemption(name, output, svl):
    process, stdout, kernel = run_preempted(name, svl, quantum=3000, seed=svl)
    assert (process.exit_code, stdout) == (0, output)
    stats = kernel.stats
    assert stats.preemptions > 100 and stats.context_switches > 100, stats
    assert stats.za_bytes_saved >= 2 * (svl // 8) ** 2, stats
    assert stats.za_bytes_restored >= 2 * (svl // 8) ** 2, stats
    assert kernel.heap.blocks_in_use == 0          # every thread's save areas were freed


def test_a_wrong_za_restore_is_caught_by_the_programs(monkeypatch):
    """Plant a kernel bug: the lazy restore skips the LDR of ZA's first array vector (row 0 of
    ZA0.S, which the programs fill), leaving the previous holder's row there. The threads then
    see each other's row, and the program says so."""
    kstream = engine_context.EngineContextMixin._kstream
    skipped = []

    def skip_first_row(self, steps):
        if steps and steps[0][0] == za_contexts._LDR_ZA:
            skipped.append(self.current.tid)
            steps = steps[1:]
        kstream(self, steps)

    monkeypatch.setattr(engine_context.EngineContextMixin, "_kstream", skip_first_row)
    _, stdout, _ = run_preempted("threads_za", 128, quantum=3000, seed=1)
    assert skipped, "the restore sequence never ran"
    assert b"ZA lost" in stdout


@pytest.mark.parametrize("svl", [128, 2048])
def test_a_tracer_reads_and_writes_a_live_za_of_a_real_child(svl):
    status, output, errors, result = run_model(build("ptrace_za"), svl=svl)
    assert (status, output) == (0, b"attach: ok, waitpid: stopped by SIGSTOP\n"
                                   b"GETREGSET NT_ARM_ZA: vl the streaming VL, ZA live, "
                                   b"contents the child's\n"
                                   b"SETREGSET: ok, detach: ok, child exit status 0\n"), errors
    assert result.signals_delivered == 1            # the child's SIGUSR1 to its parent


@pytest.mark.parametrize("mode, first_line, vl", [("plain", b"", 64),
                                                  ("onexec", b"PR_SME_SET_VL_ONEXEC 32: "
                                                             b"accepted\n", 32)])
def test_execve_of_a_real_program_resets_sme_state(mode, first_line, vl):
    """ZA live with a lazy save pending before execve; after it SM=0, ZA=0, TPIDR2_EL0=0, the
    new argv and environment, and the VL asked for with PR_SME_SET_VL_ONEXEC."""
    status, output, errors, _ = run_model(build("exec_sme"), mode, svl=512)
    assert (status, output) == (5, first_line + (
        f"after execve: argv[2] {mode}, environment passed, SM=0 ZA=0 TPIDR2 zero, "
        f"VL {vl}\n").encode()), errors


def test_core_dump_of_a_real_program_killed_in_streaming_mode():
    program = build("faults")
    kernel = Kernel(EngineConfig(max_svl=256))
    kernel.sme_default_vl = 32
    process = kernel.spawn_elf(load_elf_image(program), [str(program), "engine-segv"],
                               stdout=io.BytesIO(), stderr=io.BytesIO())
    kernel.run(max_steps=1 << 40)
    assert process.exit_signal == 11 and process.wait_status == 11 | 0x80
    core = ELFFile(io.BytesIO(process.core_dump))
    loads = {segment["p_vaddr"]: segment["p_filesz"] for segment in core.iter_segments()
             if segment["p_type"] == "PT_LOAD"}
    stack_top = process.mm.elf.cpu.memory.mappings[-2][1]       # below the trampoline page
    assert any(start < stack_top <= start + size for start, size in loads.items())
    notes = {note["n_type"]: note for segment in core.iter_segments()
             if segment["p_type"] == "PT_NOTE" for note in segment.iter_notes()}
    siginfo = notes["NT_SIGINFO"]["n_desc"]
    assert int.from_bytes(siginfo[16:24], "little") == 16          # si_addr: the bad store
    ssve = notes[0x40B]["n_desc"]                                  # NT_ARM_SSVE
    assert int.from_bytes(ssve[8:10], "little") == 32              # vl: streaming, live
    assert int.from_bytes(ssve[0:4], "little") > 16                # registers included


def test_exec_quantum_and_kernel_stats(tmp_path, capfd):
    figures = tmp_path / "stats.json"
    assert main(["exec", str(build("fork_za")), "--svl", "256", "--quantum", "2000", "--stats",
                 "--stats-json", str(figures)]) == 0
    captured = capfd.readouterr()
    assert captured.out == FORK_OUTPUT.decode()
    assert "context switches" in captured.err and "bytes of ZA saved" in captured.err
    stats = json.loads(figures.read_text())
    assert stats["preemptions"] > 10 and stats["context_switches"] > 10
    assert stats["za_bytes_saved"] > 0 and stats["signals_delivered"] == 0
    assert stats["sme_saves"] > 0 and stats["lazy_restores"] > 0


def test_exec_rejects_a_bad_quantum(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["exec", str(build("hello")), "--quantum", "0"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == "zatile: error: argument --quantum: must be at least 1, " \
                                      "not 0\n"


def test_hostile_system_calls_return_errors_and_never_crash_the_simulator():
    """4,000 system calls with random numbers and arguments (pointers into the program's own
    memory, the kernel's, and nowhere) from a real process: each returns a value or -errno,
    or ends the process with a signal; the simulator never raises. A process that ended is
    replaced by a new one."""
    program = build("hello")
    image = load_elf_image(program)
    kernel = Kernel(EngineConfig(max_svl=256), host_quantum=5000)
    rng = random.Random(2026)
    interesting = [0, 1, 8, 16, 0x1000, 0x7FFF_FFFF, 0xFFFF_FFFF, 1 << 63, (1 << 64) - 1,
                   0xFFFF_0000_0000_0000, image.entry]

    def new_thread():
        process = kernel.spawn_elf(image, [str(program)], stdout=io.BytesIO(),
                                   stderr=io.BytesIO())
        return process.threads[0]

    thread = new_thread()
    for _ in range(4000):
        if not thread.runnable:
            thread = new_thread()
        stack = thread.cpu.sp
        number = rng.choice([rng.randrange(0, 300), rng.choice(
            [56, 63, 64, 66, 96, 98, 129, 132, 134, 135, 139, 167, 214, 215, 220, 222, 226, 260,
             117, 221, 101, 113, 278])])
        if number in (93, 94):                       # exit: replaced by the next process
            number = 172
        arguments = [rng.choice([rng.choice(interesting), stack - rng.randrange(0, 4096),
                                 rng.getrandbits(64)]) for _ in range(6)]
        thread.cpu.x[8] = number
        thread.cpu.x[:6] = arguments
        kernel._switch_to(thread)
        kernel._host_syscall(thread)
        if thread.runnable:
            result = thread.cpu.x[0]
            assert result < 1 << 64
        kernel._interrupt_sleepers()
        for waiting in kernel.threads.values():   # no clock: wake sleepers to keep going
            waiting.waiting = None


def test_guest_memory_is_bounded():
    """mmap, brk and fork past GUEST_MEMORY_LIMIT (all processes together) fail with ENOMEM,
    so a program cannot make the simulator allocate the host's memory."""
    program = build("hello")
    kernel = Kernel(EngineConfig(max_svl=128))
    thread = kernel.spawn_elf(load_elf_image(program), [str(program)], stdout=io.BytesIO(),
                              stderr=io.BytesIO()).threads[0]

    def call(number, *arguments):
        return system_call(kernel, thread, number, *arguments)

    mmap, brk, clone, prot_rw, anonymous = 222, 214, 220, 3, 0x22
    assert call(mmap, 0, GUEST_MEMORY_LIMIT, prot_rw, anonymous, -1, 0) == -c.ENOMEM
    assert call(mmap, 0, GUEST_MEMORY_LIMIT // 2, prot_rw, anonymous, -1, 0) > 0
    assert call(clone, c.SIGCHLD, 0, 0, 0, 0) == -c.ENOMEM      # the copy would not fit
    assert call(mmap, 0, GUEST_MEMORY_LIMIT // 2, prot_rw, anonymous, -1, 0) == -c.ENOMEM
    top = call(brk, 0)
    assert call(brk, top + GUEST_MEMORY_LIMIT // 2) == top          # brk stays put
    assert call(mmap, 0, 1 << 20, prot_rw, anonymous, -1, 0) > 0   # small ones still fit


def test_step_programs_and_compiled_programs_share_the_engine():
    """A Python-step program holding all of ZA and a compiled multi-threaded program run in one
    kernel under random preemption: each keeps its own ZA."""
    svl = 256
    svl_b = svl // 8
    za = pattern(svl_b * svl_b, seed=11)
    kernel = Kernel(EngineConfig(max_svl=svl), host_quantum=3000)
    kernel.sme_default_vl = svl_b
    step_program = Executable({"main": [
        "smstart za", *load_za(DATA_BASE, svl_b),
        *[Syscall(c.NR_SCHED_YIELD)] * 40,
        *store_za(DATA_BASE + len(za), svl_b),
        Call(lambda context: context.syscall(
            c.NR_EXIT_GROUP, int(context.read(DATA_BASE + len(za), len(za)) != za)))]},
        data=za, data_size=2 * len(za))
    kernel.install("/bin/za_holder", step_program)
    holder = kernel.spawn("/bin/za_holder")
    program = build("threads_za")
    stdout = io.BytesIO()
    compiled = kernel.spawn_elf(load_elf_image(program), [str(program)], stdout=stdout,
                                stderr=io.BytesIO())
    rng = random.Random(5)
    while kernel.run(max_steps=1 << 40, quantum=4, rng=rng):
        pass
    assert (holder.exit_code, compiled.exit_code, stdout.getvalue()) == (0, 0, THREADS_OUTPUT)
    assert kernel.stats.za_bytes_restored > 4 * len(za)


def test_an_unimplemented_system_call_is_enosys_with_one_warning_naming_it():
    program = build("hello")
    kernel = Kernel(EngineConfig(max_svl=128))
    stderr = io.BytesIO()
    thread = kernel.spawn_elf(load_elf_image(program), [str(program)], stdout=io.BytesIO(),
                              stderr=stderr).threads[0]
    results = [system_call(kernel, thread, number)      # socket, twice; a number arm64 lacks
               for number in (198, 198, 1000)]
    assert results == [-c.ENOSYS] * 3
    assert stderr.getvalue().decode().splitlines() == [
        "zatile: warning: system call 198 (socket) is not implemented (returns -ENOSYS)",
        "zatile: warning: system call 1000 (unknown to arm64) is not implemented (returns "
        "-ENOSYS)"]


def test_sched_getaffinity_reports_the_one_cpu():
    program = build("hello")
    kernel = Kernel(EngineConfig(max_svl=128))
    thread = kernel.spawn_elf(load_elf_image(program), [str(program)], stdout=io.BytesIO(),
                              stderr=io.BytesIO()).threads[0]
    mask = thread.cpu.sp - 64
    for tid, size, expected in ((0, 128, 8), (thread.tid, 8, 8), (4242, 8, -c.ESRCH),
                                (0, 4, -c.EINVAL), (0, 8, 8)):
        assert system_call(kernel, thread, c.NR_SCHED_GETAFFINITY, tid, size, mask) == expected
    assert thread.process.mm.cpu.read_memory(mask, 8) == (1).to_bytes(8, "little")
    assert system_call(kernel, thread, c.NR_SCHED_GETAFFINITY, 0, 8, 16) == -c.EFAULT


def test_a_program_that_can_never_finish_is_killed_with_a_warning():
    """Linux would wait for ever (QEMU too, so this runs on the model only)."""
    status, output, errors, _ = run_model(build("deadlock"), svl=128)
    assert (status, output) == (128 + c.SIGKILL, b"locking twice\n")
    assert errors.decode().splitlines() == [
        "zatile: warning: every thread left (process 1) waits with nothing to wake it: killed "
        "with SIGKILL"]
