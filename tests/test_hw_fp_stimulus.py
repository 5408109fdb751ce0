"""Biased random stimulus for the hw.fp tests, and a check that it reaches the corner cases.

The other tests/test_hw_fp_*.py modules import the generators from here. Operands are drawn
from a mixture that an unbiased generator would almost never produce: special values (both
zeros, smallest and largest denormals, smallest normal, one, largest normal, infinities, quiet
and signalling NaNs), denormals, values near the top and bottom of the exponent range, and values
clustered around one with short significands (so that sums align, cancel and tie). Whole
vectors add constructed cases: addends that cancel the product, and exact ties.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from zatile.hw.fp.format import BF16, FP16, FP32, FP64, FpFormat
from zatile.sim import fp, fpref

__all__ = ["RMODES", "dot_vectors", "fma_vectors", "fpcr_values", "operands"]

#: FPCR.RMode values.
RMODES = range(4)

_REFERENCE_FORMATS = {FP16: fpref.FP16, BF16: fpref.BF16, FP32: fpref.FP32, FP64: fpref.FP64}
# How far (in binades) the clustered values spread around one.
_CLUSTER_SPAN = {FP16: 8, BF16: 24, FP32: 30, FP64: 70}


def _pack(fmt: FpFormat, sign, biased_exponent, fraction) -> np.ndarray:
    return ((sign.astype(np.uint64) << np.uint64(fmt.width - 1))
            | (biased_exponent.astype(np.uint64) << np.uint64(fmt.fraction_bits))
            | fraction.astype(np.uint64))


def _fractions(rng: np.random.Generator, fmt: FpFormat, count: int) -> np.ndarray:
    """Random fractions, a third of them short (low bits cleared) to make exact sums and ties."""
    bits = fmt.fraction_bits
    fraction = rng.integers(0, 2 ** bits, count, dtype=np.uint64)
    cleared = rng.integers(0, bits + 1, count).astype(np.uint64)
    short = rng.random(count) < 1 / 3
    mask = ~((np.uint64(1) << cleared) - np.uint64(1)) & np.uint64(2 ** bits - 1)
    return np.where(short, fraction & mask, fraction)


def operands(rng: np.random.Generator, fmt: FpFormat, count: int) -> np.ndarray:
    """``count`` biased random bit patterns of ``fmt`` (uint64)."""
    top = 2 ** fmt.exponent_bits - 1
    sign = rng.integers(0, 2, count)
    fraction = _fractions(rng, fmt, count)
    span = _CLUSTER_SPAN[fmt]
    category = rng.choice(6, count, p=[0.18, 0.12, 0.40, 0.12, 0.09, 0.09])
    exponent = np.select(
        [category == 2, category == 3, category == 4, category == 5],
        [rng.integers(fmt.bias - span, fmt.bias + span + 1, count),  # clustered around one
         np.zeros(count, np.int64),                                  # denormal (or zero)
         rng.integers(top - 3, top, count),                          # near overflow
         rng.integers(1, 4, count)],                                 # smallest normals
        rng.integers(0, top + 1, count))                             # any
    values = _pack(fmt, sign, exponent, fraction)
    specials = np.array(fpref.special_values(_REFERENCE_FORMATS[fmt]), np.uint64)
    values = np.where(category == 1, rng.choice(specials, count), values)
    uniform = rng.integers(0, 2 ** 62, count, dtype=np.uint64) * np.uint64(4) \
        + rng.integers(0, 4, count, dtype=np.uint64)
    return np.where(category == 0, uniform & np.uint64(2 ** fmt.width - 1), values)


def fpcr_values(rng: np.random.Generator, count: int) -> np.ndarray:
    """FPCR values with every RMode and FZ/FZ16 on or off."""
    return ((rng.integers(0, 4, count) << 22) | (rng.integers(0, 2, count) << 24)
            | (rng.integers(0, 2, count) << 19)).astype(np.int64)


def _negated_nearby(fmt: FpFormat, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Bit patterns of −value, moved by up to two units in the last place (for cancellation)."""
    with np.errstate(all="ignore"):
        if fmt is FP64:
            bits = values.astype(np.float64).view(np.uint64)
        else:
            bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = bits ^ np.uint64(1 << (fmt.width - 1))
    step = rng.integers(-2, 3, len(bits))
    moved = bits.astype(np.int64) + step
    return np.where(moved >= 0, moved, bits.astype(np.int64)).astype(np.uint64) \
        & np.uint64(2 ** fmt.width - 1)


