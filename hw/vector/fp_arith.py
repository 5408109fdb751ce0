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
times zero, opposite infinities, equal-signed zeros) are decided beside the datapath. There is
one datapath per element size (half, single, double); the unit takes one element per cycle,
in element order, so an instruction takes ``SVL / esize`` cycles (FADDV one fewer). FADDV halves the
vector recursively as ``FPReducePredicated`` does (inactive elements are +0.0): level by level,
element ``j`` of the next level is the sum of elements ``2j`` and ``2j+1``, written in place,
``SVL / esize - 1`` additions in all.

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
from zatile.hw.fp.format import FP16, FP32, FP64, FpFormat
from zatile.hw.fp.multiply import FpMultiply
from zatile.hw.fp.normalize import FpNormalize
from zatile.hw.fp.unpack import FpUnpack, UnpackedLayout
from zatile.hw.vector.common import VectorExecutionUnit, active_bytes

__all__ = ["VectorFpArith"]

#: The formats by log2 of the element size in bytes.
_FORMATS = {1: FP16, 2: FP32, 3: FP64}
#: The format of the one fused datapath every format shares (the widest).
_FUSED = FP64


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

def _constant(fmt: FpFormat, exponent: int, fraction_top: int = 0) -> int:
    """The positive value ``2^exponent * (1 + fraction_top / 2)`` as a bit pattern."""
    return (fmt.bias + exponent) << fmt.fraction_bits | fraction_top << (fmt.fraction_bits - 1)


@dataclass(frozen=True)
class _Operands:
    """One element's operands in its own format, and what its special cases need.

    ``multiplicand``, ``multiplier`` and ``addend`` are unpacked in the element's format
    (:func:`~zatile.hw.fp.unpack.UnpackedLayout`); ``power`` is FSCALE's (the second operand,
    sign-extended to 64 bits); ``nan`` is the processed NaN the NaN operands give;
    ``input_denormal`` is the IDC flag of the flushed operands."""

    multiplicand: Value
    multiplier: Value
    addend: Value
    power: Value
    nan: Value
    any_nan: Value
    any_signalling: Value
    addend_signalling: Value
    input_denormal: Value


def _operands(m: Module, fmt: FpFormat, control, first, second, third) -> _Operands:
    """The operands of one element of ``fmt`` for the fused datapath, in the pseudocode's order
    (``second`` already the immediate where the form has one)."""
    name = fmt.name
    width, sign_bit, fraction_bits = fmt.width, fmt.width - 1, fmt.fraction_bits
    sign_mask = 1 << sign_bit
    kind = control.kind

    def sig(suffix, shape=None):
        return Signal(shape if shape is not None else width, name=f"{name}_{suffix}")

    x, y = sig("x"), sig("y")
    m.d.comb += [x.eq(Mux(control.reversed, second, first)),
                 y.eq(Mux(control.reversed, first, second))]
    one = _constant(fmt, 0)
    two = _constant(fmt, 1)
    three = _constant(fmt, 1, 1)

    # ---- operands of the fused datapath and the NaN candidates, in the pseudocode's order
    multiplicand, multiplier, addend = sig("multiplicand"), sig("multiplier"), sig("addend")
    candidates = [sig(f"candidate{i}") for i in range(3)]
    enables = sig("candidate_enables", 3)
    product_sign = multiplicand[sign_bit] ^ multiplier[sign_bit]
    with m.Switch(kind):
        with m.Case(_Kind.ADD):
            m.d.comb += [multiplicand.eq(x), multiplier.eq(one),
                         addend.eq(y ^ Mux(control.subtract, sign_mask, 0)),
                         candidates[0].eq(x), candidates[1].eq(y), enables.eq(0b011)]
        with m.Case(_Kind.MUL, _Kind.MULX):
            m.d.comb += [multiplicand.eq(x), multiplier.eq(y),
                         addend.eq(Mux(product_sign, sign_mask, 0)),
                         candidates[0].eq(x), candidates[1].eq(y), enables.eq(0b011)]
        with m.Case(_Kind.SCALE):
            m.d.comb += [multiplicand.eq(first), multiplier.eq(one),
                         addend.eq(Mux(first[sign_bit], sign_mask, 0)),
                         candidates[0].eq(first), enables.eq(0b001)]
        with m.Case(_Kind.STEP):
            m.d.comb += [multiplicand.eq(first ^ sign_mask), multiplier.eq(second),
                         addend.eq(Mux(control.rsqrt, three, two)),
                         candidates[0].eq(first ^ sign_mask), candidates[1].eq(second),
                         enables.eq(0b011)]
        with m.Case(_Kind.MLA):
            negated_product = first ^ Mux(control.negate_product, sign_mask, 0)
            negated_addend = third ^ Mux(control.negate_addend, sign_mask, 0)
            m.d.comb += [multiplicand.eq(negated_product), multiplier.eq(second),
                         addend.eq(negated_addend), candidates[0].eq(negated_addend),
                         candidates[1].eq(negated_product), candidates[2].eq(second),
                         enables.eq(0b111)]

    flush = control.fz16 if fmt is FP16 else control.fz
    exponent_ones = (1 << fmt.exponent_bits) - 1

    def classify(bits):
        exponent = bits[fraction_bits:sign_bit]
        fraction = bits[:fraction_bits]
        nan = (exponent == exponent_ones) & (fraction != 0)
        return nan, nan & ~fraction[fraction_bits - 1], (exponent == 0) & (fraction != 0)

    nans, signalling, denormals = [], [], []
    for index, candidate in enumerate(candidates):
        nan, snan, denormal = classify(candidate)
        nans.append(nan & enables[index])
        signalling.append(snan & enables[index])
        denormals.append(denormal & enables[index])
    chosen_nan = sig("chosen_nan")
    # First signalling NaN, else first quiet NaN.
    with m.If(signalling[0]):
        m.d.comb += chosen_nan.eq(candidates[0])
    with m.Elif(signalling[1]):
        m.d.comb += chosen_nan.eq(candidates[1])
    with m.Elif(signalling[2]):
        m.d.comb += chosen_nan.eq(candidates[2])
    with m.Elif(nans[0]):
        m.d.comb += chosen_nan.eq(candidates[0])
    with m.Elif(nans[1]):
        m.d.comb += chosen_nan.eq(candidates[1])
    with m.Else():
        m.d.comb += chosen_nan.eq(candidates[2])

    unpacks = []
    for label, bits in (("multiplicand", multiplicand), ("multiplier", multiplier),
                        ("addend", addend)):
        unpack = FpUnpack(fmt)
        m.submodules[f"{name}_unpack_{label}"] = unpack
        m.d.comb += [unpack.bits.eq(bits), unpack.flush.eq(flush)]
        unpacks.append(unpack.operand)
    power = sig("power", signed(64))
    m.d.comb += power.eq(second.as_signed())
    return _Operands(
        *unpacks, power=power,
        nan=Mux(control.dn, fmt.default_nan, chosen_nan | (1 << (fraction_bits - 1))),
        any_nan=Cat(*nans).any(), any_signalling=Cat(*signalling).any(),
        addend_signalling=signalling[0],
        input_denormal=Cat(*denormals).any() & flush if fmt is not FP16 else Const(0))


