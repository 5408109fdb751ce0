"""The vector unit's floating-point compares and selects: FMAX/FMIN(NM), FABS/FNEG, the
compares, the max/min reductions and the immediate moves.

An execution unit of :mod:`zatile.hw.vector` (payloads in :mod:`zatile.hw.vector.common`).
docs/isa.md, "Streaming SVE floating point", states the semantics; the reference model
(``sim/model/sve_fp.py`` over ``sim/fpref.py``) is the oracle of
``tests/test_hw_vector_fp_compare.py``.

Nothing here rounds: every result is one of the operands (flushed to a signed zero when
FPCR.FZ/FZ16 flushes a denormal), a NaN, or a truth. One datapath serves every element size
(half, single, double) of a chunk of the vector (``_elements``), in 16-bit segments, the half
precision element. One subtraction of the operands' bit patterns, its carries cut at the
element boundaries, gives each element's unsigned ``<``, and the segments of its difference
being all zero its ``==``; with the signs these order the values (for operands of one sign the
patterns order the magnitudes), ``-0`` just below ``+0`` and a flushed denormal as the zero of
its sign. That order serves the compares (which treat the zeros as equal) and the selects
(for which FMAX(+0, -0) is +0). Each element's fields are classified (NaN, denormal, zero)
and its result decided (which operand, or a NaN) at each element size; the decisions reach
every segment of the element, and each result bit is the chosen operand's bit (cleared below
the sign for a flushed denormal, the quiet bit set for a NaN) or the default NaN's bit.

The operands are formed in front of the datapath once for every size: the constants of an
element size (its sign bits, the immediates, a reduction's identity) are 64-bit patterns
repeated along the vector. FCMLT/FCMLE (#0.0), which compare 0 with the element, compare the
element with 0 and exchange the truths of ``<`` and ``>``.

Timing: the op is latched (``x_`` registers) on the cycle it is taken and the result is
registered on the next, so an element operation's result leaves two cycles after its op. A
reduction (FMAXV, FMINNMV, ...) follows ``FPReducePredicated``: inactive elements become the
operation's identity, then each step combines pairs of elements with the same element
datapath, the second operand the vector shifted down by the pairs' distance: first the
elements ``(2i, 2i+1)``, their results left in place at element ``2i``, then those results two
elements apart, four, ..., which is the model's recursive halving. It takes
``log2(SVL / esize)`` more steps, a cycle each, and a last cycle that passes element 0 through
the datapath to the result. The datapath covers ``vector_bits_per_cycle`` bits (a whole vector
by default): with fewer, an element operation and each reduction step take ``SVL /
vector_bits_per_cycle`` cycles, one chunk each (a step writes its results over the chunk it
has just read; its partners are above it). FABS, FNEG and the moves pass an operand through
the datapath too (FABS clearing, FNEG flipping, the sign bits).

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
                                     element_starts, is_last_chunk, per_size)

__all__ = ["VectorFpCompare"]

#: log2 of the floating-point element sizes in bytes: half, single, double.
_FP_SIZES = (1, 2, 3)
#: Exponent bits by element width.
_EXPONENT_BITS = {16: 5, 32: 8, 64: 11}
#: Bits of a segment of the datapath: the smallest element.
_SEGMENT_BITS = 16
#: Bits of the patterns the constants of every element size repeat in: the largest element.
_PATTERN_BITS = 64

_SELECTS = (Op.FP_MAXNM, Op.FP_MINNM, Op.FP_MAX, Op.FP_MIN)
#: Compares: op -> whether it is true when the first operand is less than, equal to or greater
#: than the second, and when they are unordered.
_COMPARE_TRUTHS = {Op.FP_CMPGE: (0, 1, 1, 0), Op.FP_CMPGT: (0, 0, 1, 0),
                   Op.FP_CMPEQ: (0, 1, 0, 0), Op.FP_CMPNE: (1, 0, 1, 1),
                   Op.FP_CMPUN: (0, 0, 0, 1)}
_COMPARES = tuple(_COMPARE_TRUTHS)
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


def _replicated(value: Value | int, width: int, bits: int) -> Value:
    """``value`` (``width`` bits) in every element of a ``bits``-bit vector."""
    value = Const(value, width) if isinstance(value, int) else Value.cast(value)
    assert len(value) == width, (value, width)
    return Cat(*[value] * (bits // width))


def _byte_bits(byte_mask: Value) -> Value:
    """One bit per byte widened to eight bits per byte."""
    return Cat(*(bit.replicate(8) for bit in byte_mask))


def _per_size(m: Module, esize_log2: Value, name: str, width: int, value_of) -> Signal:
    """:func:`~zatile.hw.vector.common.per_size` over the floating-point element sizes."""
    return per_size(m, esize_log2, name, width, value_of, sizes=_FP_SIZES)


class _Controls:
    """The registered description of the operation the element datapath performs."""

    def __init__(self):
        self.minimum = Signal()        # FMIN, FMINNM (else the maximum)
        self.numbers = Signal()        # FMAXNM/FMINNM: a quiet NaN loses to a number
        self.ordered = Signal()        # GE/GT: any NaN is Invalid Operation
        self.less = Signal()           # the compare's truth by the operands' order
        self.equal = Signal()
        self.greater = Signal()
        self.unordered = Signal()
        self.default_nan = Signal()    # FPCR.DN
        self.flush = Signal()          # FPCR.FZ (single, double)
        self.flush16 = Signal()        # FPCR.FZ16 (half)
        self.moving = Signal()         # FMOV: the result passes the second operand (else the first)
        self.clear_sign = Signal()     # FABS
        self.flip_sign = Signal()      # FNEG


class _Decision:
    """One element's decisions, which reach every segment of it."""

    NAMES = ("take_first", "zero", "nan", "truth", "invalid", "denormal")

    def __init__(self, name: str):
        self.take_first = Signal(name=f"{name}_take_first")  # the result's bits: a's, else b's
        self.zero = Signal(name=f"{name}_zero")               # a flushed zero: clear below sign
        self.nan = Signal(name=f"{name}_nan")                 # a NaN result: quieten
        self.truth = Signal(name=f"{name}_truth")
        self.invalid = Signal(name=f"{name}_invalid")
        self.denormal = Signal(name=f"{name}_denormal")


