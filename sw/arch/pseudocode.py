"""Shared pseudocode functions of the Arm ARM that both the reference model and the RTL generator
evaluate (docs/isa.md names each).
"""

from __future__ import annotations

import struct
from functools import lru_cache

__all__ = ["predicate_count", "decode_bit_masks", "encode_bit_masks", "replicate",
           "sve_move_mask_preferred", "sat_q", "vfp_expand_imm", "vfp_imm_value",
           "recip_estimate_table", "rsqrt_estimate_table"]


def sat_q(value: int, bits: int, signed: bool) -> int:
    """``SatQ``: ``value`` clamped to the ``bits``-bit signed or unsigned range."""
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return min(max(value, low), high)


def predicate_count(pattern: int, elements: int) -> int:
    """``DecodePredCount``: how many elements a PTRUE/CNTx pattern selects out of ``elements``."""
    if pattern == 0:                                    # POW2
        return 1 << (elements.bit_length() - 1)
    if 1 <= pattern <= 8:                               # VL1-VL8
        return pattern if pattern <= elements else 0
    if 9 <= pattern <= 13:                              # VL16-VL256
        count = 16 << (pattern - 9)
        return count if count <= elements else 0
    if pattern == 29:                                   # MUL4
        return elements - elements % 4
    if pattern == 30:                                   # MUL3
        return elements - elements % 3
    if pattern == 31:                                   # ALL
        return elements
    return 0                                            # unallocated #uimm5


def decode_bit_masks(imm13: int) -> tuple[int, int] | None:
    """``DecodeBitMasks`` of a logical immediate ``N:immr:imms``: (element bits, element value).

    None for the reserved encodings (no element size, or an all-ones element).
    """
    if not 0 <= imm13 < 1 << 13:
        raise ValueError(f"a logical immediate has 13 bits, not {imm13!r}")
    n, immr, imms = imm13 >> 12, (imm13 >> 6) & 0x3F, imm13 & 0x3F
    length = (n << 6 | (~imms & 0x3F)).bit_length() - 1
    if length < 1:
        return None
    levels = (1 << length) - 1
    ones, rotation = (imms & levels) + 1, immr & levels
    if ones == levels + 1:
        return None
    bits = 1 << length
    element = (1 << ones) - 1
    element = (element >> rotation | element << (bits - rotation)) & ((1 << bits) - 1)
    return bits, element


def replicate(value: int, bits: int, width: int = 64) -> int:
    """``Replicate``: the ``bits``-bit ``value`` repeated to fill ``width`` bits."""
    return sum(value << shift for shift in range(0, width, bits))


@lru_cache(maxsize=1)
def _bit_mask_encodings() -> dict[int, int]:
    encodings = {}
    for imm13 in range(1 << 13):
        decoded = decode_bit_masks(imm13)
        if decoded is not None:
            encodings.setdefault(replicate(decoded[1], decoded[0]), imm13)
    return encodings


def encode_bit_masks(value: int) -> int | None:
    """The logical immediate ``N:immr:imms`` whose 64-bit replicated pattern is ``value``, or
    None when no encoding makes it (each pattern has exactly one encoding)."""
    return _bit_mask_encodings().get(value)


def sve_move_mask_preferred(imm13: int) -> bool:
    """``SVEMoveMaskPreferred``: whether DUPM with this immediate disassembles as ``MOV``.

    False when DUP (an 8-bit signed immediate, optionally shifted by 8, in some element size)
    makes the same pattern, so ``mov`` is left to DUP's spelling.
    """
    bits, element = decode_bit_masks(imm13)
    value = replicate(element, bits)

    def field(high: int, low: int) -> int:
        return (value >> low) & ((1 << (high - low + 1)) - 1)

    def uniform(high: int, low: int) -> bool:          # IsZero or IsOnes
        return field(high, low) in (0, (1 << (high - low + 1)) - 1)

    halves_equal = field(63, 32) == field(31, 0)
    quarters_equal = halves_equal and field(31, 16) == field(15, 0)
    if field(7, 0):
        return not (uniform(63, 7) or (halves_equal and uniform(31, 7))
                    or (quarters_equal and uniform(15, 7))
                    or (quarters_equal and field(15, 8) == field(7, 0)))
    return not (uniform(63, 15) or (halves_equal and uniform(31, 15)) or quarters_equal)


#: Exponent and fraction widths of the IEEE formats by total width.
_IEEE_FIELDS = {16: (5, 10), 32: (8, 23), 64: (11, 52)}


def vfp_expand_imm(imm8: int, width: int) -> int:
    """``VFPExpandImm``: the ``width``-bit (16, 32 or 64) floating-point bit pattern of the 8-bit
    immediate ``a:b:cd:efgh``: sign ``a``, exponent ``NOT(b):Replicate(b, E-3):cd``, fraction
    ``efgh`` followed by zeros (docs/isa.md, "Streaming SVE floating point")."""
    if width not in _IEEE_FIELDS:
        raise ValueError(f"the width must be 16, 32 or 64, not {width}")
    if not 0 <= imm8 <= 0xFF:
        raise ValueError(f"imm8 must be 0-255, not {imm8}")
    exponent_bits, fraction_bits = _IEEE_FIELDS[width]
    b = imm8 >> 6 & 1
    exponent = (b ^ 1) << (exponent_bits - 1) | replicate(b, 1, exponent_bits - 3) << 2 \
        | imm8 >> 4 & 3
    return (imm8 >> 7) << (width - 1) | exponent << fraction_bits \
        | (imm8 & 0xF) << (fraction_bits - 4)


def vfp_imm_value(imm8: int) -> float:
    """The value of ``VFPExpandImm(imm8)``, the same in every format: ±(16 + efgh)/16 × 2^n with
    n from -3 to 4."""
    return struct.unpack("<d", vfp_expand_imm(imm8, 64).to_bytes(8, "little"))[0]


@lru_cache(maxsize=None)
def recip_estimate_table(a: int) -> int:
    """``RecipEstimate``: 256 <= a < 512 stands for a/512 in [0.5, 1); the result, 256-511,
    is its reciprocal in units of 1/256, rounded to nearest."""
    if not 256 <= a < 512:
        raise ValueError(f"RecipEstimate takes 256-511, not {a}")
    b = 2 ** 19 // (a * 2 + 1)
    return (b + 1) // 2


@lru_cache(maxsize=None)
def rsqrt_estimate_table(a: int) -> int:
    """``RecipSqrtEstimate``: 128 <= a < 512 stands for a/512 in [0.25, 1); the result,
    256-511, is its reciprocal square root in units of 1/256, rounded to nearest."""
    if not 128 <= a < 512:
        raise ValueError(f"RecipSqrtEstimate takes 128-511, not {a}")
    a = a * 2 + 1 if a < 256 else (a >> 1 << 1) + 1 << 1
    b = 512
    while a * (b + 1) * (b + 1) < 2 ** 28:
        b += 1
    return (b + 1) // 2
