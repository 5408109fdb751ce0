"""The vector unit's shifter: integer shifts, unary, halving, widening and narrowing operations.

An execution unit of :mod:`zatile.hw.vector` (payloads in :mod:`zatile.hw.vector.common`). It
makes ``vector_bits_per_cycle`` bits of the result per cycle from the held op
(:func:`~zatile.hw.vector.common.chunk_steps`), so its result leaves ``SVL /
vector_bits_per_cycle`` cycles after the op is presented (the cycle after, by default).
docs/isa.md, "Streaming SVE integer arithmetic", states the semantics; the reference model is
the oracle of ``tests/test_hw_vector_shift.py``.

Every element has one funnel shifter, one adder and one leading-zero counter at each element size;
the operation only sets their controls:

* the shifter takes the first operand and a signed amount ``s`` (left when positive, right when
  negative): the ``tsz:imm3`` immediate of the form (``#1``..``#esize`` right, ``#0``.. left,
  ``shift_right``) or the second element (the 64-bit element of its lane for ``wide``),
  unsigned for ASR/LSR/LSL and signed for the SVE2 shifts by vector, clamped to
  ``±(esize + 1)`` beyond which every result is the same. It keeps one bit below the result, so
  a rounding shift adds it back; ASRD (rounding toward zero) shifts the magnitude of a negative
  element and negates the result. The result is truncated or saturated (signed or unsigned) to
  the element, or to its half for a narrowing operation, which works at the double-width source
  element and writes the even (bottom, odd halves zeroed) or odd (top) half of it;
* the adder makes the halving adds (``(a ± b (+ 1)) >> 1``), the widening operations (the even or
  odd narrow elements of each lane, or the wide first element itself) and ABS/NEG/SQABS/SQNEG
  (``0 - a``);
* CLZ and CLS (the leading zeros of the bits below the sign, XORed with it) share one counter.

A predicated (``Pg``) form writes only its active elements (merging); a narrowing top form only the
odd halves, keeping the even ones of the destination (which the unit does not read).
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import data

from zatile.hw._common import max_bytes
from zatile.hw.decoder import Op
from zatile.hw.vector.common import (ELEMENT_SIZES, VectorExecutionUnit, active_bytes,
                                     chunk_part, chunk_registers, chunk_steps, extend)

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


def _saturate(value: Value, bits: int, sat_s: Value, sat_u: Value) -> Value:
    """The low ``bits`` of a signed ``value``, or ``SatQ`` of it, signed or unsigned."""
    negative = value[-1]
    fits_signed = ~value[bits - 1:].any() | value[bits - 1:].all()
    fits_unsigned = ~value[bits:].any()
    signed_limit = Mux(negative, Const(1 << (bits - 1), bits), Const((1 << (bits - 1)) - 1, bits))
    unsigned_limit = Mux(negative, Const(0, bits), Const((1 << bits) - 1, bits))
    return Mux(sat_s & ~fits_signed, signed_limit,
               Mux(sat_u & ~fits_unsigned, unsigned_limit, value[:bits]))


def _leading_zeros(m: Module, value: Value, name: str) -> Value:
    """The number of leading zeros of ``value`` (``len(value)`` a power of two), as a tree of
    halves: ``log2(len) + 1`` bits (each level a signal, so slicing it repeats no logic)."""
    if len(value) == 1:
        return ~value[0]
    half = len(value) // 2
    high = _leading_zeros(m, value[half:], f"{name}h")
    low = _leading_zeros(m, value[:half], f"{name}l")
    count = Signal(len(high) + 1, name=name)
    # A count of a half is at most half, its top bit set only for an all-zero half.
    m.d.comb += count.eq(Mux(high[-1], Cat(low[:-1], ~low[-1], low[-1]), high))
    return count


def _population(value: Value) -> Value:
    """The number of set bits of ``value``, as a tree of adders."""
    if len(value) == 1:
        return value
    half = len(value) // 2
    return _population(value[:half]) + _population(value[half:])


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

        # ---- per-element results at every (source) element size
        # A narrowing operation works at the double-width source element.
        work_log2 = Signal(range(5))
        m.d.comb += work_log2.eq(esize_log2 + control.narrow)
        # The saturating extracts narrow (SQXTN, ...) are the shifts narrow by an immediate 0.
        by_immediate = Signal()
        m.d.comb += by_immediate.eq(present.shift | control.narrow)
        element_result = Signal(8 * chunk_bytes)
        with m.Switch(work_log2):
            for log2 in ELEMENT_SIZES:
                with m.Case(log2):
                    m.d.comb += element_result.eq(_elements(
                        m, control, log2, chunk_bytes, left, right, second, by_immediate,
                        immediate_shift, flags.wide, flags.top))

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


def _elements(m: Module, control, log2: int, maxb: int, left, right, second, immediate,
              immediate_shift, wide, top) -> Value:
    """The element results (``Cat`` of every element) for source elements of ``2^log2`` bytes.

    Per element: the shift amount, the funnel shifter with its rounding and saturation, the
    adder and the counters (module documentation).
    """
    bits, count = 8 << log2, maxb >> log2
    half = bits // 2
    results = []
    for index in range(count):
        def name(what: str) -> str:
            return f"e{bits}_{index}_{what}"
        a = left[index * bits:(index + 1) * bits]
        b = right[index * bits:(index + 1) * bits]

        # -- the signed shift amount, clamped to ±(bits + 1)
        if bits < 64:
            lane = second[(index * bits) // 64 * 64:][:64]
            b_amount = Mux(wide, extend(lane, Const(0), 66), extend(b, control.b_signed, 66))
        else:
            b_amount = extend(b, control.b_signed, 66)
        b_shift = Signal(signed(66), name=name("b_shift"))
        m.d.comb += b_shift.eq(b_amount)
        clamped = Signal(signed(8), name=name("clamped"))
        m.d.comb += clamped.eq(Mux(b_shift > bits + 1, bits + 1,
                                   Mux(b_shift < -(bits + 1), -(bits + 1), b_shift[:8])))
        amount = Signal(signed(8), name=name("amount"))
        m.d.comb += amount.eq(Mux(immediate, immediate_shift,
                                  Mux(control.right, -clamped, clamped)))

        # -- the funnel shifter: a · 2^(amount + 1), floored, keeps the round bit at bit 0
        a_wide = extend(a, control.a_signed, bits + 1)
        magnitude = control.asrd & a_wide[-1]           # ASRD of a negative element
        operand = Signal(signed(bits + 1), name=name("operand"))
        m.d.comb += operand.eq(Mux(magnitude, -a_wide, a_wide))
        funnel = Signal(signed(2 * bits + 3), name=name("funnel"))
        m.d.comb += funnel.eq(Cat(Const(0, bits + 2), operand).as_signed()
                              >> (bits + 1 - amount)[:8])
        shifted = Signal(signed(2 * bits + 3), name=name("shifted"))
        m.d.comb += shifted.eq(funnel[1:].as_signed() + (funnel[0] & control.round))
        shift_result = Signal(bits, name=name("shift"))
        if bits > 8:
            narrowed = _saturate(shifted, half, control.sat_s, control.sat_u)
            placed = Mux(top, Cat(Const(0, half), narrowed), Cat(narrowed, Const(0, half)))
        else:
            placed = Const(0, bits)
        m.d.comb += shift_result.eq(Mux(
            control.narrow, placed,
            Mux(magnitude, -shifted[:bits], _saturate(shifted, bits, control.sat_s,
                                                      control.sat_u))))

        # -- the adder: halving, widening, 0 - a
        a_full = extend(a, control.a_signed, bits + 2)
        b_full = extend(b, control.b_signed, bits + 2)
        if bits > 8:
            a_half = extend(Mux(top, a[half:], a[:half]), control.a_signed, bits + 2)
            b_half = extend(Mux(top, b[half:], b[:half]), control.b_signed, bits + 2)
        else:
            a_half, b_half = a_full, b_full
        narrow_operands = control.result.widen | control.result.abd
        x = Signal(signed(bits + 2), name=name("x"))
        y = Signal(signed(bits + 2), name=name("y"))
        m.d.comb += [x.eq(Mux(control.result.negate, 0,
                              Mux(narrow_operands & ~control.wide_first, a_half, a_full))),
                     y.eq(Mux(control.result.negate, a_full,
                              Mux(narrow_operands, b_half, b_full)))]
        subtract = control.subtract | (control.abs & a[-1])
        total = Signal(signed(bits + 2), name=name("total"))
        m.d.comb += total.eq(Mux(subtract, x - y, x + y + control.round))
        absolute = Signal(bits, name=name("absolute"))
        m.d.comb += absolute.eq(Mux(total < 0, -total, total)[:bits])

        # -- counters and extensions
        sign = a[-1].replicate(bits - 1)
        counted = Signal(bits, name=name("counted"))
        m.d.comb += counted.eq(Mux(control.cls, Cat(Const(1, 1), a[:-1] ^ sign), a))
        extended = Const(0, bits)
        for width, selected in ((8, control.from8), (16, control.from16),
                                (32, control.from32)):
            if width < bits:
                extended = Mux(selected, extend(a[:width], control.a_signed, bits), extended)

        result = Signal(bits, name=name("result"))
        kind = control.result
        with m.If(kind.shift):
            m.d.comb += result.eq(shift_result)
        with m.Elif(kind.halve):
            m.d.comb += result.eq(total[1:bits + 1])
        with m.Elif(kind.widen):
            m.d.comb += result.eq(total[:bits])
        with m.Elif(kind.abd):
            m.d.comb += result.eq(absolute)
        with m.Elif(kind.negate):
            m.d.comb += result.eq(_saturate(total, bits, control.sat_s, Const(0)))
        with m.Elif(kind.extend):
            m.d.comb += result.eq(extended)
        with m.Elif(kind.count):
            m.d.comb += result.eq(_leading_zeros(m, counted, name("clz")))
        with m.Elif(kind.cnt):
            m.d.comb += result.eq(_population(a))
        with m.Elif(kind.cnot):
            m.d.comb += result.eq(a == 0)
        with m.Elif(kind.invert):
            m.d.comb += result.eq(~a)
        results.append(result)
    return Cat(*results)
