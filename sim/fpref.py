"""Exact scalar reference for the floating-point arithmetic of the SME outer products.

Each function transcribes the Arm ARM pseudocode (DDI0487 M.a.a, J1.3.3: ``FPUnpackBase``,
``FPRoundBase``, ``FPMulAdd``, ``FPDot``, ``FPAdd``, ``BFUnpack``, ``BFRound``, ``BFMulH``,
``FPAdd_BF16``, ``BFDotAdd``) as literally as Python allows, so that :mod:`sim.fp` (and later
the RTL floating-point units) can be checked against something obviously right. It deliberately
shares no code with :mod:`sim.fp`.

The pseudocode's ``real`` is :class:`Real`, an exact dyadic rational (integer × 2^k). That is
enough: IEEE values are dyadic, and the pseudocode only adds, multiplies and scales by powers of
two before it rounds, so every intermediate value is exact and the only rounding is the one the
pseudocode performs. (:class:`fractions.Fraction` would do too, but it is ten times slower, and
the tests run this module hundreds of thousands of times.)

Operands and results are Python ints holding IEEE bit patterns; ``fpcr`` is the value of the
FPCR register. Modelled: a PE without FEAT_AFP and without FEAT_EBF16, on which FPCR.AH, FIZ,
NEP and EBF are RES0, so only RMode, FZ and FZ16 matter. The ``_ZA`` forms force FPCR.DN and
raise no exceptions, so the exception side of the pseudocode is left out and every NaN result is
the default NaN (docs/isa.md, "FP rules").
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = [
    "BF16",
    "FP16",
    "FP32",
    "FP64",
    "Format",
    "bfdotadd",
    "fdotadd_f16",
    "fmla_f32",
    "fmla_f64",
    "fpcr_rounding",
    "special_values",
]

# FPCR fields (Arm ARM C5.2.8).
FPCR_FZ16 = 1 << 19
FPCR_FZ = 1 << 24
FPCR_RMODE_SHIFT = 22


class Real:
    """An exact dyadic rational ``numerator * 2**exponent``: the pseudocode's ``real``."""

    __slots__ = ("numerator", "exponent")

    def __init__(self, numerator: int, exponent: int = 0):
        self.numerator = numerator
        self.exponent = exponent

    def _aligned(self, other: Real | int) -> tuple[int, int]:
        """Both numerators over the smaller of the two exponents."""
        if isinstance(other, int):
            other = Real(other)
        exponent = min(self.exponent, other.exponent)
        return (self.numerator << (self.exponent - exponent),
                other.numerator << (other.exponent - exponent))

    def __add__(self, other: Real) -> Real:
        mine, theirs = self._aligned(other)
        return Real(mine + theirs, min(self.exponent, other.exponent))

    def __sub__(self, other: Real | int) -> Real:
        if isinstance(other, int):
            other = Real(other)
        return self + -other

    def __neg__(self) -> Real:
        return Real(-self.numerator, self.exponent)

    def __mul__(self, other: Real) -> Real:
        return Real(self.numerator * other.numerator, self.exponent + other.exponent)

    def times_power_of_two(self, power: int) -> Real:
        """``self * 2.0^power`` (also ``self / 2.0^-power``)."""
        return Real(self.numerator, self.exponent + power)

    def round_down(self) -> int:
        """``RoundDown``: the largest integer not above the value."""
        if self.exponent >= 0:
            return self.numerator << self.exponent
        return self.numerator >> -self.exponent  # arithmetic shift: floor, also when negative

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (Real, int)):
            return NotImplemented
        mine, theirs = self._aligned(other)
        return mine == theirs

    def __lt__(self, other: Real | int) -> bool:
        mine, theirs = self._aligned(other)
        return mine < theirs

    def __gt__(self, other: Real | int) -> bool:
        mine, theirs = self._aligned(other)
        return mine > theirs

    def __repr__(self) -> str:
        return f"Real({self.numerator}, {self.exponent})"


#: 0.5, for the round-to-nearest comparisons.
HALF = Real(1, -1)


class FPType(enum.Enum):
    """The operand classes of ``FPUnpack``."""

    ZERO = enum.auto()
    DENORMAL = enum.auto()
    NONZERO = enum.auto()
    INFINITY = enum.auto()
    QNAN = enum.auto()
    SNAN = enum.auto()


class FPRounding(enum.Enum):
    """``FPRounding``, in the order of FPCR.RMode (``FPDecodeRounding``)."""

    TIEEVEN = 0
    POSINF = 1
    NEGINF = 2
    ZERO = 3