def _element(m: Module, name: str, a: Value, b: Value, below: Value, equal: Value,
             ctl: _Controls) -> _Decision:
    """FPMax/FPMin(Num) and FPCompare of one element from its operands ``a`` and ``b``,
    whether ``a`` is below ``b`` as unsigned patterns and whether they are equal."""
    width = len(a)
    exponent_bits, fraction_bits = _fields(width)
    flush = ctl.flush16 if width == 16 else ctl.flush

    def classify(x: Value, tag: str):
        exponent, fraction = x[fraction_bits:width - 1], x[:fraction_bits]
        nan, quiet = Signal(name=f"{name}_{tag}_nan"), Signal(name=f"{name}_{tag}_quiet")
        denormal = Signal(name=f"{name}_{tag}_den")
        zero = Signal(name=f"{name}_{tag}_zero")   # a zero, or a denormal flushed to one
        m.d.comb += [nan.eq(exponent.all() & fraction.any()), quiet.eq(fraction[-1]),
                     denormal.eq(~exponent.any() & fraction.any()),
                     zero.eq(~exponent.any() & (flush | ~fraction.any()))]
        return nan, quiet, denormal, zero

    a_nan, a_quiet_bit, a_denormal, a_zero = classify(a, "a")
    b_nan, b_quiet_bit, b_denormal, b_zero = classify(b, "b")
    a_sign, b_sign = a[-1], b[-1]
    a_quiet, b_quiet = a_nan & a_quiet_bit, b_nan & b_quiet_bit
    a_signalling, b_signalling = a_nan & ~a_quiet_bit, b_nan & ~b_quiet_bit
    # FPMaxNum: one quiet NaN becomes the infinity that loses to any number: the other operand.
    a_loses = ctl.numbers & a_quiet & ~b_quiet
    b_loses = ctl.numbers & b_quiet & ~a_quiet
    any_nan = Signal(name=f"{name}_any_nan")
    m.d.comb += any_nan.eq(a_nan & ~a_loses | b_nan & ~b_loses)
    # The order of the values, -0 just below +0 and a flushed denormal the zero of its sign.
    both_zero = a_zero & b_zero
    above, same = Signal(name=f"{name}_above"), Signal(name=f"{name}_same")
    m.d.comb += [
        above.eq(Mux(a_sign == b_sign, Mux(a_sign, below, ~below & ~equal) & ~both_zero,
                     b_sign)),
        same.eq((a_sign == b_sign) & (equal | both_zero)),
    ]
    decision = _Decision(name)
    # FPProcessNaNs: the first signalling NaN, else the first quiet one, quietened.
    first_nan = a_signalling | ~b_signalling & a_nan
    first_value = b_loses | ~a_loses & Mux(ctl.minimum, ~above & ~same, above)
    greater = above & ~both_zero
    equal_value = same | both_zero
    m.d.comb += [
        decision.take_first.eq(Mux(any_nan, first_nan, first_value)),
        decision.zero.eq(~any_nan & Mux(decision.take_first, a_zero, b_zero)),
        decision.nan.eq(any_nan),
        decision.truth.eq(Mux(any_nan, ctl.unordered,
                              ctl.less & ~greater & ~equal_value | ctl.equal & equal_value
                              | ctl.greater & greater)),
        decision.invalid.eq(Mux(ctl.ordered, any_nan, a_signalling | b_signalling)),
        decision.denormal.eq(flush & (a_denormal | b_denormal) if width != 16 else 0),
    ]
    return decision


