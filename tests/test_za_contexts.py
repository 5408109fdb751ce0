"""Virtual ZA contexts (docs/abi.md, "Virtual ZA contexts"): the engine's physical ZA contexts,
threads' ZA kept resident in them, and private contexts within a thread (``PR_ZATILE_ZA_*``).

Every program checks its own ZA against its own pattern, so a context lost, leaked or swapped
in the wrong place fails the test; the kernel's counters show what moved.
"""

from __future__ import annotations

import pytest

from zatile.sim.engine import ModelEngine
from zatile.sw.abi import constants as c
from zatile.sw.abi import libc, za_contexts
from zatile.sw.abi.kernel import Kernel
from zatile.sw.abi.program import Brk, Call, Executable, Syscall
from zatile.sw.arch.asm import assemble_line
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.engine import Status
import test_abi_common as common
from test_abi_common import (
    DATA_BASE, FrameCapture, exit_, install_handler, load_za, pattern, run_to_completion, set_vl,
    start, store_za,
)
from test_abi_process import branch_on_fork, fork_step

SVL_B = 16
ZA_BYTES = SVL_B * SVL_B
PATTERN, OUT = DATA_BASE, DATA_BASE + 0x1000


def new_kernel(za_contexts: int, **kwargs) -> Kernel:
    """A kernel on the tests' engine (the model, or the RTL under tests/cocotb_abi.py)."""
    return common.new_kernel(128, za_contexts=za_contexts, **kwargs)


def check_za(checks: list, expected: bytes, label: str) -> list:
    """Steps storing ZA to OUT and recording whether it is ``expected``."""
    return [*store_za(OUT, SVL_B),
            Call(lambda context: checks.append((label, context.read(OUT, ZA_BYTES) == expected)))]


def load_pattern(za: bytes) -> list:
    return [Call(lambda context: context.write(PATTERN, za)), *load_za(PATTERN, SVL_B)]


# ---------------------------------------------------------------------------- the engine
def test_each_physical_context_has_its_own_za_and_pstate_za():
    engine = ModelEngine(EngineConfig(max_svl=256, za_contexts=2))
    engine.sme_enabled = True
    engine.smcr_len = 0                                       # SVL 128
    assert engine.issue(assemble_line("smstart za")).status is Status.OK
    engine._model.state.za[:] = 7
    engine.za_context = 1
    assert engine.za_context == 1 and engine.svcr == 0       # context 1: ZA off
    assert engine.issue(assemble_line("smstart za")).status is Status.OK
    assert not engine._model.state.za.any()                  # 0 -> 1 zeroed its own array
    engine._model.state.za[:] = 9
    engine.za_context = 0
    assert engine.svcr == c.SVCR_ZA_MASK and (engine._model.state.za == 7).all()
    assert engine.issue(assemble_line("smstop za")).status is Status.OK
    engine.za_context = 1
    assert engine.svcr == c.SVCR_ZA_MASK and (engine._model.state.za == 9).all()
    engine.smcr_len = 1                                      # SVL 256: every array zeroed
    assert engine.svcr == c.SVCR_ZA_MASK and not engine._model.state.za.any()
    engine.za_context = 0
    assert engine.svcr == 0 and engine._model.state.za.shape == (32, 32)
    assert not engine._model.state.za.any()
    with pytest.raises(ValueError, match="ZA context 2 does not exist"):
        engine.za_context = 2


# ------------------------------------------------------------- resident across threads
def za_keeper(seed: int, rounds: int, checks: list) -> Executable:
    """A thread with ZA on and its own pattern in it, checked after each yield."""
    za = pattern(ZA_BYTES, seed)
    steps = [set_vl(SVL_B), "smstart za", *load_pattern(za)]
    for round_ in range(rounds):
        steps += [Syscall(c.NR_SCHED_YIELD), *check_za(checks, za, f"{seed}.{round_}")]
    return Executable({"main": [*steps, exit_(0)]}, data_size=0x2000)


