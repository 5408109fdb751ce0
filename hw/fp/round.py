"""Round a normalized value to a format and pack it (``FPRoundBase`` / ``BFRound``)."""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from zatile.hw._common import CheckedComponent

from zatile.hw.fp.format import FpFormat, ResultClass, RoundingMode

__all__ = ["FpRound", "RoundInputLayout"]


def RoundInputLayout(width: int, exponent_bits: int) -> data.StructLayout:
    """A value to round: a class, and for :attr:`ResultClass.NUMBER` a normalized magnitude.

    As :func:`~hw.fp.normalize.NormalizedLayout` (without ``zero``, which the class carries),
    so a normalized sum connects field by field. ``sign`` also applies to zeros and infinities.
    """
    return data.StructLayout({"result_class": ResultClass, "sign": 1,
                              "exponent": signed(exponent_bits), "significand": width,
                              "tiny": 1})


class FpRound(CheckedComponent):
    """Round, handle overflow, underflow and flush-to-zero, and pack (combinational).

    Rounding follows ``FPRoundBase`` with FPCR.AH = 0: flush-to-zero acts on the exact value
    (before rounding), so a value just below the normal range is flushed even if it would round
    up to the smallest normal; an overflow gives infinity or the largest normal as the mode
    directs; :attr:`RoundingMode.TO_ODD` is ``BFRound``'s (sticky last bit, overflow to infinity).
    NaN results are the default NaN.

    Parameters
    ----------
    fmt : FpFormat
        Output format.
    width : int
        Significand width of the input. Bits below the format's precision are the round bit and
        sticky bits; bit 0 may itself be a sticky bit.
    exponent_bits : int
        Width of the input's signed exponent.

    Attributes
    ----------
    value : Signal(RoundInputLayout(width, exponent_bits)), in
        For a number, ``exponent`` >= ``fmt.min_exponent`` (equal if the top bit is clear).
    rounding : Signal(RoundingMode), in
    flush : Signal(1), in
        Flush tiny results to zero (FPCR.FZ; always for BFloat16 arithmetic).
    bits : Signal(fmt.width), out

    Raises
    ------
    TypeError
        If ``fmt`` is not an :class:`FpFormat`.
    ValueError
        If ``width`` or ``exponent_bits`` is out of range.
    """

    @staticmethod
    def check_arguments(fmt: FpFormat, *, width: int, exponent_bits: int) -> None:
        if not isinstance(fmt, FpFormat):
            raise TypeError(f"fmt must be an FpFormat, not {fmt!r}")
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"width must be a positive integer, not {width!r}")
        if not isinstance(exponent_bits, int) or exponent_bits < fmt.exponent_bits + 1:
            raise ValueError(
                f"exponent_bits must be an integer of at least {fmt.exponent_bits + 1} for "
                f"{fmt.name}, not {exponent_bits!r}")

    def __init__(self, fmt: FpFormat, *, width: int, exponent_bits: int):
        self._fmt = fmt
        self._width = width
        super().__init__({
            "value": In(RoundInputLayout(width, exponent_bits)),
            "rounding": In(RoundingMode),
            "flush": In(1),
            "bits": Out(fmt.width),
        })

    @property
    def fmt(self) -> FpFormat:
        return self._fmt

    def elaborate(self, platform):
        m = Module()
        fmt, width = self._fmt, self._width
        precision = fmt.precision
        value = self.value

        if width >= precision + 2:
            kept = value.significand[width - precision:]
            round_bit = value.significand[width - precision - 1]
            sticky = value.significand[:width - precision - 1].any()
        elif width == precision + 1:
            kept = value.significand[1:]
            round_bit = value.significand[0]
            sticky = Const(0)
        else:
            kept = Cat(Const(0, precision - width), value.significand)
            round_bit = sticky = Const(0)
        inexact = round_bit | sticky

        round_up = Signal()
        overflow_to_infinity = Signal()
        odd = Signal()
        with m.Switch(self.rounding):
            with m.Case(RoundingMode.NEAREST_EVEN):
                m.d.comb += [round_up.eq(round_bit & (sticky | kept[0])),
                             overflow_to_infinity.eq(1)]
            with m.Case(RoundingMode.TOWARD_PLUS_INFINITY):
                m.d.comb += [round_up.eq(inexact & ~value.sign),
                             overflow_to_infinity.eq(~value.sign)]
            with m.Case(RoundingMode.TOWARD_MINUS_INFINITY):
                m.d.comb += [round_up.eq(inexact & value.sign),
                             overflow_to_infinity.eq(value.sign)]
            with m.Case(RoundingMode.TO_ODD):
                m.d.comb += [odd.eq(inexact), overflow_to_infinity.eq(1)]
            # TOWARD_ZERO: truncate, overflow to the largest normal.

        # The exponent field minus one sits above the fraction; adding the rounded significand
        # (hidden bit included) carries into it on its own: denormal to normal, or up a binade.
        exponent_field = Signal(fmt.exponent_bits + 1)
        too_large = value.exponent > fmt.max_exponent
        m.d.comb += exponent_field.eq(Mux(too_large, 0, value.exponent - fmt.min_exponent))
        magnitude = Signal(fmt.exponent_bits + fmt.fraction_bits + 2)
        m.d.comb += magnitude.eq((exponent_field << fmt.fraction_bits) + (kept | odd) + round_up)
        overflow = too_large | (magnitude >= fmt.infinity)
        largest_normal = fmt.infinity - 1

        packed = Signal(fmt.width - 1)
        with m.Switch(value.result_class):
            with m.Case(ResultClass.NAN):
                m.d.comb += packed.eq(fmt.default_nan)
            with m.Case(ResultClass.INFINITY):
                m.d.comb += packed.eq(fmt.infinity)
            with m.Case(ResultClass.ZERO):
                m.d.comb += packed.eq(0)
            with m.Case(ResultClass.NUMBER):
                with m.If(self.flush & value.tiny):
                    m.d.comb += packed.eq(0)
                with m.Elif(overflow):
                    m.d.comb += packed.eq(Mux(overflow_to_infinity, fmt.infinity, largest_normal))
                with m.Else():
                    m.d.comb += packed.eq(magnitude)
        sign = value.sign & (value.result_class != ResultClass.NAN)
        m.d.comb += self.bits.eq(Cat(packed, sign))
        return m