@dataclass(frozen=True)
class Format:
    """An IEEE binary interchange format (``FPBits``).

    Attributes
    ----------
    width : int
        N, the total number of bits.
    exponent_bits : int
        E.
    fraction_bits : int
        F, the stored fraction bits (the leading 1 is implicit).
    """

    width: int
    exponent_bits: int
    fraction_bits: int

    @property
    def minimum_exp(self) -> int:
        """The exponent of the smallest normal number (−14, −126, −1022)."""
        return 2 - 2 ** (self.exponent_bits - 1)

    @property
    def bias(self) -> int:
        return 2 ** (self.exponent_bits - 1) - 1


FP16 = Format(16, 5, 10)
FP32 = Format(32, 8, 23)
FP64 = Format(64, 11, 52)
#: BFloat16 as a bit layout, for :func:`special_values`; its arithmetic goes through bf_unpack.
BF16 = Format(16, 8, 7)


def fpcr_rounding(fpcr: int) -> int:
    """FPCR.RMode, bits [23:22]: 0 nearest-even, 1 towards +inf, 2 towards −inf, 3 towards zero."""
    return (fpcr >> FPCR_RMODE_SHIFT) & 3


def _flushes(fmt: Format, fpcr: int) -> bool:
    """Whether denormals of ``fmt`` are flushed: FZ16 for half precision, FZ otherwise."""
    return bool(fpcr & (FPCR_FZ16 if fmt.width == 16 else FPCR_FZ))


# --- Constants (FPZero, FPInfinity, FPMaxNormal, FPDefaultNaN) -----------------------------------

def fp_zero(sign: int, fmt: Format) -> int:
    return sign << (fmt.width - 1)


def fp_infinity(sign: int, fmt: Format) -> int:
    return sign << (fmt.width - 1) | (2 ** fmt.exponent_bits - 1) << fmt.fraction_bits


def fp_max_normal(sign: int, fmt: Format) -> int:
    return (sign << (fmt.width - 1) | (2 ** fmt.exponent_bits - 2) << fmt.fraction_bits
            | (2 ** fmt.fraction_bits - 1))


def fp_default_nan(fmt: Format) -> int:
    """Sign 0, exponent all ones, fraction 1 followed by zeros (0x7E00, 0x7FC00000, ...)."""
    return fp_infinity(0, fmt) | 1 << (fmt.fraction_bits - 1)


# --- FPUnpackBase --------------------------------------------------------------------------------

def fp_unpack(fpval: int, fmt: Format, fpcr: int) -> tuple[FPType, int, Real]:
    """``FPUnpackBase`` for IEEE half, single and double precision (AHP, AH and FIZ are 0).

    Returns the class, the sign bit and the exact value (0 for zeros and NaNs; infinities are
    never used by value here, so they get 0 too rather than the pseudocode's 2^1000000).
    """
    sign = fpval >> (fmt.width - 1) & 1
    exp = fpval >> fmt.fraction_bits & (2 ** fmt.exponent_bits - 1)
    frac = fpval & (2 ** fmt.fraction_bits - 1)
    if exp == 0:
        if frac == 0 or _flushes(fmt, fpcr):
            fptype, value = FPType.ZERO, Real(0)
        else:
            fptype = FPType.DENORMAL
            value = Real(frac, fmt.minimum_exp - fmt.fraction_bits)
    elif exp == 2 ** fmt.exponent_bits - 1:
        if frac == 0:
            fptype = FPType.INFINITY
        else:
            quiet = frac >> (fmt.fraction_bits - 1) & 1
            fptype = FPType.QNAN if quiet else FPType.SNAN
        value = Real(0)
    else:
        fptype = FPType.NONZERO
        # 2^(exp-bias) * (1 + frac * 2^-F)
        value = Real(2 ** fmt.fraction_bits + frac, exp - fmt.bias - fmt.fraction_bits)
    if sign:
        value = -value
    return fptype, sign, value


def _is_nan(fptype: FPType) -> bool:
    return fptype in (FPType.QNAN, FPType.SNAN)


# --- FPRoundBase ---------------------------------------------------------------------------------

def normalize_real(x: Real) -> tuple[Real, int]:
    """``NormalizeReal``: (mantissa, exponent) with x = mantissa * 2^exponent, 1 <= mantissa < 2."""
    assert x > 0
    exponent = x.numerator.bit_length() - 1 + x.exponent
    return x.times_power_of_two(-exponent), exponent


