"""PSTATE.{SM,ZA} (SVCR), the legality checks and the effective streaming vector length.

Legality runs in the order of the reference model and the Arm pseudocode (docs/isa.md, "Trap
order"):

1. the word is not an allocated form of the subset, its feature is absent from the
   configuration, or the datapath does not implement its operation → **UNDEF**;
2. SME access disabled (``sme_enable = 0``) → **SME trap, SMTC 0**, for every form of the table;
3. the form's PSTATE class: ``ZA`` needs PSTATE.ZA (else SMTC 3); ``SM_ZA`` needs PSTATE.SM
   (else SMTC 2) then PSTATE.ZA (else SMTC 3); ``STREAMING`` (the streaming-SVE subset; the engine
   has no non-streaming SVE) needs PSTATE.SM, else UNDEF; ``ACCESS`` and ``SME`` always pass.

SMSTART/SMSTOP (all variants) and MSR SVCR change PSTATE through :attr:`StateControl.execute`. A
change of SM asserts ``reset_sve`` for that cycle (the register file zeroes Z0-Z31, P0-P15 and FFR
at the clock edge, and the result carries ``fpsr_reset``); ZA 0→1 asserts ``zero_za`` (ZA storage
zeroes every row at the same edge). ZA is held in flip-flops, so **zeroing the whole ZA takes one
cycle**: the instruction that enables ZA completes in its dispatch cycle like any other
state-control instruction.

With ``config.za_contexts`` > 1 there is one PSTATE.ZA per ZA context (a context is a ZA array and
its enable); the ``context`` input selects the one in use. PSTATE.SM is shared: it governs the Z/P
registers, of which there is one set.
"""

from __future__ import annotations

from amaranth import Const, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from zatile.sw.arch import engine as arch_engine
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.constants import Smtc

from zatile.hw._common import ConfigComponent, derived_enum, max_bytes
from zatile.hw.decoder import Access, DecodedLayout, Op

__all__ = ["Status", "VerdictLayout", "StateControl"]

#: How an instruction ended (the ``status`` of a result): the members of
#: :class:`zatile.sw.arch.engine.Status`, encoded in their order.
Status = derived_enum("Status", [status.name for status in arch_engine.Status], 2)

#: The legality verdict on one instruction.
VerdictLayout = data.StructLayout({"status": Status, "smtc": 3})


