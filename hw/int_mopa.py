"""The integer outer-product array: SMOPA/UMOPA/SUMOPA/USMOPA (and MOPS), ADDHA and ADDVA.

One operation updates a whole .S or .D tile (docs/isa.md, "Integer outer products"):

* 4-way outer products, 8-bit → 32-bit (I8I32) and 16-bit → 64-bit (I16I64): element ``(r, c)``
  gains ``Σ_k Zn[4r+k]·Zm[4c+k]`` over the sub-elements ``k`` active in both predicates (minus it
  for MOPS), wrapping modulo 2^32 or 2^64;
* ADDHA/ADDVA: element ``(r, c)`` gains ``Zn[c]`` (ADDHA) or ``Zn[r]`` (ADDVA) when row ``r`` and
  column ``c`` are both active; other elements are unchanged.

Pipeline (one pass per cycle, never stalls)::

    x_  operands registered at acceptance, held for the operation's passes, and the
        multiplier operands: the column sub-elements and the row sub-elements of the current
        pass (selected as the pass is entered; negated for MOPS), inactive ones zero
    p_  the four sub-element products of every element of the pass's rows (the multipliers
        between registers: the clock rate)
    m_  every element's addend (the sum of its four products, or the broadcast Zn element)
        and its enable
    w   read those rows of the tile, add, write them back in the same cycle (``acc`` + ``write``)

A pass computes ``config.array_rows`` rows of the tile (rows ``pass·array_rows`` on): with the
default, a whole tile, one pass, and one operation per cycle; with fewer rows the operation
takes ``passes`` cycles (a .D tile has half the rows: half the passes, at least one) on that
many times fewer multipliers, and ``op.ready`` is low until its last pass.

The accumulator is read in the write-back stage, so operations on one tile simply follow each
other: back-to-back outer products into the same tile run at one pass per cycle with no
forwarding. ``busy`` names the ZA row groups (row mod 8) of the operations in flight, for the
engine's hazard logic; the rows of the last pass are written ``latency + passes - 1`` cycles
after acceptance.
"""

from __future__ import annotations

from amaranth import Array, Cat, Module, Mux, Signal, signed
from amaranth.lib import data, enum, stream
from amaranth.lib.wiring import In, Out

from zatile.sw.arch.config import EngineConfig

from zatile.hw._common import ConfigComponent, max_bytes, row_layout
from zatile.hw.za_storage import (PassShape, TileReadSignature, TileWriteSignature,
                                 tile_row_groups)

__all__ = ["IntOpKind", "IntOpLayout", "IntOuterProductArray"]


class IntOpKind(enum.Enum, shape=2):
    """What an integer-array operation adds to each element."""

    MOPA = 0     # 4-way dot product of Zn and Zm sub-elements (MOPS: subtracted)
    ADDHA = 1    # Zn[column] to every active row
    ADDVA = 2    # Zn[row] to every active column


def IntOpLayout(config: EngineConfig) -> data.StructLayout:
    """One operation of the integer array.

    ``double`` selects a .D tile (16-bit sources, I16I64) over a .S tile (8-bit sources, I8I32).
    ``pn``/``pm`` have one bit per byte as in a P register and must be clear beyond the effective
    SVL.
    """
    maxb = max_bytes(config)
    return data.StructLayout({
        "kind": IntOpKind,
        "double": 1,
        "tile": 3,
        "zn_unsigned": 1,
        "zm_unsigned": 1,
        "subtract": 1,
        "zn": row_layout(config),
        "zm": row_layout(config),
        "pn": maxb,
        "pm": maxb,
    })


def _source(vector, index: int, bits: int, is_unsigned):
    """Sub-element ``index`` of ``bits`` bits of a vector, extended by one bit to signed."""
    value = vector.as_value().word_select(index, bits)
    return Cat(value, Mux(is_unsigned, 0, value[-1])).as_signed()


