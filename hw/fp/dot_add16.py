"""Widening half-precision dot-add: ``FPDotAdd_ZA`` (FMOPA widening, FP16 → FP32)."""

from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from zatile.hw._common import pipeline_advance

from zatile.hw.fp.align_add import FpAlignAdd, SumLayout, TermLayout, assign_term
from zatile.hw.fp.format import FP16, FP32, ResultClass, RoundingMode
from zatile.hw.fp.multiply import FpMultiply
from zatile.hw.fp.normalize import FpNormalize, NormalizedLayout
from zatile.hw.fp.round import FpRound
from zatile.hw.fp.special import round_sum, sum_special_case
from zatile.hw.fp.unpack import FpUnpack

__all__ = ["DotAddLayout", "FpDotAdd16"]

# Internal exponents: fp32's range, products of halves and window offsets fit with room to spare.
_EXPONENT_BITS = FP32.exponent_bits + 4


def DotAddLayout(with_fpcr: bool) -> data.StructLayout:
    """``addend + multiplicands[0]·multipliers[0] + multiplicands[1]·multipliers[1]``.

    The addend is single precision, the factors are 16-bit patterns. With ``with_fpcr`` the
    layout also carries the rounding mode, ``flush`` (FPCR.FZ, for single precision) and
    ``flush_half`` (FPCR.FZ16, for the half-precision inputs).
    """
    fields = {
        "addend": 32,
        "multiplicands": data.ArrayLayout(16, 2),
        "multipliers": data.ArrayLayout(16, 2),
    }
    if with_fpcr:
        fields.update({"rounding": RoundingMode, "flush": 1, "flush_half": 1})
    return data.StructLayout(fields)


