"""The engine under cocotb: clock, reset, bus agents, state load and read-back.

:class:`EngineBench` owns every agent attached to the toplevel (issue driver, result monitor,
memory responder, debug reader) and offers whole-instruction operations on them: issue and wait
(lock step), issue without waiting (streaming, results are routed back in order), drain, load an
:class:`~sim.state.ArchState` through the issue port, and read the architectural registers back
through the debug port. (:class:`zatile.tb.soc.SocBench` offers the same operations on the SoC
wrapper, through its AXI ports.)

:class:`RtlEngine` is the same engine behind the blocking :class:`~zatile.sw.arch.engine.Engine`
interface the CPU side (the kernel model, :func:`zatile.sim.straight_line.execute_program`) is
written against. Its methods
may only be called from a thread started with :func:`cocotb.task.bridge`; each call blocks on a
:func:`cocotb.task.resume`-wrapped coroutine of the bench.

Loading a state (:meth:`EngineBench.load_state`): after reset SVCR is 0. ``MSR SVCR`` turns SM
(and ZA if the state has it) on, which zeroes Z, P, FFR (and ZA); every non-zero Z and P
register and ZA row is then loaded with SVE ``LDR Z``/``LDR P`` and SME ``LDR ZA`` from a
testbench-private staging region that is unmapped again afterwards; a last ``MSR SVCR`` sets the
state's SVCR. Consequences: Z/P of a state with SM=0 read as zero (an SM change would zero them
anyway, and nothing reads them at SM=0), and FFR always starts at zero (no instruction of the
subset writes it).
"""

from __future__ import annotations

import random
from collections import deque
from typing import Callable, Sequence

import numpy as np
from cocotb.clock import Clock
from cocotb.task import resume
from cocotb.triggers import ClockCycles, Event, FallingEdge, SimTimeoutError, with_timeout
from cocotb.utils import get_sim_time

from zatile.hw.perf_counters import PerfLayout
from zatile.sim.state import ArchState, Memory
from zatile.sw.arch.asm import disassemble
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.constants import FPSR_RESET_ON_SM_CHANGE, SVCR_SM, SVCR_ZA
from zatile.sw.arch.engine import Engine, Result, Status, StreamError
from zatile.sw.arch.isa import FORMS_BY_NAME, Trait, decode, destination_of, operand_values
from zatile.tb.coverage import OverlapTracker
from zatile.tb.debug import DebugReader
from zatile.tb.issue import IssueDriver, ResultMonitor, RtlResult
from zatile.tb.memory import BusMemory, MemoryResponder
from zatile.tb.pauses import PAUSE_STYLES, pauses_by_name
from zatile.tb.stream import Payload, layout_fields, read_int, signal

__all__ = ["CLOCK_NS", "STAGING_BASE", "EngineBench", "RtlEngine", "smcr_len_for",
           "to_model_result"]

CLOCK_NS = 10
#: How often an issue transfer carries one instruction though more are queued, under every pause
#: style but "none" (the benchmarks' full speed).
SINGLE_ISSUE_RATE = 0.25
#: Where the staging region of :meth:`EngineBench.load_state` is mapped while it runs.
STAGING_BASE = 0x7FFF_0000_0000_0000


def smcr_len_for(svl: int) -> int:
    """The SMCR_ELx.LEN value that requests ``svl`` bits."""
    return svl // 128 - 1


def to_model_result(word: int, rtl: RtlResult) -> Result:
    """An engine result in the reference model's terms."""
    status = Status[rtl.status]
    decoded = None if status is Status.UNDEF else decode(word)
    form = decoded.form.name if decoded else None
    scalar = rtl.scalar if status is Status.OK and destination_of(word) else None
    raises = status is Status.OK and Trait.FP_FLAGS in decoded.form.traits
    return Result(status, smtc=rtl.smtc if status is Status.SME_TRAP else None,
                  fault_address=rtl.fault_address if status is Status.FAULT else None,
                  scalar=scalar, form=form, nzcv=rtl.nzcv if rtl.sets_flags else None,
                  fpsr_flags=rtl.fpsr_flags if raises else None)


