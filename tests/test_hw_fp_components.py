"""The hw.fp building blocks, each on its own, against the exact reference sim/fpref.py.

* FpUnpack against ``FPUnpackBase`` (class, sign and exact value) for fp16, bf16, fp32, fp64,
  with and without flushing; bf16 with flushing also against ``BFUnpack``.
* FpMultiply: the exact product and the NaN/infinity/zero classification.
* FpAlignAdd in the four configurations the fused units use: the window holds the exact sum,
  or an odd magnitude (sticky bit 0) that rounds exactly as the sum does (``FPRoundBase`` in all
  four modes with and without FZ, and ``BFRound``'s round to odd).
* FpNormalize: leading one on top, or the denormal scale with a sticky bit 0; tiny and zero;
  whole or keeping only the top bits (bit 0 sticky for the bits below them).
* FpRound against ``FPRoundBase`` / ``BFRound`` on random normalized values.

Stimulus comes from tests/test_hw_fp_stimulus.py. ``-m soak`` runs 20 times as many vectors and
every fp16/bf16 bit pattern through FpUnpack.
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest
from amaranth.sim import Simulator

from zatile.hw.fp.align_add import FpAlignAdd
from zatile.hw.fp.format import BF16, FP16, FP32, FP64, FpFormat, ResultClass, RoundingMode
from zatile.hw.fp.multiply import FpMultiply
from zatile.hw.fp.normalize import FpNormalize
from zatile.hw.fp.round import FpRound
from zatile.hw.fp.unpack import FpUnpack
from zatile.sim import fpref
from test_hw_fp_stimulus import operands

REFERENCE_FORMATS = {FP16: fpref.FP16, BF16: fpref.BF16, FP32: fpref.FP32, FP64: fpref.FP64}
SOAK_FACTOR = 20


def run_combinational(dut, vectors, apply, observe) -> list:
    """Apply each vector to a combinational ``dut`` and collect what ``observe`` reads back."""
    results = []

    async def bench(ctx):
        for vector in vectors:
            apply(ctx, vector)
            results.append(observe(ctx))

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    return results


def flush_fpcr(fmt: FpFormat) -> int:
    """The FPCR bit that flushes ``fmt`` in the reference (FZ16 for 16-bit formats)."""
    return fpref.FPCR_FZ16 if fmt.width == 16 else fpref.FPCR_FZ


def real_fraction(value: fpref.Real) -> Fraction:
    return Fraction(value.numerator) * Fraction(2) ** value.exponent


def term_value(sign: int, significand: int, exponent: int, width: int) -> Fraction:
    """Value of a term whose top (``width - 1``) bit weighs ``2**exponent``."""
    return (-1) ** sign * Fraction(significand) * Fraction(2) ** (exponent - width + 1)


def to_real(value: Fraction) -> fpref.Real:
    """A dyadic Fraction as the reference's Real."""
    denominator_power = value.denominator.bit_length() - 1
    assert value.denominator == 1 << denominator_power
    return fpref.Real(value.numerator, -denominator_power)


# --- FpUnpack ------------------------------------------------------------------------------------

def check_unpack(fmt: FpFormat, count: int, seed: int, patterns=None):
    rng = np.random.default_rng(seed)
    if patterns is None:
        patterns = [int(x) for x in operands(rng, fmt, count)]
    vectors = [(bits, flush) for bits in patterns for flush in (0, 1)]
    dut = FpUnpack(fmt)

    def apply(ctx, vector):
        ctx.set(dut.bits, vector[0])
        ctx.set(dut.flush, vector[1])

    results = run_combinational(dut, vectors, apply, lambda ctx: ctx.get(dut.operand))
    classes = {fpref.FPType.ZERO: "zero", fpref.FPType.DENORMAL: "denormal",
               fpref.FPType.INFINITY: "infinity", fpref.FPType.QNAN: "nan",
               fpref.FPType.SNAN: "nan", fpref.FPType.NONZERO: None}
    reference_format = REFERENCE_FORMATS[fmt]
    for (bits, flush), got in zip(vectors, results):
        fptype, sign, value = fpref.fp_unpack(bits, reference_format,
                                              flush_fpcr(fmt) if flush else 0)
        flags = {name: getattr(got, name) for name in ("zero", "denormal", "infinity", "nan")}
        expected_flags = {name: int(classes[fptype] == name) for name in flags}
        assert (flags, got.sign) == (expected_flags, sign), (fmt, hex(bits), flush, got)
        if fptype in (fpref.FPType.ZERO, fpref.FPType.DENORMAL, fpref.FPType.NONZERO):
            assert term_value(got.sign, got.significand, got.exponent, fmt.precision) == \
                real_fraction(value), (fmt, hex(bits), flush, got)
        if fmt is BF16 and flush:
            bf_type = fpref.bf_unpack(bits, 16)[0]
            assert bf_type == (fpref.FPType.QNAN if fptype is fpref.FPType.SNAN else fptype)


