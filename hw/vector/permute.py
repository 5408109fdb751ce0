"""The vector unit's permutes: element moves, permutes of vectors and predicates, MOVPRFX.

An execution unit of :mod:`zatile.hw.vector` (payloads in :mod:`zatile.hw.vector.common`).
docs/isa.md, "Streaming SVE element moves and permutes", states the semantics; the reference
model (``sim/model/sve_perm.py``) is the oracle of ``tests/test_hw_vector_permute.py``.

Almost every operation is a byte gather: each destination byte is a byte of the table
``A | B``, a byte of ``X`` or zero, where ``A`` is the first vector (``Zdn``/``Zn``/``Vdn``/
``Vn``), ``B`` the second (``Zm``/``Vm``; ``Zn+1`` of a ``pairs`` form) and ``X`` the eight
bytes of a scalar operand (a general register or the ``#imm8`` of CPY; INSR from ``Vm`` takes
its element from ``B``). A predicate permute is the same gather on the predicate bits, one per
byte (``Pn`` in place of bit 0 of ``A``, ``Pm`` of ``B``), at the same element size; the
result's bit of a byte is bit 0 of the gathered byte. A few destination bytes are derived from
the gathered one (the sign fill of SUNPK, the bit reversal of RBIT); INDEX is computed rather
than gathered.

The structure, for area (``synth_ecp5`` maps LUT4s only):

* each of the eight lanes (destination bytes) of a cycle has one multiplexer over the bytes of
  ``A | B``, a tree of 4:1 multiplexers kept as two LUT4 levels (:class:`_FourWayStage`,
  two LUT4s a bit instead of three). ``X`` is not in it: a lane only ever takes byte
  ``within`` of ``X`` (its byte of the element, at most four of the eight), chosen apart;
* the byte a lane takes is computed from its number (a constant) and the chunk's, mostly as
  bit operations rather than sums: an element's start and its byte ``within`` are disjoint
  bits, so ZIP, UZP, TRN, SUNPK, DUP and LAST put the parts together with ORs; REV, REVB/H/W,
  RBIT, MOVPRFX and SEL are ``destination ^ flip`` for a ``flip`` shared by the lanes; the
  SVL (one of ``config.supported_svls``: a constant where only one is supported) is a power of
  two, so the byte of the pair a byte index names is two bit fields of it. EXT, INSR and
  SPLICE move the chunk by a shared amount: per lane, the low three bits and their carry are a
  table of the amount's low three bits, the chunk's bits one of two sums shared by the lanes
  (:func:`_chunk_plus`);
* INDEX adds the step, times the elements of a chunk, to the chunk's first element for the next
  chunk, taking each bit of that product from the element sizes that keep the bit only.

In the FPGA configuration (SVL 128, 64 bits per cycle) the unit takes 3,030 LUT4 and 106 CCU2C
(``synth_ecp5``; 3 MULT18X18D, 243 flip-flops), where one gather over ``A | B | X`` whose byte
indices each lane computed by arithmetic per operation took 4,510 and 377.

The gather runs over eight destination bytes (64 bits) per cycle, so the operands must stay on
the ``op`` stream (valid, payload stable) until ``op.ready``, which is raised with the last
eight bytes of the SVL; the result follows on the next cycle: ``SVL/64`` cycles after the op
is presented, plus one. LASTA/LASTB/CLASTA/CLASTB gather the element into the low bytes of the
first eight and take those as the general-register result (``scalar``).
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib.wiring import In, Out

from zatile.hw._common import CheckedComponent, max_bytes
from zatile.hw.barrel import STAGE_NAME
from zatile.hw.decoder import Op
from zatile.hw.vector.common import (VectorExecutionUnit, chunk_registers, chunk_steps,
                                     element_starts)

__all__ = ["VectorPermuter"]

#: Bytes of the destination produced per cycle.
CHUNK = 8

#: The permutes of predicates (gathered at bit 0 of each byte).
_PREDICATE_OPS = (Op.PERM_REV_PREDICATE, Op.PERM_ZIP_PREDICATE, Op.PERM_UZP_PREDICATE,
                  Op.PERM_TRN_PREDICATE, Op.PERM_UNPACK_PREDICATE)
#: REVB/REVH/REVW/RBIT: log2 of the bytes of the piece whose order is reversed.
_REVERSE_WITHIN = {Op.PERM_REVB: 0, Op.PERM_REVH: 1, Op.PERM_REVW: 2, Op.PERM_RBIT: 0}

#: How a destination byte follows from its gathered byte.
_PLAIN, _SIGN_FILL, _BIT_REVERSE, _SCALAR = 0, 1, 2, 3


def _priority(m: Module, bits: Value, highest: bool, name: str) -> tuple[Value, Value]:
    """The position of the lowest (or ``highest``) set bit of ``bits`` and whether any is
    (the bit isolated as ``x & -x``, its position an OR per position bit)."""
    width = len(bits)
    ordered = Signal(width, name=f"{name}_ordered")
    m.d.comb += ordered.eq(bits[::-1] if highest else bits)
    lowest = Signal(width, name=f"{name}_lowest")
    m.d.comb += lowest.eq(ordered & (-ordered)[:width])
    position = Signal(range(width), name=f"{name}_position")
    places = []
    for k in range(len(position)):
        at = [(width - 1 - i) if highest else i for i in range(width)]
        places.append(Cat(lowest[i] for i in range(width) if at[i] >> k & 1).any())
    m.d.comb += position.eq(Cat(places))
    return position, bits.any()


class _FourWayStage(CheckedComponent):
    """One of the two LUT4 levels of ``groups`` 4:1 multiplexers of ``width``-bit values
    (combinational), a module kept whole by synthesis (named with :data:`STAGE_NAME`).

    A 4:1 multiplexer is three 2:1 multiplexers, three LUT4s a bit; as two levels it is two.
    The first level (``second`` false) makes ``o = select[1] ? select[0] : (select[0] ? i1 :
    i0)`` of each group ``(i0, i1)``; the second (``second`` true) takes those as ``first`` and
    makes ``o = select[1] ? (first ? i3 : i2) : first`` of each group ``(i2, i3)``: input
    ``select`` of the group ``(i0, i1, i2, i3)``. Left to itself, Yosys's LUT mapping merges
    the levels back into three LUT4s a bit (a 32:1 multiplexer of bytes took 215 LUT4 as one
    expression, 168 as these stages).

    Parameters
    ----------
    groups, width : int
    second : bool

    Attributes
    ----------
    select : Signal(2), in
    i : Signal(2 * groups * width), in
        The groups' two inputs of this level, one after the other.
    first : Signal(groups * width), in (second level only)
    o : Signal(groups * width), out

    Raises
    ------
    ValueError
        If ``groups`` or ``width`` is not a positive integer.
    """

    @staticmethod
    def check_arguments(groups: int, width: int, second: bool) -> None:
        for name, value in (("groups", groups), ("width", width)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")

    def __init__(self, groups: int, width: int, second: bool):
        self._width = width
        self._second = second
        ports = {"select": In(2), "i": In(2 * groups * width), "o": Out(groups * width)}
        if second:
            ports["first"] = In(groups * width)
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        width = self._width
        for group in range(len(self.o) // width):
            low, high = (self.i[(2 * group + k) * width:(2 * group + k + 1) * width]
                         for k in range(2))
            if self._second:
                first = self.first[group * width:(group + 1) * width]
                chosen = Cat(Mux(first[b], high[b], low[b]) for b in range(width))
                value = Mux(self.select[1], chosen, first)
            else:
                value = Mux(self.select[1], self.select[0].replicate(width),
                            Mux(self.select[0], high, low))
            m.d.comb += self.o[group * width:(group + 1) * width].eq(value)
        return m


def _select(m: Module, name: str, select: Value, inputs: list) -> Value:
    """Input ``select`` of ``inputs`` (``2^len(select)`` values as wide as each other): a tree
    of 4:1 multiplexers as :class:`_FourWayStage` pairs (submodules ``barrel_stage_<name>_*``
    of ``m``), a 2:1 multiplexer at the top for an odd number of select bits."""
    select = Value.cast(select)
    width = len(inputs[0])
    level = 0
    while len(select) >= 2:
        groups = len(inputs) // 4
        first, second = _FourWayStage(groups, width, False), _FourWayStage(groups, width, True)
        m.submodules[f"{STAGE_NAME}_{name}_{level}_first"] = first
        m.submodules[f"{STAGE_NAME}_{name}_{level}_second"] = second
        m.d.comb += [first.select.eq(select[:2]), second.select.eq(select[:2]),
                     first.i.eq(Cat(Cat(inputs[4 * g:4 * g + 2]) for g in range(groups))),
                     second.i.eq(Cat(Cat(inputs[4 * g + 2:4 * g + 4]) for g in range(groups))),
                     second.first.eq(first.o)]
        inputs = [second.o[g * width:(g + 1) * width] for g in range(groups)]
        select = select[2:]
        level += 1
    if len(select):
        return Mux(select[0], inputs[1], inputs[0])
    return inputs[0]


def _table(values: list, index: Value, width: int = 1) -> Value:
    """Entry ``index`` of a table of constants (``values``, of ``width`` bits): a function of
    ``index`` alone, mapped to LUTs rather than arithmetic."""
    return Cat(Const(int(v), width) for v in values).word_select(index, width)


def _chunk_plus(m: Module, name: str, chunk: Value, offset: Value):
    """Per lane, ``Cat(lane, chunk) + offset`` modulo ``2^len(offset)`` (a byte of this
    cycle's chunk moved by ``offset``): the low three bits and their carry a table of the low
    three bits of ``offset`` per lane, the rest two adders shared by the lanes. Returns a
    function of the lane."""
    high = Signal(len(offset) - 3, name=f"{name}_high")
    high_carry = Signal(len(offset) - 3, name=f"{name}_high_carry")
    m.d.comb += [high.eq(chunk + offset[3:]), high_carry.eq(chunk + offset[3:] + 1)]

    def at(lane: int) -> Value:
        low = _table([lane + v for v in range(CHUNK)], offset[:3], 4)
        return Cat(low[:3], Mux(low[3], high_carry, high))
    return at


class VectorPermuter(VectorExecutionUnit):
    """Element moves, permutes and MOVPRFX (module documentation).

    Parameters
    ----------
    config : EngineConfig
        ``max_svl`` sizes the vectors.

    Attributes
    ----------
    op : In(stream.Signature(VectorOpLayout)), held (valid, payload stable) until ``ready``,
        which comes ``SVL/64`` cycles after ``valid`` at the earliest.
    result : Out(stream.Signature(VectorResultLayout)), one transfer per ``op`` transfer,
        the cycle after it.

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    """

    #: The operations the unit performs.
    OPS = (Op.PERM_INDEX, Op.PERM_DUP_INDEXED, Op.PERM_CPY, Op.PERM_SEL, Op.PERM_INSR,
           Op.PERM_LAST, Op.PERM_CLAST, Op.PERM_EXT, Op.PERM_REV, Op.PERM_ZIP, Op.PERM_UZP,
           Op.PERM_TRN, Op.PERM_TBL, Op.PERM_TBX, Op.PERM_SPLICE, *_REVERSE_WITHIN,
           Op.PERM_UNPACK, Op.PERM_MOVPRFX, *_PREDICATE_OPS)

    def elaborate(self, platform):
        m = Module()
        maxb = max_bytes(self._config)
        chunks = maxb // CHUNK
        payload = self.op.payload
        decoded = payload.decoded
        op, fields, flags, present = decoded.op, decoded.fields, decoded.flags, decoded.present
        esize_log2 = decoded.esize_log2
        svl_mask = payload.svl_mask

        # ---- sequencing: chunk ``x_chunk`` of the destination is made while the op is held
        steps = chunk_steps(m, self, CHUNK)
        x_chunk, step, last = steps.chunk, steps.step, steps.last

        # ---- operand-wide values
        svl_bytes = Signal(range(2 * maxb))      # one of the supported SVLs (the largest else)
        m.d.comb += svl_bytes.eq(maxb)
        with m.Switch(payload.svl_log2):
            for svl in self._config.supported_svls[:-1]:
                with m.Case((svl // 8).bit_length() - 1):
                    m.d.comb += svl_bytes.eq(svl // 8)
        element_bytes = Signal(range(17))
        element_mask = Signal(4)                 # element_bytes - 1
        m.d.comb += [element_bytes.eq(1 << esize_log2), element_mask.eq(element_bytes - 1)]
        starts = Signal(maxb)
        active = Signal(maxb)                    # per byte: its element is active
        with m.Switch(esize_log2):
            for log2 in range(4):
                with m.Case(log2):
                    bits = 1 << log2
                    m.d.comb += [
                        starts.eq(element_starts(log2, maxb)),
                        active.eq(Cat(payload.governing[b & ~(bits - 1)]
                                      for b in range(maxb)))]
        first_active, any_active = _priority(m, payload.governing & starts & svl_mask, False,
                                             "first_active")
        last_active, _ = _priority(m, payload.governing & starts & svl_mask, True, "last_active")

        is_predicate = Signal()
        m.d.comb += is_predicate.eq(Cat(op == o for o in _PREDICATE_OPS).any())
        is_scalar = Signal()                     # LAST/CLAST to a general register
        m.d.comb += is_scalar.eq(present.rd | present.rdn)

        # The table A | B, and X.
        table_b_source = Signal(8 * maxb)         # Zm, or Zn+1 of a pairs form
        m.d.comb += table_b_source.eq(Mux(flags.pairs, Value.cast(payload.third),
                                  Value.cast(payload.second)))
        first_bytes = Value.cast(payload.first)
        table_a = Signal(8 * maxb)
        table_b = Signal(8 * maxb)
        m.d.comb += [
            table_a.eq(Cat(Cat(Mux(is_predicate, payload.pn[k], first_bytes[8 * k]),
                               first_bytes[8 * k + 1:8 * k + 8]) for k in range(maxb))),
            table_b.eq(Cat(Cat(Mux(is_predicate, payload.pm[k], table_b_source[8 * k]),
                               table_b_source[8 * k + 1:8 * k + 8]) for k in range(maxb)))]
        scalar_operand = Signal(64)              # X
        imm8 = fields.imm8.as_signed()
        with m.If(present.imm8):
            m.d.comb += scalar_operand.eq(Mux(fields.sh[0], imm8 << 8, imm8))
        with m.Elif(present.rn):
            m.d.comb += scalar_operand.eq(payload.rn)
        with m.Elif(present.rm):
            m.d.comb += scalar_operand.eq(payload.rm)
        with m.Elif(present.rdn):
            m.d.comb += scalar_operand.eq(payload.rdn)
        table = Signal(16 * maxb)
        m.d.comb += table.eq(Cat(table_a, table_b))

        # The byte position of the element LASTA/LASTB/CLASTA/CLASTB take.
        last_element = Signal(range(maxb))
        kept = Signal()                          # CLAST with no active element
        m.d.comb += kept.eq((op == Op.PERM_CLAST) & ~any_active)
        with m.If(flags.after):
            m.d.comb += last_element.eq(Mux(any_active & (last_active + element_bytes
                                                          < svl_bytes),
                                            last_active + element_bytes, 0))
        with m.Else():
            m.d.comb += last_element.eq(Mux(any_active, last_active,
                                            svl_bytes - element_bytes))
        ext_offset = Signal(8)
        m.d.comb += ext_offset.eq(Cat(fields.imm_lo[:3], fields.imm_hi))
        ext_start = Signal(range(maxb))
        m.d.comb += ext_start.eq(Mux(ext_offset >= svl_bytes, 0, ext_offset))
        dup_start = Signal(8)                    # index * esize
        m.d.comb += dup_start.eq(Cat(Const(0, 4), fields.imm_hi[:2])
                                 + (fields.imm_lo << esize_log2)[:4])
        # CPY, DUP (indexed) and LAST/CLAST take byte ``within`` of the element at
        # ``element_base`` of A, or of B (``element_region``).
        element_base = Signal(range(maxb))
        element_region = Signal()
        with m.Switch(op):
            with m.Case(Op.PERM_DUP_INDEXED):
                m.d.comb += element_base.eq(dup_start)
            with m.Case(Op.PERM_LAST, Op.PERM_CLAST):
                m.d.comb += [element_base.eq(Mux(kept, 0, last_element)),
                             element_region.eq((op == Op.PERM_CLAST) & ~kept)]
        half = Signal(range(maxb))               # the start of the high half (...2/...HI)
        m.d.comb += half.eq(Mux(flags.high, svl_bytes >> 1, 0))
        splice_length = Signal(range(maxb + 1))
        m.d.comb += splice_length.eq(Mux(any_active, last_active + element_bytes - first_active,
                                         0))
        table_limit = Signal(range(2 * maxb))    # TBL: the last byte of the table
        m.d.comb += table_limit.eq(Mux(flags.pairs, svl_bytes << 1, svl_bytes) - 1)
        # EXT, INSR and SPLICE take byte ``destination + shift`` of the pair (SPLICE from the
        # first ``splice_length`` bytes, ``destination + shift_after`` beyond them).
        shift = Signal(range(2 * maxb))          # modulo 2·maxb
        with m.Switch(op):
            with m.Case(Op.PERM_EXT):
                m.d.comb += shift.eq(ext_start)
            with m.Case(Op.PERM_INSR):
                m.d.comb += shift.eq(-element_bytes)
            with m.Case(Op.PERM_SPLICE):
                m.d.comb += shift.eq(first_active)
        shift_after = Signal(range(2 * maxb))
        m.d.comb += shift_after.eq(svl_bytes - splice_length)
        plus = _chunk_plus(m, "shifted", x_chunk, shift)
        plus_after = _chunk_plus(m, "shifted_after", x_chunk, shift_after)
        splice_chunk_below = Signal()            # the chunk lies within the first
        splice_chunk_at = Signal()               # splice_length bytes; they end in the chunk
        m.d.comb += [splice_chunk_below.eq(x_chunk < (splice_length >> 3)),
                     splice_chunk_at.eq(x_chunk == (splice_length >> 3))]
        flip = Signal(range(maxb))               # source = destination ^ flip
        with m.Switch(op):
            with m.Case(Op.PERM_REV, Op.PERM_REV_PREDICATE):     # the elements reversed
                m.d.comb += flip.eq((svl_bytes - 1) & ~Cat(element_mask, Const(0, 16)))
            for reverse_op, log2 in _REVERSE_WITHIN.items():     # pieces of 2^log2 bytes
                with m.Case(reverse_op):
                    m.d.comb += flip.eq(element_mask & ~((1 << log2) - 1))

        # ---- the eight bytes of this cycle
        chunk_indices = Signal(8 * CHUNK)        # TBL/TBX: Zm's bytes at these positions
        m.d.comb += chunk_indices.eq(Value.cast(payload.second).word_select(x_chunk, 64))
        chunk_active = Signal(CHUNK)
        m.d.comb += chunk_active.eq(active.word_select(x_chunk, CHUNK))
        gathered, lane_writes, lane_bits = [], [], []
        for lane in range(CHUNK):
            destination = Signal(range(maxb), name=f"l{lane}_destination")
            m.d.comb += destination.eq(Cat(Const(lane, 3), x_chunk))
            splice_before = Signal(name=f"l{lane}_splice_before")  # destination < length
            m.d.comb += splice_before.eq(splice_chunk_below | splice_chunk_at & _table(
                [lane < length for length in range(CHUNK)], splice_length[:3]))
            # In the first element (of at most eight bytes: LAST/CLAST, INSR).
            first_element = (x_chunk == 0) & _table([lane >> log2 == 0 for log2 in range(4)],
                                                    esize_log2[:2])
            lane_byte, lane_zero, lane_write, lane_mode = self._lane(
                m, lane, destination, decoded, chunk_active[lane], chunk_indices, table_limit,
                element_bytes=element_bytes, element_mask=element_mask, svl_bytes=svl_bytes,
                first_element=first_element,
                kept=kept, element_base=element_base, element_region=element_region,
                dup_beyond=dup_start >= svl_bytes,
                half=half, flip=flip, shifted=Mux(splice_before | (op != Op.PERM_SPLICE),
                                                  plus(lane), plus_after(lane)),
                is_scalar=is_scalar, maxb=maxb)
            raw = Signal(8, name=f"l{lane}_gathered")
            m.d.comb += raw.eq(_select(m, f"permute_l{lane}", lane_byte,
                                       [table[8 * k:8 * k + 8] for k in range(2 * maxb)]))
            scalar_byte = Signal(8, name=f"l{lane}_scalar")   # byte ``within`` of X
            m.d.comb += scalar_byte.eq(
                scalar_operand.word_select(Const(lane, 3) & element_mask[:3], 8))
            value = Signal(8, name=f"l{lane}_value")
            with m.If(lane_zero):
                m.d.comb += value.eq(0)
            with m.Elif(lane_mode == _SCALAR):
                m.d.comb += value.eq(scalar_byte)
            with m.Elif(lane_mode == _SIGN_FILL):
                m.d.comb += value.eq(raw[7].replicate(8))
            with m.Elif(lane_mode == _BIT_REVERSE):
                m.d.comb += value.eq(raw[::-1])
            with m.Else():
                m.d.comb += value.eq(raw)
            gathered.append(value)
            lane_writes.append(lane_write)
            lane_bits.append(value[0])

        # INDEX: base + e·step, the chunk's first element from ``x_index_next``.
        base = Signal(64)
        increment = Signal(64)
        m.d.comb += [base.eq(Mux(present.base_imm, fields.base_imm.as_signed(), payload.rn)),
                     increment.eq(Mux(present.step_imm, fields.step_imm.as_signed(),
                                      payload.rm))]
        x_index_next = Signal(64)
        chunk_base = Signal(64)
        m.d.comb += chunk_base.eq(Mux(x_chunk == 0, base, x_index_next))
        # Element j of the chunk is needed at 64 bits for j = 0, 32 for 1, 16 for 2..3, 8 for
        # the rest (elements of 8 >> log2 bytes).
        widths = [64, 32, 16, 16, 8, 8, 8, 8]
        element_values = [(chunk_base + j * increment)[:width] for j, width in enumerate(widths)]
        index_chunk = Signal(64)
        with m.Switch(esize_log2):
            for log2 in range(4):
                with m.Case(log2):
                    count, bits = CHUNK >> log2, 8 << log2
                    m.d.comb += index_chunk.eq(Cat(element_values[j][:bits]
                                                   for j in range(count)))
        # The next chunk starts (8 >> log2)·step on: of the element's 8 << log2 bits, the
        # only ones kept, bits [lo, hi) come from the sizes from ``smallest`` up.
        chunk_step = Signal(64)
        for lo, hi, smallest in ((0, 8, 0), (8, 16, 1), (16, 32, 2), (32, 64, 3)):
            with m.Switch(esize_log2):
                for log2 in range(smallest, 3):
                    with m.Case(log2):
                        m.d.comb += chunk_step[lo:hi].eq((increment << (3 - log2))[lo:hi])
                with m.Default():
                    m.d.comb += chunk_step[lo:hi].eq(increment[lo:hi])
        with m.If(step):
            m.d.sync += x_index_next.eq(chunk_base + chunk_step)

        chunk_value = Signal(64)
        m.d.comb += chunk_value.eq(Mux(op == Op.PERM_INDEX, index_chunk, Cat(gathered)))

        # ---- the result registers, one chunk at a time
        x_scalar = Signal(64)
        x_svl_mask = Signal(maxb)
        x_writes_predicate = Signal()
        writes_vector = ~is_scalar & ~is_predicate
        x = chunk_registers(m, steps, chunks, x_vector=chunk_value,
                            x_lanes=Mux(writes_vector, Cat(lane_writes), 0),
                            x_predicate=Cat(lane_bits))
        with m.If(step & (x_chunk == 0)):
            m.d.sync += x_scalar.eq(chunk_value)
        with m.If(step & last):
            m.d.sync += [x_svl_mask.eq(svl_mask), x_writes_predicate.eq(is_predicate)]
        out = self.result.payload
        m.d.comb += [
            out.vector.eq(x["x_vector"]),
            out.vector_lanes.eq(x["x_lanes"] & x_svl_mask),
            out.predicate.eq(x["x_predicate"]),
            out.predicate_lanes.eq(Mux(x_writes_predicate, x_svl_mask, 0)),
            out.scalar.eq(x_scalar),
            out.nzcv.eq(0),
        ]
        return m

    @staticmethod
    def _lane(m: Module, lane: int, destination, decoded, active, chunk_indices, table_limit,
              *, element_bytes, element_mask, svl_bytes, first_element, kept, element_base,
              element_region, dup_beyond, half, flip, shifted, is_scalar, maxb):
        """The byte of ``A | B`` that destination byte ``destination`` (one of the eight of
        this cycle, ``lane``) takes, whether it is zero instead, whether it is written and its
        :data:`_PLAIN`/:data:`_SIGN_FILL`/:data:`_BIT_REVERSE`/:data:`_SCALAR` mode."""
        op, flags, present = decoded.op, decoded.flags, decoded.present
        esize_log2 = decoded.esize_log2

        def name(what):
            return f"l{lane}_{what}"

        source = Signal(range(2 * maxb), name=name("source"))
        zero = Signal(name=name("zero"))
        write = Signal(name=name("write"))
        mode = Signal(2, name=name("mode"))
        within = Signal(4, name=name("within"))        # byte of the element
        start = Signal(range(maxb), name=name("start"))  # the element's first byte
        odd = Signal(name=name("odd"))                 # the element's index is odd
        element_start_mask = ~Cat(element_mask, Const(0, len(start)))
        m.d.comb += [within.eq(destination & element_mask),
                     start.eq(destination & element_start_mask),
                     odd.eq(destination.bit_select(esize_log2, 1))]
        pair_index = Signal(range(2 * maxb), name=name("pair"))  # a byte of the pair
        region_bits = len(source) - 1                  # bits of a byte of A or B

        def in_region(region, index):
            """Byte ``index`` of A (``region`` 0) or B (1), as a byte of the table."""
            return Cat(Cat(index, Const(0, region_bits))[:region_bits], region)

        # Byte ``pair_index`` (below 2·SVL) of the pair, its second register at B: bit
        # ``log2 SVL`` of the index chooses the register.
        from_pair = in_region((pair_index & svl_bytes).any(), pair_index & (svl_bytes - 1))

        narrow = element_bytes >> 1                    # UNPACK: bytes of a source element
        extension = Signal(name=name("extension"))     # UNPACK: a byte above the source's
        m.d.comb += extension.eq((within & narrow).any())

        with m.Switch(op):                   # the byte it takes
            with m.Case(Op.PERM_MOVPRFX, Op.PERM_SEL, Op.PERM_REV, Op.PERM_REV_PREDICATE,
                        *_REVERSE_WITHIN):
                m.d.comb += source.eq(in_region((op == Op.PERM_SEL) & ~active,
                                                destination ^ flip))
            with m.Case(Op.PERM_CPY, Op.PERM_DUP_INDEXED, Op.PERM_LAST, Op.PERM_CLAST):
                m.d.comb += source.eq(in_region(element_region, element_base | within))
            with m.Case(Op.PERM_INSR, Op.PERM_EXT, Op.PERM_SPLICE):
                # INSR from Vm: the first element from B.
                m.d.comb += [pair_index.eq(shifted),
                             source.eq(Mux(first_element & present.vm & (op == Op.PERM_INSR),
                                           in_region(1, within), from_pair))]
            with m.Case(Op.PERM_ZIP, Op.PERM_ZIP_PREDICATE):
                m.d.comb += source.eq(in_region(odd, half | ((start >> 1) & element_start_mask)
                                                | within))
            with m.Case(Op.PERM_UZP, Op.PERM_UZP_PREDICATE):
                m.d.comb += [pair_index.eq((start << 1) | Mux(flags.high, element_bytes, 0)
                                           | within),
                             source.eq(from_pair)]
            with m.Case(Op.PERM_TRN, Op.PERM_TRN_PREDICATE):
                m.d.comb += source.eq(in_region(odd, (destination & ~Cat(element_bytes,
                                                                         Const(0, 16)))
                                                | Mux(flags.high, element_bytes, 0)))
            with m.Case(Op.PERM_TBL, Op.PERM_TBX):
                m.d.comb += source.eq(from_pair)
            with m.Case(Op.PERM_UNPACK, Op.PERM_UNPACK_PREDICATE):
                m.d.comb += source.eq(half | (start >> 1) | Mux(extension, narrow - 1, within))

        # TBL/TBX: element index i of Zm picks byte i·esize + within of the table, if inside.
        inside = Signal(name=name("inside"))
        with m.If((op == Op.PERM_TBL) | (op == Op.PERM_TBX)):
            with m.Switch(esize_log2):
                for log2 in range(4):
                    with m.Case(log2):
                        first = (lane >> log2) << log2
                        index = chunk_indices[8 * first:8 * (first + (1 << log2))]
                        kept_bits = len(pair_index) - log2
                        m.d.comb += [
                            pair_index.eq(Cat(Const(lane, log2), index[:kept_bits])),
                            inside.eq(~index[kept_bits:].any()
                                      & ~(index[:kept_bits] & ~(table_limit >> log2)).any())]

        # Predicated merging (and zeroing) of a whole-element move.
        merging = [write.eq(~present.pg | active | flags.zeroing),
                   zero.eq(present.pg & ~active & flags.zeroing)]
        with m.Switch(op):                   # whether it is written, zero, and how
            with m.Case(Op.PERM_MOVPRFX):
                m.d.comb += merging
            with m.Case(*_REVERSE_WITHIN):
                m.d.comb += [mode.eq(Mux(op == Op.PERM_RBIT, _BIT_REVERSE, _PLAIN)),
                             write.eq(active)]
            with m.Case(Op.PERM_CPY):
                m.d.comb += [mode.eq(Mux(present.vn, _PLAIN, _SCALAR)), *merging]
            with m.Case(Op.PERM_DUP_INDEXED):
                m.d.comb += [zero.eq(dup_beyond), write.eq(1)]
            with m.Case(Op.PERM_INSR):
                m.d.comb += [mode.eq(Mux(first_element & ~present.vm, _SCALAR, _PLAIN)),
                             write.eq(1)]
            with m.Case(Op.PERM_LAST, Op.PERM_CLAST):
                m.d.comb += mode.eq(Mux(kept & is_scalar, _SCALAR, _PLAIN))
                with m.If(present.zdn):
                    m.d.comb += write.eq(~kept)
                with m.Else():
                    m.d.comb += [zero.eq(~first_element), write.eq(1)]
            with m.Case(Op.PERM_TBL, Op.PERM_TBX):
                m.d.comb += [zero.eq(~inside & (op == Op.PERM_TBL)),
                             write.eq(inside | (op == Op.PERM_TBL))]
            with m.Case(Op.PERM_UNPACK, Op.PERM_UNPACK_PREDICATE):
                m.d.comb += [zero.eq(extension & ~flags.signed),
                             mode.eq(Mux(extension, _SIGN_FILL, _PLAIN)), write.eq(1)]
            with m.Default():
                m.d.comb += write.eq(1)
        return source, zero, write, mode