def run_keepers(za_contexts: int, threads: int = 3, rounds: int = 4) -> Kernel:
    kernel = new_kernel(za_contexts)
    checks: list = []
    for index in range(threads):
        start(kernel, za_keeper(index + 1, rounds, checks), f"/bin/keeper{index}")
    run_to_completion(kernel, quantum=1000)
    assert len(checks) == threads * rounds and all(ok for _, ok in checks), checks
    assert all(process.exit_code == 0 for process in kernel.processes.values())
    assert kernel.heap.blocks_in_use == 0 and not any(kernel._resident)
    return kernel


def test_threads_za_stays_resident_when_there_are_enough_physical_contexts():
    """Three threads with ZA taking turns: with 4 physical contexts no ZA byte moves after
    they started; with 2, fewer move than with 1, where every switch stores and loads ZA."""
    moved = {}
    for count in (1, 2, 4):
        stats = run_keepers(count).stats
        moved[count] = stats.za_bytes_saved + stats.za_bytes_restored
        if count == 4:
            assert stats.za_evictions == 0 and stats.za_resident_hits >= 3 * 4
        print(f"{count} physical ZA contexts: {moved[count]} bytes of ZA moved, "
              f"{stats.za_evictions} evictions, {stats.za_resident_hits} found resident")
    assert moved[4] == 0 < moved[2] < moved[1]
    assert moved[1] >= 2 * ZA_BYTES * 3 * 3          # each of >= 9 switches stores and loads


@pytest.mark.parametrize("broken", ["store", "owner"])
def test_a_wrong_residency_is_caught(monkeypatch, broken):
    """Planted kernel bugs: an eviction that stores nothing, and a bind that takes whatever a
    physical context holds for the thread's own. The threads' checks fail."""
    if broken == "store":
        monkeypatch.setattr(za_contexts, "_STR_ZA", assemble_line("ldr za[w12, 0], [x0]"))
        count = 1
    else:
        monkeypatch.setattr(za_contexts.ZaContextsMixin, "_slot_of",
                            lambda self, thread, selector: 0 if self._resident[0] else None)
        count = 2
    with pytest.raises(AssertionError, match=r"\('[0-9.]+', False\)"):
        run_keepers(count)


# ------------------------------------------------------------ virtual contexts in a thread
def select(selector_of: dict, name: str, expect_previous: str | None = None) -> Call:
    def body(context):
        previous = libc.za_select(context, selector_of[name])
        assert previous >= 0, f"select {name}: {previous}"
        if expect_previous is not None:
            assert previous == selector_of[expect_previous]
    return Call(body)


@pytest.mark.parametrize("count", [1, 2, 4])
def test_virtual_contexts_keep_their_own_za_and_za_bit(count):
    """One thread opens two contexts, fills each, checks its own context 0 still has ZA off
    and each keeps its contents; with enough physical contexts selecting moves nothing."""
    checks: list = []
    selector_of = {"own": 0}
    first, second = pattern(ZA_BYTES, 1), pattern(ZA_BYTES, 2)

    def open_contexts(context):
        selector_of.update(first=libc.za_open(context), second=libc.za_open(context))
    svcr = []
    program = Executable({"main": [
        set_vl(SVL_B), Call(open_contexts),
        select(selector_of, "first", "own"), "smstart za", *load_pattern(first),
        select(selector_of, "second", "first"), "smstart za", *load_pattern(second),
        select(selector_of, "own", "second"), "mrs x9, svcr",
        Call(lambda context: svcr.append(context.x[9])),
        select(selector_of, "first"), *check_za(checks, first, "first"),
        select(selector_of, "second"), *check_za(checks, second, "second"),
        select(selector_of, "first"), *check_za(checks, first, "first again"),
        exit_(0)]}, data_size=0x2000)
    kernel = new_kernel(count)
    process = start(kernel, program)
    run_to_completion(kernel)
    assert process.exit_code == 0
    assert selector_of == {"own": 0, "first": 1, "second": 2}
    assert svcr == [0] and checks == [("first", True), ("second", True), ("first again", True)]
    stats = kernel.stats
    assert stats.za_selects == 6
    if count >= 3:
        assert stats.za_bytes_saved == stats.za_bytes_restored == stats.za_evictions == 0
        assert stats.za_resident_hits >= 3             # the last three selections
    else:
        assert stats.za_bytes_saved > 0 and stats.za_bytes_restored > 0
    assert kernel.heap.blocks_in_use == 0


