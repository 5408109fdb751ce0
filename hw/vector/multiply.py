"""The vector unit's multiplier and divider: integer products, multiply-add and division.

An execution unit of :mod:`zatile.hw.vector` (payloads in :mod:`zatile.hw.vector.common`).
docs/isa.md, "Streaming SVE integer arithmetic", states the semantics; the reference model is the
oracle of ``tests/test_hw_vector_multiply.py``.

The unit takes an op, latches its operands and works through the vector 64 bits (one *chunk*)
at a time, so one multiplier array of sixteen 16×16 unsigned multipliers serves every element
size:

* ``x_`` (execute): the chunk's operands feed the array. For ``.H``/``.S``/``.D`` elements the
  multiplier of blocks ``i`` and ``j`` contributes only when both blocks lie in one element, so
  the sum of the blocks is each element's unsigned double-width product at twice its position;
  for ``.B`` elements eight of the multipliers take one pair of bytes each, placed so that their
  products land at the same positions. SQRDMULH's rounding constant joins the sum.
* ``p_`` (product): the low and high halves of each product; signed high halves by subtracting
  the operand corrections (``a·b`` signed is ``a·b`` unsigned minus ``2^n·b`` when ``a < 0``
  and ``2^n·a`` when ``b < 0``); the accumulation of MLA/MLS; the saturation of the doubling
  forms. The additions on whole chunks stop their carries at element boundaries.

A multiply takes ``SVL/64 + 2`` cycles. Widening forms (SMULL/UMULL/SQDMULL, bottom or top)
extend their narrow elements to the wide element before the array, whose exact low half is
then the result.

Division (SDIV/UDIV and the reversed forms, ``.S`` and ``.D``) runs one element at a time
through a radix-2 restoring divider of 64 bits: a set-up cycle (magnitudes and signs), one
cycle per quotient bit (32 or 64) and a finishing cycle (sign, division by zero gives 0), so
``SVL/esize · (esize + 2) + 1`` cycles, at most 545 at SVL 512. ``INT_MIN / -1`` wraps to
``INT_MIN`` because the magnitude ``2^(n-1)`` negates to itself modulo ``2^n``.

A predicated form writes only its active elements (merging); the destination is the form's
(``Zda`` of MLA/MLS, ``Zdn`` of MAD/MSB): both take ``third ± first·second``.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import data

from zatile.hw._common import max_bytes
from zatile.hw.decoder import Op
from zatile.hw.vector.common import ELEMENT_SIZES, VectorExecutionUnit, active_bytes

__all__ = ["VectorMultiplier"]

#: Bits of one chunk, the part of the vector the multiplier array takes per cycle.
CHUNK = 64
#: Bits of one block of the array (one multiplier's operand).
BLOCK = 16
_BLOCKS = CHUNK // BLOCK

#: Multiplier of the array and placement (0: low byte, 1: high byte of the block) that serves
#: byte ``k`` of a ``.B`` chunk: block ``i`` of the first operand times block ``j`` of the
#: second weighs ``2^(16(i + j))``, a pair placed in the high bytes ``2^16`` more, and byte
#: ``k``'s product belongs at ``2^(16k)``.
_BYTE_MULTIPLIERS = ((0, 0, 0), (0, 1, 0), (1, 1, 0), (1, 2, 0), (2, 2, 0), (2, 3, 0),
                     (3, 2, 1), (3, 3, 1))

#: Operations: op -> (signed operands, result kind). Kinds: ``low`` (the low half of the
#: product), ``accumulate``/``subtract`` (``third ± low``), ``high`` (the high half),
#: ``doubling_high`` (SQDMULH/SQRDMULH), ``doubling_long`` (SQDMULL), ``divide``.
_OPERATIONS = {
    Op.INT_MUL: (False, "low"), Op.INT_MLA: (False, "accumulate"),
    Op.INT_MLS: (False, "subtract"), Op.INT_SMULH: (True, "high"),
    Op.INT_UMULH: (False, "high"), Op.INT_SDIV: (True, "divide"),
    Op.INT_UDIV: (False, "divide"), Op.INT_SQDMULH: (True, "doubling_high"),
    Op.INT_SQRDMULH: (True, "doubling_high"), Op.INT_SMULL: (True, "low"),
    Op.INT_UMULL: (False, "low"), Op.INT_SQDMULL: (True, "doubling_long"),
}
_KINDS = ("low", "accumulate", "subtract", "high", "doubling_high", "doubling_long", "divide")
#: The widening operations: their operands are the even or odd narrow elements.
_WIDENING = (Op.INT_SMULL, Op.INT_UMULL, Op.INT_SQDMULL)

#: What the unit remembers of an op while it works on it.
_ControlLayout = data.StructLayout({
    "esize_log2": range(4), "signed": 1, "widening": 1, "top": 1, "rounding": 1,
    "kind": data.StructLayout({kind: 1 for kind in _KINDS})})


class VectorMultiplier(VectorExecutionUnit):
    """Integer multiplication, multiply-add and division over 64-bit chunks (module
    documentation).

    Parameters
    ----------
    config : EngineConfig
        ``max_svl`` sizes the vectors.

    Attributes
    ----------
    op : In(stream.Signature(VectorOpLayout)), ready only while the unit is idle
    result : Out(stream.Signature(VectorResultLayout)), one transfer per ``op`` transfer,
        ``SVL/64 + 2`` cycles after it for a multiplication, up to 545 for a division.

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
        width = 8 * maxb
        chunks = width // CHUNK
        payload = self.op.payload
        decoded = payload.decoded
        fields, flags, present = decoded.fields, decoded.flags, decoded.present
        out = self.result.payload

        # ---- accepting an op: its operands, control and the bytes its result writes
        immediate = Signal(signed(64))
        m.d.comb += immediate.eq(fields.imm8)
        replicated = Signal(width)
        lanes = Signal(maxb)
        with m.Switch(decoded.esize_log2):
            for log2 in ELEMENT_SIZES:
                with m.Case(log2):
                    m.d.comb += [
                        replicated.eq(Cat(*[immediate[:8 << log2]] * (maxb >> log2))),
                        lanes.eq(Mux(present.pg, active_bytes(payload.governing, log2, maxb),
                                     Const(-1, maxb)) & payload.svl_mask)]
        first, third = Value.cast(payload.first), Value.cast(payload.third)
        second = Signal(width)
        m.d.comb += second.eq(Mux(present.zm, Value.cast(payload.second), replicated))
        control = Signal(_ControlLayout)
        with m.Switch(decoded.op):
            for op, (signed_, kind) in _OPERATIONS.items():
                with m.Case(op):
                    m.d.comb += [control.signed.eq(signed_), control.kind[kind].eq(1),
                                 control.widening.eq(op in _WIDENING),
                                 control.rounding.eq(op == Op.INT_SQRDMULH)]
        m.d.comb += [control.esize_log2.eq(decoded.esize_log2), control.top.eq(flags.top)]

        # The operands, shifted down a chunk (or a divided element) at a time.
        x_first, x_second, x_third = (Signal(width, name=f"x_{name}")
                                      for name in ("first", "second", "third"))
        x_control = Signal(_ControlLayout)
        x_last = Signal(range(chunks))          # the index of the last chunk inside the SVL
        x_index = Signal(range(chunks))
        w_lanes = Signal(maxb)
        d_second_word = Signal()            # the divider is at the second .S element of a chunk
        # The result, one register per chunk, each loaded whole.
        w_chunks = [Signal(CHUNK, name=f"w_chunk_{k}") for k in range(chunks)]
        w_write = Signal()
        w_index = Signal(range(chunks))
        w_value = Signal(CHUNK)
        for k, chunk in enumerate(w_chunks):
            with m.If(w_write & (w_index == k)):
                m.d.sync += chunk.eq(w_value)
        m.d.comb += [out.vector.eq(Cat(*w_chunks)), out.vector_lanes.eq(w_lanes)]

        with m.If(self.result.valid & self.result.ready):
            m.d.sync += self.result.valid.eq(0)
        last = Signal(range(chunks))
        for k in range(chunks):
            with m.If(payload.svl_mask[CHUNK // 8 * k]):
                m.d.comb += last.eq(k)
        accept = Signal()
        m.d.comb += accept.eq(self.op.valid & self.op.ready)
        with m.If(accept):
            m.d.sync += [
                x_first.eq(Mux(flags.reversed, second, first)),
                x_second.eq(Mux(flags.reversed, first, second)),
                x_third.eq(third), x_control.eq(control), x_index.eq(0),
                x_last.eq(last), w_lanes.eq(lanes), d_second_word.eq(0)]

        # ---- x: the multiplier array on the chunk at the bottom of the operands
        x_valid = Signal()
        x_a, x_b = Signal(CHUNK), Signal(CHUNK)
        _widen(m, x_control, x_first[:CHUNK], x_a)
        _widen(m, x_control, x_second[:CHUNK], x_b)
        x_product = Signal(2 * CHUNK)
        m.d.comb += x_product.eq(_product_array(m, x_control, x_a, x_b))

        p_valid, p_last = Signal(), Signal()
        p_index = Signal(range(chunks))
        p_control = Signal(_ControlLayout)
        p_product = Signal(2 * CHUNK)
        p_a, p_b, p_c = Signal(CHUNK), Signal(CHUNK), Signal(CHUNK)
        m.d.sync += p_valid.eq(x_valid)
        with m.If(x_valid):
            m.d.sync += [p_last.eq(x_index == x_last), p_index.eq(x_index),
                         p_control.eq(x_control), p_product.eq(x_product),
                         p_a.eq(x_a), p_b.eq(x_b), p_c.eq(x_third[:CHUNK])]

        # ---- p: the chunk's result from its products
        p_value = Signal(CHUNK)
        m.d.comb += p_value.eq(_chunk_result(m, p_control, p_product, p_a, p_b, p_c))

        # ---- d: the divider, one element at a time
        d_word = Signal()                   # .S elements (else .D)
        m.d.comb += d_word.eq(x_control.esize_log2 == 2)
        d_quotient = Signal(CHUNK)          # dividend bits still to enter, then quotient bits
        d_remainder = Signal(CHUNK)
        d_divisor = Signal(CHUNK)
        d_negate, d_by_zero = Signal(), Signal()
        d_step = Signal(range(CHUNK))
        d_chunk = Signal(CHUNK)             # the quotients of the chunk so far
        dividend_sign, dividend = _magnitude(m, "dividend", x_first[:CHUNK], d_word,
                                             x_control.signed)
        divisor_sign, divisor = _magnitude(m, "divisor", x_second[:CHUNK], d_word,
                                           x_control.signed)
        d_shifted = Signal(CHUNK + 1)
        d_difference = Signal(CHUNK + 2)
        m.d.comb += [d_shifted.eq(Cat(d_quotient[-1], d_remainder)),
                     d_difference.eq(d_shifted - d_divisor)]
        d_result = Signal(CHUNK)
        m.d.comb += d_result.eq(Mux(d_by_zero, 0, Mux(d_negate, -d_quotient, d_quotient)))
        d_value = Signal(CHUNK)
        m.d.comb += d_value.eq(Mux(d_word, Cat(d_chunk[32:], d_result[:32]), d_result))

        # ---- control: multiply or divide the chunks in turn
        idle = Signal()
        m.d.comb += self.op.ready.eq(idle & ~p_valid & (~self.result.valid | self.result.ready))
        with m.FSM(name="sequence"):
            with m.State("IDLE"):
                m.d.comb += idle.eq(1)
                with m.If(accept):
                    with m.If(control.kind.divide):
                        m.next = "DIVIDE_SETUP"
                    with m.Else():
                        m.next = "MULTIPLY"
            with m.State("MULTIPLY"):
                m.d.comb += x_valid.eq(1)
                m.d.sync += [x_index.eq(x_index + 1), x_first.eq(x_first >> CHUNK),
                             x_second.eq(x_second >> CHUNK), x_third.eq(x_third >> CHUNK)]
                with m.If(x_index == x_last):
                    m.next = "IDLE"
            with m.State("DIVIDE_SETUP"):
                m.d.sync += [d_quotient.eq(Mux(d_word, dividend << 32, dividend)[:CHUNK]),
                             d_remainder.eq(0), d_divisor.eq(divisor), d_step.eq(0),
                             d_negate.eq(dividend_sign ^ divisor_sign),
                             d_by_zero.eq(divisor == 0)]
                m.next = "DIVIDE_STEP"
            with m.State("DIVIDE_STEP"):
                fits = ~d_difference[-1]
                m.d.sync += [d_remainder.eq(Mux(fits, d_difference, d_shifted)[:CHUNK]),
                             d_quotient.eq(Cat(fits, d_quotient[:-1])), d_step.eq(d_step + 1)]
                with m.If(d_step == Mux(d_word, 31, 63)):
                    m.next = "DIVIDE_FINISH"
            with m.State("DIVIDE_FINISH"):
                m.d.sync += [d_chunk.eq(d_value),
                             x_first.eq(Mux(d_word, x_first >> 32, x_first >> CHUNK)),
                             x_second.eq(Mux(d_word, x_second >> 32, x_second >> CHUNK)),
                             d_second_word.eq(d_word & ~d_second_word)]
                chunk_done = ~d_word | d_second_word
                m.d.comb += [w_write.eq(chunk_done), w_index.eq(x_index), w_value.eq(d_value)]
                with m.If(chunk_done):
                    m.d.sync += x_index.eq(x_index + 1)
                with m.If(chunk_done & (x_index == x_last)):
                    m.d.sync += self.result.valid.eq(1)
                    m.next = "IDLE"
                with m.Else():
                    m.next = "DIVIDE_SETUP"

        with m.If(p_valid):
            m.d.comb += [w_write.eq(1), w_index.eq(p_index), w_value.eq(p_value)]
            with m.If(p_last):
                m.d.sync += self.result.valid.eq(1)
        return m


def _widen(m: Module, control, chunk: Value, operand: Signal) -> None:
    """Drive ``operand``: the ``chunk`` itself, or for a widening operation each element made
    of the even (bottom) or odd (top) narrow element of its place, sign- or zero-extended."""
    with m.If(control.widening):
        with m.Switch(control.esize_log2):
            for log2 in ELEMENT_SIZES[1:]:
                bits, half = 8 << log2, 4 << log2
                with m.Case(log2):
                    elements = []
                    for index in range(CHUNK // bits):
                        narrow = chunk[index * bits:][:bits].word_select(control.top, half)
                        elements.append(Cat(narrow, (narrow[-1] & control.signed)
                                            .replicate(half)))
                    m.d.comb += operand.eq(Cat(*elements))
    with m.Else():
        m.d.comb += operand.eq(chunk)


def _product_array(m: Module, control, a: Value, b: Value) -> Value:
    """Each element's unsigned double-width product (element ``k`` at bits ``2nk`` of the
    128-bit sum), plus SQRDMULH's rounding bit ``2^(n-2)`` in each."""
    byte_mode = control.esize_log2 == 0
    placements = {(i, j): (k, high) for k, (i, j, high) in enumerate(_BYTE_MULTIPLIERS)}
    terms = []
    for i in range(_BLOCKS):
        for j in range(_BLOCKS):
            # Blocks i and j share an element of 2^(log2 - 1) blocks.
            same = Cat(*(control.esize_log2 == log2 for log2 in ELEMENT_SIZES[1:]
                         if i >> (log2 - 1) == j >> (log2 - 1))).any()
            left, right = Signal(BLOCK, name=f"x_left_{i}{j}"), Signal(BLOCK, name=f"x_right_{i}{j}")
            if (i, j) in placements:
                k, high = placements[(i, j)]
                byte_left = Cat(Const(0, 8 * high), a[8 * k:8 * k + 8])[:BLOCK]
                byte_right = Cat(Const(0, 8 * high), b[8 * k:8 * k + 8])[:BLOCK]
            else:
                byte_left = byte_right = Const(0, BLOCK)
            m.d.comb += [left.eq(Mux(byte_mode, byte_left, a[BLOCK * i:][:BLOCK])),
                         right.eq(Mux(byte_mode, byte_right,
                                      Mux(same, b[BLOCK * j:][:BLOCK], 0)))]
            product = Signal(2 * BLOCK, name=f"x_product_{i}{j}")
            m.d.comb += product.eq(left * right)
            terms.append(product << (BLOCK * (i + j)))
    rounding = Signal(2 * CHUNK)
    with m.If(control.rounding):
        with m.Switch(control.esize_log2):
            for log2 in ELEMENT_SIZES:
                bits = 8 << log2
                with m.Case(log2):
                    m.d.comb += rounding.eq(Cat(*[Const(1 << (bits - 2), 2 * bits)]
                                                * (CHUNK // bits)))
    return sum(terms, rounding)[:2 * CHUNK]


def _boundaries(m: Module, esize_log2: Value, name: str) -> Signal:
    """One bit per byte of a chunk after the first: whether an element starts there."""
    starts = Signal(CHUNK // 8 - 1, name=name)
    with m.Switch(esize_log2):
        for log2 in ELEMENT_SIZES:
            with m.Case(log2):
                m.d.comb += starts.eq(Cat(*(Const((byte + 1) % (1 << log2) == 0)
                                            for byte in range(CHUNK // 8 - 1))))
    return starts


def _lanes_add(m: Module, name: str, starts: Value, x: Value, y: Value, subtract) -> Signal:
    """``x + y`` (or ``x - y``) of every element of a chunk on one adder: a bit between each
    two bytes propagates the carry inside an element, and at an element boundary kills it
    (addition) or makes the next element's ``+1`` (subtraction, ``x + ~y + 1``)."""
    y = y ^ Value.cast(subtract).replicate(CHUNK)
    spread_x, spread_y = [], []
    for byte in range(CHUNK // 8):
        spread_x.append(x[8 * byte:8 * byte + 8])
        spread_y.append(y[8 * byte:8 * byte + 8])
        if byte < CHUNK // 8 - 1:
            spread_x.append(~starts[byte] | subtract)
            spread_y.append(starts[byte] & subtract)
    total = Signal(9 * (CHUNK // 8), name=name)
    m.d.comb += total.eq(Cat(*spread_x) + Cat(*spread_y) + subtract)
    result = Signal(CHUNK, name=f"{name}_bytes")
    m.d.comb += result.eq(Cat(*(total[9 * byte:9 * byte + 8] for byte in range(CHUNK // 8))))
    return result


def _chunk_result(m: Module, control, product: Value, a: Value, b: Value, c: Value) -> Value:
    """The chunk's result from the array's products and the operands (module documentation)."""
    low, high = Signal(CHUNK, name="p_low"), Signal(CHUNK, name="p_high")
    sign_a, sign_b = Signal(CHUNK, name="p_sign_a"), Signal(CHUNK, name="p_sign_b")
    with m.Switch(control.esize_log2):
        for log2 in ELEMENT_SIZES:
            bits = 8 << log2
            count = CHUNK // bits
            with m.Case(log2):
                m.d.comb += [
                    low.eq(Cat(*(product[2 * bits * k:][:bits] for k in range(count)))),
                    high.eq(Cat(*(product[2 * bits * k + bits:][:bits] for k in range(count)))),
                    sign_a.eq(Cat(*(a[bits * k + bits - 1].replicate(bits)
                                    for k in range(count)))),
                    sign_b.eq(Cat(*(b[bits * k + bits - 1].replicate(bits)
                                    for k in range(count))))]
    starts = _boundaries(m, control.esize_log2, "p_starts")
    signed_high = control.signed & (control.kind.high | control.kind.doubling_high)
    correction = _lanes_add(m, "p_correction", starts, sign_a & b, sign_b & a, 0)
    signed_product_high = _lanes_add(m, "p_signed_high", starts, high,
                                     Mux(signed_high, correction, 0), 1)
    accumulated = _lanes_add(m, "p_accumulated", starts, c, low, control.kind.subtract)

    # The doubling forms: twice the product (SQDMULL) or its high half (SQDMULH: bits n-1 up
    # of the double-width product), saturated when the sign would change.
    doubled = Signal(CHUNK, name="p_doubled")
    source = Signal(CHUNK, name="p_doubling_source")
    m.d.comb += source.eq(Mux(control.kind.doubling_long, low, signed_product_high))
    with m.Switch(control.esize_log2):
        for log2 in ELEMENT_SIZES:
            bits = 8 << log2
            with m.Case(log2):
                elements = []
                for k in range(CHUNK // bits):
                    value = source[bits * k:][:bits]
                    fill = low[bits * k + bits - 1] & ~control.kind.doubling_long
                    overflow = value[-1] ^ value[-2]
                    elements.append(Mux(overflow,
                                        Mux(value[-1], Const(1 << (bits - 1), bits),
                                            Const((1 << (bits - 1)) - 1, bits)),
                                        Cat(fill, value[:-1])))
                m.d.comb += doubled.eq(Cat(*elements))

    result = Signal(CHUNK, name="p_result")
    kind = control.kind
    with m.If(kind.accumulate | kind.subtract):
        m.d.comb += result.eq(accumulated)
    with m.Elif(kind.high):
        m.d.comb += result.eq(signed_product_high)
    with m.Elif(kind.doubling_high | kind.doubling_long):
        m.d.comb += result.eq(doubled)
    with m.Else():
        m.d.comb += result.eq(low)
    return result


def _magnitude(m: Module, name: str, chunk: Value, word: Value, signed_: Value):
    """The sign (when ``signed_``) and magnitude of the element at the bottom of ``chunk``
    (32 bits when ``word``, else 64), zero-extended to 64 bits."""
    element = Signal(CHUNK, name=f"d_{name}_element")
    m.d.comb += element.eq(Mux(word, chunk[:32], chunk))
    sign = Signal(name=f"d_{name}_sign")
    m.d.comb += sign.eq(signed_ & Mux(word, chunk[31], chunk[63]))
    magnitude = Signal(CHUNK, name=f"d_{name}")
    negated = Signal(CHUNK, name=f"d_{name}_negated")
    m.d.comb += negated.eq(-element)
    m.d.comb += magnitude.eq(Mux(sign, Mux(word, negated[:32], negated), element))
    return sign, magnitude
