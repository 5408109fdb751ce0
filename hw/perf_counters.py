"""The engine's performance counters: 64-bit event counts since reset.

``cycles`` every cycle; ``busy_cycles`` every cycle the engine is not idle; ``retired`` every
instruction that completed OK, split into ``retired_mopa`` (outer products and ADDHA/ADDVA),
``retired_ldst`` (memory instructions) and ``retired_other``; ``traps`` every instruction that
ended in UNDEF, an SME trap or a fault; ``macs`` the multiply-accumulates of a retired outer
product's active element pairs: for each of its ``ways`` source elements per tile element, active
rows times active columns.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from zatile.sw.arch import isa
from zatile.sw.arch.config import ISSUE_LANES, EngineConfig

from zatile.hw._common import ConfigComponent, max_bytes
from zatile.hw.decoder import Op

__all__ = ["PERF_COUNTERS", "PerfLayout", "PerfEventLayout", "PerfCounters"]

#: Performance counters, in ``perf`` order.
PERF_COUNTERS = ("cycles", "busy_cycles", "retired", "retired_mopa", "retired_ldst",
                 "retired_other", "traps", "macs")
PerfLayout = data.StructLayout({name: 64 for name in PERF_COUNTERS})

#: What happened in a cycle: the engine's state, the execution-queue instruction that completed,
#: if any, and the loads of the load queue whose results were taken.
PerfEventLayout = data.StructLayout({
    "idle": 1,
    "completed": 1,        # an instruction left dispatch (with any status)
    "retired": 1,          # ... and completed OK
    "outer_product": 1,    # it is an outer product or ADDHA/ADDVA
    "memory": 1,           # it is a memory instruction
    "double": 1,           # its tile elements are 64-bit
    "loads": range(ISSUE_LANES + 1),         # loads of the load queue that left it
    "load_faults": range(ISSUE_LANES + 1),   # ... of them with a fault
})

#: (tile element bytes, source elements per tile element) of each outer product, by (op, .D).
_MAC_SHAPES = {(Op[form.op.upper()], form.params["esize"] == 8):
               (form.params["esize"], form.params["ways"])
               for form in isa.FORMS if "ways" in form.params}


def _popcount(bits) -> object:
    total = Const(0, 1)
    for bit in bits:
        total = total + bit
    return total


class PerfCounters(ConfigComponent):
    """Event counters of one engine.

    Parameters
    ----------
    config : EngineConfig
        ``max_svl`` sizes the predicates.

    Attributes
    ----------
    event : Signal(PerfEventLayout), in
    op : Signal(Op), in
        The operation of the completing instruction (for ``macs``).
    row_predicate, column_predicate : Signal(MAXB), in
        Its governing (row) and column predicates, already limited to the SVL.
    counters : Signal(PerfLayout), out
        The counts, updated at each clock edge.

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    """

    def __init__(self, config: EngineConfig):
        maxb = max_bytes(config)
        super().__init__(config, {
            "event": In(PerfEventLayout),
            "op": In(Op),
            "row_predicate": In(maxb),
            "column_predicate": In(maxb),
            "counters": Out(PerfLayout),
        })

    def elaborate(self, platform):
        m = Module()
        event, counters = self.event, self.counters
        retired = event.retired
        loads_retired = Signal.like(event.loads)
        m.d.comb += loads_retired.eq(event.loads - event.load_faults)
        macs = self._mac_count(m)
        m.d.sync += [
            counters.cycles.eq(counters.cycles + 1),
            counters.busy_cycles.eq(counters.busy_cycles + ~event.idle),
            counters.retired.eq(counters.retired + retired + loads_retired),
            counters.retired_mopa.eq(counters.retired_mopa + (retired & event.outer_product)),
            counters.retired_ldst.eq(counters.retired_ldst + (retired & event.memory)
                                     + loads_retired),
            counters.retired_other.eq(counters.retired_other
                                      + (retired & ~event.outer_product & ~event.memory)),
            counters.traps.eq(counters.traps + (event.completed & ~retired)
                              + event.load_faults),
            counters.macs.eq(counters.macs + Mux(retired & event.outer_product, macs, 0)),
        ]
        return m

    def _mac_count(self, m) -> Signal:
        """Multiply-accumulates of an outer product: Σ_k active rows_k × active columns_k."""
        maxb = max_bytes(self._config)
        count = Signal(range((maxb * maxb) // 4 + 1))
        with m.Switch(Cat(self.event.double, self.op)):
            for (mac_op, is_double), (granule, ways) in _MAC_SHAPES.items():
                with m.Case(int(is_double) | mac_op.value << 1):
                    step = granule // ways
                    total = 0
                    for k in range(ways):
                        rows = _popcount(self.row_predicate[granule * e + k * step]
                                         for e in range(maxb // granule))
                        columns = _popcount(self.column_predicate[granule * e + k * step]
                                            for e in range(maxb // granule))
                        total = total + rows * columns
                    m.d.comb += count.eq(total)
        return count
