"""The ZA interlock against the tile mapping: the row groups each access touches, and each stall.

The expected row groups are computed from docs/isa.md, "Tile mapping" directly (the rows a slice
or tile owns, modulo 8), not from the component's own table.
"""

from __future__ import annotations

import itertools

import pytest
from amaranth.sim import Simulator

from zatile.hw.za_interlock import ZaInterlock

#: A ZA large enough that every row group is reachable (SVL 2048: 256 rows).
ROWS = 256


def _slice_rows(tile: int, index: int, esize_log2: int, vertical: bool) -> set[int]:
    size = 1 << esize_log2
    dimension = ROWS // size
    if vertical:
        return {tile + row * size for row in range(dimension)}
    return {tile + index * size}


def _groups(rows) -> int:
    mask = 0
    for row in rows:
        mask |= 1 << (row % 8)
    return mask


def _settle(dut, **inputs):
    """Drive ``inputs`` (attribute name to value) combinationally; return every output."""
    outputs = {}

    async def bench(ctx):
        for name, value in inputs.items():
            ctx.set(getattr(dut, name), value)
        for name in ("groups", "slice_hazard", "int_hazard", "fp_hazard", "busy"):
            outputs[name] = ctx.get(getattr(dut, name))

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    return outputs


def _access(**fields):
    return {"zero": 0, "mask": 0, "slice": 0, "vertical": 0, "tile": 0, "index": 0,
            "esize_log2": 0, **fields}


@pytest.mark.parametrize("esize_log2", range(5))
@pytest.mark.parametrize("vertical", [False, True])
def test_slice_groups_follow_the_tile_mapping(esize_log2, vertical):
    dut = ZaInterlock()
    size = 1 << esize_log2
    for tile, index in itertools.product(range(size), (0, 1, 3, 7, ROWS // size - 1)):
        index %= ROWS // size
        got = _settle(dut, access=_access(slice=1, vertical=int(vertical), tile=tile,
                                          index=index, esize_log2=esize_log2))
        assert got["groups"] == _groups(_slice_rows(tile, index, esize_log2, vertical)), \
            (tile, index)


def test_zero_touches_its_mask_and_no_access_touches_nothing():
    dut = ZaInterlock()
    assert _settle(dut, access=_access(zero=1, mask=0b1010_0101))["groups"] == 0b1010_0101
    assert _settle(dut, access=_access(mask=0xFF, tile=3))["groups"] == 0


def test_a_slice_waits_exactly_when_its_rows_are_in_flight():
    dut = ZaInterlock()
    access = _access(slice=1, tile=1, index=2, esize_log2=2)      # za1h.s[2] = row 9: group 1
    assert _settle(dut, access=access, int_busy=0b10)["slice_hazard"] == 1
    assert _settle(dut, access=access, fp_busy=0b10)["slice_hazard"] == 1
    idle_tile = {"double": 1, "tile": 1}                            # group 1: not in flight
    assert _settle(dut, access=access, outer=idle_tile, int_busy=0b1111_1101,
                   fp_busy=0b1111_1101) == {
        "groups": 0b10, "slice_hazard": 0, "int_hazard": 0, "fp_hazard": 0, "busy": 1}


def test_an_outer_product_waits_only_for_the_other_array():
    dut = ZaInterlock()
    s_tile_1 = {"double": 0, "tile": 1}                             # groups 1 and 5
    assert _settle(dut, outer=s_tile_1, fp_busy=0b10_0000)["int_hazard"] == 1
    assert _settle(dut, outer=s_tile_1, int_busy=0b10_0000)["int_hazard"] == 0
    assert _settle(dut, outer=s_tile_1, int_busy=0b10_0000)["fp_hazard"] == 1
    assert _settle(dut, outer=s_tile_1, fp_busy=0b10_0000)["fp_hazard"] == 0
    d_tile_5 = {"double": 1, "tile": 5}                             # group 5 only
    assert _settle(dut, outer=d_tile_5, int_busy=0b10)["fp_hazard"] == 0
    assert _settle(dut, outer=d_tile_5, int_busy=0b10_0000)["fp_hazard"] == 1


def test_busy_means_anything_in_flight():
    dut = ZaInterlock()
    assert _settle(dut)["busy"] == 0
    assert _settle(dut, fp_busy=0x80)["busy"] == 1
    assert _settle(dut, int_busy=0x01)["busy"] == 1
