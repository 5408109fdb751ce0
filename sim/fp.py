"""Bit-exact, vectorized floating-point kernels of the SME outer products.

One function per per-element operation (docs/isa.md, "FP rules"):

* :func:`fmla_f32`, :func:`fmla_f64`: ``FPMulAdd_ZA`` (FMOPA .S/.D): acc + a·b, one rounding.
* :func:`fdotadd_f16`: ``FPDotAdd_ZA`` (widening FMOPA): the exact dot a0·b0 + a1·b1 rounded
  to single precision, then added to acc with a second rounding.
* :func:`bfdotadd`: ``BFDotAdd`` with standard BFloat16 behaviours (BFMOPA): every product and
  sum rounded to odd, denormals flushed, FPCR ignored.

Operands are numpy arrays (or Python ints) of IEEE bit patterns and broadcast together; results
are bit patterns of the broadcast shape. Every NaN result is the default NaN and no exception
state exists, as for all ZA-targeting instructions. Modelled: a PE without FEAT_AFP and without
FEAT_EBF16, on which FPCR.AH, FIZ, NEP and EBF are RES0, so only RMode [23:22], FZ [24] and
FZ16 [19] matter. :mod:`sim.fpref` is the exact scalar reference these are tested against.

How the rounding is made exact without a per-element loop:

* Single-precision results (and the BFloat16 and half-precision paths, which all round to single
  precision): the products of the inputs fit exactly in a float64 significand, and ``TwoSum``
  gives the sum of two float64 values exactly as an unevaluated pair (total, error). Rounding that
  pair to odd at 53 bits keeps enough information (sticky in the last bit, ≥ 2 guard bits) for any
  later rounding to 24 bits to be correct, which :func:`_round_pack` then does with integer
  operations for every FPCR rounding mode and for flush-to-zero.
* Double precision: the 106-bit product and the addend are aligned in a 128-bit window held in
  two uint64 limbs (the larger operand exact at the top, the smaller one's far bits collapsed into
  a sticky bit), added exactly, normalized and handed to the same :func:`_round_pack`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "FPCR_FZ",
    "FPCR_FZ16",
    "bfdotadd",
    "fdotadd_f16",
    "fmla_f32",
    "fmla_f64",
    "fpcr_rounding",
]

#: FPCR.FZ (Arm ARM C5.2.8): flush single and double denormal inputs and outputs to zero.
FPCR_FZ = 1 << 24
#: FPCR.FZ16: flush half-precision denormals to zero (here: the widening FMOPA's inputs).
FPCR_FZ16 = 1 << 19

# Rounding modes, numbered as FPCR.RMode; round-to-odd (with overflow to infinity, as BFRound
# does) exists only inside this module, for the BFloat16 steps.
_ROUND_NEAREST_EVEN, _ROUND_UP, _ROUND_DOWN, _ROUND_TO_ZERO = 0, 1, 2, 3
_ROUND_ODD_OVERFLOW_TO_INF = 4

_ALL_ONES = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
_LOW32 = np.uint64(0xFFFF_FFFF)


@dataclass(frozen=True)
class _Format:
    """An IEEE binary format, with the constants the kernels need as uint64 scalars."""

    width: int
    exponent_bits: int
    fraction_bits: int
    minimum_exp: int = field(init=False)
    sign_shift: np.uint64 = field(init=False)
    sign_bit: np.uint64 = field(init=False)
    magnitude_mask: np.uint64 = field(init=False)
    smallest_normal: np.uint64 = field(init=False)
    infinity: np.uint64 = field(init=False)
    max_normal: np.uint64 = field(init=False)
    default_nan: np.uint64 = field(init=False)

    def __post_init__(self):
        infinity = (2 ** self.exponent_bits - 1) << self.fraction_bits
        derived = {
            "minimum_exp": 2 - 2 ** (self.exponent_bits - 1),
            "sign_shift": np.uint64(self.width - 1),
            "sign_bit": np.uint64(1 << (self.width - 1)),
            "magnitude_mask": np.uint64((1 << (self.width - 1)) - 1),
            "smallest_normal": np.uint64(1 << self.fraction_bits),
            "infinity": np.uint64(infinity),
            "max_normal": np.uint64(infinity - 1),
            "default_nan": np.uint64(infinity | 1 << (self.fraction_bits - 1)),
        }
        for name, value in derived.items():
            object.__setattr__(self, name, value)


_HALF = _Format(16, 5, 10)
_SINGLE = _Format(32, 8, 23)
_DOUBLE = _Format(64, 11, 52)


def fpcr_rounding(fpcr: int) -> int:
    """FPCR.RMode, bits [23:22]: 0 nearest-even, 1 towards +inf, 2 towards −inf, 3 towards zero."""
    return (fpcr >> 22) & 3


# --- Operand handling ----------------------------------------------------------------------------

def _bit_arrays(
        *operands_and_widths: tuple[object, int]) -> tuple[tuple[int, ...], list[np.ndarray]]:
    """Broadcast (operand, width) pairs of ``width``-bit patterns together.

    Returns the broadcast shape and the operands as flat uint64 arrays. Working on 1-D arrays
    keeps numpy from turning 0-d operations into scalar ones, which warn on the modular
    wrap-around the kernels rely on.

    Raises
    ------
    TypeError
        If an operand is not an integer array (floats would be silently converted by value).
    ValueError
        If an operand is negative or has bits set above ``width``.
    """
    arrays = []
    for operand, width in operands_and_widths:
        array = np.asarray(operand)
        if array.dtype.kind not in "ui":
            raise TypeError(f"operands are integer bit patterns, not {array.dtype} values")
        if array.dtype.kind == "i" and np.any(array < 0):
            raise ValueError(f"bit patterns are non-negative, got {array.min()}")
        array = array.astype(np.uint64)
        if width < 64 and np.any(array >> np.uint64(width)):
            raise ValueError(f"a {width}-bit operand has bits set above bit {width - 1}")
        arrays.append(array)
    broadcast = np.broadcast_arrays(*arrays)
    return broadcast[0].shape, [array.ravel() for array in broadcast]


@dataclass
class _Unpacked:
    """Sign and class masks of an array of bit patterns (after any flush of denormals)."""

    bits: np.ndarray
    sign: np.ndarray
    zero: np.ndarray
    infinite: np.ndarray
    nan: np.ndarray

    @property
    def finite_nonzero(self) -> np.ndarray:
        return ~(self.zero | self.infinite | self.nan)


def _unpack(bits: np.ndarray, fmt: _Format, flush: bool) -> _Unpacked:
    """Classify bit patterns; with ``flush``, denormals become zeros of the same sign first."""
    magnitude = bits & fmt.magnitude_mask
    if flush:
        denormal = magnitude < fmt.smallest_normal
        bits = np.where(denormal, bits & fmt.sign_bit, bits)
        magnitude = np.where(denormal, np.uint64(0), magnitude)
    infinity = fmt.infinity
    return _Unpacked(bits=bits, sign=bits >> fmt.sign_shift, zero=magnitude == 0,
                     infinite=magnitude == infinity, nan=magnitude > infinity)


def _as_float64(operand: _Unpacked, fmt: _Format) -> np.ndarray:
    """The exact values of the finite operands as float64; infinities and NaNs read as zero.

    Replacing the non-finite ones keeps the float arithmetic free of NaNs and warnings; their
    results are chosen by the special-case masks instead. Denormals are rebuilt as integer ×
    power of two, because the FPU's conversion would flush them if some library had set the x86
    denormals-are-zero flag (everything after this point is a normal float64).
    """
    finite_bits = np.where(operand.infinite | operand.nan, np.uint64(0), operand.bits)
    if fmt is _HALF:
        value = finite_bits.astype(np.uint16).view(np.float16).astype(np.float64)
    else:
        value = finite_bits.astype(np.uint32).view(np.float32).astype(np.float64)
    magnitude = finite_bits & fmt.magnitude_mask
    denormal = (magnitude != 0) & (magnitude < fmt.smallest_normal)
    if denormal.any():
        exact = magnitude.astype(np.float64) * 2.0 ** (fmt.minimum_exp - fmt.fraction_bits)
        value = np.where(denormal, np.where(operand.sign != 0, -exact, exact), value)
    return value


def _signed(sign: np.ndarray, magnitude: int | np.uint64, fmt: _Format) -> np.ndarray:
    """Bit patterns with the given sign bits (0 or 1) and magnitude."""
    return sign << fmt.sign_shift | magnitude


def _exact_zero(rounding: int, fmt: _Format) -> np.uint64:
    """The zero an exact cancellation gives: −0 only when rounding towards −infinity."""
    return fmt.sign_bit if rounding == _ROUND_DOWN else np.uint64(0)


# --- Variable shifts on uint64 -------------------------------------------------------------------
# numpy defines x << n and x >> n as 0 when n >= 64 (numpy gh-13739, since 1.18), where C leaves
# them undefined. The kernels rely on that, and on uint64 subtraction wrapping around: a count
# such as ``64 - n`` that "goes negative" becomes huge and shifts everything out.

def _low_mask(count: np.ndarray) -> np.ndarray:
    """A mask of the ``count`` low bits; all ones for 64 or more (0 - 1 wraps)."""
    return (np.uint64(1) << count) - np.uint64(1)


def _bit_length(value: np.ndarray) -> np.ndarray:
    """Number of significant bits of each uint64 (0 for 0), as int64.

    Each 32-bit half converts to float64 exactly, and frexp's exponent is its bit length.
    """
    high = value >> np.uint64(32)
    high_length = np.frexp(high.astype(np.float64))[1].astype(np.int64)
    low_length = np.frexp((value & _LOW32).astype(np.float64))[1].astype(np.int64)
    return np.where(high != 0, high_length + 32, low_length)


# --- Rounding ------------------------------------------------------------------------------------

def _round_pack(sign: np.ndarray, significand: np.ndarray, exponent: np.ndarray, fmt: _Format,
                rounding: int, flush: bool) -> np.ndarray:
    """Round nonzero values to ``fmt`` as ``FPRoundBase`` does (AH = 0); returns bit patterns.

    Parameters
    ----------
    sign : uint64 array of 0 or 1
    significand : uint64 array
        Bit 63 set; the value is ``significand * 2**(exponent - 63)`` rounded to odd at 64 bits
        (bit 0 is set if anything non-zero lies below it), which is all the rounding needs, as long
        as at least two bits lie between the format's last bit and bit 0.
    exponent : int64 array
        The exact value lies in [2**exponent, 2**(exponent + 1)).
    rounding : int
        An FPCR.RMode value or ``_ROUND_ODD_OVERFLOW_TO_INF``.
    flush : bool
        Flush-to-zero: a value whose exact exponent is below the normal range becomes a zero of
        its sign, before rounding (so even one that would round up to the smallest normal).
    """
    fraction_bits, minimum_exp = fmt.fraction_bits, fmt.minimum_exp
    maximum_exp = -minimum_exp + 1
    # Beyond maximum_exp + 1 every value overflows alike; clamping keeps the shifts below bounded.
    exponent = np.minimum(exponent, maximum_exp + 1)
    denormal_shift = np.maximum(minimum_exp - exponent, 0)
    # Dropping 65 bits or more leaves nothing and a pure sticky: all such counts are alike.
    discard = np.minimum(63 - fraction_bits + denormal_shift, 65).astype(np.uint64)
    kept = significand >> discard
    round_bit = ((significand >> (discard - np.uint64(1))) & np.uint64(1)) != 0
    sticky = (significand & _low_mask(discard - np.uint64(1))) != 0
    inexact = round_bit | sticky
    negative = sign != 0

    if rounding == _ROUND_NEAREST_EVEN:
        round_up = round_bit & (sticky | ((kept & np.uint64(1)) != 0))
        overflow_to_inf = np.True_
    elif rounding == _ROUND_UP:
        round_up = inexact & ~negative
        overflow_to_inf = ~negative
    elif rounding == _ROUND_DOWN:
        round_up = inexact & negative
        overflow_to_inf = negative
    elif rounding == _ROUND_TO_ZERO:
        round_up = np.False_
        overflow_to_inf = np.False_
    else:  # round to odd: set the last bit of an inexact result instead of rounding up
        kept = kept | inexact.astype(np.uint64)
        round_up = np.False_
        overflow_to_inf = np.True_

    # The biased exponent minus one goes above the fraction, and adding the rounded significand
    # (hidden bit included) lets a carry out of the fraction promote the exponent by itself:
    # from denormal to the smallest normal, or to the next binade.
    exponent_field = np.maximum(exponent - minimum_exp, 0).astype(np.uint64)
    magnitude = (exponent_field << np.uint64(fraction_bits)) + kept + round_up
    overflow = magnitude >= fmt.infinity
    magnitude = np.where(overflow, np.where(overflow_to_inf, fmt.infinity,
                                            fmt.max_normal), magnitude)
    if flush:
        magnitude = np.where(exponent < minimum_exp, np.uint64(0), magnitude)
    return sign << fmt.sign_shift | magnitude


def _two_sum(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(total, error) with total = fl(left + right) and total + error = left + right exactly.

    Knuth's TwoSum; exact in round-to-nearest float64 barring overflow, which the callers' ranges
    (at most 2^257) exclude.
    """
    total = left + right
    right_part = total - left
    left_part = total - right_part
    return total, (left - left_part) + (right - right_part)


