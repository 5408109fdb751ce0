"""The single-cycle operations without memory or ZA: predicate set-up, broadcasts and counts.

PTRUE, PFALSE, WHILELT/WHILELO, DUP (scalar and immediate), CNTB/H/W/D, RDVL, and the SME
scalar instructions RDSVL, ADDSVL, ADDSPL and MRS SVCR. Everything is combinational from the
decoded instruction, its operands, the effective SVL and SVCR; the engine writes the results
at the end of the dispatch cycle.

Element counts of the predicate patterns (``DecodePredCount``) come from
:func:`zatile.sw.arch.pseudocode.predicate_count`, evaluated here for every element count the configuration can
have, so the hardware and the reference model share one definition.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib.wiring import In, Out

from zatile.sw.arch.pseudocode import predicate_count
from zatile.sw.arch.config import EngineConfig

from zatile.hw._common import ConfigComponent, max_bytes, row_layout
from zatile.hw.decoder import DecodedLayout, Op

__all__ = ["SVE_OPS", "StreamingSveUnit"]

#: Operations the unit performs.
SVE_OPS = (Op.PTRUE, Op.PFALSE, Op.WHILE, Op.DUP_SCALAR, Op.DUP_IMM, Op.CNT, Op.RDSVL,
           Op.ADDSVL, Op.MRS_SVCR)


class StreamingSveUnit(ConfigComponent):
    """Predicate, broadcast and scalar results of one instruction (combinational).

    Parameters
    ----------
    config : EngineConfig
        ``max_svl`` sizes the results; ``supported_svls`` bounds the element counts.

    Attributes
    ----------
    decoded : View(DecodedLayout), in
    first, second : Signal(64), in
        The instruction's general-register operands in order (``Rn``, ``Rm``).
    svl_log2 : Signal(4), in
        log2 of the effective SVL in bytes.
    svcr : Signal(2), in
    predicate : Signal(MAXB), out
        The P register value of PTRUE/PFALSE/WHILE (clear beyond the effective SVL).
    vector : View(row), out
        The Z register value of DUP.
    scalar : Signal(64), out
        The general-register result of CNTx, RDVL, RDSVL, ADDSVL, ADDSPL and MRS SVCR.
    nzcv : Signal(4), out
        The flags WHILELT/WHILELO set (N bit 3, Z, C, V bit 0): PredTest of the result under
        an all-true governing predicate (docs/isa.md, "Streaming SVE subset").

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    """

    def __init__(self, config: EngineConfig):
        super().__init__(config, {
            "decoded": In(DecodedLayout),
            "first": In(64),
            "second": In(64),
            "svl_log2": In(4),
            "svcr": In(2),
            "predicate": Out(max_bytes(config)),
            "vector": Out(row_layout(config)),
            "scalar": Out(64),
            "nzcv": Out(4),
        })

    def elaborate(self, platform):
        m = Module()
        maxb = max_bytes(self._config)
        decoded, fields, flags = self.decoded, self.decoded.fields, self.decoded.flags
        esize_log2 = decoded.esize_log2

        # Elements of the instruction's size in a vector: 2**elements_log2.
        elements_log2 = Signal(range(16))
        m.d.comb += elements_log2.eq(self.svl_log2 - esize_log2)
        elements = Signal(range(maxb + 1))
        m.d.comb += elements.eq(1 << elements_log2)

        # DecodePredCount for every (element count, pattern) the configuration can see.
        pattern_count = Signal(range(maxb + 1))
        counts = sorted({svl // 8 >> log2 for svl in self._config.supported_svls
                         for log2 in range(4)})
        with m.Switch(elements_log2):
            for count in counts:
                with m.Case(count.bit_length() - 1):
                    with m.Switch(fields.pattern):
                        for pattern in range(32):
                            value = predicate_count(pattern, count)
                            if value:
                                with m.Case(pattern):
                                    m.d.comb += pattern_count.eq(value)

        # WHILELT/WHILELO: elements op1 + i < op2, i.e. clamp(op2 - op1, 0, elements).
        def extended(operand):
            low = operand[:32]
            narrow = Cat(low, Mux(flags.unsigned, 0, low[31]).replicate(33))
            wide = Cat(operand, Mux(flags.unsigned, 0, operand[63]))
            return Mux(flags.wide, wide, narrow).as_signed()
        difference = Signal(signed(66))
        m.d.comb += difference.eq(extended(self.second) - extended(self.first))
        while_count = Signal(range(maxb + 1))
        with m.If(difference <= 0):
            m.d.comb += while_count.eq(0)
        with m.Elif(difference >= elements):
            m.d.comb += while_count.eq(elements)
        with m.Else():
            m.d.comb += while_count.eq(difference)

        # The first `count` elements active: bits b < count·E with b ≡ 0 (mod E).
        active_count = Mux(decoded.op == Op.WHILE, while_count,
                           Mux(decoded.op == Op.PTRUE, pattern_count, 0))
        limit = Signal(range(maxb + 1))
        m.d.comb += limit.eq(active_count << esize_log2)
        element_starts = Signal(maxb)
        with m.Switch(esize_log2):
            for log2 in range(4):
                with m.Case(log2):
                    m.d.comb += element_starts.eq(
                        Cat(Const(bit % (1 << log2) == 0) for bit in range(maxb)))
        m.d.comb += self.predicate.eq(Cat(limit > bit for bit in range(maxb)) & element_starts)
        # PredTest: N = first element active, Z = none active, C = not the last, V = 0.
        m.d.comb += self.nzcv.eq(Cat(Const(0, 1), while_count < elements, while_count == 0,
                                     while_count != 0))

        # DUP: the element replicated over the whole register.
        element = Signal(64)
        m.d.comb += element.eq(Mux(decoded.op == Op.DUP_SCALAR, self.first,
                                   fields.imm8 << (fields.sh * 8)))
        with m.Switch(esize_log2):
            for log2 in range(4):
                with m.Case(log2):
                    bits = 8 << log2
                    m.d.comb += self.vector.eq(element[:bits].replicate(maxb * 8 // bits))

        # Scalars: vector lengths in bytes (ADDSPL: predicate lengths) times imm6.
        unit_log2 = Signal(range(16))
        m.d.comb += unit_log2.eq(Mux(decoded.unit_pred, self.svl_log2 - 3, self.svl_log2))
        scaled = Signal(64)
        m.d.comb += scaled.eq(fields.imm << unit_log2)
        with m.Switch(decoded.op):
            with m.Case(Op.CNT):
                m.d.comb += self.scalar.eq(pattern_count * (fields.imm4 + 1))
            with m.Case(Op.RDSVL):
                m.d.comb += self.scalar.eq(scaled)
            with m.Case(Op.ADDSVL):
                m.d.comb += self.scalar.eq(self.first + scaled)
            with m.Case(Op.MRS_SVCR):
                m.d.comb += self.scalar.eq(self.svcr)
        return m
