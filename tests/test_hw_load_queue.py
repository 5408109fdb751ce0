"""The load queue: loads start, complete, write and report in order, each step held by its own
wait (docs/architecture.md, "Decoupled execution")."""

from __future__ import annotations

from amaranth.sim import Simulator

from zatile.hw.load_queue import LoadQueue
from zatile.sw.arch.config import EngineConfig

CONFIG = EngineConfig(max_svl=128, queue_depth=4)


def _entry(dest, start_wait=None, write_wait=None, predicate=0, governed=0):
    def wait(index):
        return {"valid": index is not None, "index": index or 0}
    return {"dest": dest, "predicate": predicate, "governed": governed,
            "start_wait": wait(start_wait), "write_wait": wait(write_wait)}


def _simulate(script):
    """Run ``script(ctx, dut)`` (an async function) against a fresh queue."""
    dut = LoadQueue(CONFIG)

    async def bench(ctx):
        await script(ctx, dut)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


async def _push(ctx, dut, *entries):
    ctx.set(dut.push, (1 << len(entries)) - 1)
    for lane, entry in enumerate(entries):
        ctx.set(dut.entries[lane], entry)
    await ctx.tick()
    ctx.set(dut.push, 0)


async def _start(ctx, dut, count: int = 1):
    """Start the next ``count`` loads, one per cycle."""
    ctx.set(dut.start, 1)
    for _ in range(count):
        await ctx.tick()
    ctx.set(dut.start, 0)


def test_a_load_writes_only_once_the_reader_of_its_register_completes():
    async def script(ctx, dut):
        ctx.set(dut.x_completed, 5)
        # Load 0 waits for instruction 5 (not yet completed) to write; load 1 for nothing.
        await _push(ctx, dut, _entry(3, write_wait=5), _entry(4))
        assert ctx.get(dut.start_valid) and ctx.get(dut.start_entry.dest) == 3
        await _start(ctx, dut, 2)               # both start, in order, and complete
        for data in (0xAA, 0xBB):
            ctx.set(dut.complete, 1)
            ctx.set(dut.data, data)
            await ctx.tick()
        ctx.set(dut.complete, 0)
        # The first load holds the second (writes are in order).
        for _ in range(3):
            assert not ctx.get(dut.write) and not ctx.get(dut.report_valid)
            await ctx.tick()
        ctx.set(dut.x_loads_before, 1)
        assert not ctx.get(dut.x_loads_written)
        # Instruction 5 completes this cycle: the load writes in the same cycle.
        ctx.set(dut.x_completing, 1)
        assert ctx.get(dut.write) and ctx.get(dut.write_dest) == 3
        assert ctx.get(dut.write_data) == 0xAA
        await ctx.tick()
        ctx.set(dut.x_completing, 0)
        ctx.set(dut.x_completed, 6)
        assert ctx.get(dut.x_loads_written)
        assert ctx.get(dut.write) and ctx.get(dut.write_data) == 0xBB
        assert ctx.get(dut.report_valid) == 0b01
        await ctx.tick()
        assert not ctx.get(dut.write) and ctx.get(dut.report_valid) == 0b11
        ctx.set(dut.report, 2)
        await ctx.tick()
        ctx.set(dut.report, 0)
        assert ctx.get(dut.report_valid) == 0 and ctx.get(dut.room)

    _simulate(script)


