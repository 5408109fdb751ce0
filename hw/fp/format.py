"""Floating-point formats, rounding modes and result classes shared by the FP units.

Every unit in :mod:`hw.fp` is parameterized by an :class:`FpFormat`, a small frozen descriptor of
an IEEE-style binary format (sign, ``exponent_bits`` biased exponent, ``fraction_bits`` stored
fraction). The four formats the SME outer products use are :data:`FP16`, :data:`BF16`,
:data:`FP32` and :data:`FP64`.

Internally the units pass values around as *terms*: a sign, an unsigned significand of some width
and a signed ``exponent`` that is the weight (power of two) of the significand's **top** bit, so
a term's value is ``(-1)**sign * significand * 2**(exponent - width + 1)``. An unpacked IEEE
operand is a term whose top bit is the hidden bit.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.lib import enum

__all__ = ["BF16", "FP16", "FP32", "FP64", "FpFormat", "ResultClass", "RoundingMode"]


@dataclass(frozen=True)
class FpFormat:
    """An IEEE-style binary floating-point format.

    Parameters
    ----------
    name : str
        Short name used in reprs and generated signal names.
    exponent_bits : int
        Width of the biased exponent field, at least 2.
    fraction_bits : int
        Width of the stored fraction (the leading significand bit is implicit), at least 1.

    Raises
    ------
    ValueError
        If a field width is out of range; the message quotes it.
    """

    name: str
    exponent_bits: int
    fraction_bits: int

    def __post_init__(self):
        if not isinstance(self.exponent_bits, int) or self.exponent_bits < 2:
            raise ValueError(f"exponent_bits must be an integer of at least 2, "
                             f"not {self.exponent_bits!r}")
        if not isinstance(self.fraction_bits, int) or self.fraction_bits < 1:
            raise ValueError(f"fraction_bits must be an integer of at least 1, "
                             f"not {self.fraction_bits!r}")

    @property
    def width(self) -> int:
        """Total encoding width in bits."""
        return 1 + self.exponent_bits + self.fraction_bits

    @property
    def precision(self) -> int:
        """Significand bits including the hidden bit."""
        return self.fraction_bits + 1

    @property
    def bias(self) -> int:
        return 2 ** (self.exponent_bits - 1) - 1

    @property
    def min_exponent(self) -> int:
        """Unbiased exponent of the smallest normal number (also the denormals' scale)."""
        return 1 - self.bias

    @property
    def max_exponent(self) -> int:
        """Unbiased exponent of the largest finite number."""
        return self.bias

    @property
    def infinity(self) -> int:
        """Bit pattern of +infinity."""
        return (2 ** self.exponent_bits - 1) << self.fraction_bits

    @property
    def default_nan(self) -> int:
        """Bit pattern of the default NaN: positive, quiet, zero payload."""
        return self.infinity | 1 << (self.fraction_bits - 1)

    def __repr__(self):
        return f"FpFormat({self.name})"


FP16 = FpFormat("fp16", 5, 10)
BF16 = FpFormat("bf16", 8, 7)
FP32 = FpFormat("fp32", 8, 23)
FP64 = FpFormat("fp64", 11, 52)


class RoundingMode(enum.Enum, shape=3):
    """How a result is rounded; the first four values equal FPCR.RMode."""

    NEAREST_EVEN = 0
    TOWARD_PLUS_INFINITY = 1
    TOWARD_MINUS_INFINITY = 2
    TOWARD_ZERO = 3
    #: Truncate and set the last bit if inexact; overflow gives infinity (BFRound).
    TO_ODD = 4


class ResultClass(enum.Enum, shape=2):
    """What kind of value a result is, before it is packed into a format."""

    NUMBER = 0
    ZERO = 1
    INFINITY = 2
    NAN = 3
