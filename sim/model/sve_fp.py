"""Streaming-SVE floating-point operations of the model: arithmetic, multiply-add, rounding,
comparisons, reductions, reciprocal estimates and steps, conversions and immediate moves.

Every operation applies the exact reference (:class:`zatile.sim.fpref.FPArith`, the Arm
pseudocode under the current FPCR) to each active element, in element order, and reports the
exceptions the active elements raised as FPSR cumulative bits (docs/isa.md, "Streaming SVE
floating point" and "Floating-point exceptions"). Inactive elements of a merging destination
keep their value and raise nothing; a compare writes a zeroing predicate.
"""

from __future__ import annotations

import numpy as np

from zatile.sim.fpref import FP16, FP32, FP64, FPArith, FPRounding, Format
from zatile.sim.model.mapping import UNSIGNED
from zatile.sw.arch.isa import Decoded
from zatile.sw.arch.pseudocode import vfp_expand_imm
from zatile.sw.arch.isa.sve_fp import (CONDITIONS, FRINT_SUFFIXES, IMMEDIATE_CONSTANTS,
                                        conversion_sizes)

__all__ = ["FloatingPointVectorOps", "FORMATS"]

#: The IEEE format of an element by size in bytes.
FORMATS: dict[int, Format] = {2: FP16, 4: FP32, 8: FP64}

#: FRINT<x>: the rounding, None for FPCR's, and whether Inexact is raised (FRINTX).
_FRINT = {"n": (FPRounding.TIEEVEN, False), "p": (FPRounding.POSINF, False),
          "m": (FPRounding.NEGINF, False), "z": (FPRounding.ZERO, False),
          "a": (FPRounding.TIEAWAY, False), "x": (None, True), "i": (None, False)}


def _constant_bits(value: float, fmt: Format) -> int:
    """The bit pattern of 0.0, 0.5, 1.0 or 2.0 in ``fmt``."""
    if value == 0:
        return 0
    exponent = {0.5: -1, 1.0: 0, 2.0: 1}[value]
    return (fmt.bias + exponent) << fmt.fraction_bits


def _sign_bit(fmt: Format) -> int:
    return 1 << (fmt.width - 1)


def _scale_operand(bits: int, fmt: Format) -> int:
    """FSCALE's second operand: the element as a signed integer."""
    return bits - (1 << fmt.width) if bits >> (fmt.width - 1) else bits


#: Binary operations: operation -> function(arith, first, second, format).
BINARY = {
    "fp_add": lambda arith, a, b, fmt: arith.add(a, b, fmt),
    "fp_sub": lambda arith, a, b, fmt: arith.add(a, b, fmt, subtract=True),
    "fp_mul": lambda arith, a, b, fmt: arith.mul(a, b, fmt),
    "fp_mulx": lambda arith, a, b, fmt: arith.mul(a, b, fmt, extended=True),
    "fp_div": lambda arith, a, b, fmt: arith.div(a, b, fmt),
    "fp_max": lambda arith, a, b, fmt: arith.max(a, b, fmt),
    "fp_min": lambda arith, a, b, fmt: arith.max(a, b, fmt, minimum=True),
    "fp_maxnm": lambda arith, a, b, fmt: arith.max_num(a, b, fmt),
    "fp_minnm": lambda arith, a, b, fmt: arith.max_num(a, b, fmt, minimum=True),
    # FPAbs clears the sign of a NaN result too (FPCR.AH = 0).
    "fp_abd": lambda arith, a, b, fmt: arith.add(a, b, fmt, subtract=True) & ~_sign_bit(fmt),
    "fp_scale": lambda arith, a, b, fmt: arith.scale(a, _scale_operand(b, fmt), fmt),
    "fp_recps": lambda arith, a, b, fmt: arith.recip_step(a, b, fmt),
    "fp_rsqrts": lambda arith, a, b, fmt: arith.rsqrt_step(a, b, fmt),
}