def _odd_significand(total: np.ndarray, error: np.ndarray) -> tuple[np.ndarray, ...]:
    """Sign, significand and exponent (for :func:`_round_pack`) of total + error, rounded to odd.

    ``total`` is a nonzero normal float64 and ``|error| <= ulp(total) / 2``. If the pair is
    inexact at 53 bits and total's last bit is even, the odd neighbour on the side of the exact
    value is the round-to-odd result; stepping the magnitude's bit pattern by one crosses binade
    boundaries correctly.
    """
    bits = total.view(np.uint64)
    sign = bits >> np.uint64(63)
    magnitude = bits & _DOUBLE.magnitude_mask
    even_and_inexact = (error != 0) & ((magnitude & np.uint64(1)) == 0)
    away_from_zero = np.signbit(error) == np.signbit(total)
    step = np.where(away_from_zero, np.uint64(1), _ALL_ONES)  # +1 or -1 modulo 2^64
    magnitude = np.where(even_and_inexact, magnitude + step, magnitude)
    exponent = (magnitude >> np.uint64(52)).astype(np.int64) - 1023
    significand = ((magnitude & np.uint64((1 << 52) - 1)) | np.uint64(1 << 52)) << np.uint64(11)
    return sign, significand, exponent


def _round_float64_pair(total: np.ndarray, error: np.ndarray, rounding: int,
                        flush: bool) -> np.ndarray:
    """Round the exact value total + error to single precision; exact zero is the mode's zero."""
    nonzero_total = np.where(total == 0, 1.0, total)  # keeps the helpers away from zero
    sign, significand, exponent = _odd_significand(nonzero_total, error)
    rounded = _round_pack(sign, significand, exponent, _SINGLE, rounding, flush)
    return np.where(total == 0, _exact_zero(rounding, _SINGLE), rounded)