class IntOuterProductArray(ConfigComponent):
    """Integer outer products and vector-to-tile additions on whole tiles (module documentation).

    Parameters
    ----------
    config : EngineConfig
        ``max_svl`` sizes the tile; I8I32 and I16I64 select which element sizes exist (an
        operation of an absent size writes nothing).

    Attributes
    ----------
    op : In(stream.Signature(IntOpLayout(config)))
        Ready unless an operation's passes continue (always, with one pass per operation).
    acc : Out(TileReadSignature(config))
        Read of the rows of the pass being written back, combinational.
    write : Out(TileWriteSignature(config))
        Those rows updated, written at the end of the cycle they are presented in.
    busy : Signal(8), out
        Bit ``g`` set: an accepted operation will still write ZA rows congruent to ``g`` mod 8.

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    """

    #: Cycles from acceptance to the cycle the first pass's rows are written.
    latency = 3

    def __init__(self, config: EngineConfig):
        super().__init__(config, {
            "op": In(stream.Signature(IntOpLayout(config))),
            "acc": Out(TileReadSignature(config)),
            "write": Out(TileWriteSignature(config)),
            "busy": Out(8),
        })

    def elaborate(self, platform):
        m = Module()
        config = self._config
        maxb = max_bytes(config)
        lanes = maxb // 4
        rows_per_pass = config.array_rows

        # ---- x: the accepted operation, held for its passes
        x_valid = Signal()
        x_op = Signal(IntOpLayout(config))
        x_pass = Signal(PassShape(config))
        x_last = Signal()
        m.d.comb += [
            x_last.eq(x_pass == Mux(x_op.double, max(lanes // 2 // rows_per_pass, 1),
                                    lanes // rows_per_pass) - 1),
            self.op.ready.eq(~x_valid | x_last),
        ]
        with m.If(self.op.ready):
            m.d.sync += [x_valid.eq(self.op.valid), x_pass.eq(0)]
            with m.If(self.op.valid):
                m.d.sync += x_op.eq(self.op.payload)
        with m.Else():
            m.d.sync += x_pass.eq(x_pass + 1)

        # The multiplier operands, registered: the row sub-elements of the pass in x_, selected
        # a cycle ahead from the operation and pass x_ takes next, and the column sub-elements,
        # taken with the operation; each zero when its predicate bit is clear.
        sizes = [size for size, feature in ((False, "I8I32"), (True, "I16I64"))
                 if config.has(feature)]
        source_bits = 16 if True in sizes else 8
        x_rows = Signal(data.ArrayLayout(data.ArrayLayout(signed(source_bits + 2), 4),
                                         rows_per_pass))
        x_columns = Signal(data.ArrayLayout(data.ArrayLayout(signed(source_bits + 1), 4),
                                            lanes))
        next_op = Signal(IntOpLayout(config))
        next_pass = Signal.like(x_pass)
        m.d.comb += [next_op.eq(Mux(self.op.ready, self.op.payload, x_op)),
                     next_pass.eq(Mux(self.op.ready, 0, x_pass + 1))]
        with m.Switch(next_op.double):
            for double in sizes:
                with m.Case(double):
                    self._operands(m, next_op, next_pass, double, x_rows, x_columns)

        # ---- p: the products of every element of the pass's rows (four per element)
        p_valid = Signal()
        p_op = Signal(IntOpLayout(config))
        p_pass = Signal.like(x_pass)
        p_products = Signal(data.ArrayLayout(data.ArrayLayout(data.ArrayLayout(
            signed(2 * source_bits + 3), 4), lanes), rows_per_pass))
        m.d.sync += [p_valid.eq(x_valid), p_op.eq(x_op), p_pass.eq(x_pass)]
        with m.Switch(x_op.double):
            for double in sizes:
                with m.Case(double):
                    self._products(m, double, x_rows, x_columns, p_products)

        # ---- m: one addend and one enable per element of the pass's rows, as 32-bit lanes
        m_valid = Signal()
        m_double = Signal()
        m_tile = Signal(3)
        m_pass = Signal.like(x_pass)
        m_addends = Signal(data.ArrayLayout(data.ArrayLayout(32, lanes), rows_per_pass))
        m_lanes = Signal(data.ArrayLayout(lanes, rows_per_pass))
        m.d.sync += [m_valid.eq(p_valid), m_double.eq(p_op.double), m_tile.eq(p_op.tile),
                     m_pass.eq(p_pass)]
        with m.If(p_valid):
            m.d.sync += m_lanes.eq(0)          # an absent element size writes nothing
            with m.Switch(p_op.double):
                for double in sizes:
                    with m.Case(double):
                        self._addends(m, p_op, p_pass, double, p_products, m_addends, m_lanes)

        # ---- w: read the pass's rows, add, write them back
        m.d.comb += [
            self.acc.double.eq(m_double), self.acc.tile.eq(m_tile), self.acc.pass_.eq(m_pass),
            self.write.en.eq(m_valid), self.write.double.eq(m_double),
            self.write.tile.eq(m_tile), self.write.pass_.eq(m_pass),
        ]
        for slot in range(rows_per_pass):
            accumulator = self.acc.rows[slot].as_value()
            single = Cat((accumulator.word_select(lane, 32) + m_addends[slot][lane])[:32]
                         for lane in range(lanes))
            double = Cat((accumulator.word_select(element, 64)
                          + Cat(m_addends[slot][2 * element],
                                m_addends[slot][2 * element + 1]))[:64]
                         for element in range(lanes // 2))
            m.d.comb += [self.write.rows[slot].eq(Mux(m_double, double, single)),
                         self.write.lanes[slot].eq(m_lanes[slot])]

        m.d.comb += self.busy.eq(Mux(x_valid, tile_row_groups(x_op.double, x_op.tile), 0)
                                 | Mux(p_valid, tile_row_groups(p_op.double, p_op.tile), 0)
                                 | Mux(m_valid, tile_row_groups(m_double, m_tile), 0))
        return m

    def _shape(self, op, pass_, double: bool):
        """For one element size: (esize, element dimension, rows per pass, ``row_active(slot,
        k)``, ``column_active(column, k)``, ``of_pass(slot, value_of_row)``), the row of slot
        ``s`` being tile row ``pass_·array_rows + s``."""
        esize = 8 if double else 4
        dimension = max_bytes(self._config) // esize
        rows_per_pass = min(self._config.array_rows, dimension)
        pn, pm = op.pn, op.pm

        def of_pass(slot, value_of_row):
            """``value_of_row(row)`` for the row of ``slot`` in the current pass."""
            values = [value_of_row(row) for row in range(slot, dimension, rows_per_pass)]
            return values[0] if len(values) == 1 else Array(values)[pass_]

        def row_active(slot, k):         # predicate bit of sub-element 4*row + k (or element)
            return of_pass(slot, lambda row: pn[(4 * row + k) * (esize // 4)])

        def column_active(column, k):
            return pm[(4 * column + k) * (esize // 4)]

        return esize, dimension, rows_per_pass, row_active, column_active, of_pass

    def _operands(self, m, op, pass_, double: bool, rows, columns):
        """Register the multiplier operands of one element size of ``op`` for pass ``pass_``:
        ``rows[slot][k]`` is sub-element ``k`` of the slot's row, negated for MOPS (so that the
        products carry the sign and the sum is all the m_ stage does), ``columns[column][k]``
        sub-element ``k`` of the column; each zero when its predicate bit is clear."""
        esize, dimension, rows_per_pass, row_active, column_active, of_pass = \
            self._shape(op, pass_, double)
        source_bits = 16 if double else 8
        for slot in range(rows_per_pass):
            for k in range(4):
                source = of_pass(slot, lambda row: _source(op.zn, 4 * row + k, source_bits,
                                                            op.zn_unsigned))
                m.d.sync += rows[slot][k].eq(Mux(row_active(slot, k),
                                                 Mux(op.subtract, -source, source), 0))
        for column in range(dimension):
            for k in range(4):
                source = _source(op.zm, 4 * column + k, source_bits, op.zm_unsigned)
                m.d.sync += columns[column][k].eq(Mux(column_active(column, k), source, 0))

    def _products(self, m, double: bool, rows, columns, products):
        """Drive the p-stage products of one element size: the four sub-element products of
        each element of the pass's rows, from the registered operands of :meth:`_operands`."""
        dimension = max_bytes(self._config) // (8 if double else 4)
        source_bits = 16 if double else 8
        for slot in range(min(self._config.array_rows, dimension)):
            for column in range(dimension):
                for k in range(4):
                    m.d.sync += products[slot][column][k].eq(
                        rows[slot][k][:source_bits + 2].as_signed()
                        * columns[column][k][:source_bits + 1].as_signed())

    def _addends(self, m, op, pass_, double: bool, products, addends, enables):
        """Drive the m-stage addends and lane enables of one element size from ``op`` and its
        ``products``."""
        esize, dimension, rows_per_pass, row_active, column_active, of_pass = \
            self._shape(op, pass_, double)
        source_bits = 16 if double else 8
        element_bits = 8 * esize
        vector = op.zn.as_value()
        for slot in range(rows_per_pass):
            row_element = of_pass(slot, lambda row: vector.word_select(row, element_bits))
            for column in range(dimension):
                pairs = [row_active(slot, k) & column_active(column, k) for k in range(4)]
                product = [products[slot][column][k][:2 * source_bits + 3].as_signed()
                           for k in range(4)]
                dot_element = Signal(signed(element_bits), name=f"dot_{esize}_{slot}_{column}")
                m.d.comb += dot_element.eq((product[0] + product[1]) + (product[2] + product[3]))
                broadcast = Mux(op.kind == IntOpKind.ADDHA,
                                vector.word_select(column, element_bits), row_element)
                element_enable = row_active(slot, 0) & column_active(column, 0)
                is_mopa = op.kind == IntOpKind.MOPA
                addend = Mux(is_mopa, dot_element, broadcast)
                enable = Mux(is_mopa, Cat(*pairs).any(), element_enable)
                lane_count = esize // 4
                for part in range(lane_count):
                    lane = column * lane_count + part
                    m.d.sync += [addends[slot][lane].eq(addend.word_select(part, 32)),
                                 enables[slot][lane].eq(enable)]
