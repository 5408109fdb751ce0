"""The vector unit's shifter: integer shifts, unary, halving, widening and narrowing operations.

An execution unit of :mod:`zatile.hw.vector` (payloads in :mod:`zatile.hw.vector.common`). It
makes ``vector_bits_per_cycle`` bits of the result per cycle from the held op
(:func:`~zatile.hw.vector.common.chunk_steps`), so its result leaves ``SVL /
vector_bits_per_cycle`` cycles after the op is presented (the cycle after, by default).
docs/isa.md, "Streaming SVE integer arithmetic", states the semantics; the reference model is
the oracle of ``tests/test_hw_vector_shift.py``.

Every element size shares one datapath (``_elements``), partitioned at the element boundaries
as the ALU's is; the operation only sets its controls:

* an adder partitioned at the element boundaries (its carries cut between elements) adds the
  operands: ``a ± b (+ 1)`` for the halving adds, the even or odd narrow elements of each lane
  (or the wide first element itself) for the widening operations, the extended low bits of ``a``
  for SXTB..UXTW, ``a`` itself for the shifts (``a - 1`` for a negative element of ASRD, which
  rounds toward zero as ``floor((a - 1) / 2^s) + 1``) and the unary operations. Bit ``n`` of the
  exact sum comes from the element's carry out and the operands' sign bits;
* a logarithmic shifter shifts each element left, then right, by its own amount: six steps each
  way (1 to 32 places), each bit of a step taking 0 from beyond its element, and a last step of
  one place right whose bit falls out as the round bit. An arithmetic shift right is a logical
  one of the element XORed with its fill (its sign, or bit ``n`` of a halving sum), XORed back.
  The amount is the ``tsz:imm3`` immediate of the form (``#1``..``#esize`` right, ``#0``.. left,
  ``shift_right``) or the second element (the 64-bit element of its lane for ``wide``),
  unsigned for ASR/LSR/LSL and signed for the SVE2 shifts by vector: its low byte and whether
  the bytes above it extend it, 127 for any amount beyond ±127 (as for any beyond the element);
  a negative amount shifts right one less, then the last step. A halving add shifts right by the
  last step alone;
* a partitioned incrementer adds the round bit (rounding shifts), 1 back (ASRD), or negates
  (``~x + 1``: ABS/NEG/SQABS/SQNEG, and ABD of a negative difference);
* the result is truncated or saturated (signed or unsigned) to the element, or to its half for a
  narrowing operation, which works at the double-width source element and writes the even
  (bottom, odd halves zeroed) or odd (top) half of it. A left shift saturates unless the
  element's leading zeros (or, signed, its leading copies of the sign below it) are at least the
  amount, or the element is 0; a narrowing result unless the upper half of the source element
  extends the lower;
* CLZ and CLS (the leading zeros of the bits below the sign, XORed with it, over a 1) and the
  left shifts' saturation share one leading-zero counter, and CNT one population count: each
  counts every byte and combines pairs of counts up to 64-bit elements.

In the FPGA configuration (SVL 128, 64 bits per cycle) the unit takes 4,040 LUT4 and 144 CCU2C
(``synth_ecp5``), where one shifter, adder and counter per element size took 9,554 and 1,981;
by default (SVL 512, a whole vector per cycle) 27,959 and 1,117.

A predicated (``Pg``) form writes only its active elements (merging); a narrowing top form only the
odd halves, keeping the even ones of the destination (which the unit does not read).
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import data

from zatile.hw._common import max_bytes
from zatile.hw.decoder import Op
from zatile.hw.vector.common import (ELEMENT_SIZES, VectorExecutionUnit, active_bytes,
                                     chunk_part, chunk_registers, chunk_steps, element_starts,
                                     partitioned_add)

__all__ = ["VectorShifter"]

#: The element result each operation selects.
_RESULTS = ("shift", "halve", "widen", "abd", "negate", "extend", "count", "cnt", "cnot",
            "invert")

#: Operation -> the controls it sets (the others are 0): ``a_signed``/``b_signed`` the operands
#: (the second as a shift amount or addend), ``right`` (a shift by vector is to the right),
#: ``round``, ``asrd``, saturation ``sat_s``/``sat_u`` (else truncation), ``narrow``,
#: ``subtract``, ``abs`` (subtract a negative element only), ``wide_first``, ``cls``, the
#: extended width ``from8``/``from16``/``from32`` and one of :data:`_RESULTS`.
_CONTROLS = {
    Op.INT_ASR: "shift a_signed right", Op.INT_LSR: "shift right", Op.INT_LSL: "shift",
    Op.INT_ASRD: "shift a_signed asrd", Op.INT_SRSHR: "shift a_signed round",
    Op.INT_URSHR: "shift round", Op.INT_SQSHLU: "shift a_signed sat_u",
    Op.INT_SRSHL: "shift a_signed b_signed round", Op.INT_URSHL: "shift b_signed round",
    Op.INT_SQSHL: "shift a_signed b_signed sat_s", Op.INT_UQSHL: "shift b_signed sat_u",
    Op.INT_SQRSHL: "shift a_signed b_signed round sat_s",
    Op.INT_UQRSHL: "shift b_signed round sat_u",
    Op.INT_SHRN: "shift narrow", Op.INT_RSHRN: "shift narrow round",
    Op.INT_SQSHRN: "shift narrow a_signed sat_s",
    Op.INT_SQRSHRN: "shift narrow a_signed sat_s round",
    Op.INT_UQSHRN: "shift narrow sat_u", Op.INT_UQRSHRN: "shift narrow sat_u round",
    Op.INT_SQSHRUN: "shift narrow a_signed sat_u",
    Op.INT_SQRSHRUN: "shift narrow a_signed sat_u round",
    Op.INT_SQXTN: "shift narrow a_signed sat_s", Op.INT_UQXTN: "shift narrow sat_u",
    Op.INT_SQXTUN: "shift narrow a_signed sat_u",
    Op.INT_SXTB: "extend from8 a_signed", Op.INT_UXTB: "extend from8",
    Op.INT_SXTH: "extend from16 a_signed", Op.INT_UXTH: "extend from16",
    Op.INT_SXTW: "extend from32 a_signed", Op.INT_UXTW: "extend from32",
    Op.INT_ABS: "negate a_signed abs", Op.INT_NEG: "negate a_signed subtract",
    Op.INT_SQABS: "negate a_signed abs sat_s", Op.INT_SQNEG: "negate a_signed subtract sat_s",
    Op.INT_CLS: "count cls", Op.INT_CLZ: "count", Op.INT_CNT: "cnt", Op.INT_CNOT: "cnot",
    Op.INT_NOT: "invert",
    Op.INT_SHADD: "halve a_signed b_signed", Op.INT_UHADD: "halve",
    Op.INT_SHSUB: "halve a_signed b_signed subtract", Op.INT_UHSUB: "halve subtract",
    Op.INT_SRHADD: "halve a_signed b_signed round", Op.INT_URHADD: "halve round",
    Op.INT_SADDL: "widen a_signed b_signed", Op.INT_UADDL: "widen",
    Op.INT_SSUBL: "widen a_signed b_signed subtract", Op.INT_USUBL: "widen subtract",
    Op.INT_SABDL: "abd a_signed b_signed subtract", Op.INT_UABDL: "abd subtract",
    Op.INT_SADDW: "widen wide_first a_signed b_signed", Op.INT_UADDW: "widen wide_first",
    Op.INT_SSUBW: "widen wide_first a_signed b_signed subtract",
    Op.INT_USUBW: "widen wide_first subtract",
}
_FLAGS = ("a_signed", "b_signed", "right", "round", "asrd", "sat_s", "sat_u", "narrow",
          "subtract", "abs", "wide_first", "cls", "from8", "from16", "from32")
_ControlLayout = data.StructLayout({
    **{name: 1 for name in _FLAGS}, "result": data.StructLayout({k: 1 for k in _RESULTS})})


class VectorShifter(VectorExecutionUnit):
    """Integer shifts, unary, halving, widening and narrowing operations (module
    documentation).

    Parameters
    ----------
    config : EngineConfig
        ``max_svl`` sizes the vectors; ``vector_bits_per_cycle`` the datapath.

    Attributes
    ----------
    op : In(stream.Signature(VectorOpLayout)), held (valid, payload stable) until ``ready``
    result : Out(stream.Signature(VectorResultLayout)), one transfer per ``op`` transfer,
        the cycle after it at the earliest.

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    """

    #: The operations the unit performs.
    OPS = tuple(_CONTROLS)

    def elaborate(self, platform):
        m = Module()
        maxb = max_bytes(self._config)
        chunk_bytes = self._config.vector_bits_per_cycle // 8
        chunks = maxb // chunk_bytes
        payload = self.op.payload
        decoded = payload.decoded
        op, fields, flags, present = decoded.op, decoded.fields, decoded.flags, decoded.present
        esize_log2 = decoded.esize_log2
        steps = chunk_steps(m, self, chunk_bytes)

        control = Signal(_ControlLayout)
        with m.Switch(op):
            for element_op, names in _CONTROLS.items():
                with m.Case(element_op):
                    m.d.comb += [(control.result[name] if name in _RESULTS
                                  else control[name]).eq(1) for name in names.split()]

        # ---- operands (this cycle's chunk): Zdn/Zn and Zm, swapped by the reversed forms; the
        # immediate shift
        first = chunk_part(payload.first, steps.chunk, chunks)
        second = chunk_part(payload.second, steps.chunk, chunks)
        left, right = Signal(8 * chunk_bytes), Signal(8 * chunk_bytes)
        m.d.comb += [left.eq(Mux(flags.reversed, second, first)),
                     right.eq(Mux(flags.reversed, first, second))]
        # tsz:imm3 counts from the (narrow) element size down for a right shift
        encoded = Signal(6)
        m.d.comb += encoded.eq(Cat(fields.shift, fields.shift_hi))
        immediate_shift = Signal(signed(8))
        m.d.comb += immediate_shift.eq(Mux(flags.shift_right,
                                           encoded - (Const(8, 8) << esize_log2),
                                           encoded))

        # ---- the element results, one datapath for every (source) element size
        # A narrowing operation works at the double-width source element.
        work_log2 = Signal(range(5))
        m.d.comb += work_log2.eq(esize_log2 + control.narrow)
        # The saturating extracts narrow (SQXTN, ...) are the shifts narrow by an immediate 0.
        by_immediate = Signal()
        m.d.comb += by_immediate.eq(present.shift | control.narrow)
        element_result = _elements(m, control, esize_log2, work_log2, left, right, by_immediate,
                                   immediate_shift, flags.wide, flags.top)

        # ---- the bytes written: active elements (Pg), the odd halves of a narrowing top form
        lanes = Signal(chunk_bytes)
        governing = chunk_part(payload.governing, steps.chunk, chunks)
        svl_mask = chunk_part(payload.svl_mask, steps.chunk, chunks)
        with m.Switch(esize_log2):
            for log2 in ELEMENT_SIZES:
                with m.Case(log2):
                    odd_halves = Cat(Const((b >> log2) & 1, 1) for b in range(chunk_bytes))
                    m.d.comb += lanes.eq(
                        Mux(present.pg, active_bytes(governing, log2, chunk_bytes),
                            Mux(control.narrow & flags.top, odd_halves,
                                Const(-1, chunk_bytes))) & svl_mask)

        # ---- the result, registered chunk by chunk
        x = chunk_registers(m, steps, chunks, x_vector=element_result, x_lanes=lanes)
        out = self.result.payload
        m.d.comb += [out.vector.eq(x["x_vector"]), out.vector_lanes.eq(x["x_lanes"])]
        return m


class _Sizes:
    """Per-byte views of a chunk of ``count`` bytes whose elements have ``2^log2`` bytes
    (``log2`` a signal): each is one signal, that value for the element size in force."""

    def __init__(self, m: Module, log2: Value, count: int):
        self._m, self._log2, self._count = m, log2, count

    def per_size(self, name: str, width: int, value_of) -> Signal:
        """A signal of ``width`` bits that is ``value_of(log2)`` for the element size."""
        value = Signal(width, name=name)
        with self._m.Switch(self._log2):
            for log2 in ELEMENT_SIZES:
                with self._m.Case(log2):
                    self._m.d.comb += value.eq(value_of(log2))
        return value

    def from_first(self, name: str, values: list[Value]) -> list[Value]:
        """Per byte, the value (of ``values``, one per byte) of its element's first byte."""
        width = len(values[0])
        spread = self.per_size(name, width * self._count, lambda log2: Cat(
            values[index & ~((1 << log2) - 1)] for index in range(self._count)))
        return [spread.word_select(index, width) for index in range(self._count)]

    def from_last(self, name: str, bits: Value) -> Signal:
        """Per byte, the bit (of ``bits``, one per byte) of its element's last byte."""
        return self.per_size(name, self._count, lambda log2: Cat(
            bits[index | ((1 << log2) - 1)] for index in range(self._count)))

    def every(self, name: str, bits: Value) -> Signal:
        """Per byte, whether the bits (of ``bits``, one per byte) of its element are all set."""
        return self.per_size(name, self._count, lambda log2: Cat(
            bits[index & ~((1 << log2) - 1):][:1 << log2].all()
            for index in range(self._count)))


