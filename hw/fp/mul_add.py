"""Fused multiply-add with one rounding: ``FPMulAdd`` with the default NaN (FMOPA .S and .D)."""

from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out

from zatile.hw._common import CheckedComponent, pipeline_advance

from zatile.hw.fp.align_add import FpAlignAdd, SumLayout, TermLayout, assign_term
from zatile.hw.fp.format import FP16, FP32, FP64, FpFormat, ResultClass, RoundingMode
from zatile.hw.fp.multiply import FpMultiply
from zatile.hw.fp.normalize import FpNormalize, NormalizedLayout
from zatile.hw.fp.round import FpRound
from zatile.hw.fp.special import round_sum, sum_special_case
from zatile.hw.fp.unpack import FpUnpack

__all__ = ["FpMulAdd", "MulAddLayout"]


def MulAddLayout(fmt: FpFormat) -> data.StructLayout:
    """One fused multiply-add: ``addend + multiplicand * multiplier`` as bit patterns."""
    return data.StructLayout({
        "addend": fmt.width,
        "multiplicand": fmt.width,
        "multiplier": fmt.width,
        "rounding": RoundingMode,
        "flush": 1,
    })


class FpMulAdd(CheckedComponent):
    """Pipelined fused multiply-add, ``addend + multiplicand * multiplier`` rounded once.

    This is ``FPMulAdd_ZA`` (docs/isa.md, "FMOPA"): the exact product and the addend are summed
    without intermediate rounding; NaN operands and invalid operations (infinity × zero, opposite
    infinities) give the default NaN; an exact zero sum is −0 only when rounding towards
    −infinity (unless both summands are zeros of the same sign); ``flush`` (FPCR.FZ) flushes
    denormal inputs and tiny results. No exception flags are produced. MOPS negation is the
    caller's: flip the multiplicand's sign bit.

    Stages (one register after each; ``latency`` = 4)::

        m_  unpack the three operands, exact significand product, special cases
        a_  align the addend against the product and add (window 3p + 5 bits, sticky-correct)
        n_  count leading zeros and normalize, or denormalize to the minimum exponent, keeping
            the top p + 2 bits (bit 0 sticky)
        o   round (RMode, overflow, FZ) and pack

    The window keeps the addend's ``p + 2`` headroom bits above the product and 3 guard bits
    below it (:class:`~hw.fp.align_add.FpAlignAdd` conditions with ``p`` = precision: a product
    with a normal factor has its leading one at bit ``p - 1`` or above, and a product of two
    denormals is so small that a nonzero addend is always the one on top).

    Parameters
    ----------
    fmt : FpFormat
        :data:`FP16`, :data:`FP32` or :data:`FP64`.

    Attributes
    ----------
    i : In(stream.Signature(MulAddLayout(fmt)))
        One operation per cycle while ``o`` is not stalled.
    o : Out(stream.Signature(fmt.width))
        Results in order, ``latency`` cycles after acceptance.

    Raises
    ------
    ValueError
        If ``fmt`` is not one of the IEEE formats above.
    """

    latency = 4

    @staticmethod
    def check_arguments(fmt: FpFormat) -> None:
        if fmt not in (FP16, FP32, FP64):
            raise ValueError(f"FpMulAdd supports fp16, fp32 and fp64, not {fmt!r}")

    def __init__(self, fmt: FpFormat):
        self._fmt = fmt
        super().__init__({
            "i": In(stream.Signature(MulAddLayout(fmt))),
            "o": Out(stream.Signature(fmt.width)),
        })

    @property
    def fmt(self) -> FpFormat:
        return self._fmt

    def elaborate(self, platform):
        m = Module()
        fmt = self._fmt
        precision = fmt.precision
        exponent_bits = fmt.exponent_bits + 4

        advance = pipeline_advance(m, self.i, self.o, ["m", "a", "n"])

        # ---- m: unpack, multiply, special cases
        operation = self.i.payload
        m.submodules.unpack_addend = unpack_addend = FpUnpack(fmt)
        m.submodules.unpack_multiplicand = unpack_multiplicand = FpUnpack(fmt)
        m.submodules.unpack_multiplier = unpack_multiplier = FpUnpack(fmt)
        for unpack, bits in ((unpack_addend, operation.addend),
                             (unpack_multiplicand, operation.multiplicand),
                             (unpack_multiplier, operation.multiplier)):
            m.d.comb += [unpack.bits.eq(bits), unpack.flush.eq(operation.flush)]
        m.submodules.multiply = multiply = FpMultiply(fmt)
        m.d.comb += [multiply.multiplicand.eq(unpack_multiplicand.operand),
                     multiply.multiplier.eq(unpack_multiplier.operand)]
        addend, product = unpack_addend.operand, multiply.product
        special_class, special_sign = sum_special_case(m, addend, product)

        m_product = Signal(TermLayout(2 * precision, exponent_bits))
        m_addend = Signal(TermLayout(precision, exponent_bits))
        m_special_class = Signal(ResultClass)
        m_special_sign = Signal()
        m_rounding = Signal(RoundingMode)
        m_flush = Signal()
        with m.If(advance):
            m.d.sync += [
                *assign_term(m_product, product),
                *assign_term(m_addend, addend),
                m_special_class.eq(special_class),
                m_special_sign.eq(special_sign),
                m_rounding.eq(operation.rounding),
                m_flush.eq(operation.flush),
            ]

        # ---- a: align and add
        m.submodules.align_add = align_add = FpAlignAdd(
            augend_width=2 * precision, addend_width=precision, exponent_bits=exponent_bits,
            guard_bits=3, headroom_bits=precision + 2)
        m.d.comb += [align_add.augend.eq(m_product), align_add.addend.eq(m_addend)]
        a_sum = Signal(SumLayout(align_add.window_width, exponent_bits))
        a_special_class = Signal(ResultClass)
        a_special_sign = Signal()
        a_rounding = Signal(RoundingMode)
        a_flush = Signal()
        with m.If(advance):
            m.d.sync += [a_sum.eq(align_add.sum), a_special_class.eq(m_special_class),
                         a_special_sign.eq(m_special_sign), a_rounding.eq(m_rounding),
                         a_flush.eq(m_flush)]

        # ---- n: normalize
        m.submodules.normalize = normalize = FpNormalize(
            width=align_add.window_width, exponent_bits=exponent_bits,
            min_exponent=fmt.min_exponent, kept_bits=precision + 2)
        m.d.comb += normalize.sum.eq(a_sum)
        n_value = Signal(NormalizedLayout(normalize.kept_bits, exponent_bits))
        n_special_class = Signal(ResultClass)
        n_special_sign = Signal()
        n_rounding = Signal(RoundingMode)
        n_flush = Signal()
        with m.If(advance):
            m.d.sync += [n_value.eq(normalize.normalized), n_special_class.eq(a_special_class),
                         n_special_sign.eq(a_special_sign), n_rounding.eq(a_rounding),
                         n_flush.eq(a_flush)]

        # ---- o: round and pack
        m.submodules.round = round_ = FpRound(fmt, width=normalize.kept_bits,
                                              exponent_bits=exponent_bits)
        round_sum(m, round_, n_value, n_special_class, n_special_sign, n_rounding, n_flush)
        with m.If(advance):
            m.d.sync += self.o.payload.eq(round_.bits)
        return m

