"""Scalar floating-point instructions an SME CPU has and Unicorn's Cortex-A72 lacks.

FEAT_SME requires FEAT_FP16 and FEAT_BF16, so compilers targeting an SME CPU emit their scalar
instructions (``fmov h0, #-2.5``, ``fadd h0, h1, h2``, ``bfcvt h0, s0``), which the A72 model
treats as undefined. :func:`host_instruction` recognises them, and the returned function
performs one on a :class:`FpRegisters` with the exact FP reference
(:class:`zatile.sim.fpref.FPArith`: FPCR rounding, FZ16/FZ, DN, AHP; the FPSR cumulative
flags). The forms (Arm ARM C4.1.96, scalar floating-point encodings with ``ftype = 11``):

* FMOV (immediate, register, to and from a general register), FABS, FNEG, FSQRT, FRINTN/P/M/Z/
  A/X/I;
* FMUL, FDIV, FADD, FSUB, FMAX, FMIN, FMAXNM, FMINNM, FNMUL; FMADD, FMSUB, FNMADD, FNMSUB;
* FCMP, FCMPE (register and zero), FCCMP, FCCMPE, FCSEL;
* SCVTF, UCVTF from W/X; FCVTNS/NU/AS/AU/PS/PU/MS/MU/ZS/ZU to W/X;
* ``BFCVT Hd, Sn`` (FEAT_BF16).

Not performed (they stay undefined, SIGILL): the fixed-point conversions of half precision and
the Advanced SIMD FP16 and BF16 instructions (vector arithmetic, BFCVTN, BFDOT, BFMLAL, BFMMLA).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Protocol

from zatile.sim.fpref import FP16, FPArith, FPRounding, FPType

__all__ = ["FpRegisters", "host_instruction"]

_SIGN = 0x8000
_ROUNDINGS = {0b00: None, 0b01: FPRounding.POSINF, 0b10: FPRounding.NEGINF,
              0b11: FPRounding.ZERO}
# FRINT<x> by 1-source opcode: (rounding, None for FPCR's; exact).
_FRINT = {8: (FPRounding.TIEEVEN, False), 9: (FPRounding.POSINF, False),
          10: (FPRounding.NEGINF, False), 11: (FPRounding.ZERO, False),
          12: (FPRounding.TIEAWAY, False), 14: (None, True), 15: (None, False)}
# FCMP results: (N, Z, C, V) as a nibble.
_LESS, _EQUAL, _GREATER, _UNORDERED = 0b1000, 0b0110, 0b0010, 0b0011


class FpRegisters(Protocol):
    """What the instructions read and write: the CPU's registers."""

    def v(self, number: int) -> int: ...

    def set_v(self, number: int, value: int) -> None: ...

    def x(self, number: int) -> int: ...

    def set_x(self, number: int, value: int) -> None: ...

    fpcr: int
    fpsr: int
    nzcv: int


Instruction = Callable[[FpRegisters], None]


def _expand_immediate(imm8: int) -> int:
    """``VFPExpandImm`` for half precision."""
    sign, b6 = imm8 >> 7, imm8 >> 6 & 1
    exponent = (b6 ^ 1) << 4 | (0b11 if b6 else 0) << 2 | imm8 >> 4 & 0b11
    return sign << 15 | exponent << 10 | (imm8 & 0xF) << 6


def _condition_holds(condition: int, nzcv: int) -> bool:
    """``ConditionHolds``."""
    n, z, c, v = nzcv >> 3 & 1, nzcv >> 2 & 1, nzcv >> 1 & 1, nzcv & 1
    result = [z, c, n, v, c and not z, n == v, n == v and not z, True][condition >> 1]
    return bool(result) != bool(condition & 1 and condition != 0b1111)


def _compare(arith: FPArith, op1: int, op2: int, signalling: bool) -> int:
    """``FPCompare``: the NZCV nibble; Invalid Operation for a signalling NaN, or any NaN
    when ``signalling`` (FCMPE)."""
    type1, _, value1 = arith.unpack(op1, FP16)
    type2, _, value2 = arith.unpack(op2, FP16)
    nans = {type1, type2} & {FPType.SNAN, FPType.QNAN}
    if nans:
        if signalling or FPType.SNAN in nans:
            arith.flags |= 1
        return _UNORDERED
    return _EQUAL if value1 == value2 else _LESS if value1 < value2 else _GREATER


