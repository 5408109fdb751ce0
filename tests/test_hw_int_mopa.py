"""hw.int_mopa against the reference model's integer outer products and ADDHA/ADDVA.

The array runs in amaranth.sim with a Python ZA behind its tile ports. Every operation is also
executed by :class:`sim.model.ReferenceModel` (as the instruction it stands for) on the same ZA,
Z and P, and the two ZAs must agree after every write-back. Operations are issued back to back,
half of them into the tile the previous one wrote, which the array must handle without
forwarding logic.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from zatile.hw.int_mopa import IntOpKind, IntOuterProductArray
from zatile.sim.model import ReferenceModel
from zatile.sim.state import ArchState
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.isa import FORMS_BY_NAME


def _to_int(row: np.ndarray) -> int:
    return int.from_bytes(row.astype(np.uint8).tobytes(), "little")


def _to_bytes(value: int, count: int) -> np.ndarray:
    return np.frombuffer(value.to_bytes(count, "little"), np.uint8).copy()


def _random_operation(rng: random.Random, config: EngineConfig, previous) -> dict:
    double = rng.random() < 0.5 if config.has("I16I64") and config.has("I8I32") \
        else config.has("I16I64")
    kind = rng.choice([IntOpKind.MOPA, IntOpKind.MOPA, IntOpKind.ADDHA, IntOpKind.ADDVA])
    tiles = 8 if double else 4
    tile = previous["tile"] % tiles if previous and rng.random() < 0.5 else rng.randrange(tiles)
    return {"kind": kind, "double": double, "tile": tile, "zn_unsigned": rng.getrandbits(1),
            "zm_unsigned": rng.getrandbits(1), "subtract": rng.getrandbits(1),
            "zn": rng.randrange(32), "zm": rng.randrange(32), "pn": rng.randrange(8),
            "pm": rng.randrange(8)}


def _instruction(operation: dict) -> int:
    """The instruction word an operation of the array performs."""
    suffix = "D" if operation["double"] else "S"
    if operation["kind"] == IntOpKind.MOPA:
        prefix = {(0, 0): "S", (0, 1): "SU", (1, 0): "US", (1, 1): "U"}[
            (operation["zn_unsigned"], operation["zm_unsigned"])]
        name = f"{prefix}MOP{'S' if operation['subtract'] else 'A'}_{suffix}"
        return FORMS_BY_NAME[name].encode(zada=operation["tile"], zn=operation["zn"],
                                          zm=operation["zm"], pn=operation["pn"],
                                          pm=operation["pm"])
    name = f"ADD{'HA' if operation['kind'] == IntOpKind.ADDHA else 'VA'}_{suffix}"
    return FORMS_BY_NAME[name].encode(zada=operation["tile"], zn=operation["zn"],
                                      pn=operation["pn"], pm=operation["pm"])


def _passes(config: EngineConfig, operation: dict) -> int:
    """Cycles the array takes for an operation: its tile's rows over ``array_rows``."""
    rows = config.max_svl // (64 if operation["double"] else 32)
    return max(rows // config.array_rows, 1)


@pytest.mark.parametrize("max_svl, array_rows", [(128, None), (256, None), (128, 1),
                                                 (256, 2)])
def test_matches_the_model_back_to_back(max_svl, array_rows):
    """Operations offered back to back; with fewer rows per cycle each takes several passes
    (``op.ready`` low until the last), writing a part of the tile in each."""
    config = EngineConfig(max_svl=max_svl, array_rows=array_rows)
    maxb = max_svl // 8
    rng = random.Random(max_svl)
    state = ArchState(svl=max_svl, svcr=3)
    state.z = np.frombuffer(rng.randbytes(32 * maxb), np.uint8).reshape(32, maxb).copy()
    # P0-P3 all true, all false, sparse, random; P4-P7 random.
    state.p = np.frombuffer(rng.randbytes(16 * maxb // 8), np.uint8).reshape(16, -1).copy()
    state.p[0], state.p[1], state.p[2] = 0xFF, 0, 0x55
    state.za = np.frombuffer(rng.randbytes(maxb * maxb), np.uint8).reshape(maxb, maxb).copy()
    model = ReferenceModel(config, state.copy())
    za = state.za.copy()
    operations = []
    previous = None
    for _ in range(60):
        previous = _random_operation(rng, config, previous)
        operations.append(previous)
    dut = IntOuterProductArray(config)
    writes = []

    cycles = sum(_passes(config, operation) for operation in operations) + dut.latency + 1

    async def bench(ctx):
        pending = list(operations)
        for cycle in range(cycles):
            if pending:
                operation = pending[0]
                ctx.set(dut.op.valid, 1)
                payload = dut.op.payload
                for key in ("kind", "double", "tile", "zn_unsigned", "zm_unsigned", "subtract"):
                    ctx.set(getattr(payload, key), operation[key])
                for key in ("zn", "zm"):
                    ctx.set(getattr(payload, key).as_value(), _to_int(state.z[operation[key]]))
                for key in ("pn", "pm"):
                    ctx.set(getattr(payload, key),
                            int.from_bytes(state.p[operation[key]].tobytes(), "little"))
                if ctx.get(dut.op.ready):
                    pending.pop(0)
            else:
                ctx.set(dut.op.valid, 0)
            # The tile ports: serve the read of the pass's rows from the Python ZA, apply the
            # write at the edge (a lane enable beyond the tile is an error).
            double, tile = ctx.get(dut.acc.double), ctx.get(dut.acc.tile)
            esize = 8 if double else 4
            first = ctx.get(dut.acc.pass_) * config.array_rows
            for slot in range(config.array_rows):
                i = first + slot
                row = tile + i * esize if i < maxb // esize else None
                ctx.set(dut.acc.rows[slot].as_value(),
                        _to_int(za[row]) if row is not None else 0)
            if ctx.get(dut.write.en):
                assert (ctx.get(dut.write.pass_), ctx.get(dut.write.tile)) == \
                    (first // config.array_rows, tile)
                for slot in range(config.array_rows):
                    i = first + slot
                    data = _to_bytes(ctx.get(dut.write.rows[slot].as_value()), maxb)
                    lanes = ctx.get(dut.write.lanes[slot])
                    assert i < maxb // esize or lanes == 0, (i, lanes)
                    for lane in range(maxb // 4):
                        if lanes >> lane & 1:
                            za[tile + i * esize, 4 * lane:4 * lane + 4] = \
                                data[4 * lane:4 * lane + 4]
                writes.append(za.copy())
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert len(writes) == sum(_passes(config, operation) for operation in operations)
    last_write = -1
    for index, operation in enumerate(operations):
        last_write += _passes(config, operation)
        assert model.execute(_instruction(operation)).status.name == "OK"
        assert np.array_equal(writes[last_write], model.state.za), (index, operation)


def test_absent_element_size_writes_nothing():
    config = EngineConfig(max_svl=128, features=frozenset({"I8I32"}))
    dut = IntOuterProductArray(config)

    async def bench(ctx):
        ctx.set(dut.op.valid, 1)
        payload = dut.op.payload
        ctx.set(payload.kind, IntOpKind.ADDHA)
        ctx.set(payload.double, 1)
        ctx.set(payload.tile, 3)
        ctx.set(payload.pn, (1 << 16) - 1)
        ctx.set(payload.pm, (1 << 16) - 1)
        ctx.set(payload.zn.as_value(), 5)
        await ctx.tick()
        ctx.set(dut.op.valid, 0)
        for _ in range(dut.latency - 1):
            assert ctx.get(dut.write.en) == 0 and ctx.get(dut.busy) == 0b0000_1000
            await ctx.tick()
        assert ctx.get(dut.write.en) == 1
        assert all(ctx.get(dut.write.lanes[i]) == 0 for i in range(4))
        assert ctx.get(dut.busy) == 0b0000_1000
        await ctx.tick()
        assert ctx.get(dut.write.en) == 0 and ctx.get(dut.busy) == 0

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def test_rejects_a_non_config():
    with pytest.raises(TypeError, match="not 128"):
        IntOuterProductArray(128)