# --- Single-precision results --------------------------------------------------------------------

def _fused_multiply_add_single(acc: np.ndarray, a: np.ndarray, b: np.ndarray, rounding: int,
                               flush: bool) -> np.ndarray:
    """``FPMulAdd`` on single precision (DN forced)."""
    addend = _unpack(acc, _SINGLE, flush)
    op1, op2 = _unpack(a, _SINGLE, flush), _unpack(b, _SINGLE, flush)

    # A product of two 24-bit significands is exact in float64 (also for denormals: >= 2^-298).
    product = _as_float64(op1, _SINGLE) * _as_float64(op2, _SINGLE)
    total, error = _two_sum(_as_float64(addend, _SINGLE), product)
    result = _round_float64_pair(total, error, rounding, flush)
    return _multiply_add_specials(result, addend, op1, op2, _SINGLE)


def _multiply_add_specials(result: np.ndarray, addend: _Unpacked, op1: _Unpacked,
                           op2: _Unpacked, fmt: _Format) -> np.ndarray:
    """Overlay the special cases of ``FPMulAdd`` on the numeric result, lowest priority first."""
    product_sign = op1.sign ^ op2.sign
    product_infinite = op1.infinite | op2.infinite
    product_zero = op1.zero | op2.zero
    same_signed_zeros = addend.zero & product_zero & (addend.sign == product_sign)
    result = np.where(same_signed_zeros, _signed(addend.sign, 0, fmt), result)
    infinite_sign = np.where(addend.infinite, addend.sign, product_sign)
    result = np.where(addend.infinite | product_infinite,
                      _signed(infinite_sign, fmt.infinity, fmt), result)
    invalid = ((op1.infinite & op2.zero) | (op1.zero & op2.infinite)
               | (addend.infinite & product_infinite & (addend.sign != product_sign)))
    return np.where(addend.nan | op1.nan | op2.nan | invalid, fmt.default_nan, result)