class EngineBench:
    """Everything attached to one engine toplevel.

    Parameters
    ----------
    dut
        The cocotb toplevel.
    config : EngineConfig
        The configuration the Verilog was generated from.
    seed : int
        Seeds pause generators, read noise and forced errors.
    pauses : str
        Default pause style of every handshake (:data:`tb.pauses.PAUSE_STYLES`).
    timeout_cycles : int
        An instruction without a result after this many cycles fails the test.
    """

    def __init__(self, dut, config: EngineConfig, *, seed: int = 0, pauses: str = "light",
                 timeout_cycles: int = 20000):
        self.dut = dut
        self.config = config
        self.rng = random.Random(seed)
        self.clock = signal(dut, "clk")
        self.bus = BusMemory(Memory(), config.mem_data_width // 8, self.rng)
        self.timeout_cycles = timeout_cycles
        self._pause_style = pauses
        self._outstanding: deque[tuple[int, Callable[[RtlResult], None]]] = deque()
        self._drained = Event()
        self._drained.set()
        self.issue = self.results = self.memory = self.debug = None
        self._clock_started = False
        #: Told what enters the engine and what leaves it, when set (functional coverage).
        self.overlap: OverlapTracker | None = None
        self._issue_waits = 0
        self._paired_issues = 0
        self._paired_results = 0

    # ------------------------------------------------------------------ set-up
    def set_pauses(self, style: str) -> None:
        """Give every handshake a fresh pause generator of ``style``."""
        if style not in PAUSE_STYLES:
            raise ValueError(f"unknown pause style {style!r}")
        self._pause_style = style
        if self.issue is not None:
            self.issue.source.pauses = pauses_by_name(style, self.rng)
            self.issue.packing.single_rate = 0.0 if style == "none" else SINGLE_ISSUE_RATE
            self.results.sink.pauses = pauses_by_name(style, self.rng)
            self.memory.sink.pauses = pauses_by_name(style, self.rng)
            self.memory.responses.pauses = pauses_by_name(style, self.rng)

    def set_inputs(self, *, smcr_len: int | None = None, sme_enable: bool | None = None,
                   fpcr: int | None = None, za_context: int | None = None) -> None:
        """Drive the control inputs (only while idle).

        Raises
        ------
        ValueError
            For a ZA context the configuration does not have.
        """
        if za_context is not None:
            self._check_za_context(za_context)
            if self.config.za_contexts > 1:
                self.dut.za_context.value = za_context
        if smcr_len is not None:
            self.dut.smcr_len.value = smcr_len
        if sme_enable is not None:
            self.dut.sme_enable.value = int(sme_enable)
        if fpcr is not None:
            self.dut.fpcr.value = fpcr & 0xFFFF_FFFF

    def _check_za_context(self, context: int) -> None:
        if not 0 <= context < self.config.za_contexts:
            raise ValueError(f"ZA context {context} does not exist (the engine has "
                             f"{self.config.za_contexts})")

    async def reset(self, *, smcr_len: int, sme_enable: bool = True, fpcr: int = 0,
                    memory: Memory | None = None) -> None:
        """Reset the engine with the given control inputs and attach ``memory``.

        Returns at a falling clock edge, the phase every agent works in.
        """
        self._prepare_reset()
        self.set_inputs(smcr_len=smcr_len, sme_enable=sme_enable, fpcr=fpcr, za_context=0)
        self.dut.rst.value = 1
        if self.issue is None:
            self._attach_agents()
        await ClockCycles(self.clock, 2, FallingEdge)
        self.dut.rst.value = 0
        await FallingEdge(self.clock)
        self._attach_memory(memory)
        self._check_identity(read_int(signal(self.dut, "id_aa64smfr0")))

    def _prepare_reset(self) -> None:
        """Start the clock (once); refuse to reset with instructions outstanding."""
        if not self._clock_started:
            Clock(self.clock, CLOCK_NS, unit="ns").start()
            self._clock_started = True
        if self._outstanding:
            raise RuntimeError(f"reset with {len(self._outstanding)} instructions outstanding")

    def _attach_agents(self) -> None:
        """The agents on the engine's ports (made at the first reset)."""
        self.issue = IssueDriver(self.dut, self.clock, self.config, rng=self.rng)
        self.results = ResultMonitor(self.dut, self.clock, self.config)
        self.results.callbacks.append(self._route_result)
        self.memory = MemoryResponder(self.dut, self.clock, self.bus)
        self.debug = DebugReader(self.dut, self.clock, self.config.max_svl)
        self.set_pauses(self._pause_style)

    def _attach_memory(self, memory: Memory | None) -> None:
        """Serve ``memory`` (an empty one if None) from now on, with fresh logs."""
        self.bus.memory = memory if memory is not None else Memory()
        self.bus.private = Memory()
        self.bus.take_writes()
        self.bus.take_forced()

    def _check_identity(self, identity: int) -> None:
        if identity != self.config.id_aa64smfr0:
            raise AssertionError(f"ID_AA64SMFR0 reads 0x{identity:016x}, configuration "
                                 f"0x{self.config.id_aa64smfr0:016x}")

    # ------------------------------------------------------------------ instructions
    def _route_result(self, result: RtlResult) -> None:
        if not self._outstanding:
            raise AssertionError(f"result {result.describe()} with no instruction outstanding")
        _, callback = self._outstanding.popleft()
        if not self._outstanding:
            self._drained.set()
        if self.overlap is not None:
            self.overlap.result(result.status, self._cycle())
            if self.memory.most_outstanding >= self.config.mem_outstanding:
                self.overlap.memory_saturated()
                self.memory.most_outstanding = 0
            paired = self.results.received - self.results.sink.transfers
            if paired > self._paired_results:
                self._paired_results = paired
                self.overlap.paired_results()
        callback(result)

    def _cycle(self) -> float:
        return get_sim_time("ns") / CLOCK_NS

    def _accepted(self, word: int) -> None:
        self.overlap.accepted(word, self._cycle())
        if self.issue.source.waits > self._issue_waits:
            self._issue_waits = self.issue.source.waits
            self.overlap.issue_stalled()
        paired = self.issue.issued - self.issue.transfers
        if paired > self._paired_issues:
            self._paired_issues = paired
            self.overlap.paired_issue()

    def issue_nowait(self, word: int, sources: Sequence[int],
                     on_result: Callable[[RtlResult], None]) -> None:
        """Queue one instruction; ``on_result`` gets its result (results come in order)."""
        self._drained.clear()
        self._outstanding.append((word, on_result))
        self.issue.issue_nowait(word, tuple(sources),
                                None if self.overlap is None else lambda: self._accepted(word))

    @property
    def outstanding(self) -> int:
        return len(self._outstanding)

    async def drain(self) -> None:
        """Wait until every issued instruction has its result.

        Raises
        ------
        AssertionError
            Naming the oldest instruction still waiting after ``timeout_cycles``.
        """
        try:
            await with_timeout(self._drained.wait(), self.timeout_cycles * CLOCK_NS, "ns")
        except SimTimeoutError:
            word = self._outstanding[0][0]
            raise AssertionError(
                f"no result for '{disassemble(word)}' (0x{word:08x}) after "
                f"{self.timeout_cycles} cycles; {len(self._outstanding)} outstanding, "
                f"{self.memory.requests} memory requests so far") from None

    async def execute(self, word: int, sources: Sequence[int] = ()) -> RtlResult:
        """Issue one instruction and wait for its result."""
        box: list[RtlResult] = []
        self.issue_nowait(word, sources, box.append)
        await self.drain()
        return box[0]

    # ------------------------------------------------------------------ state
    async def load_state(self, state: ArchState) -> None:
        """Load ``state``'s SVCR, Z, P and ZA through the issue port (see the module notes).

        Raises
        ------
        AssertionError
            If a loading instruction does not execute.
        """
        svl_bytes = state.svl_bytes
        z_bytes, p_bytes = 32 * svl_bytes, 16 * (svl_bytes // 8)
        staging = np.concatenate([state.z.reshape(-1), state.p.reshape(-1),
                                  state.za.reshape(-1)]).astype(np.uint8)
        # whole beats: a bus that reads whole beats (AXI, tb.soc) finds all it reads mapped
        staging = np.concatenate([staging, np.zeros(-staging.size % self.bus.beat_bytes,
                                                    np.uint8)])
        self.bus.private = Memory()          # a fresh staging area for every load
        self.bus.map_private(STAGING_BASE, staging)
        self.bus.private_enabled = True
        rate, self.bus.forced_error_rate = self.bus.forced_error_rate, 0.0
        msr = FORMS_BY_NAME["MSR_SVCR"].encode(rt=0)
        steps = [(msr, (SVCR_SM | (state.svcr & SVCR_ZA),))]
        if state.sm:
            for n in np.flatnonzero(state.z.any(axis=1)).tolist():
                steps.append((FORMS_BY_NAME["LDR_Z"].encode(zt=n, rn=0),
                              (STAGING_BASE + n * svl_bytes,)))
            for n in np.flatnonzero(state.p.any(axis=1)).tolist():
                steps.append((FORMS_BY_NAME["LDR_P"].encode(pt=n, rn=0),
                              (STAGING_BASE + z_bytes + n * (svl_bytes // 8),)))
        if state.za_enabled:
            ldr_za = FORMS_BY_NAME["LDR_ZA"].encode(rv=0, rn=0, off=0)
            for row in np.flatnonzero(state.za.any(axis=1)).tolist():
                address = STAGING_BASE + z_bytes + p_bytes + row * svl_bytes
                steps.append((ldr_za, operand_values(ldr_za, {"rv": row, "rn": address})))
        steps.append((msr, (state.svcr & (SVCR_SM | SVCR_ZA),)))
        for word, sources in steps:
            result = await self.execute(word, sources)
            if result.status != "OK":
                raise AssertionError(f"loading the initial state: '{disassemble(word)}' "
                                     f"returned {result.describe()}")
        self.bus.private_enabled = False
        self.bus.forced_error_rate = rate
        self.bus.take_writes()

    async def wait_idle(self) -> None:
        """Wait (at falling edges) until the engine reports ``idle``: no instruction inside and
        no outer product still to write ZA."""
        idle = signal(self.dut, "idle")
        while not read_int(idle):
            await FallingEdge(self.clock)

    async def snapshot(self, za: bool = True) -> dict:
        """Z, P, FFR (and ZA) through the debug port, plus the ``svcr``/``svl_bytes`` outputs,
        once the engine is idle."""
        await self.wait_idle()
        svl_bytes = read_int(signal(self.dut, "svl_bytes"))
        arrays = await self.debug.snapshot(svl_bytes * 8, za=za)
        arrays["svcr"] = read_int(signal(self.dut, "svcr"))
        arrays["svl_bytes"] = svl_bytes
        return arrays

    async def read_perf(self) -> dict[str, int]:
        """The performance counters (``perf`` output)."""
        return Payload(self.dut, "perf", layout_fields(PerfLayout)).read()


class RtlEngine(Engine):
    """:class:`~zatile.sw.arch.engine.Engine` on the RTL (call only from a :func:`cocotb.task.bridge` thread).

    Parameters
    ----------
    bench : EngineBench
        A reset bench.
    fpsr : int
        FPSR at start (the CPU holds FPSR; the engine only signals ``fpsr_reset``).
    run_ahead : bool
        Whether :meth:`stream` overlaps instructions (:attr:`streams`): a streamed instruction
        is queued for the issue port and the CPU goes on, up to :attr:`window` instructions
        without their results; False makes the CPU wait for every result (lock step).

    Raises
    ------
    RuntimeError
        If ``bench`` is not an :class:`EngineBench`, e.g. when the kernel model constructs the
        engine as ``engine_class(config, bus)`` outside cocotb.
    """

    def __init__(self, bench: EngineBench, fpsr: int = 0, run_ahead: bool = True):
        if not isinstance(bench, EngineBench):
            raise RuntimeError(
                f"RtlEngine runs only inside a cocotb test, on the EngineBench of a running "
                f"simulation (see tests/cocotb_abi.py), not on {type(bench).__name__}; outside "
                f"cocotb use the model (zatile.sw.driver.ModelEngine) or run programs on the RTL "
                f"with zatile.tb.rtl_run.run_rtl")
        super().__init__(bench.config)
        self._bench = bench
        self._fpsr = fpsr
        self._sme_enabled = True
        self._smcr_len = read_int(bench.dut.smcr_len)
        if bench.config.za_contexts > 1:      # the bench may have selected another one
            self._za_context = read_int(bench.dut.za_context)
        self.sm_changes = 0
        self._execute = resume(bench.execute)
        self._set_inputs = resume(self._drive_inputs)
        self._run_ahead = bool(run_ahead)
        #: The most instructions the CPU may have streamed and not seen complete: as many as the
        #: engine itself holds between its issue port and its results (its two queues), so the
        #: CPU stalls, as a core does when the engine's issue queue is full, only when the
        #: engine has no room.
        self.window = 2 * bench.config.queue_depth
        self._stream_when_room = resume(self._queue_when_room)
        self._drain = resume(bench.drain)
        self._stream_failures: list[str] = []
        self._now = resume(self._simulated_cycles)

    @staticmethod
    async def _simulated_cycles() -> int:
        return int(get_sim_time("ns")) // CLOCK_NS

    async def _drive_inputs(self, **inputs) -> None:
        # Signals are written from the scheduler's thread, never from the bridge thread, and
        # only while the engine is idle (an outer product may still be writing ZA); the next
        # falling edge sees them applied, so the outputs read afterwards (``svcr`` of a newly
        # selected ZA context) are the new ones.
        await self._bench.wait_idle()
        self._bench.set_inputs(**inputs)
        await FallingEdge(self._bench.clock)

    @property
    def streams(self) -> bool:
        return self._run_ahead

    def stream(self, word: int, operands: Sequence[int] = ()) -> None:
        if not self._run_ahead:
            super().stream(word, operands)
            return
        self._stream_when_room(word, tuple(operands))

    async def _queue_when_room(self, word: int, operands: tuple[int, ...]) -> None:
        bench = self._bench
        waited = 0
        while bench.outstanding >= self.window:
            await FallingEdge(bench.clock)
            waited += 1
            if waited > bench.timeout_cycles:
                raise AssertionError(f"the engine took no instruction for {waited} cycles with "
                                     f"{bench.outstanding} outstanding")
        bench.issue_nowait(word, operands, lambda rtl: self._streamed_result(word, rtl))

    def _streamed_result(self, word: int, rtl: RtlResult) -> None:
        result = to_model_result(word, rtl)
        if result.status is Status.OK:
            self._streamed_fpsr |= result.fpsr_flags or 0
        else:
            self._stream_failures.append(f"'{disassemble(word)}' (0x{word:08x}) ended "
                                         f"{rtl.describe()}")

    def drain(self) -> int:
        if self._bench.outstanding:
            self._drain()
        if self._stream_failures:
            failures, self._stream_failures = self._stream_failures, []
            raise StreamError(f"streamed instructions did not end OK: {'; '.join(failures)}")
        return super().drain()

    def issue(self, word: int, operands: Sequence[int] = ()) -> Result:
        rtl = self._execute(word, tuple(operands))
        if rtl.fpsr_reset:
            self._fpsr = FPSR_RESET_ON_SM_CHANGE
            self.sm_changes += 1
        return to_model_result(word, rtl)

    @property
    def cycles(self) -> int:
        return self._now()

    def _select_za_context(self, context: int) -> None:
        self._set_inputs(za_context=context)

    @property
    def sme_enabled(self) -> bool:
        return self._sme_enabled

    @sme_enabled.setter
    def sme_enabled(self, enabled: bool) -> None:
        self._sme_enabled = bool(enabled)
        self._set_inputs(sme_enable=self._sme_enabled)

    @property
    def smcr_len(self) -> int:
        return self._smcr_len

    @smcr_len.setter
    def smcr_len(self, length: int) -> None:
        self.config.effective_svl_for_len(length)          # validates
        self._smcr_len = length
        self._set_inputs(smcr_len=length)

    @property
    def svl(self) -> int:
        # What the engine's svl_bytes output shows once the smcr_len input has been applied.
        return self.config.effective_svl_for_len(self._smcr_len)

    @property
    def fpcr(self) -> int:
        return read_int(self._bench.dut.fpcr)

    @fpcr.setter
    def fpcr(self, value: int) -> None:
        self._set_inputs(fpcr=value)

    @property
    def fpsr(self) -> int:
        return self._fpsr

    @fpsr.setter
    def fpsr(self, value: int) -> None:
        self._fpsr = value & 0xFFFF_FFFF

    @property
    def svcr(self) -> int:
        return read_int(signal(self._bench.dut, "svcr"))

    def read_memory(self, address: int, length: int) -> bytes:
        return bytes(self._bench.bus.memory.read(address, length))

    def write_memory(self, address: int, data: bytes) -> None:
        self._bench.bus.memory.write(address, data)