def _to_integer(arith: FPArith, op: int, rounding: FPRounding, bits: int, unsigned: bool) -> int:
    """``FPToFixed`` with no fraction bits in ``rounding``: saturated, Invalid Operation for a
    NaN or an out-of-range value, else Inexact when rounding changed the value."""
    invalid_before = arith.flags & 1
    rounded = arith.round_int(op, FP16, rounding, exact=False)
    arith.flags &= ~1 | invalid_before
    integer = arith.to_integer(rounded, FP16, bits, unsigned)
    # Compared as values: FZ16 may have flushed a denormal operand to an exact zero.
    if not arith.flags & 1 and arith.unpack(rounded, FP16)[2] != arith.unpack(op, FP16)[2]:
        arith.flags |= 1 << 4
    return integer & ((1 << bits) - 1)


def _perform(effect: Callable[[FpRegisters, FPArith], None]) -> Instruction:
    """An instruction: ``effect`` under the CPU's FPCR, its exceptions ORed into FPSR."""
    def instruction(registers: FpRegisters) -> None:
        arith = FPArith(registers.fpcr)
        effect(registers, arith)
        if arith.flags:
            registers.fpsr |= arith.flags
    return instruction


def _half(registers: FpRegisters, number: int) -> int:
    return registers.v(number) & 0xFFFF


def _gp(registers: FpRegisters, number: int, sf: int) -> int:
    """Wn/Xn (register 31 is the zero register)."""
    return 0 if number == 31 else registers.x(number) & (0xFFFF_FFFF_FFFF_FFFF if sf
                                                          else 0xFFFF_FFFF)


def _set_gp(registers: FpRegisters, number: int, value: int) -> None:
    if number != 31:
        registers.set_x(number, value)


def _one_source(opcode: int, rn: int, rd: int) -> Instruction | None:
    def write(result_of: Callable[[FPArith, int], int]) -> Instruction:
        return _perform(lambda registers, arith: registers.set_v(
            rd, result_of(arith, _half(registers, rn))))

    if opcode == 0:
        return write(lambda arith, op: op)
    if opcode == 1:
        return write(lambda arith, op: op & ~_SIGN)
    if opcode == 2:
        return write(lambda arith, op: op ^ _SIGN)
    if opcode == 3:
        return write(lambda arith, op: arith.sqrt(op, FP16))
    if opcode in _FRINT:
        rounding, exact = _FRINT[opcode]
        return write(lambda arith, op: arith.round_int(op, FP16, rounding or arith.rounding,
                                                       exact))
    return None                     # FCVT from half is ARMv8.0: the A72 performs it


def _two_source(opcode: int, rm: int, rn: int, rd: int) -> Instruction | None:
    operations = {
        0: lambda arith, a, b: arith.mul(a, b, FP16),
        1: lambda arith, a, b: arith.div(a, b, FP16),
        2: lambda arith, a, b: arith.add(a, b, FP16),
        3: lambda arith, a, b: arith.add(a, b, FP16, subtract=True),
        4: lambda arith, a, b: arith.max(a, b, FP16),
        5: lambda arith, a, b: arith.max(a, b, FP16, minimum=True),
        6: lambda arith, a, b: arith.max_num(a, b, FP16),
        7: lambda arith, a, b: arith.max_num(a, b, FP16, minimum=True),
        8: lambda arith, a, b: arith.mul(a, b, FP16) ^ _SIGN,     # FNMUL: FPNeg(FPMul)
    }
    if opcode not in operations:
        return None
    operation = operations[opcode]
    return _perform(lambda registers, arith: registers.set_v(
        rd, operation(arith, _half(registers, rn), _half(registers, rm))))


def _three_source(o1: int, o0: int, rm: int, ra: int, rn: int, rd: int) -> Instruction:
    """FMADD (Ra + Rn·Rm), FMSUB (Ra - Rn·Rm), FNMADD (-Ra - Rn·Rm), FNMSUB (-Ra + Rn·Rm)."""
    def effect(registers: FpRegisters, arith: FPArith) -> None:
        addend, op1 = _half(registers, ra), _half(registers, rn)
        if o1:
            addend ^= _SIGN
        if o0 != o1:
            op1 ^= _SIGN
        registers.set_v(rd, arith.mul_add(addend, op1, _half(registers, rm), FP16))
    return _perform(effect)