def _add_single(op1_bits: np.ndarray, op2_bits: np.ndarray, rounding: int,
                flush: bool) -> np.ndarray:
    """``FPAdd`` on single precision (DN forced); with round-to-odd and flush it is FPAdd_BF16."""
    op1, op2 = _unpack(op1_bits, _SINGLE, flush), _unpack(op2_bits, _SINGLE, flush)
    total, error = _two_sum(_as_float64(op1, _SINGLE), _as_float64(op2, _SINGLE))
    result = _round_float64_pair(total, error, rounding, flush)
    same_signed_zeros = op1.zero & op2.zero & (op1.sign == op2.sign)
    result = np.where(same_signed_zeros, _signed(op1.sign, 0, _SINGLE), result)
    infinite_sign = np.where(op1.infinite, op1.sign, op2.sign)
    result = np.where(op1.infinite | op2.infinite,
                      _signed(infinite_sign, _SINGLE.infinity, _SINGLE), result)
    invalid = op1.infinite & op2.infinite & (op1.sign != op2.sign)
    return np.where(op1.nan | op2.nan | invalid, _SINGLE.default_nan, result)


def _dot_half(a0: np.ndarray, a1: np.ndarray, b0: np.ndarray, b1: np.ndarray, rounding: int,
              flush_half: bool, flush: bool) -> np.ndarray:
    """``FPDot`` on half precision: a0·b0 + a1·b1 rounded once to single precision."""
    op1_a, op1_b = _unpack(a0, _HALF, flush_half), _unpack(a1, _HALF, flush_half)
    op2_a, op2_b = _unpack(b0, _HALF, flush_half), _unpack(b1, _HALF, flush_half)
    product_a = _as_float64(op1_a, _HALF) * _as_float64(op2_a, _HALF)
    product_b = _as_float64(op1_b, _HALF) * _as_float64(op2_b, _HALF)
    total, error = _two_sum(product_a, product_b)
    result = _round_float64_pair(total, error, rounding, flush)

    sign_a, sign_b = op1_a.sign ^ op2_a.sign, op1_b.sign ^ op2_b.sign
    infinite_a, infinite_b = op1_a.infinite | op2_a.infinite, op1_b.infinite | op2_b.infinite
    zero_a, zero_b = op1_a.zero | op2_a.zero, op1_b.zero | op2_b.zero
    result = np.where(zero_a & zero_b & (sign_a == sign_b), _signed(sign_a, 0, _SINGLE), result)
    infinite_sign = np.where(infinite_a, sign_a, sign_b)
    result = np.where(infinite_a | infinite_b, _signed(infinite_sign, _SINGLE.infinity, _SINGLE),
                      result)
    invalid = ((op1_a.infinite & op2_a.zero) | (op1_a.zero & op2_a.infinite)
               | (op1_b.infinite & op2_b.zero) | (op1_b.zero & op2_b.infinite)
               | (infinite_a & infinite_b & (sign_a != sign_b)))
    any_nan = op1_a.nan | op1_b.nan | op2_a.nan | op2_b.nan
    return np.where(any_nan | invalid, _SINGLE.default_nan, result)


