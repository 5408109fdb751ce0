"""The vector unit's floating-point compares and selects: FMAX/FMIN(NM), FABS/FNEG, the
compares, the max/min reductions and the immediate moves.

An execution unit of :mod:`zatile.hw.vector` (payloads in :mod:`zatile.hw.vector.common`).
docs/isa.md, "Streaming SVE floating point", states the semantics; the reference model
(``sim/model/sve_fp.py`` over ``sim/fpref.py``) is the oracle of
``tests/test_hw_vector_fp_compare.py``.

Nothing here rounds: every result is one of the operands (flushed to a signed zero when
FPCR.FZ/FZ16 flushes a denormal), a NaN, or a truth. Each element therefore needs one magnitude
comparator, which this unit has for every element of every size (half, single, double) in a
chunk of the vector (below): the operands are mapped to unsigned keys ordered like the values,
``-0`` just below ``+0``, and one ``>`` and one ``==`` of the keys serve the compares (which
treat the zeros as equal) and the selects (for which FMAX(+0, -0) is +0).

Timing: the op is latched (``x_`` registers) on the cycle it is taken and the result is
registered on the next, so an element operation's result leaves two cycles after its op. A
reduction (FMAXV, FMINNMV, ...) follows ``FPReducePredicated``: inactive elements become the
operation's identity, then each step combines the element pairs ``(2i, 2i+1)`` into element
``i`` with the same element datapath (an even/odd unzip at the element size in front of it),
which is the model's recursive halving; it takes ``log2(SVL / esize)`` more steps, a cycle each.
The datapath covers ``vector_bits_per_cycle`` bits (a whole vector by default): with fewer, an
element operation and each reduction step take ``SVL / vector_bits_per_cycle`` cycles, one
chunk each (a step writes its pairs' results over the chunks it has already read).

Exceptions (FPSR bits): Invalid Operation for a signalling NaN operand, and for any NaN of
FCMGE/FCMGT/FACGE/FACGT (and their LE/LT spellings); Input Denormal for a single or double
denormal flushed by FPCR.FZ (FPCR.FZ16 flushes half precision silently). Only active elements
raise them; FABS, FNEG and the moves raise nothing.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, Value

from zatile.hw._common import max_bytes
from zatile.hw.decoder import Op
from zatile.hw.vector.common import (VectorExecutionUnit, active_bytes, chunk_part,
                                     element_starts, is_last_chunk)

__all__ = ["VectorFpCompare"]

#: log2 of the floating-point element sizes in bytes: half, single, double.
_FP_SIZES = (1, 2, 3)
#: Exponent bits by element width.
_EXPONENT_BITS = {16: 5, 32: 8, 64: 11}

_SELECTS = (Op.FP_MAXNM, Op.FP_MINNM, Op.FP_MAX, Op.FP_MIN)
_COMPARES = (Op.FP_CMPGE, Op.FP_CMPGT, Op.FP_CMPEQ, Op.FP_CMPNE, Op.FP_CMPUN)
_SIGNS = (Op.FP_ABS, Op.FP_NEG)
_MOVES = (Op.FP_DUP_IMM, Op.FP_CPY_IMM)
#: Reductions and the element operation each applies to pairs.
_REDUCTIONS = {Op.FP_MAXNMV: Op.FP_MAXNM, Op.FP_MINNMV: Op.FP_MINNM, Op.FP_MAXV: Op.FP_MAX,
               Op.FP_MINV: Op.FP_MIN}
_MINIMA = (Op.FP_MINNM, Op.FP_MIN, Op.FP_MINNMV, Op.FP_MINV)
_NUMBER_SELECTS = (Op.FP_MAXNM, Op.FP_MINNM, Op.FP_MAXNMV, Op.FP_MINNMV)


def _fields(width: int) -> tuple[int, int]:
    """Exponent and fraction bits of an element of ``width`` bits."""
    exponent = _EXPONENT_BITS[width]
    return exponent, width - 1 - exponent


def _pattern(width: int, sign: int, exponent: int, fraction: int) -> int:
    exponent_bits, fraction_bits = _fields(width)
    return sign << (width - 1) | exponent << fraction_bits | fraction


def _infinity(width: int, sign: int) -> int:
    return _pattern(width, sign, (1 << _fields(width)[0]) - 1, 0)


def _default_nan(width: int) -> int:
    exponent_bits, fraction_bits = _fields(width)
    return _pattern(width, 0, (1 << exponent_bits) - 1, 1 << (fraction_bits - 1))


def _one(width: int) -> int:
    exponent_bits, _ = _fields(width)
    return _pattern(width, 0, (1 << (exponent_bits - 1)) - 1, 0)


def _expand_immediate(imm8: Value, width: int) -> Value:
    """``VFPExpandImm``: sign ``a``, exponent ``NOT(b):Replicate(b, E-3):cd``, fraction
    ``efgh`` then zeros, of ``imm8 = a:b:cd:efgh``."""
    exponent_bits, fraction_bits = _fields(width)
    b = imm8[6]
    return Cat(Const(0, fraction_bits - 4), imm8[:4], imm8[4:6],
               b.replicate(exponent_bits - 3), ~b, imm8[7])


def _replicated(value: Value | int, width: int, maxb: int) -> Value:
    """``value`` (``width`` bits) in every element of a ``maxb``-byte vector."""
    value = Const(value, width) if isinstance(value, int) else Value.cast(value)
    assert len(value) == width, (value, width)
    return Cat(*[value] * (8 * maxb // width))


def _byte_bits(byte_mask: Value) -> Value:
    """One bit per byte widened to eight bits per byte."""
    return Cat(*(bit.replicate(8) for bit in byte_mask))


class _Controls:
    """The registered description of the operation the element datapath performs."""

    def __init__(self):
        self.minimum = Signal()        # FMIN, FMINNM (else the maximum)
        self.numbers = Signal()        # FMAXNM/FMINNM: a quiet NaN loses to a number
        self.ordered = Signal()        # GE/GT: any NaN is Invalid Operation
        self.eq = Signal()
        self.ne = Signal()
        self.ge = Signal()
        self.gt = Signal()
        self.un = Signal()
        self.default_nan = Signal()    # FPCR.DN
        self.flush = Signal()          # FPCR.FZ (single, double)
        self.flush16 = Signal()        # FPCR.FZ16 (half)


def _element(m: Module, name: str, width: int, a: Value, b: Value, ctl: _Controls
             ) -> tuple[Value, Value, Value, Value]:
    """FPMax/FPMin(Num) and FPCompare of one element: the selected value, the compare's
    truth, Invalid Operation and Input Denormal."""
    exponent_bits, fraction_bits = _fields(width)
    flush = ctl.flush16 if width == 16 else ctl.flush

    def signal(suffix, bits=1):
        return Signal(bits, name=f"{name}_{suffix}")

    def classify(x: Value, tag: str):
        exponent, fraction = x[fraction_bits:width - 1], x[:fraction_bits]
        nan, snan, denormal = signal(f"{tag}_nan"), signal(f"{tag}_snan"), signal(f"{tag}_den")
        m.d.comb += [nan.eq(exponent.all() & fraction.any()),
                     snan.eq(exponent.all() & fraction.any() & ~fraction[-1]),
                     denormal.eq(~exponent.any() & fraction.any())]
        return nan, snan, denormal

    a_nan, _, a_denormal = classify(a, "a")
    b_nan, _, b_denormal = classify(b, "b")
    # FPMaxNum: one quiet NaN becomes the infinity that loses to any number.
    a_quiet, b_quiet = a_nan & a[fraction_bits - 1], b_nan & b[fraction_bits - 1]
    loser = Mux(ctl.minimum, Const(_infinity(width, 0), width),
                Const(_infinity(width, 1), width))
    x, y = signal("x", width), signal("y", width)
    m.d.comb += [x.eq(Mux(ctl.numbers & a_quiet & ~b_quiet, loser, a)),
                 y.eq(Mux(ctl.numbers & b_quiet & ~a_quiet, loser, b))]
    x_nan, x_snan, x_denormal = classify(x, "x")
    y_nan, y_snan, y_denormal = classify(y, "y")
    # Flushed operands: a denormal becomes the zero of its sign.
    x_flushed, y_flushed = signal("xf", width), signal("yf", width)
    m.d.comb += [x_flushed.eq(Mux(flush & x_denormal, Cat(Const(0, width - 1), x[-1]), x)),
                 y_flushed.eq(Mux(flush & y_denormal, Cat(Const(0, width - 1), y[-1]), y))]
    x_zero = ~x_flushed[:width - 1].any()
    y_zero = ~y_flushed[:width - 1].any()
    # Keys ordered like the values, -0 just below +0.
    x_key, y_key = signal("xk", width), signal("yk", width)
    m.d.comb += [x_key.eq(Mux(x_flushed[-1], ~x_flushed, x_flushed ^ (1 << (width - 1)))),
                 y_key.eq(Mux(y_flushed[-1], ~y_flushed, y_flushed ^ (1 << (width - 1))))]
    above, same = signal("above"), signal("same")
    m.d.comb += [above.eq(x_key > y_key), same.eq(x_key == y_key)]
    any_nan, any_snan = x_nan | y_nan, x_snan | y_snan
    both_zero = x_zero & y_zero
    greater = above & ~both_zero
    equal = same | both_zero
    truth = signal("truth")
    m.d.comb += truth.eq(Mux(any_nan, ctl.ne | ctl.un,
                             (ctl.eq & equal) | (ctl.ne & ~equal) | (ctl.ge & (greater | equal))
                             | (ctl.gt & greater)))
    # FPProcessNaNs: the first signalling NaN, else the first quiet one, quietened.
    quiet_bit = 1 << (fraction_bits - 1)
    nan = Mux(x_snan | ~y_snan & x_nan, x | quiet_bit, y | quiet_bit)
    chosen = Mux(Mux(ctl.minimum, ~above & ~same, above), x_flushed, y_flushed)
    result = signal("result", width)
    m.d.comb += result.eq(Mux(any_nan, Mux(ctl.default_nan, Const(_default_nan(width), width), nan),
                              chosen))
    invalid, denormal_input = signal("ioc"), signal("idc")
    m.d.comb += [invalid.eq(Mux(ctl.ordered, any_nan, any_snan)),
                 denormal_input.eq(flush & (a_denormal | b_denormal) if width != 16 else 0)]
    return result, truth, invalid, denormal_input


class VectorFpCompare(VectorExecutionUnit):
    """Floating-point compares, selects, sign operations, max/min reductions and immediate
    moves (module documentation).

    Parameters
    ----------
    config : EngineConfig
        ``max_svl`` sizes the vectors.

    Attributes
    ----------
    op : In(stream.Signature(VectorOpLayout))
    result : Out(stream.Signature(VectorResultLayout)), one transfer per ``op`` transfer, two
        cycles after it at the earliest (module documentation).

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    """

    #: The operations the unit performs.
    OPS = (*_COMPARES, *_SIGNS, *_MOVES, *_SELECTS, *_REDUCTIONS)

    def elaborate(self, platform):
        m = Module()
        maxb = max_bytes(self._config)
        payload = self.op.payload
        decoded = payload.decoded
        op, fields, flags, present = decoded.op, decoded.fields, decoded.flags, decoded.present
        out = self.result.payload

        # ---- the latched operation (x_ stage)
        x_valid = Signal()
        x_op = Signal(Op)
        x_esize = Signal(2)
        x_a, x_b = Signal(8 * maxb), Signal(8 * maxb)
        x_governing, x_svl_mask = Signal(maxb), Signal(maxb)
        x_steps = Signal(range(8))          # reduction steps still to do
        x_invalid, x_denormal = Signal(), Signal()
        ctl = _Controls()

        # ---- operands as the form gives them, per element size
        first = Value.cast(payload.first)
        second_vector = Value.cast(payload.second)
        is_reduction, is_move = Signal(), Signal()
        m.d.comb += [is_reduction.eq(Cat(*(op == o for o in _REDUCTIONS)).any()),
                     is_move.eq((op == Op.FP_DUP_IMM) | (op == Op.FP_CPY_IMM))]
        d_a, d_b = Signal(8 * maxb), Signal(8 * maxb)
        by_size = {}
        for log2 in _FP_SIZES:
            width = 8 << log2

            def signal(name, bits=8 * maxb):
                return Signal(bits, name=f"d{width}_{name}")
            sign_bits = _replicated(1 << (width - 1), width, maxb)
            constant, moved = signal("constant", width), signal("moved")
            second, left, right = signal("second"), signal("left"), signal("right")
            magnitude, identity, active = signal("magnitude"), signal("identity", width), \
                signal("active")
            a_value, b_value = signal("a"), signal("b")
            m.d.comb += [
                constant.eq(Mux(present.imm & fields.imm[0], _one(width), 0)),
                moved.eq(_replicated(_expand_immediate(fields.imm8[:8], width), width, maxb)),
                second.eq(Mux(present.zm, second_vector, _replicated(constant, width, maxb))),
                left.eq(Mux(flags.swapped, second, first)),
                right.eq(Mux(flags.swapped, first, second)),
                magnitude.eq(Mux(flags.absolute, ~sign_bits, Const(-1, 8 * maxb))),
                identity.eq(Mux(op == Op.FP_MAXV, _infinity(width, 1),
                                Mux(op == Op.FP_MINV, _infinity(width, 0),
                                    _default_nan(width)))),
                active.eq(_byte_bits(active_bytes(payload.governing, log2, maxb))),
                a_value.eq(Mux(is_reduction,
                               (first & active) | (_replicated(identity, width, maxb) & ~active),
                               left & magnitude)),
                b_value.eq(Mux(is_move, moved, Mux(op == Op.FP_NEG, sign_bits,
                                                  Mux(op == Op.FP_ABS, ~sign_bits,
                                                      right & magnitude)))),
            ]
            by_size[log2] = (a_value, b_value)
        with m.Switch(decoded.esize_log2):
            for log2 in _FP_SIZES:
                with m.Case(log2):
                    m.d.comb += [d_a.eq(by_size[log2][0]), d_b.eq(by_size[log2][1])]

        # ---- the element datapath: every element of every size in one chunk of
        # ``vector_bits_per_cycle`` (the chunk ``x_chunk`` of the vector, or of the element pairs
        # of a reduction step)
        chunk_bytes = self._config.vector_bits_per_cycle // 8
        chunks = maxb // chunk_bytes
        x_chunk = Signal(range(max(chunks, 2)))
        last_chunk = Signal()
        m.d.comb += last_chunk.eq(is_last_chunk(x_svl_mask, x_chunk, chunk_bytes))

        def this_chunk(value):
            return chunk_part(value, x_chunk, chunks)

        is_reduction_x = Cat(*(x_op == o for o in _REDUCTIONS)).any()
        reducing = Signal()
        m.d.comb += reducing.eq(is_reduction_x & (x_steps != 0))
        results, truths = Signal(8 * chunk_bytes), Signal(chunk_bytes)
        invalids, denormals = Signal(chunk_bytes), Signal(chunk_bytes)
        by_size = {}
        for log2 in _FP_SIZES:
            width, count = 8 << log2, maxb >> log2
            elements = [x_a[i * width:(i + 1) * width] for i in range(count)]
            # A reduction step combines the pairs (2i, 2i+1) into element i.
            evens = Cat(*elements[0::2], Const(0, 4 * maxb))
            odds = Cat(*elements[1::2], Const(0, 4 * maxb))
            a_in = Signal(8 * chunk_bytes, name=f"a_{width}")
            b_in = Signal(8 * chunk_bytes, name=f"b_{width}")
            m.d.comb += [a_in.eq(this_chunk(Mux(reducing, evens[:8 * maxb], x_a))),
                         b_in.eq(this_chunk(Mux(reducing, odds[:8 * maxb], x_b)))]
            parts = [_element(m, f"e{width}_{i}", width, a_in[i * width:(i + 1) * width],
                              b_in[i * width:(i + 1) * width], ctl)
                     for i in range(chunk_bytes >> log2)]
            pad = Const(0, (1 << log2) - 1)
            by_size[log2] = [Cat(*(p[0] for p in parts)),
                             *(Cat(*(Cat(p[k], pad) for p in parts)) for k in (1, 2, 3))]
        with m.Switch(x_esize):
            for log2 in _FP_SIZES:
                with m.Case(log2):
                    m.d.comb += [target.eq(value) for target, value in
                                 zip((results, truths, invalids, denormals), by_size[log2])]

        # ---- element masks at the latched size
        starts, active = Signal(maxb), Signal(maxb)
        low_element = Signal(maxb)
        with m.Switch(x_esize):
            for log2 in _FP_SIZES:
                with m.Case(log2):
                    m.d.comb += [starts.eq(element_starts(log2, maxb)),
                                 active.eq(active_bytes(x_governing, log2, maxb)),
                                 low_element.eq((1 << (1 << log2)) - 1)]
        # The flags of a reduction step come from its pairs only: the first
        # 2^(steps - 1) elements of the result.
        step_bytes = Signal(range(maxb + 1))
        m.d.comb += step_bytes.eq(Const(1, maxb.bit_length()) << (x_steps - 1 + x_esize)[:3])
        step_lanes = Signal(maxb)
        m.d.comb += step_lanes.eq(Cat(*(Const(b) < step_bytes for b in range(maxb))))
        is_select = Cat(*(x_op == o for o in _SELECTS)).any()
        is_compare = Cat(*(x_op == o for o in _COMPARES)).any()
        counted = Signal(maxb)
        m.d.comb += counted.eq(Mux(reducing, step_lanes,
                                   Mux(is_select | is_compare, active & x_svl_mask, 0)) & starts)
        chunk_invalid, chunk_denormal = Signal(), Signal()
        m.d.comb += [chunk_invalid.eq((invalids & this_chunk(counted)).any()),
                     chunk_denormal.eq((denormals & this_chunk(counted)).any())]

        # ---- the element results, gathered chunk by chunk (the last one as it is made)
        x_results = [Signal(8 * chunk_bytes, name=f"x_results_{k}") for k in range(chunks)]
        x_truths = [Signal(chunk_bytes, name=f"x_truths_{k}") for k in range(chunks)]
        whole_results, whole_truths = Signal(8 * maxb), Signal(maxb)
        m.d.comb += [
            whole_results.eq(Cat(Mux(x_chunk == k, results, x_results[k])
                                 for k in range(chunks))),
            whole_truths.eq(Cat(Mux(x_chunk == k, truths, x_truths[k]) for k in range(chunks))),
        ]

        # ---- handshakes: take an op when the x_ stage is empty or finishing
        advance = Signal()
        finishing = Signal()
        m.d.comb += [advance.eq(~self.result.valid | self.result.ready),
                     finishing.eq(x_valid & ~reducing & (is_reduction_x | last_chunk) & advance),
                     self.op.ready.eq(~x_valid | finishing)]
        with m.If(self.result.ready):
            m.d.sync += self.result.valid.eq(0)
        with m.If(finishing):
            m.d.sync += [x_valid.eq(0), self.result.valid.eq(1)]
        with m.If(x_valid & (reducing | ~is_reduction_x & ~last_chunk)):
            m.d.sync += [x_chunk.eq(Mux(last_chunk, 0, x_chunk + 1)),
                         x_invalid.eq(x_invalid | chunk_invalid),
                         x_denormal.eq(x_denormal | chunk_denormal)]
            for k in range(chunks):
                with m.If(x_chunk == k):
                    m.d.sync += [x_results[k].eq(results), x_truths[k].eq(truths)]
        with m.If(x_valid & reducing):
            for k in range(chunks):
                with m.If(x_chunk == k):
                    m.d.sync += x_a.word_select(k, 8 * chunk_bytes).eq(results)
            with m.If(last_chunk):
                m.d.sync += x_steps.eq(x_steps - 1)
        with m.If(self.op.valid & self.op.ready):
            fpcr = payload.fpcr
            m.d.sync += [
                x_valid.eq(1), x_op.eq(op), x_esize.eq(decoded.esize_log2[:2]),
                x_a.eq(d_a), x_b.eq(d_b), x_governing.eq(payload.governing),
                x_svl_mask.eq(payload.svl_mask), x_chunk.eq(0),
                x_steps.eq(Mux(is_reduction, payload.svl_log2 - decoded.esize_log2, 0)),
                x_invalid.eq(0), x_denormal.eq(0),
                ctl.minimum.eq(Cat(*(op == o for o in _MINIMA)).any()),
                ctl.numbers.eq(Cat(*(op == o for o in _NUMBER_SELECTS)).any()),
                ctl.ordered.eq((op == Op.FP_CMPGE) | (op == Op.FP_CMPGT)),
                ctl.eq.eq(op == Op.FP_CMPEQ), ctl.ne.eq(op == Op.FP_CMPNE),
                ctl.ge.eq(op == Op.FP_CMPGE), ctl.gt.eq(op == Op.FP_CMPGT),
                ctl.un.eq(op == Op.FP_CMPUN),
                ctl.default_nan.eq(fpcr[25]), ctl.flush.eq(fpcr[24]), ctl.flush16.eq(fpcr[19]),
            ]

        # ---- the result, registered
        vector = Signal(8 * maxb)
        lanes = Signal(maxb)
        with m.Switch(x_op):
            with m.Case(*_SELECTS):
                m.d.comb += [vector.eq(whole_results), lanes.eq(active)]
            with m.Case(Op.FP_ABS):
                m.d.comb += [vector.eq(x_a & x_b), lanes.eq(active)]
            with m.Case(Op.FP_NEG):
                m.d.comb += [vector.eq(x_a ^ x_b), lanes.eq(active)]
            with m.Case(Op.FP_CPY_IMM):
                m.d.comb += [vector.eq(x_b), lanes.eq(active)]
            with m.Case(Op.FP_DUP_IMM):
                m.d.comb += [vector.eq(x_b), lanes.eq(Const(-1, maxb))]
            with m.Case(*_REDUCTIONS):
                m.d.comb += [vector.eq(x_a & _byte_bits(low_element)), lanes.eq(Const(-1, maxb))]
        compare_result = Signal(maxb)
        m.d.comb += compare_result.eq(whole_truths & active & starts & x_svl_mask)
        invalid, denormal = Signal(), Signal()
        m.d.comb += [invalid.eq(x_invalid | Mux(is_reduction_x, 0, chunk_invalid)),
                     denormal.eq(x_denormal | Mux(is_reduction_x, 0, chunk_denormal))]
        with m.If(finishing):
            m.d.sync += [
                out.vector.eq(vector),
                out.vector_lanes.eq(lanes & x_svl_mask),
                out.predicate.eq(compare_result),
                out.predicate_lanes.eq(Mux(is_compare, x_svl_mask, 0)),
                out.scalar.eq(0), out.nzcv.eq(0),
                out.fpsr_flags.eq(Cat(invalid, Const(0, 6), denormal)),
            ]
        return m
