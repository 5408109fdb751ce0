"""Barrel shifters and rotators as stages of 2:1 multiplexers, each stage a module of its own.

A shift by a variable amount is ``len(amount)`` stages, stage ``k`` moving the value by ``2^k``
positions or not. Left as one expression (or as stages inside one module), Yosys's LUT mapping
(ABC9) merges the stages and maps each result bit as one wide multiplexer over every input bit
it can come from. Measured with ``synth_ecp5`` on the 77-bit normalizer of an fp32 fused
multiply-add (two shifts by 7 bits, two leading-zero counts): 3,200 LUT4 that way, 1,369 with
its stages as modules, each stage one LUT4 per bit. So every stage is a :class:`ShiftStage`
module whose name contains :data:`STAGE_NAME`, and the synthesis script keeps those modules
whole (``keep_hierarchy``, :mod:`zatile.hw.synthesis`). Two shifts need only part of the
value at some stages, so their stages are narrower: a right shift of a value that starts at the
top of a wider field (:func:`widening_right_shift`), and a left shift of which only the bits
above the value are wanted (:func:`window_shift`, of :class:`WindowStage`).

A kept stage also stops constants from propagating through it, so a shift whose input is
largely constant can come out larger this way: the vector shifter's funnels of an earlier
design (half of each input zeros) took 16,200 LUT4 as stages and 13,569 as plain shifts, and
the load/store unit's byte alignment (into and out of a wider zero-padded image) 4,520 and
4,114: both stayed plain shifts.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Value
from amaranth.lib.wiring import In, Out

from zatile.hw._common import CheckedComponent

__all__ = ["STAGE_NAME", "KINDS", "ShiftStage", "WindowStage", "barrel_shift",
           "widening_right_shift", "window_shift"]

#: The part of every stage's submodule (and Verilog module) name that synthesis looks for.
STAGE_NAME = "barrel_stage"

#: What a stage does: shift towards the top (zeros in), towards the bottom (zeros or copies of
#: the top bit in), or rotate towards the top.
KINDS = ("left", "right", "right_arithmetic", "rotate_left")


class ShiftStage(CheckedComponent):
    """``o`` is ``i`` moved by ``step`` bits when ``enable`` is set, else ``i`` (combinational).

    Parameters
    ----------
    width : int
        Bits of ``i`` and ``o``.
    step : int
        Positions moved; a shift by ``width`` or more leaves only the fill.
    kind : str
        One of :data:`KINDS`.

    Raises
    ------
    ValueError
        If ``width`` or ``step`` is not a positive integer, or ``kind`` is not one of
        :data:`KINDS`.
    """

    @staticmethod
    def check_arguments(width: int, step: int, kind: str) -> None:
        for name, value in (("width", width), ("step", step)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")

    def __init__(self, width: int, step: int, kind: str):
        self._step = step
        self._kind = kind
        super().__init__({"i": In(width), "enable": In(1), "o": Out(width)})

    def elaborate(self, platform):
        m = Module()
        value, step, width = self.i, self._step, len(self.i)
        if self._kind == "rotate_left":
            moved = value.rotate_left(step % width)
        elif self._kind == "left":
            moved = Cat(Value.cast(0).replicate(min(step, width)), value[:max(width - step, 0)])
        else:
            fill = value[-1] if self._kind == "right_arithmetic" else Value.cast(0)
            moved = Cat(value[min(step, width):], fill.replicate(min(step, width)))
        m.d.comb += self.o.eq(Mux(self.enable, moved, value))
        return m


class WindowStage(CheckedComponent):
    """A stage of a left shifter that narrows as it goes: ``o`` is the top ``width`` bits of
    ``i``, or, when ``enable`` is set, the ``width`` bits ``step`` places below them
    (combinational). A shifter of which only the top bits are wanted (a normalizer feeding a
    rounder, ``hw/vector/fp_arith.py``) needs each stage only as wide as the bits the later
    stages can still bring into its output. Named with :data:`STAGE_NAME` like a
    :class:`ShiftStage`, it is kept whole, one LUT4 per bit.

    Parameters
    ----------
    width, step : int

    Attributes
    ----------
    i : Signal(width + step), in
    enable : Signal(1), in
    o : Signal(width), out

    Raises
    ------
    ValueError
        If ``width`` or ``step`` is not a positive integer.
    """

    @staticmethod
    def check_arguments(width: int, step: int) -> None:
        for name, value in (("width", width), ("step", step)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")

    def __init__(self, width: int, step: int):
        self._step = step
        super().__init__({"i": In(width + step), "enable": In(1), "o": Out(width)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.o.eq(Mux(self.enable, self.i[:len(self.o)], self.i[self._step:]))
        return m


def barrel_shift(m: Module, value, amount, kind: str, name: str, unit: int = 1) -> Value:
    """``value`` moved by ``amount`` units of ``unit`` bits, as :class:`ShiftStage` submodules
    of ``m`` named ``barrel_stage_<name>_<k>``.

    ``amount`` is unsigned (a rotation takes its bits modulo the element count, so a signed
    amount rotates by its value modulo that count). Shifts by ``len(value)`` bits or more give
    the fill: one stage for all the amount bits that big.
    """
    value = Value.cast(value)
    amount = Value.cast(amount)
    width = len(value)
    bit = stages = 0
    while bit < len(amount):
        step = unit << bit
        if kind == "rotate_left" and step % width == 0:
            break
        if kind != "rotate_left" and step >= width:
            enable = amount[bit:].any()
            bit = len(amount)
        else:
            enable = amount[bit]
            bit += 1
        stage = ShiftStage(width, step % width if kind == "rotate_left" else min(step, width),
                           kind)
        m.submodules[f"{STAGE_NAME}_{name}_{stages}"] = stage
        stages += 1
        m.d.comb += [stage.i.eq(value), stage.enable.eq(enable)]
        value = stage.o
    return value


def widening_right_shift(m: Module, value, width: int, amount, name: str) -> Value:
    """``value`` at the top of a ``width``-bit field, moved right by ``amount`` bits (zeros in,
    bits moved below the field lost), as :class:`ShiftStage` submodules of ``m`` named
    ``barrel_stage_<name>_<k>``.

    Stage ``k`` moves by ``2^k`` after the smaller moves, so the value's bits then span only
    the top ``len(value) + 2^k - 1`` bits of the field: each stage is only as wide as its
    output can be, ``len(value) + 2^(k+1) - 1`` bits and at most ``width``, and takes the
    previous stage's output with zeros below. For the alignment shift of an FP64 fused
    multiply-add (a 53-bit addend, a 163-bit field) that is 54, 56, 60, 68, 84, 116, 163 and
    163 bits rather than 163 for every stage.

    Raises
    ------
    ValueError
        If ``value`` is wider than ``width``.
    """
    value = Value.cast(value)
    amount = Value.cast(amount)
    if len(value) > width:
        raise ValueError(f"a {len(value)}-bit value does not fit a {width}-bit field")
    bit = stages = 0
    while bit < len(amount):
        step = 1 << bit
        if step >= width:
            enable = amount[bit:].any()
            bit = len(amount)
        else:
            enable = amount[bit]
            bit += 1
        step = min(step, width)
        stage_width = min(len(value) + step, width)
        stage = ShiftStage(stage_width, step, "right")
        m.submodules[f"{STAGE_NAME}_{name}_{stages}"] = stage
        stages += 1
        padded = Cat(Const(0, step), value)
        m.d.comb += [stage.i.eq(padded[len(padded) - stage_width:]), stage.enable.eq(enable)]
        value = stage.o
    return Cat(Const(0, width - len(value)), value)


def window_shift(m: Module, value, amount, width: int, name: str) -> Value:
    """The ``width`` bits just above ``value`` once it is moved left by ``amount`` bits: its
    bits ``len(value) - amount`` up to ``len(value) - amount + width``, zeros where there are
    none; as :class:`WindowStage` submodules of ``m`` named ``barrel_stage_<name>_<k>``.

    The largest move comes first, and each stage is only as wide as the bits the later stages
    can still bring into the window: ``width + 2^k - 1`` bits for stage ``k`` (at most the
    value's and the window's bits together). A normalizer that keeps only the bits a rounder
    uses (:class:`~zatile.hw.fp.normalize.FpNormalize`) is one.
    """
    value = Value.cast(value)
    amount = Value.cast(amount)
    shifted = Cat(value, Const(0, width))
    for bit in reversed(range(len(amount))):
        step = 1 << bit
        stage_width = min(len(shifted), width + step - 1)
        padded = Cat(Const(0, max(0, stage_width + step - len(shifted))), shifted)
        stage = WindowStage(stage_width, step)
        m.submodules[f"{STAGE_NAME}_{name}_{bit}"] = stage
        m.d.comb += [stage.i.eq(padded[len(padded) - stage_width - step:]),
                     stage.enable.eq(amount[bit])]
        shifted = stage.o
    return shifted[len(shifted) - width:]
