"""The vector unit's floating-point arithmetic: add, subtract, multiply, fused multiply-add,
the step functions, FSCALE, FABD and the FADDV reduction, with NaN propagation and exceptions.

An execution unit of :mod:`zatile.hw.vector` (payloads in :mod:`zatile.hw.vector.common`);
docs/isa.md, "Streaming SVE floating point", states the semantics and the reference model
(:mod:`zatile.sim.model.sve_fp` over :class:`zatile.sim.fpref.FPArith`) is the oracle of
``tests/test_hw_vector_fp_arith.py``.

Every operation is one fused multiply-add ``addend + multiplicand * multiplier`` rounded once,
with operands chosen per operation (``FPAdd`` is ``x * 1.0 + y``, ``FPMul`` is ``x * y`` plus a
zero of the product's sign, ``FPScale`` is ``x * 1.0`` with the exponent moved, the step
functions add ``2.0`` or ``3.0`` to ``-x * y``); the special cases the Arm pseudocode checks
before the arithmetic (NaN propagation in the operation's operand order, FPCR.DN, infinity
times zero, opposite infinities, equal-signed zeros) are decided beside the datapath.

One datapath serves every element size (half, single, double), the size a run-time parameter
of each of its steps:

* reading: an element is the 64-bit word of the register that holds it, then its part of the
  word (:func:`_element`);
* unpacking: a source element becomes a value of FP64's unpacked layout, its fraction at the
  top of FP64's, its exponent unbiased with its own format's bias (:func:`_unpacked`). There
  the constants the operations add or multiply by (0.5, 1.0, 2.0, 3.0, zero) are the same in
  every format, so the operands are chosen from the unpacked sources (:func:`_operands`);
* the exact fused multiply-add of FP64: the 53 x 53-bit significand product
  (:func:`_product_terms`, :class:`~zatile.hw.fp.multiply.FpMultiply`, which synthesis maps
  to DSP blocks), alignment and addition (:func:`_exact_sum`), normalization down to the format's minimum exponent keeping only the top
  bits any format's rounding uses and a sticky bit
  (:func:`~zatile.hw.fp.normalize.normalized_sum`);
* rounding at the format's precision: the kept significand bits are masked to it, its round
  and sticky bits picked, the increment added at its last place (:func:`_rounded`); the result
  is a sign, an 11-bit exponent field and a fraction at the top of 52 bits, packed into the
  format at the end (:func:`_packed`, which repeats it across a 64-bit word);
* writing: the packed word goes into the bytes of the element at the index.

The unit issues one element per cycle, in element order, into a pipeline with a register
after each of its steps: reading, unpacking and choosing the operands (``m_``), the product
(``a_``), the alignment and addition (``n_``), the normalization (``o_``); rounding, the
special cases and packing then write the element back in the fifth cycle. An instruction of
``SVL / esize`` elements offers its result ``SVL / esize + 6`` cycles after it is accepted.
FADDV halves the vector recursively as ``FPReducePredicated`` does (inactive elements are
+0.0): level by level, element ``j`` of the next level is the sum of elements ``2j`` and
``2j+1``, written in place, ``SVL / esize - 1`` additions in all; a level is issued once the
previous one is written, so each level costs its additions plus 5 cycles.

Exceptions: IDC for each flushed denormal operand (not for half precision), IOC for a
signalling NaN or an invalid operation, and OFC, UFC (tiny before rounding and inexact, or
flushed), IXC from the rounding; only active elements raise them (every addition of FADDV).
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth import Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import data, enum

from zatile.hw._common import max_bytes
from zatile.hw.decoder import Op
from zatile.hw.fp.align_add import FpAlignAdd, SumLayout, TermLayout, assign_term
from zatile.hw.fp.format import FP16, FP32, FP64
from zatile.hw.fp.multiply import FpMultiply
from zatile.hw.fp.normalize import normalized_sum
from zatile.hw.fp.unpack import UnpackedLayout
from zatile.hw.vector.common import VectorExecutionUnit, active_bytes

__all__ = ["VectorFpArith"]

#: The formats by log2 of the element size in bytes.
_FORMATS = {1: FP16, 2: FP32, 3: FP64}
#: The format of the one fused datapath every format shares (the widest).
_FUSED = FP64
#: Bits of the register word an element is read from (the widest element).
_WORD_BITS = _FUSED.width
#: Bits of the normalized sum any format's rounding needs: FP64's significand, its round bit
#: and a sticky bit.
_NORMALIZED_BITS = _FUSED.precision + 2


class _Kind(enum.Enum, shape=3):
    """How an element operation maps onto the fused multiply-add."""

    ADD = 0     # x + (-)y: x * 1.0 + y
    MUL = 1     # x * y (+ a zero of the product's sign)
    MULX = 2    # as MUL, but infinity * zero is 2.0
    SCALE = 3   # x * 2^y
    STEP = 4    # 2.0 - x * y, or (3.0 - x * y) / 2
    MLA = 5     # addend + multiplicand * multiplier


#: The kind of each operation of the unit.
_KINDS = {Op.FP_ADD: _Kind.ADD, Op.FP_SUB: _Kind.ADD, Op.FP_ABD: _Kind.ADD,
          Op.FP_ADDV: _Kind.ADD, Op.FP_MUL: _Kind.MUL, Op.FP_MULX: _Kind.MULX,
          Op.FP_SCALE: _Kind.SCALE, Op.FP_RECPS: _Kind.STEP, Op.FP_RSQRTS: _Kind.STEP,
          Op.FP_MLA: _Kind.MLA}

#: The controls of one instruction, shared by every element.
_ControlLayout = data.StructLayout({
    "kind": _Kind, "subtract": 1, "reversed": 1, "absolute": 1, "rsqrt": 1,
    "negate_product": 1, "negate_addend": 1, "immediate": 1, "imm": 1, "imm_mul": 1,
    "reduction": 1, "rounding": 2, "dn": 1, "fz": 1, "fz16": 1,
})


def _unpacked_constant(exponent: int, fraction_top: int = 0) -> Const:
    """The positive value ``2^exponent * (1 + fraction_top / 2)``, unpacked in :data:`_FUSED`
    (the same value in every format)."""
    return UnpackedLayout(_FUSED).const({
        "exponent": exponent,
        "significand": (2 | fraction_top) << (_FUSED.fraction_bits - 1)})


def _format_parameter(m: Module, esize_log2: Value, name: str, shape,
                      value_of) -> Signal:
    """``value_of(fmt)`` for the element format ``esize_log2`` selects, at run time."""
    parameter = Signal(shape, name=f"format_{name}")
    with m.Switch(esize_log2):
        for log2, fmt in _FORMATS.items():
            with m.Case(log2):
                m.d.comb += parameter.eq(value_of(fmt))
    return parameter


@dataclass(frozen=True)
class _FormatParameters:
    """The run-time parameters of the element format: its properties
    (:class:`~zatile.hw.fp.format.FpFormat`) the datapath needs, and where a significand at the
    top of FP64's keeps its bits (``kept_mask``) and has its last place (``last_place``)."""

    esize_log2: Value
    is_fp16: Value
    bias: Signal
    exponent_ones: Signal
    min_exponent: Signal
    max_exponent: Signal
    kept_mask: Signal
    last_place: Signal


