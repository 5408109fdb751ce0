"""The vector unit's floating-point conversions, roundings, estimates, division and square
root: SCVTF, UCVTF, FCVTZS, FCVTZU, FCVT, BFCVT, FCVTX and the SVE2 top/bottom forms, FRINT<x>,
FRECPX, FRECPE, FRSQRTE, FSQRT, FDIV and FDIVR.

An execution unit of :mod:`zatile.hw.vector` (payloads in :mod:`zatile.hw.vector.common`). One
element datapath, as wide as the largest element (64 bits), works on one container per cycle
and walks the effective vector: the sources shift down by one container each cycle and the
result shifts in from the top of a MAXB-byte register, whose top SVL/8 bytes are the result.
So an instruction takes SVL / container cycles plus one (at most 33 at SVL 512). FDIV and
FSQRT spend F + 6 cycles on each container (F the fraction bits: 16, 29 or 58 cycles), one
quotient or root bit per cycle (restoring radix-2 digit recurrence), at most 513 cycles at SVL
512. docs/isa.md, "Streaming SVE floating point", states the semantics; the
reference model (:mod:`zatile.sim.model.sve_fp` over :class:`zatile.sim.fpref.FPArith`) is the
oracle of ``tests/test_hw_vector_fp_convert.py``.

The datapath of one element:

* unpack the sources: a floating-point operand becomes its class, sign, exponent field and
  fraction (FZ/FZ16 flush denormals, FZ raising Input Denormal); an integer operand becomes its
  magnitude;
* one leading-zero count and left shift (the normalizer) make the value ``mant * 2^(exp - 63)``
  with bit 63 of ``mant`` set: of SCVTF's and UCVTF's integer magnitude, else of the first
  operand's denormal fraction, but of FDIV's divisor after the recurrence's first step (the
  dividend's exponent is kept from that step);
* FDIV/FSQRT: the recurrence, one subtraction per step for either, gives F + 4 bits of the
  quotient or root and a sticky remainder;
* FRECPE/FRSQRTE: the Arm ARM's 8-bit estimate tables as ROMs built at elaboration from the
  reference's own table functions;
* one rounder does ``FPRoundBase`` into any destination format (half, single, double,
  BFloat16), the format choosing the bias, exponent range and round position at run time: a
  right shift puts every format's kept bits at the same place (a trailing-zero count gives the
  bits shifted out), then flush to zero, the four FPCR roundings, round-to-odd, overflow, and
  the Underflow (tiny before rounding and inexact), Overflow and Inexact flags;
* the rounder's shifter also gives FCVTZS/FCVTZU their integral part (truncated, saturated)
  and FRINT<x> its round and sticky bits, in the rounding FRINT names; FRINT then clears the
  fraction bits of the operand's significand and adds the rounding's one at its units.

The top forms (FCVTNT, BFCVTNT, FCVTXNT) write only the odd (top) narrow half of each active
container, which is why ``vector_lanes`` leaves the even halves out; FCVTLT reads the top half.
"""

from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import enum

from zatile.sw.arch.pseudocode import recip_estimate_table, rsqrt_estimate_table

from zatile.hw._common import max_bytes
from zatile.hw.barrel import barrel_shift
from zatile.hw.decoder import Op
from zatile.hw.fp.count_zeros import leading_zeros, trailing_zeros
from zatile.hw.vector.common import VectorExecutionUnit, active_bytes

__all__ = ["VectorFpConvert"]


class _Kind(enum.Enum, shape=4):
    """What the element datapath does."""
    INT_TO_FP = 0
    FP_TO_INT = 1
    CONVERT = 2     # FCVT, FCVTX, FCVTNT, FCVTLT, FCVTXNT
    BFCVT = 3       # BFCVT, BFCVTNT
    ROUND_INT = 4   # FRINT<x>
    RECPX = 5
    RECIP_ESTIMATE = 6
    RSQRT_ESTIMATE = 7
    DIVIDE = 8      # FDIV, FDIVR
    SQRT = 9


class _Mode(enum.Enum, shape=3):
    """Roundings: the four of FPCR.RMode, then FRINTA's and FCVTX's."""
    TIEEVEN = 0
    POSINF = 1
    NEGINF = 2
    ZERO = 3
    TIEAWAY = 4
    ODD = 5


#: Operation -> (kind, fixed rounding or None for FPCR's, raises Inexact (FRINTX),
#: writes the top halves, reads the top halves).
_OPERATIONS = {
    Op.FP_SCVTF: (_Kind.INT_TO_FP, None, False, False, False),
    Op.FP_UCVTF: (_Kind.INT_TO_FP, None, False, False, False),
    Op.FP_FCVTZS: (_Kind.FP_TO_INT, None, False, False, False),
    Op.FP_FCVTZU: (_Kind.FP_TO_INT, None, False, False, False),
    Op.FP_FCVT: (_Kind.CONVERT, None, False, False, False),
    Op.FP_BFCVT: (_Kind.BFCVT, None, False, False, False),
    Op.FP_FCVTX: (_Kind.CONVERT, _Mode.ODD, False, False, False),
    Op.FP_FCVTNT: (_Kind.CONVERT, None, False, True, False),
    Op.FP_FCVTLT: (_Kind.CONVERT, None, False, False, True),
    Op.FP_BFCVTNT: (_Kind.BFCVT, None, False, True, False),
    Op.FP_FCVTXNT: (_Kind.CONVERT, _Mode.ODD, False, True, False),
    Op.FP_FRINTN: (_Kind.ROUND_INT, _Mode.TIEEVEN, False, False, False),
    Op.FP_FRINTP: (_Kind.ROUND_INT, _Mode.POSINF, False, False, False),
    Op.FP_FRINTM: (_Kind.ROUND_INT, _Mode.NEGINF, False, False, False),
    Op.FP_FRINTZ: (_Kind.ROUND_INT, _Mode.ZERO, False, False, False),
    Op.FP_FRINTA: (_Kind.ROUND_INT, _Mode.TIEAWAY, False, False, False),
    Op.FP_FRINTX: (_Kind.ROUND_INT, None, True, False, False),
    Op.FP_FRINTI: (_Kind.ROUND_INT, None, False, False, False),
    Op.FP_RECPX: (_Kind.RECPX, None, False, False, False),
    Op.FP_RECPE: (_Kind.RECIP_ESTIMATE, None, False, False, False),
    Op.FP_RSQRTE: (_Kind.RSQRT_ESTIMATE, None, False, False, False),
    Op.FP_SQRT: (_Kind.SQRT, None, False, False, False),
    Op.FP_DIV: (_Kind.DIVIDE, None, False, False, False),
}