@pytest.mark.parametrize("count", [4])
def test_the_context_api_errors(count):
    results = {}

    def body(context):
        results["open with an argument"] = context.syscall(c.NR_PRCTL, c.PR_ZATILE_ZA_OPEN, 1)
        results["select unknown"] = libc.za_select(context, 5)
        results["close own"] = libc.za_close(context, 0)
        results["close unknown"] = libc.za_close(context, 7)
        opened = [libc.za_open(context) for _ in range(c.ZA_CONTEXTS_PER_THREAD)]
        results["opened"] = opened == list(range(1, c.ZA_CONTEXTS_PER_THREAD + 1))
        results["one too many"] = libc.za_open(context)
        results["select 3"] = libc.za_select(context, 3)
        results["close selected"] = libc.za_close(context, 3)
        results["select 0"] = libc.za_select(context, 0)
        results["close 3"] = libc.za_close(context, 3)
        results["select closed"] = libc.za_select(context, 3)
        results["reopen"] = libc.za_open(context)         # selectors are not reused
        results["select huge"] = libc.za_select(context, 1 << 40)
    kernel = new_kernel(count)
    process = start(kernel, Executable({"main": [set_vl(SVL_B), Call(body), exit_(0)]}))
    run_to_completion(kernel)
    assert process.exit_code == 0
    assert results == {
        "open with an argument": -c.EINVAL, "select unknown": -c.EINVAL,
        "close own": -c.EINVAL, "close unknown": -c.EINVAL, "opened": True,
        "one too many": -c.ENOSPC, "select 3": 0, "close selected": -c.EBUSY, "select 0": 3,
        "close 3": 0, "select closed": -c.EINVAL,
        "reopen": c.ZA_CONTEXTS_PER_THREAD + 1, "select huge": -c.EINVAL}
    assert kernel.heap.blocks_in_use == 0


def test_opening_without_kernel_memory_is_enomem():
    results = []
    kernel = new_kernel(1, heap_size=4 * ZA_BYTES)
    program = Executable({"main": [set_vl(SVL_B), Call(lambda context: results.extend(
        libc.za_open(context) for _ in range(6))), exit_(0)]})
    start(kernel, program)
    run_to_completion(kernel)
    assert results[0] == 1 and results[-1] == -c.ENOMEM
    assert kernel.heap.blocks_in_use == 0


@pytest.mark.parametrize("count", [1, 4])
def test_fork_copies_every_virtual_context(count):
    """The child has the parent's contexts (same selectors, same contents, same ZA bits)."""
    checks: list = []
    za = pattern(ZA_BYTES, 3)
    selector_of = {"own": 0, "mine": 1}
    after_fork = [select(selector_of, "mine", "own"), *check_za(checks, za, "mine"),
                  select(selector_of, "own"), "mrs x9, svcr",
                  Call(lambda context: checks.append(("own off", context.x[9] == 0))), exit_(0)]
    program = Executable({
        "main": [set_vl(SVL_B), Call(lambda context: libc.za_open(context)),
                 select(selector_of, "mine"), "smstart za", *load_pattern(za),
                 select(selector_of, "own"), fork_step(), branch_on_fork()],
        "parent": after_fork, "child": after_fork}, data_size=0x2000)
    kernel = new_kernel(count)
    start(kernel, program)
    run_to_completion(kernel)
    assert checks == [("mine", True), ("own off", True)] * 2
    assert all(process.exit_code == 0 for process in kernel.processes.values())
    assert kernel.heap.blocks_in_use == 0


