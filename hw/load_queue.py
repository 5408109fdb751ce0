"""The load queue: the vector and predicate loads the engine runs beside its execution queue.

docs/architecture.md, "Decoupled execution". A load enters the queue when it is routed (in
program order) with what it needs: its access as routing decoded it
(:data:`~zatile.hw.lsu.AccessLayout`), its governing predicate register, its base and index
operands, its destination register, and the execution-queue instructions it must wait for
before it starts and before it writes its register (from :mod:`zatile.hw.register_scoreboard`).
Each entry then goes through four steps, in queue order:

``start``
    The entry at the start pointer may start in the load/store unit once the instruction its
    start waits for has completed (``x_completed``, the count of completed execution-queue
    instructions, has passed its number), and, if it has a governing predicate, once no
    predicate load (LDR P, which may write that predicate) has started and not yet written.
``complete``
    The load/store unit finished the oldest started load: its fault, fault address and data
    are kept in the entry (a load buffer of one vector per entry).
``write``
    The oldest completed entry writes its destination register (unless it faulted) once the
    instruction its write waits for (a pending read of the register, or an older write of it)
    completes, at the earliest in that instruction's completion cycle, and at the earliest in
    its own completion cycle (from the load/store unit, when nothing holds it): a register is read at
    dispatch and written at the clock edge, and a load's write beats an older one in the same
    cycle (:mod:`zatile.hw.regfile`). A load therefore never waits for the instruction that
    reads the register it overwrites before it reads memory.
``report``
    The oldest entries, once written, give the engine their results and leave the queue (up to
    ``config.issue_lanes`` a cycle, as many loads as the issue port takes).

Loads are numbered as they are routed (the ``tail`` pointer, modulo twice the depth): an
execution-queue instruction records how many loads were routed before it and may run once
``x_loads_written`` says every one of them has written its register (or faulted).
"""

from __future__ import annotations

from amaranth import Array, Const, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from zatile.sw.arch.config import EngineConfig

from zatile.hw._common import ConfigComponent, max_bytes
from zatile.hw.decoder import FieldsLayout
from zatile.hw.lsu import AccessLayout

__all__ = ["index_width", "completed_since", "load_pointer", "InstructionWaitLayout",
           "LoadEntryLayout", "LoadQueue"]


def index_width(config: EngineConfig) -> int:
    """Bits of an execution-queue instruction index: twice the instructions that can be in
    flight, so that "has completed" is a modular comparison (:func:`completed_since`)."""
    return max(2, (2 * config.queue_depth).bit_length())


def completed_since(m, completed, index, width: int):
    """Whether the execution-queue instruction numbered ``index`` has completed when
    ``completed`` have (both modulo ``2**width``)."""
    distance = Signal(width)
    m.d.comb += distance.eq((completed - index)[:width])
    return (distance != 0) & (distance <= (1 << (width - 1)))


def load_pointer(config: EngineConfig) -> range:
    """The shape of a load number: modulo twice the depth (one wrap bit beyond the place)."""
    return range(2 * config.queue_depth)


def InstructionWaitLayout(config: EngineConfig) -> data.StructLayout:
    """Whether a load waits for an execution-queue instruction, and for which one."""
    return data.StructLayout({"valid": 1, "index": index_width(config)})


def LoadEntryLayout(config: EngineConfig) -> data.StructLayout:
    """What a load brings into the queue: its access and operands, its destination, whether it
    has a governing predicate and which, and its waits
    (:func:`~zatile.hw.register_scoreboard.WaitLayout`)."""
    wait = InstructionWaitLayout(config)
    return data.StructLayout({"access": AccessLayout, "base": 64, "index": 64, "dest": 5,
                              "predicate": 1, "governed": 1, "pg": FieldsLayout["pg"].shape,
                              "start_wait": wait, "write_wait": wait})


