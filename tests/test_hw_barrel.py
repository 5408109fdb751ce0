"""hw.barrel: staged shifters and rotators, and the narrowed shifts, against Python's shifts, and
their argument checks."""

import random

import pytest
from amaranth import Elaboratable, Fragment, Module, Signal
from amaranth.sim import Simulator

from zatile.hw.barrel import (KINDS, STAGE_NAME, ShiftStage, WindowStage, barrel_shift,
                               widening_right_shift, window_shift)
from zatile.hw.synthesis import synth_script


def _expected(value: int, amount: int, kind: str, width: int, unit: int) -> int:
    mask = (1 << width) - 1
    if kind == "rotate_left":
        bits = amount * unit % width
        return (value << bits | value >> (width - bits)) & mask
    bits = amount * unit
    if kind == "left":
        return value << bits & mask
    if kind == "right_arithmetic" and value >> (width - 1):
        return (value - (1 << width)) >> bits & mask
    return value >> bits


class _Shifter(Elaboratable):
    def __init__(self, width, amount_bits, kind, unit):
        self.value = Signal(width)
        self.amount = Signal(amount_bits)
        self.result = Signal(width)
        self._kind, self._unit = kind, unit

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.result.eq(barrel_shift(m, self.value, self.amount, self._kind, "test",
                                                unit=self._unit))
        return m


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("width, amount_bits, unit", [(1, 2, 1), (19, 8, 1), (64, 7, 1),
                                                      (128, 5, 8), (77, 7, 1)])
def test_matches_python_shifts(kind, width, amount_bits, unit):
    """Every amount an amount signal can hold, including shifts past the width (only the fill
    is left) and rotations of several turns."""
    if kind == "rotate_left" and width % unit:
        pytest.skip("a rotation moves whole elements")
    dut = _Shifter(width, amount_bits, kind, unit)
    rng = random.Random(width * 100 + amount_bits)
    sim = Simulator(dut)

    async def bench(ctx):
        for amount in range(1 << amount_bits):
            for value in (rng.getrandbits(width), (1 << width) - 1, 1 << (width - 1)):
                ctx.set(dut.value, value)
                ctx.set(dut.amount, amount)
                assert ctx.get(dut.result) == _expected(value, amount, kind, width, unit), \
                    (kind, width, value, amount)

    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("arguments, message", [
    ((0, 1, "left"), "width must be a positive integer, not 0"),
    ((8, -2, "left"), "step must be a positive integer, not -2"),
    ((8, 1, "up"), "not 'up'"),
])
def test_stage_arguments_are_checked(arguments, message):
    with pytest.raises(ValueError, match=message):
        ShiftStage(*arguments)


@pytest.mark.parametrize("width, step", [(1, 1), (5, 3), (6, 6), (9, 2)])
def test_a_window_stage_gives_the_top_bits_or_those_step_places_below(width, step):
    """Every input of a few small windows."""
    dut = WindowStage(width, step)
    sim = Simulator(dut)

    async def bench(ctx):
        for value in range(1 << (width + step)):
            for enable in (0, 1):
                ctx.set(dut.i, value)
                ctx.set(dut.enable, enable)
                expected = value >> (0 if enable else step) & ((1 << width) - 1)
                assert ctx.get(dut.o) == expected, (value, enable)

    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("arguments, message", [
    ((0, 1), "width must be a positive integer, not 0"),
    ((8, 0), "step must be a positive integer, not 0"),
])
def test_window_stage_arguments_are_checked(arguments, message):
    with pytest.raises(ValueError, match=message):
        WindowStage(*arguments)


class _NarrowedShift(Elaboratable):
    """``build(m, value, amount)`` of a ``value_bits``-bit value, into ``result_bits`` bits."""

    def __init__(self, build, value_bits, amount_bits, result_bits):
        self.value = Signal(value_bits)
        self.amount = Signal(amount_bits)
        self.result = Signal(result_bits)
        self._build = build

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.result.eq(self._build(m, self.value, self.amount))
        return m


def _check_every_amount(dut, expected, seed):
    """Every amount, for a few random values and the all-ones value (whose lowest and highest
    bits show a stage one bit too narrow)."""
    rng = random.Random(seed)
    value_bits, amount_bits = len(dut.value), len(dut.amount)
    values = [(1 << value_bits) - 1, 1, 1 << (value_bits - 1),
              *(rng.getrandbits(value_bits) for _ in range(4))]
    sim = Simulator(dut)

    async def bench(ctx):
        for value in values:
            for amount in range(1 << amount_bits):
                ctx.set(dut.value, value)
                ctx.set(dut.amount, amount)
                assert ctx.get(dut.result) == expected(value, amount), (value, amount)

    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("value_bits, width, amount_bits", [(1, 1, 2), (5, 12, 4), (8, 8, 4),
                                                            (24, 76, 7), (53, 163, 8)])
def test_widening_right_shift_matches_pythons(value_bits, width, amount_bits):
    """The value at the top of the field, moved by every amount, out of the field too (the
    fused multiply-adds' alignments: fp32 and fp64)."""
    dut = _NarrowedShift(lambda m, value, amount: widening_right_shift(m, value, width, amount,
                                                                       "test"),
                         value_bits, amount_bits, width)
    _check_every_amount(dut, lambda value, amount: value << (width - value_bits) >> amount,
                        seed=width)


def test_widening_right_shift_needs_a_field_the_value_fits():
    m = Module()
    with pytest.raises(ValueError, match="a 9-bit value does not fit a 8-bit field"):
        widening_right_shift(m, Signal(9), 8, Signal(3), "test")
    Fragment.get(m, None)   # used, so that Amaranth does not warn about it


@pytest.mark.parametrize("value_bits, width, amount_bits", [(3, 5, 4), (16, 16, 6),
                                                            (77, 26, 7), (164, 55, 8)])
def test_window_shift_matches_pythons(value_bits, width, amount_bits):
    """The window above the value moved by every amount (the normalizers keeping fp32's and
    fp64's rounding bits)."""
    dut = _NarrowedShift(lambda m, value, amount: window_shift(m, value, amount, width, "test"),
                         value_bits, amount_bits, width)
    _check_every_amount(
        dut, lambda value, amount: value << amount >> value_bits & ((1 << width) - 1),
        seed=width)


def test_synthesis_keeps_the_stages_whole():
    """The stages are modules that LUT mapping does not merge (hw/barrel.py)."""
    assert f"setattr -mod -set keep_hierarchy 1 *{STAGE_NAME}*" in synth_script(["a.v"], "top")