def _float_values(fmt: FpFormat, bits: np.ndarray) -> np.ndarray:
    """float64 values of bit patterns of ``fmt`` (exact for every format used here)."""
    if fmt is FP64:
        return bits.astype(np.uint64).view(np.float64)
    if fmt is FP32:
        return bits.astype(np.uint32).view(np.float32).astype(np.float64)
    if fmt is FP16:
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)


def _ties(rng: np.random.Generator, fmt: FpFormat, count: int):
    """(addend, multiplicand, multiplier) whose exact sum lies halfway between two neighbours.

    The addend is a normal value and the product ±2^k × half its unit in the last place, with
    k = 0 (an exact tie) or a few places further down (near-ties on either side).
    """
    bias, bits = fmt.bias, fmt.fraction_bits
    addend_exponent = rng.integers(bias - 40, bias + 40, count)
    addend = _pack(fmt, rng.integers(0, 2, count), addend_exponent, _fractions(rng, fmt, count))
    # 2^x * 2^y = 2^(e - bits - 1 - k), the half ulp of the addend scaled down by 2^k.
    extra = np.where(rng.random(count) < 0.5, 0, rng.integers(1, 4, count))
    product_exponent = addend_exponent - bias - bits - 1 - extra
    multiplicand_exponent = rng.integers(-10, 11, count)
    multiplier_exponent = product_exponent - multiplicand_exponent
    multiplicand = _pack(fmt, rng.integers(0, 2, count), multiplicand_exponent + bias,
                         np.zeros(count, np.uint64))
    multiplier = _pack(fmt, rng.integers(0, 2, count), multiplier_exponent + bias,
                       np.where(extra == 0, 0, _fractions(rng, fmt, count)))
    return addend, multiplicand, multiplier


def fma_vectors(rng: np.random.Generator, fmt: FpFormat, count: int) -> dict[str, np.ndarray]:
    """Operands of ``addend + multiplicand * multiplier`` plus an FPCR value per vector.

    About 15 % have an addend that (nearly) cancels the product and 10 % are (near-)ties.
    """
    multiplicand = operands(rng, fmt, count)
    multiplier = operands(rng, fmt, count)
    addend = operands(rng, fmt, count)
    with np.errstate(all="ignore"):
        product = _float_values(fmt, multiplicand) * _float_values(fmt, multiplier)
    cancelling = _negated_nearby(fmt, product, rng) if fmt in (FP32, FP64) else addend
    choice = rng.random(count)
    addend = np.where(choice < 0.15, cancelling, addend)
    if fmt in (FP32, FP64):
        tie_addend, tie_multiplicand, tie_multiplier = _ties(rng, fmt, count)
        tie = choice > 0.90
        addend = np.where(tie, tie_addend, addend)
        multiplicand = np.where(tie, tie_multiplicand, multiplicand)
        multiplier = np.where(tie, tie_multiplier, multiplier)
    return {"addend": addend, "multiplicand": multiplicand, "multiplier": multiplier,
            "fpcr": fpcr_values(rng, count)}


def dot_vectors(rng: np.random.Generator, fmt: FpFormat, count: int) -> dict[str, np.ndarray]:
    """Operands of ``addend + a0*b0 + a1*b1`` (fp16 or bf16 factors, fp32 addend) and FPCR.

    About 15 % have an addend that (nearly) cancels the dot product, and 15 % a second product
    that (nearly) cancels the first.
    """
    a0, a1, b0, b1 = (operands(rng, fmt, count) for _ in range(4))
    choice = rng.random(count)
    # a1 = -a0 (or a neighbour), b1 = b0: the two products cancel.
    a1 = np.where(choice > 0.85, (a0 ^ np.uint64(0x8000)) + (rng.random(count) < 0.5), a1)
    a1 &= np.uint64(0xFFFF)
    b1 = np.where(choice > 0.85, b0, b1)
    addend = operands(rng, FP32, count)
    with np.errstate(all="ignore"):
        dot = (_float_values(fmt, a0) * _float_values(fmt, b0)
               + _float_values(fmt, a1) * _float_values(fmt, b1))
    addend = np.where(choice < 0.15, _negated_nearby(FP32, dot, rng), addend)
    return {"addend": addend, "a0": a0, "a1": a1, "b0": b0, "b1": b1,
            "fpcr": fpcr_values(rng, count)}