def _format_parameters(m: Module, esize_log2: Value) -> _FormatParameters:
    """The :class:`_FormatParameters` of the element format ``esize_log2`` selects."""
    exponent_shape = signed(_FUSED.exponent_bits + 4)
    precision = _FUSED.precision

    def parameter(name, shape, value_of):
        return _format_parameter(m, esize_log2, name, shape, value_of)

    return _FormatParameters(
        esize_log2=esize_log2, is_fp16=esize_log2 == 1,
        bias=parameter("bias", _FUSED.exponent_bits, lambda fmt: fmt.bias),
        exponent_ones=parameter("exponent_ones", _FUSED.exponent_bits,
                                lambda fmt: 2 ** fmt.exponent_bits - 1),
        min_exponent=parameter("min_exponent", exponent_shape, lambda fmt: fmt.min_exponent),
        max_exponent=parameter("max_exponent", exponent_shape, lambda fmt: fmt.max_exponent),
        kept_mask=parameter("kept_mask", precision,
                            lambda fmt: (2 ** fmt.precision - 1) << (precision - fmt.precision)),
        last_place=parameter("last_place", precision,
                             lambda fmt: 1 << (precision - fmt.precision)))


def _element(m: Module, vector: Value, index: Value, esize_log2: Value, name: str) -> Signal:
    """Element ``index`` of ``vector`` (elements of ``2^esize_log2`` bytes), zero-extended to
    64 bits: the 64-bit word holding it, then its part of the word."""
    words = len(vector) // _WORD_BITS
    word_index = Signal(range(words), name=f"{name}_word_index")
    element = Signal(_WORD_BITS, name=name)
    word = Signal(_WORD_BITS, name=f"{name}_word")
    m.d.comb += word.eq(vector.word_select(word_index, _WORD_BITS))
    with m.Switch(esize_log2):
        for log2 in _FORMATS:
            per_word_log2 = 3 - log2
            with m.Case(log2):
                m.d.comb += word_index.eq(index >> per_word_log2)
                if per_word_log2:
                    m.d.comb += element.eq(word.word_select(index[:per_word_log2], 8 << log2))
                else:
                    m.d.comb += element.eq(word)
    return element


@dataclass(frozen=True)
class _Source:
    """A source element unpacked in :data:`_FUSED` (``operand``, of
    :func:`~zatile.hw.fp.unpack.UnpackedLayout`), whether it is a signalling NaN, and whether
    it is denormal (before any flush)."""

    operand: Value
    signalling: Value
    subnormal: Value