#: Reductions: operation -> (function(arith, left, right, format), identity(format)) for the
#: inactive elements (docs/isa.md, "Streaming SVE floating point").
REDUCTIONS = {
    "fp_addv": (BINARY["fp_add"], lambda fmt: 0),
    "fp_maxv": (BINARY["fp_max"], lambda fmt: _sign_bit(fmt) | (2 ** fmt.exponent_bits - 1)
                << fmt.fraction_bits),
    "fp_minv": (BINARY["fp_min"], lambda fmt: (2 ** fmt.exponent_bits - 1) << fmt.fraction_bits),
    "fp_maxnmv": (BINARY["fp_maxnm"], lambda fmt: (2 ** (fmt.exponent_bits + 1) - 1)
                  << (fmt.fraction_bits - 1)),
    "fp_minnmv": (BINARY["fp_minnm"], lambda fmt: (2 ** (fmt.exponent_bits + 1) - 1)
                  << (fmt.fraction_bits - 1)),
}


class FloatingPointVectorOps:
    """Handlers of the :class:`~zatile.sim.model.ReferenceModel` (mixed into it)."""

    def _fp_lanes(self, register: int, esize: int) -> np.ndarray:
        """Z<register> as a copy of its ``esize``-byte elements."""
        return self.state.z[register].view(UNSIGNED[esize]).copy()

    def _fp_active(self, decoded: Decoded, esize: int) -> np.ndarray:
        """The elements the governing predicate makes active (all without one)."""
        if "pg" in decoded.fields:
            return self._active(decoded["pg"], esize)
        return np.ones(self._svl_bytes // esize, bool)

    def _fp_elementwise(self, decoded: Decoded, destination: int, operands, function,
                        arith: FPArith) -> None:
        """Z<destination>[e] = function(*operands[e]) for each active element ``e``; the
        others keep their value. Reports the exceptions raised."""
        esize = decoded.form.params["esize"]
        lanes = self._fp_lanes(destination, esize)
        for element in np.flatnonzero(self._fp_active(decoded, esize)):
            lanes[element] = function(*(int(operand[element]) for operand in operands))
        self.state.z[destination] = lanes.view(np.uint8)
        self._raise_fp(arith.flags)

    def _fp_binary(self, decoded: Decoded, operation: str) -> None:
        params, fields = decoded.form.params, decoded.fields
        esize = params["esize"]
        fmt = FORMATS[esize]
        destination = fields["zdn"] if "zdn" in fields else fields["zd"]
        first = self._fp_lanes(destination if "zdn" in fields else fields["zn"], esize)
        if "zm" in fields:
            second = self._fp_lanes(fields["zm"], esize)
        else:
            constant = _constant_bits(IMMEDIATE_CONSTANTS[operation][fields["imm"]], fmt)
            second = np.full(first.size, constant, UNSIGNED[esize])
        if params.get("reversed"):
            first, second = second, first
        arith = FPArith(self.state.fpcr)
        function = BINARY[operation]
        self._fp_elementwise(decoded, destination, (first, second),
                             lambda a, b: function(arith, a, b, fmt), arith)

    def _op_fp_mla(self, decoded: Decoded) -> None:
        """FMLA family: Zda + Zn·Zm; FMAD family: Za + Zdn·Zm; FPNeg on the product's first
        factor and on the addend as the form says (a NaN's sign flips too)."""
        params, fields = decoded.form.params, decoded.fields
        esize = params["esize"]
        fmt = FORMATS[esize]
        destination, multiplicand, addend = (fields["zda"], fields["zn"], fields["zda"]) \
            if "zda" in fields else (fields["zdn"], fields["zdn"], fields["za"])
        product_sign = _sign_bit(fmt) if params["negate_product"] else 0
        addend_sign = _sign_bit(fmt) if params["negate_addend"] else 0
        arith = FPArith(self.state.fpcr)
        self._fp_elementwise(
            decoded, destination, (self._fp_lanes(addend, esize),
                                   self._fp_lanes(multiplicand, esize),
                                   self._fp_lanes(fields["zm"], esize)),
            lambda c, a, b: arith.mul_add(c ^ addend_sign, a ^ product_sign, b, fmt), arith)

    def _fp_unary(self, decoded: Decoded, function) -> None:
        esize = decoded.form.params["esize"]
        arith = FPArith(self.state.fpcr)
        fmt = FORMATS[esize]
        self._fp_elementwise(decoded, decoded["zd"], (self._fp_lanes(decoded["zn"], esize),),
                             lambda a: function(arith, a, fmt), arith)

    def _op_fp_sqrt(self, decoded: Decoded) -> None:
        self._fp_unary(decoded, lambda arith, a, fmt: arith.sqrt(a, fmt))

    def _op_fp_recpe(self, decoded: Decoded) -> None:
        """FRECPE: the 8-bit table estimate of 1/x, every element (unpredicated)."""
        self._fp_unary(decoded, lambda arith, a, fmt: arith.recip_estimate(a, fmt))

    def _op_fp_rsqrte(self, decoded: Decoded) -> None:
        """FRSQRTE: the 8-bit table estimate of 1/sqrt(x), every element (unpredicated)."""
        self._fp_unary(decoded, lambda arith, a, fmt: arith.rsqrt_estimate(a, fmt))

    def _op_fp_recpx(self, decoded: Decoded) -> None:
        """FRECPX: the exponent inverted (merging)."""
        self._fp_unary(decoded, lambda arith, a, fmt: arith.recip_exponent(a, fmt))

    def _fp_frint(self, decoded: Decoded, operation: str) -> None:
        """FRINT<x>: the rounding the form names, or FPCR's (FRINTI, FRINTX)."""
        rounding, exact = _FRINT[operation[-1]]
        self._fp_unary(decoded, lambda arith, a, fmt: arith.round_int(
            a, fmt, arith.rounding if rounding is None else rounding, exact))

    def _fp_sign(self, decoded: Decoded, clear: bool) -> None:
        """FABS/FNEG: the sign bit only, NaNs included; no exception."""
        esize = decoded.form.params["esize"]
        sign = _sign_bit(FORMATS[esize])
        lanes = self._fp_lanes(decoded["zd"], esize)
        source = self._fp_lanes(decoded["zn"], esize)
        active = self._fp_active(decoded, esize)
        changed = source & ~UNSIGNED[esize].type(sign) if clear \
            else source ^ UNSIGNED[esize].type(sign)
        lanes[active] = changed[active]
        self.state.z[decoded["zd"]] = lanes.view(np.uint8)

    def _op_fp_abs(self, decoded: Decoded) -> None:
        self._fp_sign(decoded, clear=True)

    def _op_fp_neg(self, decoded: Decoded) -> None:
        self._fp_sign(decoded, clear=False)

    def _fp_compare(self, decoded: Decoded, operation: str) -> None:
        """FCMxx/FACxx: Pd[e] = the condition for active elements, 0 for inactive ones."""
        params = decoded.form.params
        esize = params["esize"]
        fmt = FORMATS[esize]
        first = self._fp_lanes(decoded["zn"], esize)
        second = self._fp_lanes(decoded["zm"], esize) if "zm" in decoded.fields \
            else np.zeros(first.size, UNSIGNED[esize])
        if params.get("swapped"):
            first, second = second, first
        if params.get("absolute"):
            magnitude = UNSIGNED[esize].type(_sign_bit(fmt) - 1)
            first, second = first & magnitude, second & magnitude
        arith = FPArith(self.state.fpcr)
        active = self._active(decoded["pg"], esize)
        result = np.zeros(first.size, bool)
        for element in np.flatnonzero(active):
            result[element] = arith.compare(int(first[element]), int(second[element]), fmt,
                                            operation[len("fp_cmp"):])
        bits = np.zeros(self._svl_bytes, np.uint8)
        bits[::esize] = result
        self.state.p[decoded["pd"]] = np.packbits(bits, bitorder="little")
        self._raise_fp(arith.flags)

    def _fp_reduce(self, decoded: Decoded, operation: str) -> None:
        """``FPReducePredicated``: inactive elements become the identity, then the vector is
        halved recursively, ``op(lower half, upper half)`` element by element, to one
        element, which is written to Vd with the rest of Zd zeroed."""
        esize = decoded.form.params["esize"]
        fmt = FORMATS[esize]
        function, identity = REDUCTIONS[operation]
        values = [int(value) if active else identity(fmt) for value, active in zip(
            self._fp_lanes(decoded["zn"], esize), self._active(decoded["pg"], esize))]
        arith = FPArith(self.state.fpcr)

        def reduce(elements: list[int]) -> int:
            if len(elements) == 1:
                return elements[0]
            half = len(elements) // 2
            return function(arith, reduce(elements[:half]), reduce(elements[half:]), fmt)

        result = np.zeros(self._svl_bytes // esize, UNSIGNED[esize])
        result[0] = reduce(values)
        self.state.z[decoded["vd"]] = result.view(np.uint8)
        self._raise_fp(arith.flags)

    # ------------------------------------------------------------------ conversions
    def _fp_convert(self, decoded: Decoded, function) -> None:
        """Zd[e] = function(arith, the low source-size bytes of Zn[e]) for active elements of
        ``esize`` bytes, the result zero-extended (docs/isa.md, "Streaming SVE floating
        point"); inactive elements keep Zd."""
        esize = decoded.form.params["esize"]
        source_mask = (1 << 8 * conversion_sizes(decoded.form.params)[0]) - 1
        container_mask = (1 << 8 * esize) - 1
        arith = FPArith(self.state.fpcr)
        self._fp_elementwise(decoded, decoded["zd"], (self._fp_lanes(decoded["zn"], esize),),
                             lambda a: function(arith, a & source_mask) & container_mask,
                             arith)

    def _fp_formats(self, decoded: Decoded) -> tuple[Format, Format]:
        source, result = conversion_sizes(decoded.form.params)
        return FORMATS[source], FORMATS[result]

    def _op_fp_fcvt(self, decoded: Decoded) -> None:
        """FCVT: ``FPConvertSVE``, which ignores FPCR.AHP."""
        source, destination = self._fp_formats(decoded)
        self._fp_convert(decoded, lambda arith, a: arith.convert(a, source, destination,
                                                                 sve=True))

    def _op_fp_fcvtx(self, decoded: Decoded) -> None:
        """FCVTX: double to single rounding to odd."""
        self._fp_convert(decoded, lambda arith, a: arith.convert(a, FP64, FP32,
                                                                 FPRounding.ODD, sve=True))

    def _op_fp_bfcvt(self, decoded: Decoded) -> None:
        self._fp_convert(decoded, lambda arith, a: arith.convert_bf16(a))

    def _int_to_fp(self, decoded: Decoded, unsigned: bool) -> None:
        """SCVTF/UCVTF: ``FixedToFP`` of the source integer, FPCR rounding."""
        bits = 8 * conversion_sizes(decoded.form.params)[0]
        destination = self._fp_formats(decoded)[1]
        self._fp_convert(decoded, lambda arith, a: arith.from_integer(
            a if unsigned or a >> (bits - 1) == 0 else a - (1 << bits), destination))

    def _op_fp_scvtf(self, decoded: Decoded) -> None:
        self._int_to_fp(decoded, unsigned=False)

    def _op_fp_ucvtf(self, decoded: Decoded) -> None:
        self._int_to_fp(decoded, unsigned=True)

    def _fp_to_int(self, decoded: Decoded, unsigned: bool) -> None:
        """FCVTZS/FCVTZU: ``FPToFixed`` toward zero, saturating to the result size and then
        sign- or zero-extended to the element (the container mask does the sign extension)."""
        source = self._fp_formats(decoded)[0]
        bits = 8 * conversion_sizes(decoded.form.params)[1]
        self._fp_convert(decoded, lambda arith, a: arith.to_integer(a, source, bits, unsigned))

    def _op_fp_fcvtzs(self, decoded: Decoded) -> None:
        self._fp_to_int(decoded, unsigned=False)

    def _op_fp_fcvtzu(self, decoded: Decoded) -> None:
        self._fp_to_int(decoded, unsigned=True)

    def _fp_convert_top(self, decoded: Decoded, function) -> None:
        """FCVTNT family: each active wide element of Zn, converted, goes to the odd
        (top) narrow element of the same container in Zd; the even ones and inactive
        containers keep Zd."""
        params = decoded.form.params
        lanes = self._fp_lanes(decoded["zd"], conversion_sizes(params)[1])
        source = self._fp_lanes(decoded["zn"], params["esize"])
        arith = FPArith(self.state.fpcr)
        for element in np.flatnonzero(self._fp_active(decoded, params["esize"])):
            lanes[2 * element + 1] = function(arith, int(source[element]))
        self.state.z[decoded["zd"]] = lanes.view(np.uint8)
        self._raise_fp(arith.flags)

    def _op_fp_fcvtnt(self, decoded: Decoded) -> None:
        source, destination = self._fp_formats(decoded)
        self._fp_convert_top(decoded, lambda arith, a: arith.convert(a, source, destination,
                                                                     sve=True))

    def _op_fp_bfcvtnt(self, decoded: Decoded) -> None:
        self._fp_convert_top(decoded, lambda arith, a: arith.convert_bf16(a))

    def _op_fp_fcvtxnt(self, decoded: Decoded) -> None:
        self._fp_convert_top(decoded, lambda arith, a: arith.convert(a, FP64, FP32,
                                                                     FPRounding.ODD, sve=True))

    def _op_fp_fcvtlt(self, decoded: Decoded) -> None:
        """FCVTLT: the odd (top) narrow element of each active container of Zn, widened, to
        the container of Zd; inactive containers keep Zd."""
        source, destination = self._fp_formats(decoded)
        narrow = self._fp_lanes(decoded["zn"], source.width // 8)
        arith = FPArith(self.state.fpcr)
        self._fp_elementwise(decoded, decoded["zd"], (narrow[1::2],),
                             lambda a: arith.convert(a, source, destination, sve=True), arith)

    # ------------------------------------------------------------------ immediate moves
    def _op_fp_dup_imm(self, decoded: Decoded) -> None:
        """FMOV (FDUP): every element is ``VFPExpandImm(imm8)``."""
        esize = decoded.form.params["esize"]
        self._broadcast(decoded["zd"], vfp_expand_imm(decoded["imm8"], 8 * esize), esize)

    def _op_fp_cpy_imm(self, decoded: Decoded) -> None:
        """FMOV (FCPY): the active elements become ``VFPExpandImm(imm8)``; merging."""
        esize = decoded.form.params["esize"]
        lanes = self._fp_lanes(decoded["zd"], esize)
        lanes[self._active(decoded["pg"], esize)] = vfp_expand_imm(decoded["imm8"], 8 * esize)
        self.state.z[decoded["zd"]] = lanes.view(np.uint8)


def _handler(shape, operation: str):
    def handler(self: FloatingPointVectorOps, decoded: Decoded) -> None:
        shape(self, decoded, operation)

    handler.__name__ = f"_op_{operation}"
    handler.__doc__ = f"``{operation}`` ({shape.__name__.strip('_').replace('_', ' ')})."
    return handler


for _table, _shape in ((BINARY, FloatingPointVectorOps._fp_binary),
                       (REDUCTIONS, FloatingPointVectorOps._fp_reduce),
                       ([f"fp_frint{suffix}" for suffix in FRINT_SUFFIXES],
                        FloatingPointVectorOps._fp_frint),
                       ([f"fp_cmp{condition}" for condition in CONDITIONS],
                        FloatingPointVectorOps._fp_compare)):
    for _operation in _table:
        setattr(FloatingPointVectorOps, f"_op_{_operation}", _handler(_shape, _operation))
