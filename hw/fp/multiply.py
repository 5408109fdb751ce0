"""Exact product of two unpacked operands."""

from __future__ import annotations

from amaranth import Module, signed
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from zatile.hw._common import CheckedComponent

from zatile.hw.fp.format import FpFormat
from zatile.hw.fp.unpack import UnpackedLayout

__all__ = ["FpMultiply", "ProductLayout"]


def ProductLayout(fmt: FpFormat) -> data.StructLayout:
    """An exact product as a term plus its class.

    ``significand`` has ``2 * fmt.precision`` bits and ``exponent`` is the weight of its top bit.
    ``nan`` covers a NaN factor and infinity × zero (both give the default NaN); ``infinity`` and
    ``zero`` are only set when ``nan`` is not.
    """
    return data.StructLayout({
        "sign": 1,
        "exponent": signed(fmt.exponent_bits + 2),
        "significand": 2 * fmt.precision,
        "zero": 1,
        "infinity": 1,
        "nan": 1,
    })


class FpMultiply(CheckedComponent):
    """Multiply two unpacked operands exactly, without rounding (combinational).

    Parameters
    ----------
    fmt : FpFormat
        Format of both factors.

    Attributes
    ----------
    multiplicand, multiplier : Signal(UnpackedLayout(fmt)), in
    product : Signal(ProductLayout(fmt)), out
        Denormal factors are not normalized, so the product's significand may have leading
        zeros beyond the usual one.

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
            "multiplicand": In(UnpackedLayout(fmt)),
            "multiplier": In(UnpackedLayout(fmt)),
            "product": Out(ProductLayout(fmt)),
        })

    @property
    def fmt(self) -> FpFormat:
        return self._fmt

    def elaborate(self, platform):
        m = Module()
        a, b = self.multiplicand, self.multiplier
        nan = a.nan | b.nan | (a.infinity & b.zero) | (a.zero & b.infinity)
        m.d.comb += [
            self.product.sign.eq(a.sign ^ b.sign),
            # Top bits weigh 2**ea and 2**eb, so the product's top bit (one above theirs)
            # weighs 2**(ea+eb+1).
            self.product.exponent.eq(a.exponent + b.exponent + 1),
            self.product.significand.eq(a.significand * b.significand),
            self.product.nan.eq(nan),
            self.product.infinity.eq((a.infinity | b.infinity) & ~nan),
            self.product.zero.eq((a.zero | b.zero) & ~nan),
        ]
        return m