#: (exponent bits, fraction bits) of the formats, by name; the IEEE ones by log2 bytes.
_FORMATS = {"h": (5, 10), "s": (8, 23), "d": (11, 52), "bf": (8, 7)}
_IEEE = {1: "h", 2: "s", 3: "d"}
#: The rounder's format codes: an IEEE format's by its log2 bytes, BFloat16's 0.
_FORMAT_CODES = {"bf": 0, **{name: log2 for log2, name in _IEEE.items()}}

# FPCR bits and FPSR cumulative flag positions.
_FPCR_FZ16, _FPCR_RMODE, _FPCR_FZ, _FPCR_DN = 19, 22, 24, 25


def _flags(ioc=0, dzc=0, ofc=0, ufc=0, ixc=0, idc=0) -> Value:
    """FPSR bits 7-0 from the exception bits."""
    return Cat(ioc, dzc, ofc, ufc, ixc, Const(0, 2), idc)


def _unpack(m: Module, name: str, operand: Value, size: Value, flush: Value) -> dict:
    """The fields and classes of ``FPUnpack`` of the element of ``size`` (log2 bytes) in
    ``operand``: sign, exponent field, fraction left-aligned to 52 bits, the format's bias,
    the classes and Input Denormal (a flushed single or double denormal). :func:`_value`
    adds the value."""
    sign, exp_field, fraction = (Signal(name=f"{name}_sign"), Signal(11, name=f"{name}_exp_field"),
                                 Signal(52, name=f"{name}_fraction"))
    exp_all_ones = Signal(name=f"{name}_exp_all_ones")
    bias = Signal(range(1024), name=f"{name}_bias")
    with m.Switch(size):
        for log2, format_name in _IEEE.items():
            ebits, fbits = _FORMATS[format_name]
            with m.Case(log2):
                width = 1 + ebits + fbits
                m.d.comb += [sign.eq(operand[width - 1]),
                             exp_field.eq(operand[fbits:width - 1]),
                             fraction.eq(operand[:fbits] << (52 - fbits)),
                             exp_all_ones.eq(operand[fbits:width - 1].all()),
                             bias.eq((1 << (ebits - 1)) - 1)]
    is_zero_field = exp_field == 0
    is_denormal = is_zero_field & fraction.any()
    nan = exp_all_ones & fraction.any()
    return {"sign": sign, "exp_field": exp_field, "fraction": fraction, "bias": bias,
            "zero_field": is_zero_field, "zero": is_zero_field & ~(is_denormal & ~flush),
            "infinity": exp_all_ones & ~fraction.any(), "nan": nan,
            "snan": nan & ~fraction[51],
            "input_denormal": is_denormal & flush & (size != 1)}


def _value(m: Module, name: str, unpacked: dict, zeros: Value, normalized: Value) -> None:
    """Add to ``unpacked`` (of :func:`_unpack`) the value ``mant * 2^(exp - 63)``, bit 63 of
    ``mant`` set: a denormal takes ``normalized``, ``Cat(Const(0, 12), fraction)`` shifted
    left by its ``zeros`` leading zeros."""
    mant, exp = Signal(64, name=f"{name}_mant"), Signal(signed(16), name=f"{name}_exp")
    with m.If(unpacked["zero_field"]):
        m.d.comb += [mant.eq(normalized), exp.eq(-unpacked["bias"] - zeros)]
    with m.Else():
        m.d.comb += [mant.eq(Cat(Const(0, 11), unpacked["fraction"], Const(1, 1))),
                     exp.eq(unpacked["exp_field"] - unpacked["bias"])]
    unpacked.update(mant=mant, exp=exp)


def _pack(m: Module, result_format: Value, sign: Value, exp_field: Value, fraction: Value,
          left_aligned: bool = False) -> Signal:
    """The 64-bit container of ``sign``, ``exp_field`` and ``fraction`` in ``result_format``
    (:data:`_FORMAT_CODES`), each field cut to the format's width: the fraction's low bits,
    or with ``left_aligned`` its top bits of a 52-bit fraction."""
    packed = Signal(64, name="packed")
    with m.Switch(result_format):
        for name, code in _FORMAT_CODES.items():
            ebits, fbits = _FORMATS[name]
            with m.Case(code):
                fraction_bits = fraction[52 - fbits:52] if left_aligned else fraction[:fbits]
                m.d.comb += packed.eq(Cat(fraction_bits, exp_field[:ebits], sign))
    return packed


