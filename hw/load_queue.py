"""The load queue: the vector and predicate loads the engine runs beside its execution queue.

docs/architecture.md, "Decoupled execution". A load enters the queue when it is routed (in
program order) with what it needs: its word, its base and index operands, its destination
register, and the execution-queue instruction it must wait for (the youngest older one that
uses its destination, writes its governing predicate or accesses memory, from
:mod:`zatile.hw.register_scoreboard`). Each entry then goes through three steps, in queue order:

``start``
    The entry at the start pointer may start in the load/store unit once the instruction it
    waits for has completed (``x_completed``, the count of completed execution-queue
    instructions, has passed ``wait_index``), and, if it has a governing predicate, once no
    predicate load (LDR P, which may write that predicate) is in flight.
``complete``
    The load/store unit finished the oldest started load: its fault and fault address are kept
    in the entry; the engine writes the destination (``complete_dest``) unless it faulted.
``report``
    The oldest entry, once complete, gives the engine its result and leaves the queue.
"""

from __future__ import annotations

from amaranth import Array, Module, Signal
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from zatile.sw.arch.config import EngineConfig

from zatile.hw._common import ConfigComponent

__all__ = ["index_width", "completed_since", "LoadEntryLayout", "LoadQueue"]


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


def LoadEntryLayout(config: EngineConfig) -> data.StructLayout:
    """What a load brings into the queue."""
    return data.StructLayout({"word": 32, "base": 64, "index": 64, "dest": 5, "predicate": 1,
                              "governed": 1, "wait_valid": 1, "wait_index": index_width(config)})


class LoadQueue(ConfigComponent):
    """Loads in program order, from routing to their results (module documentation).

    Parameters
    ----------
    config : EngineConfig
        ``queue_depth`` entries.

    Attributes
    ----------
    push : Signal(1), in
    entry : View(LoadEntryLayout), in
        A routed load, taken when ``push``; ``full`` must be low.
    full, empty : Signal(1), out
    x_completed : Signal(index_width), in
        Execution-queue instructions completed so far (modulo).
    start_valid : Signal(1), out
        The entry at the start pointer may start; ``start_entry`` is it.
    start : Signal(1), in
        It starts (in the load/store unit) this cycle.
    complete : Signal(1), in
        The oldest started load completes, with ``fault`` and ``fault_address``.
    complete_dest : Signal(5), out
    complete_predicate : Signal(1), out
        Its destination: ``Zdest``, or ``Pdest`` when ``complete_predicate``.
    report_valid : Signal(1), out
        The oldest entry has completed, with ``report_fault`` and ``report_fault_address``.
    report : Signal(1), in
        Its result is taken: it leaves the queue.
    """

    def __init__(self, config: EngineConfig):
        width = index_width(config)
        super().__init__(config, {
            "push": In(1), "entry": In(LoadEntryLayout(config)), "full": Out(1), "empty": Out(1),
            "x_completed": In(width),
            "start_valid": Out(1), "start_entry": Out(LoadEntryLayout(config)), "start": In(1),
            "complete": In(1), "fault": In(1), "fault_address": In(64),
            "complete_dest": Out(5), "complete_predicate": Out(1),
            "report_valid": Out(1), "report_fault": Out(1), "report_fault_address": Out(64),
            "report": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        config = self._config
        depth = config.queue_depth
        layout = LoadEntryLayout(config)
        entries = Array(Signal(layout, name=f"load{n}") for n in range(depth))
        faults = Array(Signal(name=f"load{n}_fault") for n in range(depth))
        fault_addresses = Array(Signal(64, name=f"load{n}_fault_address") for n in range(depth))
        pointer = range(2 * depth)              # one wrap bit beyond the index
        head, started, completed, tail = (Signal(pointer, name=name)
                                          for name in ("head", "started", "completed", "tail"))

        def slot(position):
            return position[:(depth - 1).bit_length()] if depth > 1 else 0

        m.d.comb += [
            self.empty.eq(head == tail),
            self.full.eq((head ^ tail) == depth),
        ]
        with m.If(self.push):
            m.d.sync += [entries[slot(tail)].eq(self.entry), tail.eq(tail + 1)]

        waiting = entries[slot(started)]
        passed = completed_since(m, self.x_completed, waiting.wait_index, index_width(config))
        predicate_loads = Signal(range(depth + 1))     # started and not completed
        m.d.comb += [self.start_entry.eq(waiting),
                     self.start_valid.eq((started != tail) & (~waiting.wait_valid | passed)
                                         & ~(waiting.governed & (predicate_loads != 0)))]
        with m.If(self.start):
            m.d.sync += started.eq(started + 1)

        finishing = entries[slot(completed)]
        m.d.sync += predicate_loads.eq(predicate_loads + (self.start & waiting.predicate)
                                       - (self.complete & finishing.predicate))
        m.d.comb += [self.complete_dest.eq(finishing.dest),
                     self.complete_predicate.eq(finishing.predicate)]
        with m.If(self.complete):
            m.d.sync += [faults[slot(completed)].eq(self.fault),
                         fault_addresses[slot(completed)].eq(self.fault_address),
                         completed.eq(completed + 1)]

        m.d.comb += [self.report_valid.eq(head != completed),
                     self.report_fault.eq(faults[slot(head)]),
                     self.report_fault_address.eq(fault_addresses[slot(head)])]
        with m.If(self.report):
            m.d.sync += head.eq(head + 1)
        return m