def fp_round(op: Real, fmt: Format, fpcr: int, rounding: FPRounding) -> int:
    """``FPRoundBase`` with AH = 0, AHP = 0, no saturation and no exceptions."""
    assert op != 0
    F, E, minimum_exp = fmt.fraction_bits, fmt.exponent_bits, fmt.minimum_exp
    sign, mantissa = (1, -op) if op < 0 else (0, op)
    mantissa, exponent = normalize_real(mantissa)

    # Flush-to-zero happens before rounding, on the exact exponent.
    if _flushes(fmt, fpcr) and exponent < minimum_exp:
        return fp_zero(sign, fmt)

    biased_exp = max((exponent - minimum_exp) + 1, 0)
    if biased_exp == 0:
        mantissa = mantissa.times_power_of_two(-(minimum_exp - exponent))
    int_mant = mantissa.times_power_of_two(F).round_down()
    error = mantissa.times_power_of_two(F) - int_mant

    if rounding is FPRounding.TIEEVEN:
        round_up = error > HALF or (error == HALF and int_mant & 1 == 1)
        overflow_to_inf = True
    elif rounding is FPRounding.POSINF:
        round_up = error != 0 and sign == 0
        overflow_to_inf = sign == 0
    elif rounding is FPRounding.NEGINF:
        round_up = error != 0 and sign == 1
        overflow_to_inf = sign == 1
    else:
        round_up = False
        overflow_to_inf = False

    if round_up:
        int_mant += 1
        if int_mant == 2 ** F:  # rounded up from denormalized to normalized
            biased_exp = 1
        if int_mant == 2 ** (F + 1):  # rounded up to the next exponent
            biased_exp += 1
            int_mant //= 2

    if biased_exp >= 2 ** E - 1:
        return fp_infinity(sign, fmt) if overflow_to_inf else fp_max_normal(sign, fmt)
    return sign << (fmt.width - 1) | biased_exp << F | (int_mant & (2 ** F - 1))


# --- FPMulAdd (as called by FPMulAdd_ZA: DN = 1, no exceptions) ----------------------------------

def fp_mul_add(addend: int, op1: int, op2: int, fmt: Format, fpcr: int) -> int:
    """addend + op1*op2 with a single rounding (``FPMulAdd``, FPCR.DN forced to 1)."""
    rounding = FPRounding(fpcr_rounding(fpcr))
    typeA, signA, valueA = fp_unpack(addend, fmt, fpcr)
    type1, sign1, value1 = fp_unpack(op1, fmt, fpcr)
    type2, sign2, value2 = fp_unpack(op2, fmt, fpcr)
    inf1, zero1 = type1 is FPType.INFINITY, type1 is FPType.ZERO
    inf2, zero2 = type2 is FPType.INFINITY, type2 is FPType.ZERO

    # FPProcessNaNs3 and the "QNaN addend with inf*0" rule both yield the default NaN when DN=1.
    if _is_nan(typeA) or _is_nan(type1) or _is_nan(type2):
        return fp_default_nan(fmt)

    infA, zeroA = typeA is FPType.INFINITY, typeA is FPType.ZERO
    signP = sign1 ^ sign2
    infP = inf1 or inf2
    zeroP = zero1 or zero2
    invalidop = (inf1 and zero2) or (zero1 and inf2) or (infA and infP and signA != signP)
    if invalidop:
        return fp_default_nan(fmt)
    if (infA and signA == 0) or (infP and signP == 0):
        return fp_infinity(0, fmt)
    if (infA and signA == 1) or (infP and signP == 1):
        return fp_infinity(1, fmt)
    if zeroA and zeroP and signA == signP:
        return fp_zero(signA, fmt)
    result_value = valueA + value1 * value2
    if result_value == 0:
        return fp_zero(1 if rounding is FPRounding.NEGINF else 0, fmt)
    return fp_round(result_value, fmt, fpcr, rounding)


# --- FPAdd (FPCR.DN forced to 1) -----------------------------------------------------------------

def fp_add(op1: int, op2: int, fmt: Format, fpcr: int) -> int:
    """op1 + op2 rounded once (``FPAdd``, FPCR.DN forced to 1)."""
    rounding = FPRounding(fpcr_rounding(fpcr))
    type1, sign1, value1 = fp_unpack(op1, fmt, fpcr)
    type2, sign2, value2 = fp_unpack(op2, fmt, fpcr)
    if _is_nan(type1) or _is_nan(type2):
        return fp_default_nan(fmt)
    inf1, zero1 = type1 is FPType.INFINITY, type1 is FPType.ZERO
    inf2, zero2 = type2 is FPType.INFINITY, type2 is FPType.ZERO
    if inf1 and inf2 and sign1 != sign2:
        return fp_default_nan(fmt)
    if (inf1 and sign1 == 0) or (inf2 and sign2 == 0):
        return fp_infinity(0, fmt)
    if (inf1 and sign1 == 1) or (inf2 and sign2 == 1):
        return fp_infinity(1, fmt)
    if zero1 and zero2 and sign1 == sign2:
        return fp_zero(sign1, fmt)
    result_value = value1 + value2
    if result_value == 0:
        return fp_zero(1 if rounding is FPRounding.NEGINF else 0, fmt)
    return fp_round(result_value, fmt, fpcr, rounding)