def _round(m: Module, result_format: Value, sign: Value, exp: Value, mant: Value,
           flush: Value, mode: Value, integer_shift: Value, to_integer: Value) -> dict:
    """``FPRoundBase`` of ``(-1)^sign * mant * 2^(exp - 63)`` (``mant`` nonzero with bit 63
    set) into ``result_format`` (:data:`_FORMAT_CODES`): the result container ``bits`` and
    the FPSR ``flags`` raised.

    One right shift aligns the kept bits of every format at bits 11 to 63 (by the fraction
    bits the format lacks, plus the denormal shift) with the round bit below them; the bits
    shifted out make the sticky bit through a trailing-zero count. With ``to_integer`` the
    shifter instead moves ``mant`` right by ``integer_shift``: ``aligned`` is then the
    integral part and ``lost`` says whether nonzero bits fell out (FCVTZS, FCVTZU)."""
    bias = Signal(range(1024), name="round_bias")
    missing_bits = Signal(range(53), name="round_missing_bits")     # 52 - fraction bits
    exp_limit = Signal(11, name="round_exp_limit")                  # all-ones exponent
    carry_bits = Signal(2, name="round_carry_bits")
    biased = Signal(signed(16), name="round_biased")
    denormal_shift = Signal(signed(17), name="round_denormal_shift")
    shift = Signal(range(65), name="round_shift")
    m.d.comb += [biased.eq(exp + bias),
                 denormal_shift.eq(missing_bits + 1 - biased),
                 shift.eq(Mux(to_integer, integer_shift,
                              Mux(biased > 0, missing_bits,
                                  Mux(denormal_shift > 55, 55, denormal_shift))))]
    aligned = barrel_shift(m, mant, shift, "right", "round")
    lost = trailing_zeros(m, mant) < shift
    int_mant = aligned[11:]
    round_bit = aligned[10]
    sticky = aligned[:10].any() | lost
    inexact = round_bit | sticky
    round_up = Signal(name="round_up")
    to_infinity = Signal(name="round_to_infinity")
    with m.Switch(mode):
        with m.Case(_Mode.TIEEVEN):
            m.d.comb += [round_up.eq(round_bit & (sticky | int_mant[0])), to_infinity.eq(1)]
        with m.Case(_Mode.POSINF):
            m.d.comb += [round_up.eq(inexact & ~sign), to_infinity.eq(~sign)]
        with m.Case(_Mode.NEGINF):
            m.d.comb += [round_up.eq(inexact & sign), to_infinity.eq(sign)]
        with m.Case(_Mode.TIEAWAY):
            m.d.comb += round_up.eq(round_bit)
    odd = (mode == _Mode.ODD) & inexact
    rounded = Signal(54, name="round_rounded")
    m.d.comb += rounded.eq((int_mant | odd) + round_up)
    with m.Switch(result_format):
        for name, code in _FORMAT_CODES.items():
            ebits, fbits = _FORMATS[name]
            with m.Case(code):
                m.d.comb += [bias.eq((1 << (ebits - 1)) - 1), missing_bits.eq(52 - fbits),
                             exp_limit.eq((1 << ebits) - 1),
                             carry_bits.eq(rounded[fbits:fbits + 2])]
    # The leading one and a carry out of the fraction add to the exponent field.
    exp_field = Signal(12, name="round_exp_field")
    m.d.comb += exp_field.eq(Mux(biased > 0, biased - 1, 0)[:11] + carry_bits)
    overflow = (biased >= exp_limit) | (exp_field == exp_limit)
    tiny = biased < 1
    out_exp, out_fraction = Signal(11, name="round_out_exp"), Signal(52, name="round_out_fraction")
    flags = Signal(8, name="round_flags")
    with m.If(flush & tiny):
        m.d.comb += flags.eq(_flags(ufc=1))
    with m.Elif(overflow):
        # Infinity, or the largest normal number: the fields cut to the format's width.
        m.d.comb += [out_exp.eq(Mux(to_infinity, 0x7FF, 0x7FE)),
                     out_fraction.eq(Mux(to_infinity, 0, (1 << 52) - 1)),
                     flags.eq(_flags(ofc=1, ixc=1))]
    with m.Else():
        m.d.comb += [out_exp.eq(exp_field), out_fraction.eq(rounded[:52]),
                     flags.eq(_flags(ufc=tiny & inexact, ixc=inexact))]
    return {"bits": _pack(m, result_format, sign, out_exp, out_fraction), "flags": flags,
            "aligned": aligned, "lost": lost, "up": round_up, "inexact": inexact}


def _round_to_integral(m: Module, unpacked: dict, size: Value, up: Value) -> dict:
    """FRINT<x> of a finite, nonzero operand of ``size`` (log2 bytes) with an exponent below
    52, given whether it rounds ``up``: the bits of its significand below the units are
    cleared and, rounding up, a one is added at the units (a carry reaching the exponent
    field); a value below one becomes zero or one. (``bits``, ``zero``: the result is
    zero.)"""
    exp = unpacked["exp"]
    # The significand, hidden bit at 52, with room for the units of values below one.
    significand = Cat(unpacked["fraction"], ~unpacked["zero_field"], Const(0, 2))
    units = Signal(range(55), name="integral_units")        # bit position of the units
    m.d.comb += units.eq(Mux(exp < -2, 54, 52 - exp))
    fraction_mask = Signal(55, name="integral_fraction_mask")
    m.d.comb += fraction_mask.eq(Cat(units > position for position in range(55)))
    # Ones below the units carry an increment up to them; the mask then clears them.
    rounded = Signal(56, name="integral_rounded")
    m.d.comb += rounded.eq(((significand | fraction_mask) + up) & ~fraction_mask)
    exp_field = Mux(units > 52, unpacked["bias"], unpacked["exp_field"] + rounded[53])
    return {"bits": _pack(m, size, unpacked["sign"], exp_field, rounded[:52],
                          left_aligned=True),
            "zero": rounded == 0}


