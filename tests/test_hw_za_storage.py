"""hw.za_storage against a numpy ZA: slices of every size and direction, tiles, zeroing."""

import random

import numpy as np
import pytest
from amaranth import ClockDomain, Module
from amaranth.sim import Simulator

from zatile.hw.za_storage import ZaStorage
from zatile.sw.arch.config import EngineConfig


def _to_int(row: np.ndarray) -> int:
    return int.from_bytes(row.astype(np.uint8).tobytes(), "little")


def _to_bytes(value: int, count: int) -> np.ndarray:
    return np.frombuffer(value.to_bytes(count, "little"), np.uint8).copy()


def _slice_positions(maxb, tile, index, log2, vertical):
    """(row, first byte) of each element of a slice, per docs/isa.md, "Tile mapping"."""
    esize = 1 << log2
    if vertical:
        return [(tile + i * esize, index * esize) for i in range(maxb // esize)]
    return [(tile + index * esize, i * esize) for i in range(maxb // esize)]


async def _read(ctx, clock, value) -> int:
    """``value`` (an output of ``dut``) after the next falling edge, where the banked storage
    reads (``hw/_common.py``, ``falling_edge_reads``): the read ports' inputs must be set by
    then, and no write should be enabled if that edge comes after a rising one."""
    await ctx.negedge(clock)
    return ctx.get(value)


async def _row(ctx, dut, clock, row: int) -> np.ndarray:
    """ZA row ``row`` of the selected context, read as a horizontal byte slice (the engine's
    debug backdoor reads ZA this way)."""
    ctx.set(dut.slice_read.slice, {"tile": 0, "index": row, "esize_log2": 0, "vertical": 0})
    data = dut.slice_read.data.as_value()
    return _to_bytes(await _read(ctx, clock, data), len(data) // 8)


def _run(config, bench, tile_ports=1):
    dut = ZaStorage(config, tile_ports=tile_ports)
    top = Module()
    top.domains.sync = domain = ClockDomain()
    top.submodules.dut = dut
    sim = Simulator(top)
    sim.add_clock(1e-6, domain=domain)

    async def testbench(ctx):
        await bench(ctx, dut, domain.clk)

    sim.add_testbench(testbench)
    sim.run()


@pytest.mark.parametrize("max_svl", [128, 256])
def test_random_slice_traffic(max_svl):
    config = EngineConfig(max_svl=max_svl)
    maxb = max_svl // 8
    rng = random.Random(max_svl)
    model = np.zeros((maxb, maxb), np.uint8)

    async def bench(ctx, dut, clock):
        # Fill every row through horizontal byte slices.
        for row in range(maxb):
            data = np.frombuffer(rng.randbytes(maxb), np.uint8)
            ctx.set(dut.slice_write.en, 1)
            ctx.set(dut.slice_write.slice, {"tile": 0, "index": row, "esize_log2": 0,
                                            "vertical": 0})
            ctx.set(dut.slice_write.data.as_value(), _to_int(data))
            ctx.set(dut.slice_write.elements, (1 << maxb) - 1)
            await ctx.tick()
            model[row] = data
        for _ in range(250):
            log2 = rng.randrange(5)
            esize = 1 << log2
            tile = rng.randrange(esize)
            index = rng.randrange(maxb // esize)
            vertical = rng.getrandbits(1)
            positions = _slice_positions(maxb, tile, index, log2, vertical)
            slice_ = {"tile": tile, "index": index, "esize_log2": log2, "vertical": vertical}
            ctx.set(dut.slice_write.en, 0)
            ctx.set(dut.slice_read.slice, slice_)
            expected = np.concatenate([model[r, c:c + esize] for r, c in positions])
            got = _to_bytes(await _read(ctx, clock, dut.slice_read.data.as_value()), maxb)
            assert np.array_equal(got, expected), (slice_, got, expected)
            if rng.random() < 0.6:
                data = np.frombuffer(rng.randbytes(maxb), np.uint8)
                enables = rng.getrandbits(maxb // esize)
                ctx.set(dut.slice_write.en, 1)
                ctx.set(dut.slice_write.slice, slice_)
                ctx.set(dut.slice_write.data.as_value(), _to_int(data))
                ctx.set(dut.slice_write.elements, enables)
                await ctx.tick()
                ctx.set(dut.slice_write.en, 0)
                for element, (r, c) in enumerate(positions):
                    if enables >> element & 1:
                        model[r, c:c + esize] = data[element * esize:(element + 1) * esize]
        for row in range(maxb):
            assert np.array_equal(await _row(ctx, dut, clock, row), model[row])

    _run(config, bench)


@pytest.mark.parametrize("max_svl, array_rows", [(128, None), (256, None), (128, 1),
                                                 (256, 2)])
def test_tile_port_and_zeroing(max_svl, array_rows):
    """Pass writes and reads of .S and .D tiles (a whole .S tile per pass by default; one or two
    rows per pass), with random lane enables, against the model."""
    config = EngineConfig(max_svl=max_svl, array_rows=array_rows)
    maxb = max_svl // 8
    lanes = maxb // 4
    rows_per_pass = config.array_rows
    rng = random.Random(7 + rows_per_pass)
    model = np.zeros((maxb, maxb), np.uint8)

    async def bench(ctx, dut, clock):
        for _ in range(60):
            double = rng.getrandbits(1)
            esize = 8 if double else 4
            tile = rng.randrange(esize)
            count = maxb // esize
            passes = max(count // rows_per_pass, 1)
            pass_ = rng.randrange(passes)
            tile_rows = [pass_ * rows_per_pass + slot for slot in range(rows_per_pass)]
            rows = [np.frombuffer(rng.randbytes(maxb), np.uint8) for _ in range(rows_per_pass)]
            lane_enables = [rng.getrandbits(lanes) if i < count else 0 for i in tile_rows]
            port = dut.tile_write[0]
            ctx.set(port.en, 1)
            ctx.set(port.double, double)
            ctx.set(port.tile, tile)
            ctx.set(port.pass_, pass_)
            for slot in range(rows_per_pass):
                ctx.set(port.rows[slot].as_value(), _to_int(rows[slot]))
                ctx.set(port.lanes[slot], lane_enables[slot])
            await ctx.tick()
            ctx.set(port.en, 0)
            for slot, i in enumerate(tile_rows):
                for lane in range(lanes):
                    if lane_enables[slot] >> lane & 1:
                        lane_bytes = slice(4 * lane, 4 * lane + 4)
                        model[tile + i * esize, lane_bytes] = rows[slot][lane_bytes]
            read_pass = rng.randrange(passes)
            ctx.set(dut.tile_read[0].double, double)
            ctx.set(dut.tile_read[0].tile, tile)
            ctx.set(dut.tile_read[0].pass_, read_pass)
            for slot in range(rows_per_pass):
                i = read_pass * rows_per_pass + slot
                got = _to_bytes(await _read(ctx, clock, dut.tile_read[0].rows[slot].as_value()),
                                maxb)
                expected = model[tile + i * esize] if i < count else np.zeros(maxb, np.uint8)
                assert np.array_equal(got, expected), (double, tile, read_pass, slot)
            if rng.random() < 0.3:
                mask = rng.getrandbits(8)
                ctx.set(dut.zero_mask, mask)
                await ctx.tick()
                ctx.set(dut.zero_mask, 0)
                for r in range(maxb):
                    if mask >> (r % 8) & 1:
                        model[r] = 0
        for row in range(maxb):
            assert np.array_equal(await _row(ctx, dut, clock, row), model[row])
        ctx.set(dut.zero_all, 1)
        await ctx.tick()
        ctx.set(dut.zero_all, 0)
        for row in range(maxb):
            assert not (await _row(ctx, dut, clock, row)).any()

    _run(config, bench)


def _model_slice(model, maxb, slice_):
    positions = _slice_positions(maxb, slice_["tile"], slice_["index"], slice_["esize_log2"],
                                 slice_["vertical"])
    esize = 1 << slice_["esize_log2"]
    return positions, np.concatenate([model[r, c:c + esize] for r, c in positions])


@pytest.mark.parametrize("max_svl, array_rows, contexts", [(128, 1, 1), (256, 1, 2),
                                                           (128, None, 2)])
def test_every_port_at_once(max_svl, array_rows, contexts):
    """Slice, tile (two ports) and zeroing traffic in the same cycles, over ZA contexts,
    against the model: a tile port's write wins over a later port's and the slice write's on
    the same bytes, zeroing over every write. With one row per pass this is the banked storage
    (its live-value table decides every byte), otherwise the flip-flop rows."""
    config = EngineConfig(max_svl=max_svl, array_rows=array_rows, za_contexts=contexts,
                          features=frozenset({"I8I32", "F32F32"}))
    maxb = max_svl // 8
    lanes = maxb // 4
    rows_per_pass = config.array_rows
    rng = random.Random(max_svl + contexts)
    model = np.zeros((contexts, maxb, maxb), np.uint8)

    def random_slice():
        log2 = rng.randrange(5)
        esize = 1 << log2
        return {"tile": rng.randrange(esize), "index": rng.randrange(maxb // esize),
                "esize_log2": log2, "vertical": rng.getrandbits(1)}

    def random_pass(ctx, port):
        """Present a random pass of a random .S or .D tile on a tile port: (its element size,
        tile, pass)."""
        double = rng.getrandbits(1)
        esize = 8 if double else 4
        tile, pass_ = rng.randrange(esize), rng.randrange(max(maxb // esize // rows_per_pass, 1))
        ctx.set(port.double, double)
        ctx.set(port.tile, tile)
        ctx.set(port.pass_, pass_)
        return esize, tile, pass_

    async def bench(ctx, dut, clock):
        for _ in range(400):
            context = rng.randrange(contexts)
            if contexts > 1:
                ctx.set(dut.context, context)
            za = model[context]
            # Reads, all in one cycle: a slice and a pass through each tile port.
            slice_ = random_slice()
            ctx.set(dut.slice_read.slice, slice_)
            passes = [random_pass(ctx, port) for port in dut.tile_read]
            _, expected = _model_slice(za, maxb, slice_)
            got = _to_bytes(await _read(ctx, clock, dut.slice_read.data.as_value()), maxb)
            assert np.array_equal(got, expected), ("slice read", context, slice_)
            for port, (esize, tile, pass_) in zip(dut.tile_read, passes):
                for slot in range(rows_per_pass):
                    i = pass_ * rows_per_pass + slot
                    expected = (za[tile + i * esize] if i < maxb // esize
                                else np.zeros(maxb, np.uint8))
                    got = _to_bytes(ctx.get(port.rows[slot].as_value()), maxb)
                    assert np.array_equal(got, expected), ("tile read", esize, tile, pass_)
            # Writes, applied to the model in reverse priority order.
            updates = []
            slice_ = random_slice()
            writes_slice = rng.random() < 0.5
            ctx.set(dut.slice_write.en, writes_slice)
            if writes_slice:
                data = np.frombuffer(rng.randbytes(maxb), np.uint8)
                esize = 1 << slice_["esize_log2"]
                enables = rng.getrandbits(maxb // esize)
                ctx.set(dut.slice_write.slice, slice_)
                ctx.set(dut.slice_write.data.as_value(), _to_int(data))
                ctx.set(dut.slice_write.elements, enables)
                positions, _ = _model_slice(za, maxb, slice_)
                for element, (r, c) in enumerate(positions):
                    if enables >> element & 1:
                        updates.append((r, slice(c, c + esize),
                                        data[element * esize:(element + 1) * esize]))
            for port in reversed(dut.tile_write):
                writes_tile = rng.random() < 0.5
                ctx.set(port.en, writes_tile)
                if not writes_tile:
                    continue
                esize, tile, pass_ = random_pass(ctx, port)
                for slot in range(rows_per_pass):
                    i = pass_ * rows_per_pass + slot
                    data = np.frombuffer(rng.randbytes(maxb), np.uint8)
                    enables = rng.getrandbits(lanes) if i < maxb // esize else 0
                    ctx.set(port.rows[slot].as_value(), _to_int(data))
                    ctx.set(port.lanes[slot], enables)
                    for lane in range(lanes):
                        if enables >> lane & 1:
                            lane_bytes = slice(4 * lane, 4 * lane + 4)
                            updates.append((tile + i * esize, lane_bytes, data[lane_bytes]))
            zero_mask = rng.getrandbits(8) if rng.random() < 0.1 else 0
            zero_all, clear = rng.random() < 0.03, rng.random() < 0.02
            ctx.set(dut.zero_mask, zero_mask)
            ctx.set(dut.zero_all, zero_all)
            ctx.set(dut.clear, clear)
            await ctx.tick()
            for r, columns, data in updates:
                za[r, columns] = data
            for r in range(maxb):
                if zero_mask >> (r % 8) & 1 or zero_all:
                    za[r] = 0
            if clear:
                model[:] = 0

    _run(config, bench, tile_ports=2)
