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
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import data

from zatile.hw._common import max_bytes
from zatile.hw.decoder import CHOICES, Op
from zatile.hw.vector.common import (ELEMENT_SIZES, VectorExecutionUnit, active_bytes,
                                     chunk_part, chunk_registers, chunk_steps, element_starts,
                                     extend, predicate_test, saturate)

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
_KINDS = ("wrap", "sq", "uq", "max", "min", "abd")
_BITWISE_OPS = (Op.INT_AND, Op.INT_ORR, Op.INT_EOR, Op.INT_BIC)
_PREDICATE_OPS = (Op.PRED_LOGIC, Op.PRED_LOGIC_FLAGS, Op.PTEST)

_COND = CHOICES["cond"]
_LOGIC = CHOICES["logic"]
_SECOND = CHOICES["second"]
#: Compare conditions whose operands are unsigned.
_UNSIGNED_CONDITIONS = ("HS", "HI", "LO", "LS")


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

        # ---- operand chunks: the immediate replicated at the element size, reversed forms
        replicated = Signal(8 * chunk_bytes)
        with m.Switch(esize_log2):
            for log2 in ELEMENT_SIZES:
                with m.Case(log2):
                    bits = 8 << log2
                    m.d.comb += replicated.eq(Cat(*[immediate[:bits]] * (chunk_bytes >> log2)))
        second = Signal(8 * chunk_bytes)
        m.d.comb += second.eq(Mux(present.zm, second_vector, replicated))
        left, right = Signal(8 * chunk_bytes), Signal(8 * chunk_bytes)
        m.d.comb += [left.eq(Mux(flags.reversed, second, first)),
                     right.eq(Mux(flags.reversed, first, second))]

        # ---- per-element results at every element size
        # The element operation as controls shared by every element: operand signedness, add
        # or subtract, result kind (a compare subtracts, signed unless its condition is not).
        cond = decoded.choices.cond
        unsigned_compare = Cat(*(cond == _COND[name] for name in _UNSIGNED_CONDITIONS)).any()
        control = Signal(data.StructLayout({"a_signed": 1, "b_signed": 1, "subtract": 1,
                                            "kind": data.StructLayout({k: 1 for k in _KINDS}),
                                            "a_immediate": 1, "b_immediate": 1}))
        # An immediate operand takes part with its exact value (unsigned #imm8, lsl #8 of SQADD
        # is not a negative element).
        has_immediate = present.imm8 | present.imm5 | present.imm7
        m.d.comb += [control.a_immediate.eq(has_immediate & flags.reversed),
                     control.b_immediate.eq(has_immediate & ~flags.reversed)]
        with m.Switch(op):
            for element_op, (a_signed, b_signed, subtract, kind) in _ELEMENT_OPS.items():
                with m.Case(element_op):
                    m.d.comb += [control.a_signed.eq(a_signed), control.b_signed.eq(b_signed),
                                 control.subtract.eq(subtract), control.kind[kind].eq(1)]
            with m.Case(Op.CMP):
                m.d.comb += [control.a_signed.eq(~unsigned_compare),
                             control.b_signed.eq(~unsigned_compare), control.subtract.eq(1)]
        element_result = Signal(8 * chunk_bytes)
        compare = Signal(chunk_bytes)   # the compare's truth at each element's first bit
        with m.Switch(esize_log2):
            for log2 in ELEMENT_SIZES:
                with m.Case(log2):
                    results, truths = _elements(m, control, log2, chunk_bytes, left, right,
                                                second_vector, immediate, cond,
                                                decoded.choices.second == _SECOND.WIDE)
                    m.d.comb += [element_result.eq(results), compare.eq(truths)]

        # ---- element starts, active bytes, bitwise results
        starts = Signal(maxb)
        active = Signal(maxb)
        with m.Switch(esize_log2):
            for log2 in ELEMENT_SIZES:
                with m.Case(log2):
                    m.d.comb += [starts.eq(element_starts(log2, maxb)),
                                 active.eq(active_bytes(payload.governing, log2, maxb))]
        bitwise = Signal(8 * chunk_bytes)
        with m.Switch(op):
            with m.Case(Op.INT_AND):
                m.d.comb += bitwise.eq(left & right)
            with m.Case(Op.INT_ORR):
                m.d.comb += bitwise.eq(left | right)
            with m.Case(Op.INT_EOR):
                m.d.comb += bitwise.eq(left ^ right)
            with m.Case(Op.INT_BIC):
                m.d.comb += bitwise.eq(left & ~right)
            with m.Case(Op.INT_DUPM):
                m.d.comb += bitwise.eq(replicated)

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
        x = chunk_registers(m, steps, chunks, x_vector=Mux(is_bitwise, bitwise, element_result),
                            x_lanes=lanes_chunk, x_compare=compare_chunk)
        # The whole compare result on the last chunk: the chunks before it and this one.
        compare_result = Signal(maxb)
        m.d.comb += compare_result.eq(Cat(
            Mux(steps.chunk == k, compare_chunk, x["x_compare"].word_select(k, chunk_bytes))
            for k in range(chunks)))
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
            with m.Switch(op):
                with m.Case(Op.CMP):
                    m.d.sync += out.nzcv.eq(predicate_test(payload.governing & starts,
                                                            compare_result))
                with m.Case(Op.PRED_LOGIC_FLAGS):
                    m.d.sync += out.nzcv.eq(predicate_test(g, predicate_logic))
                with m.Case(Op.PTEST):
                    m.d.sync += out.nzcv.eq(predicate_test(g, n))
        m.d.comb += [out.vector.eq(x["x_vector"]), out.vector_lanes.eq(x["x_lanes"]),
                     out.predicate.eq(x_predicate | x["x_compare"]),
                     out.predicate_lanes.eq(x_predicate_lanes)]
        return m


