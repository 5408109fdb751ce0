"""FpOuterProductArray at SVL 128 against sim/fp.py, element by element, through a model of ZA.

The testbench plays the engine: it answers the array's accumulator reads from a numpy ZA (rows
of bytes, tiles interleaved as in docs/isa.md, "Tile mapping") and performs each result write in the cycle
it transfers. Every write is compared with the tile the golden model (sim.fp applied in program
order, with predicates, MOPS negation and the +0 of inactive widening halves) holds after that
operation, including which lanes are written. Covered: random FMOPA/FMOPS .S and .D, widening
FMOPA/FMOPS and BFMOPA/BFMOPS with random predicates and FPCR, random gaps and backpressure,
dependent operations on one tile (forwarding), overlapping .S/.D tiles (interlock), the issue
rates this gives, ``busy``, and kinds whose feature is absent.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from zatile.hw.fp.fp_mopa import FpOuterProductArray, FpOuterProductKind
from zatile.hw.fp.format import BF16, FP16, FP32, FP64
from zatile.sim import fp
from zatile.sw.arch.config import EngineConfig
from test_hw_fp_stimulus import operands

SVL = 128
MAXB = SVL // 8
ALL_FP = frozenset({"F32F32", "F64F64", "F16F32", "B16F32"})
ELEMENT_FORMATS = {FpOuterProductKind.FMOPA_S: FP32, FpOuterProductKind.FMOPA_D: FP64,
                   FpOuterProductKind.FMOPA_H_S: FP16, FpOuterProductKind.BFMOPA: BF16}


def tile_rows(kind: FpOuterProductKind, tile: int) -> list[int]:
    """ZA rows of a tile's horizontal slices."""
    if kind == FpOuterProductKind.FMOPA_D:
        return [tile + 8 * i for i in range(MAXB // 8)]
    return [(tile & 3) + 4 * i for i in range(MAXB // 4)]


def predicate_bits(value: int) -> np.ndarray:
    return np.array([(value >> bit) & 1 for bit in range(MAXB)], bool)


def golden_apply(za: np.ndarray, op: dict) -> np.ndarray:
    """Apply one outer product to ``za`` in place (docs/isa.md, "FP rules"); return its lane enables.

    The enables are one bool per 32-bit lane of each tile row, as the array reports them.
    """
    kind, fpcr = op["kind"], op["fpcr"]
    rows = tile_rows(kind, op["tile"])
    pn, pm = predicate_bits(op["pn"]), predicate_bits(op["pm"])
    zn, zm = op["zn"], op["zm"]
    if kind == FpOuterProductKind.FMOPA_D:
        accumulator = np.stack([za[row].view(np.uint64) for row in rows])
        multiplicand = zn.view(np.uint64) ^ np.uint64(op["subtract"] << 63)
        updated = fp.fmla_f64(accumulator, multiplicand[:, None], zm.view(np.uint64)[None, :],
                              fpcr)
        active = pn[::8][:, None] & pm[::8][None, :]
    else:
        accumulator = np.stack([za[row].view(np.uint32) for row in rows])
        if kind == FpOuterProductKind.FMOPA_S:
            multiplicand = zn.view(np.uint32) ^ np.uint32(op["subtract"] << 31)
            updated = fp.fmla_f32(accumulator, multiplicand[:, None],
                                  zm.view(np.uint32)[None, :], fpcr)
            active = pn[::4][:, None] & pm[::4][None, :]
        else:
            halves_n, halves_m = zn.view(np.uint16), zm.view(np.uint16)
            row_active = [pn[2 * k::4] for k in range(2)]
            col_active = [pm[2 * k::4] for k in range(2)]
            row_elements = [np.where(row_active[k], halves_n[k::2] ^ np.uint16(op["subtract"] << 15),
                                     0).astype(np.uint16) for k in range(2)]
            col_elements = [np.where(col_active[k], halves_m[k::2], 0).astype(np.uint16)
                            for k in range(2)]
            arguments = (accumulator, row_elements[0][:, None], row_elements[1][:, None],
                         col_elements[0][None, :], col_elements[1][None, :])
            updated = (fp.fdotadd_f16(*arguments, fpcr) if kind == FpOuterProductKind.FMOPA_H_S
                       else fp.bfdotadd(*arguments))
            active = ((row_active[0][:, None] & col_active[0][None, :])
                      | (row_active[1][:, None] & col_active[1][None, :]))
    updated = np.where(active, updated, accumulator)
    for index, row in enumerate(rows):
        za[row] = updated[index].view(np.uint8)
    lanes = np.zeros((MAXB // 4, MAXB // 4), bool)
    if kind == FpOuterProductKind.FMOPA_D:
        lanes[:len(rows)] = np.repeat(active, 2, axis=1)
    else:
        lanes[:] = active
    return lanes


def random_op(rng: random.Random, nprng: np.random.Generator, kinds, tiles=None) -> dict:
    kind = rng.choice(kinds)
    element_format = ELEMENT_FORMATS[kind]
    count = MAXB * 8 // element_format.width
    vectors = [operands(nprng, element_format, count).astype(
        {16: np.uint16, 32: np.uint32, 64: np.uint64}[element_format.width]).view(np.uint8)
        for _ in range(2)]

    def predicate():
        return rng.choice([(1 << MAXB) - 1, 0, rng.getrandbits(MAXB), rng.getrandbits(MAXB),
                           rng.getrandbits(MAXB) | rng.getrandbits(MAXB)])

    tile_count = 8 if kind == FpOuterProductKind.FMOPA_D else 4
    return {"kind": kind, "subtract": rng.getrandbits(1),
            "tile": rng.choice(tiles) % tile_count if tiles else rng.randrange(tile_count),
            "zn": vectors[0], "zm": vectors[1], "pn": predicate(), "pm": predicate(),
            "fpcr": rng.randrange(4) << 22 | rng.getrandbits(1) << 24 | rng.getrandbits(1) << 19}


def passes(config: EngineConfig, op: dict) -> int:
    """Cycles (and result writes) one operation takes: its tile's rows over ``array_rows``."""
    rows = len(tile_rows(op["kind"], op["tile"]))
    return max(rows // config.array_rows, 1)


def run_array(config: EngineConfig, groups: list[list[dict]], za: np.ndarray, *,
              stall_rng=None):
    """Run groups of operations through an array wired to the ZA model ``za`` (updated in place).

    Each group starts once the previous one has drained; an operation with a ``delay`` is
    offered that many cycles after the previous one is accepted. Returns, per group, the accept
    cycles and the writes as (cycle, result payload fields) (one per pass); and ``busy`` for
    every cycle.
    """
    dut = FpOuterProductArray(config)
    rows_per_pass = config.array_rows
    accepted = [[] for _ in groups]
    writes = [[] for _ in groups]
    busy_trace = []

    async def bench(ctx):
        cycle = 0
        for group, ops in enumerate(groups):
            index = completed = waited = 0
            offering = False
            while completed < sum(passes(config, op) for op in ops):
                if index < len(ops) and waited < ops[index].get("delay", 0):
                    waited += 1
                elif not offering and index < len(ops) and (stall_rng is None
                                                            or stall_rng.random() < 0.8):
                    op = ops[index]
                    offering = True
                    ctx.set(dut.op.payload, {
                        "kind": op["kind"], "subtract": op["subtract"], "tile": op["tile"],
                        "pn": op["pn"], "pm": op["pm"],
                        "fpcr": {"rmode": op["fpcr"] >> 22 & 3, "fz": op["fpcr"] >> 24 & 1,
                                 "fz16": op["fpcr"] >> 19 & 1}})
                    ctx.set(dut.op.payload.zn.as_value(),
                            int.from_bytes(op["zn"].tobytes(), "little"))
                    ctx.set(dut.op.payload.zm.as_value(),
                            int.from_bytes(op["zm"].tobytes(), "little"))
                ctx.set(dut.op.valid, offering)
                ready = stall_rng is None or stall_rng.random() < 0.75
                ctx.set(dut.result.ready, ready)
                # Answer the accumulator read of the pass's rows from the ZA model.
                double, tile = ctx.get(dut.acc.double), ctx.get(dut.acc.tile)
                kind = FpOuterProductKind.FMOPA_D if double else FpOuterProductKind.FMOPA_S
                first = ctx.get(dut.acc.pass_) * rows_per_pass
                rows = np.zeros((rows_per_pass, MAXB), np.uint8)
                for index_in_tile, row in enumerate(tile_rows(kind, tile)):
                    if first <= index_in_tile < first + rows_per_pass:
                        rows[index_in_tile - first] = za[row]
                ctx.set(dut.acc.rows.as_value(), int.from_bytes(rows.tobytes(), "little"))
                busy_trace.append(ctx.get(dut.busy))
                write = None
                if ready and ctx.get(dut.result.valid):
                    write = _whole_tile_write(ctx, dut.result.payload, rows_per_pass)
                    writes[group].append((cycle, write))
                    completed += 1
                if offering and ctx.get(dut.op.ready):
                    accepted[group].append(cycle)
                    index += 1
                    offering = False
                    waited = 0
                await ctx.tick()
                cycle += 1
                if write is not None:
                    kind = (FpOuterProductKind.FMOPA_D if write["double"]
                            else FpOuterProductKind.FMOPA_S)
                    for index_in_tile, row in enumerate(tile_rows(kind, write["tile"])):
                        for lane in np.flatnonzero(write["lanes"][index_in_tile]):
                            za[row, 4 * lane:4 * lane + 4] = \
                                write["rows"][index_in_tile, 4 * lane:4 * lane + 4]
            ctx.set(dut.op.valid, 0)
        busy_trace.append(ctx.get(dut.busy))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return accepted, writes, busy_trace


def _whole_tile_write(ctx, payload, rows_per_pass: int) -> dict:
    """A result (the rows of one pass) as the tile write it is: ``rows`` and ``lanes`` of every
    tile row, the lanes of the rows outside the pass clear."""
    first = ctx.get(payload.pass_) * rows_per_pass
    rows = np.zeros((MAXB // 4, MAXB), np.uint8)
    lanes = np.zeros((MAXB // 4, MAXB // 4), bool)
    for slot in range(rows_per_pass):
        rows[first + slot] = np.frombuffer(
            ctx.get(payload.rows[slot].as_value()).to_bytes(MAXB, "little"), np.uint8)
        lanes[first + slot] = [(ctx.get(payload.lanes[slot]) >> lane) & 1
                               for lane in range(MAXB // 4)]
    return {"double": ctx.get(payload.double), "tile": ctx.get(payload.tile), "rows": rows,
            "lanes": lanes}


def check_writes(ops, writes, initial_za, kinds, config=None):
    """The writes of each operation (one per pass, each on its own rows) together equal the
    golden tile after it, on exactly the golden lanes."""
    golden = initial_za.copy()
    merged = []
    for op in ops:
        parts = writes[:passes(config, op)] if config else writes[:1]
        writes = writes[len(parts):]
        lanes = np.zeros_like(parts[0][1]["lanes"])
        rows = np.zeros_like(parts[0][1]["rows"])
        for _, part in parts:
            assert not (lanes & part["lanes"]).any(), "two passes wrote one lane"
            lanes |= part["lanes"]
            rows[part["lanes"].repeat(4, axis=1)] = part["rows"][part["lanes"].repeat(4, axis=1)]
        merged.append((parts[-1][0], {"lanes": lanes, "rows": rows}))
    assert not writes, f"{len(writes)} writes beyond the operations"
    for op, (cycle, write) in zip(ops, merged):
        expected_lanes = golden_apply(golden, op)
        if op["kind"] not in kinds:
            expected_lanes[:] = False
        assert np.array_equal(write["lanes"], expected_lanes), (op["kind"], cycle)
        rows = tile_rows(op["kind"], op["tile"])
        for index_in_tile, row in enumerate(rows):
            for lane in np.flatnonzero(expected_lanes[index_in_tile]):
                got = write["rows"][index_in_tile, 4 * lane:4 * lane + 4]
                assert np.array_equal(got, golden[row, 4 * lane:4 * lane + 4]), \
                    (op["kind"], op["tile"], row, lane, got, golden[row, 4 * lane:4 * lane + 4])
    return golden


def random_za(seed: int) -> np.ndarray:
    values = operands(np.random.default_rng(seed), FP32, MAXB * MAXB // 4).astype(np.uint32)
    return np.frombuffer(values.tobytes(), np.uint8).reshape(MAXB, MAXB).copy()


@pytest.mark.parametrize("array_rows", [None, 2, 1])
def test_random_outer_products_with_stalls(array_rows):
    """All four kinds, random tiles (so dependencies and overlaps), predicates, FPCR, stalls;
    with a whole tile per cycle and in passes of two rows and of one."""
    config = EngineConfig(max_svl=SVL, features=ALL_FP, array_rows=array_rows)
    rng, nprng = random.Random(1), np.random.default_rng(1)
    kinds = list(FpOuterProductKind)
    ops = [random_op(rng, nprng, kinds, tiles=[0, 1, 4] if i % 3 else None) for i in range(120)]
    za = random_za(1)
    initial = za.copy()
    _, (writes,), _ = run_array(config, [ops], za, stall_rng=random.Random(2))
    golden = check_writes(ops, writes, initial, set(kinds), config)
    assert np.array_equal(za, golden)


def chain(kind: FpOuterProductKind, tiles: list[int], seed: int) -> list[dict]:
    rng, nprng = random.Random(seed), np.random.default_rng(seed)
    return [dict(random_op(rng, nprng, [kind]), tile=tile) for tile in tiles]


def test_issue_rates():
    """Independent tiles: 1/cycle. Same tile: 1 per latency. Overlapping .S/.D: latency + 1."""
    config = EngineConfig(max_svl=SVL, features=frozenset({"F32F32", "F64F64"}))
    latency = FpOuterProductArray.latency
    mixed = []
    for index, op in enumerate(chain(FpOuterProductKind.FMOPA_S, [1] * 3, 4)):
        mixed += [op, chain(FpOuterProductKind.FMOPA_D, [5], 10 + index)[0]]
    scenarios = [
        (chain(FpOuterProductKind.FMOPA_S, [0, 1, 2, 3] * 4, 1), 1),
        (chain(FpOuterProductKind.FMOPA_S, [2] * 6, 2), latency),
        (chain(FpOuterProductKind.FMOPA_D, [5] * 4, 3), latency),
        (mixed, latency + 1),  # za1.s holds the rows of za5.d
    ]
    za = random_za(5)
    initial = za.copy()
    groups = [ops for ops, _ in scenarios]
    accepted, writes, _ = run_array(config, groups, za)
    for (ops, expected_gap), group_accepted, group_writes in zip(scenarios, accepted, writes):
        assert set(np.diff(group_accepted)) == {expected_gap}, (ops[0]["kind"], group_accepted)
        assert [cycle - start for start, (cycle, _) in zip(group_accepted, group_writes)] == \
            [latency] * len(ops)
    all_ops = [op for ops in groups for op in ops]
    all_writes = [write for group_writes in writes for write in group_writes]
    check_writes(all_ops, all_writes, initial, {FpOuterProductKind.FMOPA_S,
                                                FpOuterProductKind.FMOPA_D})


def test_issue_rates_in_passes_of_one_row():
    """One row per cycle at SVL 128: a .S outer product takes 4 passes and a .D one 2, so
    independent tiles start one every 4 (.S) or 2 (.D) cycles; the same tile one every
    latency = 4 cycles, its first pass taking the result of the previous one's first pass as
    it is written (forwarding), each pass written latency cycles after it starts."""
    config = EngineConfig(max_svl=SVL, features=frozenset({"F32F32", "F64F64"}), array_rows=1)
    latency = FpOuterProductArray.latency
    scenarios = [
        (chain(FpOuterProductKind.FMOPA_S, [0, 1, 2, 3] * 2, 1), 4),
        (chain(FpOuterProductKind.FMOPA_S, [2] * 4, 2), latency),
        (chain(FpOuterProductKind.FMOPA_D, [1, 2, 3, 4], 3), 2),
        (chain(FpOuterProductKind.FMOPA_D, [5] * 4, 4), latency),
    ]
    za = random_za(6)
    initial = za.copy()
    groups = [ops for ops, _ in scenarios]
    accepted, writes, _ = run_array(config, groups, za)
    for (ops, expected_gap), group_accepted, group_writes in zip(scenarios, accepted, writes):
        assert set(np.diff(group_accepted)) == {expected_gap}, (ops[0]["kind"], group_accepted)
        count = passes(config, ops[0])
        starts = [start + part for start in group_accepted for part in range(count)]
        assert [cycle - start for start, (cycle, _) in zip(starts, group_writes)] == \
            [latency] * len(starts)
    check_writes([op for ops in groups for op in ops],
                 [write for group_writes in writes for write in group_writes], initial,
                 {FpOuterProductKind.FMOPA_S, FpOuterProductKind.FMOPA_D}, config)


def test_forwarding_takes_only_the_rows_of_the_same_pass():
    """Two rows per cycle (two passes per .S outer product, fewer than the latency): a second
    outer product into the same tile offered one cycle late starts its first pass while the
    first one's *second* pass is being written; it must read its rows from ZA, not from that
    write (and its second pass then forwards from the first's)."""
    config = EngineConfig(max_svl=SVL, features=frozenset({"F32F32"}), array_rows=2)
    ops = [dict(op, pn=(1 << MAXB) - 1, pm=(1 << MAXB) - 1)
           for op in chain(FpOuterProductKind.FMOPA_S, [1, 1], 7)]
    ops[1]["delay"] = FpOuterProductArray.latency
    za = random_za(8)
    initial = za.copy()
    (accepted,), (writes,), _ = run_array(config, [ops], za)
    assert accepted[1] - accepted[0] == FpOuterProductArray.latency + 1
    check_writes(ops, writes, initial, {FpOuterProductKind.FMOPA_S}, config)


def test_busy_and_absent_kinds():
    """busy marks the ZA rows (mod 8) of in-flight tiles; a kind without its feature writes
    nothing."""
    config = EngineConfig(max_svl=SVL, features=frozenset({"F32F32"}))
    ops = chain(FpOuterProductKind.FMOPA_S, [3], 1) + chain(FpOuterProductKind.FMOPA_D, [6], 2)
    za = np.zeros((MAXB, MAXB), np.uint8)
    (accepted,), (writes,), busy = run_array(config, [ops], za)
    assert busy[accepted[0] + 1] & 0b1000_1000 == 0b1000_1000   # za3.s: rows 3, 7 mod 8
    assert busy[accepted[1] + 1] & 0b0100_0000                    # za6.d: rows 6 mod 8
    assert busy[-1] == 0
    assert not writes[1][1]["lanes"].any()
    assert writes[0][0] == accepted[0] + FpOuterProductArray.latency
    check_writes(ops, writes, np.zeros((MAXB, MAXB), np.uint8), {FpOuterProductKind.FMOPA_S})


def test_arguments_are_checked():
    with pytest.raises(TypeError, match="config must be an EngineConfig, not 128"):
        FpOuterProductArray(128)
    with pytest.raises(ValueError, match=r"no floating-point outer-product feature .*\['I8I32'\]"):
        FpOuterProductArray(EngineConfig(max_svl=SVL, features=frozenset({"I8I32"})))