def _widened(m: Module, fmt: FpFormat, label: str, operand) -> Signal:
    """``operand``, unpacked in ``fmt``, as the same value unpacked in :data:`_FUSED`: its
    significand moves to the top of the wider one, so the exponent still weighs the top bit."""
    wide = Signal(UnpackedLayout(_FUSED), name=f"{fmt.name}_{label}_widened")
    m.d.comb += [wide.sign.eq(operand.sign), wide.exponent.eq(operand.exponent),
                 wide.significand.eq(operand.significand << (_FUSED.precision - fmt.precision)),
                 wide.zero.eq(operand.zero), wide.denormal.eq(operand.denormal),
                 wide.infinity.eq(operand.infinity), wide.nan.eq(operand.nan)]
    return wide


def _fused(m: Module, control, multiplicand, multiplier, addend, power, min_exponent):
    """The exact ``addend + multiplicand * multiplier`` (times FSCALE's ``power`` of two; halved
    for FRSQRTS), operands unpacked in :data:`_FUSED`, normalized to the output format's
    ``min_exponent``: a ``NormalizedLayout`` value whose top bits any format's rounding keeps.
    One datapath serves every format: the product of two significands of a narrower format
    lies at the top of the wider product, and every bit below its round bit is kept or sticky
    (:class:`~zatile.hw.fp.align_add.FpAlignAdd`, whose conditions are weaker for a narrower
    output)."""
    precision = _FUSED.precision
    exponent_bits = _FUSED.exponent_bits + 4
    multiply = m.submodules.fused_multiply = FpMultiply(_FUSED)
    m.d.comb += [multiply.multiplicand.eq(multiplicand), multiply.multiplier.eq(multiplier)]
    product = multiply.product

    # FSCALE: beyond this power every result overflows or underflows the same way (in every
    # format, the widest needing the most).
    limit = 2 ** _FUSED.exponent_bits + _FUSED.fraction_bits + 2
    clamped_power = Signal(signed(exponent_bits), name="fused_power")
    with m.If(control.kind != _Kind.SCALE):
        m.d.comb += clamped_power.eq(0)
    with m.Elif(power > limit):
        m.d.comb += clamped_power.eq(limit)
    with m.Elif(power < -limit):
        m.d.comb += clamped_power.eq(-limit)
    with m.Else():
        m.d.comb += clamped_power.eq(power)
    product_term = Signal(TermLayout(2 * precision, exponent_bits), name="fused_product_term")
    addend_term = Signal(TermLayout(precision, exponent_bits), name="fused_addend_term")
    m.d.comb += [product_term.sign.eq(product.sign),
                 product_term.exponent.eq(product.exponent + clamped_power),
                 product_term.significand.eq(product.significand),
                 *assign_term(addend_term, addend)]
    align_add = m.submodules.fused_align_add = FpAlignAdd(
        augend_width=2 * precision, addend_width=precision, exponent_bits=exponent_bits,
        guard_bits=3, headroom_bits=precision + 2)
    m.d.comb += [align_add.augend.eq(product_term), align_add.addend.eq(addend_term)]
    window = align_add.window_width
    total = Signal(SumLayout(window, exponent_bits), name="fused_sum")
    # FRSQRTS halves the exact sum before rounding.
    m.d.comb += [total.sign.eq(align_add.sum.sign), total.magnitude.eq(align_add.sum.magnitude),
                 total.exponent.eq(align_add.sum.exponent - control.rsqrt)]
    normalize = m.submodules.fused_normalize = FpNormalize(
        width=window, exponent_bits=exponent_bits, min_exponent=None)
    m.d.comb += [normalize.sum.eq(total), normalize.min_exponent.eq(min_exponent)]
    return normalize.normalized