def _elements(m: Module, esize_log2: Value, a: Value, b: Value, passing: Value,
              ctl: _Controls) -> tuple[Value, Value, Value, Value]:
    """The element datapath over the chunks ``a`` and ``b`` of elements of ``2^esize_log2``
    bytes: the selects' results (or, when ``passing``, an operand passed through, its sign
    cleared by FABS and flipped by FNEG), and one bit per byte (at each element's first byte)
    of the compares' truths, Invalid Operation and Input Denormal.

    One subtraction ``a + ~b + 1`` of the chunk, a spacer bit below each segment: at the first
    segment of an element both its operand bits are 1 (the ``+ 1``, its sum bit the carry out
    of the element below), inside an element 1 and 0 (it passes the carry on)."""
    segments = len(a) // _SEGMENT_BITS

    def segment(value, index):
        return value[_SEGMENT_BITS * index:_SEGMENT_BITS * (index + 1)]

    def segments_of(log2):
        return 1 << log2 >> 1

    starts = _per_size(m, esize_log2, "segment_starts", segments, lambda log2: Cat(
        Const(index % segments_of(log2) == 0) for index in range(segments)))
    total = Signal((_SEGMENT_BITS + 1) * segments + 1)
    m.d.comb += total.eq(Cat(Cat(Const(1), segment(a, k)) for k in range(segments))
                         + Cat(Cat(starts[k], ~segment(b, k)) for k in range(segments)))
    # At each segment, as if it were the last of its element.
    carries = Cat(total[(_SEGMENT_BITS + 1) * (k + 1)] for k in range(segments))
    segment_equal = Signal(segments)
    m.d.comb += segment_equal.eq(Cat(
        ~total[(_SEGMENT_BITS + 1) * k + 1:(_SEGMENT_BITS + 1) * (k + 1)].any()
        for k in range(segments)))

    decisions = {}
    for log2 in _FP_SIZES:
        width, count = 8 << log2, segments_of(log2)
        decisions[log2] = [
            _element(m, f"e{width}_{i}", a[i * width:(i + 1) * width],
                     b[i * width:(i + 1) * width], ~carries[(i + 1) * count - 1],
                     segment_equal[i * count:(i + 1) * count].all(), ctl)
            for i in range(len(a) // width)]
    # The result's decisions at every segment of their element, the compare's truth and the
    # exceptions at the first.
    def at_segments(name, first_only):
        return _per_size(m, esize_log2, f"segment_{name}", segments, lambda log2: Cat(
            getattr(decisions[log2][index // segments_of(log2)], name)
            if index % segments_of(log2) == 0 or not first_only else Const(0)
            for index in range(segments)))

    def per_bit(segment_bits):
        return Cat(bit.replicate(_SEGMENT_BITS) for bit in segment_bits)

    def pattern(name, value_of):
        return _per_size(m, esize_log2, name, len(a),
                         lambda log2: _replicated(value_of(8 << log2), 8 << log2, len(a)))

    take_first, nan, zero = Signal(segments), Signal(segments), Signal(segments)
    m.d.comb += [
        take_first.eq(Mux(passing, ~ctl.moving.replicate(segments),
                          at_segments("take_first", False))),
        nan.eq(at_segments("nan", False) & ~passing.replicate(segments)),
        zero.eq(at_segments("zero", False) & ~passing.replicate(segments)),
    ]
    sign_bits = pattern("sign_bits", lambda width: 1 << (width - 1))
    quiet_bits = pattern("quiet_bits", lambda width: 1 << (_fields(width)[1] - 1))
    default_nan = pattern("default_nan", _default_nan)
    chosen, default_bits = Signal(len(a)), Signal(len(a))
    cleared, results = Signal(len(a)), Signal(len(a))
    m.d.comb += [
        chosen.eq(a & per_bit(take_first) | b & ~per_bit(take_first)),
        default_bits.eq(per_bit(nan & ctl.default_nan.replicate(segments))),
        cleared.eq(per_bit(zero) & ~sign_bits | ctl.clear_sign.replicate(len(a)) & sign_bits),
        results.eq((default_bits & default_nan
                    | ~default_bits & (chosen & ~cleared | per_bit(nan) & quiet_bits))
                   ^ ctl.flip_sign.replicate(len(a)) & sign_bits),
    ]

    def first_bytes(name):
        return Cat(Cat(bit, Const(0, _SEGMENT_BITS // 8 - 1)) for bit in at_segments(name, True))

    return results, first_bytes("truth"), first_bytes("invalid"), first_bytes("denormal")


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
        x_distance = Signal(range(maxb.bit_length() + 1))  # log2 of a step's pairs' bytes apart
        x_invalid, x_denormal = Signal(), Signal()
        ctl = _Controls()

        # ---- operands as the form gives them; the constants of the element size repeat
        # every 64 bits
        first = Value.cast(payload.first)
        second_vector = Value.cast(payload.second)
        is_reduction, is_move = Signal(), Signal()
        m.d.comb += [is_reduction.eq(Cat(*(op == o for o in _REDUCTIONS)).any()),
                     is_move.eq((op == Op.FP_DUP_IMM) | (op == Op.FP_CPY_IMM))]
        d_size = decoded.esize_log2

        def d_pattern(name, value_of):
            return _per_size(m, d_size, f"d_{name}", _PATTERN_BITS, lambda log2: _replicated(
                value_of(8 << log2), 8 << log2, _PATTERN_BITS))

        sign_bits = d_pattern("sign_bits", lambda width: 1 << (width - 1))
        one = d_pattern("one", _one)
        moved = d_pattern("moved", lambda width: _expand_immediate(fields.imm8[:8], width))
        identity = d_pattern("identity", lambda width: Mux(
            op == Op.FP_MAXV, _infinity(width, 1),
            Mux(op == Op.FP_MINV, _infinity(width, 0), _default_nan(width))))
        magnitude, constant = Signal(_PATTERN_BITS), Signal(_PATTERN_BITS)
        m.d.comb += magnitude.eq(Mux(flags.absolute, ~sign_bits, Const(-1, _PATTERN_BITS)))
        m.d.comb += constant.eq(Mux(is_move, moved, Mux(present.imm & fields.imm[0], one, 0)))
        active = Signal(8 * maxb)
        m.d.comb += active.eq(_byte_bits(_per_size(
            m, d_size, "d_active", maxb, lambda log2: active_bytes(payload.governing, log2, maxb))))
        vector_bits = 8 * maxb
        d_a, d_b = Signal(vector_bits), Signal(vector_bits)
        m.d.comb += [
            d_a.eq(Mux(is_reduction,
                       first & active | _replicated(identity, _PATTERN_BITS, vector_bits) & ~active,
                       first & _replicated(magnitude, _PATTERN_BITS, vector_bits))),
            d_b.eq(Mux(present.zm,
                       second_vector & _replicated(magnitude, _PATTERN_BITS, vector_bits),
                       _replicated(constant, _PATTERN_BITS, vector_bits))),
        ]

        # ---- the element datapath: one chunk of ``vector_bits_per_cycle`` (the chunk
        # ``x_chunk`` of the operands; in a reduction step, of the vector and its partners)
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

        # A reduction step combines each element taking part (at ``pair_starts``) with its
        # partner, 2^x_distance bytes above it, and leaves the pair's result in its place.
        partners, pair_starts = Signal(8 * maxb), Signal(maxb)
        with m.Switch(x_distance):
            for log2 in range(1, maxb.bit_length() - 1):
                with m.Case(log2):
                    m.d.comb += [partners.eq(x_a[8 << log2:]),
                                 pair_starts.eq(element_starts(log2 + 1, maxb))]
        a_in, b_in = Signal(8 * chunk_bytes), Signal(8 * chunk_bytes)
        m.d.comb += [a_in.eq(this_chunk(x_a)),
                     b_in.eq(this_chunk(Mux(reducing, partners, x_b)))]
        is_select = Cat(*(x_op == o for o in _SELECTS)).any()
        results, truths, invalids, denormals = _elements(
            m, x_esize, a_in, b_in, ~is_select & ~reducing, ctl)

        # ---- element masks at the latched size
        starts, active = Signal(maxb), Signal(maxb)
        low_element = Signal(maxb)
        with m.Switch(x_esize):
            for log2 in _FP_SIZES:
                with m.Case(log2):
                    m.d.comb += [starts.eq(element_starts(log2, maxb)),
                                 active.eq(active_bytes(x_governing, log2, maxb)),
                                 low_element.eq((1 << (1 << log2)) - 1)]
        is_compare = Cat(*(x_op == o for o in _COMPARES)).any()
        counted = Signal(maxb)
        m.d.comb += counted.eq(Mux(reducing, pair_starts,
                                   Mux(is_select | is_compare, active, 0) & starts) & x_svl_mask)
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
                m.d.sync += [x_steps.eq(x_steps - 1), x_distance.eq(x_distance + 1)]
        with m.If(self.op.valid & self.op.ready):
            fpcr = payload.fpcr

            def compare_truth(index):
                return Cat(*(op == o for o, truth in _COMPARE_TRUTHS.items() if truth[index])).any()

            less, greater = compare_truth(0), compare_truth(2)
            m.d.sync += [
                x_valid.eq(1), x_op.eq(op), x_esize.eq(decoded.esize_log2[:2]),
                x_a.eq(d_a), x_b.eq(d_b), x_governing.eq(payload.governing),
                x_svl_mask.eq(payload.svl_mask), x_chunk.eq(0),
                x_steps.eq(Mux(is_reduction, payload.svl_log2 - decoded.esize_log2, 0)),
                x_distance.eq(decoded.esize_log2),
                x_invalid.eq(0), x_denormal.eq(0),
                ctl.minimum.eq(Cat(*(op == o for o in _MINIMA)).any()),
                ctl.numbers.eq(Cat(*(op == o for o in _NUMBER_SELECTS)).any()),
                ctl.ordered.eq((op == Op.FP_CMPGE) | (op == Op.FP_CMPGT)),
                # FCMLT/FCMLE #0.0 compare 0 with the element: the element with 0, reversed.
                ctl.less.eq(Mux(flags.swapped, greater, less)),
                ctl.equal.eq(compare_truth(1)),
                ctl.greater.eq(Mux(flags.swapped, less, greater)),
                ctl.unordered.eq(compare_truth(3)),
                ctl.default_nan.eq(fpcr[25]), ctl.flush.eq(fpcr[24]), ctl.flush16.eq(fpcr[19]),
                ctl.moving.eq(is_move), ctl.clear_sign.eq(op == Op.FP_ABS),
                ctl.flip_sign.eq(op == Op.FP_NEG),
            ]

        # ---- the result, registered: a reduction's is its element 0, which the datapath passes
        # through on its last cycle
        vector = Signal(8 * maxb)
        lanes = Signal(maxb)
        m.d.comb += [
            vector.eq(whole_results
                      & Mux(is_reduction_x, _byte_bits(low_element), Const(-1, 8 * maxb))),
            lanes.eq(Mux(is_reduction_x | (x_op == Op.FP_DUP_IMM), Const(-1, maxb),
                         Mux(is_compare, 0, active))),
        ]
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
