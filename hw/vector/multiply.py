"""The vector unit's multiplier and divider: integer products, multiply-add and division.

An execution unit of :mod:`zatile.hw.vector` (payloads in :mod:`zatile.hw.vector.common`).
docs/isa.md, "Streaming SVE integer arithmetic", states the semantics; the reference model is the
oracle of ``tests/test_hw_vector_multiply.py``.

The unit takes an op, holds its operands and works through the vector 64 bits (one *chunk*,
selected by its index) at a time, so one multiplier array of sixteen 17×17 signed multipliers
(a MULT18X18D each) serves every element size:

* ``x_`` (execute): the chunk's operands feed the array. Block ``i`` (16 bits) of the first
  operand times block ``j`` of the second, each sign-extended when it tops its element in a
  signed operation (else zero-extended), weighs ``2^(16(i + j))`` and contributes only when
  both blocks lie in one element (else its right operand is 0); for ``.B`` elements eight of the
  multipliers take one pair of bytes each, placed so that their products land at the elements'
  places. A signed partial product fits 32 bits as a signed number; flipping its bit 31 adds
  ``2^31`` and makes it unsigned. The sum of the sixteen 32-bit terms is then each element's
  double-width product plus a bias (:func:`_bias`: ``2^(2n-1)``, and for ``.S``/``.D`` the
  ``2^31`` of the other signed terms, ``2^(2n-16)`` and so on) that keeps it positive and inside
  its ``2n`` bits, so no carry crosses into the next element and the sum is a plain one, on
  two-input adders that synthesis maps to carry chains (:func:`_sum_terms`). A widening form
  (SMULL/UMULL/SQDMULL, bottom or top) runs the array at its narrow element size: the products
  of the even (bottom) and odd (top) narrow elements are the low and high halves of the wide
  products' places.
* ``p_`` (product): the low or the high half of each product (a widening form's narrow product),
  then one adder partitioned at the element boundaries
  (:func:`~zatile.hw.vector.common.partitioned_add`): ``third ± low`` (MLA/MLS), or, in a
  signed operation, the half minus the bias in it, with SQRDMULH's rounding (``2^(n-2)``) as a
  carry into the high half when the low half's top two bits are set; then the doubling forms'
  shift and saturation, byte by byte.

A multiply takes ``SVL/64 + 2`` cycles.

Division (SDIV/UDIV and the reversed forms, ``.S`` and ``.D``) runs one element at a time
through a radix-2 restoring divider of 64 bits: a set-up cycle (the dividend's sign and
magnitude, the divisor kept as minus its magnitude: itself when negative, else its complement,
with a carry into the subtracting adder), one cycle per quotient bit (32 or 64) and a finishing
cycle (sign, division by zero gives 0; a ``.S`` quotient goes to its half of the result chunk),
so ``SVL/esize · (esize + 2) + 1`` cycles, at most 545 at SVL 512. ``INT_MIN / -1`` wraps to
``INT_MIN`` because the magnitude ``2^(n-1)`` negates to itself modulo ``2^n``. A reversed form
swaps the operands at the divider's input.

In the FPGA configuration (SVL 128, 64 bits per cycle) the unit takes 1,899 LUT4, 379 CCU2C
and 16 MULT18X18D (``synth_ecp5``), where sixteen 16×16 unsigned multipliers with the signed
corrections as separate adders, the products summed as one tree of full adders, widening by
multiplexers in front of the array and operands shifted down a chunk at a time took 4,037 LUT4,
304 CCU2C and 16 MULT18X18D; by default (SVL 512) 3,066 LUT4 where they took 7,253.

A predicated form writes only its active elements (merging); the destination is the form's
(``Zda`` of MLA/MLS, ``Zdn`` of MAD/MSB): both take ``third ± first·second``.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import data

from zatile.hw._common import max_bytes
from zatile.hw.decoder import Op
from zatile.hw.vector.common import (ELEMENT_SIZES, VectorExecutionUnit, active_bytes,
                                     element_starts, partitioned_add, per_size)

__all__ = ["VectorMultiplier"]

#: Bits of one chunk, the part of the vector the multiplier array takes per cycle.
CHUNK = 64
#: Bits of one block of the array (one multiplier's operand).
BLOCK = 16
_BLOCKS = CHUNK // BLOCK

#: Multiplier of the array and placement (``False``: the bytes as they are, ``True``: times
#: ``2^8``) that serves byte ``k`` of a ``.B`` chunk: block ``i`` of the first operand times
#: block ``j`` of the second weighs ``2^(16(i + j))``, a pair placed high ``2^16`` more, and
#: byte ``k``'s product belongs at ``2^(16k)``. Placed high, a product fills the upper half of
#: the multiplier's 32 bits, so its bias (:func:`_bias`) stays in its own 16 bits; the two
#: placed low (no multiplier weighs less) drop the upper half at ``.B``.
_BYTE_MULTIPLIERS = ((0, 0, False), (0, 1, False), (1, 0, True), (1, 1, True), (2, 1, True),
                     (2, 2, True), (3, 2, True), (3, 3, True))

#: Operations: op -> (signed operands, result kind). Kinds: ``low`` (the low half of the
#: product, or a widening form's product), ``accumulate``/``subtract`` (``third ± low``),
#: ``high`` (the high half),
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
    "esize_log2": range(4), "array_log2": range(4), "signed": 1, "reversed": 1, "immediate": 1,
    "widening": 1, "top": 1, "rounding": 1,
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
        lanes = per_size(m, decoded.esize_log2, "lanes", maxb, lambda log2: Mux(
            present.pg, active_bytes(payload.governing, log2, maxb), Const(-1, maxb))
            & payload.svl_mask)
        control = Signal(_ControlLayout)
        with m.Switch(decoded.op):
            for op, (signed_, kind) in _OPERATIONS.items():
                with m.Case(op):
                    m.d.comb += [control.signed.eq(signed_), control.kind[kind].eq(1),
                                 control.widening.eq(op in _WIDENING),
                                 control.rounding.eq(op == Op.INT_SQRDMULH)]
        m.d.comb += [control.esize_log2.eq(decoded.esize_log2), control.top.eq(flags.top),
                     control.reversed.eq(flags.reversed), control.immediate.eq(~present.zm),
                     control.array_log2.eq(decoded.esize_log2 - control.widening)]

        # The operands, held while the unit works through them a chunk at a time.
        x_first, x_second, x_third = (Signal(width, name=f"x_{name}")
                                      for name in ("first", "second", "third"))
        x_immediate = Signal(signed(9))      # MUL (immediate): imm8, extended
        x_control = Signal(_ControlLayout)
        x_last = Signal(range(chunks))          # the index of the last chunk inside the SVL
        x_index = Signal(range(chunks))
        w_lanes = Signal(maxb)
        d_second_word = Signal()            # the divider is at the second .S element of a chunk
        # The result, two registers per chunk (its halves: a divided .S element each).
        w_halves = [Signal(CHUNK // 2, name=f"w_half_{k}") for k in range(2 * chunks)]
        w_write = Signal(2)                 # which halves of chunk w_index take w_value
        w_index = Signal(range(chunks))
        w_value = Signal(CHUNK)
        for k, half in enumerate(w_halves):
            with m.If(w_write[k % 2] & (w_index == k // 2)):
                m.d.sync += half.eq(w_value.word_select(k % 2, CHUNK // 2))
        m.d.comb += [out.vector.eq(Cat(*w_halves)), out.vector_lanes.eq(w_lanes)]

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
                x_first.eq(payload.first), x_second.eq(payload.second),
                x_third.eq(payload.third), x_immediate.eq(fields.imm8),
                x_control.eq(control), x_index.eq(0),
                x_last.eq(last), w_lanes.eq(lanes), d_second_word.eq(0)]

        # ---- x: the multiplier array on chunk x_index of the operands
        x_valid = Signal()
        x_first_chunk, x_second_chunk = Signal(CHUNK), Signal(CHUNK)
        m.d.comb += [x_first_chunk.eq(x_first.word_select(x_index, CHUNK)),
                     x_second_chunk.eq(x_second.word_select(x_index, CHUNK))]
        replicated = per_size(m, x_control.esize_log2, "x_replicated", CHUNK, lambda log2: Cat(
            *[Cat(x_immediate, x_immediate[-1].replicate(64))[:8 << log2]] * (8 >> log2)))
        x_product = Signal(2 * CHUNK)
        m.d.comb += x_product.eq(_product_array(
            m, x_control, x_first_chunk, Mux(x_control.immediate, replicated, x_second_chunk)))

        p_valid, p_last = Signal(), Signal()
        p_index = Signal(range(chunks))
        p_control = Signal(_ControlLayout)
        p_product = Signal(2 * CHUNK)
        m.d.sync += p_valid.eq(x_valid)
        with m.If(x_valid):
            m.d.sync += [p_last.eq(x_index == x_last), p_index.eq(x_index),
                         p_control.eq(x_control), p_product.eq(x_product)]

        # ---- p: the chunk's result from its products
        p_value = Signal(CHUNK)
        m.d.comb += p_value.eq(_chunk_result(m, p_control, p_product,
                                             x_third.word_select(p_index, CHUNK)))

        # ---- d: the divider, one element at a time
        d_word = Signal()                   # .S elements (else .D)
        m.d.comb += d_word.eq(x_control.esize_log2 == 2)
        # The dividend's bits still to enter the remainder (from bit 31 of a .S one, else from
        # bit 63), then the quotient's bits.
        d_quotient = Signal(CHUNK)
        d_remainder = Signal(CHUNK)
        # Minus the divisor's magnitude: the divisor itself when negative, else its complement
        # with a carry of 1 (d_complemented) into the adder that subtracts it.
        d_divisor = Signal(CHUNK)
        d_complemented = Signal()
        d_negate, d_by_zero = Signal(), Signal()
        d_step = Signal(range(CHUNK))
        reversed_ = x_control.reversed
        dividend_sign, dividend = _element(
            m, "dividend", Mux(reversed_, x_second_chunk, x_first_chunk), d_word, d_second_word,
            x_control.signed)
        divisor_sign, divisor = _element(
            m, "divisor", Mux(reversed_, x_first_chunk, x_second_chunk), d_word, d_second_word,
            x_control.signed)
        magnitude = Signal(CHUNK)
        m.d.comb += magnitude.eq(Mux(dividend_sign, -dividend, dividend))
        d_shifted = Signal(CHUNK + 1)
        d_difference = Signal(CHUNK + 3)    # bit 0: d_complemented twice, a carry into bit 1
        m.d.comb += [d_shifted.eq(Cat(Mux(d_word, d_quotient[31], d_quotient[-1]), d_remainder)),
                     d_difference.eq(Cat(d_complemented, d_shifted)
                                     + Cat(d_complemented, d_divisor, Const(3, 2)))]
        d_result = Signal(CHUNK)
        m.d.comb += d_result.eq(Mux(d_by_zero, 0, Mux(d_negate, -d_quotient, d_quotient)))

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
                m.d.sync += x_index.eq(x_index + 1)
                with m.If(x_index == x_last):
                    m.next = "IDLE"
            with m.State("DIVIDE_SETUP"):
                m.d.sync += [d_quotient.eq(magnitude),
                             d_remainder.eq(0), d_step.eq(0),
                             d_divisor.eq(divisor ^ (~divisor_sign).replicate(CHUNK)),
                             d_complemented.eq(~divisor_sign),
                             d_negate.eq(dividend_sign ^ divisor_sign),
                             d_by_zero.eq(divisor == 0)]
                m.next = "DIVIDE_STEP"
            with m.State("DIVIDE_STEP"):
                fits = ~d_difference[-1]
                m.d.sync += [d_remainder.eq(Mux(fits, d_difference[1:], d_shifted)[:CHUNK]),
                             d_quotient.eq(Cat(fits, d_quotient[:-1])), d_step.eq(d_step + 1)]
                with m.If(d_step == Mux(d_word, 31, 63)):
                    m.next = "DIVIDE_FINISH"
            with m.State("DIVIDE_FINISH"):
                m.d.sync += d_second_word.eq(d_word & ~d_second_word)
                chunk_done = ~d_word | d_second_word
                m.d.comb += [w_write.eq(Cat(~d_word | ~d_second_word, chunk_done)),
                             w_index.eq(x_index),
                             w_value.eq(Cat(d_result[:32], Mux(d_word, d_result[:32],
                                                               d_result[32:])))]
                with m.If(chunk_done):
                    m.d.sync += x_index.eq(x_index + 1)
                with m.If(chunk_done & (x_index == x_last)):
                    m.d.sync += self.result.valid.eq(1)
                    m.next = "IDLE"
                with m.Else():
                    m.next = "DIVIDE_SETUP"

        with m.If(p_valid):
            m.d.comb += [w_write.eq(0b11), w_index.eq(p_index), w_value.eq(p_value)]
            with m.If(p_last):
                m.d.sync += self.result.valid.eq(1)
        return m


def _element_top(log2: int, block: int) -> bool:
    """Whether ``block`` of the array is the top (sign-holding) block of its element of
    ``2^log2`` bytes (``log2`` of 1 to 3)."""
    blocks = 1 << (log2 - 1)
    return block % blocks == blocks - 1


def _bias(log2: int) -> int:
    """What the array adds to each element's product at elements of ``2^log2`` bytes (``n``
    bits) in a signed operation: ``2^31`` at each partial product that may be negative (of a
    block topping its element), making it an unsigned number; ``2^15`` at a byte's. It is at
    least ``2^(2n-1)`` and below ``3·2^(2n-2)``, so each biased product lies in ``[0, 2^2n)``,
    and has no bit in the low half, which stays exact (module documentation)."""
    if log2 == 0:
        return 1 << 15
    return sum(1 << (31 + BLOCK * (i + j)) for i in range(1 << (log2 - 1))
               for j in range(1 << (log2 - 1))
               if _element_top(log2, i) or _element_top(log2, j))


def _operand(m: Module, name: str, control, index: int, block: Value, gate: Value | None,
             byte: Value, placement: str | None) -> Signal:
    """One 17-bit signed operand of a multiplier: ``block`` (block ``index`` of the chunk,
    sign-extended when it tops its element in a signed operation, else zero-extended), 0 where
    ``gate`` is low; for ``.B`` elements, a multiplier that serves a byte (``placement``)
    takes ``byte`` sign- or zero-extended (``"low"``) or times ``2^8`` (``"high"``). The other
    multipliers' right operands are 0 at ``.B`` (``gate``), zeroing their products."""
    operand = Signal(signed(BLOCK + 1), name=name)
    log2 = control.array_log2
    top = Cat(*(log2 == size for size in ELEMENT_SIZES[1:]
                if _element_top(size, index))).any()
    value = Cat(block, block[-1] & control.signed & top)
    if gate is not None:
        value = Mux(gate, value, 0)
    if placement is not None:
        byte_sign = byte[-1] & control.signed
        value = Mux(log2 == 0, Cat(byte, byte_sign.replicate(BLOCK + 1 - 8))
                    if placement == "low" else Cat(Const(0, 8), byte, byte_sign), value)
    m.d.comb += operand.eq(value)
    return operand