def _bfloat16_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``BFMulH``: the single-precision product of two BFloat16 values (as single bits)."""
    # A BFloat16 pattern is the top half of the single with the same value.
    op1 = _unpack(a << np.uint64(16), _SINGLE, flush=True)
    op2 = _unpack(b << np.uint64(16), _SINGLE, flush=True)
    product = _as_float64(op1, _SINGLE) * _as_float64(op2, _SINGLE)  # exact: 8 × 8 bits
    result = _round_float64_pair(product, np.zeros_like(product), _ROUND_ODD_OVERFLOW_TO_INF,
                                 flush=True)
    product_sign = op1.sign ^ op2.sign
    result = np.where(op1.zero | op2.zero, _signed(product_sign, 0, _SINGLE), result)
    result = np.where(op1.infinite | op2.infinite,
                      _signed(product_sign, _SINGLE.infinity, _SINGLE), result)
    invalid = (op1.infinite & op2.zero) | (op1.zero & op2.infinite)
    return np.where(op1.nan | op2.nan | invalid, _SINGLE.default_nan, result)


# --- Double precision: 128-bit integer arithmetic in two uint64 limbs ----------------------------

def _multiply_53x53(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact 106-bit product of two 53-bit integers as (high, low) uint64 limbs."""
    left_high, left_low = left >> np.uint64(32), left & _LOW32
    right_high, right_low = right >> np.uint64(32), right & _LOW32
    low_low = left_low * right_low
    middle = left_low * right_high + left_high * right_low  # < 2^54: the high halves are 21 bits
    low = low_low + (middle << np.uint64(32))
    carry = (low < low_low).astype(np.uint64)
    high = left_high * right_high + (middle >> np.uint64(32)) + carry
    return high, low