def _byte(value: Value, index: int) -> Value:
    """Byte ``index`` of ``value``."""
    return value[8 * index:8 * index + 8]


def _tops(value: Value) -> Value:
    """The top bit of every byte of ``value``."""
    return Cat(value[8 * index + 7] for index in range(len(value) // 8))


def _zero_bytes(value: Value) -> Value:
    """One bit per byte of ``value``: the byte is 0."""
    return Cat(~_byte(value, index).any() for index in range(len(value) // 8))


def _one_bytes(value: Value) -> Value:
    """One bit per byte of ``value``: the byte is all ones."""
    return Cat(_byte(value, index).all() for index in range(len(value) // 8))


def _bytewise(bits: Value) -> Value:
    """Each bit of ``bits`` (one per byte) repeated over its byte."""
    return Cat(bit.replicate(8) for bit in bits)


def _signal(m: Module, name: str, value: Value) -> Signal:
    """``value`` as a signal (so that slicing it repeats no logic in simulation)."""
    signal = Signal(len(value), name=name)
    m.d.comb += signal.eq(value)
    return signal


def _elements(m: Module, control, esize_log2: Value, work_log2: Value, a: Value, b: Value,
              immediate: Value, immediate_shift: Value, wide: Value, top: Value) -> Value:
    """The element results of the chunk ``a`` (and ``b``), for source elements of
    ``2^work_log2`` bytes (the destination's are ``2^esize_log2``), by one datapath for every
    element size (module documentation).
    """
    chunk_bytes = len(a) // 8
    width = len(a)
    kind = control.result
    work = _Sizes(m, work_log2, chunk_bytes)
    starts = work.per_size("starts", chunk_bytes,
                           lambda log2: element_starts(log2, chunk_bytes))
    lasts = Cat(starts[1:], Const(1))
    a_sign = work.from_last("a_sign", _tops(a))
    a_zero = work.every("a_zero", _zero_bytes(a))

    # ---- the adder's operands and sum
    pairwise = kind.widen | kind.abd
    subtract = Signal()
    m.d.comb += subtract.eq(control.subtract & (kind.halve | pairwise))
    x = work.per_size("x", width, lambda log2: Mux(
        pairwise & ~control.wide_first, _halves(a, control.a_signed, top, log2),
        Mux(kind.extend, _extended(a, control, log2), a)))
    # ASRD takes 1 from a negative element (module documentation)
    y = work.per_size("y", width, lambda log2: Mux(
        pairwise, _halves(b, control.b_signed, top, log2),
        Mux(kind.halve, b, _bytewise(a_sign & control.asrd.replicate(chunk_bytes)))))
    addend = _signal(m, "addend", y ^ subtract.replicate(width))
    sums, carries = partitioned_add(m, "sums", x, addend, starts,
                                     (subtract | kind.halve & control.round)
                                     .replicate(chunk_bytes))
    # Bit n of the exact sum, at an element's last byte: the top bit of a halving result.
    sum_high = Signal(chunk_bytes)
    m.d.comb += sum_high.eq(carries ^ (_tops(x) & control.a_signed.replicate(chunk_bytes))
                            ^ (_tops(y) & control.b_signed.replicate(chunk_bytes))
                            ^ subtract.replicate(chunk_bytes))
    fill = Signal(chunk_bytes)
    m.d.comb += fill.eq(Mux(kind.halve, work.from_last("halving_top", sum_high),
                            a_sign & control.a_signed.replicate(chunk_bytes)))

    # ---- the shift of each element: direction, amount, the extra step right
    shift_right, amount, extra = _shift_controls(m, control, work, work_log2, b, immediate,
                                                 immediate_shift, wide)

    # ---- the shifter: left, then right (an arithmetic shift right is a logical one of the
    # element XORed with its fill, XORed back), the last step right keeping the round bit
    shifted = sums
    for stage in range(6):
        shifted = _shift_stage(m, f"left_{stage}", shifted, 1 << stage, False,
                               ~shift_right & Cat(k[stage] for k in amount),
                               _edges(work, stage, False, starts),
                               ~shift_right & Cat(k[6] for k in amount) if stage == 5
                               else Const(0, chunk_bytes))
    inverted = Signal(chunk_bytes)
    m.d.comb += inverted.eq(shift_right & fill)
    shifted = _signal(m, "inverted", shifted ^ _bytewise(inverted))
    for stage in range(6):
        shifted = _shift_stage(m, f"right_{stage}", shifted, 1 << stage, True,
                               shift_right & Cat(k[stage] for k in amount),
                               _edges(work, stage, True, lasts),
                               shift_right & Cat(k[6] for k in amount) if stage == 5
                               else Const(0, chunk_bytes))
    step_right = Signal(chunk_bytes)
    m.d.comb += step_right.eq(shift_right & extra)
    round_bits = Signal(chunk_bytes)   # the element's bit 0 before the extra step
    m.d.comb += round_bits.eq(Cat(shifted[8 * index] for index in range(chunk_bytes))
                              ^ inverted)
    shifted = _signal(m, "shifted", _shift_stage(m, "right_extra", shifted, 1, True, step_right,
                                                  lasts, Const(0, chunk_bytes))
                      ^ _bytewise(inverted))
    shifted_sign = work.from_last("shifted_sign", _tops(shifted))

    # ---- the incrementer: rounding, ASRD's 1 back, the negation of NEG/ABS/SQABS/SQNEG and ABD
    negate = Signal(chunk_bytes)
    m.d.comb += negate.eq(
        kind.negate.replicate(chunk_bytes)
        & (control.subtract.replicate(chunk_bytes) | control.abs.replicate(chunk_bytes) & a_sign)
        | kind.abd.replicate(chunk_bytes) & shifted_sign)
    increment = Signal(chunk_bytes)
    m.d.comb += increment.eq(negate | kind.shift.replicate(chunk_bytes) & (
        control.round.replicate(chunk_bytes) & step_right & round_bits
        | control.asrd.replicate(chunk_bytes) & a_sign))
    negated = _signal(m, "negated", shifted ^ _bytewise(negate))
    total, _ = partitioned_add(m, "total", negated, Const(0, width), starts, increment)
    total_sign = work.from_last("total_sign", _tops(total))

    # ---- saturation
    counted = _signal(m, "counted", _counted(a, control.cls | control.sat_s, a_sign, starts))
    leading_zeros = _leading_zero_levels(m, counted)
    # a left shift saturates unless the bits it shifts out are copies of the sign (or zeros)
    counts_fit = [[_at_least(m, count, amount[element << log2], f"fits{8 << log2}_{element}")
                   for element, count in enumerate(level)]
                  for log2, level in enumerate(leading_zeros)]
    amount_fits = work.per_size("amount_fits", chunk_bytes, lambda log2: Cat(
        counts_fit[log2][index >> log2] for index in range(chunk_bytes)))
    left_fits = amount_fits | a_zero
    left_overflow = (control.sat_s.replicate(chunk_bytes) & ~left_fits
                     | control.sat_u.replicate(chunk_bytes)
                     & (a_sign & control.a_signed.replicate(chunk_bytes) | ~left_fits))
    narrow_overflow = _narrow_overflow(m, work, control, total)
    overflow = Signal(chunk_bytes)
    m.d.comb += overflow.eq(
        kind.shift.replicate(chunk_bytes)
        & Mux(control.narrow, narrow_overflow, ~shift_right & left_overflow)
        | (kind.negate & control.sat_s).replicate(chunk_bytes) & negate & a_sign & total_sign)
    negative = Signal(chunk_bytes)
    m.d.comb += negative.eq(a_sign & (kind.shift & control.a_signed).replicate(chunk_bytes))
    result_sizes = _Sizes(m, esize_log2, chunk_bytes)
    result_lasts = result_sizes.per_size("result_lasts", chunk_bytes, lambda log2: Cat(
        Const(index % (1 << log2) == (1 << log2) - 1) for index in range(chunk_bytes)))
    saturated = Signal(width)
    for index in range(chunk_bytes):
        is_negative = negative[index]
        limit = Cat(Value.cast(~is_negative).replicate(7),
                    Mux(result_lasts[index] & control.sat_s, is_negative, ~is_negative))
        m.d.comb += _byte(saturated, index).eq(
            Mux(overflow[index], limit, _byte(total, index)))

    # ---- narrowing: the result in the even (bottom) or odd (top) half of the source element
    odd = result_sizes.per_size("odd_half", chunk_bytes, lambda log2: Cat(
        Const((index >> log2) & 1) for index in range(chunk_bytes)))
    moved_up = result_sizes.per_size("moved_up", width, lambda log2: Cat(
        _byte(saturated, index - (1 << log2)) if index >= 1 << log2 else Const(0, 8)
        for index in range(chunk_bytes)))
    placed = Signal(width)
    for index in range(chunk_bytes):
        m.d.comb += _byte(placed, index).eq(Mux(
            ~control.narrow, _byte(saturated, index),
            Mux(odd[index], Mux(top, _byte(moved_up, index), 0),
                Mux(top, 0, _byte(saturated, index)))))

    # ---- counts: CLZ, CLS, CNT and CNOT in each element's first byte
    population = _population_levels(m, a)
    counts = work.per_size("counts", width, lambda log2: Cat(
        _count_byte(m, kind, leading_zeros[log2][index >> log2],
                    population[log2][index >> log2], a_zero[index],
                    f"count{8 << log2}_{index >> log2}")
        if index % (1 << log2) == 0 else Const(0, 8)
        for index in range(chunk_bytes)))

    result = Signal(width)
    m.d.comb += result.eq(Mux(kind.count | kind.cnt | kind.cnot, counts,
                              Mux(kind.invert, ~a, placed)))
    return result


def _halves(value: Value, value_signed: Value, top: Value, log2: int) -> Value:
    """The even (bottom) or odd (``top``) half of each element of ``2^log2`` bytes of
    ``value``, extended to the element (``value`` itself for bytes, which have no halves)."""
    size = 1 << log2
    if size == 1:
        return value
    half = size // 2
    parts = []
    for index in range(len(value) // 8):
        base = index - index % size
        if index - base < half:
            parts.append(Mux(top, _byte(value, index + half), _byte(value, index)))
        else:
            sign = Mux(top, value[8 * (base + size) - 1], value[8 * (base + half) - 1])
            parts.append((sign & value_signed).replicate(8))
    return Cat(parts)


def _extended(value: Value, control, log2: int) -> Value:
    """SXTB, UXTB, ... of each element of ``2^log2`` bytes of ``value``: its low 8, 16 or 32
    bits extended (0 for an extension from the element size or more)."""
    extended = Const(0, len(value))
    for width, selected in ((8, control.from8), (16, control.from16), (32, control.from32)):
        if width < 8 << log2:
            parts = []
            for index in range(len(value) // 8):
                base = index - index % (1 << log2)
                kept = index - base < width // 8
                sign = value[8 * base + width - 1] & control.a_signed
                parts.append(_byte(value, index) if kept else sign.replicate(8))
            extended = Mux(selected, Cat(parts), extended)
    return extended


def _shift_controls(m: Module, control, work: _Sizes, work_log2: Value, b: Value,
                    immediate: Value, immediate_shift: Value,
                    wide: Value) -> tuple[Value, list[Value], Value]:
    """Per byte, its element's shift: to the right, the amount (7 bits, 127 for any amount
    beyond the element) and whether one more step right follows (that of a rounding shift,
    whose amount is then one less).

    An amount by vector is each element's of ``b`` (the 64-bit element of its lane for
    ``wide``; the wide forms are never reversed, so ``b`` is Zm): its low byte and whether the
    bytes above it extend it give its size. A halving operation shifts right by the extra step
    alone; the other non-shift operations do not shift.
    """
    chunk_bytes = len(b) // 8
    amount_log2 = Signal(range(4))
    m.d.comb += amount_log2.eq(Mux(wide, 3, work_log2))
    amount_sizes = _Sizes(m, amount_log2, chunk_bytes)

    def above(bits, log2, index):
        return bits[index + 1:index + (1 << log2)].all() if 1 << log2 > 1 else Const(1)
    zero_bytes, one_bytes = _zero_bytes(b), _one_bytes(b)
    # At each byte, as if it were the first of its amount's element.
    upper_zero = amount_sizes.per_size("amount_upper_zero", chunk_bytes, lambda log2: Cat(
        above(zero_bytes, log2, index) for index in range(chunk_bytes)))
    upper_ones = amount_sizes.per_size("amount_upper_ones", chunk_bytes, lambda log2: Cat(
        above(one_bytes, log2, index) for index in range(chunk_bytes)))
    amount_sign = amount_sizes.per_size("amount_sign", chunk_bytes, lambda log2: Cat(
        b[8 * min(index + (1 << log2), chunk_bytes) - 1] for index in range(chunk_bytes)))
    immediate_right = immediate_shift[7]
    immediate_amount = Mux(immediate_right, ~immediate_shift[:7], immediate_shift[:7])
    candidates = []
    for index in range(chunk_bytes):
        low = _byte(b, index)
        negative = Signal(name=f"amount_negative_{index}")
        m.d.comb += negative.eq(control.b_signed & amount_sign[index])
        # Beyond ±127 (or -128, whose magnitude less one is 127 too): the bytes above do not
        # extend the low byte, or its top bit is not theirs
        too_far = (~Mux(negative, upper_ones[index], upper_zero[index])
                   | (low[7] ^ negative))
        vector_amount = Mux(too_far, 127, Mux(negative, ~low[:7], low[:7]))
        candidate = Signal(9, name=f"shift_{index}")
        m.d.comb += candidate.eq(Mux(
            immediate, Cat(immediate_amount, immediate_right, immediate_right),
            Cat(vector_amount, negative | control.right, negative)))
        candidates.append(candidate)
    element_shifts = amount_sizes.from_first("element_shifts", candidates)
    kind = control.result
    shift_right, extra = Signal(chunk_bytes), Signal(chunk_bytes)
    amounts = []
    for index, element_shift in enumerate(element_shifts):
        amount = Signal(7, name=f"amount_{index}")
        m.d.comb += [amount.eq(Mux(kind.shift, element_shift[:7], 0)),
                     shift_right[index].eq(Mux(kind.shift, element_shift[7], kind.halve)),
                     extra[index].eq(Mux(kind.shift, element_shift[8], kind.halve))]
        amounts.append(amount)
    return shift_right, amounts, extra


def _edges(work: _Sizes, stage: int, right: bool, edge_bytes: Value) -> Value:
    """One bit per byte: a step of ``2^stage`` bits (right or left) takes some bit of the byte
    from beyond its element (for steps under a byte, from beyond the byte, at an element's
    ``edge_bytes``)."""
    if stage < 3:
        return edge_bytes
    step = 1 << (stage - 3)
    count = len(edge_bytes)
    return work.per_size(f"{'right' if right else 'left'}_edges_{stage}", count, lambda log2: Cat(
        Const((index % (1 << log2) + step >= 1 << log2) if right
              else (index % (1 << log2) < step))
        for index in range(count)))


def _shift_stage(m: Module, name: str, value: Value, step: int, right: bool, selected: Value,
                 edges: Value, cleared: Value) -> Signal:
    """One step of the shifter: the bytes ``selected`` move their bits ``step`` places right
    (toward bit 0) or left within their elements, taking 0 from beyond an element (at the bytes
    of ``edges``, :func:`_edges`); the bytes ``cleared`` become 0."""
    count = len(value) // 8
    take_inside = Signal(count, name=f"{name}_take_inside")
    take_at_edges = Signal(count, name=f"{name}_take_at_edges")
    keep = Signal(count, name=f"{name}_keep")
    m.d.comb += [take_inside.eq(selected & ~cleared),
                 take_at_edges.eq(selected & ~edges & ~cleared),
                 keep.eq(~selected & ~cleared)]
    take_bits = []
    for bit in range(len(value)):
        index, place = divmod(bit, 8)
        stays_in_byte = (place + step < 8) if right else (place >= step)
        take_bits.append((take_inside if step < 8 and stays_in_byte else take_at_edges)[index])
    moved = (value >> step) if right else (value << step)[:len(value)]
    shifted = Signal(len(value), name=name)
    m.d.comb += shifted.eq(moved & Cat(take_bits) | value & _bytewise(keep))
    return shifted


def _counted(a: Value, cls: Value, a_sign: Value, starts: Value) -> Value:
    """The bits whose leading zeros CLZ counts (``a``), or, for ``cls``, those CLS counts: the
    bits below the sign XORed with it, over a 1 (so at most ``n - 1``)."""
    bits = []
    for bit in range(len(a)):
        index = bit // 8
        below = a[bit - 1] ^ a_sign[index] if bit else Const(1)
        if bit % 8 == 0:
            below = Mux(starts[index], 1, below)
        bits.append(Mux(cls, below, a[bit]))
    return Cat(bits)


def _leading_zero_levels(m: Module, value: Value) -> list[list[Value]]:
    """The leading zeros of every element of ``value`` at every element size: ``[log2][e]`` for
    element ``e`` of ``2^log2`` bytes, built up from the bytes' counts."""
    levels = [[_leading_zeros(m, _byte(value, index), f"lz8_{index}")
               for index in range(len(value) // 8)]]
    for log2 in ELEMENT_SIZES[1:]:
        level = []
        for index in range(len(levels[-1]) // 2):
            low, high = levels[-1][2 * index], levels[-1][2 * index + 1]
            count = Signal(len(high) + 1, name=f"lz{8 << log2}_{index}")
            # A count of a half is at most half, its top bit set only for an all-zero half.
            m.d.comb += count.eq(Mux(high[-1], Cat(low[:-1], ~low[-1], low[-1]), high))
            level.append(count)
        levels.append(level)
    return levels


def _leading_zeros(m: Module, value: Value, name: str) -> Value:
    """The number of leading zeros of ``value`` (``len(value)`` a power of two), as a tree of
    halves: ``log2(len) + 1`` bits (each level a signal, so slicing it repeats no logic)."""
    if len(value) == 1:
        return ~value[0]
    half = len(value) // 2
    high = _leading_zeros(m, value[half:], f"{name}h")
    low = _leading_zeros(m, value[:half], f"{name}l")
    count = Signal(len(high) + 1, name=name)
    m.d.comb += count.eq(Mux(high[-1], Cat(low[:-1], ~low[-1], low[-1]), high))
    return count


def _population_levels(m: Module, value: Value) -> list[list[Value]]:
    """The set bits of every element of ``value`` at every element size (``[log2][e]``), as
    sums of the bytes' counts."""
    levels = [[_population(_byte(value, index)) for index in range(len(value) // 8)]]
    for log2 in ELEMENT_SIZES[1:]:
        level = []
        for index in range(len(levels[-1]) // 2):
            count = Signal(4 + log2, name=f"population{8 << log2}_{index}")
            m.d.comb += count.eq(levels[-1][2 * index] + levels[-1][2 * index + 1])
            level.append(count)
        levels.append(level)
    return levels


def _population(value: Value) -> Value:
    """The number of set bits of ``value``, as a tree of adders."""
    if len(value) == 1:
        return value
    half = len(value) // 2
    return _population(value[:half]) + _population(value[half:])


def _at_least(m: Module, count: Value, amount: Value, name: str) -> Signal:
    """``count >= amount``, as a signal."""
    result = Signal(name=name)
    m.d.comb += result.eq(count >= amount)
    return result


def _count_byte(m: Module, kind, leading_zeros: Value, population: Value, zero: Value,
                name: str) -> Signal:
    """The first byte of an element's CLZ/CLS (``leading_zeros``), CNT (``population``) or
    CNOT (``zero``) result."""
    byte = Signal(8, name=name)
    m.d.comb += byte.eq(Mux(kind.count, leading_zeros, Mux(kind.cnt, population, zero)))
    return byte


def _narrow_overflow(m: Module, work: _Sizes, control, total: Value) -> Signal:
    """Per byte, whether its element of ``total`` (a narrowing operation's source element)
    overflows the saturated half: its upper half and the lower half's top bit are not all
    equal (signed), or its upper half is not 0 (unsigned)."""
    count = len(total) // 8
    zero_bytes, one_bytes = _zero_bytes(total), _one_bytes(total)

    def of_size(log2):
        if log2 == 0:
            return Const(0, count)
        size, half = 1 << log2, 1 << (log2 - 1)
        bits = []
        for element in range(count // size):
            base = element * size
            upper_zero = zero_bytes[base + half:base + size].all()
            upper_ones = one_bytes[base + half:base + size].all()
            half_top = total[8 * (base + half) - 1]
            overflow = Signal(name=f"narrow{8 << log2}_overflow_{element}")
            m.d.comb += overflow.eq(
                control.sat_s & ~(upper_zero & ~half_top | upper_ones & half_top)
                | control.sat_u & ~upper_zero)
            bits += [overflow] * size
        return Cat(bits)
    return work.per_size("narrow_overflow", count, of_size)