def _conversion(sf: int, rmode: int, opcode: int, rn: int, rd: int) -> Instruction | None:
    bits = 64 if sf else 32
    if rmode == 0 and opcode in (0b010, 0b011):                       # SCVTF, UCVTF
        def from_integer(registers: FpRegisters, arith: FPArith) -> None:
            value = _gp(registers, rn, sf)
            if opcode == 0b010 and value >> (bits - 1):
                value -= 1 << bits
            registers.set_v(rd, arith.from_integer(value, FP16))
        return _perform(from_integer)
    if rmode == 0 and opcode == 0b110:                                # FMOV Wd/Xd, Hn
        return lambda registers: _set_gp(registers, rd, _half(registers, rn))
    if rmode == 0 and opcode == 0b111:                                # FMOV Hd, Wn/Xn
        return lambda registers: registers.set_v(rd, _gp(registers, rn, sf) & 0xFFFF)
    if opcode > 0b101 or (rmode != 0 and opcode > 0b001):
        return None
    unsigned = bool(opcode & 1)
    rounding = (FPRounding.TIEAWAY if opcode >> 2 else FPRounding.TIEEVEN) if rmode == 0 \
        else _ROUNDINGS[rmode]
    return _perform(lambda registers, arith: _set_gp(
        registers, rd, _to_integer(arith, _half(registers, rn), rounding, bits, unsigned)))


def _bfcvt(rn: int, rd: int) -> Instruction:
    """``BFCVT Hd, Sn`` (FEAT_BF16): ``FPConvertBF``."""
    return _perform(lambda registers, arith: registers.set_v(
        rd, arith.convert_bf16(registers.v(rn) & 0xFFFF_FFFF)))


@lru_cache(maxsize=4096)
def host_instruction(word: int) -> Instruction | None:
    """The host-performed instruction ``word`` encodes (see the module docstring), or None."""
    rd, rn, rm = word & 0x1F, word >> 5 & 0x1F, word >> 16 & 0x1F
    if word & 0xFFFF_FC00 == 0x1E63_4000:
        return _bfcvt(rn, rd)
    if word & 0xFFC0_0000 == 0x1FC0_0000:
        return _three_source(word >> 21 & 1, word >> 15 & 1, rm, word >> 10 & 0x1F, rn, rd)
    if word & 0x7FE0_FC00 == 0x1EE0_0000:
        return _conversion(word >> 31, word >> 19 & 3, word >> 16 & 7, rn, rd)
    if word & 0xFFE0_0000 != 0x1EE0_0000:
        return None
    if word & 0x1FE0 == 0x1000:                                       # FMOV (immediate)
        imm8 = word >> 13 & 0xFF
        return lambda registers: registers.set_v(rd, _expand_immediate(imm8))
    if word & 0x7C00 == 0x4000:
        return _one_source(word >> 15 & 0x3F, rn, rd)
    if word & 0xFC07 == 0x2000:                                       # FCMP, FCMPE
        signalling, with_zero = bool(word & 0x10), bool(word & 0x8)

        def compare(registers: FpRegisters, arith: FPArith) -> None:
            second = 0 if with_zero else _half(registers, rm)
            registers.nzcv = _compare(arith, _half(registers, rn), second, signalling)
        return _perform(compare)
    kind, condition = word >> 10 & 3, word >> 12 & 0xF
    if kind == 0b01:                                                  # FCCMP, FCCMPE
        signalling, otherwise = bool(word & 0x10), word & 0xF

        def conditional_compare(registers: FpRegisters, arith: FPArith) -> None:
            registers.nzcv = (_compare(arith, _half(registers, rn), _half(registers, rm),
                                       signalling)
                              if _condition_holds(condition, registers.nzcv) else otherwise)
        return _perform(conditional_compare)
    if kind == 0b10:
        return _two_source(word >> 12 & 0xF, rm, rn, rd)
    if kind == 0b11:                                                  # FCSEL
        return lambda registers: registers.set_v(rd, _half(
            registers, rn if _condition_holds(condition, registers.nzcv) else rm))
    return None
