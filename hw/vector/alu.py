"""The vector unit's ALU: integer element arithmetic, compares and predicate logic.

An execution unit of :mod:`zatile.hw.vector` (payloads in :mod:`zatile.hw.vector.common`). It
makes ``vector_bits_per_cycle`` bits of the result per cycle from the held op
(:func:`~zatile.hw.vector.common.chunk_steps`), so its result leaves ``SVL /
vector_bits_per_cycle`` cycles after the op is presented (the cycle after, by default);
compares and predicate operations make their P result and flags with the last chunk.
docs/isa.md, "Streaming SVE integer arithmetic" and "Streaming SVE predicates, counts and
reductions", state the semantics; the reference model is the oracle of
``tests/test_hw_vector_alu.py``.

Operands come from the form's fields, as the decoder reports them (``present``, ``flags``,
``choices``): the first vector is ``Zdn`` or ``Zn``; the second ``Zm`` (its 64-bit lane element
for a wide compare) or the immediate the form carries (``#imm8{, lsl #8}``, ``#imm5``,
``#imm7``, or a logical immediate, ``DecodeBitMasks`` of ``N:immr:imms``); ``reversed`` swaps
them. A predicated (``Pg``) integer form writes only its active elements (merging); a compare
writes every element of its predicate, inactive ones as 0 (zeroing).

Every element size shares one datapath (``_elements``): an adder partitioned at the element
boundaries makes every element's ``a ± b`` at once, and each element's order, equality and
saturation come from its sum, its carry out and the operands' sign bits. A wide compare
subtracts the low bits of the lane's 64-bit element when that element fits them, and orders the
operands by its sign when it does not. The bitwise operations, DUPM, max and min take each result
bit from a truth table of the operands' bits. One PredTest makes the flags that any operation sets.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data

from zatile.hw._common import max_bytes
from zatile.hw.decoder import CHOICES, Op
from zatile.hw.vector.common import (ELEMENT_SIZES, VectorExecutionUnit, active_bytes,
                                     chunk_part, chunk_registers, chunk_steps, element_starts,
                                     extend, partitioned_add, per_size, predicate_test)

__all__ = ["VectorAlu"]

#: Integer element operations: op -> (first operand signed, second operand signed, subtract,
#: result kind): ``wrap`` (modulo 2^esize), ``sq``/``uq`` (saturated signed or unsigned),
#: ``max``/``min`` (of the operands, by the sign of their difference), ``abd``.
_ELEMENT_OPS = {
    Op.INT_ADD: (False, False, False, "wrap"), Op.INT_SUB: (False, False, True, "wrap"),
    Op.INT_SMAX: (True, True, True, "max"), Op.INT_UMAX: (False, False, True, "max"),
    Op.INT_SMIN: (True, True, True, "min"), Op.INT_UMIN: (False, False, True, "min"),
    Op.INT_SABD: (True, True, True, "abd"), Op.INT_UABD: (False, False, True, "abd"),
    Op.INT_SQADD: (True, True, False, "sq"), Op.INT_UQADD: (False, False, False, "uq"),
    Op.INT_SQSUB: (True, True, True, "sq"), Op.INT_UQSUB: (False, False, True, "uq"),
    Op.INT_SUQADD: (True, False, False, "sq"), Op.INT_USQADD: (False, True, False, "uq"),
}
#: Truth tables of a result bit from the operands' bits ``first`` and ``second`` (the table's
#: bit ``2 * second + first``): the first operand's bit, the second's.
_FIRST_BIT, _SECOND_BIT = 0b1010, 0b1100
#: Bitwise operations and DUPM (whose second operand is its immediate): op -> truth table.
_BITWISE_TABLES = {Op.INT_AND: 0b1000, Op.INT_ORR: 0b1110, Op.INT_EOR: 0b0110,
                   Op.INT_BIC: 0b0010, Op.INT_DUPM: _SECOND_BIT}
#: Result kinds: those of the element operations, and ``logic`` (a bitwise operation's table).
_KINDS = ("wrap", "sq", "uq", "max", "min", "abd", "logic")
_BITWISE_OPS = (Op.INT_AND, Op.INT_ORR, Op.INT_EOR, Op.INT_BIC)
_PREDICATE_OPS = (Op.PRED_LOGIC, Op.PRED_LOGIC_FLAGS, Op.PTEST)

_COND = CHOICES["cond"]
_LOGIC = CHOICES["logic"]
_SECOND = CHOICES["second"]
#: Compare conditions whose operands are unsigned.
_UNSIGNED_CONDITIONS = ("HS", "HI", "LO", "LS")
#: Compare conditions: condition -> (true when the first operand is less, equal, greater).
_CONDITION_TRUTHS = {
    "EQ": (0, 1, 0), "NE": (1, 0, 1), "GE": (0, 1, 1), "GT": (0, 0, 1), "LT": (1, 0, 0),
    "LE": (1, 1, 0), "HS": (0, 1, 1), "HI": (0, 0, 1), "LO": (1, 0, 0), "LS": (1, 1, 0),
}


class VectorAlu(VectorExecutionUnit):
    """Integer element arithmetic, compares and predicate logic (module documentation).

    Parameters
    ----------
    config : EngineConfig
        ``max_svl`` sizes the vectors; ``vector_bits_per_cycle`` the datapath.

    Attributes
    ----------
    op : In(stream.Signature(VectorOpLayout)), held (valid, payload stable) until ``ready``
    result : Out(stream.Signature(VectorResultLayout)), one transfer per ``op`` transfer,
        the cycle after it at the earliest.

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    """

    #: The operations the unit performs.
    OPS = (*_ELEMENT_OPS, *_BITWISE_OPS, Op.INT_DUPM, Op.CMP, *_PREDICATE_OPS)

    def elaborate(self, platform):
        m = Module()
        maxb = max_bytes(self._config)
        chunk_bytes = self._config.vector_bits_per_cycle // 8
        chunks = maxb // chunk_bytes
        payload = self.op.payload
        decoded = payload.decoded
        op, fields, flags, present = decoded.op, decoded.fields, decoded.flags, decoded.present
        esize_log2 = decoded.esize_log2
        svl_mask = payload.svl_mask
        steps = chunk_steps(m, self, chunk_bytes)

        def this_chunk(value):
            return chunk_part(value, steps.chunk, chunks)

        first = this_chunk(payload.first)
        second_vector = this_chunk(payload.second)

        # ---- the immediate operand (64 bits; elements take its low bits)
        imm8 = Signal(64)
        m.d.comb += imm8.eq(extend(fields.imm8, True, 64)
                            << Mux(fields.sh[0], 8, 0))
        bitmask = Signal(64)
        m.d.comb += bitmask.eq(_bit_masks(m, flags.mask64, fields.immr,
                                          fields.imms))
        immediate = Signal(64)
        with m.If(present.imm8):
            m.d.comb += immediate.eq(imm8)
        with m.Elif(present.imm5):
            m.d.comb += immediate.eq(extend(fields.imm5[:5], True, 64))
        with m.Elif(present.imm7):
            m.d.comb += immediate.eq(fields.imm7[:7])
        with m.Elif(present.immr):
            m.d.comb += immediate.eq(bitmask)

        # ---- operand chunks: the immediate replicated at the element size (for a wide compare,
        # whose elements have at most 32 bits, the low element of each 64-bit lane of Zm)
        width = 8 * chunk_bytes
        wide = decoded.choices.second == _SECOND.WIDE
        lane_source = Signal(width)
        m.d.comb += lane_source.eq(Cat(
            Cat(Mux(wide, second_vector.word_select(lane, 64)[:32], immediate[:32]),
                immediate[32:]) for lane in range(width // 64)))
        replicated = per_size(m, esize_log2, "replicated", width, lambda log2: Cat(
            lane_source.word_select(element >> (3 - log2), 64)[:8 << log2]
            for element in range(chunk_bytes >> log2)))
        second = Signal(width)
        m.d.comb += second.eq(Mux(present.zm & ~wide, second_vector, replicated))

        # ---- element and bitwise results and compare truths, one datapath for every size
        # The element operation as controls shared by every element: operand signedness, add
        # or subtract, result kind (a compare subtracts, signed unless its condition is not).
        # Only subtractions of operands of one signedness are reversed (SUBR, SQSUBR, UQSUBR):
        # they subtract the first operand from the second.
        cond = decoded.choices.cond
        unsigned_compare = Cat(*(cond == _COND[name] for name in _UNSIGNED_CONDITIONS)).any()
        control = Signal(data.StructLayout({
            "first_signed": 1, "second_signed": 1, "subtract": 1, "reversed": 1,
            "kind": data.StructLayout({k: 1 for k in _KINDS}), "table": 4,
            "second_immediate": 1}))
        # An immediate operand takes part with its exact value (unsigned #imm8, lsl #8 of SQADD
        # is not a negative element).
        m.d.comb += [control.second_immediate.eq(present.imm8 | present.imm5 | present.imm7),
                     control.reversed.eq(flags.reversed)]
        with m.Switch(op):
            for element_op, (a_signed, b_signed, subtract, kind) in _ELEMENT_OPS.items():
                with m.Case(element_op):
                    m.d.comb += [control.first_signed.eq(a_signed),
                                 control.second_signed.eq(b_signed),
                                 control.subtract.eq(subtract), control.kind[kind].eq(1)]
            for bitwise_op, table in _BITWISE_TABLES.items():
                with m.Case(bitwise_op):
                    m.d.comb += [control.kind.logic.eq(1), control.table.eq(table)]
            with m.Case(Op.CMP):
                m.d.comb += [control.first_signed.eq(~unsigned_compare),
                             control.second_signed.eq(~unsigned_compare),
                             control.subtract.eq(1)]
        # The compare is true when the first operand is less, equal or greater as it selects.
        wanted = Signal(data.StructLayout({"less": 1, "equal": 1, "greater": 1}))
        with m.Switch(cond):
            for name, (less, equal, greater) in _CONDITION_TRUTHS.items():
                with m.Case(_COND[name]):
                    m.d.comb += [wanted.less.eq(less), wanted.equal.eq(equal),
                                 wanted.greater.eq(greater)]
        element_result, compare = _elements(m, control, wanted, esize_log2, first, second,
                                            second_vector, immediate, wide)

        # ---- element starts, active bytes
        starts = per_size(m, esize_log2, "register_starts", maxb,
                           lambda log2: element_starts(log2, maxb))
        active = per_size(m, esize_log2, "active", maxb,
                           lambda log2: active_bytes(payload.governing, log2, maxb))

        # ---- predicate operations (byte granular, the whole register at the last chunk)
        g, n, pm = payload.governing, payload.pn, payload.pm
        logic = decoded.choices.logic
        predicate_logic = Signal(maxb)
        with m.Switch(logic):
            for name, value in (("AND", g & n & pm), ("BIC", g & n & ~pm), ("EOR", g & (n ^ pm)),
                                ("SEL", (g & n) | (~g & pm)), ("ORR", g & (n | pm)),
                                ("ORN", g & (n | ~pm)), ("NOR", g & ~(n | pm)),
                                ("NAND", g & ~(n & pm))):
                with m.Case(_LOGIC[name]):
                    m.d.comb += predicate_logic.eq(value & svl_mask)

        # ---- the result, registered chunk by chunk
        is_bitwise = Cat(*(op == o for o in (*_BITWISE_OPS, Op.INT_DUPM))).any()
        is_element = Cat(*(op == o for o in _ELEMENT_OPS)).any()
        compare_chunk = Signal(chunk_bytes)
        m.d.comb += compare_chunk.eq(Mux(op == Op.CMP,
                                         compare & this_chunk(payload.governing & starts), 0))
        lanes_chunk = Signal(chunk_bytes)
        m.d.comb += lanes_chunk.eq(Mux(is_bitwise | is_element,
                                       Mux(present.pg, this_chunk(active), Const(-1, chunk_bytes))
                                       & this_chunk(svl_mask), 0))
        x = chunk_registers(m, steps, chunks, x_vector=element_result,
                            x_lanes=lanes_chunk, x_compare=compare_chunk)
        # The whole compare result on the last chunk: the chunks before it and this one.
        compare_result = Signal(maxb)
        m.d.comb += compare_result.eq(Cat(
            Mux(steps.chunk == k, compare_chunk, x["x_compare"].word_select(k, chunk_bytes))
            for k in range(chunks)))
        # The flags: PredTest of the compare result (over its elements' first bytes of Pg), the
        # predicate operation's (over Pg), or Pn (PTEST), by one tester.
        tested_mask, tested = Signal(maxb), Signal(maxb)
        m.d.comb += tested_mask.eq(Mux(op == Op.CMP, payload.governing & starts, g))
        with m.Switch(op):
            with m.Case(Op.CMP):
                m.d.comb += tested.eq(compare_result)
            with m.Case(Op.PRED_LOGIC_FLAGS):
                m.d.comb += tested.eq(predicate_logic)
            with m.Default():
                m.d.comb += tested.eq(n)
        x_predicate = Signal(maxb)
        x_predicate_lanes = Signal(maxb)
        out = self.result.payload
        with m.If(steps.step & steps.last):
            m.d.sync += [
                x_predicate.eq(Mux(op == Op.CMP, 0, predicate_logic)),   # CMP: x_compare
                x_predicate_lanes.eq(Mux(
                    Cat(op == Op.CMP, op == Op.PRED_LOGIC, op == Op.PRED_LOGIC_FLAGS).any(),
                    svl_mask, 0)),
            ]
            with m.If(Cat(op == Op.CMP, op == Op.PRED_LOGIC_FLAGS, op == Op.PTEST).any()):
                m.d.sync += out.nzcv.eq(predicate_test(tested_mask, tested))
        m.d.comb += [out.vector.eq(x["x_vector"]), out.vector_lanes.eq(x["x_lanes"]),
                     out.predicate.eq(x_predicate | x["x_compare"]),
                     out.predicate_lanes.eq(x_predicate_lanes)]
        return m


def _elements(m: Module, control, wanted, esize_log2: Value, first: Value, second: Value,
              second_vector: Value, immediate: Value, wide: Value) -> tuple[Value, Value]:
    """The results of the element and bitwise operations (the chunk) and the compare truths (one
    bit per byte, at each element's first byte), for elements of ``2^esize_log2`` bytes of the
    operand chunks ``first`` and ``second``.

    One datapath serves every element size. A partitioned adder makes each element's ``a ± b``
    modulo ``2^n`` (``n`` its bits) and its carry out; at the element's last byte the carry and
    the operands' extensions (their sign bits, or the immediate's exact high bits) give ``H``,
    the top two bits of the exact ``a ± b`` of ``n + 2`` bits. ``H`` below 0 orders the
    operands, ``H`` and the sum being 0 says they are equal, and ``H`` with the sum's top bit
    says whether the sum fits a saturated result. The element's order and saturation then reach
    its every byte, where a second partitioned adder negates the difference of ``abd``. A wide
    compare (``.B/.H/.S`` against the 64-bit element of the lane, whose low ``n`` bits are
    ``second``) orders the operands as the adder does when that element fits ``n`` bits, and
    by its sign when it does not. The bitwise operations and DUPM (``control.table``), max and
    min (the first or the second operand's bit, by the element's order) look each result bit up
    in a truth table of the operands' bits.
    """
    chunk_bytes = len(first) // 8
    kind = control.kind

    def byte(value, index):
        return value[8 * index:8 * index + 8]

    def at_last_byte(log2, values, index):
        return values[index | ((1 << log2) - 1)]

    starts = per_size(m, esize_log2, "starts", chunk_bytes,
                       lambda log2: element_starts(log2, chunk_bytes))
    last_bytes = Cat(starts[1:], Const(1))
    # a - b is a + ~b + 1; reversed, b - a is ~a + b + 1.
    invert_first = control.reversed
    invert_second = control.subtract & ~control.reversed
    augend, addend = Signal(len(first)), Signal(len(second))
    m.d.comb += [augend.eq(first ^ invert_first.replicate(len(first))),
                 addend.eq(second ^ invert_second.replicate(len(second)))]
    sums, carries = partitioned_add(m, "sums", augend, addend, starts,
                                     control.subtract.replicate(chunk_bytes))
    # The exact immediate's bits n and n + 1.
    immediate_high = per_size(m, esize_log2, "immediate_high", 2,
                               lambda log2: extend(immediate, True, 66)[8 << log2:][:2])
    byte_zero = Signal(chunk_bytes)
    m.d.comb += byte_zero.eq(Cat(~byte(sums, index).any() for index in range(chunk_bytes)))
    element_zero = per_size(m, esize_log2, "element_zero", chunk_bytes, lambda log2: Cat(
        byte_zero[index & ~((1 << log2) - 1):][:1 << log2].all() for index in range(chunk_bytes)))
    lanes = [Signal(64, name=f"wide_{lane}") for lane in range(chunk_bytes // 8)]
    m.d.comb += [lane.eq(second_vector.word_select(index, 64)) for index, lane in enumerate(lanes)]
    wide_fits = Cat(_wide_fits(m, esize_log2, lane, control.second_signed) for lane in lanes)

    # At each byte, as if it were the last of its element.
    less, equal = Signal(chunk_bytes), Signal(chunk_bytes)
    overflow, truth = Signal(chunk_bytes), Signal(chunk_bytes)
    for index in range(chunk_bytes):
        first_high = (first[8 * index + 7] & control.first_signed).replicate(2)
        second_high = Mux(control.second_immediate, immediate_high,
                          (second[8 * index + 7] & control.second_signed).replicate(2))
        # H: bits n and n + 1 of the exact sum, from the carry and the operands' extensions.
        high = Signal(2, name=f"high_{index}")
        m.d.comb += high.eq(carries[index] + (first_high ^ invert_first.replicate(2))
                            + (second_high ^ invert_second.replicate(2)))
        sum_top = sums[8 * index + 7]
        fits_signed = (high == 0) & ~sum_top | (high == 3) & sum_top
        out_of_range = wide & ~wide_fits[index // 8]
        m.d.comb += [
            less[index].eq(Mux(out_of_range, ~(control.second_signed & lanes[index // 8][63]),
                               high[1])),
            equal[index].eq(~out_of_range & (high == 0) & element_zero[index]),
            overflow[index].eq(kind.sq & ~fits_signed | kind.uq & (high != 0)),
        ]
        m.d.comb += truth[index].eq(less[index] & wanted.less | equal[index] & wanted.equal
                                    | ~less[index] & ~equal[index] & wanted.greater)

    # At every byte of each element.
    element_less = per_size(m, esize_log2, "element_less", chunk_bytes, lambda log2: Cat(
        at_last_byte(log2, less, index) for index in range(chunk_bytes)))
    element_overflow = per_size(m, esize_log2, "element_overflow", chunk_bytes, lambda log2: Cat(
        at_last_byte(log2, overflow, index) for index in range(chunk_bytes)))
    negate, negated = Signal(chunk_bytes), Signal(len(sums))
    m.d.comb += [negate.eq(element_less & kind.abd.replicate(chunk_bytes)),
                 negated.eq(sums ^ Cat(bit.replicate(8) for bit in negate))]
    magnitudes, _ = partitioned_add(m, "magnitudes", negated, Const(0, len(sums)), starts,
                                     negate)
    results = Signal(len(first))
    tables = Signal(4 * chunk_bytes)   # of each byte's bits, for max, min and logic
    picked = kind.max | kind.min | kind.logic
    for index in range(chunk_bytes):
        is_less = element_less[index]
        take_second = kind.max & is_less | kind.min & ~is_less
        m.d.comb += tables.word_select(index, 4).eq(
            Mux(kind.logic, control.table, Mux(take_second, _SECOND_BIT, _FIRST_BIT)))
        # SatQ's bound: 0 or all ones, 0x80 or 0x7F at a signed element's last byte.
        saturated = Cat(Value.cast(~is_less).replicate(7),
                        Mux(kind.sq & last_bytes[index], is_less, ~is_less))
        for bit in range(8 * index, 8 * index + 8):
            m.d.comb += results[bit].eq(Mux(
                picked, tables.word_select(index, 4).bit_select(Cat(first[bit], second[bit]), 1),
                Mux(element_overflow[index], saturated[bit % 8], magnitudes[bit])))
    compare = per_size(m, esize_log2, "compare", chunk_bytes, lambda log2: Cat(
        at_last_byte(log2, truth, index) if index % (1 << log2) == 0 else Const(0)
        for index in range(chunk_bytes)))
    return results, compare


def _wide_fits(m: Module, esize_log2: Value, lane: Value, signed_: Value) -> Value:
    """Whether the 64-bit element ``lane`` of a wide compare (signed when ``signed_``) is the
    extension of its low ``n`` bits, ``n`` the bits of the elements it is compared with (bits
    ``n - 1`` up all equal, or, unsigned, bits ``n`` up all 0); always, for 64-bit elements.
    Bits ``k`` up being all 0 or all 1 is found for every ``k`` it needs from the top down."""
    zeros_from, ones_from = {64: Const(1)}, {64: Const(1)}
    above = 64
    for bit in (32, 31, 16, 15, 8, 7):
        zeros_from[bit] = zeros_from[above] & ~lane[bit:above].any()
        ones_from[bit] = ones_from[above] & lane[bit:above].all()
        above = bit
    fits = Signal(name=f"{lane.name}_fits")
    with m.Switch(esize_log2):
        for log2 in ELEMENT_SIZES[:-1]:
            bits = 8 << log2
            with m.Case(log2):
                m.d.comb += fits.eq(Mux(signed_, zeros_from[bits - 1] | ones_from[bits - 1],
                                        zeros_from[bits]))
        with m.Default():
            m.d.comb += fits.eq(1)
    return fits


def _bit_masks(m: Module, mask64: Value, immr: Value, imms: Value) -> Value:
    """``DecodeBitMasks`` (the 64-bit pattern) of a valid logical immediate ``N:immr:imms``:
    the element has 2^len bits, ``len`` the highest set bit of ``N:NOT(imms)``; ``imms`` holds
    the number of ones minus one and ``immr`` the right rotation, both modulo the element size
    (docs/isa.md, "Logical immediates").

    With ``S`` and ``R`` those two and ``e`` the element size, the rotated element's ones run
    from place ``e - R`` to place ``end = (S - R) mod e``: the bit at place ``j`` of its element
    is one where ``j <= end`` and ``j >= e - R`` both hold if ``R`` is above ``S`` (the run does
    not wrap round), or either holds if not. ``j >= e - R`` is ``not j <= e - 1 - R`` (never,
    for ``R`` 0), so each is a comparison of every bit's place with one value
    (:func:`_at_most`), and no element is built and rotated at every size. An ``N:imms`` of no
    element size gives 0."""
    selected = [~mask64 & ~imms[length] & imms[length + 1:6].all() for length in range(1, 6)]
    selected.append(mask64)                     # element sizes of 2 to 64 bits
    levels = Signal(6, name="bitmask_levels")   # e - 1
    m.d.comb += levels.eq(Cat(Cat(selected[length - 1:]).any() for length in range(1, 7)))
    count, rotation = Signal(6, name="bitmask_count"), Signal(6, name="bitmask_rotation")
    difference = Signal(7, name="bitmask_difference")
    m.d.comb += [count.eq(imms & levels), rotation.eq(immr & levels),
                 difference.eq(count - rotation)]
    up_to_end = _at_most(difference[:6] & levels, levels)
    before_start = _at_most(~rotation & levels, levels)
    pattern = Signal(64)
    m.d.comb += pattern.eq(Mux(difference[6], up_to_end & ~before_start,
                               up_to_end | ~before_start)
                           & Cat(selected).any().replicate(64))
    return pattern


def _at_most(value: Value, levels: Value) -> Value:
    """One bit per bit of a 64-bit pattern: its place in its element of ``levels + 1`` bits (a
    power of two) is at most ``value`` (below ``levels + 1``). Built from the low bits up: the
    places that agree in their low ``p`` bits share their comparison of those bits."""
    at_most = [Const(1)]    # by the place's low bits: at most value in those bits
    for bit in range(6):
        at_most = ([low | value[bit] for low in at_most]
                   + [low & (value[bit] | ~levels[bit]) for low in at_most])
    return Cat(at_most)