def _product_array(m: Module, control, a: Value, b: Value) -> Value:
    """Each element's double-width product (element ``k`` at bits ``2nk`` of the 128-bit sum,
    elements of ``control.array_log2``), plus, in a signed operation, :func:`_bias` of its
    size (module documentation)."""
    byte_mode = control.array_log2 == 0
    placements = {(i, j): (k, high) for k, (i, j, high) in enumerate(_BYTE_MULTIPLIERS)}
    terms = []
    for i in range(_BLOCKS):
        for j in range(_BLOCKS):
            # Blocks i and j share an element of 2^(log2 - 1) blocks.
            same = Cat(*(control.array_log2 == log2 for log2 in ELEMENT_SIZES[1:]
                         if i >> (log2 - 1) == j >> (log2 - 1))).any()
            k, high = placements.get((i, j), (0, None))
            placement = None if high is None else ("high" if high else "low")
            left = _operand(m, f"x_left_{i}{j}", control, i, a[BLOCK * i:][:BLOCK], None,
                            a[8 * k:][:8], placement)
            right = _operand(m, f"x_right_{i}{j}", control, j, b[BLOCK * j:][:BLOCK], same,
                             b[8 * k:][:8], placement)
            product = Signal(signed(2 * BLOCK + 2), name=f"x_product_{i}{j}")
            m.d.comb += product.eq(left * right)
            # A signed partial product (of a block topping its element) becomes unsigned by
            # adding 2^31: flipping its bit 31.
            signed_part = Cat(*(control.array_log2 == log2 for log2 in ELEMENT_SIZES[1:]
                                if i >> (log2 - 1) == j >> (log2 - 1)
                                and (_element_top(log2, i) or _element_top(log2, j)))).any()
            flip = control.signed & Mux(byte_mode, placement == "high", signed_part)
            if placement == "low":
                # A byte's product at the bottom of the multiplier: its own 16 bits, 2^15 added.
                term = Cat(product[:15], product[15] ^ (control.signed & byte_mode),
                           Mux(byte_mode, 0, product[16:32]) ^ (flip << 15))
            else:
                term = Cat(product[:31], product[31] ^ flip)
            terms.append((BLOCK * (i + j), term))
    return _sum_terms(m, "x_sum", terms, 2 * CHUNK)