def test_a_load_nothing_holds_writes_from_the_load_store_unit_as_it_completes():
    """The write bypass: the next load to write writes in its completion cycle, with the data
    the load/store unit gives then; a load behind one that has not written waits its turn and
    writes from its buffer."""
    async def script(ctx, dut):
        ctx.set(dut.x_completed, 7)
        await _push(ctx, dut, _entry(2), _entry(5, write_wait=7))
        await _push(ctx, dut, _entry(6))
        await _start(ctx, dut, 3)
        ctx.set(dut.complete, 1)
        ctx.set(dut.data, 0x11)
        assert ctx.get(dut.write) and ctx.get(dut.write_dest) == 2
        assert ctx.get(dut.write_data) == 0x11
        await ctx.tick()
        # The second waits for instruction 7, which completes in this cycle: it writes too.
        ctx.set(dut.data, 0x22)
        ctx.set(dut.x_completing, 1)
        assert ctx.get(dut.write) and ctx.get(dut.write_dest) == 5
        assert ctx.get(dut.write_data) == 0x22
        await ctx.tick()
        ctx.set(dut.x_completing, 0)
        ctx.set(dut.x_completed, 8)
        ctx.set(dut.complete, 0)
        assert not ctx.get(dut.write)        # the third has not completed
        ctx.set(dut.complete, 1)
        ctx.set(dut.data, 0x33)
        assert ctx.get(dut.write) and ctx.get(dut.write_data) == 0x33
        await ctx.tick()
        ctx.set(dut.complete, 0)
        assert not ctx.get(dut.write) and ctx.get(dut.report_valid) == 0b11

    _simulate(script)


def test_a_load_completing_behind_a_held_one_writes_later_from_its_buffer():
    async def script(ctx, dut):
        ctx.set(dut.x_completed, 3)
        await _push(ctx, dut, _entry(1, write_wait=3), _entry(9))
        await _start(ctx, dut, 2)
        ctx.set(dut.complete, 1)
        ctx.set(dut.data, 0x44)
        assert not ctx.get(dut.write)        # held by instruction 3
        await ctx.tick()
        ctx.set(dut.data, 0x55)              # the second completes behind it
        assert not ctx.get(dut.write)
        await ctx.tick()
        ctx.set(dut.complete, 0)
        ctx.set(dut.data, 0x66)              # what the load/store unit shows now is not theirs
        ctx.set(dut.x_completed, 4)
        assert ctx.get(dut.write) and ctx.get(dut.write_dest) == 1
        assert ctx.get(dut.write_data) == 0x44
        await ctx.tick()
        assert ctx.get(dut.write) and ctx.get(dut.write_dest) == 9
        assert ctx.get(dut.write_data) == 0x55

    _simulate(script)


def test_a_load_starts_only_once_the_instruction_it_waits_for_completes():
    async def script(ctx, dut):
        ctx.set(dut.x_completed, 30)
        await _push(ctx, dut, _entry(1, start_wait=31))
        for completed in (30, 31):
            ctx.set(dut.x_completed, completed)
            assert not ctx.get(dut.start_valid), completed
            await ctx.tick()
        ctx.set(dut.x_completed, 0)             # modulo 32: 31 has completed
        assert ctx.get(dut.start_valid)

    _simulate(script)


def test_a_governed_load_waits_until_a_predicate_load_has_written():
    async def script(ctx, dut):
        await _push(ctx, dut, _entry(2, predicate=1), _entry(5, governed=1))
        await _start(ctx, dut)
        assert not ctx.get(dut.start_valid)     # the LDR P has started, not written
        ctx.set(dut.complete, 1)                # and writes as it completes
        assert not ctx.get(dut.start_valid) and ctx.get(dut.write)
        assert ctx.get(dut.write_predicate)
        await ctx.tick()
        ctx.set(dut.complete, 0)
        assert ctx.get(dut.start_valid) and not ctx.get(dut.write)

    _simulate(script)


def test_room_and_report_of_a_faulted_load():
    async def script(ctx, dut):
        await _push(ctx, dut, _entry(0), _entry(1))
        assert ctx.get(dut.room)                # 2 of 4 used: room for a transfer
        await _push(ctx, dut, _entry(2))
        assert not ctx.get(dut.room)
        await _start(ctx, dut)
        ctx.set(dut.complete, 1)
        ctx.set(dut.fault, 1)
        ctx.set(dut.fault_address, 0x1234)
        assert ctx.get(dut.write) and ctx.get(dut.write_fault)
        await ctx.tick()
        ctx.set(dut.complete, 0)
        ctx.set(dut.fault, 0)
        assert not ctx.get(dut.write)
        assert ctx.get(dut.report_valid) == 0b01 and ctx.get(dut.report_fault) & 1
        assert ctx.get(dut.report_fault_address[0]) == 0x1234

    _simulate(script)
