"""Unpack and classify an IEEE bit pattern (``FPUnpack`` with optional flush-to-zero)."""

from __future__ import annotations

from amaranth import Module, Mux, signed
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from zatile.hw._common import CheckedComponent

from zatile.hw.fp.format import FpFormat

__all__ = ["FpUnpack", "UnpackedLayout"]


def UnpackedLayout(fmt: FpFormat) -> data.StructLayout:
    """An operand as a term plus its class.

    ``significand`` has ``fmt.precision`` bits with the hidden bit on top (0 for denormals and
    zeros); ``exponent`` is the unbiased weight of that top bit (``fmt.min_exponent`` for
    denormals and zeros, don't-care for infinities and NaNs). At most one of ``zero``,
    ``denormal``, ``infinity`` and ``nan`` is set.
    """
    return data.StructLayout({
        "sign": 1,
        "exponent": signed(fmt.exponent_bits + 1),
        "significand": fmt.precision,
        "zero": 1,
        "denormal": 1,
        "infinity": 1,
        "nan": 1,
    })


class FpUnpack(CheckedComponent):
    """Split a bit pattern into sign, exponent and significand and classify it (combinational).

    Parameters
    ----------
    fmt : FpFormat

    Attributes
    ----------
    bits : Signal(fmt.width), in
        The IEEE bit pattern.
    flush : Signal(1), in
        Flush-to-zero (FPCR.FZ, FZ16, or always for BFloat16 arithmetic): a denormal reads as a
        zero of the same sign.
    operand : Signal(UnpackedLayout(fmt)), out

    Raises
    ------
    TypeError
        If ``fmt`` is not an :class:`FpFormat`.
    """

    @staticmethod
    def check_arguments(fmt: FpFormat) -> None:
        if not isinstance(fmt, FpFormat):
            raise TypeError(f"fmt must be an FpFormat, not {fmt!r}")

    def __init__(self, fmt: FpFormat):
        self._fmt = fmt
        super().__init__({
            "bits": In(fmt.width),
            "flush": In(1),
            "operand": Out(UnpackedLayout(fmt)),
        })

    @property
    def fmt(self) -> FpFormat:
        return self._fmt

    def elaborate(self, platform):
        m = Module()
        fmt = self._fmt
        fraction = self.bits[:fmt.fraction_bits]
        biased_exponent = self.bits[fmt.fraction_bits:fmt.width - 1]
        exponent_is_zero = biased_exponent == 0
        exponent_is_ones = biased_exponent.all()
        fraction_is_zero = fraction == 0
        flushed = exponent_is_zero & self.flush

        m.d.comb += [
            self.operand.sign.eq(self.bits[fmt.width - 1]),
            # A denormal has the scale of the smallest normal: biased exponent 1.
            self.operand.exponent.eq(Mux(exponent_is_zero, 1, biased_exponent) - fmt.bias),
            self.operand.significand.eq(
                Mux(flushed, 0, fraction | (~exponent_is_zero) << fmt.fraction_bits)),
            self.operand.zero.eq(exponent_is_zero & (fraction_is_zero | self.flush)),
            self.operand.denormal.eq(exponent_is_zero & ~fraction_is_zero & ~self.flush),
            self.operand.infinity.eq(exponent_is_ones & fraction_is_zero),
            self.operand.nan.eq(exponent_is_ones & ~fraction_is_zero),
        ]
        return m
