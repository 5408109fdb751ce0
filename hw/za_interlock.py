"""The ZA interlock: which ZA row groups an instruction touches, and whether it must wait.

ZA hazards are tracked per *row group*, the ZA rows congruent modulo 8 (docs/isa.md, "Tile
mapping"): a .D tile ``k`` is group ``k``, a .S tile ``k`` the groups ``k`` and ``k + 4``, a
horizontal slice the group of its one row, a vertical slice every group its tile owns, and
``ZERO`` the groups of its mask. The outer-product arrays report the groups they still have to
write (``busy``); an instruction that touches a group in flight waits for it.

The policy, as outputs:

* ``slice_hazard`` — the instruction's slice or ZERO overlaps an operation in flight in either
  array (slice moves, tile loads and stores, LDR/STR ZA and ZERO wait on it);
* ``int_hazard`` / ``fp_hazard`` — an outer product's tile overlaps an operation of the *other*
  array (the same array keeps its own operations in order);
* ``busy`` — any group in flight: SVCR writes, which may zero ZA, wait until it falls.

A register scoreboard for Z and P (the decoupled engine) sits beside this, not inside it.
"""

from amaranth import Cat, Const, Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from zatile.hw.za_storage import ELEMENT_SIZES, tile_row_groups

__all__ = ["ZaAccessLayout", "OuterTileLayout", "ZaInterlock"]

#: What the instruction being dispatched does to ZA through a slice or ZERO.
ZaAccessLayout = data.StructLayout({
    "zero": 1,          # ZERO {mask}
    "mask": 8,          # its mask of .D tiles, i.e. of row groups
    "slice": 1,         # a tile slice or array vector is read or written
    "vertical": 1,
    "tile": 4,
    "index": 8,         # the slice index, already reduced modulo the tile dimension
    "esize_log2": 3,
})

#: The tile an outer product accumulates into.
OuterTileLayout = data.StructLayout({"double": 1, "tile": 3})

#: Row groups a vertical slice covers, by element size, for tile 0 (shifted by the tile number).
_VERTICAL_GROUPS = {0: 0xFF, 1: 0x55, 2: 0x11, 3: 0x01, 4: 0x01}


class ZaInterlock(wiring.Component):
    """Row-group hazard detection between dispatch and the outer-product arrays (combinational).

    Attributes
    ----------
    access : Signal(ZaAccessLayout), in
        The slice or ZERO access of the instruction being dispatched.
    outer : Signal(OuterTileLayout), in
        The tile of the outer product being dispatched.
    int_busy, fp_busy : Signal(8), in
        Row groups the integer and floating-point arrays still have in flight.
    groups : Signal(8), out
        Row groups ``access`` touches.
    slice_hazard, int_hazard, fp_hazard, busy : Signal(1), out
        See the module documentation.
    """

    access: In(ZaAccessLayout)
    outer: In(OuterTileLayout)
    int_busy: In(8)
    fp_busy: In(8)
    groups: Out(8)
    slice_hazard: Out(1)
    int_hazard: Out(1)
    fp_hazard: Out(1)
    busy: Out(1)

    def elaborate(self, platform):
        m = Module()
        access = self.access
        horizontal_row = Cat(access.tile, Const(0, 4)) + (access.index << access.esize_log2)
        with m.If(access.zero):
            m.d.comb += self.groups.eq(access.mask)
        with m.Elif(access.slice & ~access.vertical):
            m.d.comb += self.groups.eq(Const(1, 8) << horizontal_row[:3])
        with m.Elif(access.slice):
            with m.Switch(access.esize_log2):
                for log2 in ELEMENT_SIZES:
                    with m.Case(log2):
                        tile_bits = min(log2, 3)
                        groups = Const(_VERTICAL_GROUPS[log2], 8)
                        m.d.comb += self.groups.eq(groups << access.tile[:tile_bits]
                                                   if tile_bits else groups)

        in_flight = self.int_busy | self.fp_busy
        outer_groups = tile_row_groups(self.outer.double, self.outer.tile)
        m.d.comb += [
            self.slice_hazard.eq((self.groups & in_flight).any()),
            self.int_hazard.eq((outer_groups & self.fp_busy).any()),
            self.fp_hazard.eq((outer_groups & self.int_busy).any()),
            self.busy.eq(in_flight.any()),
        ]
        return m
