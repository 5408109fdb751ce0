"""The vector unit's predicate, count and reduction unit.

An execution unit of :mod:`zatile.hw.vector` (payloads in :mod:`zatile.hw.vector.common`).
docs/isa.md, "Streaming SVE predicates, counts and reductions", states the semantics; the
reference model is the oracle of ``tests/test_hw_vector_predicate.py``.

* Predicate operations (one cycle): PFIRST, PNEXT, PTRUES, BRKA/BRKB (zeroing, merging and
  flag-setting), BRKN(S), BRKPA/BRKPB(S), and WHILELE/LS/GE/GT/HS/HI. The model runs a WHILE
  element by element with the first operand stepping and wrapping in its register width; in
  closed form the number of true elements is ``op2 - op1`` (descending: ``op1 - op2``), plus
  one for an inclusive condition, clamped to ``[0, elements]``, except that an inclusive
  condition whose limit is the end of the range (LE against the largest value, GE against the
  smallest, LS against all ones, HS against 0) never fails: every element is true.
* Counts (one cycle): CNTP, and INC/DEC/SQINC/UQINC/SQDEC/UQDEC of a general register (32- and
  64-bit saturation) or of every element of a Z register, by a pattern's element count
  (``DecodePredCount`` of :func:`zatile.sw.arch.pseudocode.predicate_count`, times ``imm4 + 1``)
  or by a predicate's active-element count.
* Integer reductions (SADDV, UADDV, S/U MAX/MIN V, ANDV, ORV, EORV; several cycles): inactive
  elements become the function's identity, then each cycle combines adjacent element pairs
  into one element of twice the size (extended by the function's signedness, so sums cannot
  overflow) until the elements are 64 bits, and then pairs of 64-bit elements, until element 0
  holds the result: ``log2(MAXB) - log2(esize)`` steps. Vd receives it zero-extended.

The element-wise datapaths serve every element size with one circuit over the whole vector, as
in :mod:`zatile.hw.vector.alu`: the vector INC/DEC is one adder partitioned at the element
boundaries (:func:`_adjust_elements`), each element's saturation decided from its sign bits and
carry out; a reduction step (:func:`_fold`) is one adder partitioned at the blocks of element
pairs, making sums, or the differences that order the pairs for MAX and MIN.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, Value, signed

from zatile.sw.arch.pseudocode import predicate_count

from zatile.hw._common import max_bytes
from zatile.hw.decoder import CHOICES, Op
from zatile.hw.vector.common import (ELEMENT_SIZES, VectorExecutionUnit, active_bytes,
                                     element_starts, extend, partitioned_add, per_size,
                                     predicate_test)

__all__ = ["VectorPredicateUnit"]

_COND = CHOICES["cond"]
_KIND = CHOICES["kind"]
_FUNCTION = CHOICES["function"]

_COUNT_OPS = (Op.COUNT_SCALAR, Op.COUNT_VECTOR, Op.COUNTP_SCALAR, Op.COUNTP_VECTOR)
_VECTOR_COUNT_OPS = (Op.COUNT_VECTOR, Op.COUNTP_VECTOR)
#: Reductions whose elements are signed.
_SIGNED_FUNCTIONS = ("SADD", "SMAX", "SMIN")


def _lowest(m: Module, value: Value, name: str) -> Signal:
    """``value`` with only its lowest set bit kept."""
    operand, result = Signal(len(value), name=f"{name}_operand"), Signal(len(value), name=name)
    m.d.comb += [operand.eq(value), result.eq((operand & -operand)[:len(value)])]
    return result


def _reverse(value: Value) -> Value:
    return Cat(*(value[index] for index in reversed(range(len(value)))))


def _highest(m: Module, value: Value, name: str) -> Signal:
    """``value`` with only its highest set bit kept."""
    operand, result = Signal(len(value), name=f"{name}_operand"), Signal(len(value), name=name)
    m.d.comb += [operand.eq(value),
                 result.eq(_reverse(_lowest(m, _reverse(operand), f"{name}_reversed")))]
    return result


def _uniform(bits: Value) -> Value:
    """Whether the bits are all 0 or all 1."""
    return ~bits.any() | bits.all()


def _popcount(bits: list[Value]) -> Value:
    """The number of set bits, as a balanced adder tree."""
    while len(bits) > 1:
        pairs = [bits[index] + bits[index + 1] for index in range(0, len(bits) - 1, 2)]
        bits = pairs + ([bits[-1]] if len(bits) % 2 else [])
    return bits[0]


class VectorPredicateUnit(VectorExecutionUnit):
    """Predicate operations, element counts and integer reductions (module documentation).

    Parameters
    ----------
    config : EngineConfig
        ``max_svl`` sizes the vectors; ``supported_svls`` bounds the pattern counts.

    Attributes
    ----------
    op : In(stream.Signature(VectorOpLayout))
    result : Out(stream.Signature(VectorResultLayout)), one transfer per ``op`` transfer: the
        cycle after it for every operation but REDUCE, which takes ``log2(MAXB / esize) + 2``
        cycles (``op.ready`` is low meanwhile).

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    """

    #: The operations the unit performs.
    OPS = (Op.PFIRST, Op.PNEXT, Op.PTRUES, Op.BRK, Op.BRK_FLAGS, Op.WHILE_COND, Op.CNTP,
           *_COUNT_OPS, Op.REDUCE)

    def elaborate(self, platform):
        m = Module()
        maxb = max_bytes(self._config)
        payload = self.op.payload
        decoded = payload.decoded
        op, fields, flags, choices = decoded.op, decoded.fields, decoded.flags, decoded.choices
        esize_log2 = decoded.esize_log2
        svl_mask, svl_log2 = payload.svl_mask, payload.svl_log2
        g, pn, pm = payload.governing, payload.pn, payload.pm

        # ---- element geometry
        starts = Signal(maxb)           # one bit at each element's first byte, inside the SVL
        with m.Switch(esize_log2):
            for log2 in ELEMENT_SIZES:
                with m.Case(log2):
                    m.d.comb += starts.eq(element_starts(log2, maxb) & svl_mask)
        elements_log2 = Signal(range(16))
        m.d.comb += elements_log2.eq(svl_log2 - esize_log2)
        elements = Signal(range(maxb + 1))
        m.d.comb += elements.eq(1 << elements_log2)

        def below(limit: Value) -> Value:
            """One bit per byte: the byte's number is less than ``limit``."""
            return Cat(*(limit > byte for byte in range(maxb)))

        # ---- DecodePredCount for every (element count, pattern) the configuration can see
        pattern_count = Signal(range(maxb + 1))
        counts = sorted({svl // 8 >> log2 for svl in self._config.supported_svls
                         for log2 in ELEMENT_SIZES})
        with m.Switch(elements_log2):
            for count in counts:
                with m.Case(count.bit_length() - 1):
                    with m.Switch(fields.pattern):
                        for pattern in range(32):
                            value = predicate_count(pattern, count)
                            if value:
                                with m.Case(pattern):
                                    m.d.comb += pattern_count.eq(value)

        # ---- the count of a CNTP or an INC/DEC: pattern times multiplier, or active elements
        counted = Signal(maxb)
        m.d.comb += counted.eq(Mux(op == Op.CNTP, g & pn, pm) & starts)
        active_count = Signal(range(maxb + 1))
        m.d.comb += active_count.eq(_popcount(list(counted)))
        count = Signal(range(16 * maxb + 1))
        m.d.comb += count.eq(Mux((op == Op.COUNT_SCALAR) | (op == Op.COUNT_VECTOR),
                                 pattern_count * (fields.imm4[:4] + 1), active_count))

        # The saturation and register width.
        saturate_signed, saturate_unsigned, narrow = Signal(), Signal(), Signal()
        saturation = decoded.choices.saturate
        m.d.comb += [saturate_signed.eq(saturation == CHOICES["saturate"].SIGNED),
                     saturate_unsigned.eq(saturation == CHOICES["saturate"].UNSIGNED),
                     narrow.eq(decoded.width_32)]
        saturating = saturate_signed | saturate_unsigned

        # ---- scalar INC/DEC: a 66-bit sum of the register (its width, extended) and the count
        operand = Signal(signed(66))
        m.d.comb += operand.eq(Mux(narrow, extend(payload.rdn[:32], saturate_signed, 66),
                                   extend(payload.rdn, saturate_signed, 66)))
        delta = Signal(signed(len(count) + 1))     # the count, negated for a decrement
        m.d.comb += delta.eq(Mux(flags.decrement, -count, count))
        total = Signal(signed(66))
        m.d.comb += total.eq(operand + delta)
        # Saturation: the sum fits when its bits from the register's top (signed) or from just
        # above it (unsigned) all equal its sign; if not, it becomes the limit on its sign's side.
        in_range = Signal()
        m.d.comb += in_range.eq(Mux(narrow, Mux(saturate_signed, _uniform(total[31:]),
                                                ~total[32:].any()),
                                    Mux(saturate_signed, _uniform(total[63:]),
                                        ~total[64:].any())))
        limit = Signal(64)              # its bits above the register are replaced below
        m.d.comb += limit.eq((~total[65]).replicate(64) ^ Cat(
            Const(0, 31), saturate_signed & narrow, Const(0, 31), saturate_signed & ~narrow))
        saturated = Signal(64)
        m.d.comb += saturated.eq(Mux(in_range, total[:64], limit))
        adjusted = Signal(64)
        m.d.comb += adjusted.eq(Mux(saturating & narrow,
                                    extend(saturated[:32], saturate_signed, 64),
                                    Mux(saturating, saturated, total[:64])))

        # ---- vector INC/DEC: every element plus or minus the count (no byte forms)
        first = Value.cast(payload.first)
        element_adjusted = _adjust_elements(m, first, esize_log2, maxb, delta, saturate_signed,
                                            saturate_unsigned)

        # ---- WHILELE/LS/GE/GT/HS/HI in closed form (module documentation)
        cond = choices.cond
        while_signed = (cond == _COND.LE) | (cond == _COND.GE) | (cond == _COND.GT)
        descending = (cond == _COND.GE) | (cond == _COND.GT) | (cond == _COND.HS) | \
            (cond == _COND.HI)
        inclusive = (cond == _COND.LE) | (cond == _COND.LS) | (cond == _COND.GE) | \
            (cond == _COND.HS)

        def operand_of(register):
            return Mux(narrow, extend(register[:32], while_signed, 66),
                       extend(register, while_signed, 66))
        op1, op2 = Signal(signed(66)), Signal(signed(66))
        m.d.comb += [op1.eq(operand_of(payload.rn)), op2.eq(operand_of(payload.rm))]
        # The first operand counts down from op1 to op2 or up from op1 to op2.
        high, low = Signal(signed(66)), Signal(signed(66))
        m.d.comb += [high.eq(Mux(descending, op1, op2)), low.eq(Mux(descending, op2, op1))]
        distance = Signal(signed(67))
        m.d.comb += distance.eq(high - low + inclusive)
        # An inclusive condition cannot fail before wrapping round when the second register is
        # its limit: below its top bit all ones (LE, LS) or all zeros (GE, HS), and its top bit
        # 1 (GE, LS) or 0 (LE, HS).
        rm = payload.rm
        ones_below_top, zeros_below_top = Signal(), Signal()
        m.d.comb += [
            ones_below_top.eq(rm[:31].all() & (narrow | rm[31:63].all())),
            zeros_below_top.eq(~rm[:31].any() & (narrow | ~rm[31:63].any())),
        ]
        endless = Signal()
        m.d.comb += endless.eq(
            inclusive
            & Mux((cond == _COND.LE) | (cond == _COND.LS), ones_below_top, zeros_below_top)
            & (Mux(narrow, rm[31], rm[63]) == ((cond == _COND.GE) | (cond == _COND.LS))))
        while_count = Signal(range(maxb + 1))
        with m.If(endless | (distance >= elements)):
            m.d.comb += while_count.eq(elements)
        with m.Elif(distance <= 0):
            m.d.comb += while_count.eq(0)
        with m.Else():
            m.d.comb += while_count.eq(distance)
        # Bytes below `limit` hold the true elements (descending: bytes from `limit` up).
        svl_bytes = Signal(range(maxb + 1))
        m.d.comb += svl_bytes.eq(1 << svl_log2)
        limit = Signal(range(maxb + 1))
        m.d.comb += limit.eq(Mux(op == Op.PTRUES, pattern_count << esize_log2,
                                 Mux(descending, svl_bytes - (while_count << esize_log2),
                                     while_count << esize_log2)))
        leading = Signal(maxb)
        m.d.comb += leading.eq(below(limit))
        filled = Signal(maxb)           # PTRUES and WHILE results
        m.d.comb += filled.eq(Mux((op == Op.WHILE_COND) & descending, ~leading, leading) & starts)

        # ---- PFIRST, PNEXT
        pfirst = Signal(maxb)
        m.d.comb += pfirst.eq(pn | _lowest(m, g, "pfirst_added"))
        next_governing = Signal(maxb)
        m.d.comb += next_governing.eq(g & starts)
        # The elements above the last true element of Pdn (all when there is none).
        last = _highest(m, pn & starts, "pnext_last")
        after_last = Signal(maxb)
        m.d.comb += after_last.eq(Mux(last.any(), ~(last | (last - 1)[:maxb]),
                                      Const((1 << maxb) - 1, maxb)))
        pnext = Signal(maxb)
        m.d.comb += pnext.eq(_lowest(m, next_governing & after_last, "pnext_found"))

        # ---- BRKA/BRKB, BRKPA/BRKPB, BRKN
        # Whether the last active element of Pn is true.
        last_active = Signal()
        m.d.comb += last_active.eq((_highest(m, g, "brk_last") & pn).any())
        kind = choices.kind
        source = Mux(kind == _KIND.PROPAGATE, pm, pn)
        stop = Signal(maxb)             # the first active true element of the source
        m.d.comb += stop.eq(_lowest(m, g & source, "brk_stop"))
        # Elements before it (all when there is none) and, for BRKA/BRKPA, it too.
        before = Signal(maxb)
        m.d.comb += before.eq((stop - 1)[:maxb] | Mux(flags.after, stop, 0))
        breaks = Signal(maxb)
        with m.Switch(kind):
            with m.Case(_KIND.NEXT):
                m.d.comb += breaks.eq(Mux(last_active, pm, 0))
            with m.Case(_KIND.PROPAGATE):
                m.d.comb += breaks.eq(Mux(last_active, g & before, 0))
            with m.Default():
                m.d.comb += breaks.eq(g & before)

        # ---- the predicate result and its PredTest
        predicate = Signal(maxb)
        flag_mask = Signal(maxb)        # the governing predicate of PredTest
        with m.Switch(op):
            with m.Case(Op.PFIRST):
                m.d.comb += [predicate.eq(pfirst), flag_mask.eq(g)]
            with m.Case(Op.PNEXT):
                m.d.comb += [predicate.eq(pnext), flag_mask.eq(next_governing)]
            with m.Case(Op.PTRUES):
                m.d.comb += [predicate.eq(filled), flag_mask.eq(filled)]
            with m.Case(Op.WHILE_COND):
                m.d.comb += [predicate.eq(filled), flag_mask.eq(starts)]
            with m.Case(Op.BRK, Op.BRK_FLAGS):
                m.d.comb += [predicate.eq(breaks & svl_mask),
                             flag_mask.eq(Mux(kind == _KIND.NEXT, svl_mask, g))]
        nzcv = Signal(4)
        m.d.comb += nzcv.eq(predicate_test(flag_mask, predicate))

        # ---- reductions: identity for inactive elements, then the pairwise steps
        function = choices.function
        reduce_signed = Signal()
        m.d.comb += reduce_signed.eq(Cat(*(function == _FUNCTION[name]
                                           for name in _SIGNED_FUNCTIONS)).any())
        low_identity, top_identity = Signal(8), Signal(8)   # bytes of the identity element
        with m.Switch(function):
            for name, low, top in (("SMAX", 0x00, 0x80), ("SMIN", 0xFF, 0x7F),
                                   ("UMIN", 0xFF, 0xFF), ("AND", 0xFF, 0xFF)):
                with m.Case(_FUNCTION[name]):
                    m.d.comb += [low_identity.eq(low), top_identity.eq(top)]
        active = Signal(maxb)
        tops = Signal(maxb)             # the last byte of each element
        with m.Switch(esize_log2):
            for log2 in ELEMENT_SIZES:
                with m.Case(log2):
                    size = 1 << log2
                    m.d.comb += [active.eq(active_bytes(g, log2, maxb)),
                                 tops.eq(Cat(*(Const(byte % size == size - 1)
                                               for byte in range(maxb))))]
        reduce_input = Signal(8 * maxb)
        m.d.comb += reduce_input.eq(Cat(*(
            Mux(active[byte], first[8 * byte:8 * byte + 8],
                Mux(tops[byte], top_identity, low_identity)) for byte in range(maxb))))
        steps_total = (maxb.bit_length() - 1)

        # Reduction state: the vector being folded, its element size, the steps left.
        r_busy = Signal()
        r_vector = Signal(8 * maxb)
        r_size_log2 = Signal(range(4))
        r_steps = Signal(range(steps_total + 1))
        r_signed = Signal()
        r_function = Signal(_FUNCTION)
        r_result_bytes = Signal(range(9))
        folded = _fold(m, r_vector, r_size_log2, maxb, r_signed, r_function)

        # ---- handshake and results
        out = self.result.payload
        output_free = ~self.result.valid | self.result.ready
        m.d.comb += self.op.ready.eq(~r_busy & output_free)
        accept = self.op.valid & self.op.ready
        with m.If(self.result.valid & self.result.ready):
            m.d.sync += self.result.valid.eq(0)

        is_reduce = op == Op.REDUCE
        writes_predicate = Cat(*(op == o for o in (Op.PFIRST, Op.PNEXT, Op.PTRUES, Op.BRK,
                                                   Op.BRK_FLAGS, Op.WHILE_COND))).any()
        vector_count = Cat(*(op == o for o in _VECTOR_COUNT_OPS)).any()
        with m.If(accept & ~is_reduce):
            m.d.sync += [
                self.result.valid.eq(1),
                out.vector.eq(element_adjusted),
                out.vector_lanes.eq(Mux(vector_count, svl_mask, 0)),
                out.predicate.eq(predicate),
                # Merging BRKA/BRKB write only the active elements.
                out.predicate_lanes.eq(Mux(writes_predicate,
                                           Mux(flags.merging, g, svl_mask) & svl_mask, 0)),
                out.scalar.eq(Mux(op == Op.CNTP, active_count, adjusted)),
                out.nzcv.eq(nzcv),
            ]
        with m.If(accept & is_reduce):
            m.d.sync += [
                r_busy.eq(1), r_vector.eq(reduce_input), r_size_log2.eq(esize_log2),
                r_steps.eq(steps_total - esize_log2), r_signed.eq(reduce_signed),
                r_function.eq(function),
                r_result_bytes.eq(Mux((function == _FUNCTION.SADD) |
                                      (function == _FUNCTION.UADD), 8, 1 << esize_log2)),
            ]
        with m.If(r_busy):
            with m.If(r_steps != 0):
                m.d.sync += [r_vector.eq(folded), r_steps.eq(r_steps - 1),
                             r_size_log2.eq(Mux(r_size_log2 == 3, 3, r_size_log2 + 1))]
            with m.Elif(output_free):
                result_mask = Cat(*(r_result_bytes > byte for byte in range(8)))
                m.d.sync += [
                    r_busy.eq(0), self.result.valid.eq(1),
                    out.vector.eq(Cat(*(Mux(result_mask[byte], r_vector[8 * byte:8 * byte + 8],
                                            0) for byte in range(8)))),
                    out.vector_lanes.eq(svl_mask), out.predicate.eq(0),
                    out.predicate_lanes.eq(0), out.scalar.eq(0), out.nzcv.eq(0),
                ]
        return m


