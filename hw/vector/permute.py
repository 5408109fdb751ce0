"""The vector unit's permutes: element moves, permutes of vectors and predicates, MOVPRFX.

An execution unit of :mod:`zatile.hw.vector` (payloads in :mod:`zatile.hw.vector.common`).
docs/isa.md, "Streaming SVE element moves and permutes", states the semantics; the reference
model (``sim/model/sve_perm.py``) is the oracle of ``tests/test_hw_vector_permute.py``.

Almost every operation is a byte gather: each destination byte is a byte of the table
``A | B | X`` or zero, where ``A`` is the first vector (``Zdn``/``Zn``/``Vdn``/``Vn``), ``B``
the second (``Zm``/``Vm``; ``Zn+1`` of a ``pairs`` form) and ``X`` the eight bytes of a scalar
operand (a general register or the ``#imm8`` of CPY). A predicate permute is the same gather
on the predicate bits, one per byte (``Pn`` in place of bit 0 of ``A``, ``Pm`` of ``B``), at
the same element size; the result's bit of a byte is bit 0 of the gathered byte. A few
destination bytes are derived from the gathered one (the sign fill of SUNPK, the bit reversal
of RBIT); INDEX is computed rather than gathered.

The gather runs over eight destination bytes (64 bits) per cycle, so the operands must stay on
the ``op`` stream (valid, payload stable) until ``op.ready``, which is raised with the last
eight bytes of the SVL; the result follows on the next cycle: ``SVL/64`` cycles after the op
is presented, plus one. LASTA/LASTB/CLASTA/CLASTB gather the element into the low bytes of the
first eight and take those as the general-register result (``scalar``).
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, Value

from zatile.hw._common import max_bytes
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
_PLAIN, _SIGN_FILL, _BIT_REVERSE = 0, 1, 2


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
        byte_index = range(2 * maxb)            # a byte of one register, or of a pair

        # ---- sequencing: chunk ``x_chunk`` of the destination is made while the op is held
        steps = chunk_steps(m, self, CHUNK)
        x_chunk, step, last = steps.chunk, steps.step, steps.last

        # ---- operand-wide values
        svl_bytes = Signal(range(2 * maxb))
        m.d.comb += svl_bytes.eq(1 << payload.svl_log2)
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

        # The table: A | B | X.
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
        scalar_operand = Signal(64)
        imm8 = fields.imm8.as_signed()
        with m.If(present.imm8):
            m.d.comb += scalar_operand.eq(Mux(fields.sh[0], imm8 << 8, imm8))
        with m.Elif(present.rn):
            m.d.comb += scalar_operand.eq(payload.rn)
        with m.Elif(present.rm):
            m.d.comb += scalar_operand.eq(payload.rm)
        with m.Elif(present.rdn):
            m.d.comb += scalar_operand.eq(payload.rdn)
        with m.Elif(present.vm):
            m.d.comb += scalar_operand.eq(Value.cast(payload.second)[:64])
        table = Signal(8 * (2 * maxb + CHUNK))
        m.d.comb += table.eq(Cat(table_a, table_b, scalar_operand))
        scalar_base = 2 * maxb                   # the first byte of X in the table

        # The byte position of the element LASTA/LASTB/CLASTA/CLASTB take.
        last_element = Signal(range(maxb))
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
        half = Signal(range(maxb))               # the start of the high half (...2/...HI)
        m.d.comb += half.eq(Mux(flags.high, svl_bytes >> 1, 0))
        splice_length = Signal(range(maxb + 1))
        m.d.comb += splice_length.eq(Mux(any_active, last_active + element_bytes - first_active,
                                         0))
        table_elements = Signal(range(2 * maxb + 1))   # TBL: elements of the table
        m.d.comb += table_elements.eq(Mux(flags.pairs, svl_bytes << 1, svl_bytes)
                                      >> esize_log2)
        piece_log2 = Signal(2)                   # REVB/REVH/REVW/RBIT
        with m.Switch(op):
            for reverse_op, log2 in _REVERSE_WITHIN.items():
                with m.Case(reverse_op):
                    m.d.comb += piece_log2.eq(log2)

        # ---- the eight bytes of this cycle
        chunk_indices = Signal(8 * CHUNK)        # TBL/TBX: Zm's bytes at these positions
        m.d.comb += chunk_indices.eq(Value.cast(payload.second).word_select(x_chunk, 64))
        chunk_active = Signal(CHUNK)
        m.d.comb += chunk_active.eq(active.word_select(x_chunk, CHUNK))
        gathered, lane_writes, lane_bits = [], [], []
        for lane in range(CHUNK):
            destination = Signal(range(maxb), name=f"l{lane}_destination")
            m.d.comb += destination.eq(Cat(Const(lane, 3), x_chunk))
            lane_byte, lane_zero, lane_write, lane_mode = self._lane(
                m, lane, destination, decoded, chunk_active[lane], chunk_indices, table_elements,
                element_bytes=element_bytes, element_mask=element_mask, svl_bytes=svl_bytes,
                any_active=any_active, first_active=first_active, last_element=last_element,
                ext_start=ext_start, dup_start=dup_start, half=half,
                splice_length=splice_length, piece_log2=piece_log2, is_scalar=is_scalar,
                scalar_base=scalar_base, maxb=maxb, byte_index=byte_index)
            raw = Signal(8, name=f"l{lane}_gathered")
            m.d.comb += raw.eq(table.word_select(lane_byte, 8))
            value = Signal(8, name=f"l{lane}_value")
            with m.If(lane_zero):
                m.d.comb += value.eq(0)
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
        with m.If(step):
            m.d.sync += x_index_next.eq(chunk_base + ((increment << 3) >> esize_log2)[:64])

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
    def _lane(m: Module, lane: int, destination, decoded, active, chunk_indices, table_elements,
              *, element_bytes, element_mask, svl_bytes, any_active, first_active, last_element,
              ext_start, dup_start, half, splice_length, piece_log2, is_scalar, scalar_base,
              maxb, byte_index):
        """The table byte of destination byte ``destination`` (one of the eight of this
        cycle, ``lane``), whether it is zero instead, whether it is written and its
        :data:`_PLAIN`/:data:`_SIGN_FILL`/:data:`_BIT_REVERSE` mode."""
        op, flags, present = decoded.op, decoded.flags, decoded.present
        esize_log2 = decoded.esize_log2

        def name(what):
            return f"l{lane}_{what}"

        source = Signal(range(2 * maxb + CHUNK), name=name("source"))
        zero = Signal(name=name("zero"))
        write = Signal(name=name("write"))
        mode = Signal(2, name=name("mode"))
        within = Signal(4, name=name("within"))        # byte of the element
        start = Signal(range(maxb), name=name("start"))  # the element's first byte
        odd = Signal(name=name("odd"))                 # the element's index is odd
        m.d.comb += [within.eq(destination & element_mask),
                     start.eq(destination & ~Cat(element_mask, Const(0, 16))),
                     odd.eq(destination.bit_select(esize_log2, 1))]
        pair_index = Signal(byte_index, name=name("pair"))   # EXT/UZP/TBL: a byte of the pair

        def from_pair(index):
            """The table byte of byte ``index`` of the pair (its second register at B)."""
            return Mux(index >= svl_bytes, index - svl_bytes + maxb, index)

        # Predicated merging (and zeroing) of a whole-element move.
        merging = [write.eq(~present.pg | active | flags.zeroing),
                   zero.eq(present.pg & ~active & flags.zeroing)]
        low = Signal(name=name("low"))          # in the first element (LAST/INSR)
        m.d.comb += low.eq(destination < element_bytes)

        with m.Switch(op):
            with m.Case(Op.PERM_INDEX):             # computed, not gathered
                m.d.comb += write.eq(1)
            with m.Case(Op.PERM_MOVPRFX):
                m.d.comb += [source.eq(destination), *merging]
            with m.Case(Op.PERM_CPY):
                m.d.comb += [source.eq(Mux(present.vn, within, scalar_base + within)),
                             *merging]
            with m.Case(Op.PERM_SEL):
                m.d.comb += [source.eq(Mux(active, destination, destination + maxb)),
                             write.eq(1)]
            with m.Case(Op.PERM_DUP_INDEXED):
                m.d.comb += [source.eq(dup_start + within), zero.eq(dup_start >= svl_bytes),
                             write.eq(1)]
            with m.Case(Op.PERM_INSR):
                m.d.comb += [source.eq(Mux(low, scalar_base + within,
                                           destination - element_bytes)),
                             write.eq(1)]
            with m.Case(Op.PERM_LAST, Op.PERM_CLAST):
                region = Mux(op == Op.PERM_CLAST, maxb, 0)
                kept = Signal(name=name("kept"))       # CLAST with no active element
                m.d.comb += kept.eq((op == Op.PERM_CLAST) & ~any_active)
                with m.If(present.zdn):
                    m.d.comb += [source.eq(region + last_element + within), write.eq(~kept)]
                with m.Else():
                    m.d.comb += [
                        source.eq(Mux(kept, Mux(is_scalar, scalar_base, 0),
                                      region + last_element) + within),
                        zero.eq(~low), write.eq(1)]
            with m.Case(Op.PERM_EXT):
                m.d.comb += [pair_index.eq(destination + ext_start),
                             source.eq(from_pair(pair_index)), write.eq(1)]
            with m.Case(Op.PERM_ZIP, Op.PERM_ZIP_PREDICATE):
                m.d.comb += [source.eq(Mux(odd, maxb, 0) + half
                                       + ((start >> 1) & ~Cat(element_mask, Const(0, 16)))
                                       + within),
                             write.eq(1)]
            with m.Case(Op.PERM_UZP, Op.PERM_UZP_PREDICATE):
                m.d.comb += [pair_index.eq((start << 1)
                                           + Mux(flags.high, element_bytes, 0) + within),
                             source.eq(from_pair(pair_index)), write.eq(1)]
            with m.Case(Op.PERM_TRN, Op.PERM_TRN_PREDICATE):
                m.d.comb += [source.eq(Mux(odd, maxb, 0) + (start - Mux(odd, element_bytes, 0))
                                       + Mux(flags.high, element_bytes, 0) + within),
                             write.eq(1)]
            with m.Case(Op.PERM_REV, Op.PERM_REV_PREDICATE):
                m.d.comb += [source.eq(svl_bytes - element_bytes - start + within),
                             write.eq(1)]
            with m.Case(Op.PERM_TBL, Op.PERM_TBX):
                index = Signal(byte_index, name=name("index"))
                beyond = Signal(name=name("beyond"))
                with m.Switch(esize_log2):
                    for log2 in range(4):
                        with m.Case(log2):
                            first = (lane >> log2) << log2
                            element = chunk_indices[8 * first:8 * (first + (1 << log2))]
                            m.d.comb += [
                                index.eq(element[:len(index)]),
                                beyond.eq(element[len(index):].any() if len(element) >
                                          len(index) else 0)]
                inside = Signal(name=name("inside"))
                m.d.comb += [inside.eq(~beyond & (index < table_elements)),
                             pair_index.eq((index << esize_log2)[:len(pair_index)] + within),
                             source.eq(from_pair(pair_index)),
                             zero.eq(~inside & (op == Op.PERM_TBL)),
                             write.eq(inside | (op == Op.PERM_TBL))]
            with m.Case(Op.PERM_SPLICE):
                m.d.comb += [source.eq(Mux(destination < splice_length,
                                           first_active + destination,
                                           maxb + destination - splice_length)),
                             write.eq(1)]
            with m.Case(*_REVERSE_WITHIN):
                piece = Signal(4, name=name("piece"))      # bytes of a piece, less one
                m.d.comb += [
                    piece.eq((Const(1, 4) << piece_log2) - 1),
                    source.eq(start + element_bytes - 1 - piece - (within & ~piece)
                              + (within & piece)),
                    mode.eq(Mux(op == Op.PERM_RBIT, _BIT_REVERSE, _PLAIN)),
                    write.eq(active)]
            with m.Case(Op.PERM_UNPACK, Op.PERM_UNPACK_PREDICATE):
                narrow = element_bytes >> 1
                extension = Signal(name=name("extension"))
                m.d.comb += [
                    extension.eq(within >= narrow),
                    source.eq(half + (start >> 1) + Mux(extension, narrow - 1, within)),
                    zero.eq(extension & ~flags.signed),
                    mode.eq(Mux(extension, _SIGN_FILL, _PLAIN)),
                    write.eq(1)]
        return source, zero, write, mode
