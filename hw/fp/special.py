"""The special-case rules of a floating-point sum and its final rounding, shared by the fused units.

``FPMulAdd``, ``FPDot``, ``FPAdd`` and ``FPAdd_BF16`` (Arm ARM J1.3.3) all end with the same
decision on two summands — an addend and a product, two products, or two operands — before any
arithmetic is looked at. With the default NaN forced, it is, highest priority first:

1. a NaN summand (for a product: a NaN factor or infinity × zero), or infinities of opposite
   signs, gives the default NaN;
2. an infinite summand gives an infinity of its sign;
3. two zeros of the same sign give that zero;
4. otherwise the numeric sum is rounded (an exact zero sum is then −0 only when rounding
   towards −infinity, which the caller applies).
"""

from __future__ import annotations

from amaranth import Mux, Signal

from zatile.hw.fp.format import ResultClass, RoundingMode

__all__ = ["round_sum", "sum_special_case"]


def sum_special_case(m, augend, addend) -> tuple[Signal, Signal]:
    """Drive the class and sign of ``augend + addend`` if it is a special case.

    Parameters
    ----------
    m : Module
        Module the combinational logic is added to.
    augend, addend : View
        Anything with ``sign``, ``zero``, ``infinity`` and ``nan`` fields (an unpacked operand or
        a product; a product's ``nan`` already includes infinity × zero).

    Returns
    -------
    (Signal(ResultClass), Signal(1))
        :attr:`ResultClass.NUMBER` when the numeric sum decides the result, and the sign of the
        special result otherwise.
    """
    result_class = Signal(ResultClass)
    sign = Signal()
    opposite_infinities = augend.infinity & addend.infinity & (augend.sign != addend.sign)
    with m.If(augend.nan | addend.nan | opposite_infinities):
        m.d.comb += result_class.eq(ResultClass.NAN)
    with m.Elif(augend.infinity | addend.infinity):
        m.d.comb += [result_class.eq(ResultClass.INFINITY),
                     sign.eq(Mux(augend.infinity, augend.sign, addend.sign))]
    with m.Elif(augend.zero & addend.zero & (augend.sign == addend.sign)):
        m.d.comb += [result_class.eq(ResultClass.ZERO), sign.eq(augend.sign)]
    with m.Else():
        m.d.comb += result_class.eq(ResultClass.NUMBER)
    return result_class, sign


def round_sum(m, round_, normalized, special_class, special_sign, rounding, flush):
    """Drive an :class:`~hw.fp.round.FpRound` from a normalized sum and its special case.

    A special case wins; otherwise an exact zero is −0 only when rounding towards −infinity
    (+0 when rounding to odd, as ``FPAdd_BF16`` gives).
    """
    exact_zero_sign = rounding == RoundingMode.TOWARD_MINUS_INFINITY
    is_special = special_class != ResultClass.NUMBER
    with m.If(is_special):
        m.d.comb += round_.value.result_class.eq(special_class)
    with m.Elif(normalized.zero):
        m.d.comb += round_.value.result_class.eq(ResultClass.ZERO)
    with m.Else():
        m.d.comb += round_.value.result_class.eq(ResultClass.NUMBER)
    m.d.comb += [
        round_.value.sign.eq(Mux(is_special, special_sign,
                                 Mux(normalized.zero, exact_zero_sign, normalized.sign))),
        round_.value.exponent.eq(normalized.exponent),
        round_.value.significand.eq(normalized.significand),
        round_.value.tiny.eq(normalized.tiny),
        round_.rounding.eq(rounding),
        round_.flush.eq(flush),
    ]