def _spread(m: Module, esize_log2: Value, name: str, bits: Value) -> Signal:
    """One bit per byte: the bit of ``bits`` at the last byte of the byte's element (elements
    of ``2^esize_log2`` bytes)."""
    return per_size(m, esize_log2, name, len(bits), lambda log2: Cat(
        bits[byte | ((1 << log2) - 1)] for byte in range(len(bits))))


def _adjust_elements(m: Module, vector: Value, esize_log2: Value, maxb: int, delta: Value,
                     saturate_signed: Value, saturate_unsigned: Value) -> Signal:
    """Every element (of ``2^esize_log2`` bytes, at least 2) plus ``delta`` (at most 16 bits,
    signed): wrapping, or saturating (signed or unsigned elements).

    One adder partitioned at the element boundaries serves every element size: each element
    adds ``delta`` sign-extended to its size (its low byte at the element's first byte, its
    high byte at the second, copies of its sign above). A signed sum overflows when the
    operands' signs agree and the sum's differs; an unsigned one when its carry out differs
    from the sign of ``delta`` (a carry adding, no borrow subtracting). The last byte of each
    element decides, and :func:`_spread` hands its decision to the element's other bytes.
    """
    delta16 = Signal(signed(16), name="adjust_delta")
    m.d.comb += delta16.eq(delta)
    negative = delta16[15]
    firsts = per_size(m, esize_log2, "adjust_firsts", maxb,
                       lambda log2: element_starts(log2, maxb))
    lasts = Cat(firsts[1:], Const(1))
    addend = Signal(8 * maxb, name="adjust_addend")
    m.d.comb += addend.eq(Cat(
        Mux(firsts[byte], delta16[:8],
            Mux(firsts[byte - 1], delta16[8:], negative.replicate(8)) if byte else 0)
        for byte in range(maxb)))
    sums, carries = partitioned_add(m, "adjust_sums", vector, addend, firsts, Const(0))
    vector_signs = Cat(vector[8 * byte + 7] for byte in range(maxb))
    sum_signs = Cat(sums[8 * byte + 7] for byte in range(maxb))
    # At each element's last byte: whether it saturates, and whether to the lowest value.
    clamps, lows = Signal(maxb, name="adjust_clamps"), Signal(maxb, name="adjust_lows")
    m.d.comb += [
        clamps.eq(Mux(saturate_signed,
                      ~(vector_signs ^ negative.replicate(maxb)) & (sum_signs ^ vector_signs),
                      Mux(saturate_unsigned, carries ^ negative.replicate(maxb), 0))),
        lows.eq(Mux(saturate_signed, vector_signs, negative.replicate(maxb))),
    ]
    clamp = _spread(m, esize_log2, "adjust_clamp", clamps)
    low = _spread(m, esize_log2, "adjust_low", lows)
    # A signed limit's top bit is the opposite of its other bits.
    result = Signal(8 * maxb, name="adjust_result")
    m.d.comb += result.eq(Cat(
        Mux(clamp[byte],
            Cat((~low[byte]).replicate(7), ~low[byte] ^ (saturate_signed & lasts[byte])),
            sums[8 * byte:8 * byte + 8])
        for byte in range(maxb)))
    return result


