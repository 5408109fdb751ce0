"""Proof of the floating-point kernels of the outer products (sim/fp.py, sim/fpref.py).

* The exact reference sim/fpref.py against hand-derived answers (ties, overflow in each rounding
  mode, signs of zero, flush-to-zero, NaN and infinity rules, the two roundings of the widening
  form, round-to-odd of BFloat16) and against numpy's IEEE arithmetic wherever that is an
  independent oracle (round to nearest, no flushing, exactly representable intermediates).
* The vectorized kernels sim/fp.py against the reference, bit for bit: ≥ 100,000 random cases
  per kernel, biased to special values, ties, cancellation, overflow and underflow, over all 16
  combinations of FPCR.RMode, FZ and FZ16 (and ≥ 1,000,000 more under ``-m soak``).
* Both against QEMU 10 through scripts/fp_qemu_check.py: every known answer, 4,000 biased
  random cases per kernel, and whole FMOPA/FMOPS/BFMOPA tiles of special values (skipped without
  qemu-aarch64 and binutils, failed instead when ZATILE_REQUIRE_TOOLS=1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from script_modules import load_script
from zatile.sim import fp, fpref

RN, RP, RM, RZ = (mode << 22 for mode in range(4))
FZ, FZ16 = fp.FPCR_FZ, fp.FPCR_FZ16
#: Every combination of the FPCR fields the kernels read.
FPCR_SETTINGS = [rmode | fz | fz16 for rmode in (RN, RP, RM, RZ) for fz in (0, FZ)
                 for fz16 in (0, FZ16)]
NAN32, NAN64 = 0x7FC00000, 0x7FF8000000000000

KERNELS = ("fmla_f32", "fmla_f64", "fdotadd_f16", "bfdotadd")


def call(kernel: str, implementation: str, operands, fpcr: int):
    """Call ``kernel`` from zatile.sim.fp ("fast") or sim.fpref ("reference"); bfdotadd takes no FPCR."""
    function = getattr(fp if implementation == "fast" else fpref, kernel)
    return function(*operands) if kernel == "bfdotadd" else function(*operands, fpcr)


# --- Known answers -------------------------------------------------------------------------------

@dataclass(frozen=True)
class KnownAnswer:
    """One hand-derived case: ``kernel(*operands, fpcr) == expected``, and why."""

    why: str
    kernel: str
    operands: tuple[int, ...]
    fpcr: int
    expected: int


def _per_mode(why: str, kernel: str, operands: tuple[int, ...], extra_fpcr: int,
              rn: int, rp: int, rm: int, rz: int) -> list[KnownAnswer]:
    return [KnownAnswer(f"{why} [{name}]", kernel, operands, mode | extra_fpcr, expected)
            for name, mode, expected in (("RN", RN, rn), ("RP", RP, rp), ("RM", RM, rm),
                                         ("RZ", RZ, rz))]


KNOWN_ANSWERS = [
    # fmla_f32: acc + a*b
    *_per_mode("1 + 2^-24 is a tie, to even", "fmla_f32",
               (0x3F800000, 0x33800000, 0x3F800000), 0,
               0x3F800000, 0x3F800001, 0x3F800000, 0x3F800000),
    *_per_mode("(1 + 2^-23) + 2^-24 is a tie, to even (up)", "fmla_f32",
               (0x3F800001, 0x33800000, 0x3F800000), 0,
               0x3F800002, 0x3F800002, 0x3F800001, 0x3F800001),
    *_per_mode("-(1 + 2^-24): the directed modes swap", "fmla_f32",
               (0xBF800000, 0xB3800000, 0x3F800000), 0,
               0xBF800000, 0xBF800000, 0xBF800001, 0xBF800000),
    *_per_mode("max * 2 overflows", "fmla_f32", (0, 0x7F7FFFFF, 0x40000000), 0,
               0x7F800000, 0x7F800000, 0x7F7FFFFF, 0x7F7FFFFF),
    *_per_mode("-max * 2 overflows", "fmla_f32", (0, 0xFF7FFFFF, 0x40000000), 0,
               0xFF800000, 0xFF7FFFFF, 0xFF800000, 0xFF7FFFFF),
    *_per_mode("max + half an ulp is a tie; max is odd, so RN overflows", "fmla_f32",
               (0x7F7FFFFF, 0x73000000, 0x3F800000), 0,
               0x7F800000, 0x7F800000, 0x7F7FFFFF, 0x7F7FFFFF),
    *_per_mode("max + a quarter ulp stays finite in RN", "fmla_f32",
               (0x7F7FFFFF, 0x72800000, 0x3F800000), 0,
               0x7F7FFFFF, 0x7F800000, 0x7F7FFFFF, 0x7F7FFFFF),
    *_per_mode("1 - 1 is an exact zero: -0 only in RM", "fmla_f32",
               (0x3F800000, 0xBF800000, 0x3F800000), 0, 0, 0, 0x80000000, 0),
    *_per_mode("+0 + (+0 * -0): zeros of opposite signs", "fmla_f32",
               (0, 0, 0x80000000), 0, 0, 0, 0x80000000, 0),
    *_per_mode("-0 + (1 * -0): zeros of the same sign keep it", "fmla_f32",
               (0x80000000, 0x3F800000, 0x80000000), 0,
               0x80000000, 0x80000000, 0x80000000, 0x80000000),
    *_per_mode("2^127 + 2^-149: the far smaller addend is only a sticky bit", "fmla_f32",
               (0x7F000000, 0x00000001, 0x3F800000), 0,
               0x7F000000, 0x7F000001, 0x7F000000, 0x7F000000),
    *_per_mode("2^127 - 2^-149: rounding down crosses into the binade below", "fmla_f32",
               (0x7F000000, 0x80000001, 0x3F800000), 0,
               0x7F000000, 0x7F000000, 0x7EFFFFFF, 0x7EFFFFFF),
    *_per_mode("(1 + 2^-23)^2 - (1 + 2^-22) = 2^-46: the product is not rounded", "fmla_f32",
               (0xBF800002, 0x3F800001, 0x3F800001), 0,
               0x28800000, 0x28800000, 0x28800000, 0x28800000),
    *_per_mode("2^-126 * (1 - 2^-24) is a tie between the largest denormal and 2^-126",
               "fmla_f32", (0, 0x00800000, 0x3F7FFFFF), 0,
               0x00800000, 0x00800000, 0x007FFFFF, 0x007FFFFF),
    *_per_mode("... with FZ it is flushed before rounding, even in RP", "fmla_f32",
               (0, 0x00800000, 0x3F7FFFFF), FZ, 0, 0, 0, 0),
    KnownAnswer("2^-100 * 2^-30 is the denormal 2^-130", "fmla_f32",
                (0, 0x0D800000, 0x30800000), RN, 0x00080000),
    KnownAnswer("... flushed to +0 with FZ", "fmla_f32", (0, 0x0D800000, 0x30800000), RN | FZ, 0),
    KnownAnswer("... and to -0 when negative", "fmla_f32", (0, 0x8D800000, 0x30800000),
                RN | FZ, 0x80000000),
    KnownAnswer("a denormal addend survives + 0 without FZ", "fmla_f32",
                (0x80000001, 0, 0), RN, 0x80000001),
    KnownAnswer("with FZ it is -0, and -0 + +0 is +0", "fmla_f32", (0x80000001, 0, 0), RN | FZ, 0),
    KnownAnswer("... or -0 in RM", "fmla_f32", (0x80000001, 0, 0), RM | FZ, 0x80000000),
    KnownAnswer("FZ16 does not touch single precision", "fmla_f32", (0x80000001, 0, 0),
                RN | FZ16, 0x80000001),
    KnownAnswer("denormal * inf is inf", "fmla_f32", (0, 0x00000001, 0x7F800000), RN, 0x7F800000),
    KnownAnswer("with FZ the denormal is 0, and 0 * inf is invalid", "fmla_f32",
                (0, 0x00000001, 0x7F800000), RN | FZ, NAN32),
    KnownAnswer("inf * 0 + 1 is the default NaN", "fmla_f32", (0x3F800000, 0x7F800000, 0), RN,
                NAN32),
    KnownAnswer("inf * 0 + qNaN is the default NaN", "fmla_f32", (0x7FC12345, 0x7F800000, 0), RN,
                NAN32),
    KnownAnswer("+inf + (-inf * 1) is the default NaN", "fmla_f32",
                (0x7F800000, 0xFF800000, 0x3F800000), RN, NAN32),
    KnownAnswer("-inf + 1 * 1 is -inf", "fmla_f32", (0xFF800000, 0x3F800000, 0x3F800000), RN,
                0xFF800000),
    KnownAnswer("max + inf * 1 is inf even in RZ", "fmla_f32",
                (0x7F7FFFFF, 0x7F800000, 0x3F800000), RZ, 0x7F800000),
    KnownAnswer("a signalling NaN gives the default NaN", "fmla_f32",
                (0x3F800000, 0x7F800001, 0x3F800000), RN, NAN32),
    KnownAnswer("a negative NaN with a payload gives the positive default NaN", "fmla_f32",
                (0xFFC00001, 0x3F800000, 0x3F800000), RN, NAN32),
    KnownAnswer("FPCR.DN makes no difference: ZA forms force it", "fmla_f32",
                (0xFFC00001, 0x3F800000, 0x3F800000), RN | 1 << 25, NAN32),
    # fmla_f64
    *_per_mode("1 + 2^-53 is a tie, to even", "fmla_f64",
               (0x3FF0000000000000, 0x3CA0000000000000, 0x3FF0000000000000), 0,
               0x3FF0000000000000, 0x3FF0000000000001, 0x3FF0000000000000, 0x3FF0000000000000),
    *_per_mode("max * 2 overflows", "fmla_f64", (0, 0x7FEFFFFFFFFFFFFF, 0x4000000000000000), 0,
               0x7FF0000000000000, 0x7FF0000000000000, 0x7FEFFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF),
    *_per_mode("(1 + 2^-52)^2 - (1 + 2^-51) = 2^-104: fused", "fmla_f64",
               (0xBFF0000000000002, 0x3FF0000000000001, 0x3FF0000000000001), 0,
               0x3970000000000000, 0x3970000000000000, 0x3970000000000000, 0x3970000000000000),
    *_per_mode("1 - (1 + 2^-52) = -2^-52: cancellation", "fmla_f64",
               (0x3FF0000000000000, 0xBFF0000000000000, 0x3FF0000000000001), 0,
               0xBCB0000000000000, 0xBCB0000000000000, 0xBCB0000000000000, 0xBCB0000000000000),
    *_per_mode("2^1023 - 2^-1074 crosses into the binade below", "fmla_f64",
               (0x7FE0000000000000, 0x8000000000000001, 0x3FF0000000000000), 0,
               0x7FE0000000000000, 0x7FE0000000000000, 0x7FDFFFFFFFFFFFFF, 0x7FDFFFFFFFFFFFFF),
    *_per_mode("1 - 1 is an exact zero: -0 only in RM", "fmla_f64",
               (0x3FF0000000000000, 0xBFF0000000000000, 0x3FF0000000000000), 0,
               0, 0, 0x8000000000000000, 0),
    *_per_mode("2^-1022 * (1 - 2^-53) is a tie between the largest denormal and 2^-1022",
               "fmla_f64", (0, 0x0010000000000000, 0x3FEFFFFFFFFFFFFF), 0,
               0x0010000000000000, 0x0010000000000000, 0x000FFFFFFFFFFFFF, 0x000FFFFFFFFFFFFF),
    *_per_mode("... with FZ it is flushed before rounding", "fmla_f64",
               (0, 0x0010000000000000, 0x3FEFFFFFFFFFFFFF), FZ, 0, 0, 0, 0),
    KnownAnswer("2^-1000 * 2^-60 is the denormal 2^-1060", "fmla_f64",
                (0, 0x0170000000000000, 0x3C30000000000000), RN, 0x0000000000004000),
    KnownAnswer("... flushed with FZ", "fmla_f64", (0, 0x0170000000000000, 0x3C30000000000000),
                RN | FZ, 0),
    KnownAnswer("denormal * denormal + denormal: only the addend survives in RN", "fmla_f64",
                (0x0000000000000003, 0x000FFFFFFFFFFFFF, 0x000FFFFFFFFFFFFF), RN, 3),
    KnownAnswer("... and the tiny product rounds it up in RP", "fmla_f64",
                (0x0000000000000003, 0x000FFFFFFFFFFFFF, 0x000FFFFFFFFFFFFF), RP, 4),
    KnownAnswer("inf * 0 is the default NaN", "fmla_f64", (0, 0xFFF0000000000000, 0), RN, NAN64),
    # fdotadd_f16: acc + (a0*b0 + a1*b1), two roundings
    KnownAnswer("1 + 2^-24 rounds to 1 in FPDot, then 1 + 2^-24 again: not fused",
                "fdotadd_f16", (0x33800000, 0x3C00, 0x0C00, 0x3C00, 0x0C00), RN, 0x3F800000),
    KnownAnswer("... in RP each rounding goes up", "fdotadd_f16",
                (0x33800000, 0x3C00, 0x0C00, 0x3C00, 0x0C00), RP, 0x3F800002),
    KnownAnswer("half denormal 2^-24 * 1 is the single 2^-24", "fdotadd_f16",
                (0, 0x0001, 0, 0x3C00, 0), RN, 0x33800000),
    KnownAnswer("... FZ16 flushes it", "fdotadd_f16", (0, 0x0001, 0, 0x3C00, 0), RN | FZ16, 0),
    KnownAnswer("... FZ does not", "fdotadd_f16", (0, 0x0001, 0, 0x3C00, 0), RN | FZ, 0x33800000),
    KnownAnswer("a denormal accumulator + 0", "fdotadd_f16", (1, 0, 0, 0, 0), RN, 1),
    KnownAnswer("... flushed by FZ", "fdotadd_f16", (1, 0, 0, 0, 0), RN | FZ, 0),
    KnownAnswer("... not by FZ16", "fdotadd_f16", (1, 0, 0, 0, 0), RN | FZ16, 1),
    KnownAnswer("-0 + (-0*1 + -0*1) stays -0", "fdotadd_f16",
                (0x80000000, 0x8000, 0x8000, 0x3C00, 0x3C00), RN, 0x80000000),
    KnownAnswer("1*1 + -1*1 is an exact +0, and -0 + +0 is +0", "fdotadd_f16",
                (0x80000000, 0x3C00, 0xBC00, 0x3C00, 0x3C00), RN, 0),
    KnownAnswer("... both are -0 in RM", "fdotadd_f16",
                (0x80000000, 0x3C00, 0xBC00, 0x3C00, 0x3C00), RM, 0x80000000),
    KnownAnswer("inf*1 + inf*-1 is invalid", "fdotadd_f16",
                (0, 0x7C00, 0x7C00, 0x3C00, 0xBC00), RN, NAN32),
    KnownAnswer("inf * 0 is invalid", "fdotadd_f16", (0, 0x7C00, 0, 0, 0), RN, NAN32),
    KnownAnswer("a half NaN gives the single default NaN", "fdotadd_f16",
                (0, 0x7D00, 0, 0x3C00, 0), RN, NAN32),
    KnownAnswer("inf*1 + 1*1 is inf", "fdotadd_f16", (0, 0x7C00, 0x3C00, 0x3C00, 0x3C00), RN,
                0x7F800000),
    KnownAnswer("-inf + inf*1 is invalid", "fdotadd_f16", (0xFF800000, 0x7C00, 0, 0x3C00, 0), RN,
                NAN32),
    *_per_mode("max + 65504^2 (far below half an ulp of max)", "fdotadd_f16",
               (0x7F7FFFFF, 0x7BFF, 0, 0x7BFF, 0), 0,
               0x7F7FFFFF, 0x7F800000, 0x7F7FFFFF, 0x7F7FFFFF),
    # bfdotadd: round to odd, flush to zero, FPCR ignored
    *_per_mode("1 + 2^-24 rounds to odd whatever FPCR says", "bfdotadd",
               (0x3F800000, 0x3F80, 0, 0x3380, 0), 0,
               0x3F800001, 0x3F800001, 0x3F800001, 0x3F800001),
    KnownAnswer("1 + 2^-30 rounds to 1 + 2^-23, so -1 + that is 2^-23, not 2^-30", "bfdotadd",
                (0xBF800000, 0x3F80, 0x3080, 0x3F80, 0x3F80), RN, 0x34000000),
    KnownAnswer("max * 2 overflows to inf (round to odd never saturates here)", "bfdotadd",
                (0, 0x7F7F, 0, 0x4000, 0), RZ, 0x7F800000),
    KnownAnswer("-max * 2 overflows to -inf", "bfdotadd", (0, 0xFF7F, 0, 0x4000, 0), RN,
                0xFF800000),
    KnownAnswer("a denormal input is zero, and zero * inf is invalid", "bfdotadd",
                (0, 0x0001, 0, 0x7F80, 0), RN, NAN32),
    KnownAnswer("2^-126 * 0.5 is below the normal range: flushed to +0", "bfdotadd",
                (0x3F800000, 0x0080, 0, 0x3F00, 0), RN, 0x3F800000),
    KnownAnswer("-0 + flushed (+0) product is +0", "bfdotadd",
                (0x80000000, 0x0080, 0, 0x3F00, 0), RN, 0),
    KnownAnswer("1 + -1*1 is +0 even in RM", "bfdotadd", (0x3F800000, 0xBF80, 0, 0x3F80, 0), RM, 0),
    KnownAnswer("-0 + (-0*1 + -0*1) is -0", "bfdotadd",
                (0x80000000, 0x8000, 0x8000, 0x3F80, 0x3F80), RN, 0x80000000),
    KnownAnswer("a denormal accumulator is flushed", "bfdotadd", (0x00000001, 0, 0, 0, 0), RN, 0),
    KnownAnswer("a negative denormal accumulator is -0, and -0 + +0 is +0", "bfdotadd",
                (0x80000001, 0, 0, 0, 0), RN, 0),
    KnownAnswer("1.5 * 2^-126 - 2^-126 is below the normal range: flushed", "bfdotadd",
                (0x00C00000, 0x8080, 0, 0x3F80, 0), RN, 0),
    KnownAnswer("a signalling BFloat16 NaN gives the default NaN", "bfdotadd",
                (0, 0x7F81, 0, 0x3F80, 0), RN, NAN32),
]


@pytest.mark.parametrize("case", KNOWN_ANSWERS, ids=lambda case: f"{case.kernel}: {case.why}")
def test_known_answer(case):
    reference = call(case.kernel, "reference", case.operands, case.fpcr)
    assert reference == case.expected, f"reference gave 0x{reference:x}"
    fast = int(call(case.kernel, "fast", case.operands, case.fpcr))
    assert fast == case.expected, f"sim.fp gave 0x{fast:x}"


# --- Biased random operands ----------------------------------------------------------------------

def biased_operands(rng: np.random.Generator, fmt: fpref.Format, count: int) -> np.ndarray:
    """Bit patterns of ``fmt`` (uint64) biased to the places where floating point goes wrong.

    A mix of the format's special values, denormals, normals at both ends of the exponent range
    (products that underflow or overflow), numbers near 1 with few significand bits (exact
    products whose sums land on ties) and uniformly random patterns.
    """
    F, E, width = fmt.fraction_bits, fmt.exponent_bits, fmt.width
    max_exponent_field = 2 ** E - 2
    sign = rng.integers(0, 2, count, dtype=np.uint64) << np.uint64(width - 1)
    fraction = rng.integers(0, 2 ** F, count, dtype=np.uint64)
    few_bits = fraction & np.uint64((2 ** F - 1) ^ (2 ** (F - 3) - 1))  # top 3 bits only
    low_exponent = rng.integers(1, F + 4, count, dtype=np.uint64)
    high_exponent = rng.integers(max_exponent_field - F - 3, max_exponent_field + 1, count,
                                 dtype=np.uint64)
    near_one = rng.integers(fmt.bias - F - 2, fmt.bias + F + 3, count, dtype=np.uint64)
    specials = rng.choice(np.array(fpref.special_values(fmt), dtype=np.uint64), count)
    uniform = rng.integers(0, 2 ** width - 1, count, dtype=np.uint64, endpoint=True)
    choices = [
        specials,
        sign | np.maximum(fraction, np.uint64(1)),  # denormal
        sign | low_exponent << np.uint64(F) | fraction,
        sign | high_exponent << np.uint64(F) | fraction,
        sign | near_one << np.uint64(F) | few_bits,
        sign | near_one << np.uint64(F) | fraction,
        uniform,
    ]
    kind = rng.integers(0, len(choices), count)
    return np.choose(kind, choices)


def aimed_addends(rng: np.random.Generator, target: np.ndarray, fmt: fpref.Format,
                  count: int) -> np.ndarray:
    """Addends aimed at an approximation of what they will be added to (bit patterns).

    Its negation (massive cancellation), its negation a few ulps off, or the target scaled by
    2^k for |k| up to the significand width and beyond (ties, sticky-only addends, huge
    exponent differences); or, a quarter of the time, an unrelated biased operand.
    """
    F, width = fmt.fraction_bits, fmt.width
    sign_bit = np.uint64(1 << (width - 1))
    exponent_mask = np.uint64((2 ** fmt.exponent_bits - 1) << F)
    negated = target ^ sign_bit
    magnitude = negated & ~sign_bit
    nudge = rng.integers(-2, 3, count).astype(np.int64)
    nudged = (negated & sign_bit) | np.clip(magnitude.astype(np.int64) + nudge, 0,
                                            int(exponent_mask)).astype(np.uint64)
    shift = rng.integers(-(F + 8), F + 9, count)
    exponent = ((target & exponent_mask) >> np.uint64(F)).astype(np.int64)
    scaled_exponent = np.clip(exponent + shift, 0, 2 ** fmt.exponent_bits - 2).astype(np.uint64)
    scaled = (target & ~exponent_mask) | scaled_exponent << np.uint64(F)
    scaled = scaled ^ (rng.integers(0, 2, count, dtype=np.uint64) * sign_bit)
    choices = [negated, nudged, scaled, biased_operands(rng, fmt, count)]
    return np.choose(rng.integers(0, len(choices), count), choices)


def _values(bits: np.ndarray, dtype) -> np.ndarray:
    """Bit patterns as float64 values (through the float type ``dtype`` of their width)."""
    unsigned = {np.float16: np.uint16, np.float32: np.uint32, np.float64: np.uint64}[dtype]
    return bits.astype(unsigned).view(dtype).astype(np.float64)


def _bfloat16_values(bits: np.ndarray) -> np.ndarray:
    """BFloat16 bit patterns as float64 values (a BFloat16 is the top half of a single)."""
    return _values(bits << np.uint64(16), np.float32)


def _bits(values: np.ndarray, dtype) -> np.ndarray:
    """float64 values rounded to ``dtype`` (nearest), as uint64 bit patterns."""
    unsigned = {np.float32: np.uint32, np.float64: np.uint64}[dtype]
    with np.errstate(all="ignore"):
        return values.astype(dtype).view(unsigned).astype(np.uint64)


def fmla_operands(rng: np.random.Generator, fmt: fpref.Format, count: int) -> list[np.ndarray]:
    """acc, a, b for fmla_f32/fmla_f64, acc aimed at the rounded product a*b."""
    dtype = np.float32 if fmt is fpref.FP32 else np.float64
    a, b = biased_operands(rng, fmt, count), biased_operands(rng, fmt, count)
    with np.errstate(all="ignore"):
        product = _values(a, dtype) * _values(b, dtype)
    return [aimed_addends(rng, _bits(product, dtype), fmt, count), a, b]


def dot_operands(rng: np.random.Generator, fmt: fpref.Format, count: int) -> list[np.ndarray]:
    """acc, a0, a1, b0, b1 for fdotadd_f16 (half) or bfdotadd (BFloat16).

    The second product is often aimed at the first (cancelling or scaled), and acc at the dot.
    """
    to_values = (lambda bits: _values(bits, np.float16)) if fmt is fpref.FP16 else _bfloat16_values
    a0, b0 = biased_operands(rng, fmt, count), biased_operands(rng, fmt, count)
    a1, b1 = biased_operands(rng, fmt, count), biased_operands(rng, fmt, count)
    aimed_a1 = aimed_addends(rng, a0, fmt, count)
    pair_up = rng.integers(0, 2, count).astype(bool)
    a1 = np.where(pair_up, aimed_a1, a1)
    b1 = np.where(pair_up, b0, b1)
    with np.errstate(all="ignore"):
        dot = to_values(a0) * to_values(b0) + to_values(a1) * to_values(b1)
    acc = aimed_addends(rng, _bits(dot, np.float32), fpref.FP32, count)
    return [acc, a0, a1, b0, b1]


OPERAND_GENERATORS = {
    "fmla_f32": lambda rng, count: fmla_operands(rng, fpref.FP32, count),
    "fmla_f64": lambda rng, count: fmla_operands(rng, fpref.FP64, count),
    "fdotadd_f16": lambda rng, count: dot_operands(rng, fpref.FP16, count),
    "bfdotadd": lambda rng, count: dot_operands(rng, fpref.BF16, count),
}
RESULT_FORMAT = {"fmla_f32": fpref.FP32, "fmla_f64": fpref.FP64, "fdotadd_f16": fpref.FP32,
                 "bfdotadd": fpref.FP32}


def result_classes(results: np.ndarray, fmt: fpref.Format) -> dict[str, int]:
    """How many results fall in each class that a test campaign should reach."""
    sign_bit = np.uint64(1 << (fmt.width - 1))
    magnitude = results.astype(np.uint64) & (sign_bit - np.uint64(1))
    infinity = np.uint64(fpref.fp_infinity(0, fmt))
    return {
        "+0": int(np.sum(results == 0)),
        "-0": int(np.sum(results == sign_bit)),
        "denormal": int(np.sum((magnitude > 0) & (magnitude < np.uint64(1 << fmt.fraction_bits)))),
        "largest normal": int(np.sum(magnitude == infinity - np.uint64(1))),
        "infinity": int(np.sum(magnitude == infinity)),
        "default NaN": int(np.sum(results == np.uint64(fpref.fp_default_nan(fmt)))),
    }


def mismatches(kernel: str, operands: list[np.ndarray], fpcr: int) -> tuple[np.ndarray, list]:
    """Run sim.fp and sim.fpref on the same operands; the fast results and the differences."""
    fast = call(kernel, "fast", operands, fpcr)
    rows = zip(*(column.tolist() for column in operands))
    reference = [call(kernel, "reference", row, fpcr) for row in rows]
    differing = [
        (f"fpcr=0x{fpcr:x}", [hex(column[i]) for column in operands],
         f"reference 0x{reference[i]:x}", f"sim.fp 0x{int(fast[i]):x}")
        for i in np.flatnonzero(fast != np.array(reference, dtype=np.uint64))
    ]
    return fast, differing


def run_campaign(kernel: str, total: int, seed: int) -> dict[str, int]:
    """Compare sim.fp with sim.fpref on ``total`` cases spread over all FPCR settings."""
    rng = np.random.default_rng(seed)
    settings = FPCR_SETTINGS if kernel != "bfdotadd" else [RN]  # BFDotAdd ignores FPCR
    per_setting = -(-total // len(settings))
    classes: dict[str, int] = {}
    for fpcr in settings:
        operands = OPERAND_GENERATORS[kernel](rng, per_setting)
        fast, differing = mismatches(kernel, operands, fpcr)
        assert not differing, f"{len(differing)} mismatches, first: {differing[:5]}"
        for name, count in result_classes(fast, RESULT_FORMAT[kernel]).items():
            classes[name] = classes.get(name, 0) + count
    return classes


@pytest.mark.parametrize("kernel", KERNELS)
def test_random_cases_match_reference(kernel):
    classes = run_campaign(kernel, total=100_000, seed=sum(map(ord, kernel)))
    # The generator must actually reach the awkward corners, not just pass over them.
    wanted = {name: 100 for name in classes}
    if kernel == "bfdotadd":  # round to odd never saturates and denormals are flushed
        wanted.update({"largest normal": 0, "denormal": 0})
    elif kernel == "fdotadd_f16":  # only a denormal accumulator makes a denormal sum
        wanted.update({"denormal": 20})
    short = {name: count for name, count in classes.items() if count < wanted[name]}
    assert not short, f"campaign reached too few results of these classes: {short}"


@pytest.mark.soak
@pytest.mark.parametrize("kernel", KERNELS)
def test_soak_random_cases_match_reference(kernel):
    run_campaign(kernel, total=250_000, seed=2026 + sum(map(ord, kernel)))


# --- The reference against numpy's IEEE arithmetic -----------------------------------------------

def _numpy_expected(result: np.ndarray, dtype) -> np.ndarray:
    """numpy results as bit patterns, with every NaN replaced by the default NaN."""
    default_nan = NAN32 if dtype is np.float32 else NAN64
    return np.where(np.isnan(result), np.uint64(default_nan), _bits(result, dtype))


def _assert_reference_agrees(kernel: str, operands: list[np.ndarray], expected: np.ndarray,
                             usable: np.ndarray, minimum: int):
    rows = list(zip(*(column[usable].tolist() for column in operands)))
    assert len(rows) >= minimum, f"only {len(rows)} usable cases"
    reference = np.array([call(kernel, "reference", row, RN) for row in rows], dtype=np.uint64)
    differing = np.flatnonzero(reference != expected[usable])
    assert not differing.size, [(tuple(hex(v) for v in rows[i]), hex(reference[i]),
                                 hex(int(expected[usable][i]))) for i in differing[:5]]


def _two_sum_error(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """The rounding error of the float64 sum left + right (Knuth's TwoSum); 0 when exact."""
    total = left + right
    right_part = total - left
    return (left - (total - right_part)) + (right - right_part)


def test_reference_fmla_f32_matches_numpy_when_float64_is_exact():
    # acc + a*b computed in float64 is exact when TwoSum's error is zero; rounding that to
    # float32 is then the single rounding FPMulAdd performs (with IEEE zero signs and NaNs).
    rng = np.random.default_rng(11)
    acc, a, b = fmla_operands(rng, fpref.FP32, 30_000)
    with np.errstate(all="ignore"):
        product = _values(a, np.float32) * _values(b, np.float32)
        total = _values(acc, np.float32) + product
        usable = (_two_sum_error(_values(acc, np.float32), product) == 0) | ~np.isfinite(total)
    _assert_reference_agrees("fmla_f32", [acc, a, b], _numpy_expected(total, np.float32), usable,
                             10_000)


def test_reference_fmla_f64_matches_numpy_when_the_product_is_exact():
    # With b a power of two and no underflow, numpy's a*b is exact, so acc + a*b rounds once.
    rng = np.random.default_rng(12)
    count = 30_000
    acc, a, _ = fmla_operands(rng, fpref.FP64, count)
    power = rng.integers(1023 - 60, 1023 + 61, count, dtype=np.uint64) << np.uint64(52)
    b = power | rng.integers(0, 2, count, dtype=np.uint64) << np.uint64(63)
    with np.errstate(all="ignore"):
        product = _values(a, np.float64) * _values(b, np.float64)
        exact = np.isfinite(product) & (product / _values(b, np.float64) == _values(a, np.float64))
        total = _values(acc, np.float64) + product
    usable = exact | ~np.isfinite(_values(a, np.float64))
    _assert_reference_agrees("fmla_f64", [acc, a, b], _numpy_expected(total, np.float64),
                             usable, 10_000)


def test_reference_fdotadd_matches_numpy_float32_arithmetic():
    # FPDot rounds the exact dot once to single (numpy: exact float64 dot, then astype), FPAdd
    # is an IEEE single-precision addition (numpy float32 +).
    rng = np.random.default_rng(13)
    acc, a0, a1, b0, b1 = dot_operands(rng, fpref.FP16, 30_000)
    with np.errstate(all="ignore"):
        first = _values(a0, np.float16) * _values(b0, np.float16)
        second = _values(a1, np.float16) * _values(b1, np.float16)
        dot = first + second
        usable = (_two_sum_error(first, second) == 0) | ~np.isfinite(dot)
        total = _values(acc, np.float32).astype(np.float32) + dot.astype(np.float32)
    _assert_reference_agrees("fdotadd_f16", [acc, a0, a1, b0, b1],
                             _numpy_expected(total.astype(np.float64), np.float32), usable,
                             10_000)


def test_reference_bfdotadd_matches_numpy_when_nothing_rounds():
    # Round to odd leaves exactly representable normal values alone, so where every step is
    # exact and normal (or an exact zero) numpy's float64 arithmetic gives the same answer.
    rng = np.random.default_rng(14)
    acc, a0, a1, b0, b1 = dot_operands(rng, fpref.BF16, 30_000)

    def single_normal_or_zero(values):
        return (values == 0) | ((np.abs(values) >= 2.0 ** -126)
                                & (values.astype(np.float32).astype(np.float64) == values))

    with np.errstate(all="ignore"):
        inputs = [_values(acc, np.float32), *map(_bfloat16_values, (a0, a1, b0, b1))]
        first = inputs[1] * inputs[3]
        second = inputs[2] * inputs[4]
        dot = first + second
        total = inputs[0] + dot
        usable = ((_two_sum_error(first, second) == 0) & (_two_sum_error(inputs[0], dot) == 0)
                  & np.logical_and.reduce([single_normal_or_zero(values) for values in
                                           (*inputs, first, second, dot, total)]))
    _assert_reference_agrees("bfdotadd", [acc, a0, a1, b0, b1],
                             _numpy_expected(total, np.float32), usable, 2_000)


# --- Interface -----------------------------------------------------------------------------------

def test_results_broadcast_and_keep_their_dtype():
    acc = np.zeros((3, 4), dtype=np.uint32)
    row = np.full((3, 1), 0x3F800000, dtype=np.uint32)
    column = np.full(4, 0x40000000, dtype=np.uint32)
    result = fp.fmla_f32(acc, row, column, RN)
    assert result.shape == (3, 4) and result.dtype == np.uint32
    assert (result == 0x40000000).all()
    assert fp.fmla_f64(0, 0x3FF0000000000000, 0x3FF0000000000000, RN).dtype == np.uint64
    assert fp.fdotadd_f16(np.zeros(5, np.uint32), 0x3C00, 0, 0x3C00, 0, RN).shape == (5,)
    assert fp.bfdotadd(0, 0x3F80, 0, 0x3F80, 0).shape == ()


def test_operands_must_be_bit_patterns_of_the_right_width():
    with pytest.raises(TypeError, match="float32"):
        fp.fmla_f32(np.float32(1.0), 0, 0, RN)
    with pytest.raises(ValueError, match="above bit 15"):
        fp.fdotadd_f16(0, 0x10000, 0, 0, 0, RN)
    with pytest.raises(ValueError, match="non-negative"):
        fp.fmla_f64(-1, 0, 0, RN)


def test_fpcr_rounding_reads_rmode():
    assert [fp.fpcr_rounding(mode | FZ | FZ16) for mode in (RN, RP, RM, RZ)] == [0, 1, 2, 3]
    assert fpref.fpcr_rounding(RM | 0x3) == 2


# --- QEMU ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def qemu_check():
    """scripts/fp_qemu_check.py as a module."""
    return load_script("fp_qemu_check")


@pytest.mark.tools
def test_known_answers_match_qemu(qemu, qemu_check):
    for kernel in KERNELS:
        cases = [case for case in KNOWN_ANSWERS if case.kernel == kernel]
        operands = [np.array(column, dtype=np.uint64)
                    for column in zip(*(case.operands for case in cases))]
        observed = qemu_check.run_cases(kernel, operands, [case.fpcr for case in cases])
        wrong = [(case.why, f"fpcr=0x{case.fpcr:x}", f"qemu 0x{int(value):x}")
                 for case, value in zip(cases, observed) if value != case.expected]
        assert not wrong, f"{kernel}: {wrong}"


@pytest.mark.tools
@pytest.mark.parametrize("kernel", KERNELS)
def test_biased_random_cases_match_qemu(qemu, qemu_check, kernel):
    rng = np.random.default_rng(77 + sum(map(ord, kernel)))
    per_setting = 250
    batches = [OPERAND_GENERATORS[kernel](rng, per_setting) for _ in FPCR_SETTINGS]
    operands = [np.concatenate(columns) for columns in zip(*batches)]
    fpcr = np.repeat(np.array(FPCR_SETTINGS, dtype=np.uint64), per_setting)
    observed = qemu_check.run_cases(kernel, operands, fpcr)
    for index, setting in enumerate(FPCR_SETTINGS):
        chosen = slice(index * per_setting, (index + 1) * per_setting)
        expected = call(kernel, "fast", [column[chosen] for column in operands], setting)
        differing = np.flatnonzero(observed[chosen] != expected)
        assert not differing.size, [
            (f"fpcr=0x{setting:x}", [hex(int(column[chosen][i])) for column in operands],
             f"qemu 0x{int(observed[chosen][i]):x}", f"sim.fp 0x{int(expected[i]):x}")
            for i in differing[:5]]


@pytest.mark.tools
def test_outer_products_match_qemu(qemu, qemu_check):
    outcomes = qemu_check.run_check(records_per_operation=200, seed=5)
    for operation, outcome in outcomes.items():
        assert outcome.cases > 0
        assert not outcome.mismatches, f"{operation}: {outcome.mismatches[:5]}"