def _elements(m: Module, control, log2: int, maxb: int, left, right, second_vector, immediate,
              cond, wide) -> tuple[Value, Value]:
    """The element results (``Cat`` of every element) and compare truths (one bit per byte, at
    each element's first byte) for elements of ``2^log2`` bytes.

    Each element has one adder of ``esize + 2`` bits (``a ± b`` of the extended operands, which
    cannot overflow), whose sign orders the operands and whose zero says they are equal; the
    wide compares (``.B/.H/.S`` against the 64-bit element of the lane) compare at 66 bits.
    """
    bits, count = 8 << log2, maxb >> log2
    width = bits + 2
    results, truths = [], []
    for index in range(count):
        a = left[index * bits:(index + 1) * bits]
        b = right[index * bits:(index + 1) * bits]
        exact = extend(immediate, True, 66)[:width].as_signed()
        x = Mux(control.a_immediate, exact, extend(a, control.a_signed, width))
        y = Mux(control.b_immediate, exact, extend(b, control.b_signed, width))
        total = Signal(signed(width), name=f"e{bits}_{index}_total")
        m.d.comb += total.eq(Mux(control.subtract, x - y, x + y))
        less, equal = total < 0, total == 0
        result = Signal(bits, name=f"e{bits}_{index}_result")
        kind = control.kind
        with m.If(kind.sq):
            m.d.comb += result.eq(saturate(total, bits, True))
        with m.Elif(kind.uq):
            m.d.comb += result.eq(saturate(total, bits, False))
        with m.Elif(kind.max):
            m.d.comb += result.eq(Mux(less, b, a))
        with m.Elif(kind.min):
            m.d.comb += result.eq(Mux(less, a, b))
        with m.Elif(kind.abd):
            m.d.comb += result.eq(Mux(less, -total, total)[:bits])
        with m.Else():
            m.d.comb += result.eq(total[:bits])
        results.append(result)
        if bits < 64:
            wide_b = second_vector[(index * bits) // 64 * 64:][:64]
            wide_x = extend(a, control.a_signed, 66)
            wide_y = extend(wide_b, control.b_signed, 66)
            less = Mux(wide, wide_x < wide_y, less)
            equal = Mux(wide, wide_x == wide_y, equal)
        truth = Signal(name=f"e{bits}_{index}_truth")
        with m.Switch(cond):
            for name, value in (("EQ", equal), ("NE", ~equal), ("GE", ~less),
                                ("GT", ~less & ~equal), ("LT", less), ("LE", less | equal),
                                ("HS", ~less), ("HI", ~less & ~equal), ("LO", less),
                                ("LS", less | equal)):
                with m.Case(_COND[name]):
                    m.d.comb += truth.eq(value)
        truths.append(Cat(truth, Const(0, (1 << log2) - 1)))
    return Cat(*results), Cat(*truths)


def _bit_masks(m: Module, mask64: Value, immr: Value, imms: Value) -> Value:
    """``DecodeBitMasks`` (the 64-bit pattern) of a valid logical immediate ``N:immr:imms``:
    the element has 2^len bits, ``len`` the highest set bit of ``N:NOT(imms)``; ``imms`` holds
    the number of ones minus one and ``immr`` the right rotation, both modulo the element size
    (docs/isa.md, "Logical immediates")."""
    pattern = Signal(64)
    for length in range(1, 7):
        bits = 1 << length
        count, rotation = imms[:length], immr[:length]
        ones = Signal(bits, name=f"bitmask_ones_{bits}")
        rotated = Signal(bits, name=f"bitmask_rotated_{bits}")
        m.d.comb += [ones.eq(((Const(1, bits + 1) << (count + 1)) - 1)[:bits]),
                     rotated.eq((Cat(ones, ones) >> rotation)[:bits])]
        selected = mask64 if length == 6 else ~mask64 & ~imms[length] & \
            Cat(*(imms[k] for k in range(length + 1, 6))).all()
        with m.If(selected):
            m.d.comb += pattern.eq(Cat(*[rotated] * (64 // bits)))
    return pattern