def _unpacked(m: Module, params: _FormatParameters, element: Value, flush: Value,
              name: str) -> _Source:
    """``FPUnpack`` (flushing denormals when ``flush`` is set) of an element of the run-time
    format, into FP64's layout: the fraction at the top of FP64's, the exponent unbiased with
    the format's bias, so the value and its class are the element's."""
    sign = Signal(name=f"{name}_sign")
    exponent_field = Signal(_FUSED.exponent_bits, name=f"{name}_exponent_field")
    fraction = Signal(_FUSED.fraction_bits, name=f"{name}_fraction")
    with m.Switch(params.esize_log2):
        for log2, fmt in _FORMATS.items():
            with m.Case(log2):
                m.d.comb += [
                    sign.eq(element[fmt.width - 1]),
                    exponent_field.eq(element[fmt.fraction_bits:fmt.width - 1]),
                    fraction.eq(element[:fmt.fraction_bits]
                                << (_FUSED.fraction_bits - fmt.fraction_bits)),
                ]
    exponent_is_zero = exponent_field == 0
    exponent_is_ones = exponent_field == params.exponent_ones
    fraction_is_zero = fraction == 0
    operand = Signal(UnpackedLayout(_FUSED), name=name)
    m.d.comb += [
        operand.sign.eq(sign),
        # A denormal has the scale of the smallest normal: biased exponent 1.
        operand.exponent.eq(Mux(exponent_is_zero, 1, exponent_field) - params.bias),
        operand.significand.eq(Mux(exponent_is_zero & flush, 0,
                                   Cat(fraction, ~exponent_is_zero))),
        operand.zero.eq(exponent_is_zero & (fraction_is_zero | flush)),
        operand.denormal.eq(exponent_is_zero & ~fraction_is_zero & ~flush),
        operand.infinity.eq(exponent_is_ones & fraction_is_zero),
        operand.nan.eq(exponent_is_ones & ~fraction_is_zero),
    ]
    return _Source(operand=operand,
                   signalling=operand.nan & ~fraction[_FUSED.fraction_bits - 1],
                   subnormal=exponent_is_zero & ~fraction_is_zero)


#: An operand's class, as the special cases after the arithmetic need it.
_ClassLayout = data.StructLayout({"sign": 1, "zero": 1, "infinity": 1, "nan": 1})


def _TagLayout(max_bytes_: int) -> data.StructLayout:
    """What an element carries through the pipeline beside its arithmetic: its index and
    whether it is active, the classes of the fused operands, the processed NaN its NaN
    operands give (``nan_sign`` and ``nan_fraction``, at the top of FP64's fraction), whether
    any operand is a NaN or a signalling NaN, whether the addend is a signalling NaN, and the
    IDC flag."""
    return data.StructLayout({
        "index": range(max_bytes_), "active": 1,
        "multiplicand": _ClassLayout, "multiplier": _ClassLayout, "addend": _ClassLayout,
        "nan_sign": 1, "nan_fraction": _FUSED.fraction_bits, "any_nan": 1, "any_signalling": 1,
        "addend_signalling": 1, "input_denormal": 1,
    })


@dataclass(frozen=True)
class _Operands:
    """One element's operands of the fused datapath (unpacked in :data:`_FUSED`) and its
    special-case tag (:func:`_TagLayout`, its ``index`` and ``active`` fields left to the
    caller)."""

    multiplicand: Value
    multiplier: Value
    addend: Value
    tag: Value