# --- FPDot (half precision, FPCR.DN forced to 1) -------------------------------------------------

def fp_dot(op1_a: int, op1_b: int, op2_a: int, op2_b: int, fpcr: int) -> int:
    """op1_a*op2_a + op1_b*op2_b on half-precision inputs, rounded once to single precision."""
    rounding = FPRounding(fpcr_rounding(fpcr))
    type1_a, sign1_a, value1_a = fp_unpack(op1_a, FP16, fpcr)
    type1_b, sign1_b, value1_b = fp_unpack(op1_b, FP16, fpcr)
    type2_a, sign2_a, value2_a = fp_unpack(op2_a, FP16, fpcr)
    type2_b, sign2_b, value2_b = fp_unpack(op2_b, FP16, fpcr)
    # FPProcessNaNs4 then FPConvertNaN: with DN=1 every NaN becomes the single-precision default.
    if any(_is_nan(t) for t in (type1_a, type1_b, type2_a, type2_b)):
        return fp_default_nan(FP32)
    inf1_a, zero1_a = type1_a is FPType.INFINITY, type1_a is FPType.ZERO
    inf1_b, zero1_b = type1_b is FPType.INFINITY, type1_b is FPType.ZERO
    inf2_a, zero2_a = type2_a is FPType.INFINITY, type2_a is FPType.ZERO
    inf2_b, zero2_b = type2_b is FPType.INFINITY, type2_b is FPType.ZERO

    signPa, signPb = sign1_a ^ sign2_a, sign1_b ^ sign2_b
    infPa, infPb = inf1_a or inf2_a, inf1_b or inf2_b
    zeroPa, zeroPb = zero1_a or zero2_a, zero1_b or zero2_b
    invalidop = ((inf1_a and zero2_a) or (zero1_a and inf2_a)
                 or (inf1_b and zero2_b) or (zero1_b and inf2_b)
                 or (infPa and infPb and signPa != signPb))
    if invalidop:
        return fp_default_nan(FP32)
    if (infPa and signPa == 0) or (infPb and signPb == 0):
        return fp_infinity(0, FP32)
    if (infPa and signPa == 1) or (infPb and signPb == 1):
        return fp_infinity(1, FP32)
    if zeroPa and zeroPb and signPa == signPb:
        return fp_zero(signPa, FP32)
    result_value = value1_a * value2_a + value1_b * value2_b
    if result_value == 0:
        return fp_zero(1 if rounding is FPRounding.NEGINF else 0, FP32)
    return fp_round(result_value, FP32, fpcr, rounding)


# --- BFloat16 "standard behaviours" (FEAT_EBF16 absent or FPCR.EBF = 0) --------------------------

def bf_unpack(fpval: int, width: int) -> tuple[FPType, int, Real]:
    """``BFUnpack`` of a BFloat16 (width 16) or single-precision (width 32) value.

    Denormals always count as zero (keeping their sign) and every NaN is a quiet NaN.
    """
    if width == 16:
        sign, exp, frac = fpval >> 15 & 1, fpval >> 7 & 0xFF, (fpval & 0x7F) << 16
    else:
        sign, exp, frac = fpval >> 31 & 1, fpval >> 23 & 0xFF, fpval & 0x7FFFFF
    if exp == 0:
        fptype, value = FPType.ZERO, Real(0)
    elif exp == 0xFF:
        fptype, value = (FPType.INFINITY if frac == 0 else FPType.QNAN), Real(0)
    else:
        fptype = FPType.NONZERO
        value = Real(2 ** 23 + frac, exp - 127 - 23)
    if sign:
        value = -value
    return fptype, sign, value


def bf_round(op: Real) -> int:
    """``BFRound``: single precision, round to odd, denormals flushed, overflow to infinity."""
    assert op != 0
    minimum_exp, E, F = -126, 8, 23
    sign, mantissa = (1, -op) if op < 0 else (0, op)
    mantissa, exponent = normalize_real(mantissa)
    if exponent < minimum_exp:
        return fp_zero(sign, FP32)
    biased_exp = max((exponent - minimum_exp) + 1, 0)  # >= 1: denormals were flushed above
    int_mant = mantissa.times_power_of_two(F).round_down()
    error = mantissa.times_power_of_two(F) - int_mant
    if error != 0 and int_mant & 1 == 0:
        int_mant += 1
    if biased_exp >= 2 ** E - 1:
        return fp_infinity(sign, FP32)
    return sign << 31 | biased_exp << F | (int_mant & (2 ** F - 1))