def _sum_terms(m: Module, name: str, terms: list, width: int) -> Value:
    """The sum, modulo ``2^width``, of ``terms`` (``(offset, value)`` pairs: ``value`` times
    ``2^offset``) on two-input adders, each only as wide as its operands overlap: first the
    terms of each offset, then rows of sums that do not overlap, pairwise. The sums are kept
    apart (``keep``) so that synthesis maps them to carry chains rather than merging them into
    one tree of full adders in LUTs (which took about three times the area)."""
    count = 0

    def add(first, second):
        nonlocal count
        (low_offset, low), (high_offset, high) = sorted([first, second], key=lambda t: t[0])
        low = Cat(low, Const(0, max(0, high_offset - low_offset - len(low))))
        end = min(width, max(low_offset + len(low), high_offset + len(high)) + 1)
        total = Signal(end - high_offset, name=f"{name}_{count}", attrs={"keep": 1})
        count += 1
        m.d.comb += total.eq(low[high_offset - low_offset:] + high)
        return low_offset, Cat(low[:high_offset - low_offset], total)

    def balanced(group):
        while len(group) > 1:
            group = [add(*group[k:k + 2]) if k + 1 < len(group) else group[k]
                     for k in range(0, len(group), 2)]
        return group[0]

    def row(members):
        # One term of terms that do not overlap, in order.
        parts, end = [], members[0][0]
        for offset, value in members:
            parts += [Const(0, offset - end), value]
            end = offset + len(value)
        return members[0][0], Cat(*parts)

    offsets = sorted({offset for offset, _ in terms})
    sums = [balanced([term for term in terms if term[0] == offset]) for offset in offsets]
    while len(sums) > 1:
        rows = []
        for term in sorted(sums, key=lambda t: t[0]):
            free = [members for members in rows
                    if members[-1][0] + len(members[-1][1]) <= term[0]]
            if free:
                free[0].append(term)
            else:
                rows.append([term])
        sums = [balanced([row(members) for members in rows[k:k + 2]])
                for k in range(0, len(rows), 2)] if len(rows) > 1 else [row(rows[0])]
    offset, value = sums[0]
    return Cat(Const(0, offset), value, Const(0, width))[:width]