def _fold(m: Module, vector: Value, size_log2: Value, maxb: int, signed_: Value,
          function: Value) -> Signal:
    """One reduction step on elements of ``2^size_log2`` bytes: element ``i`` of the result is
    the function of elements ``2i`` and ``2i + 1``, at twice the size (at most 64 bits; bytes
    from ``maxb / 2`` up hold no element after a 64-bit step).

    Every element size shares one datapath. The block of each pair (twice the element size)
    holds its first element extended in place (``x``) and its second moved down and extended
    (``y``). One adder partitioned at the blocks makes ``x + y``; ``x - y`` for MAX and MIN,
    whose sign at the block's last byte orders them; and AND, OR or EOR, as that of ``x`` and
    ``y`` plus 0. A 64-bit step leaves each result in the low half of a 16-byte block, and the
    results move down to consecutive elements.
    """
    def per_byte(name: str, bit_of) -> Signal:
        """One bit per byte, ``bit_of(byte, size)`` for the element size."""
        return per_size(m, size_log2, name, maxb, lambda log2: Cat(
            bit_of(byte, 1 << log2) for byte in range(maxb)))

    def top_bit(byte: int) -> Value:
        """The extension bit of an element whose last byte is ``byte``."""
        return vector[8 * byte + 7] & signed_
    low_half = per_byte("fold_low_half", lambda byte, size: Const(byte & size == 0))
    firsts = per_byte("fold_firsts", lambda byte, size: Const(byte % (2 * size) == 0))
    x_fills = per_byte("fold_x_fills",
                       lambda byte, size: top_bit(byte & ~(2 * size - 1) | (size - 1)))
    y_fills = per_byte("fold_y_fills", lambda byte, size: top_bit(byte | (2 * size - 1)))
    x, y = Signal(8 * maxb, name="fold_x"), Signal(8 * maxb, name="fold_y")
    for byte in range(maxb):
        # The byte an element size away, from each size for which this byte is in a low half.
        moved = vector[8 * byte:8 * byte + 8]
        for log2 in ELEMENT_SIZES:
            if not byte >> log2 & 1 and byte + (1 << log2) < maxb:
                source = byte + (1 << log2)
                moved = Mux(size_log2 == log2, vector[8 * source:8 * source + 8], moved)
        m.d.comb += [
            x[8 * byte:8 * byte + 8].eq(Mux(low_half[byte], vector[8 * byte:8 * byte + 8],
                                            x_fills[byte].replicate(8))),
            y[8 * byte:8 * byte + 8].eq(Mux(low_half[byte], moved, y_fills[byte].replicate(8))),
        ]
    ordering, minimum, adding = Signal(), Signal(), Signal()
    m.d.comb += [
        ordering.eq(Cat(function == _FUNCTION[name]
                        for name in ("SMAX", "UMAX", "SMIN", "UMIN")).any()),
        minimum.eq((function == _FUNCTION.SMIN) | (function == _FUNCTION.UMIN)),
        adding.eq((function == _FUNCTION.SADD) | (function == _FUNCTION.UADD) | ordering),
    ]
    width = 8 * maxb
    # The adder's first operand: 0: x, 1: x AND y, 2: x OR y, 3: x EOR y.
    logic = Signal(2, name="fold_logic")
    with m.Switch(function):
        for code, name in enumerate(("AND", "OR", "EOR"), start=1):
            with m.Case(_FUNCTION[name]):
                m.d.comb += logic.eq(code)
    first = Mux(logic[1], Mux(logic[0], x ^ y, x | y), Mux(logic[0], x & y, x))
    sums, _ = partitioned_add(m, "fold_sums", first,
                               (y & adding.replicate(width)) ^ ordering.replicate(width),
                               firsts, ordering)
    # Whether the result of MAX or MIN is y, at every byte of the block: for MAX, when x - y is
    # negative; for MIN, when it is not.
    take_y = per_size(m, size_log2, "fold_take_y", maxb, lambda log2: Cat(
        sums[8 * (byte | ((2 << log2) - 1)) + 7] ^ minimum for byte in range(maxb)))
    take_y_bits = Cat(take_y[byte].replicate(8) for byte in range(maxb))
    result = Signal(width, name="fold_result")
    m.d.comb += result.eq(Mux(ordering, (take_y_bits & y) | (~take_y_bits & x), sums))
    folded = Signal(width, name="folded")
    m.d.comb += folded.eq(Mux(size_log2 == 3, Cat(
        Cat(result[128 * block:128 * block + 64] for block in range(maxb // 16)),
        result[64 * (maxb // 16):]), result))
    return folded