def _operands(m: Module, params: _FormatParameters, control, first: _Source, second: _Source,
              third: _Source, flush: Value, tag_layout: data.StructLayout) -> _Operands:
    """The operands of one element for the fused datapath, from its unpacked sources
    (``second`` already the immediate where the form has one).

    The pseudocode's ``x`` and ``y`` are ``first`` and ``second`` swapped for the reversed
    forms; addition and multiplication commute, so only the NaN order follows the swap and
    the multiplicand is always ``first`` (FSUBR negates it instead of ``y``)."""
    kind = control.kind
    a, b, c = first.operand, second.operand, third.operand
    one = _unpacked_constant(0)

    first_negated = Signal(name="first_negated")    # in the product
    nan_first_negated = Signal(name="nan_first_negated")    # as a NaN candidate
    with m.Switch(kind):
        with m.Case(_Kind.ADD):
            m.d.comb += first_negated.eq(control.subtract & control.reversed)
        with m.Case(_Kind.STEP):
            m.d.comb += [first_negated.eq(1), nan_first_negated.eq(1)]
        with m.Case(_Kind.MLA):
            m.d.comb += [first_negated.eq(control.negate_product),
                         nan_first_negated.eq(control.negate_product)]

    multiplicand = Signal(UnpackedLayout(_FUSED), name="multiplicand")
    multiplier = Signal(UnpackedLayout(_FUSED), name="multiplier")
    addend = Signal(UnpackedLayout(_FUSED), name="addend")
    m.d.comb += [multiplicand.eq(a), multiplicand.sign.eq(a.sign ^ first_negated),
                 multiplier.eq(Mux((kind == _Kind.ADD) | (kind == _Kind.SCALE), one, b))]
    product_sign = multiplicand.sign ^ multiplier.sign
    with m.Switch(kind):
        with m.Case(_Kind.ADD):
            m.d.comb += [addend.eq(b),
                         addend.sign.eq(b.sign ^ (control.subtract & ~control.reversed))]
        with m.Case(_Kind.MUL, _Kind.MULX, _Kind.SCALE):
            m.d.comb += [addend.zero.eq(1), addend.sign.eq(product_sign)]
        with m.Case(_Kind.STEP):
            m.d.comb += addend.eq(Mux(control.rsqrt, _unpacked_constant(1, 1),
                                      _unpacked_constant(1)))
        with m.Case(_Kind.MLA):
            m.d.comb += [addend.eq(c), addend.sign.eq(c.sign ^ control.negate_addend)]

    # ---- the NaN candidates, in the pseudocode's order: (x, y), (-first, second) for the
    # steps, (addend, product's first, second) for MLA; FSCALE's second is an integer.
    second_is_candidate = kind != _Kind.SCALE
    third_is_candidate = kind == _Kind.MLA
    second_first = control.reversed & ((kind == _Kind.ADD) | (kind == _Kind.MUL)
                                       | (kind == _Kind.MULX))
    first_nan, first_signalling = a.nan, first.signalling
    second_nan = b.nan & second_is_candidate
    second_signalling = second.signalling & second_is_candidate
    third_nan = c.nan & third_is_candidate
    third_signalling = third.signalling & third_is_candidate
    nan_sign = Signal(name="nan_sign")
    nan_fraction = Signal(_FUSED.fraction_bits, name="nan_fraction")
    first_choice = [nan_sign.eq(a.sign ^ nan_first_negated),
                    nan_fraction.eq(a.significand)]
    second_choice = [nan_sign.eq(b.sign), nan_fraction.eq(b.significand)]
    third_choice = [nan_sign.eq(c.sign ^ control.negate_addend),
                    nan_fraction.eq(c.significand)]
    # First signalling NaN, else first quiet NaN (the third is first when it is a candidate).
    with m.If(third_signalling):
        m.d.comb += third_choice
    with m.Elif(second_first & second_signalling):
        m.d.comb += second_choice
    with m.Elif(first_signalling):
        m.d.comb += first_choice
    with m.Elif(second_signalling):
        m.d.comb += second_choice
    with m.Elif(third_nan):
        m.d.comb += third_choice
    with m.Elif(second_first & second_nan):
        m.d.comb += second_choice
    with m.Elif(first_nan):
        m.d.comb += first_choice
    with m.Else():
        m.d.comb += second_choice
    subnormal = (first.subnormal | (second.subnormal & second_is_candidate)
                 | (third.subnormal & third_is_candidate))
    tag = Signal(tag_layout, name="tag")
    for name, operand in (("multiplicand", multiplicand), ("multiplier", multiplier),
                          ("addend", addend)):
        m.d.comb += [getattr(tag, name).eq(Cat(operand.sign, operand.zero, operand.infinity,
                                               operand.nan))]
    m.d.comb += [
        tag.nan_sign.eq(nan_sign),
        tag.nan_fraction.eq(nan_fraction | 1 << (_FUSED.fraction_bits - 1)),
        tag.any_nan.eq(first_nan | second_nan | third_nan),
        tag.any_signalling.eq(first_signalling | second_signalling | third_signalling),
        tag.addend_signalling.eq(third_signalling),
        tag.input_denormal.eq(subnormal & flush & ~params.is_fp16),
    ]
    return _Operands(multiplicand=multiplicand, multiplier=multiplier, addend=addend, tag=tag)


#: Bits of the exponents from the product on (FP64's and headroom for FSCALE's power).
_EXPONENT_BITS = _FUSED.exponent_bits + 4


def _clamped_power(m: Module, control, power: Value) -> Signal:
    """FSCALE's power of two, clamped where every larger one overflows or underflows alike (in
    every format, the widest needing the most); 0 for the other operations."""
    limit = 2 ** _FUSED.exponent_bits + _FUSED.fraction_bits + 2
    clamped_power = Signal(signed(_EXPONENT_BITS), name="clamped_power")
    with m.If(control.kind != _Kind.SCALE):
        m.d.comb += clamped_power.eq(0)
    with m.Elif(power > limit):
        m.d.comb += clamped_power.eq(limit)
    with m.Elif(power < -limit):
        m.d.comb += clamped_power.eq(-limit)
    with m.Else():
        m.d.comb += clamped_power.eq(power)
    return clamped_power