def _chunk_result(m: Module, control, product: Value, c: Value) -> Value:
    """The chunk's result from the array's products and the third operand (module
    documentation)."""
    kind = control.kind
    esize = control.esize_log2
    count = CHUNK // 8

    def halves(log2: int, offset: int) -> Value:
        # The halves at ``offset`` (0: low, 1: high) of the elements' double-width products.
        bits = 8 << log2
        return Cat(*(product[2 * bits * k + bits * offset:][:bits] for k in range(CHUNK // bits)))

    # The half: the low one, else the high one (a widening top form's is its narrow product).
    take_high = kind.high | kind.doubling_high | (control.widening & control.top)
    low = per_size(m, esize, "p_low", CHUNK, lambda log2: halves(log2, 0))
    high = per_size(m, esize, "p_high", CHUNK, lambda log2: halves(log2, 1))
    half = Mux(take_high, high, low)
    # The low half's top two bits (n-1 and n-2), at each byte of its element.
    low_top = per_size(m, esize, "p_low_top", count,
                       lambda log2: _bit_per_byte(product, log2, (8 << log2) - 1, 2))
    low_next = per_size(m, esize, "p_low_next", count,
                        lambda log2: _bit_per_byte(product, log2, (8 << log2) - 2, 2))

    def unbias(log2):
        # Minus the array's bias in the high half, or a widening form's narrow product.
        bits = 8 << log2
        bias = (_bias(log2 - 1) if log2 else 0, _bias(log2) >> bits)
        return Mux(control.widening, *(Cat(*[Const(-value % (1 << bits), bits)]
                                            * (CHUNK // bits)) for value in bias))
    unbiasing = per_size(m, esize, "p_unbias", CHUNK, unbias)

    # Rounding (SQRDMULH) adds 2^(n-2) to the product: a carry into the high half when the low
    # half's top two bits are set.
    starts = per_size(m, esize, "p_starts", count, lambda log2: element_starts(log2, count))
    accumulating = kind.accumulate | kind.subtract
    total, _ = partitioned_add(
        m, "p_total", Mux(accumulating, c, Mux(control.signed, unbiasing, 0)),
        half ^ kind.subtract.replicate(CHUNK), starts,
        kind.subtract.replicate(count) | (low_top & low_next & control.rounding.replicate(count)))

    # The doubling forms: twice the product (SQDMULL) or its high half (SQDMULH: bits n-1 up
    # of the double-width product), saturated when the sign would change. Only INT_MIN ·
    # INT_MIN overflows (with SQRDMULH's rounding too), to INT_MAX: the shift and the saturation
    # byte by byte, from whether the byte's element saturates and whether the byte tops it.
    doubling = kind.doubling_high | kind.doubling_long
    sign = per_size(m, esize, "p_sign", count,
                    lambda log2: _bit_per_byte(total, log2, (8 << log2) - 1))
    below = per_size(m, esize, "p_below", count,
                     lambda log2: _bit_per_byte(total, log2, (8 << log2) - 2))
    saturate = Signal(count, name="p_saturate")
    m.d.comb += saturate.eq(~sign & below & doubling.replicate(count))
    tops = per_size(m, esize, "p_tops", count,
                    lambda log2: Cat(element_starts(log2, count)[1:], Const(1)))
    fill = Signal(count, name="p_fill")
    m.d.comb += fill.eq((low_top ^ (low_next & control.rounding.replicate(count)))
                        & (~kind.doubling_long).replicate(count))
    result = []
    for byte in range(count):
        below_byte = Mux(starts[byte], fill[byte], total[8 * byte - 1]) if byte else fill[0]
        shifted = Cat(below_byte, total[8 * byte:8 * byte + 7])
        unsaturated = Mux(doubling, shifted, total[8 * byte:8 * byte + 8])
        result.append(Cat(unsaturated[:7] | saturate[byte].replicate(7),
                          Mux(saturate[byte], ~tops[byte], unsaturated[7])))
    return Cat(*result)


def _bit_per_byte(value: Value, log2: int, bit: int, spacing: int = 1) -> Value:
    """Bit ``bit`` of the element (of ``2^log2`` bytes) that holds each byte of a chunk, in
    ``value``, whose elements lie ``spacing`` times their size apart (2: double-width
    products)."""
    bits = 8 << log2
    return Cat(*(value[spacing * bits * (8 * byte // bits) + bit] for byte in range(CHUNK // 8)))


def _element(m: Module, name: str, chunk: Value, word: Value, second_word: Value,
             signed_: Value):
    """The sign (when ``signed_``) and value, sign- or zero-extended to 64 bits, of an element
    of ``chunk``: the 32-bit one at bit 32 when ``word`` and ``second_word``, at bit 0 when
    ``word`` alone, else the 64-bit one."""
    low = Signal(32, name=f"d_{name}_low")
    m.d.comb += low.eq(Mux(second_word, chunk[32:], chunk[:32]))
    sign = Signal(name=f"d_{name}_sign")
    m.d.comb += sign.eq(signed_ & Mux(word, low[-1], chunk[-1]))
    element = Signal(CHUNK, name=f"d_{name}")
    m.d.comb += element.eq(Cat(low, Mux(word, sign.replicate(32), chunk[32:])))
    return sign, element