def bf_mul_h(op1: int, op2: int) -> int:
    """``BFMulH``: the single-precision product of two BFloat16 values."""
    type1, sign1, value1 = bf_unpack(op1, 16)
    type2, sign2, value2 = bf_unpack(op2, 16)
    if type1 is FPType.QNAN or type2 is FPType.QNAN:
        return fp_default_nan(FP32)
    inf1, zero1 = type1 is FPType.INFINITY, type1 is FPType.ZERO
    inf2, zero2 = type2 is FPType.INFINITY, type2 is FPType.ZERO
    if (inf1 and zero2) or (zero1 and inf2):
        return fp_default_nan(FP32)
    if inf1 or inf2:
        return fp_infinity(sign1 ^ sign2, FP32)
    if zero1 or zero2:
        return fp_zero(sign1 ^ sign2, FP32)
    return bf_round(value1 * value2)


def fp_add_bf16(op1: int, op2: int) -> int:
    """``FPAdd_BF16``: single-precision add following BFloat16 behaviours."""
    type1, sign1, value1 = bf_unpack(op1, 32)
    type2, sign2, value2 = bf_unpack(op2, 32)
    if type1 is FPType.QNAN or type2 is FPType.QNAN:
        return fp_default_nan(FP32)
    inf1, zero1 = type1 is FPType.INFINITY, type1 is FPType.ZERO
    inf2, zero2 = type2 is FPType.INFINITY, type2 is FPType.ZERO
    if inf1 and inf2 and sign1 != sign2:
        return fp_default_nan(FP32)
    if (inf1 and sign1 == 0) or (inf2 and sign2 == 0):
        return fp_infinity(0, FP32)
    if (inf1 and sign1 == 1) or (inf2 and sign2 == 1):
        return fp_infinity(1, FP32)
    if zero1 and zero2 and sign1 == sign2:
        return fp_zero(sign1, FP32)
    result_value = value1 + value2
    if result_value == 0:
        return fp_zero(0, FP32)  # round to odd gives +0 for an exact zero
    return bf_round(result_value)


# --- The per-element operations of the outer products --------------------------------------------

def fmla_f32(acc: int, a: int, b: int, fpcr: int) -> int:
    """``FPMulAdd_ZA`` on single precision (FMOPA .S): acc + a*b, one rounding."""
    return fp_mul_add(acc, a, b, FP32, fpcr)


def fmla_f64(acc: int, a: int, b: int, fpcr: int) -> int:
    """``FPMulAdd_ZA`` on double precision (FMOPA .D): acc + a*b, one rounding."""
    return fp_mul_add(acc, a, b, FP64, fpcr)


def fdotadd_f16(acc: int, a0: int, a1: int, b0: int, b1: int, fpcr: int) -> int:
    """``FPDotAdd_ZA`` (widening FMOPA): FPAdd(acc, FPDot(a0, a1, b0, b1)), two roundings."""
    return fp_add(acc, fp_dot(a0, a1, b0, b1, fpcr), FP32, fpcr)


def bfdotadd(acc: int, a0: int, a1: int, b0: int, b1: int) -> int:
    """``BFDotAdd`` with standard BFloat16 behaviours (BFMOPA); FPCR plays no part."""
    prod = fp_add_bf16(bf_mul_h(a0, b0), bf_mul_h(a1, b1))
    return fp_add_bf16(acc, prod)


# --- Stimulus ------------------------------------------------------------------------------------

def special_values(fmt: Format) -> list[int]:
    """Bit patterns every test of a floating-point unit should include, both signs of each.

    Zero, the smallest and largest denormals, the smallest normal, one, the largest normal,
    infinity, the default (quiet) NaN, a quiet NaN with a payload and a signalling NaN.
    """
    F = fmt.fraction_bits
    magnitudes = [
        0,
        1,
        2 ** F - 1,
        2 ** F,
        fmt.bias << F,
        fp_max_normal(0, fmt),
        fp_infinity(0, fmt),
        fp_default_nan(fmt),
        fp_default_nan(fmt) | 1,
        fp_infinity(0, fmt) | 1,
    ]
    return [sign << (fmt.width - 1) | magnitude for sign in (0, 1) for magnitude in magnitudes]