def _product_terms(m: Module, multiplicand, multiplier, addend, power):
    """The exact product ``multiplicand * multiplier * 2^power`` and the addend as the terms of
    :class:`~zatile.hw.fp.align_add.FpAlignAdd` (operands unpacked in :data:`_FUSED`)."""
    precision = _FUSED.precision
    multiply = m.submodules.fused_multiply = FpMultiply(_FUSED)
    m.d.comb += [multiply.multiplicand.eq(multiplicand), multiply.multiplier.eq(multiplier)]
    product = multiply.product
    product_term = Signal(TermLayout(2 * precision, _EXPONENT_BITS), name="product_term")
    addend_term = Signal(TermLayout(precision, _EXPONENT_BITS), name="addend_term")
    m.d.comb += [product_term.sign.eq(product.sign),
                 product_term.exponent.eq(product.exponent + power),
                 product_term.significand.eq(product.significand),
                 *assign_term(addend_term, addend)]
    return product_term, addend_term


def _exact_sum(m: Module, control, product_term, addend_term) -> Signal:
    """The exact sum of the two terms (halved for FRSQRTS): a ``SumLayout`` value.

    One datapath serves every format: the product of two significands of a narrower format
    lies at the top of the wider product, and every bit below its round bit is kept or sticky
    (:class:`~zatile.hw.fp.align_add.FpAlignAdd`, whose conditions are weaker for a narrower
    output)."""
    precision = _FUSED.precision
    align_add = m.submodules.fused_align_add = FpAlignAdd(
        augend_width=2 * precision, addend_width=precision, exponent_bits=_EXPONENT_BITS,
        guard_bits=3, headroom_bits=precision + 2)
    m.d.comb += [align_add.augend.eq(product_term), align_add.addend.eq(addend_term)]
    total = Signal(SumLayout(align_add.window_width, _EXPONENT_BITS), name="exact_sum")
    m.d.comb += [total.sign.eq(align_add.sum.sign), total.magnitude.eq(align_add.sum.magnitude),
                 total.exponent.eq(align_add.sum.exponent - control.rsqrt)]
    return total


#: A result before packing: FP64's fields, the fraction at the top for a narrower format.
_FieldsLayout = data.StructLayout({"fraction": _FUSED.fraction_bits,
                                   "exponent": _FUSED.exponent_bits, "sign": 1})


