"""Normalize a sum: count leading zeros and shift, stopping at the format's denormal scale."""

from __future__ import annotations

from amaranth import Module, Mux, Signal, signed
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from zatile.hw._common import CheckedComponent
from zatile.hw.barrel import barrel_shift

from zatile.hw.fp.align_add import SumLayout
from zatile.hw.fp.count_zeros import leading_zeros, trailing_zeros

__all__ = ["FpNormalize", "NormalizedLayout"]


def NormalizedLayout(width: int, exponent_bits: int) -> data.StructLayout:
    """A normalized sum, ready for :class:`~hw.fp.round.FpRound`.

    ``significand`` has its top bit set and ``exponent`` is that bit's weight, unless the value
    is below the normal range (``tiny``): then ``exponent`` is the format's minimum exponent and
    the significand is scaled to it (denormalized, bit 0 still sticky). ``zero`` marks an exact
    zero (sign, exponent and significand are then meaningless).
    """
    return data.StructLayout({"sign": 1, "exponent": signed(exponent_bits), "significand": width,
                              "tiny": 1, "zero": 1})


class FpNormalize(CheckedComponent):
    """Shift a sum so that its leading one is the top bit, or to the denormal scale (combinational).

    Parameters
    ----------
    width : int
        Window width of the sum.
    exponent_bits : int
        Width of the signed exponents.
    min_exponent : int or None
        The output format's minimum normal exponent: no result is scaled below it, and a value
        whose leading one weighs less is ``tiny`` (flushed to zero under FZ, before rounding).
        ``None`` for a unit shared by several output formats: the ``min_exponent`` input gives
        it.

    Attributes
    ----------
    sum : Signal(SumLayout(width, exponent_bits)), in
    min_exponent : Signal(signed(exponent_bits)), in
        Only when the parameter ``min_exponent`` is ``None``.
    normalized : Signal(NormalizedLayout(width, exponent_bits)), out

    Raises
    ------
    ValueError
        If ``width`` or ``exponent_bits`` is out of range, or ``min_exponent`` does not fit.
    """

    @staticmethod
    def check_arguments(*, width: int, exponent_bits: int, min_exponent: int | None) -> None:
        if not isinstance(width, int) or width < 2:
            raise ValueError(
                f"width must be an integer of at least 2, not {width!r}")
        if not isinstance(exponent_bits, int) or exponent_bits < 2:
            raise ValueError(f"exponent_bits must be an integer of at least 2, "
                             f"not {exponent_bits!r}")
        if min_exponent is not None and (
                not isinstance(min_exponent, int)
                or not -2 ** (exponent_bits - 1) <= min_exponent < 2 ** (exponent_bits - 1)):
            raise ValueError(f"min_exponent must be None or fit a signed {exponent_bits}-bit "
                             f"exponent, not {min_exponent!r}")

    def __init__(self, *, width: int, exponent_bits: int, min_exponent: int | None):
        self._width = width
        self._exponent_bits = exponent_bits
        self._min_exponent = min_exponent
        ports = {"sum": In(SumLayout(width, exponent_bits)),
                 "normalized": Out(NormalizedLayout(width, exponent_bits))}
        if min_exponent is None:
            ports["min_exponent"] = In(signed(exponent_bits))
        super().__init__(ports)

    @property
    def width(self) -> int:
        return self._width

    def elaborate(self, platform):
        m = Module()
        width = self._width
        min_exponent = self.min_exponent if self._min_exponent is None else self._min_exponent
        exponent = self.sum.exponent

        leading = Signal(range(width + 1))
        m.d.comb += leading.eq(leading_zeros(m, self.sum.magnitude))
        leading_one_exponent = Signal(signed(self._exponent_bits + 1))
        m.d.comb += leading_one_exponent.eq(exponent - leading)
        tiny = leading_one_exponent < min_exponent

        # Normal: bring the leading one to the top. Tiny: put the weight min_exponent on the top
        # bit, a left shift short of the leading one, or a right shift that folds into bit 0.
        # One shifter does both: a right shift is a left shift of the bit-reversed magnitude.
        shift = Signal(range(width + 1))
        right = Signal()
        with m.If(~tiny):
            m.d.comb += shift.eq(leading)
        with m.Elif(exponent >= min_exponent):
            m.d.comb += shift.eq(exponent - min_exponent)
        with m.Elif(exponent < min_exponent - width):
            m.d.comb += [shift.eq(width), right.eq(1)]
        with m.Else():
            m.d.comb += [shift.eq(min_exponent - exponent), right.eq(1)]

        magnitude = self.sum.magnitude
        shifted = barrel_shift(m, Mux(right, magnitude[::-1], magnitude), shift, "left",
                               "normalize")
        # The right shift's lost bits are its sticky bit.
        lost = right & (trailing_zeros(m, magnitude) < shift)
        m.d.comb += [
            self.normalized.sign.eq(self.sum.sign),
            self.normalized.exponent.eq(Mux(tiny, min_exponent, leading_one_exponent)),
            self.normalized.significand.eq(Mux(right, shifted[::-1], shifted) | lost),
            self.normalized.tiny.eq(tiny),
            self.normalized.zero.eq(leading == width),
        ]
        return m