def _shift_left_128(high: np.ndarray, low: np.ndarray,
                    count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(high, low) << count for 0 <= count < 128 (uint64 count)."""
    spilled = (low >> (np.uint64(64) - count)) | (low << (count - np.uint64(64)))
    return (high << count) | spilled, low << count


def _shift_right_128(high: np.ndarray, low: np.ndarray,
                     count: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(high, low) >> count for 0 <= count <= 128 (uint64 count), and whether set bits fell out."""
    spilled = (high << (np.uint64(64) - count)) | (high >> (count - np.uint64(64)))
    lost_from_high = _low_mask(np.maximum(count, np.uint64(64)) - np.uint64(64))
    lost = ((low & _low_mask(count)) | (high & lost_from_high)) != 0
    return high >> count, (low >> count) | spilled, lost


def _place_in_window(high: np.ndarray, low: np.ndarray,
                     position: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Shift an operand so that its bit 0 lands at window bit ``position`` (int64, <= 74).

    Window bit 0 is reserved as a sticky bit: an operand reaching below bit 1 is truncated at
    bit 1 and leaves a 1 in bit 0 if it lost anything. With the other operand exact (bit 0
    clear), the exact integer sum or difference then has bit 0 = sticky, that is, it is the exact
    result rounded to odd at window bit 0.
    """
    dropped = np.minimum(np.maximum(1 - position, 0), 128)
    high, low, lost = _shift_right_128(high, low, dropped.astype(np.uint64))
    high, low = _shift_left_128(high, low, (position + dropped).astype(np.uint64))
    return high, low | lost.astype(np.uint64)


def _unpack_double_significand(operand: _Unpacked) -> tuple[np.ndarray, np.ndarray]:
    """(significand, exponent) with value = significand * 2^exponent, significand in [2^52, 2^53).

    Denormals are normalized so that every operand's top bit sits at bit 52.
    """
    exponent_field = (operand.bits >> np.uint64(52)) & np.uint64(0x7FF)
    significand = operand.bits & np.uint64((1 << 52) - 1)
    significand = np.where(exponent_field != 0, significand | np.uint64(1 << 52), significand)
    exponent = np.maximum(exponent_field.astype(np.int64), 1) - 1075
    normalize = np.maximum(53 - _bit_length(significand), 0)
    normalize = np.where(operand.finite_nonzero, normalize, 0)
    return significand << normalize.astype(np.uint64), exponent - normalize


def _fused_multiply_add_double(acc: np.ndarray, a: np.ndarray, b: np.ndarray, rounding: int,
                               flush: bool) -> np.ndarray:
    """``FPMulAdd`` on double precision (DN forced)."""
    addend = _unpack(acc, _DOUBLE, flush)
    op1, op2 = _unpack(a, _DOUBLE, flush), _unpack(b, _DOUBLE, flush)
    significand1, exponent1 = _unpack_double_significand(op1)
    significand2, exponent2 = _unpack_double_significand(op2)
    addend_significand, addend_exponent = _unpack_double_significand(addend)
    product_high, product_low = _multiply_53x53(significand1, significand2)
    product_exponent = exponent1 + exponent2

    # A zero operand must be the smaller one so that it vanishes into an empty sticky bit.
    vanishing = np.int64(-1 << 20)
    product_zero = op1.zero | op2.zero
    product_exponent = np.where(product_zero, vanishing, product_exponent)
    addend_exponent = np.where(addend.zero, vanishing, addend_exponent)

    # The larger operand (by top bit) goes exactly under the window's top bit 127, which is left
    # free for the carry: bit i of the window weighs 2^(window_exponent + i). The smaller one is
    # either placed exactly (then the sum is exact), or it lies wholly below bit 106 while the
    # larger one reaches bit 125, so that the sum keeps its top bit at 124 or above and the
    # rounding to odd at bit 0 (see _place_in_window) is far below the bits the rounding needs.
    top = np.maximum(product_exponent + 106, addend_exponent + 53)
    window_exponent = top - 127
    product_high, product_low = _place_in_window(product_high, product_low,
                                                 product_exponent - window_exponent)
    addend_high, addend_low = _place_in_window(np.zeros_like(addend_significand),
                                               addend_significand,
                                               addend_exponent - window_exponent)

    product_sign = op1.sign ^ op2.sign
    subtract = product_sign != addend.sign
    addend_high = np.where(subtract, ~addend_high, addend_high)  # two's complement negation:
    addend_low = np.where(subtract, ~addend_low, addend_low)    # invert, then add 1 below
    sum_low = product_low + addend_low
    carry = (sum_low < product_low).astype(np.uint64)
    sum_low_plus_one = sum_low + subtract.astype(np.uint64)
    carry = carry + (sum_low_plus_one < sum_low).astype(np.uint64)
    sum_high = product_high + addend_high + carry
    sum_low = sum_low_plus_one
    # Bit 127 is the carry of an addition, and the sign of a difference (whose magnitude is
    # below 2^127): it is negative when the addend was the larger.
    negative = subtract & ((sum_high >> np.uint64(63)) != 0)
    sum_high = np.where(negative, ~sum_high + (sum_low == 0).astype(np.uint64), sum_high)
    sum_low = np.where(negative, ~sum_low + np.uint64(1), sum_low)
    sign = np.where(negative, addend.sign, product_sign)

    length = np.where(sum_high != 0, _bit_length(sum_high) + 64, _bit_length(sum_low))
    exact_zero = length == 0
    top_bit = np.maximum(length - 1, 0)
    # Bring the top bit to bit 63 of one uint64, folding everything below into the sticky bit.
    _, low, lost = _shift_right_128(sum_high, sum_low,
                                    np.maximum(top_bit - 63, 0).astype(np.uint64))
    normalized = (low << np.maximum(63 - top_bit, 0).astype(np.uint64)) | lost.astype(np.uint64)
    exponent = window_exponent + top_bit
    result = _round_pack(sign, normalized, exponent, _DOUBLE, rounding, flush)
    result = np.where(exact_zero, _exact_zero(rounding, _DOUBLE), result)
    return _multiply_add_specials(result, addend, op1, op2, _DOUBLE)


# --- Public kernels ------------------------------------------------------------------------------

def fmla_f32(acc, a, b, fpcr: int) -> np.ndarray:
    """``FPMulAdd_ZA`` on single precision: acc + a·b with one rounding (FMOPA .S).

    Parameters
    ----------
    acc, a, b : array_like of uint32 bit patterns
        Broadcast together.
    fpcr : int
        FPCR value: RMode selects the rounding; FZ flushes denormal inputs and outputs (an output
        is flushed when its exact value is below the normal range) to zeros of the same sign.

    Returns
    -------
    numpy.ndarray of uint32
        The broadcast shape. NaN results are the default NaN 0x7FC00000.
    """
    shape, (acc, a, b) = _bit_arrays((acc, 32), (a, 32), (b, 32))
    result = _fused_multiply_add_single(acc, a, b, fpcr_rounding(fpcr), bool(fpcr & FPCR_FZ))
    return result.astype(np.uint32).reshape(shape)


def fmla_f64(acc, a, b, fpcr: int) -> np.ndarray:
    """``FPMulAdd_ZA`` on double precision: acc + a·b with one rounding (FMOPA .D).

    As :func:`fmla_f32`, with uint64 bit patterns and the default NaN 0x7FF8000000000000.
    """
    shape, (acc, a, b) = _bit_arrays((acc, 64), (a, 64), (b, 64))
    result = _fused_multiply_add_double(acc, a, b, fpcr_rounding(fpcr), bool(fpcr & FPCR_FZ))
    return result.reshape(shape)


def fdotadd_f16(acc, a0, a1, b0, b1, fpcr: int) -> np.ndarray:
    """``FPDotAdd_ZA``: acc + (a0·b0 + a1·b1) for the widening FMOPA (half to single).

    The dot product of the half-precision inputs is exact and rounded once to single precision
    (FPDot), then added to ``acc`` with a second rounding (FPAdd): the accumulate is not fused.

    Parameters
    ----------
    acc : array_like of uint32 single-precision bit patterns
    a0, a1, b0, b1 : array_like of uint16 half-precision bit patterns
    fpcr : int
        RMode rounds both steps. FZ16 flushes denormal half inputs; FZ flushes a denormal ``acc``
        and denormal single-precision results of both steps. The smallest nonzero dot of halves
        is 2^-48, so in practice FZ acts on ``acc`` and the final sum.

    Returns
    -------
    numpy.ndarray of uint32
        The broadcast shape. NaN results (any NaN input, ∞·0, ∞ − ∞) are 0x7FC00000.
    """
    shape, (acc, a0, a1, b0, b1) = _bit_arrays((acc, 32), (a0, 16), (a1, 16), (b0, 16),
                                               (b1, 16))
    rounding, flush = fpcr_rounding(fpcr), bool(fpcr & FPCR_FZ)
    dot = _dot_half(a0, a1, b0, b1, rounding, bool(fpcr & FPCR_FZ16), flush)
    return _add_single(acc, dot, rounding, flush).astype(np.uint32).reshape(shape)


def bfdotadd(acc, a0, a1, b0, b1) -> np.ndarray:
    """``BFDotAdd`` with standard BFloat16 behaviours: acc + (a0·b0 + a1·b1) for BFMOPA.

    Each product, their sum and the accumulation are rounded separately to single precision
    with round-to-odd (an overflow gives infinity); denormal inputs and outputs of every step are
    flushed to zero; an exact zero sum is +0 unless both addends are zeros of the same sign. FPCR
    has no effect (FEAT_EBF16 is not modelled).

    Parameters
    ----------
    acc : array_like of uint32 single-precision bit patterns
    a0, a1, b0, b1 : array_like of uint16 BFloat16 bit patterns

    Returns
    -------
    numpy.ndarray of uint32
        The broadcast shape. NaN results are 0x7FC00000.
    """
    shape, (acc, a0, a1, b0, b1) = _bit_arrays((acc, 32), (a0, 16), (a1, 16), (b0, 16),
                                               (b1, 16))
    product_sum = _add_single(_bfloat16_multiply(a0, b0), _bfloat16_multiply(a1, b1),
                              _ROUND_ODD_OVERFLOW_TO_INF, flush=True)
    result = _add_single(acc, product_sum, _ROUND_ODD_OVERFLOW_TO_INF, flush=True)
    return result.astype(np.uint32).reshape(shape)
