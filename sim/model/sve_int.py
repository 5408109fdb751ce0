"""Streaming-SVE integer operations of the model: vector arithmetic, logic and shifts.

Every operation is an element function over exact integers (Python ints, so 64-bit products,
saturation and shifts by any amount need no special cases), applied lane by lane; the form's
fields say where the operands come from (:mod:`zatile.sw.arch.isa.sve_int`) and one shared
handler per shape reads them, applies the function, keeps inactive elements of a merging
destination and writes the result back modulo the element size (docs/isa.md, "Streaming SVE
integer arithmetic").
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from zatile.sim.model.core import handler_name
from zatile.sim.model.mapping import SIGNED, UNSIGNED
from zatile.sw.arch.isa import Decoded
from zatile.sw.arch.isa.sve_int import immediate_operand
from zatile.sw.arch.pseudocode import sat_q

__all__ = ["IntegerVectorOps", "BINARY", "UNARY", "NARROW", "WIDENING", "MULTIPLY_ADD"]


def _shift_sat(amount: int, bits: int) -> int:
    """``ShiftSat``: the signed shift of the SVE2 shifts by vector, clamped to ±(bits + 1)
    (beyond that every result is the same)."""
    return min(max(amount, -(bits + 1)), bits + 1)


def _shift(value: int, amount: int, rounding: bool) -> int:
    """``value`` shifted left by ``amount`` (right when negative), rounding to nearest on the
    right when asked (``(value + 2^(n-1)) >> n``)."""
    if amount >= 0:
        return value << amount
    return (value + (1 << (-amount - 1) if rounding else 0)) >> -amount


def _divide(dividend: int, divisor: int, bits: int) -> int:
    """Integer division rounding toward zero; division by zero gives 0 (docs/isa.md,
    "Streaming SVE integer arithmetic")."""
    if divisor == 0:
        return 0
    quotient = abs(dividend) // abs(divisor)
    return -quotient if (dividend < 0) != (divisor < 0) else quotient


def _doubling_high(a: int, b: int, bits: int, rounding: bool) -> int:
    """SQDMULH/SQRDMULH: the high half of ``2·a·b`` (plus the rounding bit), saturated."""
    return sat_q((2 * a * b + ((1 << (bits - 1)) if rounding else 0)) >> bits, bits, True)


#: Binary operations: operation -> (first operand signed, second operand signed,
#: function(first, second, element bits)). Results are reduced modulo 2^bits afterwards.
BINARY: dict[str, tuple[bool, bool, Callable[[int, int, int], int]]] = {
    "int_add": (False, False, lambda a, b, bits: a + b),
    "int_sub": (False, False, lambda a, b, bits: a - b),
    "int_smax": (True, True, lambda a, b, bits: max(a, b)),
    "int_umax": (False, False, lambda a, b, bits: max(a, b)),
    "int_smin": (True, True, lambda a, b, bits: min(a, b)),
    "int_umin": (False, False, lambda a, b, bits: min(a, b)),
    "int_sabd": (True, True, lambda a, b, bits: abs(a - b)),
    "int_uabd": (False, False, lambda a, b, bits: abs(a - b)),
    "int_mul": (False, False, lambda a, b, bits: a * b),
    "int_smulh": (True, True, lambda a, b, bits: (a * b) >> bits),
    "int_umulh": (False, False, lambda a, b, bits: (a * b) >> bits),
    "int_sdiv": (True, True, _divide),
    "int_udiv": (False, False, _divide),
    "int_orr": (False, False, lambda a, b, bits: a | b),
    "int_eor": (False, False, lambda a, b, bits: a ^ b),
    "int_and": (False, False, lambda a, b, bits: a & b),
    "int_bic": (False, False, lambda a, b, bits: a & ~b),
    # Shift amounts are unsigned: any amount >= the element size shifts everything out.
    "int_asr": (True, False, lambda a, b, bits: a >> min(b, bits)),
    "int_lsr": (False, False, lambda a, b, bits: a >> min(b, bits)),
    "int_lsl": (False, False, lambda a, b, bits: a << b if b < bits else 0),
    "int_asrd": (True, False, lambda a, b, bits: -(-a >> b) if a < 0 else a >> b),
    "int_srshr": (True, False, lambda a, b, bits: _shift(a, -b, rounding=True)),
    "int_urshr": (False, False, lambda a, b, bits: _shift(a, -b, rounding=True)),
    "int_sqshlu": (True, False, lambda a, b, bits: sat_q(a << b, bits, False)),
    # SVE2 shifts by vector: the amount is the signed second element (negative: right).
    "int_srshl": (True, True, lambda a, b, bits: _shift(a, _shift_sat(b, bits), rounding=True)),
    "int_urshl": (False, True, lambda a, b, bits: _shift(a, _shift_sat(b, bits), rounding=True)),
    "int_sqshl": (True, True, lambda a, b, bits: sat_q(
        _shift(a, _shift_sat(b, bits), rounding=False), bits, True)),
    "int_uqshl": (False, True, lambda a, b, bits: sat_q(
        _shift(a, _shift_sat(b, bits), rounding=False), bits, False)),
    "int_sqrshl": (True, True, lambda a, b, bits: sat_q(
        _shift(a, _shift_sat(b, bits), rounding=True), bits, True)),
    "int_uqrshl": (False, True, lambda a, b, bits: sat_q(
        _shift(a, _shift_sat(b, bits), rounding=True), bits, False)),
    "int_shadd": (True, True, lambda a, b, bits: (a + b) >> 1),
    "int_uhadd": (False, False, lambda a, b, bits: (a + b) >> 1),
    "int_shsub": (True, True, lambda a, b, bits: (a - b) >> 1),
    "int_uhsub": (False, False, lambda a, b, bits: (a - b) >> 1),
    "int_srhadd": (True, True, lambda a, b, bits: (a + b + 1) >> 1),
    "int_urhadd": (False, False, lambda a, b, bits: (a + b + 1) >> 1),
    "int_sqadd": (True, True, lambda a, b, bits: sat_q(a + b, bits, True)),
    "int_uqadd": (False, False, lambda a, b, bits: sat_q(a + b, bits, False)),
    "int_sqsub": (True, True, lambda a, b, bits: sat_q(a - b, bits, True)),
    "int_uqsub": (False, False, lambda a, b, bits: sat_q(a - b, bits, False)),
    "int_suqadd": (True, False, lambda a, b, bits: sat_q(a + b, bits, True)),
    "int_usqadd": (False, True, lambda a, b, bits: sat_q(a + b, bits, False)),
    "int_sqdmulh": (True, True, lambda a, b, bits: _doubling_high(a, b, bits, rounding=False)),
    "int_sqrdmulh": (True, True, lambda a, b, bits: _doubling_high(a, b, bits, rounding=True)),
}

#: Unary operations: operation -> (operand signed, function(operand, element bits)).
UNARY: dict[str, tuple[bool, Callable[[int, int], int]]] = {
    "int_sxtb": (False, lambda a, bits: ((a & 0xFF) ^ 0x80) - 0x80),
    "int_uxtb": (False, lambda a, bits: a & 0xFF),
    "int_sxth": (False, lambda a, bits: ((a & 0xFFFF) ^ 0x8000) - 0x8000),
    "int_uxth": (False, lambda a, bits: a & 0xFFFF),
    "int_sxtw": (False, lambda a, bits: ((a & 0xFFFF_FFFF) ^ 0x8000_0000) - 0x8000_0000),
    "int_uxtw": (False, lambda a, bits: a & 0xFFFF_FFFF),
    "int_abs": (True, lambda a, bits: abs(a)),
    "int_neg": (True, lambda a, bits: -a),
    # Leading bits equal to the sign bit, not counting the sign bit itself.
    "int_cls": (True, lambda a, bits: bits - 1 - (~a if a < 0 else a).bit_length()),
    "int_clz": (False, lambda a, bits: bits - a.bit_length()),
    "int_cnt": (False, lambda a, bits: bin(a).count("1")),
    "int_cnot": (False, lambda a, bits: int(a == 0)),
    "int_not": (False, lambda a, bits: ~a),
    "int_sqabs": (True, lambda a, bits: sat_q(abs(a), bits, True)),
    "int_sqneg": (True, lambda a, bits: sat_q(-a, bits, True)),
}

#: Narrowing (saturating extract, shift right narrow): operation -> (source signed, result
#: saturated signed, unsigned or None for truncated, rounding shift).
NARROW: dict[str, tuple[bool, bool | None, bool]] = {
    "int_sqxtn": (True, True, False), "int_uqxtn": (False, False, False),
    "int_sqxtun": (True, False, False),
    "int_shrn": (False, None, False), "int_rshrn": (False, None, True),
    "int_sqshrn": (True, True, False), "int_sqrshrn": (True, True, True),
    "int_uqshrn": (False, False, False), "int_uqrshrn": (False, False, True),
    "int_sqshrun": (True, False, False), "int_sqrshrun": (True, False, True),
}

#: SVE2 widening operations: operation -> (operands signed, first operand already wide,
#: function(first, second, result bits)).
WIDENING: dict[str, tuple[bool, bool, Callable[[int, int, int], int]]] = {
    "int_saddl": (True, False, lambda a, b, bits: a + b),
    "int_uaddl": (False, False, lambda a, b, bits: a + b),
    "int_ssubl": (True, False, lambda a, b, bits: a - b),
    "int_usubl": (False, False, lambda a, b, bits: a - b),
    "int_sabdl": (True, False, lambda a, b, bits: abs(a - b)),
    "int_uabdl": (False, False, lambda a, b, bits: abs(a - b)),
    "int_saddw": (True, True, lambda a, b, bits: a + b),
    "int_uaddw": (False, True, lambda a, b, bits: a + b),
    "int_ssubw": (True, True, lambda a, b, bits: a - b),
    "int_usubw": (False, True, lambda a, b, bits: a - b),
    "int_sqdmull": (True, False, lambda a, b, bits: sat_q(2 * a * b, bits, True)),
    "int_smull": (True, False, lambda a, b, bits: a * b),
    "int_umull": (False, False, lambda a, b, bits: a * b),
}

#: Multiply-add: operation -> sign of the product.
MULTIPLY_ADD: dict[str, int] = {"int_mla": 1, "int_mls": -1}


class IntegerVectorOps:
    """Handlers of the :class:`~zatile.sim.model.ReferenceModel` (mixed into it)."""

    def _elements(self, register: int, esize: int, signed: bool) -> np.ndarray:
        """Z<register> as an object array of exact ints, one per ``esize``-byte element."""
        return self.state.z[register].view((SIGNED if signed else UNSIGNED)[esize]).astype(object)

    def _write_elements(self, decoded: Decoded, register: int, values, esize: int) -> None:
        """Write ``values`` (exact ints, reduced modulo the element size) to Z<register>; with a
        governing predicate ``pg`` only the active elements (merging)."""
        mask = (1 << (8 * esize)) - 1
        lanes = np.array([value & mask for value in values], object).astype(UNSIGNED[esize])
        if "pg" in decoded.fields:
            old = self.state.z[register].view(UNSIGNED[esize])
            lanes = np.where(self._active(decoded["pg"], esize), lanes, old)
        self.state.z[register] = lanes.view(np.uint8)

    def _binary(self, decoded: Decoded, operation: str) -> None:
        first_signed, second_signed, function = BINARY[operation]
        params, fields = decoded.form.params, decoded.fields
        esize = params["esize"]
        destination = fields["zdn"] if "zdn" in fields else fields["zd"]
        count = self._svl_bytes // esize
        # Each operand as (register or None for the immediate, element size of the register).
        first = (destination if "zdn" in fields else fields["zn"], esize)
        second = (fields["zm"], 8 if params.get("wide") else esize) if "zm" in fields \
            else (None, esize)
        if params.get("reversed"):
            first, second = second, first

        def read(operand: tuple[int | None, int], signed: bool) -> np.ndarray:
            register, size = operand
            if register is None:
                return np.full(count, immediate_operand(decoded), object)
            # A wide operand's 64-bit element serves every element of its 64-bit lane.
            return self._elements(register, size, signed).repeat(size // esize)

        bits = 8 * esize
        values = [function(a, b, bits) for a, b in zip(read(first, first_signed),
                                                       read(second, second_signed))]
        self._write_elements(decoded, destination, values, esize)

    def _unary(self, decoded: Decoded, operation: str) -> None:
        signed, function = UNARY[operation]
        esize = decoded.form.params["esize"]
        bits = 8 * esize
        values = [function(a, bits) for a in self._elements(decoded["zn"], esize, signed)]
        self._write_elements(decoded, decoded["zd"], values, esize)

    def _multiply_add(self, decoded: Decoded, operation: str) -> None:
        """MLA/MLS: Zda ± Zn·Zm; MAD/MSB: Za ± Zdn·Zm; merging into the first register."""
        esize = decoded.form.params["esize"]
        fields = decoded.fields
        destination, multiplicand, addend = (fields["zda"], fields["zn"], fields["zda"]) \
            if "zda" in fields else (fields["zdn"], fields["zdn"], fields["za"])
        sign = MULTIPLY_ADD[operation]
        values = [c + sign * a * b for a, b, c in zip(
            self._elements(multiplicand, esize, False), self._elements(fields["zm"], esize, False),
            self._elements(addend, esize, False))]
        self._write_elements(decoded, destination, values, esize)

    def _narrow(self, decoded: Decoded, operation: str) -> None:
        """Shift each double-width element of Zn right (by the immediate, if any; rounding when
        asked), saturate or truncate it into the even (bottom) or odd (top) half of its lane;
        the bottom forms zero the odd halves, the top forms keep the even ones."""
        source_signed, result_signed, rounding = NARROW[operation]
        esize = decoded.form.params["esize"]
        bits = 8 * esize
        shift = immediate_operand(decoded) if "shift" in decoded.fields else 0
        narrowed = [_shift(value, -shift, rounding)
                    for value in self._elements(decoded["zn"], 2 * esize, source_signed)]
        if result_signed is not None:
            narrowed = [sat_q(value, bits, result_signed) for value in narrowed]
        lanes = self._elements(decoded["zd"], esize, False).reshape(-1, 2)
        if not decoded.form.params["top"]:
            lanes[:, 1] = 0
        lanes[:, int(decoded.form.params["top"])] = narrowed
        self._write_elements(decoded, decoded["zd"], lanes.reshape(-1), esize)

    def _widening(self, decoded: Decoded, operation: str) -> None:
        """Each double-width element from the even (bottom) or odd (top) narrow elements of
        its lane; a wide first operand is the element itself."""
        signed, wide_first, function = WIDENING[operation]
        esize, top = decoded.form.params["esize"], int(decoded.form.params["top"])
        first = self._elements(decoded["zn"], esize, signed) if wide_first \
            else self._elements(decoded["zn"], esize // 2, signed)[top::2]
        second = self._elements(decoded["zm"], esize // 2, signed)[top::2]
        values = [function(a, b, 8 * esize) for a, b in zip(first, second)]
        self._write_elements(decoded, decoded["zd"], values, esize)

    def _op_int_dupm(self, decoded: Decoded) -> None:
        self._broadcast(decoded["zd"], immediate_operand(decoded), 8)


def _handler(shape: Callable[[IntegerVectorOps, Decoded, str], None], operation: str):
    def handler(self: IntegerVectorOps, decoded: Decoded) -> None:
        shape(self, decoded, operation)

    handler.__name__ = handler_name(operation)
    handler.__doc__ = f"``{operation}`` ({shape.__name__.strip('_').replace('_', ' ')})."
    return handler


for _table, _shape in ((BINARY, IntegerVectorOps._binary), (UNARY, IntegerVectorOps._unary),
                       (NARROW, IntegerVectorOps._narrow),
                       (WIDENING, IntegerVectorOps._widening),
                       (MULTIPLY_ADD, IntegerVectorOps._multiply_add)):
    for _operation in _table:
        setattr(IntegerVectorOps, handler_name(_operation), _handler(_shape, _operation))
