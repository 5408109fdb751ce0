"""Leading- and trailing-zero counters for normalization and sticky bits."""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, Value

__all__ = ["leading_zeros", "trailing_zeros"]


def leading_zeros(m: Module, bits: Value) -> Signal:
    """Number of leading zeros of ``bits`` (``len(bits)`` if all are zero), as a log-depth tree.

    The tree's nodes are signals of ``m``, which keeps the expressions shallow.
    """
    bits = Value.cast(bits)
    width = len(bits)
    padded_width = 2
    while padded_width < width + 1:
        padded_width *= 2
    # A single one just below the input bounds the count at `width` and makes the tree's input
    # nonzero, so every half it looks into (upper half if not empty, else lower) is nonzero too.
    padding = padded_width - width
    # A signal, not an expression: the tree slices it at every node.
    padded = Signal(padded_width, name=f"lzc_input_{width}")
    m.d.comb += padded.eq(Cat(Const(1 << (padding - 1), padding), bits))

    def count(part: Value, offset: int) -> tuple[Signal, Signal]:
        """(part has a one, leading zeros of part if it has)."""
        width = len(part)
        has_one = Signal(name=f"lzc_any_{offset}_{width}")
        zeros = Signal(width.bit_length() - 1, name=f"lzc_count_{offset}_{width}")
        if width == 2:
            m.d.comb += [has_one.eq(part.any()), zeros.eq(~part[1])]
        else:
            half = width // 2
            upper_has_one, upper_zeros = count(part[half:], offset + half)
            lower_has_one, lower_zeros = count(part[:half], offset)
            m.d.comb += [has_one.eq(upper_has_one | lower_has_one),
                         zeros.eq(Mux(upper_has_one, upper_zeros, Cat(lower_zeros, Const(1, 1))))]
        return has_one, zeros

    return count(padded, 0)[1]


def trailing_zeros(m: Module, bits: Value) -> Signal:
    """Number of trailing zeros of ``bits`` (``len(bits)`` if all are zero).

    A right shift by ``n`` loses a set bit exactly when ``trailing_zeros < n``, which makes the
    sticky bit of a shift without widening the shifter to catch the bits that fall out.
    """
    return leading_zeros(m, Value.cast(bits)[::-1])
