"""Align two terms and add them, exactly or with a correct sticky bit."""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from zatile.hw._common import CheckedComponent
from zatile.hw.barrel import widening_right_shift

from zatile.hw.fp.count_zeros import trailing_zeros

__all__ = ["FpAlignAdd", "SumLayout", "TermLayout", "assign_term"]


def TermLayout(width: int, exponent_bits: int) -> data.StructLayout:
    """A signed term: value ``(-1)**sign * significand * 2**(exponent - width + 1)``.

    ``exponent`` is the weight of the significand's top bit; the significand need not be
    normalized. A zero significand is a zero term, whatever its exponent.
    """
    return data.StructLayout({"sign": 1, "exponent": signed(exponent_bits), "significand": width})


def assign_term(term, source) -> list:
    """Statements copying the sign, exponent and significand of ``source`` into ``term``.

    ``source`` is an unpacked operand or a product: anything with those three fields, as wide as
    the term's or narrower (the exponent is sign-extended).
    """
    return [term.sign.eq(source.sign), term.exponent.eq(source.exponent),
            term.significand.eq(source.significand)]


def SumLayout(width: int, exponent_bits: int) -> data.StructLayout:
    """A sign-magnitude sum in a ``width``-bit window; ``exponent`` is the weight of its top bit.

    Bit 0 is sticky: the window holds the exact sum, or, if bits were lost, an odd magnitude that
    any rounding to the output precision treats exactly like the sum (see :class:`FpAlignAdd`).
    A zero ``magnitude`` means the sum is exactly zero.
    """
    return data.StructLayout({"sign": 1, "exponent": signed(exponent_bits), "magnitude": width})