def _rounded(m: Module, params: _FormatParameters, control, tag, value, flush: Value):
    """The element from its tag (:func:`_TagLayout`) and the normalized exact ``value``:
    ``FPRoundBase`` at the run-time format's precision and the special cases; (result fields,
    FPSR bits)."""
    kind = control.kind
    window, precision = len(value.significand), _FUSED.precision

    # ---- each format's round and sticky bits; the narrower one's sticky takes in the wider's
    round_bits, last_bits, stickies = {}, {}, {}
    sticky_end, sticky = 0, Const(0)
    for log2, fmt in sorted(_FORMATS.items(), key=lambda item: -item[1].precision):
        round_position = window - fmt.precision - 1
        sticky = sticky | value.significand[sticky_end:round_position].any()
        sticky_end = round_position
        round_bits[log2], last_bits[log2] = (value.significand[round_position],
                                             value.significand[round_position + 1])
        stickies[log2] = sticky
    round_bit, last_bit, sticky_bit = (Signal(name=name) for name in
                                       ("round_bit", "last_bit", "sticky_bit"))
    with m.Switch(params.esize_log2):
        for log2 in _FORMATS:
            with m.Case(log2):
                m.d.comb += [round_bit.eq(round_bits[log2]), last_bit.eq(last_bits[log2]),
                             sticky_bit.eq(stickies[log2])]
    inexact = round_bit | sticky_bit
    round_up = Signal(name="round_up")
    overflow_to_infinity = Signal(name="overflow_to_infinity")
    with m.Switch(control.rounding):
        with m.Case(0):
            m.d.comb += [round_up.eq(round_bit & (sticky_bit | last_bit)),
                         overflow_to_infinity.eq(1)]
        with m.Case(1):
            m.d.comb += [round_up.eq(inexact & ~value.sign),
                         overflow_to_infinity.eq(~value.sign)]
        with m.Case(2):
            m.d.comb += [round_up.eq(inexact & value.sign),
                         overflow_to_infinity.eq(value.sign)]
    # The biased exponent and the fraction at the top of FP64's: the kept bits (hidden bit
    # included) add one to the exponent field, the rounding adds at the format's last place.
    kept = value.significand[window - precision:] & params.kept_mask
    exponent_field = Signal(_FUSED.exponent_bits + 1, name="exponent_field")
    m.d.comb += exponent_field.eq(value.exponent - params.min_exponent)
    magnitude = Signal(_FUSED.exponent_bits + precision + 1, name="magnitude")
    m.d.comb += magnitude.eq((exponent_field << _FUSED.fraction_bits) + kept
                             + Mux(round_up, params.last_place, 0))
    biased_exponent = magnitude[_FUSED.fraction_bits:]
    overflow = (value.exponent > params.max_exponent) | (biased_exponent >= params.exponent_ones)

    # ---- the special cases, highest priority first
    u1, u2, ua = tag.multiplicand, tag.multiplier, tag.addend
    result = Signal(_FieldsLayout, name="result")
    ioc, ofc, ufc, ixc = (Signal(name=f"flag_{flag}") for flag in ("ioc", "ofc", "ufc", "ixc"))
    infinity_times_zero = (u1.infinity & u2.zero) | (u1.zero & u2.infinity)
    product_infinity = u1.infinity | u2.infinity
    product_zero = u1.zero | u2.zero
    signed_product = u1.sign ^ u2.sign
    quiet_bit = 1 << (_FUSED.fraction_bits - 1)
    default_nan = [result.exponent.eq(params.exponent_ones), result.fraction.eq(quiet_bit)]
    with m.If(ua.nan & ~tag.addend_signalling & infinity_times_zero
              & (kind == _Kind.MLA)):
        m.d.comb += [*default_nan, ioc.eq(1)]
    with m.Elif(tag.any_nan):
        with m.If(control.dn):
            m.d.comb += default_nan
        with m.Else():
            m.d.comb += [result.sign.eq(tag.nan_sign),
                         result.exponent.eq(params.exponent_ones),
                         result.fraction.eq(tag.nan_fraction)]
        m.d.comb += ioc.eq(tag.any_signalling)
    with m.Elif(infinity_times_zero & (kind == _Kind.MULX)):
        m.d.comb += [result.sign.eq(signed_product), result.exponent.eq(params.bias + 1)]
    with m.Elif(infinity_times_zero & (kind == _Kind.STEP)):
        # 1.5 for FRSQRTS, 2.0 for FRECPS
        m.d.comb += [result.exponent.eq(params.bias + ~control.rsqrt),
                     result.fraction.eq(Mux(control.rsqrt, quiet_bit, 0))]
    with m.Elif(infinity_times_zero
                | (ua.infinity & product_infinity & (ua.sign != signed_product))):
        m.d.comb += [*default_nan, ioc.eq(1)]
    with m.Elif(ua.infinity | product_infinity):
        m.d.comb += [result.sign.eq(Mux(ua.infinity, ua.sign, signed_product)),
                     result.exponent.eq(params.exponent_ones)]
    with m.Elif(ua.zero & product_zero & (ua.sign == signed_product)):
        m.d.comb += result.sign.eq(ua.sign)
    with m.Elif(value.zero):
        m.d.comb += result.sign.eq(control.rounding == 2)
    with m.Elif(flush & value.tiny):
        m.d.comb += [result.sign.eq(value.sign), ufc.eq(1)]
    with m.Elif(overflow):
        # infinity, or the largest finite number
        m.d.comb += [result.sign.eq(value.sign),
                     result.exponent.eq(params.exponent_ones - ~overflow_to_infinity),
                     result.fraction.eq(Mux(overflow_to_infinity, 0, -1)),
                     ofc.eq(1), ixc.eq(1)]
    with m.Else():
        m.d.comb += [result.sign.eq(value.sign), result.exponent.eq(biased_exponent),
                     result.fraction.eq(magnitude[:_FUSED.fraction_bits]),
                     ufc.eq(value.tiny & inexact), ixc.eq(inexact)]
    final = Signal(_FieldsLayout, name="final")
    m.d.comb += [final.eq(result), final.sign.eq(result.sign & ~control.absolute)]
    flags = Signal(8, name="flags")
    m.d.comb += flags.eq(Cat(ioc, Const(0, 1), ofc, ufc, ixc, Const(0, 2),
                             tag.input_denormal))
    return final, flags


def _element_bytes(m: Module, esize_log2: Value, index: Value, max_bytes_: int,
                   name: str) -> Signal:
    """One bit per byte of the vector: the byte is in element ``index``."""
    element_bytes = Signal(max_bytes_, name=name)
    with m.Switch(esize_log2):
        for log2 in _FORMATS:
            with m.Case(log2):
                m.d.comb += element_bytes.eq(Cat(index == byte >> log2
                                                 for byte in range(max_bytes_)))
    return element_bytes


