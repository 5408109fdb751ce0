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
from amaranth.lib import data

from .format import ResultClass, RoundingMode

__all__ = ["SumControlLayout", "round_sum", "sum_special_case"]


class SumControlLayout(data.StructLayout):
    """What travels down a pipeline beside a sum to its rounding: the sum's special case
    (:func:`sum_special_case`) and the rounding controls (mode and flush-to-zero)."""

    def __init__(self):
        super().__init__({"special_class": ResultClass, "special_sign": 1,
                          "rounding": RoundingMode, "flush": 1})


def sum_special_case(m, augend, addend, rounding, flush) -> Signal:
    """The special case of ``augend + addend`` and the controls of its rounding.

    Parameters
    ----------
    m : Module
        Module the combinational logic is added to.
    augend, addend : View
        Anything with ``sign``, ``zero``, ``infinity`` and ``nan`` fields (an unpacked operand or
        a product; a product's ``nan`` already includes infinity × zero).
    rounding : RoundingMode or Value
        The rounding mode the sum will be rounded with.
    flush : Value
        Flush-to-zero of the rounding.

    Returns
    -------
    Signal(SumControlLayout())
        ``special_class`` is :attr:`ResultClass.NUMBER` when the numeric sum decides the result,
        otherwise the class of the special result and ``special_sign`` its sign; ``rounding``
        and ``flush`` are the arguments.
    """
    control = Signal(SumControlLayout())
    result_class, sign = control.special_class, control.special_sign
    m.d.comb += [control.rounding.eq(rounding), control.flush.eq(flush)]
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
    return control


def round_sum(m, round_, normalized, control):
    """Drive an :class:`~hw.fp.round.FpRound` from a normalized sum and its
    :class:`SumControlLayout` ``control``.

    A special case wins; otherwise an exact zero is −0 only when rounding towards −infinity
    (+0 when rounding to odd, as ``FPAdd_BF16`` gives).
    """
    special_class, special_sign = control.special_class, control.special_sign
    exact_zero_sign = control.rounding == RoundingMode.TOWARD_MINUS_INFINITY
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
        round_.rounding.eq(control.rounding),
        round_.flush.eq(control.flush),
    ]