class FpAlignAdd(CheckedComponent):
    """Add two terms in a fixed window, keeping exactly the bits any rounding needs (combinational).

    The *anchor* term sits at a fixed place in the window: ``headroom_bits`` free bits above it
    (the top one for the carry) and ``guard_bits`` below it. The other term is shifted right to
    its place; bits it loses below window bit 1 are ORed into bit 0. If it would stand more than
    ``headroom_bits - 1`` places above the anchor (or the anchor is zero), it goes at the top of
    the window instead and the anchor collapses into bit 0. The result is the exact sum, or an
    odd magnitude (sticky bit 0 set) that every rounding to the output precision treats as it
    treats the exact sum: what was lost lies wholly below the round bit of the result, and
    cancellation costs at most one bit. That holds when the parameters satisfy, for an output
    precision ``p``, an anchor whose nonzero values have their leading one at bit ``lead`` or
    above, and a shifted term of width ``w``:

    * anchor truncating the shifted term: ``guard_bits >= max(w + 1, p + 2) - lead``;
    * shifted term on top: ``headroom_bits >= p + 2`` when the shifted term is normalized, or
      ``headroom_bits >= w + 1`` when it is an operand of the output format (its denormals round
      on the format's fixed grid).

    With ``order_by_exponent`` the term with the larger exponent (zeros count as smallest) is
    the anchor, so the second case never arises and ``headroom_bits = 2`` suffices; this needs
    terms of equal width. Without it ``augend`` is always the anchor.

    Parameters
    ----------
    augend_width, addend_width : int
        Significand widths of the terms.
    exponent_bits : int
        Width of the signed exponents, in and out; it must hold every exponent the caller passes
        plus ``headroom_bits``.
    guard_bits : int
        Window bits below the anchor, at least 1.
    headroom_bits : int
        Window bits above the anchor, at least 2.
    order_by_exponent : bool

    Attributes
    ----------
    augend : Signal(TermLayout(augend_width, exponent_bits)), in
    addend : Signal(TermLayout(addend_width, exponent_bits)), in
    sum : Signal(SumLayout(window_width, exponent_bits)), out

    Raises
    ------
    ValueError
        If a width is out of range, or ``order_by_exponent`` is given terms of unequal widths.
    """

    @staticmethod
    def check_arguments(*, augend_width: int, addend_width: int, exponent_bits: int,
                        guard_bits: int, headroom_bits: int,
                        order_by_exponent: bool = False) -> None:
        for name, value, minimum in (("augend_width", augend_width, 1),
                                     ("addend_width", addend_width, 1),
                                     ("exponent_bits", exponent_bits, 2),
                                     ("guard_bits", guard_bits, 1),
                                     ("headroom_bits", headroom_bits, 2)):
            if not isinstance(value, int) or value < minimum:
                raise ValueError(
                    f"{name} must be an integer of at least {minimum}, not {value!r}")
        if order_by_exponent and augend_width != addend_width:
            raise ValueError(f"order_by_exponent needs terms of equal width, not "
                             f"{augend_width} and {addend_width}")
        window_width = guard_bits + augend_width + headroom_bits
        if window_width - 1 < addend_width:
            raise ValueError(f"a {window_width}-bit window cannot hold a "
                             f"{addend_width}-bit addend below its carry bit")

    def __init__(self, *, augend_width: int, addend_width: int, exponent_bits: int,
                 guard_bits: int, headroom_bits: int, order_by_exponent: bool = False):
        self._augend_width = augend_width
        self._addend_width = addend_width
        self._exponent_bits = exponent_bits
        self._guard_bits = guard_bits
        self._headroom_bits = headroom_bits
        self._order_by_exponent = bool(order_by_exponent)
        super().__init__({
            "augend": In(TermLayout(augend_width, exponent_bits)),
            "addend": In(TermLayout(addend_width, exponent_bits)),
            "sum": Out(SumLayout(guard_bits + augend_width + headroom_bits, exponent_bits)),
        })

    @property
    def window_width(self) -> int:
        return self._guard_bits + self._augend_width + self._headroom_bits

    @property
    def exponent_bits(self) -> int:
        return self._exponent_bits

    def elaborate(self, platform):
        m = Module()
        window = self.window_width
        guard, headroom = self._guard_bits, self._headroom_bits

        anchor = Signal(TermLayout(self._augend_width, self._exponent_bits))
        shifted = Signal(TermLayout(self._addend_width, self._exponent_bits))
        if self._order_by_exponent:
            augend_is_larger = ((self.addend.significand == 0)
                                | ((self.augend.significand != 0)
                                   & (self.augend.exponent >= self.addend.exponent)))
            with m.If(augend_is_larger):
                m.d.comb += [anchor.eq(self.augend), shifted.eq(self.addend)]
            with m.Else():
                m.d.comb += [anchor.eq(self.addend), shifted.eq(self.augend)]
        else:
            m.d.comb += [anchor.eq(self.augend), shifted.eq(self.addend)]

        anchor_is_zero = anchor.significand == 0
        shifted_is_zero = shifted.significand == 0
        # How far the shifted term's top bit lies below the anchor's.
        exponent_difference = Signal(signed(self._exponent_bits + 1))
        m.d.comb += exponent_difference.eq(anchor.exponent - shifted.exponent)
        shifted_on_top = anchor_is_zero | (~shifted_is_zero
                                           & (exponent_difference < 1 - headroom))

        # Shifting right from the top of the window (top bit at window bit W-2) by `shift`;
        # everything from `window` places on is sticky alone.
        shift = Signal(range(window + 1))
        unclamped_shift = exponent_difference + (headroom - 1)
        with m.If(shifted_on_top | (unclamped_shift <= 0)):
            m.d.comb += shift.eq(0)
        with m.Elif(unclamped_shift >= window):
            m.d.comb += shift.eq(window)
        with m.Else():
            m.d.comb += shift.eq(unclamped_shift)
        bottom = window - 1 - self._addend_width  # the term's lowest bit before shifting
        # The shift loses the term's set bits below `shift - bottom`; they make the sticky bit.
        lost = ~shifted_is_zero & (trailing_zeros(m, shifted.significand) < shift - bottom)
        shifted_field = Signal(window)
        m.d.comb += shifted_field.eq(Cat(
            widening_right_shift(m, shifted.significand, window - 1, shift, "align"),
            Const(0, 1)) | lost)

        anchor_field = Signal(window)
        m.d.comb += anchor_field.eq(Mux(shifted_on_top, ~anchor_is_zero,
                                        anchor.significand << guard))

        subtract = anchor.sign ^ shifted.sign
        total = Signal(window + 1)
        m.d.comb += total.eq(Mux(subtract, anchor_field - shifted_field,
                                 anchor_field + shifted_field))
        # The top bit is the sign of a difference: the shifted term was the larger.
        negative = subtract & total[window]
        m.d.comb += [
            self.sum.sign.eq(anchor.sign ^ negative),
            self.sum.magnitude.eq(Mux(negative, -total, total)),
            self.sum.exponent.eq(Mux(shifted_on_top, shifted.exponent + 1,
                                     anchor.exponent + headroom)),
        ]
        return m