def _rounded(m: Module, fmt: FpFormat, control, operands: _Operands, value):
    """The element of ``fmt`` from its operands and the normalized exact ``value``:
    ``FPRoundBase`` and the special cases (result bits, FPSR bits)."""
    name = fmt.name
    width, sign_bit, fraction_bits = fmt.width, fmt.width - 1, fmt.fraction_bits
    sign_mask = 1 << sign_bit
    kind = control.kind
    two = _constant(fmt, 1)

    def sig(suffix, shape=None):
        return Signal(shape if shape is not None else width, name=f"{name}_{suffix}")

    window, precision = len(value.significand), fmt.precision
    kept = value.significand[window - precision:]
    round_bit = value.significand[window - precision - 1]
    sticky = value.significand[:window - precision - 1].any()
    inexact = round_bit | sticky
    round_up = sig("round_up", 1)
    overflow_to_infinity = sig("overflow_to_infinity", 1)
    with m.Switch(control.rounding):
        with m.Case(0):
            m.d.comb += [round_up.eq(round_bit & (sticky | kept[0])),
                         overflow_to_infinity.eq(1)]
        with m.Case(1):
            m.d.comb += [round_up.eq(inexact & ~value.sign),
                         overflow_to_infinity.eq(~value.sign)]
        with m.Case(2):
            m.d.comb += [round_up.eq(inexact & value.sign),
                         overflow_to_infinity.eq(value.sign)]
    too_large = value.exponent > fmt.max_exponent
    exponent_field = sig("exponent_field", fmt.exponent_bits + 1)
    m.d.comb += exponent_field.eq(Mux(too_large, 0, value.exponent - fmt.min_exponent))
    magnitude = sig("magnitude", fmt.exponent_bits + fraction_bits + 2)
    m.d.comb += magnitude.eq((exponent_field << fraction_bits) + kept + round_up)
    overflow = too_large | (magnitude >= fmt.infinity)

    # ---- the special cases, highest priority first
    u1, u2, ua = operands.multiplicand, operands.multiplier, operands.addend
    result = sig("result")
    ioc, ofc, ufc, ixc = (sig(f"flag_{flag}", 1) for flag in ("ioc", "ofc", "ufc", "ixc"))
    infinity_times_zero = (u1.infinity & u2.zero) | (u1.zero & u2.infinity)
    product_infinity = u1.infinity | u2.infinity
    product_zero = u1.zero | u2.zero
    signed_product = u1.sign ^ u2.sign
    flush = control.fz16 if fmt is FP16 else control.fz
    with m.If(ua.nan & ~operands.addend_signalling & infinity_times_zero
              & (kind == _Kind.MLA)):
        m.d.comb += [result.eq(fmt.default_nan), ioc.eq(1)]
    with m.Elif(operands.any_nan):
        m.d.comb += [result.eq(operands.nan), ioc.eq(operands.any_signalling)]
    with m.Elif(infinity_times_zero & (kind == _Kind.MULX)):
        m.d.comb += result.eq(Cat(Const(two, sign_bit), signed_product))
    with m.Elif(infinity_times_zero & (kind == _Kind.STEP)):
        m.d.comb += result.eq(Mux(control.rsqrt, _constant(fmt, 0, 1), two))
    with m.Elif(infinity_times_zero
                | (ua.infinity & product_infinity & (ua.sign != signed_product))):
        m.d.comb += [result.eq(fmt.default_nan), ioc.eq(1)]
    with m.Elif(ua.infinity | product_infinity):
        m.d.comb += result.eq(Cat(Const(fmt.infinity, sign_bit),
                                  Mux(ua.infinity, ua.sign, signed_product)))
    with m.Elif(ua.zero & product_zero & (ua.sign == signed_product)):
        m.d.comb += result.eq(Cat(Const(0, sign_bit), ua.sign))
    with m.Elif(value.zero):
        m.d.comb += result.eq(Cat(Const(0, sign_bit), control.rounding == 2))
    with m.Elif(flush & value.tiny):
        m.d.comb += [result.eq(Cat(Const(0, sign_bit), value.sign)), ufc.eq(1)]
    with m.Elif(overflow):
        m.d.comb += [result.eq(Cat(Mux(overflow_to_infinity, fmt.infinity, fmt.infinity - 1)
                                   [:sign_bit], value.sign)),
                     ofc.eq(1), ixc.eq(1)]
    with m.Else():
        m.d.comb += [result.eq(Cat(magnitude[:sign_bit], value.sign)),
                     ufc.eq(value.tiny & inexact), ixc.eq(inexact)]
    final = sig("final")
    m.d.comb += final.eq(result & ~Mux(control.absolute, sign_mask, 0))
    flags = sig("flags", 8)
    m.d.comb += flags.eq(Cat(ioc, Const(0, 1), ofc, ufc, ixc, Const(0, 2),
                             operands.input_denormal))
    return final, flags


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
        ``SVL / esize`` cycles after it (FADDV: ``SVL / esize - 1``); the result registers
        hold it until it is taken.

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

        # ---- one element per cycle: the element operands at `index`
        pair_first = Mux(control.reduction, index << 1, index)[:len(index) + 1]
        pair_second = (index << 1 | 1)[:len(index) + 1]
        step_flags = Signal(8)
        element_active = Signal()
        new_work = Signal(8 * maxb)
        fused_operands = [Signal(UnpackedLayout(_FUSED), name=f"fused_{label}")
                          for label in ("multiplicand", "multiplier", "addend")]
        fused_power = Signal(signed(64))
        min_exponent = Signal(signed(_FUSED.exponent_bits + 4))
        operands = {}
        with m.Switch(esize_log2):
            for log2, fmt in _FORMATS.items():
                bits = 8 << log2
                with m.Case(log2):
                    a = work.word_select(pair_first, bits)
                    b_vector = Mux(control.reduction, work.word_select(pair_second, bits),
                                   second.word_select(index, bits))
                    half = _constant(fmt, -1)
                    constant = Mux(control.imm,
                                   Mux(control.imm_mul, _constant(fmt, 1), _constant(fmt, 0)),
                                   half)
                    b = Mux(control.immediate, constant, b_vector)
                    c = third.word_select(index, bits)
                    operands[log2] = element = _operands(m, fmt, control, a, b, c)
                    unpacked = (element.multiplicand, element.multiplier, element.addend)
                    for fused, operand, label in zip(fused_operands, unpacked,
                                                     ("multiplicand", "multiplier", "addend")):
                        m.d.comb += fused.eq(_widened(m, fmt, label, operand))
                    m.d.comb += [fused_power.eq(element.power),
                                 min_exponent.eq(fmt.min_exponent)]
        value = _fused(m, control, *fused_operands, fused_power, min_exponent)
        with m.Switch(esize_log2):
            for log2, fmt in _FORMATS.items():
                bits, count = 8 << log2, maxb >> log2
                with m.Case(log2):
                    result, element_flags = _rounded(m, fmt, control, operands[log2], value)
                    m.d.comb += [
                        step_flags.eq(element_flags),
                        element_active.eq(control.reduction
                                          | active.word_select(index, 1 << log2)[0]),
                        new_work.eq(Cat(*(Mux(index == k, result, work[k * bits:][:bits])
                                          for k in range(count)))),
                    ]

        # ---- sequencing
        m.d.comb += self.op.ready.eq(~busy & ~self.result.valid)
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
                last.eq(first_count - 1), index.eq(0), busy.eq(1), fpsr.eq(0),
            ]
        with m.If(busy):
            m.d.sync += [work.eq(new_work), fpsr.eq(fpsr | Mux(element_active, step_flags, 0))]
            with m.If(index == last):
                m.d.sync += index.eq(0)
                with m.If(~control.reduction | (last == 0)):
                    m.d.sync += [busy.eq(0), self.result.valid.eq(1)]
                with m.Else():
                    m.d.sync += last.eq(last >> 1)
            with m.Else():
                m.d.sync += index.eq(index + 1)
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