@pytest.mark.parametrize("fmt", [FP16, BF16, FP32, FP64], ids=str)
def test_unpack(fmt):
    check_unpack(fmt, 1500, seed=fmt.width + fmt.exponent_bits)


@pytest.mark.soak
@pytest.mark.parametrize("fmt", [FP16, BF16], ids=str)
def test_unpack_every_pattern_soak(fmt):
    check_unpack(fmt, 0, seed=0, patterns=range(2 ** 16))


@pytest.mark.soak
@pytest.mark.parametrize("fmt", [FP32, FP64], ids=str)
def test_unpack_soak(fmt):
    check_unpack(fmt, 1500 * SOAK_FACTOR, seed=fmt.width + 1000)


# --- FpMultiply ----------------------------------------------------------------------------------

def unpacked_fields(fmt: FpFormat, bits: int, flush: int, rng: random.Random) -> dict:
    """The fields FpUnpack would produce, derived from the reference's ``FPUnpackBase``.

    Infinities and NaNs get random significands and exponents: nothing may depend on them.
    """
    fptype, sign, value = fpref.fp_unpack(bits, REFERENCE_FORMATS[fmt],
                                          flush_fpcr(fmt) if flush else 0)
    fields = {"sign": sign, "zero": int(fptype is fpref.FPType.ZERO),
              "denormal": int(fptype is fpref.FPType.DENORMAL),
              "infinity": int(fptype is fpref.FPType.INFINITY),
              "nan": int(fptype in (fpref.FPType.QNAN, fpref.FPType.SNAN))}
    if fptype is fpref.FPType.ZERO:
        fields.update(significand=0, exponent=fmt.min_exponent)
    elif fptype in (fpref.FPType.DENORMAL, fpref.FPType.NONZERO):
        fields.update(significand=abs(value.numerator),
                      exponent=value.exponent + fmt.fraction_bits)
    else:
        fields.update(significand=rng.getrandbits(fmt.precision),
                      exponent=rng.randint(fmt.min_exponent, fmt.max_exponent))
    return fields


def check_multiply(fmt: FpFormat, count: int, seed: int):
    rng = np.random.default_rng(seed)
    garbage = random.Random(seed)
    left, right = operands(rng, fmt, count), operands(rng, fmt, count)
    flushes = rng.integers(0, 2, count)
    vectors = [(unpacked_fields(fmt, int(a), int(f), garbage),
                unpacked_fields(fmt, int(b), int(f), garbage))
               for a, b, f in zip(left, right, flushes)]
    dut = FpMultiply(fmt)

    def apply(ctx, vector):
        ctx.set(dut.multiplicand, vector[0])
        ctx.set(dut.multiplier, vector[1])

    results = run_combinational(dut, vectors, apply, lambda ctx: ctx.get(dut.product))
    for (a, b), got in zip(vectors, results):
        nan = a["nan"] | b["nan"] | (a["infinity"] & b["zero"]) | (a["zero"] & b["infinity"])
        infinity = (a["infinity"] | b["infinity"]) & (1 - nan)
        zero = (a["zero"] | b["zero"]) & (1 - nan)
        assert (got.nan, got.infinity, got.zero, got.sign) == \
            (nan, infinity, zero, a["sign"] ^ b["sign"]), (a, b, got)
        if not (a["nan"] | b["nan"] | a["infinity"] | b["infinity"]):
            expected = (term_value(a["sign"], a["significand"], a["exponent"], fmt.precision)
                        * term_value(b["sign"], b["significand"], b["exponent"], fmt.precision))
            assert term_value(got.sign, got.significand, got.exponent,
                              2 * fmt.precision) == expected, (a, b, got)


@pytest.mark.parametrize("fmt", [FP16, BF16, FP32, FP64], ids=str)
def test_multiply(fmt):
    check_multiply(fmt, 1500, seed=fmt.width * 3 + fmt.exponent_bits)


# --- FpAlignAdd ----------------------------------------------------------------------------------

