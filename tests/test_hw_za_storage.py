"""hw.za_storage against a numpy ZA: slices of every size and direction, tiles, zeroing."""

import random

import numpy as np
import pytest
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


def _run(config, bench):
    dut = ZaStorage(config)
    sim = Simulator(dut)
    sim.add_clock(1e-6)

    async def testbench(ctx):
        await bench(ctx, dut)

    sim.add_testbench(testbench)
    sim.run()


@pytest.mark.parametrize("max_svl", [128, 256])
def test_random_slice_traffic(max_svl):
    config = EngineConfig(max_svl=max_svl)
    maxb = max_svl // 8
    rng = random.Random(max_svl)
    model = np.zeros((maxb, maxb), np.uint8)

    async def bench(ctx, dut):
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
            got = _to_bytes(ctx.get(dut.slice_read.data.as_value()), maxb)
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
                ctx.set(dut.debug.addr, rng.randrange(maxb))
        for row in range(maxb):
            ctx.set(dut.debug.addr, row)
            assert np.array_equal(_to_bytes(ctx.get(dut.debug.data.as_value()), maxb), model[row])

    _run(config, bench)


@pytest.mark.parametrize("max_svl", [128, 256])
def test_tile_port_and_zeroing(max_svl):
    config = EngineConfig(max_svl=max_svl)
    maxb = max_svl // 8
    lanes = maxb // 4
    rng = random.Random(7)
    model = np.zeros((maxb, maxb), np.uint8)

    async def bench(ctx, dut):
        for _ in range(40):
            double = rng.getrandbits(1)
            esize = 8 if double else 4
            tile = rng.randrange(esize)
            count = maxb // esize
            rows = [np.frombuffer(rng.randbytes(maxb), np.uint8) for _ in range(lanes)]
            lane_enables = [rng.getrandbits(lanes) for _ in range(lanes)]
            ctx.set(dut.tile_write[0].en, 1)
            ctx.set(dut.tile_write[0].double, double)
            ctx.set(dut.tile_write[0].tile, tile)
            for i in range(lanes):
                ctx.set(dut.tile_write[0].rows[i].as_value(), _to_int(rows[i]))
                ctx.set(dut.tile_write[0].lanes[i], lane_enables[i])
            await ctx.tick()
            ctx.set(dut.tile_write[0].en, 0)
            for i in range(count):
                for lane in range(lanes):
                    if lane_enables[i] >> lane & 1:
                        lane_bytes = slice(4 * lane, 4 * lane + 4)
                        model[tile + i * esize, lane_bytes] = rows[i][lane_bytes]
            ctx.set(dut.tile_read[0].double, double)
            ctx.set(dut.tile_read[0].tile, tile)
            for i in range(count):
                got = _to_bytes(ctx.get(dut.tile_read[0].rows[i].as_value()), maxb)
                assert np.array_equal(got, model[tile + i * esize])
            if rng.random() < 0.3:
                mask = rng.getrandbits(8)
                ctx.set(dut.zero_mask, mask)
                await ctx.tick()
                ctx.set(dut.zero_mask, 0)
                for r in range(maxb):
                    if mask >> (r % 8) & 1:
                        model[r] = 0
        for row in range(maxb):
            ctx.set(dut.debug.addr, row)
            assert np.array_equal(_to_bytes(ctx.get(dut.debug.data.as_value()), maxb), model[row])
        ctx.set(dut.zero_all, 1)
        await ctx.tick()
        ctx.set(dut.zero_all, 0)
        for row in range(maxb):
            ctx.set(dut.debug.addr, row)
            assert ctx.get(dut.debug.data.as_value()) == 0

    _run(config, bench)