def test_a_vector_length_change_drops_every_contexts_za():
    checks: list = []
    selector_of = {"own": 0, "mine": 1}
    program = Executable({"main": [
        set_vl(SVL_B), Call(lambda context: libc.za_open(context)),
        select(selector_of, "mine"), "smstart za", *load_pattern(pattern(ZA_BYTES, 4)),
        select(selector_of, "own"), "smstart za", set_vl(2 * SVL_B),
        select(selector_of, "mine"), "mrs x9, svcr",
        Call(lambda context: checks.append(context.x[9])), exit_(0)]}, data_size=0x2000)
    kernel = Kernel(EngineConfig(max_svl=256, za_contexts=2))
    start(kernel, program)
    run_to_completion(kernel)
    assert checks == [0] and kernel.heap.blocks_in_use == 0


@pytest.mark.parametrize("count", [2, 4])
def test_a_tracer_sees_the_selected_context_of_a_resident_thread(count):
    """NT_ARM_ZA of a tracee whose ZA is resident (not the current thread) is its selected
    context's, stored from the engine for the tracer."""
    za = pattern(ZA_BYTES, 5)
    seen = []
    selector_of = {"own": 0, "mine": 1}
    tracee = Executable({"main": [
        set_vl(SVL_B), Call(lambda context: libc.za_open(context)),
        select(selector_of, "mine"), "smstart za", *load_pattern(za),
        *[Syscall(c.NR_SCHED_YIELD)] * 6, exit_(0)]}, data_size=0x2000)
    kernel = new_kernel(count)
    process = start(kernel, tracee, "/bin/tracee")

    def trace(context):
        tid = process.threads[0].tid
        assert libc.ptrace(context, c.PTRACE_ATTACH, tid) == 0
        result, data, _ = libc.getregset(context, tid, c.NT_ARM_ZA, 16 + ZA_BYTES)
        seen.append((result, data[16:]))
        assert libc.ptrace(context, c.PTRACE_DETACH, tid) == 0
    tracer = Executable({"main": [Syscall(c.NR_SCHED_YIELD)] * 2 + [Call(trace), exit_(0)]},
                        data_size=0x1000)
    start(kernel, tracer, "/bin/tracer")
    run_to_completion(kernel)
    assert seen == [(0, za)]
    assert kernel.stats.za_evictions == 0            # stored for the tracer, still resident


@pytest.mark.parametrize("count", [1, 4])
def test_a_signal_frame_holds_the_selected_context(count):
    """A signal taken with a virtual context selected: the frame's ZA record is that context's,
    the handler starts with its ZA off (and may use it), sigreturn puts it back; the thread's
    own context is untouched throughout."""
    checks: list = []
    mine, clobber = pattern(ZA_BYTES, 6), pattern(ZA_BYTES, 7)
    selector_of = {"own": 0, "mine": 1}
    frames = FrameCapture()

    def handler_sees_za_off(context):
        checks.append(("handler ZA off", context.x[9] == 0))
    program = Executable({
        "main": [set_vl(SVL_B), install_handler(c.SIGTRAP),
                 Call(lambda context: libc.za_open(context)), select(selector_of, "mine"),
                 "smstart za", *load_pattern(mine), Brk(), *check_za(checks, mine, "mine"),
                 select(selector_of, "own"), "mrs x9, svcr",
                 Call(lambda context: checks.append(("own off", context.x[9] == 0))), exit_(0)],
        "handler": frames.steps(["mrs x9, svcr", Call(handler_sees_za_off), "smstart za",
                                 *load_pattern(clobber)])}, data_size=0x2000)
    kernel = new_kernel(count)
    process = start(kernel, program)
    run_to_completion(kernel)
    assert process.exit_code == 0
    assert checks == [("handler ZA off", True), ("mine", True), ("own off", True)]
    assert frames.record(c.ZA_MAGIC).data[16:16 + ZA_BYTES] == mine