#: (name, FpAlignAdd arguments, factor format or None for a plain add, output format)
ALIGN_ADD_CONFIGURATIONS = [
    ("fma_fp32", dict(augend_width=48, addend_width=24, exponent_bits=12, guard_bits=3,
                      headroom_bits=26), FP32, FP32),
    ("fma_fp64", dict(augend_width=106, addend_width=53, exponent_bits=15, guard_bits=3,
                      headroom_bits=55), FP64, FP64),
    ("dot_fp16", dict(augend_width=22, addend_width=22, exponent_bits=12, guard_bits=16,
                      headroom_bits=2, order_by_exponent=True), FP16, FP32),
    ("add_fp32", dict(augend_width=24, addend_width=24, exponent_bits=12, guard_bits=3,
                      headroom_bits=2, order_by_exponent=True), None, FP32),
]


def finite_term(fmt: FpFormat, bits: int, flush: int):
    """(sign, significand, exponent) of a finite operand, or None for infinities and NaNs."""
    fields = unpacked_fields(fmt, bits, flush, random.Random(0))
    if fields["infinity"] or fields["nan"]:
        return None
    return fields["sign"], fields["significand"], fields["exponent"]


def align_add_terms(name: str, factor_format, count: int, rng: np.random.Generator):
    """Terms as the fused unit hands them over: products of operands, or operands."""
    terms = []
    while len(terms) < count:
        flush = int(rng.integers(0, 2))
        if name.startswith("fma"):
            a, b, c = (finite_term(factor_format, int(x), flush)
                       for x in operands(rng, factor_format, 3))
            if None in (a, b, c):
                continue
            product = (a[0] ^ b[0], a[1] * b[1], a[2] + b[2] + 1)
            terms.append((product, c))
        elif name.startswith("dot"):
            factors = [finite_term(factor_format, int(x), flush)
                       for x in operands(rng, factor_format, 4)]
            if None in factors:
                continue
            terms.append(tuple((x[0] ^ y[0], x[1] * y[1], x[2] + y[2] + 1)
                               for x, y in (factors[:2], factors[2:])))
        else:
            pair = [finite_term(FP32, int(x), flush) for x in operands(rng, FP32, 2)]
            if None in pair:
                continue
            terms.append(tuple(pair))
    return terms


def round_all_ways(value: Fraction, output_format: FpFormat) -> list[int]:
    """The reference roundings of a nonzero value: four modes × FZ, plus BFRound for fp32."""
    real = to_real(value)
    reference_format = REFERENCE_FORMATS[output_format]
    results = [fpref.fp_round(real, reference_format, flush,
                              fpref.FPRounding(mode))
               for mode in range(4) for flush in (0, flush_fpcr(output_format))]
    if output_format is FP32:
        results.append(fpref.bf_round(real))
    return results


def check_align_add(configuration, count: int, seed: int):
    name, arguments, factor_format, output_format = configuration
    rng = np.random.default_rng(seed)
    vectors = align_add_terms(name, factor_format, count, rng)
    dut = FpAlignAdd(**arguments)
    window = dut.window_width

    def apply(ctx, vector):
        for port, (sign, significand, exponent) in zip((dut.augend, dut.addend), vector):
            ctx.set(port, {"sign": sign, "significand": significand, "exponent": exponent})

    results = run_combinational(dut, vectors, apply, lambda ctx: ctx.get(dut.sum))
    for (augend, addend), got in zip(vectors, results):
        exact = (term_value(*augend[:2], augend[2], arguments["augend_width"])
                 + term_value(*addend[:2], addend[2], arguments["addend_width"]))
        window_value = term_value(got.sign, got.magnitude, got.exponent, window)
        if exact == 0:
            assert got.magnitude == 0, (augend, addend, got)
        elif window_value != exact:
            # Bits were lost: the sticky bit 0 is set and every rounding comes out the same.
            assert got.magnitude & 1, (augend, addend, got)
            assert round_all_ways(window_value, output_format) == \
                round_all_ways(exact, output_format), (augend, addend, got)


@pytest.mark.parametrize("configuration", ALIGN_ADD_CONFIGURATIONS, ids=lambda c: c[0])
def test_align_add(configuration):
    check_align_add(configuration, 1200, seed=len(configuration[0]) + 7)


@pytest.mark.soak
@pytest.mark.parametrize("configuration", ALIGN_ADD_CONFIGURATIONS, ids=lambda c: c[0])
def test_align_add_soak(configuration):
    check_align_add(configuration, 1200 * SOAK_FACTOR, seed=len(configuration[0]) + 1007)


# --- FpNormalize ---------------------------------------------------------------------------------