class LoadQueue(ConfigComponent):
    """Loads in program order, from routing to their results (module documentation).

    Parameters
    ----------
    config : EngineConfig
        ``queue_depth`` entries.

    Attributes
    ----------
    push : Signal(issue_lanes), in
    entries : Signal(ArrayLayout(LoadEntryLayout, issue_lanes)), in
        The loads routed this cycle: the lanes of ``entries`` that ``push`` marks, which enter
        in lane order. ``room`` must be high.
    room : Signal(1), out
        At least ``issue_lanes`` entries are free.
    tail : Signal(load_pointer), out
        The number the next routed load gets.
    x_loads_before : Signal(load_pointer), in
    x_loads_written : Signal(1), out
        Whether every load numbered below ``x_loads_before`` (and at or after the oldest entry)
        has written its register or faulted.
    x_completed : Signal(index_width), in
        Execution-queue instructions completed so far (modulo).
    x_completing : Signal(1), in
        The execution-queue instruction numbered ``x_completed`` completes this cycle.
    start_valid : Signal(1), out
        The entry at the start pointer may start; ``start_entry`` is it.
    start : Signal(1), in
        It starts (in the load/store unit) this cycle.
    complete : Signal(1), in
        The oldest started load completes, with ``fault``, ``fault_address`` and ``data`` (in
        its destination's format; a predicate in the low bits).
    write : Signal(1), out
        The oldest completed load (or the one completing now, when it is the next) writes its
        destination this cycle: ``write_dest``, a P register when ``write_predicate``, with
        ``write_data``; not when ``write_fault``.
    report_valid : Signal(issue_lanes), out
        Which of the oldest ``issue_lanes`` entries have written, with ``report_fault`` and
        ``report_fault_address`` (lane ``k``: the ``k``-th oldest entry).
    report : Signal(range(issue_lanes + 1)), in
        How many of the oldest entries' results are taken (they leave the queue).
    """

    def __init__(self, config: EngineConfig):
        width = index_width(config)
        pointer = load_pointer(config)
        lanes = config.issue_lanes
        vector = max_bytes(config) * 8
        super().__init__(config, {
            "push": In(lanes), "entries": In(data.ArrayLayout(LoadEntryLayout(config), lanes)),
            "room": Out(1), "tail": Out(pointer),
            "x_loads_before": In(pointer), "x_loads_written": Out(1),
            "x_completed": In(width), "x_completing": In(1),
            "start_valid": Out(1), "start_entry": Out(LoadEntryLayout(config)), "start": In(1),
            "complete": In(1), "fault": In(1), "fault_address": In(64), "data": In(vector),
            "write": Out(1), "write_dest": Out(5), "write_predicate": Out(1),
            "write_fault": Out(1), "write_data": Out(vector),
            "report_valid": Out(lanes), "report_fault": Out(lanes),
            "report_fault_address": Out(data.ArrayLayout(64, lanes)),
            "report": In(range(lanes + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        config = self._config
        depth, lanes = config.queue_depth, config.issue_lanes
        width = index_width(config)
        layout = LoadEntryLayout(config)
        entries = Array(Signal(layout, name=f"load{n}") for n in range(depth))
        faults = Array(Signal(name=f"load{n}_fault") for n in range(depth))
        fault_addresses = Array(Signal(64, name=f"load{n}_fault_address") for n in range(depth))
        buffers = Array(Signal(len(self.data), name=f"load{n}_data") for n in range(depth))
        pointer = load_pointer(config)
        head, written, completed, started, tail = (
            Signal(pointer, name=name)
            for name in ("head", "written", "completed", "started", "tail"))
        bits = len(head)

        def place(position):
            return position[:(depth - 1).bit_length()] if depth > 1 else Const(0, 1)

        def distance(later, earlier):
            return (later - earlier)[:bits]

        m.d.comb += [
            self.room.eq(distance(tail, head) <= depth - lanes),
            self.tail.eq(tail),
            self.x_loads_written.eq(distance(self.x_loads_before, head)
                                    <= distance(written, head)),
        ]
        pushed = Const(0, range(lanes + 1))
        for lane in range(lanes):
            with m.If(self.push[lane]):
                m.d.sync += entries[place(tail + pushed)].eq(self.entries[lane])
            pushed = pushed + self.push[lane]
        m.d.sync += tail.eq(tail + pushed)

        # Entries read into signals: attributes of an Array element would reach the proxy's own
        # (``index`` is one).
        waiting = Signal(layout)
        writing = Signal(layout)
        m.d.comb += [waiting.eq(entries[place(started)]), writing.eq(entries[place(written)])]
        start_passed = completed_since(m, self.x_completed, waiting.start_wait.index, width)
        predicate_loads = Signal(range(depth + 1))     # started and not written
        m.d.comb += [self.start_entry.eq(waiting),
                     self.start_valid.eq((started != tail)
                                         & (~waiting.start_wait.valid | start_passed)
                                         & ~(waiting.governed & (predicate_loads != 0)))]
        with m.If(self.start):
            m.d.sync += started.eq(started + 1)

        with m.If(self.complete):
            m.d.sync += [faults[place(completed)].eq(self.fault),
                         fault_addresses[place(completed)].eq(self.fault_address),
                         buffers[place(completed)].eq(self.data),
                         completed.eq(completed + 1)]

        # The awaited instruction has completed, or completes this cycle.
        write_passed = completed_since(m, (self.x_completed + self.x_completing)[:width],
                                       writing.write_wait.index, width)
        # The load completing now writes at once when it is the next to write: from the
        # load/store unit, not its buffer.
        completing = written == completed
        m.d.comb += [
            self.write.eq(((written != completed) | self.complete)
                          & (~writing.write_wait.valid | write_passed)),
            self.write_dest.eq(writing.dest),
            self.write_predicate.eq(writing.predicate),
            self.write_fault.eq(Mux(completing, self.fault, faults[place(written)])),
            self.write_data.eq(Mux(completing, self.data, buffers[place(written)])),
        ]
        with m.If(self.write):
            m.d.sync += written.eq(written + 1)
        m.d.sync += predicate_loads.eq(predicate_loads + (self.start & waiting.predicate)
                                       - (self.write & writing.predicate))

        for lane in range(lanes):
            m.d.comb += [self.report_valid[lane].eq(distance(written, head) > lane),
                         self.report_fault[lane].eq(faults[place(head + lane)]),
                         self.report_fault_address[lane].eq(fault_addresses[place(head + lane)])]
        m.d.sync += head.eq(head + self.report)
        return m
