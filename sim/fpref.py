"""Exact scalar reference for zatile's floating-point arithmetic: the SME outer products, and
the streaming-SVE operations with their exceptions (:class:`FPArith`).

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

:class:`FPArith` is the other half: the SVE operations (``FPAdd``, ``FPMulAdd``, ``FPDiv``,
``FPSqrt``, ``FPMax``, ``FPRoundInt``, ``FPConvert``, ``FixedToFP``, ``FPToFixed``,
``FPRecipEstimate``, ``FPRSqrtEstimate``, the step functions, ``FPRecpX``, the
comparisons, ...) with FPCR.DN honoured, NaN payloads propagated and every exception
``FPProcessException`` raises collected as FPSR cumulative bits (docs/isa.md, "Floating-point
exceptions"). Division and square root are not dyadic, so it computes over
:class:`fractions.Fraction`.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from fractions import Fraction

from zatile.sw.arch.pseudocode import recip_estimate_table, rsqrt_estimate_table

__all__ = [
    "BF16",
    "FPArith",
    "FPRounding",
    "FPType",
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
    #: Not an FPCR mode: FRINTA (``FPRoundInt`` only).
    TIEAWAY = 4
    #: Not an FPCR mode: round to odd, FCVTX (``FPRoundBase`` only): truncate, then set the
    #: lowest fraction bit of an inexact result.
    ODD = 5


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


# --- SVE arithmetic with FPCR.DN, NaN propagation and exceptions -------------------------------

# FPSR cumulative bits (zatile.sw.arch.constants.FpsrFlag; sim may not need sw/arch here).
_IOC, _DZC, _OFC, _UFC, _IXC, _IDC = 1 << 0, 1 << 1, 1 << 2, 1 << 3, 1 << 4, 1 << 7
FPCR_DN = 1 << 25
FPCR_AHP = 1 << 26


class FPArith:
    """The Arm pseudocode's floating-point operations under one FPCR, collecting exceptions.

    Each method transcribes its pseudocode function (named in its docstring) with FPCR.AH = 0
    and no trapping; operands and results are bit patterns of the :class:`Format` given.
    Every exception raised is ORed into :attr:`flags`, so one instance serves the active
    elements of one instruction.

    Parameters
    ----------
    fpcr : int
        The FPCR value (RMode, FZ, FZ16, DN, AHP matter).

    Attributes
    ----------
    flags : int
        The FPSR cumulative bits raised so far (IOC 0, DZC 1, OFC 2, UFC 3, IXC 4, IDC 7).
    """

    def __init__(self, fpcr: int):
        self.fpcr = fpcr
        self.flags = 0

    @property
    def rounding(self) -> FPRounding:
        """``FPRoundingMode``: FPCR.RMode."""
        return FPRounding(fpcr_rounding(self.fpcr))

    # ------------------------------------------------------------------ unpack, round, NaNs
    def _flush(self, fmt: Format) -> bool:
        """Whether denormals of ``fmt`` flush: FZ16 for half precision, FZ otherwise (BFloat16
        results are rounded as single precision, so FZ)."""
        if fmt is BF16:
            return bool(self.fpcr & FPCR_FZ)
        return _flushes(fmt, self.fpcr)

    def unpack(self, fpval: int, fmt: Format, flush: bool | None = None
               ) -> tuple[FPType, int, Fraction]:
        """``FPUnpackBase``: class, sign and exact value (infinities: a value beyond every
        finite one; NaNs: 0). A denormal flushed by FZ raises Input Denormal; one flushed by
        FZ16 raises nothing. ``flush`` overrides the FPCR (``FPUnpackCV``)."""
        flush = self._flush(fmt) if flush is None else flush
        sign = fpval >> (fmt.width - 1) & 1
        exp = fpval >> fmt.fraction_bits & (2 ** fmt.exponent_bits - 1)
        frac = fpval & (2 ** fmt.fraction_bits - 1)
        if exp == 0:
            if frac == 0:
                return FPType.ZERO, sign, Fraction(0)
            if flush:
                if fmt.width != 16:
                    self.flags |= _IDC
                return FPType.ZERO, sign, Fraction(0)
            fptype, value = FPType.DENORMAL, Fraction(frac, 1) * Fraction(2) ** (
                fmt.minimum_exp - fmt.fraction_bits)
        elif exp == 2 ** fmt.exponent_bits - 1:
            if frac == 0:
                fptype, value = FPType.INFINITY, Fraction(2 ** (2 ** fmt.exponent_bits))
            else:
                quiet = frac >> (fmt.fraction_bits - 1) & 1
                fptype, value = (FPType.QNAN if quiet else FPType.SNAN), Fraction(0)
        else:
            fptype = FPType.NONZERO
            value = Fraction(2 ** fmt.fraction_bits + frac) * Fraction(2) ** (
                exp - fmt.bias - fmt.fraction_bits)
        return fptype, sign, -value if sign else value

    def round(self, value: Fraction, fmt: Format, rounding: FPRounding | None = None,
              flush: bool | None = None, alternative: bool = False) -> int:
        """``FPRoundBase`` (AH = 0): flush a tiny result to zero raising Underflow only, else
        round, raising Underflow when the exact result is tiny (before rounding) and inexact,
        Overflow and Inexact as IEEE 754 says. ``value`` must not be zero. ``alternative``:
        into alternative half precision, whose exponent 31 is a normal one and whose overflow
        saturates as an Invalid Operation."""
        rounding = self.rounding if rounding is None else rounding
        flush = self._flush(fmt) if flush is None else flush
        F, E, minimum_exp = fmt.fraction_bits, fmt.exponent_bits, fmt.minimum_exp
        sign, magnitude = (1, -value) if value < 0 else (0, value)
        numerator, denominator = magnitude.numerator, magnitude.denominator
        exponent = numerator.bit_length() - denominator.bit_length()
        if (numerator < denominator << exponent) if exponent >= 0 \
                else (numerator << -exponent < denominator):
            exponent -= 1
        if flush and exponent < minimum_exp:
            self.flags |= _UFC
            return fp_zero(sign, fmt)
        biased_exp = max(exponent - minimum_exp + 1, 0)
        scaled = magnitude * Fraction(2) ** (F - (exponent if biased_exp else minimum_exp))
        int_mant = math.floor(scaled)
        error = scaled - int_mant
        if biased_exp == 0 and error != 0:
            self.flags |= _UFC
        if rounding is FPRounding.TIEEVEN:
            round_up = error > HALF_FRACTION or (error == HALF_FRACTION and int_mant & 1)
            overflow_to_inf = True
        elif rounding is FPRounding.POSINF:
            round_up, overflow_to_inf = error != 0 and sign == 0, sign == 0
        elif rounding is FPRounding.NEGINF:
            round_up, overflow_to_inf = error != 0 and sign == 1, sign == 1
        else:
            round_up = overflow_to_inf = False
        if rounding is FPRounding.ODD and error != 0:
            int_mant |= 1
        if round_up:
            int_mant += 1
            if int_mant == 2 ** F:
                biased_exp = 1
            if int_mant == 2 ** (F + 1):
                biased_exp += 1
                int_mant //= 2
        if alternative and biased_exp >= 2 ** E:
            self.flags |= _IOC
            return sign << 15 | 0x7FFF
        if not alternative and biased_exp >= 2 ** E - 1:
            self.flags |= _OFC | _IXC
            return fp_infinity(sign, fmt) if overflow_to_inf else fp_max_normal(sign, fmt)
        if error != 0:
            self.flags |= _IXC
        return sign << (fmt.width - 1) | biased_exp << F | (int_mant & (2 ** F - 1))

    def process_nan(self, fptype: FPType, op: int, fmt: Format) -> int:
        """``FPProcessNaN``: quieten a signalling NaN (raising Invalid Operation); the default
        NaN when FPCR.DN is set."""
        result = op
        if fptype is FPType.SNAN:
            result |= 1 << (fmt.fraction_bits - 1)
            self.flags |= _IOC
        return fp_default_nan(fmt) if self.fpcr & FPCR_DN else result

    def process_nans(self, operands, fmt: Format) -> int | None:
        """``FPProcessNaNs``/``FPProcessNaNs3``: the first signalling NaN of ``operands``
        (pairs of class and bits, in the pseudocode's order), else the first quiet one,
        processed; None when there is no NaN."""
        for wanted in (FPType.SNAN, FPType.QNAN):
            for fptype, op in operands:
                if fptype is wanted:
                    return self.process_nan(fptype, op, fmt)
        return None

    def _default_nan(self, fmt: Format) -> int:
        """The default NaN, raising Invalid Operation."""
        self.flags |= _IOC
        return fp_default_nan(fmt)

    def _zero_or_round(self, value: Fraction, fmt: Format) -> int:
        """An exact zero sum is +0, or -0 when rounding toward minus infinity."""
        if value == 0:
            return fp_zero(1 if self.rounding is FPRounding.NEGINF else 0, fmt)
        return self.round(value, fmt)

    # ------------------------------------------------------------------ arithmetic
    def add(self, op1: int, op2: int, fmt: Format, subtract: bool = False) -> int:
        """``FPAdd`` (``FPSub`` when ``subtract``: op2's sign is flipped after its NaN check)."""
        type1, sign1, value1 = self.unpack(op1, fmt)
        type2, sign2, value2 = self.unpack(op2, fmt)
        nan = self.process_nans(((type1, op1), (type2, op2)), fmt)
        if nan is not None:
            return nan
        if subtract:
            sign2, value2 = sign2 ^ 1, -value2
        inf1, inf2 = type1 is FPType.INFINITY, type2 is FPType.INFINITY
        zero1, zero2 = type1 is FPType.ZERO, type2 is FPType.ZERO
        if inf1 and inf2 and sign1 != sign2:
            return self._default_nan(fmt)
        if (inf1 and sign1 == 0) or (inf2 and sign2 == 0):
            return fp_infinity(0, fmt)
        if (inf1 and sign1 == 1) or (inf2 and sign2 == 1):
            return fp_infinity(1, fmt)
        if zero1 and zero2 and sign1 == sign2:
            return fp_zero(sign1, fmt)
        return self._zero_or_round(value1 + value2, fmt)

    def mul(self, op1: int, op2: int, fmt: Format, extended: bool = False) -> int:
        """``FPMul`` (``FPMulX`` when ``extended``: inf * 0 is 2.0, not invalid)."""
        type1, sign1, value1 = self.unpack(op1, fmt)
        type2, sign2, value2 = self.unpack(op2, fmt)
        nan = self.process_nans(((type1, op1), (type2, op2)), fmt)
        if nan is not None:
            return nan
        inf1, inf2 = type1 is FPType.INFINITY, type2 is FPType.INFINITY
        zero1, zero2 = type1 is FPType.ZERO, type2 is FPType.ZERO
        if (inf1 and zero2) or (zero1 and inf2):
            if extended:
                return (sign1 ^ sign2) << (fmt.width - 1) | (fmt.bias + 1) << fmt.fraction_bits
            return self._default_nan(fmt)
        if inf1 or inf2:
            return fp_infinity(sign1 ^ sign2, fmt)
        if zero1 or zero2:
            return fp_zero(sign1 ^ sign2, fmt)
        return self.round(value1 * value2, fmt)

    def mul_add(self, addend: int, op1: int, op2: int, fmt: Format) -> int:
        """``FPMulAdd``: addend + op1 * op2 with one rounding."""
        typeA, signA, valueA = self.unpack(addend, fmt)
        type1, sign1, value1 = self.unpack(op1, fmt)
        type2, sign2, value2 = self.unpack(op2, fmt)
        inf1, inf2 = type1 is FPType.INFINITY, type2 is FPType.INFINITY
        zero1, zero2 = type1 is FPType.ZERO, type2 is FPType.ZERO
        nan = self.process_nans(((typeA, addend), (type1, op1), (type2, op2)), fmt)
        if typeA is FPType.QNAN and ((inf1 and zero2) or (zero1 and inf2)):
            return self._default_nan(fmt)
        if nan is not None:
            return nan
        infA, zeroA = typeA is FPType.INFINITY, typeA is FPType.ZERO
        signP, infP, zeroP = sign1 ^ sign2, inf1 or inf2, zero1 or zero2
        if (inf1 and zero2) or (zero1 and inf2) or (infA and infP and signA != signP):
            return self._default_nan(fmt)
        if (infA and signA == 0) or (infP and signP == 0):
            return fp_infinity(0, fmt)
        if (infA and signA == 1) or (infP and signP == 1):
            return fp_infinity(1, fmt)
        if zeroA and zeroP and signA == signP:
            return fp_zero(signA, fmt)
        return self._zero_or_round(valueA + value1 * value2, fmt)

    def div(self, op1: int, op2: int, fmt: Format) -> int:
        """``FPDiv``."""
        type1, sign1, value1 = self.unpack(op1, fmt)
        type2, sign2, value2 = self.unpack(op2, fmt)
        nan = self.process_nans(((type1, op1), (type2, op2)), fmt)
        if nan is not None:
            return nan
        inf1, inf2 = type1 is FPType.INFINITY, type2 is FPType.INFINITY
        zero1, zero2 = type1 is FPType.ZERO, type2 is FPType.ZERO
        if (inf1 and inf2) or (zero1 and zero2):
            return self._default_nan(fmt)
        if inf1 or zero2:
            if not inf1:
                self.flags |= _DZC
            return fp_infinity(sign1 ^ sign2, fmt)
        if zero1 or inf2:
            return fp_zero(sign1 ^ sign2, fmt)
        return self.round(value1 / value2, fmt)

    def sqrt(self, op: int, fmt: Format) -> int:
        """``FPSqrt``: correctly rounded; the square root of a negative number is invalid."""
        fptype, sign, value = self.unpack(op, fmt)
        if fptype in (FPType.SNAN, FPType.QNAN):
            return self.process_nan(fptype, op, fmt)
        if fptype is FPType.ZERO:
            return fp_zero(sign, fmt)
        if fptype is FPType.INFINITY and sign == 0:
            return fp_infinity(0, fmt)
        if sign:
            return self._default_nan(fmt)
        # floor(sqrt(value) * 2^k) with at least F + 4 bits; a remainder becomes a half unit,
        # which lies strictly between two such integers and so rounds as the irrational does.
        k = fmt.fraction_bits + 6 - (value.numerator.bit_length()
                                     - value.denominator.bit_length()) // 2
        scaled = value * Fraction(4) ** k
        root = math.isqrt(math.floor(scaled))
        exact = root * root == scaled
        return self.round(Fraction(root if exact else 2 * root + 1, 1)
                          * Fraction(2) ** (-k if exact else -k - 1), fmt)

    def scale(self, op: int, power: int, fmt: Format) -> int:
        """``FPScale``: op * 2^power, rounded."""
        fptype, sign, value = self.unpack(op, fmt)
        if fptype in (FPType.SNAN, FPType.QNAN):
            return self.process_nan(fptype, op, fmt)
        if fptype is FPType.ZERO:
            return fp_zero(sign, fmt)
        if fptype is FPType.INFINITY:
            return fp_infinity(sign, fmt)
        # Beyond this every power overflows or underflows to the same result.
        limit = 2 ** fmt.exponent_bits + fmt.fraction_bits + 2
        return self.round(value * Fraction(2) ** max(-limit, min(power, limit)), fmt)

    # ------------------------------------------------------------------ maximum and minimum
    def max(self, op1: int, op2: int, fmt: Format, minimum: bool = False) -> int:
        """``FPMax`` (``FPMin`` when ``minimum``): a NaN operand propagates; +0 is above -0."""
        type1, sign1, value1 = self.unpack(op1, fmt)
        type2, sign2, value2 = self.unpack(op2, fmt)
        nan = self.process_nans(((type1, op1), (type2, op2)), fmt)
        if nan is not None:
            return nan
        first = value1 < value2 if minimum else value1 > value2
        fptype, sign, value = (type1, sign1, value1) if first else (type2, sign2, value2)
        if fptype is FPType.INFINITY:
            return fp_infinity(sign, fmt)
        if fptype is FPType.ZERO:
            return fp_zero((sign1 | sign2) if minimum else (sign1 & sign2), fmt)
        return self.round(value, fmt)

    def max_num(self, op1: int, op2: int, fmt: Format, minimum: bool = False) -> int:
        """``FPMaxNum`` (``FPMinNum``): one quiet NaN loses to a number (IEEE maxNum)."""
        type1 = self.unpack(op1, fmt)[0]
        type2 = self.unpack(op2, fmt)[0]
        loser = fp_infinity(0 if minimum else 1, fmt)
        if type1 is FPType.QNAN and type2 is not FPType.QNAN:
            op1 = loser
        elif type1 is not FPType.QNAN and type2 is FPType.QNAN:
            op2 = loser
        return self.max(op1, op2, fmt, minimum)

    # ------------------------------------------------------------------ comparisons
    def compare(self, op1: int, op2: int, fmt: Format, condition: str) -> bool:
        """``FPCompareEQ``/``GE``/``GT``, ``NE`` (not EQ) and ``UN`` (unordered): a NaN makes
        EQ/GE/GT false and NE/UN true; GE and GT raise Invalid Operation for any NaN, the
        others only for a signalling NaN."""
        type1, _, value1 = self.unpack(op1, fmt)
        type2, _, value2 = self.unpack(op2, fmt)
        nans = {type1, type2} & {FPType.SNAN, FPType.QNAN}
        if nans:
            if condition in ("ge", "gt") or FPType.SNAN in nans:
                self.flags |= _IOC
            return condition in ("ne", "un")
        return {"eq": value1 == value2, "ne": value1 != value2, "ge": value1 >= value2,
                "gt": value1 > value2, "un": False}[condition]

    # ------------------------------------------------------------------ integral values
    def round_int(self, op: int, fmt: Format, rounding: FPRounding, exact: bool) -> int:
        """``FPRoundInt``: the integral value in ``rounding``; Inexact only when ``exact``
        (FRINTX)."""
        fptype, sign, value = self.unpack(op, fmt)
        if fptype in (FPType.SNAN, FPType.QNAN):
            return self.process_nan(fptype, op, fmt)
        if fptype is FPType.INFINITY:
            return fp_infinity(sign, fmt)
        if fptype is FPType.ZERO:
            return fp_zero(sign, fmt)
        integer = math.floor(value)
        error = value - integer
        round_up = {
            FPRounding.TIEEVEN: error > HALF_FRACTION or (error == HALF_FRACTION and integer & 1),
            FPRounding.POSINF: error != 0,
            FPRounding.NEGINF: False,
            FPRounding.ZERO: error != 0 and integer < 0,
            FPRounding.TIEAWAY: error > HALF_FRACTION or (error == HALF_FRACTION
                                                          and integer >= 0),
        }[rounding]
        integer += bool(round_up)
        result = fp_zero(sign, fmt) if integer == 0 \
            else self.round(Fraction(integer), fmt, FPRounding.ZERO)
        if error != 0 and exact:
            self.flags |= _IXC
        return result

    # ------------------------------------------------------------------ conversions
    def convert(self, op: int, source: Format, destination: Format,
                rounding: FPRounding | None = None, sve: bool = False) -> int:
        """``FPConvert`` between half, single and double precision (FCVT): FPCR rounding unless
        ``rounding`` is given (FCVTX: :attr:`FPRounding.ODD`).

        Half precision is neither flushed on input nor on output (``FPUnpackCV``,
        ``FPRoundCV``); FZ flushes the others. FPCR.AHP selects the alternative half-precision
        format for a half-precision source or destination, except for ``sve``
        (``FPConvertSVE`` clears AHP: the SVE conversions are always IEEE).
        """
        ahp = not sve and bool(self.fpcr & FPCR_AHP)
        if source.width == 16 and ahp:
            fptype, sign, value = self._unpack_ahp(op)
        else:
            fptype, sign, value = self.unpack(op, source, flush=source.width != 16
                                              and self._flush(source))
        alternative = destination.width == 16 and ahp
        if fptype in (FPType.SNAN, FPType.QNAN):
            if alternative:
                self.flags |= _IOC
                return fp_zero(sign, destination)
            if fptype is FPType.SNAN:
                self.flags |= _IOC
            return fp_default_nan(destination) if self.fpcr & FPCR_DN \
                else _convert_nan(op, source, destination)
        if fptype is FPType.INFINITY:
            if alternative:
                self.flags |= _IOC
                return sign << 15 | 0x7FFF
            return fp_infinity(sign, destination)
        if fptype is FPType.ZERO:
            return fp_zero(sign, destination)
        if alternative:
            return self.round(value, FP16, rounding, flush=False, alternative=True)
        return self.round(value, destination, rounding, flush=destination.width != 16
                          and self._flush(destination))

    def _unpack_ahp(self, op: int) -> tuple[FPType, int, Fraction]:
        """``FPUnpackBase`` of an alternative half-precision value: exponent 31 is a normal
        number; there are no infinities or NaNs; denormals are not flushed."""
        sign, exp, frac = op >> 15 & 1, op >> 10 & 0x1F, op & 0x3FF
        if exp == 0 and frac == 0:
            return FPType.ZERO, sign, Fraction(0)
        if exp == 0:
            fptype, value = FPType.DENORMAL, Fraction(frac) * Fraction(2) ** -24
        else:
            fptype, value = FPType.NONZERO, Fraction(1024 + frac) * Fraction(2) ** (exp - 25)
        return fptype, sign, -value if sign else value

    def convert_bf16(self, op: int) -> int:
        """``FPConvertBF``: single precision to BFloat16 (BFCVT), FPCR rounding, FZ flushing."""
        fptype, sign, value = self.unpack(op, FP32)
        if fptype in (FPType.SNAN, FPType.QNAN):
            if fptype is FPType.SNAN:
                self.flags |= _IOC
            return fp_default_nan(BF16) if self.fpcr & FPCR_DN else (op | 1 << 22) >> 16
        if fptype is FPType.INFINITY:
            return fp_infinity(sign, BF16)
        if fptype is FPType.ZERO:
            return fp_zero(sign, BF16)
        return self.round(value, BF16)

    def from_integer(self, integer: int, destination: Format) -> int:
        """``FixedToFP`` with no fraction bits (SCVTF/UCVTF): the integer rounded (FPCR)."""
        if integer == 0:
            return fp_zero(0, destination)
        return self.round(Fraction(integer), destination)

    def to_integer(self, op: int, source: Format, bits: int, unsigned: bool) -> int:
        """``FPToFixed`` with no fraction bits, rounding toward zero (FCVTZS/FCVTZU): a NaN
        gives 0, an out-of-range value saturates; both are Invalid Operation, and only an
        in-range inexact result is Inexact. Returns the integer (negative when signed)."""
        fptype, sign, value = self.unpack(op, source)
        if fptype in (FPType.SNAN, FPType.QNAN):
            self.flags |= _IOC
        # The pseudocode's infinity is 2^1000000, beyond every integer width; unpack's
        # 2^(2^E) is not beyond 64 bits for half precision.
        integer = (-1) ** sign * 2 ** 128 if fptype is FPType.INFINITY else math.trunc(value)
        low, high = (0, 2 ** bits - 1) if unsigned else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)
        if not low <= integer <= high:
            self.flags |= _IOC
            return min(max(integer, low), high)
        if integer != value:
            self.flags |= _IXC
        return integer

    # ------------------------------------------------------------------ estimates and steps
    def _estimate_input(self, op: int, fmt: Format) -> tuple[int, int]:
        """The biased exponent and the fraction as 52 bits, as the estimate functions take
        them apart."""
        exp = op >> fmt.fraction_bits & (2 ** fmt.exponent_bits - 1)
        fraction = (op & (2 ** fmt.fraction_bits - 1)) << (52 - fmt.fraction_bits)
        return exp, fraction

    def recip_estimate(self, op: int, fmt: Format) -> int:
        """``FPRecipEstimate`` (FRECPE) with ``RecipEstimate``'s 8-bit table, FEAT_RPRES off."""
        fptype, sign, value = self.unpack(op, fmt)
        if fptype in (FPType.SNAN, FPType.QNAN):
            return self.process_nan(fptype, op, fmt)
        if fptype is FPType.INFINITY:
            return fp_zero(sign, fmt)
        if fptype is FPType.ZERO:
            self.flags |= _DZC
            return fp_infinity(sign, fmt)
        if abs(value) < Fraction(2) ** -(2 ** (fmt.exponent_bits - 1)):
            rounding = self.rounding
            overflow_to_inf = {FPRounding.TIEEVEN: True, FPRounding.POSINF: sign == 0,
                               FPRounding.NEGINF: sign == 1, FPRounding.ZERO: False}[rounding]
            self.flags |= _OFC | _IXC
            return fp_infinity(sign, fmt) if overflow_to_inf else fp_max_normal(sign, fmt)
        if self._flush(fmt) and abs(value) >= Fraction(2) ** (fmt.bias - 1):
            self.flags |= _UFC
            return fp_zero(sign, fmt)
        exp, fraction = self._estimate_input(op, fmt)
        if exp == 0:
            if fraction >> 51 == 0:
                exp, fraction = -1, fraction << 2 & (2 ** 52 - 1)
            else:
                fraction = fraction << 1 & (2 ** 52 - 1)
        estimate = recip_estimate_table(256 | fraction >> 44)
        result_exp = 2 * fmt.bias - 1 - exp
        fraction = (estimate & 0xFF) << 44
        if result_exp == 0:
            fraction = 1 << 51 | fraction >> 1
        elif result_exp == -1:
            fraction, result_exp = 1 << 50 | fraction >> 2, 0
        return (sign << (fmt.width - 1) | result_exp << fmt.fraction_bits
                | fraction >> (52 - fmt.fraction_bits))

    def rsqrt_estimate(self, op: int, fmt: Format) -> int:
        """``FPRSqrtEstimate`` (FRSQRTE) with ``RecipSqrtEstimate``'s table, FEAT_RPRES off."""
        fptype, sign, _ = self.unpack(op, fmt)
        if fptype in (FPType.SNAN, FPType.QNAN):
            return self.process_nan(fptype, op, fmt)
        if fptype is FPType.ZERO:
            self.flags |= _DZC
            return fp_infinity(sign, fmt)
        if sign:
            return self._default_nan(fmt)
        if fptype is FPType.INFINITY:
            return fp_zero(0, fmt)
        exp, fraction = self._estimate_input(op, fmt)
        if exp == 0:
            while fraction >> 51 == 0:
                fraction, exp = fraction << 1, exp - 1
            fraction = fraction << 1 & (2 ** 52 - 1)
        scaled = 256 | fraction >> 44 if exp % 2 == 0 else 128 | fraction >> 45
        result_exp = (3 * fmt.bias - 1 - exp) // 2
        estimate = rsqrt_estimate_table(scaled)
        return result_exp << fmt.fraction_bits | (estimate & 0xFF) << (fmt.fraction_bits - 8)

    def _step(self, op1: int, op2: int, fmt: Format, constant: Fraction, halve: bool) -> int:
        """``FPRecipStepFused`` / ``FPRSqrtStepFused``: (constant - op1·op2) [/ 2] with one
        rounding; op1 is negated first (FPNeg, a NaN's sign too); inf·0 gives the constant."""
        op1 ^= 1 << (fmt.width - 1)
        type1, sign1, value1 = self.unpack(op1, fmt)
        type2, sign2, value2 = self.unpack(op2, fmt)
        nan = self.process_nans(((type1, op1), (type2, op2)), fmt)
        if nan is not None:
            return nan
        inf1, inf2 = type1 is FPType.INFINITY, type2 is FPType.INFINITY
        zero1, zero2 = type1 is FPType.ZERO, type2 is FPType.ZERO
        if (inf1 and zero2) or (zero1 and inf2):
            return self.round(constant / 2 if halve else constant, fmt)
        if inf1 or inf2:
            return fp_infinity(sign1 ^ sign2, fmt)
        value = constant + value1 * value2
        return self._zero_or_round(value / 2 if halve else value, fmt)

    def recip_step(self, op1: int, op2: int, fmt: Format) -> int:
        """``FPRecipStepFused`` (FRECPS): 2 - op1·op2."""
        return self._step(op1, op2, fmt, Fraction(2), halve=False)

    def rsqrt_step(self, op1: int, op2: int, fmt: Format) -> int:
        """``FPRSqrtStepFused`` (FRSQRTS): (3 - op1·op2) / 2."""
        return self._step(op1, op2, fmt, Fraction(3), halve=True)

    def recip_exponent(self, op: int, fmt: Format) -> int:
        """``FPRecpX`` (FRECPX): the sign, the inverted exponent (the largest normal exponent
        for zeros and denormals) and a zero fraction; a NaN is processed."""
        fptype, sign, _ = self.unpack(op, fmt)
        if fptype in (FPType.SNAN, FPType.QNAN):
            return self.process_nan(fptype, op, fmt)
        exp = op >> fmt.fraction_bits & (2 ** fmt.exponent_bits - 1)
        result_exp = 2 ** fmt.exponent_bits - 2 if exp == 0 \
            else exp ^ (2 ** fmt.exponent_bits - 1)
        return sign << (fmt.width - 1) | result_exp << fmt.fraction_bits


HALF_FRACTION = Fraction(1, 2)


def _convert_nan(op: int, source: Format, destination: Format) -> int:
    """``FPConvertNaN``: the sign and the payload below the quiet bit, aligned at the top, with
    the quiet bit set."""
    sign = op >> (source.width - 1) & 1
    payload_bits = source.fraction_bits - 1
    payload = op & (2 ** payload_bits - 1)
    shift = destination.fraction_bits - 1 - payload_bits
    payload = payload << shift if shift >= 0 else payload >> -shift
    return (sign << (destination.width - 1) | fp_infinity(0, destination)
            | 1 << (destination.fraction_bits - 1) | payload)
