"""Normalize a sum: count leading zeros and shift, stopping at the format's denormal scale."""

from __future__ import annotations

from amaranth import Module, Mux, Signal, signed
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from zatile.hw._common import CheckedComponent
from zatile.hw.barrel import barrel_shift, window_shift

from zatile.hw.fp.align_add import SumLayout
from zatile.hw.fp.count_zeros import leading_zeros, trailing_zeros

__all__ = ["FpNormalize", "NormalizedLayout", "normalized_sum"]


def NormalizedLayout(width: int, exponent_bits: int) -> data.StructLayout:
    """A normalized sum, ready for :class:`~hw.fp.round.FpRound`.

    ``significand`` has its top bit set and ``exponent`` is that bit's weight, unless the value
    is below the normal range (``tiny``): then ``exponent`` is the format's minimum exponent and
    the significand is scaled to it (denormalized). Bit 0 is sticky: set if any bit below the
    significand was. ``zero`` marks an exact zero (sign, exponent and significand are then
    meaningless).
    """
    return data.StructLayout({"sign": 1, "exponent": signed(exponent_bits), "significand": width,
                              "tiny": 1, "zero": 1})


class FpNormalize(CheckedComponent):
    """Shift a sum so that its leading one is the top bit, or to the denormal scale, keeping the
    whole significand or only its top bits (combinational).

    A rounder uses only the top bits, the format's precision and a round bit, and whether any
    bit below them is set: with ``kept_bits`` the significand is those top bits, the bits
    below them ORed into its bit 0 (the same to every rounding when ``kept_bits`` is at least
    the precision plus 2), from :func:`normalized_sum`'s narrowing shifter. That pays when the
    kept bits are well under the sum's width: the fp32 fused multiply-add's normalizer (77
    bits, 26 kept) maps to 549 LUT4 rather than 934; for 29 bits, 26 kept, it costs 11 more.

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
    kept_bits : int or None
        Bits of the normalized significand, from 2 to ``width``; ``None`` for the whole
        significand (exact, or, denormalized, with bit 0 sticky).

    Attributes
    ----------
    sum : Signal(SumLayout(width, exponent_bits)), in
    min_exponent : Signal(signed(exponent_bits)), in
        Only when the parameter ``min_exponent`` is ``None``.
    normalized : Signal(NormalizedLayout(kept_bits, exponent_bits)), out

    Raises
    ------
    ValueError
        If ``width``, ``exponent_bits`` or ``kept_bits`` is out of range, or ``min_exponent``
        does not fit.
    """

    @staticmethod
    def check_arguments(*, width: int, exponent_bits: int, min_exponent: int | None,
                        kept_bits: int | None = None) -> None:
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
        if kept_bits is not None and (not isinstance(kept_bits, int)
                                      or not 2 <= kept_bits <= width):
            raise ValueError(f"kept_bits must be None or an integer from 2 to {width}, "
                             f"not {kept_bits!r}")

    def __init__(self, *, width: int, exponent_bits: int, min_exponent: int | None,
                 kept_bits: int | None = None):
        self._width = width
        self._exponent_bits = exponent_bits
        self._min_exponent = min_exponent
        self._kept_bits = kept_bits
        ports = {"sum": In(SumLayout(width, exponent_bits)),
                 "normalized": Out(NormalizedLayout(self.kept_bits, exponent_bits))}
        if min_exponent is None:
            ports["min_exponent"] = In(signed(exponent_bits))
        super().__init__(ports)

    @property
    def width(self) -> int:
        return self._width

    @property
    def kept_bits(self) -> int:
        """Bits of the normalized significand."""
        return self._width if self._kept_bits is None else self._kept_bits

    def elaborate(self, platform):
        m = Module()
        min_exponent = self.min_exponent if self._min_exponent is None else self._min_exponent
        if self._kept_bits is not None:
            m.d.comb += self.normalized.eq(
                normalized_sum(m, self.sum, min_exponent, self._kept_bits))
            return m

        width = self._width
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


def normalized_sum(m: Module, total, min_exponent, kept_bits: int) -> Signal:
    """:class:`FpNormalize` with ``kept_bits``, in ``m``: ``total`` (a :func:`SumLayout` value)
    normalized to ``min_exponent`` (an integer or a value), keeping the top ``kept_bits``
    bits, the rest ORed into bit 0; a ``NormalizedLayout(kept_bits, ...)`` signal.

    One left shifter with the kept bits at its end (:func:`~zatile.hw.barrel.window_shift`)
    serves both scales: the magnitude, below ``kept_bits`` zero bits, moves up by that many
    places plus its leading zeros (a normal value), or plus the places from its exponent down
    to ``min_exponent`` (a tiny one; fewer than the leading zeros, or negative: a move down).
    The bits left below the window are set when the magnitude has fewer trailing zeros than
    places below the window.

    A unit that computes its minimum exponent, or uses the result, in logic of its own
    (``hw/vector/fp_arith.py``) calls this rather than instantiating :class:`FpNormalize`: in
    one module with that logic it maps to fewer LUT4s (229 fewer there).
    """
    width, exponent_bits = len(total.magnitude), len(total.exponent)
    exponent, magnitude = total.exponent, total.magnitude

    leading = Signal(range(width + 1), name="normalize_leading")
    m.d.comb += leading.eq(leading_zeros(m, magnitude))
    leading_one_exponent = Signal(signed(exponent_bits + 1), name="normalize_leading_exponent")
    m.d.comb += leading_one_exponent.eq(exponent - leading)
    tiny = leading_one_exponent < min_exponent

    places = Signal(signed(exponent_bits + 2), name="normalize_places")
    m.d.comb += places.eq(Mux(tiny, exponent - min_exponent, leading) + kept_bits)
    amount = Signal(range(width + kept_bits + 1), name="normalize_amount")
    m.d.comb += amount.eq(Mux(places < 0, 0, places))
    kept = window_shift(m, magnitude, amount, kept_bits, "normalize")
    sticky = trailing_zeros(m, magnitude) < width - amount
    normalized = Signal(NormalizedLayout(kept_bits, exponent_bits), name="normalized")
    m.d.comb += [
        normalized.sign.eq(total.sign),
        normalized.exponent.eq(Mux(tiny, min_exponent, leading_one_exponent)),
        normalized.significand.eq(kept | sticky),
        normalized.tiny.eq(tiny),
        normalized.zero.eq(leading == width),
    ]
    return normalized
