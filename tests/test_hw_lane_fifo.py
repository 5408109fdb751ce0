"""The lane FIFO keeps order whatever lanes are written and however many entries are read."""

from __future__ import annotations

import random
from collections import deque

import pytest
from amaranth.sim import Simulator

from zatile.hw.lane_fifo import LaneFifo


#: The clock period of the simulations.
PERIOD = 1e-6


def _run_against_a_deque(width: int, depth: int, lanes: int, cycles: int, seed: int,
                         block_ram: bool = False) -> dict:
    """Random writes (any subset of lanes, while ``w_rdy``) and reads (up to ``level``);
    every cycle the outputs are compared with a deque, after the falling edge (where block RAM
    is read). Returns what was exercised."""
    dut = LaneFifo(width, depth, lanes, block_ram=block_ram)
    rng = random.Random(seed)
    seen = {"full": 0, "sparse_writes": 0, "multi_reads": 0}

    async def bench(ctx):
        model: deque[int] = deque()
        await ctx.tick()                          # from a rising edge
        for cycle in range(cycles):
            await ctx.delay(PERIOD * 3 / 4)
            level = ctx.get(dut.level)
            assert level == len(model), f"cycle {cycle}: level {level}, model {len(model)}"
            assert ctx.get(dut.w_rdy) == (depth - len(model) >= lanes), f"cycle {cycle}"
            for lane in range(min(lanes, len(model))):
                assert ctx.get(dut.r_data[lane]) == model[lane], f"cycle {cycle} lane {lane}"
            mask = rng.randrange(1 << lanes) if ctx.get(dut.w_rdy) else 0
            values = [rng.randrange(1 << width) for _ in range(lanes)]
            reads = rng.randint(0, min(lanes, len(model)))
            ctx.set(dut.w_en, mask)
            for lane, value in enumerate(values):
                ctx.set(dut.w_data[lane], value)
            ctx.set(dut.r_count, reads)
            await ctx.tick()
            for _ in range(reads):
                model.popleft()
            model.extend(value for lane, value in enumerate(values) if mask >> lane & 1)
            seen["full"] += len(model) > depth - lanes
            seen["sparse_writes"] += mask not in (0, (1 << lanes) - 1) and mask & 1 == 0
            seen["multi_reads"] += reads > 1

    sim = Simulator(dut)
    sim.add_clock(PERIOD)
    sim.add_testbench(bench)
    sim.run()
    return seen


@pytest.mark.parametrize("block_ram", [False, True], ids=["lut_ram", "block_ram"])
@pytest.mark.parametrize("width, depth, lanes", [(5, 8, 2), (1, 16, 2), (7, 8, 4), (3, 2, 1), (4, 2, 2)])
def test_entries_leave_in_the_order_they_entered(width, depth, lanes, block_ram):
    seen = _run_against_a_deque(width, depth, lanes, cycles=400, seed=depth * 10 + lanes,
                                block_ram=block_ram)
    assert seen["full"] > 10
    if lanes > 1:
        assert seen["sparse_writes"] > 10 and seen["multi_reads"] > 10


@pytest.mark.parametrize("arguments, message", [
    ((0, 8, 2), "width must be a positive integer, not 0"),
    ((4, 8, 0), "lanes must be a power of two, not 0"),
    ((4, 12, 3), "lanes must be a power of two, not 3"),
    ((4, 6, 2), "not 6"),
    ((4, 1, 2), "of at least 2 lanes, not 1"),
])
def test_rejects_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        LaneFifo(*arguments)


def test_rejects_a_block_ram_choice_that_is_not_a_bool():
    with pytest.raises(ValueError, match="block_ram must be a bool, not 'yes'"):
        LaneFifo(4, 8, 2, block_ram="yes")