class VectorFpConvert(VectorExecutionUnit):
    """Floating-point conversions and roundings, one container per cycle (module
    documentation).

    Parameters
    ----------
    config : EngineConfig
        ``max_svl`` sizes the vectors.

    Attributes
    ----------
    op : In(stream.Signature(VectorOpLayout))
    result : Out(stream.Signature(VectorResultLayout)), one transfer per ``op`` transfer,
        ``SVL / container + 1`` cycles after it (FDIV, FSQRT: ``(SVL / container) *
        (F + 6) + 1``).

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    """

    #: The operations the unit performs.
    OPS = tuple(_OPERATIONS)

    def elaborate(self, platform):
        m = Module()
        maxb = max_bytes(self._config)
        payload = self.op.payload
        decoded = payload.decoded
        out = self.result.payload

        # ---- the instruction, latched when it is taken
        kind = Signal(_Kind)
        mode = Signal(_Mode)
        exact = Signal()
        unsigned_ = Signal()
        top_out, top_in = Signal(), Signal()
        container = Signal(range(4))            # log2 bytes
        source_size, result_size = Signal(range(4)), Signal(range(4))
        fpcr = Signal(32)
        source = Signal(8 * maxb)
        second_source = Signal(8 * maxb)
        reversed_ = Signal()
        active = Signal(maxb)                   # one bit per byte, shifts with the elements
        remaining = Signal(range(maxb + 1))     # containers still to do
        busy = Signal()
        collected = Signal(8 * maxb)
        flags = Signal(8)
        svl_log2 = Signal(range(16))

        esize_log2 = decoded.esize_log2
        narrow = Mux(decoded.flags.quarter, esize_log2 - 2, esize_log2 - 1)
        fpcr_mode = payload.fpcr[_FPCR_RMODE:_FPCR_RMODE + 2]
        predicate = Signal(maxb)
        m.d.comb += predicate.eq(Mux(decoded.present.pg, payload.governing, ~0) & payload.svl_mask)
        lanes = Signal(maxb)
        top_lanes = Signal(maxb)
        with m.Switch(esize_log2):
            for log2 in (1, 2, 3):
                with m.Case(log2):
                    size = 1 << log2
                    m.d.comb += [
                        lanes.eq(active_bytes(predicate, log2, maxb)),
                        top_lanes.eq(Cat(Const(b % size >= size // 2) for b in range(maxb)))]

        m.d.comb += self.op.ready.eq(~busy & ~self.result.valid)
        with m.If(self.op.valid & self.op.ready):
            for operation, (op_kind, op_mode, op_exact, op_top_out, op_top_in) in \
                    _OPERATIONS.items():
                with m.If(decoded.op == operation):
                    m.d.sync += [kind.eq(op_kind), exact.eq(op_exact),
                                 unsigned_.eq(operation in (Op.FP_UCVTF, Op.FP_FCVTZU)),
                                 top_out.eq(op_top_out), top_in.eq(op_top_in),
                                 mode.eq(fpcr_mode if op_mode is None else op_mode),
                                 out.vector_lanes.eq(
                                     lanes & (top_lanes if op_top_out else ~0))]
            m.d.sync += [container.eq(esize_log2),
                         source_size.eq(Mux(decoded.flags.widening, narrow, esize_log2)),
                         result_size.eq(Mux(decoded.flags.narrowing, narrow, esize_log2)),
                         fpcr.eq(payload.fpcr), source.eq(Value.cast(payload.first)),
                         second_source.eq(Value.cast(payload.second)),
                         reversed_.eq(decoded.flags.reversed),
                         active.eq(lanes), flags.eq(0), busy.eq(1),
                         svl_log2.eq(payload.svl_log2),
                         remaining.eq((1 << payload.svl_log2) >> esize_log2)]

        element, element_flags, element_done = self._element(
            m, busy, source[:64], second_source[:64], container, source_size, result_size, kind,
            mode, exact, unsigned_, reversed_, top_out, top_in, fpcr)

        with m.If(busy & element_done):
            m.d.sync += [remaining.eq(remaining - 1),
                         flags.eq(flags | Mux(active[0], element_flags, 0))]
            with m.Switch(container):
                for log2 in (1, 2, 3):
                    with m.Case(log2):
                        bits = 8 << log2
                        m.d.sync += [source.eq(source >> bits),
                                     second_source.eq(second_source >> bits),
                                     active.eq(active >> (1 << log2)),
                                     collected.eq(Cat(collected[bits:], element[:bits]))]
            with m.If(remaining == 1):
                m.d.sync += [busy.eq(0), self.result.valid.eq(1)]
        with m.If(self.result.valid & self.result.ready):
            m.d.sync += self.result.valid.eq(0)
        # The containers shifted in from the top: the first SVL/8 bytes fill the top of
        # ``collected``, and the output takes them down to byte 0.
        with m.Switch(svl_log2):
            for log2 in range(4, maxb.bit_length()):
                with m.Case(log2):
                    m.d.comb += Value.cast(out.vector).eq(collected >> 8 * (maxb - (1 << log2)))
        m.d.comb += out.fpsr_flags.eq(flags)
        return m

    def _element(self, m, busy, element, second_element, container, source_size, result_size,
                 kind, mode, exact, unsigned, reversed_, top_out, top_in, fpcr):
        """The combinational datapath of one container: (the result container, 64 bits, and
        its FPSR flags)."""
        fz, fz16, dn = fpcr[_FPCR_FZ], fpcr[_FPCR_FZ16], fpcr[_FPCR_DN]
        # FCVTLT reads the top half of the container.
        operand = Signal(64)
        with m.Switch(container):
            for log2 in (1, 2, 3):
                with m.Case(log2):
                    half = 4 << log2
                    m.d.comb += operand.eq(Mux(top_in, element[half:half * 2],
                                               Mux(reversed_, second_element, element)))
        second_operand = Signal(64)
        m.d.comb += second_operand.eq(Mux(reversed_, element, second_element))

        source_half = source_size == 1
        # FCVT never flushes half precision; otherwise FZ16 does (silently) and FZ for the rest.
        flush_in = Mux(source_half, fz16 & (kind != _Kind.CONVERT), fz)
        first = _unpack(m, "a", operand, source_size, flush_in)
        sign, exp_field, fraction = first["sign"], first["exp_field"], first["fraction"]
        is_zero, is_infinity, is_nan, is_snan = (first["zero"], first["infinity"], first["nan"],
                                                 first["snan"])
        input_denormal = first["input_denormal"]

        # ---- the integer source's magnitude (SCVTF, UCVTF)
        int_source = Signal(64)
        with m.Switch(source_size):
            for log2 in (1, 2, 3):
                with m.Case(log2):
                    bits = 8 << log2
                    extension = (operand[bits - 1] & ~unsigned).replicate(64 - bits)
                    m.d.comb += int_source.eq(Cat(operand[:bits], extension))
        int_negative = int_source[63] & ~unsigned
        magnitude = Signal(64)
        m.d.comb += magnitude.eq(Mux(int_negative, -int_source, int_source))
        second = _unpack(m, "b", second_operand, source_size, flush_in)
        # One leading-zero count and left shift normalize the integer magnitude or a denormal
        # fraction: the first operand's, but FDIV's divisor after the recurrence's first step.
        int_to_fp = kind == _Kind.INT_TO_FP
        divisor_step = Signal()
        to_normalize = Signal(64)
        m.d.comb += to_normalize.eq(Mux(int_to_fp, magnitude, Cat(
            Const(0, 12), Mux(divisor_step, second["fraction"], fraction))))
        zeros = leading_zeros(m, to_normalize)
        normalized = barrel_shift(m, to_normalize, zeros, "left", "normalize")
        _value(m, "a", first, zeros, normalized)
        _value(m, "b", second, zeros, normalized)
        fp_mant, fp_exp = first["mant"], first["exp"]
        iteration = self._iterate(m, busy, kind, source_size, first, second)
        m.d.comb += divisor_step.eq(iteration["divisor_step"])

        # ---- the value to round
        round_sign, round_exp, round_mant = Signal(), Signal(signed(16)), Signal(64)
        with m.If(int_to_fp):
            m.d.comb += [round_sign.eq(int_negative), round_exp.eq(63 - zeros),
                         round_mant.eq(normalized)]
        with m.Elif((kind == _Kind.DIVIDE) | (kind == _Kind.SQRT)):
            m.d.comb += [round_sign.eq(sign ^ (second["sign"] & (kind == _Kind.DIVIDE))),
                         round_exp.eq(iteration["exp"]), round_mant.eq(iteration["mant"])]
        with m.Else():
            m.d.comb += [round_sign.eq(sign), round_exp.eq(fp_exp), round_mant.eq(fp_mant)]
        # FCVT flushes only single and double results (FZ); BFloat16 is flushed by FZ.
        result_half = result_size == 1
        flush_out = Mux(result_half & (kind != _Kind.BFCVT), fz16 & (kind != _Kind.CONVERT), fz)
        round_format = Mux(kind == _Kind.BFCVT, _FORMAT_CODES["bf"], result_size)
        # FCVTZS and FCVTZU take the rounder's shifter for the integral part, FRINT<x> for
        # its rounding: the units then at bit 11, above the round bit.
        round_int = kind == _Kind.ROUND_INT
        units = Mux(round_int, 52, 63)
        integer_shift = Mux(fp_exp > units, 0, Mux(fp_exp < units - 64, 64, units - fp_exp))
        rounded = _round(m, round_format, round_sign, round_exp, round_mant, flush_out, mode,
                         integer_shift, (kind == _Kind.FP_TO_INT) | round_int)

        # ---- per-format results: the rounded value, or the special cases
        result, result_flags = Signal(64), Signal(8)
        nan_flags = _flags(ioc=is_snan, idc=input_denormal)

        def ieee(name, sign_, exp_, frac_):
            ebits, fbits = _FORMATS[name]
            frac_ = Const(frac_, fbits) if isinstance(frac_, int) else Value.cast(frac_)[:fbits]
            exp_ = Const(exp_, ebits) if isinstance(exp_, int) else Value.cast(exp_)[:ebits]
            return Cat(frac_, exp_, sign_)

        def converted_nan(name):
            ebits, fbits = _FORMATS[name]
            default = Const(((1 << (ebits + 1)) - 1) << (fbits - 1), 1 + ebits + fbits)
            quiet = ieee(name, sign, (1 << ebits) - 1,
                         (fraction >> (52 - fbits)) | (1 << (fbits - 1)))
            return Mux(dn, default, quiet)

        def by_result_format(values: dict):
            """``values[name]`` for the result format (BFloat16 for BFCVT)."""
            selected = Signal(64, name="by_result_format")
            with m.If(kind == _Kind.BFCVT):
                m.d.comb += selected.eq(values["bf"])
            with m.Else():
                with m.Switch(result_size):
                    for log2, name in _IEEE.items():
                        with m.Case(log2):
                            m.d.comb += selected.eq(values[name])
            return selected

        with m.Switch(kind):
            with m.Case(_Kind.CONVERT, _Kind.BFCVT):
                nan = by_result_format({name: converted_nan(name) for name in _FORMATS})
                infinity = by_result_format({name: ieee(name, sign, (1 << _FORMATS[name][0]) - 1,
                                                        0) for name in _FORMATS})
                zero = by_result_format({name: ieee(name, sign, 0, 0) for name in _FORMATS})
                with m.If(is_nan):
                    m.d.comb += [result.eq(nan), result_flags.eq(nan_flags)]
                with m.Elif(is_infinity):
                    m.d.comb += result.eq(infinity)
                with m.Elif(is_zero):
                    m.d.comb += [result.eq(zero), result_flags.eq(_flags(idc=input_denormal))]
                with m.Else():
                    m.d.comb += [result.eq(rounded["bits"]), result_flags.eq(rounded["flags"])]
            with m.Case(_Kind.INT_TO_FP):
                with m.If(magnitude != 0):
                    m.d.comb += [result.eq(rounded["bits"]), result_flags.eq(rounded["flags"])]
            with m.Case(_Kind.FP_TO_INT):
                self._to_integer(m, result, result_flags, sign, fp_exp, rounded["aligned"],
                                 rounded["lost"] & ~is_zero, is_nan, is_infinity, is_zero,
                                 input_denormal, result_size, unsigned)
            with m.Case(_Kind.ROUND_INT):
                processed = self._process_nan(m, operand, source_size, is_snan, dn)
                integral = _round_to_integral(m, first, source_size, rounded["up"])
                inexact = rounded["inexact"] & ~is_zero
                with m.If(is_nan):
                    m.d.comb += [result.eq(processed), result_flags.eq(nan_flags)]
                with m.Elif(is_zero | is_infinity | (fp_exp >= 52)):
                    # Zeros (flushed denormals too) and infinities are kept; so is a value
                    # with no fraction bits (its exponent reaches the fraction width).
                    m.d.comb += [result.eq(Mux(is_zero, operand & self._sign_mask(m, source_size),
                                               operand)),
                                 result_flags.eq(_flags(idc=input_denormal))]
                with m.Elif(integral["zero"]):
                    m.d.comb += [result.eq(operand & self._sign_mask(m, source_size)),
                                 result_flags.eq(_flags(ixc=exact & inexact))]
                with m.Else():
                    m.d.comb += [result.eq(integral["bits"]),
                                 result_flags.eq(_flags(ixc=exact & inexact))]
            with m.Case(_Kind.RECPX):
                processed = self._process_nan(m, operand, source_size, is_snan, dn)
                inverted = Signal(64)
                with m.Switch(source_size):
                    for log2, name in _IEEE.items():
                        ebits, fbits = _FORMATS[name]
                        ones = (1 << ebits) - 1
                        with m.Case(log2):
                            m.d.comb += inverted.eq(ieee(
                                name, sign, Mux(exp_field == 0, ones - 1,
                                                exp_field[:ebits] ^ ones), 0))
                with m.If(is_nan):
                    m.d.comb += [result.eq(processed), result_flags.eq(nan_flags)]
                with m.Else():
                    m.d.comb += [result.eq(inverted), result_flags.eq(_flags(idc=input_denormal))]

            with m.Case(_Kind.DIVIDE, _Kind.SQRT):
                self._divide_sqrt_result(m, result, result_flags, kind, operand, second_operand,
                                         source_size, first, second, rounded, dn)
            with m.Case(_Kind.RECIP_ESTIMATE, _Kind.RSQRT_ESTIMATE):
                self._estimate(m, result, result_flags, kind, operand, source_size, sign,
                               exp_field, fraction, fp_exp, fp_mant, is_nan, is_snan,
                               is_infinity, is_zero, input_denormal, flush_in, mode, dn)

        # The top forms put the narrow result in the top half of the container.
        placed = Signal(64)
        with m.Switch(container):
            for log2 in (1, 2, 3):
                with m.Case(log2):
                    half = 4 << log2
                    m.d.comb += placed.eq(Mux(top_out, result[:half] << half, result))
        return placed, result_flags, iteration["done"]

    def _iterate(self, m, busy, kind, size, first, second):
        """The digit recurrences of FDIV and FSQRT, one quotient or root bit per cycle.

        Step 0 loads the operands, steps 1 to F + 4 produce the bits of weights 2^0 to
        2^-(F+3) of the quotient (in (1/2, 2)) or the root (in [1, 2)), and the last step
        commits the element: ``done``. The result is ``mant * 2^(exp - 63)`` with the
        remainder's sticky bit at bit 0, below every rounding position."""
        divisor = second["mant"][11:]                    # 53 bits
        step = Signal(range(64))
        last = Signal(range(64))
        partial = Signal(60)                             # the partial remainder
        quotient = Signal(57)
        radicand = Signal(112)                           # the root's pending bit pairs, at the top
        # The root of S * 2^-52 (S in [2^52, 2^54), the exponent made even), as the integer
        # square root of S * 2^(2k - 52) with its 2k + 2 bits at the top of ``radicand``.
        odd = first["exp"][0]
        # The divisor takes the normalizer after step 0: the dividend's exponent is kept.
        dividend_exp = Signal(signed(16))
        iterative = (kind == _Kind.DIVIDE) | (kind == _Kind.SQRT)
        with m.Switch(size):
            for log2, name in _IEEE.items():
                with m.Case(log2):
                    m.d.comb += last.eq(_FORMATS[name][1] + 5)
        trial_root = Cat(Const(1, 2), quotient)[:60]     # (Q << 2) | 1
        shifted_remainder = Cat(radicand[110:], partial)[:60]
        # One subtraction serves both recurrences; no borrow out of it is the new bit.
        minuend = Mux(kind == _Kind.DIVIDE, partial, shifted_remainder)
        difference = Signal(61)
        m.d.comb += difference.eq(minuend - Mux(kind == _Kind.DIVIDE, divisor, trial_root))
        digit = ~difference[60]
        remainder = Mux(digit, difference[:60], minuend)
        with m.If(busy & iterative):
            m.d.sync += step.eq(Mux(step == last, 0, step + 1))
            with m.If(step == 0):
                m.d.sync += [quotient.eq(0), dividend_exp.eq(first["exp"]),
                             partial.eq(Mux(kind == _Kind.DIVIDE, first["mant"][11:], 0)),
                             radicand.eq(Mux(odd, first["mant"][11:] << 1, first["mant"][11:])
                                         << 58)]
            with m.Elif(kind == _Kind.DIVIDE):
                m.d.sync += [quotient.eq(Cat(digit, quotient)), partial.eq(remainder << 1)]
            with m.Else():
                m.d.sync += [quotient.eq(Cat(digit, quotient)), partial.eq(remainder),
                             radicand.eq(radicand << 2)]
        # k = F + 3 fraction bits: the leading bit is at k, or k - 1 for a quotient below 1.
        mant, exp = Signal(64), Signal(signed(16))
        sticky = partial.any()
        with m.Switch(size):
            for log2, name in _IEEE.items():
                k = _FORMATS[name][1] + 3
                with m.Case(log2):
                    with m.If(kind == _Kind.SQRT):
                        m.d.comb += [mant.eq(Cat(sticky, (quotient << (63 - k))[1:64])),
                                     exp.eq(first["exp"] >> 1)]
                    with m.Elif(quotient[k]):
                        m.d.comb += [mant.eq(Cat(sticky, (quotient << (63 - k))[1:64])),
                                     exp.eq(dividend_exp - second["exp"])]
                    with m.Else():
                        m.d.comb += [mant.eq(Cat(sticky, (quotient << (64 - k))[1:64])),
                                     exp.eq(dividend_exp - second["exp"] - 1)]
        return {"done": ~iterative | (step == last), "mant": mant, "exp": exp,
                "divisor_step": (kind == _Kind.DIVIDE) & (step != 0)}

    @staticmethod
    def _divide_sqrt_result(m, result, result_flags, kind, operand, second_operand, size,
                            first, second, rounded, dn):
        """``FPDiv`` and ``FPSqrt``: NaNs, the invalid and exact cases, else the rounded
        quotient or root."""
        denormals = _flags(idc=first["input_denormal"]
                           | (second["input_denormal"] & (kind == _Kind.DIVIDE)))
        for log2, name in _IEEE.items():
            ebits, fbits = _FORMATS[name]
            width = 1 + ebits + fbits
            ones = (1 << ebits) - 1
            default = Const(((1 << (ebits + 1)) - 1) << (fbits - 1), width)
            with m.If(size == log2):
                def processed(value, nan):
                    return Mux(dn, default, value[:width] | (1 << (fbits - 1)))
                a_nan, b_nan = first["nan"], second["nan"] & (kind == _Kind.DIVIDE)
                # FPProcessNaNs: the first signalling NaN, else the first quiet one.
                take_b = b_nan & (second["snan"] | ~a_nan) & ~first["snan"]
                nan_result = Mux(take_b, processed(second_operand, b_nan),
                                 processed(operand, a_nan))
                nan_signalling = Mux(take_b, second["snan"], first["snan"])
                sign = first["sign"] ^ second["sign"]
                infinity = Cat(Const(ones << fbits, width - 1), sign)
                zero = Cat(Const(0, width - 1), sign)
                with m.If(a_nan | b_nan):
                    m.d.comb += [result.eq(nan_result),
                                 result_flags.eq(denormals | _flags(ioc=nan_signalling))]
                with m.Elif(kind == _Kind.SQRT):
                    with m.If(first["zero"]):
                        m.d.comb += [result.eq(Cat(Const(0, width - 1), first["sign"])),
                                     result_flags.eq(denormals)]
                    with m.Elif(first["infinity"] & ~first["sign"]):
                        m.d.comb += result.eq(Const(ones << fbits, width))
                    with m.Elif(first["sign"]):
                        m.d.comb += [result.eq(default), result_flags.eq(_flags(ioc=1))]
                    with m.Else():
                        m.d.comb += [result.eq(rounded["bits"]),
                                     result_flags.eq(denormals | rounded["flags"])]
                with m.Elif((first["infinity"] & second["infinity"])
                            | (first["zero"] & second["zero"])):
                    m.d.comb += [result.eq(default), result_flags.eq(denormals | _flags(ioc=1))]
                with m.Elif(first["infinity"] | second["zero"]):
                    m.d.comb += [result.eq(infinity),
                                 result_flags.eq(denormals | _flags(dzc=~first["infinity"]))]
                with m.Elif(first["zero"] | second["infinity"]):
                    m.d.comb += [result.eq(zero), result_flags.eq(denormals)]
                with m.Else():
                    m.d.comb += [result.eq(rounded["bits"]),
                                 result_flags.eq(denormals | rounded["flags"])]

    @staticmethod
    def _sign_mask(m, size):
        """The sign bit of an element of ``size`` (log2 bytes), as a 64-bit mask."""
        mask = Signal(64)
        with m.Switch(size):
            for log2 in (1, 2, 3):
                with m.Case(log2):
                    m.d.comb += mask.eq(1 << ((8 << log2) - 1))
        return mask

    @staticmethod
    def _process_nan(m, operand, size, is_snan, dn):
        """``FPProcessNaN`` of a NaN ``operand`` of ``size`` (log2 bytes)."""
        processed = Signal(64)
        with m.Switch(size):
            for log2, name in _IEEE.items():
                ebits, fbits = _FORMATS[name]
                width = 1 + ebits + fbits
                with m.Case(log2):
                    default = ((1 << (ebits + 1)) - 1) << (fbits - 1)
                    m.d.comb += processed.eq(Mux(dn, default,
                                                 operand[:width] | (1 << (fbits - 1))))
        return processed

    @staticmethod
    def _to_integer(m, result, result_flags, sign, exp, integral, inexact, is_nan,
                    is_infinity, is_zero, input_denormal, size, unsigned):
        """``FPToFixed`` toward zero into an integer of ``size`` (log2 bytes), saturating; the
        64-bit two's complement result, which the container truncates."""
        too_big = Signal()
        with m.Switch(size):
            for log2 in (1, 2, 3):
                bits = 8 << log2
                with m.Case(log2):
                    over_unsigned = integral[bits:].any() if bits < 64 else Const(0)
                    over_positive = integral[bits - 1:].any()
                    over_negative = integral[bits - 1:].any() & (integral[:bits - 1].any()
                                                                 | (integral[bits:].any()
                                                                    if bits < 64 else 0))
                    m.d.comb += too_big.eq(is_infinity | (exp > 63) | Mux(
                        unsigned, Mux(sign, integral.any(), over_unsigned),
                        Mux(sign, over_negative, over_positive)))
        saturated = Signal(64)
        with m.Switch(size):
            for log2 in (1, 2, 3):
                bits = 8 << log2
                with m.Case(log2):
                    m.d.comb += saturated.eq(Mux(
                        unsigned, Mux(sign, 0, (1 << bits) - 1),
                        Mux(sign, (-(1 << (bits - 1))) & ((1 << 64) - 1), (1 << (bits - 1)) - 1)))
        with m.If(is_nan):
            m.d.comb += [result.eq(0), result_flags.eq(_flags(ioc=1, idc=input_denormal))]
        with m.Elif(is_zero):
            m.d.comb += [result.eq(0), result_flags.eq(_flags(idc=input_denormal))]
        with m.Elif(too_big):
            m.d.comb += [result.eq(saturated), result_flags.eq(_flags(ioc=1))]
        with m.Else():
            m.d.comb += [result.eq(Mux(sign, -integral, integral)),
                         result_flags.eq(_flags(ixc=inexact))]

    def _estimate(self, m, result, result_flags, kind, operand, size, sign, exp_field,
                  fraction, exp, mant, is_nan, is_snan, is_infinity, is_zero, input_denormal,
                  flush, mode, dn):
        """``FPRecipEstimate`` and ``FPRSqrtEstimate`` with the 8-bit tables (ROMs computed
        from the reference's table functions), FEAT_RPRES off."""
        recip_rom = Array(Const(recip_estimate_table(256 | index) & 0xFF, 8)
                          for index in range(256))
        rsqrt_rom = Array(Const(rsqrt_estimate_table(index) & 0xFF, 8)
                          for index in range(128, 512))
        # FPRecipEstimate takes a denormal's fraction up by one or two places.
        recip_fraction, recip_exp = Signal(52), Signal(signed(13))
        with m.If(exp_field != 0):
            m.d.comb += [recip_fraction.eq(fraction), recip_exp.eq(exp_field)]
        with m.Elif(fraction[51]):
            m.d.comb += [recip_fraction.eq(fraction << 1), recip_exp.eq(0)]
        with m.Else():
            m.d.comb += [recip_fraction.eq(fraction << 2), recip_exp.eq(-1)]
        recip_estimate = Signal(8)
        m.d.comb += recip_estimate.eq(recip_rom[recip_fraction[44:]])
        # FPRSqrtEstimate normalizes a denormal fully: the fraction below the leading one.
        rsqrt_fraction = mant[11:63]
        rsqrt_index = Signal(range(384))
        m.d.comb += rsqrt_index.eq(Mux(exp[0], 256 - 128 + rsqrt_fraction[44:],
                                       rsqrt_fraction[45:]))
        rsqrt_estimate = Signal(8)
        m.d.comb += rsqrt_estimate.eq(rsqrt_rom[rsqrt_index])
        processed = self._process_nan(m, operand, size, is_snan, dn)
        with m.Switch(size):
            for log2, name in _IEEE.items():
                ebits, fbits = _FORMATS[name]
                width = 1 + ebits + fbits
                bias = (1 << (ebits - 1)) - 1
                ones = (1 << ebits) - 1
                infinity = Cat(Const(ones << fbits, width - 1), sign)
                zero = Cat(Const(0, width - 1), sign)
                with m.Case(log2):
                    # Reciprocal: the exponent and the table's 8 bits, shifted into a
                    # denormal result when the exponent reaches 0 or -1.
                    recip_result_exp = Signal(signed(14), name=f"recip_exp_{name}")
                    recip_out = Signal(width, name=f"recip_{name}")
                    m.d.comb += recip_result_exp.eq(2 * bias - 1 - recip_exp)
                    top = Cat(Const(0, 44), recip_estimate)     # 52 bits
                    with m.If(recip_result_exp == 0):
                        m.d.comb += recip_out.eq(Cat(
                            (Cat(top[1:], Const(1, 1)))[52 - fbits:], Const(0, ebits), sign))
                    with m.Elif(recip_result_exp == -1):
                        m.d.comb += recip_out.eq(Cat(
                            (Cat(top[2:], Const(1, 1), Const(0, 1)))[52 - fbits:],
                            Const(0, ebits), sign))
                    with m.Else():
                        m.d.comb += recip_out.eq(Cat(top[52 - fbits:],
                                                     recip_result_exp[:ebits], sign))
                    rsqrt_out = Signal(width, name=f"rsqrt_{name}")
                    # (3 * bias - 1 - exp) // 2 of the normalized exponent exp + bias.
                    m.d.comb += rsqrt_out.eq(Cat(
                        Const(0, fbits - 8), rsqrt_estimate,
                        ((3 * bias - 1 - (exp + bias)) >> 1)[:ebits], Const(0, 1)))
                    tiny = exp < -(1 << (ebits - 1))
                    with m.If(kind == _Kind.RECIP_ESTIMATE):
                        max_normal = Cat(Const(((ones - 1) << fbits) | ((1 << fbits) - 1),
                                               width - 1), sign)
                        to_infinity = Mux(mode == _Mode.TIEEVEN, 1,
                                          Mux(mode == _Mode.POSINF, ~sign,
                                              Mux(mode == _Mode.NEGINF, sign, 0)))
                        with m.If(is_nan):
                            m.d.comb += [result.eq(processed), result_flags.eq(_flags(ioc=is_snan))]
                        with m.Elif(is_infinity):
                            m.d.comb += result.eq(zero)
                        with m.Elif(is_zero):
                            m.d.comb += [result.eq(infinity),
                                         result_flags.eq(_flags(dzc=1, idc=input_denormal))]
                        with m.Elif(tiny):
                            m.d.comb += [result.eq(Mux(to_infinity, infinity, max_normal)),
                                         result_flags.eq(_flags(ofc=1, ixc=1))]
                        with m.Elif(flush & (exp >= bias - 1)):
                            m.d.comb += [result.eq(zero), result_flags.eq(_flags(ufc=1))]
                        with m.Else():
                            m.d.comb += result.eq(recip_out)
                    with m.Else():
                        with m.If(is_nan):
                            m.d.comb += [result.eq(processed), result_flags.eq(_flags(ioc=is_snan))]
                        with m.Elif(is_zero):
                            m.d.comb += [result.eq(infinity),
                                         result_flags.eq(_flags(dzc=1, idc=input_denormal))]
                        with m.Elif(sign):
                            default = ((1 << (ebits + 1)) - 1) << (fbits - 1)
                            m.d.comb += [result.eq(default), result_flags.eq(_flags(ioc=1))]
                        with m.Elif(is_infinity):
                            m.d.comb += result.eq(0)
                        with m.Else():
                            m.d.comb += result.eq(rsqrt_out)
