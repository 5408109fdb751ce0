"""The performance counters count exactly their events, cycle by cycle, and the MACs of each shape."""

from __future__ import annotations

import pytest
from amaranth.sim import Simulator

from zatile.hw.decoder import Op
from zatile.hw.perf_counters import PERF_COUNTERS, PerfCounters
from zatile.sw.arch.config import EngineConfig

CONFIG = EngineConfig(max_svl=128)
MAXB = 16


def _run(events, op=Op.INT_MOPA, rows=0, columns=0):
    """Apply one event per cycle; return the counters after the last edge."""
    dut = PerfCounters(CONFIG)
    counts = {}

    async def bench(ctx):
        ctx.set(dut.op, op)
        ctx.set(dut.row_predicate, rows)
        ctx.set(dut.column_predicate, columns)
        for event in events:
            ctx.set(dut.event, {"idle": 0, "completed": 0, "retired": 0, "outer_product": 0,
                                "memory": 0, "double": 0, "loads": 0, "load_faults": 0,
                                **event})
            await ctx.tick()
        for name in PERF_COUNTERS:
            counts[name] = ctx.get(getattr(dut.counters, name))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return counts


def test_each_counter_counts_its_event():
    mopa = {"completed": 1, "retired": 1, "outer_product": 1}
    load = {"completed": 1, "retired": 1, "memory": 1}
    other = {"completed": 1, "retired": 1}
    trap = {"completed": 1}
    counts = _run([{"idle": 1}, mopa, load, other, other, trap, {}, {"idle": 1}],
                  rows=0, columns=0)
    assert counts == {"cycles": 8, "busy_cycles": 6, "retired": 4, "retired_mopa": 1,
                      "retired_ldst": 1, "retired_other": 2, "traps": 1, "macs": 0}


def test_loads_of_the_load_queue_count_beside_the_completing_instruction():
    # Two loads leave the load queue (one faulted) in the cycle an outer product completes.
    counts = _run([{"completed": 1, "retired": 1, "outer_product": 1, "loads": 2,
                    "load_faults": 1}, {"loads": 1}, {"loads": 2, "load_faults": 2}])
    assert counts == {"cycles": 3, "busy_cycles": 3, "retired": 3, "retired_mopa": 1,
                      "retired_ldst": 2, "retired_other": 0, "traps": 3, "macs": 0}


def test_a_trapped_outer_product_counts_no_macs():
    counts = _run([{"completed": 1, "outer_product": 1}], rows=0xFFFF, columns=0xFFFF)
    assert (counts["traps"], counts["retired_mopa"], counts["macs"]) == (1, 0, 0)


@pytest.mark.parametrize("op, double, granule, ways", [
    (Op.FMOPA_FP32, 0, 4, 1),
    (Op.FMOPA_FP64, 1, 8, 1),
    (Op.FMOPA_FP16_WIDENING, 0, 4, 2),
    (Op.INT_MOPA, 0, 4, 4),
    (Op.INT_MOPA, 1, 8, 4),
])
def test_macs_are_active_rows_times_active_columns_per_way(op, double, granule, ways):
    step = granule // ways
    active_rows = min(3, MAXB // granule)
    # Rows: the first elements with every way active; columns: element 0 in way 0 only, element 1
    # in every way.
    rows = sum(1 << (granule * e + k * step) for e in range(active_rows) for k in range(ways))
    columns = 1 | sum(1 << (granule + k * step) for k in range(ways))
    counts = _run([{"completed": 1, "retired": 1, "outer_product": 1, "double": double}] * 2,
                  op=op, rows=rows, columns=columns)
    per_instruction = active_rows * 2 + (ways - 1) * active_rows
    assert counts["macs"] == 2 * per_instruction


def test_rejects_a_bad_config():
    with pytest.raises(TypeError, match="config must be an EngineConfig, not 128"):
        PerfCounters(128)