def _packed(m: Module, esize_log2: Value, fields) -> Signal:
    """The result ``fields`` (:data:`_FieldsLayout`) packed into the run-time format and
    repeated across a 64-bit word, so that every element position of the word holds it."""
    word = Signal(_WORD_BITS, name="packed")
    with m.Switch(esize_log2):
        for log2, fmt in _FORMATS.items():
            with m.Case(log2):
                element = Cat(fields.fraction[_FUSED.fraction_bits - fmt.fraction_bits:],
                              fields.exponent[:fmt.exponent_bits], fields.sign)
                m.d.comb += word.eq(element.replicate(_WORD_BITS // fmt.width))
    return word


class VectorFpArith(VectorExecutionUnit):
    """Floating-point element arithmetic and FADDV (module documentation).

    Parameters
    ----------
    config : EngineConfig
        ``max_svl`` sizes the vectors.

    Attributes
    ----------
    op : In(stream.Signature(VectorOpLayout))
        Accepted while the unit is idle.
    result : Out(stream.Signature(VectorResultLayout)), one transfer per ``op`` transfer,
        ``SVL / esize + 6`` cycles after it (FADDV: module documentation); the result
        registers hold it until it is taken.

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    """

    #: The operations the unit performs.
    OPS = (Op.FP_ADD, Op.FP_SUB, Op.FP_MUL, Op.FP_MULX, Op.FP_ABD, Op.FP_SCALE, Op.FP_MLA,
           Op.FP_RECPS, Op.FP_RSQRTS, Op.FP_ADDV)

    def elaborate(self, platform):
        m = Module()
        maxb = max_bytes(self._config)
        payload = self.op.payload
        decoded = payload.decoded
        op, fields, flags, present = decoded.op, decoded.fields, decoded.flags, decoded.present

        # ---- the instruction, latched when accepted
        control = Signal(_ControlLayout)
        esize_log2 = Signal(range(4))
        work = Signal(8 * maxb)         # first operand; results replace it element by element
        second = Signal(8 * maxb)
        third = Signal(8 * maxb)
        active = Signal(maxb)           # one bit per byte: the element is active
        lanes = Signal(maxb)
        last = Signal(range(maxb))      # index of the last element (FADDV: of the level's)
        index = Signal(range(maxb))
        busy = Signal()
        waiting = Signal()              # the level's elements are issued, its results not written
        fpsr = Signal(8)

        new_control = Signal(_ControlLayout)
        with m.Switch(op):
            for element_op, kind in _KINDS.items():
                with m.Case(element_op):
                    m.d.comb += new_control.kind.eq(kind)
        fpcr = payload.fpcr
        m.d.comb += [
            new_control.subtract.eq((op == Op.FP_SUB) | (op == Op.FP_ABD)),
            new_control.absolute.eq(op == Op.FP_ABD),
            new_control.reversed.eq(flags.reversed),
            new_control.rsqrt.eq(op == Op.FP_RSQRTS),
            new_control.negate_product.eq(flags.negate_product),
            new_control.negate_addend.eq(flags.negate_addend),
            new_control.immediate.eq(present.imm),
            new_control.imm.eq(fields.imm[0]),
            new_control.imm_mul.eq(op == Op.FP_MUL),
            new_control.reduction.eq(op == Op.FP_ADDV),
            new_control.rounding.eq(fpcr[22:24]),
            new_control.dn.eq(fpcr[25]),
            new_control.fz.eq(fpcr[24]),
            new_control.fz16.eq(fpcr[19]),
        ]
        new_active = Signal(maxb)
        count_log2 = Signal(range(16))
        with m.Switch(decoded.esize_log2):
            for log2 in _FORMATS:
                with m.Case(log2):
                    m.d.comb += new_active.eq(Mux(present.pg,
                                                  active_bytes(payload.governing, log2, maxb),
                                                  Const(-1, maxb)) & payload.svl_mask)
        m.d.comb += count_log2.eq(payload.svl_log2 - decoded.esize_log2)
        first_count = Signal(range(maxb + 1))
        m.d.comb += first_count.eq(Mux(op == Op.FP_ADDV, Const(1, 16) << count_log2 >> 1,
                                       Const(1, 16) << count_log2))

        # ---- one element issued per cycle: the element operands at `index`
        params = _format_parameters(m, esize_log2)
        flush = Mux(params.is_fp16, control.fz16, control.fz)
        pair_first = Mux(control.reduction, index << 1, index)[:len(index) + 1]
        pair_second = (index << 1 | 1)[:len(index) + 1]
        first_element = _element(m, work, pair_first, esize_log2, "first_element")
        second_element = Signal(_WORD_BITS)
        m.d.comb += second_element.eq(Mux(
            control.reduction, _element(m, work, pair_second, esize_log2, "pair_element"),
            _element(m, second, index, esize_log2, "second_vector_element")))
        third_element = _element(m, third, index, esize_log2, "third_element")
        second_vector = _unpacked(m, params, second_element, flush, "second_unpacked")
        immediate = Mux(control.imm,
                        Mux(control.imm_mul, _unpacked_constant(1), _unpacked_constant(0)),
                        _unpacked_constant(-1))
        second_operand = Signal(UnpackedLayout(_FUSED))
        m.d.comb += second_operand.eq(Mux(control.immediate, immediate, second_vector.operand))
        second_source = _Source(
            operand=second_operand,
            signalling=second_vector.signalling & ~control.immediate,
            subnormal=second_vector.subnormal & ~control.immediate)
        operands = _operands(m, params, control,
                             _unpacked(m, params, first_element, flush, "first_unpacked"),
                             second_source,
                             _unpacked(m, params, third_element, flush, "third_unpacked"),
                             flush, _TagLayout(maxb))
        # FSCALE's power: the second element as a signed integer.
        power = Signal(signed(_WORD_BITS))
        with m.Switch(esize_log2):
            for log2, fmt in _FORMATS.items():
                with m.Case(log2):
                    m.d.comb += power.eq(second_element[:fmt.width].as_signed())
        tag = Signal(_TagLayout(maxb))
        m.d.comb += [tag.eq(operands.tag), tag.index.eq(index),
                     tag.active.eq(control.reduction | (active & _element_bytes(
                         m, esize_log2, index, maxb, "issued_bytes")).any())]

        # ---- the pipeline: a register after each step, every step one cycle
        def stage(prefix, **values):
            registers = []
            for name, value in values.items():
                registers.append(Signal(value.shape(), name=f"{prefix}_{name}"))
                m.d.sync += registers[-1].eq(value)
            return registers

        issuing = Signal()      # an element enters the pipeline this cycle
        m_valid, m_tag, m_multiplicand, m_multiplier, m_addend, m_power = stage(
            "m", valid=issuing, tag=tag, multiplicand=operands.multiplicand,
            multiplier=operands.multiplier, addend=operands.addend,
            power=_clamped_power(m, control, power))
        product_term, addend_term = _product_terms(m, m_multiplicand, m_multiplier, m_addend,
                                                   m_power)
        a_valid, a_tag, a_product, a_addend = stage(
            "a", valid=m_valid, tag=m_tag, product=product_term, addend=addend_term)
        n_valid, n_tag, n_sum = stage("n", valid=a_valid, tag=a_tag,
                                      sum=_exact_sum(m, control, a_product, a_addend))
        o_valid, o_tag, o_value = stage(
            "o", valid=n_valid, tag=n_tag,
            value=normalized_sum(m, n_sum, params.min_exponent, _NORMALIZED_BITS))
        result, step_flags = _rounded(m, params, control, o_tag, o_value, flush)
        packed = _packed(m, esize_log2, result)
        written_bytes = _element_bytes(m, esize_log2, o_tag.index, maxb, "written_bytes")
        new_work = Cat(Mux(written_bytes[byte], packed.word_select(byte % 8, 8),
                           work.word_select(byte, 8))
                       for byte in range(maxb))
        with m.If(o_valid):
            m.d.sync += [work.eq(new_work),
                         fpsr.eq(fpsr | Mux(o_tag.active, step_flags, 0))]
        in_flight = m_valid | a_valid | n_valid | o_valid

        # ---- sequencing: a level's elements one per cycle; FADDV's next level (whose
        # elements are sums of this one's) once this one's results are all written
        last_level = Signal()
        m.d.comb += [issuing.eq(busy & ~waiting), self.op.ready.eq(~busy & ~self.result.valid)]
        with m.If(self.op.valid & self.op.ready):
            m.d.sync += [
                control.eq(new_control), esize_log2.eq(decoded.esize_log2),
                work.eq(Mux(op == Op.FP_ADDV,
                            payload.first.as_value() & Cat(*(bit.replicate(8)
                                                             for bit in new_active)),
                            payload.first.as_value())),
                second.eq(payload.second.as_value()), third.eq(payload.third.as_value()),
                active.eq(new_active), lanes.eq(Mux(op == Op.FP_ADDV, payload.svl_mask,
                                                    new_active)),
                last.eq(first_count - 1), index.eq(0), busy.eq(1), waiting.eq(0),
                last_level.eq(0), fpsr.eq(0),
            ]
        with m.If(issuing):
            with m.If(index == last):
                m.d.sync += [index.eq(0), waiting.eq(1),
                             last_level.eq(~control.reduction | (last == 0)),
                             last.eq(last >> 1)]
            with m.Else():
                m.d.sync += index.eq(index + 1)
        with m.If(busy & waiting & ~in_flight):
            with m.If(last_level):
                m.d.sync += [busy.eq(0), self.result.valid.eq(1)]
            with m.Else():
                m.d.sync += waiting.eq(0)
        with m.If(self.result.valid & self.result.ready):
            m.d.sync += self.result.valid.eq(0)

        # ---- the result, from the registers: FADDV keeps element 0 only
        out = self.result.payload
        reduced = Signal(8 * maxb)
        with m.Switch(esize_log2):
            for log2 in _FORMATS:
                with m.Case(log2):
                    m.d.comb += reduced.eq(work[:8 << log2])
        m.d.comb += [
            out.vector.eq(Mux(control.reduction, reduced, work)),
            out.vector_lanes.eq(lanes),
            out.fpsr_flags.eq(fpsr),
        ]
        return m