# --- coverage of the generators ------------------------------------------------------------------

def _classes(fmt: FpFormat, bits: np.ndarray) -> set[str]:
    magnitude = bits & np.uint64(2 ** (fmt.width - 1) - 1)
    infinity = np.uint64(fmt.infinity)
    found = set()
    checks = {
        "+0": bits == 0,
        "-0": bits == np.uint64(1 << (fmt.width - 1)),
        "denormal": (magnitude > 0) & (magnitude < np.uint64(1 << fmt.fraction_bits)),
        "smallest denormal": magnitude == 1,
        "largest normal": magnitude == infinity - np.uint64(1),
        "infinity": magnitude == infinity,
        "quiet NaN": magnitude >= np.uint64(fmt.default_nan),
        "signalling NaN": (magnitude > infinity) & (magnitude < np.uint64(fmt.default_nan)),
    }
    for name, mask in checks.items():
        if mask.any():
            found.add(name)
    return found


def test_operands_cover_every_class():
    rng = np.random.default_rng(1)
    for fmt in (FP16, BF16, FP32, FP64):
        values = operands(rng, fmt, 2000)
        assert _classes(fmt, values) == {"+0", "-0", "denormal", "smallest denormal",
                                         "largest normal", "infinity", "quiet NaN",
                                         "signalling NaN"}, fmt


def _exact_single(bits: int) -> Fraction | None:
    value = np.uint32(bits).view(np.float32)
    return Fraction(float(value)) if np.isfinite(value) else None


def test_fma_vectors_reach_ties_cancellation_overflow_and_underflow():
    """Classify 2000 fp32 vectors exactly; each interesting outcome must occur often enough."""
    rng = np.random.default_rng(2)
    vectors = fma_vectors(rng, FP32, 2000)
    ties = cancellations = overflows = denormal_results = 0
    for addend, multiplicand, multiplier in zip(vectors["addend"], vectors["multiplicand"],
                                                vectors["multiplier"]):
        values = [_exact_single(int(x)) for x in (addend, multiplicand, multiplier)]
        if None in values:
            continue
        exact = values[0] + values[1] * values[2]
        largest = max(abs(values[0]), abs(values[1] * values[2]))
        if exact == 0 or largest == 0:
            continue
        exponent = exact.numerator.bit_length() - exact.denominator.bit_length()
        if abs(exact) < Fraction(2) ** exponent:
            exponent -= 1
        ulp = Fraction(2) ** max(exponent - 23, -149)
        ties += (exact / ulp).denominator == 2
        cancellations += abs(exact) < largest / 2 ** 20
        overflows += abs(exact) >= Fraction(2) ** 128
        denormal_results += abs(exact) < Fraction(2) ** -126
    assert ties >= 80 and cancellations >= 100 and overflows >= 50 and denormal_results >= 50, \
        (ties, cancellations, overflows, denormal_results)


def test_dot_vectors_reach_cancellation_and_every_fpcr_setting():
    rng = np.random.default_rng(3)
    for fmt in (FP16, BF16):
        vectors = dot_vectors(rng, fmt, 2000)
        assert len(set(vectors["fpcr"].tolist())) == 16
        result = (fp.bfdotadd(vectors["addend"], vectors["a0"], vectors["a1"], vectors["b0"],
                              vectors["b1"])
                  if fmt is BF16 else
                  np.array([fp.fdotadd_f16(*(int(vectors[k][i]) for k in
                                             ("addend", "a0", "a1", "b0", "b1")),
                                           int(vectors["fpcr"][i])) for i in range(2000)]))
        magnitude = result & 0x7FFFFFFF
        addend_magnitude = vectors["addend"].astype(np.int64) & 0x7FFFFFFF
        # Results far below a finite addend: cancellation happened.
        cancelled = (addend_magnitude < 0x7F800000) & (magnitude + (20 << 23) < addend_magnitude)
        assert cancelled.sum() >= 80, fmt