class FpDotAdd16(wiring.Component):
    """Pipelined ``FPAdd(addend, FPDot(a0, a1, b0, b1))`` on half-precision factors.

    The two products are summed exactly and rounded once to single precision (``FPDot``: half
    inputs flushed only under FZ16, the single-precision result flushed under FZ), then added to
    the addend with a second rounding (``FPAdd``, FZ on its inputs and output) — the
    accumulation is not fused (docs/isa.md, "Widening outer products"). Default NaN; no exception flags. MOPS negation
    and the +0 of inactive elements are the caller's.

    Stages (one register after each; ``latency`` = 4)::

        m_  unpack the four halves, two exact 11 × 11-bit products, FPDot special cases
        d_  add the products (the larger-exponent one anchored, 16 guard bits), normalize
            keeping single precision's p + 2 bits (bit 0 sticky)
        a_  round the dot to single precision, unpack it and the addend, FPAdd special cases,
            align and add (3 guard bits)
        o   normalize, round and pack

    Guard bits: a product with a denormal factor has its leading one at bit 10 or above, so
    24-bit rounding needs 16 guard bits below it (:class:`~hw.fp.align_add.FpAlignAdd`); a
    product of two denormals is below every product it could be larger than in exponent.

    Attributes
    ----------
    i : In(stream.Signature(DotAddLayout(with_fpcr=True)))
    o : Out(stream.Signature(32))
        Results in order, ``latency`` cycles after acceptance.
    """

    latency = 4

    def __init__(self):
        super().__init__({
            "i": In(stream.Signature(DotAddLayout(with_fpcr=True))),
            "o": Out(stream.Signature(32)),
        })

    def elaborate(self, platform):
        m = Module()
        advance = pipeline_advance(m, self.i, self.o, ["m", "d", "a"])

        # ---- m: unpack the halves, multiply, FPDot special cases
        operation = self.i.payload
        products = []
        for index in range(2):
            unpack_multiplicand = FpUnpack(FP16)
            unpack_multiplier = FpUnpack(FP16)
            multiply = FpMultiply(FP16)
            m.submodules[f"unpack_multiplicand{index}"] = unpack_multiplicand
            m.submodules[f"unpack_multiplier{index}"] = unpack_multiplier
            m.submodules[f"multiply{index}"] = multiply
            m.d.comb += [
                unpack_multiplicand.bits.eq(operation.multiplicands[index]),
                unpack_multiplier.bits.eq(operation.multipliers[index]),
                unpack_multiplicand.flush.eq(operation.flush_half),
                unpack_multiplier.flush.eq(operation.flush_half),
                multiply.multiplicand.eq(unpack_multiplicand.operand),
                multiply.multiplier.eq(unpack_multiplier.operand),
            ]
            products.append(multiply.product)
        dot_special_class, dot_special_sign = sum_special_case(m, *products)

        product_width = 2 * FP16.precision
        m_products = [Signal(TermLayout(product_width, _EXPONENT_BITS), name=f"m_product{index}")
                      for index in range(2)]
        m_dot_special_class = Signal(ResultClass)
        m_dot_special_sign = Signal()
        m_addend = Signal(32)
        m_rounding = Signal(RoundingMode)
        m_flush = Signal()
        with m.If(advance):
            m.d.sync += [
                *assign_term(m_products[0], products[0]),
                *assign_term(m_products[1], products[1]),
                m_dot_special_class.eq(dot_special_class),
                m_dot_special_sign.eq(dot_special_sign),
                m_addend.eq(operation.addend),
                m_rounding.eq(operation.rounding),
                m_flush.eq(operation.flush),
            ]

        # ---- d: exact sum of the products, normalized
        m.submodules.add_products = add_products = FpAlignAdd(
            augend_width=product_width, addend_width=product_width, exponent_bits=_EXPONENT_BITS,
            guard_bits=16, headroom_bits=2, order_by_exponent=True)
        m.submodules.normalize_dot = normalize_dot = FpNormalize(
            width=add_products.window_width, exponent_bits=_EXPONENT_BITS,
            min_exponent=FP32.min_exponent, kept_bits=FP32.precision + 2)
        m.d.comb += [add_products.augend.eq(m_products[0]),
                     add_products.addend.eq(m_products[1]),
                     normalize_dot.sum.eq(add_products.sum)]
        d_dot = Signal(NormalizedLayout(normalize_dot.kept_bits, _EXPONENT_BITS))
        d_dot_special_class = Signal(ResultClass)
        d_dot_special_sign = Signal()
        d_addend = Signal(32)
        d_rounding = Signal(RoundingMode)
        d_flush = Signal()
        with m.If(advance):
            m.d.sync += [d_dot.eq(normalize_dot.normalized),
                         d_dot_special_class.eq(m_dot_special_class),
                         d_dot_special_sign.eq(m_dot_special_sign),
                         d_addend.eq(m_addend), d_rounding.eq(m_rounding), d_flush.eq(m_flush)]

        # ---- a: round the dot (first rounding), then align and add it to the addend
        m.submodules.round_dot = round_dot = FpRound(
            FP32, width=normalize_dot.kept_bits, exponent_bits=_EXPONENT_BITS)
        round_sum(m, round_dot, d_dot, d_dot_special_class, d_dot_special_sign, d_rounding,
                  d_flush)
        m.submodules.unpack_dot = unpack_dot = FpUnpack(FP32)
        m.submodules.unpack_addend = unpack_addend = FpUnpack(FP32)
        m.d.comb += [unpack_dot.bits.eq(round_dot.bits), unpack_dot.flush.eq(d_flush),
                     unpack_addend.bits.eq(d_addend), unpack_addend.flush.eq(d_flush)]
        dot, addend = unpack_dot.operand, unpack_addend.operand
        special_class, special_sign = sum_special_case(m, addend, dot)
        m.submodules.add_addend = add_addend = FpAlignAdd(
            augend_width=FP32.precision, addend_width=FP32.precision,
            exponent_bits=_EXPONENT_BITS, guard_bits=3, headroom_bits=2, order_by_exponent=True)
        m.d.comb += [*assign_term(add_addend.augend, addend),
                     *assign_term(add_addend.addend, dot)]
        a_sum = Signal(SumLayout(add_addend.window_width, _EXPONENT_BITS))
        a_special_class = Signal(ResultClass)
        a_special_sign = Signal()
        a_rounding = Signal(RoundingMode)
        a_flush = Signal()
        with m.If(advance):
            m.d.sync += [a_sum.eq(add_addend.sum), a_special_class.eq(special_class),
                         a_special_sign.eq(special_sign), a_rounding.eq(d_rounding),
                         a_flush.eq(d_flush)]

        # ---- o: normalize, round (second rounding), pack
        m.submodules.normalize = normalize = FpNormalize(
            width=add_addend.window_width, exponent_bits=_EXPONENT_BITS,
            min_exponent=FP32.min_exponent)
        m.submodules.round = round_ = FpRound(FP32, width=add_addend.window_width,
                                              exponent_bits=_EXPONENT_BITS)
        m.d.comb += normalize.sum.eq(a_sum)
        round_sum(m, round_, normalize.normalized, a_special_class, a_special_sign, a_rounding,
                  a_flush)
        with m.If(advance):
            m.d.sync += self.o.payload.eq(round_.bits)
        return m
