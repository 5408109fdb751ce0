"""BFloat16 dot-add with standard BFloat16 behaviours: ``BFDotAdd`` (BFMOPA)."""

from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from zatile.hw._common import pipeline_advance

from zatile.hw.fp.align_add import FpAlignAdd, SumLayout, assign_term
from zatile.hw.fp.dot_add16 import DotAddLayout
from zatile.hw.fp.format import BF16, FP32, ResultClass, RoundingMode
from zatile.hw.fp.multiply import FpMultiply
from zatile.hw.fp.normalize import FpNormalize, NormalizedLayout
from zatile.hw.fp.round import FpRound
from zatile.hw.fp.special import round_sum, sum_special_case
from zatile.hw.fp.unpack import FpUnpack

__all__ = ["BfDotAdd"]

_EXPONENT_BITS = FP32.exponent_bits + 4


class BfDotAdd(wiring.Component):
    """Pipelined ``BFDotAdd`` without FEAT_EBF16: three single-precision roundings to odd.

    ``prod = FPAdd_BF16(BFMulH(a0, b0), BFMulH(a1, b1)); result = FPAdd_BF16(addend, prod)``
    (docs/isa.md, "Widening outer products"). Every step flushes denormal inputs and outputs, rounds to odd with
    overflow to infinity, and gives the default NaN; an exact zero sum is +0. FPCR plays no
    part and there are no exception flags. MOPS negation and the +0 of inactive elements are
    the caller's.

    Stages (one register after each; ``latency`` = 4)::

        m_  unpack the four BFloat16 values, two exact 8 × 8-bit products, each rounded to a
            single-precision product (exact unless it overflows or is tiny)
        p_  unpack the products, FPAdd_BF16 special cases, align, add and normalize
        a_  round the product sum to odd, unpack it and the addend, special cases, align and add
        o   normalize, round to odd and pack

    Attributes
    ----------
    i : In(stream.Signature(DotAddLayout(with_fpcr=False)))
        BFloat16 factors, single-precision addend.
    o : Out(stream.Signature(32))
        Results in order, ``latency`` cycles after acceptance.
    """

    latency = 4

    def __init__(self):
        super().__init__({
            "i": In(stream.Signature(DotAddLayout(with_fpcr=False))),
            "o": Out(stream.Signature(32)),
        })

    def elaborate(self, platform):
        m = Module()
        advance = pipeline_advance(m, self.i, self.o, ["m", "p", "a"])

        # ---- m: BFMulH twice
        operation = self.i.payload
        product_width = 2 * BF16.precision
        m_products = [Signal(32, name=f"m_product{index}") for index in range(2)]
        m_addend = Signal(32)
        for index in range(2):
            unpack_multiplicand = FpUnpack(BF16)
            unpack_multiplier = FpUnpack(BF16)
            multiply = FpMultiply(BF16)
            normalize = FpNormalize(width=product_width, exponent_bits=_EXPONENT_BITS,
                                    min_exponent=FP32.min_exponent)
            round_ = FpRound(FP32, width=product_width, exponent_bits=_EXPONENT_BITS)
            m.submodules[f"unpack_multiplicand{index}"] = unpack_multiplicand
            m.submodules[f"unpack_multiplier{index}"] = unpack_multiplier
            m.submodules[f"multiply{index}"] = multiply
            m.submodules[f"normalize_product{index}"] = normalize
            m.submodules[f"round_product{index}"] = round_
            product = multiply.product
            m.d.comb += [
                unpack_multiplicand.bits.eq(operation.multiplicands[index]),
                unpack_multiplier.bits.eq(operation.multipliers[index]),
                unpack_multiplicand.flush.eq(1),
                unpack_multiplier.flush.eq(1),
                multiply.multiplicand.eq(unpack_multiplicand.operand),
                multiply.multiplier.eq(unpack_multiplier.operand),
                normalize.sum.sign.eq(product.sign),
                normalize.sum.exponent.eq(product.exponent),
                normalize.sum.magnitude.eq(product.significand),
                round_.value.sign.eq(product.sign),
                round_.value.exponent.eq(normalize.normalized.exponent),
                round_.value.significand.eq(normalize.normalized.significand),
                round_.value.tiny.eq(normalize.normalized.tiny),
                round_.rounding.eq(RoundingMode.TO_ODD),
                round_.flush.eq(1),
            ]
            with m.If(product.nan):
                m.d.comb += round_.value.result_class.eq(ResultClass.NAN)
            with m.Elif(product.infinity):
                m.d.comb += round_.value.result_class.eq(ResultClass.INFINITY)
            with m.Elif(product.zero):
                m.d.comb += round_.value.result_class.eq(ResultClass.ZERO)
            with m.Else():
                m.d.comb += round_.value.result_class.eq(ResultClass.NUMBER)
            with m.If(advance):
                m.d.sync += m_products[index].eq(round_.bits)
        with m.If(advance):
            m.d.sync += m_addend.eq(operation.addend)

        # ---- p: FPAdd_BF16 of the products, up to normalization
        product_sum_class, product_sum_sign, add_products = self._align_add(
            m, "products", *m_products)
        m.submodules.normalize_products = normalize_products = FpNormalize(
            width=add_products.window_width, exponent_bits=_EXPONENT_BITS,
            min_exponent=FP32.min_exponent)
        m.d.comb += normalize_products.sum.eq(add_products.sum)
        p_sum = Signal(NormalizedLayout(add_products.window_width, _EXPONENT_BITS))
        p_special_class = Signal(ResultClass)
        p_special_sign = Signal()
        p_addend = Signal(32)
        with m.If(advance):
            m.d.sync += [p_sum.eq(normalize_products.normalized),
                         p_special_class.eq(product_sum_class),
                         p_special_sign.eq(product_sum_sign), p_addend.eq(m_addend)]

        # ---- a: round the product sum, then align and add it to the addend
        m.submodules.round_products = round_products = FpRound(
            FP32, width=add_products.window_width, exponent_bits=_EXPONENT_BITS)
        round_sum(m, round_products, p_sum, p_special_class, p_special_sign,
                  RoundingMode.TO_ODD, 1)
        special_class, special_sign, add_addend = self._align_add(m, "addend", p_addend,
                                                                  round_products.bits)
        a_sum = Signal(SumLayout(add_addend.window_width, _EXPONENT_BITS))
        a_special_class = Signal(ResultClass)
        a_special_sign = Signal()
        with m.If(advance):
            m.d.sync += [a_sum.eq(add_addend.sum), a_special_class.eq(special_class),
                         a_special_sign.eq(special_sign)]

        # ---- o: normalize, round to odd, pack
        m.submodules.normalize = normalize = FpNormalize(
            width=add_addend.window_width, exponent_bits=_EXPONENT_BITS,
            min_exponent=FP32.min_exponent)
        m.submodules.round = round_ = FpRound(FP32, width=add_addend.window_width,
                                              exponent_bits=_EXPONENT_BITS)
        m.d.comb += normalize.sum.eq(a_sum)
        round_sum(m, round_, normalize.normalized, a_special_class, a_special_sign,
                  RoundingMode.TO_ODD, 1)
        with m.If(advance):
            m.d.sync += self.o.payload.eq(round_.bits)
        return m

    @staticmethod
    def _align_add(m, name, augend_bits, addend_bits):
        """Unpack two singles with flushing, and align and add them as ``FPAdd_BF16`` does.

        Returns the special case (class, sign) and the :class:`FpAlignAdd`.
        """
        unpack_augend = FpUnpack(FP32)
        unpack_addend = FpUnpack(FP32)
        align_add = FpAlignAdd(augend_width=FP32.precision, addend_width=FP32.precision,
                               exponent_bits=_EXPONENT_BITS, guard_bits=3, headroom_bits=2,
                               order_by_exponent=True)
        m.submodules[f"unpack_{name}_augend"] = unpack_augend
        m.submodules[f"unpack_{name}_addend"] = unpack_addend
        m.submodules[f"add_{name}"] = align_add
        m.d.comb += [unpack_augend.bits.eq(augend_bits), unpack_augend.flush.eq(1),
                     unpack_addend.bits.eq(addend_bits), unpack_addend.flush.eq(1),
                     *assign_term(align_add.augend, unpack_augend.operand),
                     *assign_term(align_add.addend, unpack_addend.operand)]
        special_class, special_sign = sum_special_case(m, unpack_augend.operand,
                                                       unpack_addend.operand)
        return special_class, special_sign, align_add