class StateControl(ConfigComponent):
    """SVCR, legality of the instruction in execution, and the effective SVL.

    Parameters
    ----------
    config : EngineConfig
        Supplies the supported SVLs (for SMCR.LEN → SVL) and MAXB.

    Attributes
    ----------
    decoded : View(DecodedLayout), in
        The instruction being executed.
    sme_enable : Signal(1), in
        0 makes every form of the table trap with SMTC 0.
    smcr_len : Signal(4), in
        SMCR_ELx.LEN.
    operand : Signal(64), in
        The general-register operand of MSR SVCR.
    execute : Signal(1), in
        Perform the (legal) SMSTART/SMSTOP/MSR SVCR in ``decoded`` at the next clock edge.
    verdict : View(VerdictLayout), out
        Status (OK, UNDEF or SME_TRAP) and SMTC of ``decoded`` in the current PSTATE.
    svcr : Signal(2), out
        PSTATE.{ZA,SM} (bit 0 SM, bit 1 ZA).
    reset_sve : Signal(1), out
        ``execute`` changes PSTATE.SM this cycle: zero Z/P/FFR, report ``fpsr_reset``.
    zero_za : Signal(1), out
        ``execute`` changes PSTATE.ZA from 0 to 1 this cycle: zero all of ZA.
    svl_bytes : Signal(range(MAXB + 1)), out
        Effective SVL in bytes, ``config.effective_svl_for_len(smcr_len) // 8``.
    svl_log2 : Signal(4), out
        log2 of ``svl_bytes``.
    svl_mask : Signal(MAXB), out
        Bit ``b`` set when byte ``b`` of a vector is inside the effective SVL.
    context : Signal(range(za_contexts)), in
        Only when ``config.za_contexts`` > 1: the ZA context in use.

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    """

    def __init__(self, config: EngineConfig):
        maxb = max_bytes(config)
        members = {
            "decoded": In(DecodedLayout),
            "sme_enable": In(1),
            "smcr_len": In(4),
            "operand": In(64),
            "execute": In(1),
            "verdict": Out(VerdictLayout),
            "svcr": Out(2),
            "reset_sve": Out(1),
            "zero_za": Out(1),
            "svl_bytes": Out(range(maxb + 1)),
            "svl_log2": Out(4),
            "svl_mask": Out(maxb),
        }
        if config.za_contexts > 1:
            members["context"] = In(range(config.za_contexts))
        super().__init__(config, members)

    def elaborate(self, platform):
        m = Module()
        config = self._config

        # Effective SVL: a 16-entry table of SMCR.LEN → SVL_B.
        with m.Switch(self.smcr_len):
            for length in range(16):
                svl_bytes = config.effective_svl_for_len(length) // 8
                with m.Case(length):
                    m.d.comb += [
                        self.svl_bytes.eq(svl_bytes),
                        self.svl_log2.eq(svl_bytes.bit_length() - 1),
                        self.svl_mask.eq((1 << svl_bytes) - 1),
                    ]

        sm = Signal()
        za_per_context = Signal(config.za_contexts)
        context = self.context if config.za_contexts > 1 else Const(0, 1)
        za = za_per_context.bit_select(context, 1)
        m.d.comb += self.svcr.eq(sm | za << 1)

        verdict, decoded = self.verdict, self.decoded
        with m.If(decoded.undef):
            m.d.comb += verdict.status.eq(Status.UNDEF)
        with m.Elif(~self.sme_enable):
            m.d.comb += [verdict.status.eq(Status.SME_TRAP), verdict.smtc.eq(Smtc.SME_DISABLED)]
        with m.Else():
            with m.Switch(decoded.access):
                with m.Case(Access.ZA):
                    with m.If(~za):
                        m.d.comb += [verdict.status.eq(Status.SME_TRAP),
                                     verdict.smtc.eq(Smtc.ZA_INACTIVE)]
                with m.Case(Access.SM_ZA):
                    with m.If(~sm):
                        m.d.comb += [verdict.status.eq(Status.SME_TRAP),
                                     verdict.smtc.eq(Smtc.NEEDS_STREAMING)]
                    with m.Elif(~za):
                        m.d.comb += [verdict.status.eq(Status.SME_TRAP),
                                     verdict.smtc.eq(Smtc.ZA_INACTIVE)]
                with m.Case(Access.STREAMING):
                    with m.If(~sm):
                        m.d.comb += verdict.status.eq(Status.UNDEF)

        # SMSTART/SMSTOP (MSR SVCRxx, #imm) and MSR SVCR, Xt: SetPSTATE_SM then SetPSTATE_ZA.
        new_sm = Signal()
        new_za = Signal()
        flags = decoded.flags
        m.d.comb += [new_sm.eq(sm), new_za.eq(za)]
        with m.If(self.execute):
            with m.Switch(decoded.op):
                with m.Case(Op.MSR_SVCR_IMM):
                    m.d.comb += [
                        new_sm.eq(Mux(flags.set_sm, flags.start, sm)),
                        new_za.eq(Mux(flags.set_za, flags.start, za)),
                    ]
                with m.Case(Op.MSR_SVCR):
                    m.d.comb += [new_sm.eq(self.operand[0]), new_za.eq(self.operand[1])]
        m.d.comb += [
            self.reset_sve.eq(new_sm != sm),
            self.zero_za.eq(new_za & ~za),
        ]
        m.d.sync += [sm.eq(new_sm), za_per_context.bit_select(context, 1).eq(new_za)]
        return m
