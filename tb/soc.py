"""The SoC wrapper under cocotb: the engine's whole-instruction operations through AXI.

:class:`SocBench` is :class:`~zatile.tb.engine.EngineBench` for the ``zatile_soc`` toplevel
(:mod:`zatile.hw.soc.top`): the same operations (reset, control inputs, issue without waiting,
drain, execute, state load, idle, snapshot, performance counters), done the way a host driver
does them, on registers of the AXI4-Lite control port addressed by name
(:data:`zatile.hw.soc.registers.REGISTERS`, :class:`ControlPort`), with memory served on the
AXI4 manager port from the bench's :class:`~zatile.tb.memory.BusMemory` (:class:`BusTarget`).

The host driver
    Control inputs are ``CONTROL`` and ``FPCR`` writes, queued in order with every other write
    (so :meth:`SocBench.set_inputs` stays synchronous). Instructions wait in a software queue;
    a feeder writes the ``ISSUE_SRC*`` registers whose values change and then ``ISSUE_WORD``,
    only while ``FIFO.ISSUE_FREE`` (read after every earlier write was answered) says there is
    room, so the issue FIFO never overflows. While instructions are outstanding a collector
    polls ``RESULT``, reads the scalar and fault registers of a valid one, pops it with
    ``RESULT_POP`` and hands it on in order, as :class:`EngineBench` routes results. The debug
    snapshot writes ``DEBUG_SELECT`` and reads the window; ``STATUS`` gives idle, SVCR and the
    SVL. Every channel of both ports pauses in the bench's style (:func:`tb.pauses.per_cycle`),
    and the handshake rule is checked on every channel the design drives
    (:class:`tb.axi_rules.HandshakeRules`).

What the AXI ports change for a test
    * AXI reads carry no byte enables: a read beat is served whole, so memory must be mapped in
      whole beats (:func:`tb.memory.memory_in_whole_beats`), and the bytes of a beat the engine
      did not enable carry memory, not the noise that catches an LSU using them on the raw port.
    * Forced bus errors are drawn on read beats only: cocotbext-axi's ``AxiSlave`` hands the
      enabled runs of a write beat to its target one at a time, so an error forced on a later
      run could not undo the earlier runs of the same beat, which the engine's port never does.
    * The wrapper keeps the abandon rule (:mod:`zatile.hw.soc.memory_master`): every beat that
      reaches the target starts a run of its own, and ``BusMemory.abandoned`` stays 0.
    * The overlap events of :class:`tb.coverage.OverlapTracker` need the engine's own ports and
      are not observed.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Callable, Iterable, Sequence

import cocotb
from cocotb.task import Task
from cocotb.triggers import ClockCycles, Event, FallingEdge
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiResp, AxiSlave

from zatile.hw.perf_counters import PERF_COUNTERS
from zatile.hw.soc.registers import (DEBUG_WINDOW, REGISTERS_BY_NAME, pack_register,
                                     unpack_register)
from zatile.sim.state import Memory
from zatile.sw.arch.config import EngineConfig
from zatile.tb.axi_rules import MANAGER_CHANNELS, SUBORDINATE_CHANNELS, HandshakeRules
from zatile.tb.debug import snapshot_arrays, snapshot_selections
from zatile.tb.engine import CLOCK_NS, EngineBench
from zatile.tb.issue import SOURCE_SLOTS, RtlResult, pad_sources
from zatile.tb.memory import BusMemory
from zatile.tb.pauses import PAUSE_STYLES, pauses_by_name, per_cycle

__all__ = ["BeatError", "BusTarget", "ControlPort", "SocBench", "channels_of"]

_WORD_MASK = 0xFFFF_FFFF


def channels_of(model) -> list:
    """The five channels of a cocotbext-axi AXI4 or AXI4-Lite model (a master, a slave, an
    ``AxiRam``): AW, W, B, AR, R, to give each a pause generator."""
    writes, reads = model.write_if, model.read_if
    return [writes.aw_channel, writes.w_channel, writes.b_channel, reads.ar_channel,
            reads.r_channel]


def _response_name(response) -> str:
    return "nothing (flushed by a reset)" if response is None else AxiResp(response.resp).name


class BeatError(Exception):
    """Raised by :class:`BusTarget` for a beat that answers an error (``AxiSlave`` answers it
    SLVERR)."""


class BusTarget:
    """The target of a cocotbext-axi ``AxiSlave``: a :class:`BusMemory` in whole beats.

    A read beat is ``bus.access`` of the whole beat; each enabled run of a write beat is an
    access with those byte enables, exempt from forced errors (module notes). Every access
    starts a run of its own (``first``).

    Parameters
    ----------
    bus : BusMemory

    Attributes
    ----------
    requests : int
        Read beats and write runs served.
    """

    def __init__(self, bus: BusMemory):
        self.bus = bus
        self.requests = 0

    async def read(self, address: int, length: int) -> bytes:
        self.requests += 1
        data, error = self.bus.access(address, False, 0, (1 << length) - 1)
        if error:
            raise BeatError(f"read beat 0x{address:x} answers an error")
        return data.to_bytes(length, "little")

    async def write(self, address: int, data: bytes) -> None:
        self.requests += 1
        lane = address % self.bus.beat_bytes
        enables = ((1 << len(data)) - 1) << lane
        _, error = self.bus.access(address - lane, True,
                                   int.from_bytes(data, "little") << 8 * lane, enables,
                                   forceable=False)
        if error:
            raise BeatError(f"write of {len(data)} bytes at 0x{address:x} answers an error")


class ControlPort:
    """The registers of the AXI4-Lite control port, by name, through a cocotbext-axi
    ``AxiLiteMaster``.

    Writes are posted and performed in order; a background task checks each answer and fails
    the test on any but OKAY. Reads raise :class:`AssertionError` on any answer but OKAY.

    Parameters
    ----------
    dut, clock, reset
        The toplevel (``s_axil__*`` ports), its clock and reset.
    """

    def __init__(self, dut, clock, reset):
        self.master = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil_"), clock, reset)
        for interface in (self.master.write_if, self.master.read_if):
            interface.log.setLevel(logging.WARNING)
        self._posted: deque[tuple[str, int, Task]] = deque()
        self._posted_added = Event()
        self._all_answered = Event()
        self._all_answered.set()
        cocotb.start_soon(self._check_answers())

    def post(self, name: str, value: int) -> Task:
        """Queue a write of ``value`` to register ``name``; the task ends with its answer."""
        # tasks start in order, so the master queues the writes in order
        write = cocotb.start_soon(self.master.write(REGISTERS_BY_NAME[name].offset,
                                                    value.to_bytes(4, "little")))
        self._posted.append((name, value, write))
        self._all_answered.clear()
        self._posted_added.set()
        return write

    async def write(self, name: str, value: int) -> None:
        """Write ``value`` to register ``name`` and wait for the answer."""
        await self.post(name, value)

    async def settle(self) -> None:
        """Wait until every write posted so far is answered (and checked)."""
        await self._all_answered.wait()

    async def _check_answers(self) -> None:
        while True:
            if not self._posted:
                self._all_answered.set()
                self._posted_added.clear()
                await self._posted_added.wait()
                continue
            name, value, write = self._posted[0]
            response = await write
            self._posted.popleft()
            if response is None or response.resp != AxiResp.OKAY:
                raise AssertionError(f"writing 0x{value:08x} to {name} was answered "
                                     f"{_response_name(response)}")

    async def read(self, name: str) -> int:
        """The value of register ``name``."""
        return (await self.read_many((name,)))[0]

    async def read_many(self, names: Iterable[str]) -> list[int]:
        """The values of the registers ``names``, read in that order."""
        names = list(names)
        reads = [cocotb.start_soon(self.master.read(REGISTERS_BY_NAME[name].offset, 4))
                 for name in names]
        values = []
        for name, read in zip(names, reads):
            response = await read
            if response is None or response.resp != AxiResp.OKAY:
                raise AssertionError(f"reading {name} was answered {_response_name(response)}")
            values.append(int.from_bytes(response.data, "little"))
        return values

    async def read_bytes(self, offset: int, length: int) -> bytes:
        """``length`` bytes from ``offset`` on (the debug window), word by word."""
        response = await self.master.read(offset, length)
        if response.resp != AxiResp.OKAY:
            raise AssertionError(f"reading {length} bytes at 0x{offset:03x} was answered "
                                 f"{_response_name(response)}")
        return bytes(response.data)


class SocBench(EngineBench):
    """Everything attached to one ``zatile_soc`` toplevel (module notes).

    Parameters
    ----------
    dut
        The cocotb toplevel.
    config : EngineConfig
        The configuration the Verilog was generated from.
    seed : int
        Seeds pause generators and forced errors.
    pauses : str
        Default pause style of every AXI channel (:data:`tb.pauses.PAUSE_STYLES`).
    timeout_cycles : int
        A drain without every result after this many cycles fails the test (every instruction
        costs register accesses here, hence more than the engine bench's default).
    target : callable
        Makes the memory target from the bench's :class:`BusMemory` (a checker test passes
        one that corrupts data).
    """

    def __init__(self, dut, config: EngineConfig, *, seed: int = 0, pauses: str = "light",
                 timeout_cycles: int = 100_000,
                 target: Callable[[BusMemory], BusTarget] = BusTarget):
        super().__init__(dut, config, seed=seed, pauses=pauses, timeout_cycles=timeout_cycles)
        self._make_target = target
        self.control: ControlPort | None = None
        self.axi: AxiSlave | None = None
        self.rules: list[HandshakeRules] = []
        self._control_fields: dict[str, int] = {}
        self._sources_written: dict[str, int] = {}
        self._unsent: deque[tuple[int, tuple[int, ...]]] = deque()
        self._unsent_added = Event()
        self._results_due = Event()

    # ------------------------------------------------------------------ set-up
    def _attach_agents(self) -> None:
        self.control = ControlPort(self.dut, self.clock, self.dut.rst)
        self.memory = self._make_target(self.bus)
        self.axi = AxiSlave(AxiBus.from_prefix(self.dut, "m_axi_"), self.clock, self.dut.rst,
                            target=self.memory)
        # error beats are part of the tests; the slave would warn about each
        for interface in (self.axi.write_if, self.axi.read_if):
            interface.log.setLevel(logging.ERROR)
        self.rules = [HandshakeRules(self.dut, self.clock, "m_axi__", MANAGER_CHANNELS, CLOCK_NS),
                      HandshakeRules(self.dut, self.clock, "s_axil__", SUBORDINATE_CHANNELS,
                                     CLOCK_NS)]
        cocotb.start_soon(self._feed())
        cocotb.start_soon(self._collect())
        self.set_pauses(self._pause_style)

    def set_pauses(self, style: str) -> None:
        """Give every AXI and AXI4-Lite channel a fresh pause generator of ``style``."""
        if style not in PAUSE_STYLES:
            raise ValueError(f"unknown pause style {style!r}")
        self._pause_style = style
        if self.control is None:
            return
        for channel in channels_of(self.control.master) + channels_of(self.axi):
            if style == "none":
                channel.clear_pause_generator()
                channel.pause = False           # the old generator may have left it paused
            else:
                channel.set_pause_generator(per_cycle(pauses_by_name(style, self.rng)))

    def set_inputs(self, *, smcr_len: int | None = None, sme_enable: bool | None = None,
                   fpcr: int | None = None, za_context: int | None = None) -> None:
        """Queue ``CONTROL``/``FPCR`` writes for the given inputs (only while idle).

        Raises
        ------
        ValueError
            For a ZA context the configuration does not have.
        """
        if za_context is not None:
            self._check_za_context(za_context)
        changes = {"SMCR_LEN": smcr_len, "ZA_CONTEXT": za_context,
                   "SME_ENABLE": None if sme_enable is None else int(sme_enable)}
        changes = {name: value for name, value in changes.items() if value is not None}
        if changes:
            self._control_fields.update(changes)
            self.control.post("CONTROL", pack_register("CONTROL", **self._control_fields))
        if fpcr is not None:
            self.control.post("FPCR", fpcr & _WORD_MASK)

    async def reset(self, *, smcr_len: int, sme_enable: bool = True, fpcr: int = 0,
                    memory: Memory | None = None) -> None:
        """Reset the SoC, write the control inputs and attach ``memory``; returns once the
        writes are answered and ID_AA64SMFR0 is checked."""
        self._prepare_reset()
        if self.control is None:
            self._attach_agents()
        await self.control.settle()
        self.dut.rst.value = 1
        await ClockCycles(self.clock, 2, FallingEdge)
        self.dut.rst.value = 0
        await FallingEdge(self.clock)
        self._sources_written.clear()
        self._control_fields = {"IRQ_ENABLE": 0}
        self.set_inputs(smcr_len=smcr_len, sme_enable=sme_enable, fpcr=fpcr, za_context=0)
        self._attach_memory(memory)
        low, high = await self.control.read_many(("SMFR0_LO", "SMFR0_HI"))
        self._check_identity(high << 32 | low)
        await self.control.settle()

    # ------------------------------------------------------------------ instructions
    def issue_nowait(self, word: int, sources: Sequence[int],
                     on_result: Callable[[RtlResult], None]) -> None:
        """Queue one instruction for the issue FIFO; ``on_result`` gets its result."""
        self._drained.clear()
        self._outstanding.append((word, on_result))
        self._unsent.append((word, pad_sources(tuple(sources))))
        self._unsent_added.set()
        self._results_due.set()

    async def _feed(self) -> None:
        """Write queued instructions into the issue FIFO while it has room (module notes)."""
        free = 0
        last_issue = None
        while True:
            if not self._unsent:
                self._unsent_added.clear()
                await self._unsent_added.wait()
                continue
            if not free:
                # every instruction written so far is counted in what FIFO reads
                if last_issue is not None:
                    await last_issue
                free = unpack_register("FIFO", await self.control.read("FIFO"))["ISSUE_FREE"]
                continue
            word, sources = self._unsent.popleft()
            for slot, value in zip(SOURCE_SLOTS, sources):
                for half, part in (("LO", value & _WORD_MASK), ("HI", value >> 32)):
                    name = f"ISSUE_{slot.upper()}_{half}"
                    if self._sources_written.get(name) != part:
                        self.control.post(name, part)
                        self._sources_written[name] = part
            last_issue = self.control.post("ISSUE_WORD", word)
            free -= 1

    async def _collect(self) -> None:
        """Poll ``RESULT`` while instructions are outstanding; pop and route each result."""
        while True:
            if not self._outstanding:
                self._results_due.clear()
                await self._results_due.wait()
                continue
            fields = unpack_register("RESULT", await self.control.read("RESULT"))
            if not fields.pop("VALID"):
                continue
            scalar_low, scalar_high, fault_low, fault_high = await self.control.read_many(
                ("RESULT_SCALAR_LO", "RESULT_SCALAR_HI", "RESULT_FAULT_LO", "RESULT_FAULT_HI"))
            await self.control.write("RESULT_POP", 1)
            payload = {name.lower(): value for name, value in fields.items()}
            payload.update(scalar=scalar_high << 32 | scalar_low,
                           fault_address=fault_high << 32 | fault_low)
            self._route_result(RtlResult.from_payload(payload))

    # ------------------------------------------------------------------ state
    async def _status(self) -> dict[str, int]:
        return unpack_register("STATUS", await self.control.read("STATUS"))

    async def wait_idle(self) -> None:
        """Wait until ``STATUS.IDLE``: nothing in the engine, its memory port or the issue
        FIFO."""
        while not (await self._status())["IDLE"]:
            pass

    async def snapshot(self, za: bool = True) -> dict:
        """Z, P, FFR (and ZA) through the debug window, plus SVCR and the SVL in bytes from
        ``STATUS``, once the engine is idle."""
        await self.wait_idle()
        status = await self._status()
        svl_bytes = status["SVL_BYTES"]
        selections = snapshot_selections(svl_bytes, za)
        raw = []
        for space, index, length in selections:
            await self.control.write("DEBUG_SELECT",
                                     pack_register("DEBUG_SELECT", SPACE=space, INDEX=index))
            raw.append(await self.control.read_bytes(DEBUG_WINDOW, -(-length // 4) * 4))
        arrays = snapshot_arrays(raw, selections)
        arrays["svcr"] = status["SVCR"]
        arrays["svl_bytes"] = svl_bytes
        return arrays

    async def read_perf(self) -> dict[str, int]:
        """The performance counters, each read ``_LO`` then ``_HI`` (the latched pair)."""
        names = [f"PERF_{counter.upper()}_{half}" for counter in PERF_COUNTERS
                 for half in ("LO", "HI")]
        values = await self.control.read_many(names)
        return {counter: values[2 * n + 1] << 32 | values[2 * n]
                for n, counter in enumerate(PERF_COUNTERS)}