#: (width, exponent_bits, min_exponent, kept_bits): the sums the fused units normalize, whole or
#: keeping their rounding's bits; ``None``: one unit shared by the formats of the vector unit,
#: told each sum's minimum exponent.
NORMALIZE_CONFIGURATIONS = [(77, 12, FP32.min_exponent, None), (164, 15, FP64.min_exponent, None),
                            (40, 12, FP32.min_exponent, None), (29, 12, FP32.min_exponent, None),
                            (16, 12, FP32.min_exponent, None), (217, 15, None, None),
                            (77, 12, FP32.min_exponent, FP32.precision + 2),
                            (164, 15, FP64.min_exponent, FP64.precision + 2),
                            (40, 12, FP32.min_exponent, FP32.precision + 2),
                            (29, 12, FP32.min_exponent, FP32.precision + 2),
                            (164, 15, None, FP64.precision + 2)]
SHARED_MIN_EXPONENTS = (FP16.min_exponent, FP32.min_exponent, FP64.min_exponent)


def normalize_magnitude(rng: random.Random, width: int, kept_bits: int) -> int:
    """A random magnitude; a third of them end just at the kept bits or have one set bit just
    below (or anywhere below) them, the cases that decide the sticky bit."""
    if rng.random() < 2 / 3:
        magnitude = rng.getrandbits(width) >> rng.choice([0, 0, 1, 2, rng.randrange(width + 1)])
        if rng.random() < 0.3:
            magnitude >>= rng.randrange(width + 1)
        return magnitude
    below = rng.randrange(width - kept_bits + 1)
    magnitude = (rng.getrandbits(kept_bits) | 1 << (kept_bits - 1)) << below
    if below and rng.random() < 0.5:
        magnitude |= 1 << rng.choice([below - 1, rng.randrange(below)])
    return magnitude >> rng.choice([0, 0, rng.randrange(below + 1)])


def check_normalize(width: int, exponent_bits: int, min_exponent: int | None,
                    kept_bits: int | None, count: int, seed: int):
    rng = random.Random(seed)
    kept = width if kept_bits is None else kept_bits
    vectors = []
    for _ in range(count):
        vector_min = rng.choice(SHARED_MIN_EXPONENTS) if min_exponent is None else min_exponent
        magnitude = normalize_magnitude(rng, width, kept)
        exponent = rng.choice([rng.randint(vector_min - width - 4, vector_min + width + 4),
                               rng.randint(vector_min - 2 * width - 8, -vector_min + width)])
        vectors.append(({"sign": rng.getrandbits(1), "exponent": exponent,
                         "magnitude": magnitude}, vector_min))
    dut = FpNormalize(width=width, exponent_bits=exponent_bits, min_exponent=min_exponent,
                      kept_bits=kept_bits)

    def apply(ctx, vector):
        ctx.set(dut.sum, vector[0])
        if min_exponent is None:
            ctx.set(dut.min_exponent, vector[1])
    results = run_combinational(dut, vectors, apply, lambda ctx: ctx.get(dut.normalized))
    for (vector, vector_min), got in zip(vectors, results):
        assert got.zero == (vector["magnitude"] == 0), (vector, got)
        if got.zero:
            continue
        value = term_value(vector["sign"], vector["magnitude"], vector["exponent"], width)
        leading_exponent = vector["exponent"] - (width - vector["magnitude"].bit_length())
        assert got.tiny == (leading_exponent < vector_min), (vector, vector_min, got)
        assert got.sign == vector["sign"]
        if not got.tiny:
            assert got.significand >> (kept - 1) == 1, (vector, got)
            assert got.exponent == leading_exponent, (vector, got)
        else:
            assert got.exponent == vector_min, (vector, vector_min, got)
        # The kept bits, and bit 0 set if anything below them was (exact when all are kept
        # and the value is normal).
        scaled = abs(value) / Fraction(2) ** (got.exponent - kept + 1)
        round_to_odd = (scaled.numerator // scaled.denominator) | (scaled.denominator != 1)
        assert got.significand == round_to_odd, (vector, vector_min, got)


@pytest.mark.parametrize("configuration", NORMALIZE_CONFIGURATIONS,
                         ids=lambda c: f"w{c[0]}" + (f"k{c[3]}" if c[3] else "")
                         + ("shared" if c[2] is None else ""))
def test_normalize(configuration):
    check_normalize(*configuration, count=1500, seed=configuration[0])


# --- FpRound -------------------------------------------------------------------------------------

#: (output format, input significand width)
ROUND_CONFIGURATIONS = [(FP16, 16), (FP32, 29), (FP32, 77), (FP32, 25), (FP32, 16),
                        (FP64, 164)]


def check_round(fmt: FpFormat, width: int, count: int, seed: int):
    rng = random.Random(seed)
    vectors = []
    for _ in range(count):
        exponent = rng.choice([fmt.min_exponent, fmt.min_exponent + rng.randrange(3),
                               rng.randint(fmt.min_exponent, fmt.max_exponent),
                               fmt.max_exponent - rng.randrange(3), fmt.max_exponent + 1])
        significand = rng.getrandbits(width)
        if rng.random() < 0.3:  # few significant bits: exact results and ties
            significand &= ~((1 << rng.randrange(width)) - 1)
        if exponent > fmt.min_exponent or rng.random() < 0.5:
            significand |= 1 << (width - 1)
        significand |= significand == 0
        result_class = rng.choice([ResultClass.NUMBER] * 12 + list(ResultClass))
        # Rounding to odd (BFRound) exists only for single precision, and always flushes.
        rounding = rng.choice(list(RoundingMode) if fmt is FP32 else list(RoundingMode)[:4])
        flush = 1 if rounding == RoundingMode.TO_ODD else rng.getrandbits(1)
        vectors.append(({"result_class": result_class, "sign": rng.getrandbits(1),
                         "exponent": exponent, "significand": significand,
                         "tiny": int(significand >> (width - 1) == 0)}, rounding, flush))
    dut = FpRound(fmt, width=width, exponent_bits=fmt.exponent_bits + 4)

    def apply(ctx, vector):
        value, rounding, flush = vector
        ctx.set(dut.value, value)
        ctx.set(dut.rounding, rounding)
        ctx.set(dut.flush, flush)

    results = run_combinational(dut, vectors, apply, lambda ctx: ctx.get(dut.bits))
    sign_bit = 1 << (fmt.width - 1)
    for (value, rounding, flush), got in zip(vectors, results):
        sign = value["sign"] * sign_bit
        if value["result_class"] == ResultClass.NAN:
            expected = fmt.default_nan
        elif value["result_class"] == ResultClass.INFINITY:
            expected = sign | fmt.infinity
        elif value["result_class"] == ResultClass.ZERO:
            expected = sign
        else:
            exact = to_real(term_value(value["sign"], value["significand"], value["exponent"],
                                       width))
            if rounding == RoundingMode.TO_ODD:
                expected = fpref.bf_round(exact)
            else:
                expected = fpref.fp_round(exact, REFERENCE_FORMATS[fmt],
                                          flush_fpcr(fmt) if flush else 0,
                                          fpref.FPRounding(rounding.value))
        assert got == expected, (fmt, width, value, rounding, flush, hex(got), hex(expected))


@pytest.mark.parametrize("configuration", ROUND_CONFIGURATIONS,
                         ids=lambda c: f"{c[0].name}_w{c[1]}")
def test_round(configuration):
    check_round(*configuration, count=1500, seed=configuration[1])


@pytest.mark.soak
@pytest.mark.parametrize("configuration", ROUND_CONFIGURATIONS,
                         ids=lambda c: f"{c[0].name}_w{c[1]}")
def test_round_soak(configuration):
    check_round(*configuration, count=1500 * SOAK_FACTOR, seed=configuration[1] + 1000)


# --- argument checks -----------------------------------------------------------------------------

def test_arguments_are_checked():
    with pytest.raises(TypeError, match="fmt must be an FpFormat, not 32"):
        FpUnpack(32)
    with pytest.raises(ValueError, match="exponent_bits must be an integer of at least 2, not 1"):
        FpFormat("tiny", 1, 3)
    with pytest.raises(ValueError, match="order_by_exponent needs terms of equal width, not 48 and 24"):
        FpAlignAdd(augend_width=48, addend_width=24, exponent_bits=12, guard_bits=3,
                   headroom_bits=2, order_by_exponent=True)
    with pytest.raises(ValueError, match="guard_bits must be an integer of at least 1, not 0"):
        FpAlignAdd(augend_width=24, addend_width=24, exponent_bits=12, guard_bits=0,
                   headroom_bits=2)
    with pytest.raises(ValueError,
                       match="min_exponent must be None or fit a signed 8-bit exponent, not -1022"):
        FpNormalize(width=20, exponent_bits=8, min_exponent=-1022)
    with pytest.raises(ValueError, match="kept_bits must be None or an integer from 2 to 20, not 21"):
        FpNormalize(width=20, exponent_bits=12, min_exponent=-126, kept_bits=21)
    with pytest.raises(ValueError, match="exponent_bits must be an integer of at least 12 for fp64"):
        FpRound(FP64, width=60, exponent_bits=11)
