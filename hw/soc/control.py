"""The SoC wrapper's AXI4-Lite subordinate: the engine's control block, its status, its
performance counters, an issue FIFO and a result FIFO, at the offsets of
:data:`zatile.hw.soc.registers.REGISTERS` (the register map and how a host uses it are
documented there).

A write takes its address and data together (``AWREADY`` and ``WREADY`` rise when both are
valid) and is answered on B the next cycle; a read is answered on R two cycles after its
address, so a read that follows the B of a ``DEBUG_SELECT`` write sees the new selection.
Strobes select the bytes a write changes in a read-write register; writes to action registers
(``ISSUE_WORD``, ``RESULT_POP``, ``ISSUE_OVERFLOW_CLEAR``) take the whole word.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from zatile.hw._common import ConfigComponent, max_bytes
from zatile.hw.engine import DebugAddressLayout, IssueLayout, IssuePortLayout, ResultLayout, \
    ResultPortLayout
from zatile.hw.perf_counters import PERF_COUNTERS, PerfLayout
from zatile.hw.soc.axi import Response, axi4_lite_signature
from zatile.hw.soc.registers import DEBUG_WINDOW, ID_VALUE, ISSUE_DEPTH, REGISTERS, \
    REGISTERS_BY_NAME, RESULT_DEPTH, debug_words

__all__ = ["CONTROL_ADDRESS_WIDTH", "AxiLiteControl"]

#: Byte address bits of the control port (4 KiB).
CONTROL_ADDRESS_WIDTH = 12


def _assemble(register_name: str, values: dict[str, Value]) -> Value:
    """A register's 32-bit value from its fields' values, placed as the map says."""
    word = Const(0, 32)
    for field in REGISTERS_BY_NAME[register_name].fields:
        value = Value.cast(values[field.name])
        word = word | (value[:field.width].as_unsigned() << field.lsb)
    return word[:32]


class AxiLiteControl(ConfigComponent):
    """The register map on an AXI4-Lite subordinate port, driving the engine's control block,
    issue port and debug port and taking its result port (module notes).

    Parameters
    ----------
    config : EngineConfig

    Attributes
    ----------
    axi : In(axi4_lite_signature(12, 32))
    issue : Out(stream.Signature(IssuePortLayout(config)))
        To the engine's issue port: one instruction per transfer (an engine with more than one
        issue lane leaves the others idle).
    result : In(stream.Signature(ResultPortLayout(config)))
        From the engine's result port.
    smcr_len, sme_enable, fpcr, za_context : Out
        The engine's control inputs (``za_context`` only with more than one ZA context).
    svcr, svl_bytes, id_aa64smfr0, engine_idle : In
        The engine's status outputs (``engine_idle``: the engine's and the memory port's).
    debug_addr : Out(DebugAddressLayout)
    debug_data : In(MAXB * 8)
    perf : In(PerfLayout)
    irq : Out(1)
        A result is waiting and ``CONTROL.IRQ_ENABLE`` is set.
    """

    def __init__(self, config):
        maxb = max_bytes(config)
        members = {
            "axi": In(axi4_lite_signature(CONTROL_ADDRESS_WIDTH)),
            "issue": Out(stream.Signature(IssuePortLayout(config))),
            "result": In(stream.Signature(ResultPortLayout(config))),
            "smcr_len": Out(4), "sme_enable": Out(1), "fpcr": Out(32),
            "svcr": In(2), "svl_bytes": In(range(maxb + 1)), "id_aa64smfr0": In(64),
            "engine_idle": In(1),
            "debug_addr": Out(DebugAddressLayout), "debug_data": In(maxb * 8),
            "perf": In(PerfLayout), "irq": Out(1),
        }
        if config.za_contexts > 1:
            members["za_context"] = Out(range(config.za_contexts))
        super().__init__(config, wiring.Signature(members))

    def elaborate(self, platform):
        m = Module()
        config, axi = self.config, self.axi
        words = debug_words(config)

        # ---- the FIFOs
        m.submodules.issue_fifo = issue_fifo = SyncFIFO(width=IssueLayout.size,
                                                         depth=ISSUE_DEPTH)
        m.submodules.result_fifo = result_fifo = SyncFIFO(width=ResultLayout.size,
                                                           depth=RESULT_DEPTH)
        m.d.comb += [
            self.issue.valid.eq(issue_fifo.r_rdy),
            self.issue.payload.lanes[0].eq(issue_fifo.r_data),
            self.issue.payload.count.eq(1),
            issue_fifo.r_en.eq(self.issue.valid & self.issue.ready),
        ]
        # The result port gives up to issue_lanes results per transfer; they enter the FIFO one
        # per cycle from a holding register.
        held = Signal(ResultPortLayout(config))
        held_index = Signal(range(config.issue_lanes))
        held_valid = Signal()
        m.d.comb += [self.result.ready.eq(~held_valid),
                     result_fifo.w_data.eq(held.lanes[held_index]),
                     result_fifo.w_en.eq(held_valid)]
        with m.If(self.result.valid & self.result.ready):
            m.d.sync += [held.eq(self.result.payload), held_index.eq(0),
                         held_valid.eq(self.result.payload.count != 0)]
        with m.If(result_fifo.w_en & result_fifo.w_rdy):
            m.d.sync += held_index.eq(held_index + 1)
            with m.If(held_index + 1 == held.count):
                m.d.sync += held_valid.eq(0)
        oldest = data.View(ResultLayout, result_fifo.r_data)

        # ---- registers
        sme_enable = Signal(init=1)
        smcr_len = Signal(4, init=config.max_svl // 128 - 1)
        za_context = Signal(4)
        irq_enable = Signal()
        fpcr = Signal(32)
        sources = {f"ISSUE_SRC{n}_{half}": Signal(32, name=f"src{n}_{half.lower()}")
                   for n in range(3) for half in ("LO", "HI")}
        debug_select = Signal(DebugAddressLayout)
        overflow = Signal()
        perf_high = {name: Signal(32, name=f"perf_{name}_hi") for name in PERF_COUNTERS}
        m.d.comb += [self.sme_enable.eq(sme_enable), self.smcr_len.eq(smcr_len),
                     self.fpcr.eq(fpcr), self.debug_addr.eq(debug_select),
                     self.irq.eq(irq_enable & result_fifo.r_rdy)]
        if config.za_contexts > 1:
            m.d.comb += self.za_context.eq(za_context)

        control = {"SME_ENABLE": sme_enable, "SMCR_LEN": smcr_len, "ZA_CONTEXT": za_context,
                   "IRQ_ENABLE": irq_enable}
        readable = {
            "ID": Const(ID_VALUE, 32),
            "CONFIG": _assemble("CONFIG", {"MAX_SVL": Const(config.max_svl, 12),
                                           "MEM_DATA_WIDTH": Const(config.mem_data_width, 12),
                                           "ZA_CONTEXTS": Const(config.za_contexts, 5)}),
            "SMFR0_LO": self.id_aa64smfr0[:32], "SMFR0_HI": self.id_aa64smfr0[32:],
            "CONTROL": _assemble("CONTROL", control),
            "FPCR": fpcr,
            "STATUS": _assemble("STATUS", {
                "SVCR": self.svcr, "ISSUE_OVERFLOW": overflow, "SVL_BYTES": self.svl_bytes,
                "IDLE": self.engine_idle & ~issue_fifo.r_rdy & ~held_valid}),
            "FIFO": _assemble("FIFO", {"ISSUE_FREE": ISSUE_DEPTH - issue_fifo.level,
                                       "RESULTS": result_fifo.level,
                                       "ISSUE_DEPTH": Const(ISSUE_DEPTH, 8),
                                       "RESULT_DEPTH": Const(RESULT_DEPTH, 8)}),
            **sources,
            "RESULT": _assemble("RESULT", {
                "VALID": result_fifo.r_rdy, "STATUS": oldest.status.as_value(),
                "SMTC": oldest.smtc, "NZCV": oldest.nzcv, "SETS_FLAGS": oldest.sets_flags,
                "FPSR_RESET": oldest.fpsr_reset, "FPSR_FLAGS": oldest.fpsr_flags}),
            "RESULT_SCALAR_LO": oldest.scalar[:32], "RESULT_SCALAR_HI": oldest.scalar[32:],
            "RESULT_FAULT_LO": oldest.fault_address[:32],
            "RESULT_FAULT_HI": oldest.fault_address[32:],
            "DEBUG_SELECT": _assemble("DEBUG_SELECT", {"SPACE": debug_select.space,
                                                       "INDEX": debug_select.index}),
        }
        for name in PERF_COUNTERS:
            readable[f"PERF_{name.upper()}_LO"] = getattr(self.perf, name)[:32]
            readable[f"PERF_{name.upper()}_HI"] = perf_high[name]
        unlisted = {r.name for r in REGISTERS if r.access != "WO"} - set(readable)
        assert not unlisted, f"readable registers without a value: {unlisted}"

        # ---- writes: address and data together, answered on B the next cycle
        write = axi.awvalid & axi.wvalid & ~axi.bvalid
        write_error = Signal()
        strobes = Cat(*(axi.wstrb[i].replicate(8) for i in range(4)))

        def merged(old: Value) -> Value:
            """``old`` with the bytes the write's strobes select replaced."""
            return (old & ~strobes) | (axi.wdata & strobes)

        def offset_of(name: str) -> int:
            return REGISTERS_BY_NAME[name].offset >> 2

        def fields_of(name: str, word: Value) -> dict[str, Value]:
            return {field.name: word[field.lsb:field.lsb + field.width]
                    for field in REGISTERS_BY_NAME[name].fields}

        new_control = fields_of("CONTROL", merged(readable["CONTROL"]))
        new_select = fields_of("DEBUG_SELECT", merged(readable["DEBUG_SELECT"]))
        entry = data.View(IssueLayout, issue_fifo.w_data)
        m.d.comb += [entry.word.eq(axi.wdata)] + [
            getattr(entry, f"src{n}").eq(Cat(sources[f"ISSUE_SRC{n}_LO"],
                                             sources[f"ISSUE_SRC{n}_HI"])) for n in range(3)]
        written = set()
        m.d.comb += [axi.awready.eq(write), axi.wready.eq(write)]
        with m.If(axi.bvalid & axi.bready):
            m.d.sync += axi.bvalid.eq(0)
        with m.If(write):
            m.d.sync += [axi.bvalid.eq(1),
                         axi.bresp.eq(Mux(write_error, Response.SLVERR, Response.OKAY))]
            with m.Switch(axi.awaddr[2:]):
                with m.Case(offset_of("CONTROL")):
                    written.add("CONTROL")
                    with m.If(new_control["ZA_CONTEXT"] < config.za_contexts):
                        m.d.sync += [register.eq(new_control[name])
                                     for name, register in control.items()]
                    with m.Else():
                        m.d.comb += write_error.eq(1)
                with m.Case(offset_of("FPCR")):
                    written.add("FPCR")
                    m.d.sync += fpcr.eq(merged(fpcr))
                for name, register in sources.items():
                    with m.Case(offset_of(name)):
                        written.add(name)
                        m.d.sync += register.eq(merged(register))
                with m.Case(offset_of("DEBUG_SELECT")):
                    written.add("DEBUG_SELECT")
                    m.d.sync += [debug_select.space.eq(new_select["SPACE"]),
                                 debug_select.index.eq(new_select["INDEX"])]
                with m.Case(offset_of("ISSUE_WORD")):
                    written.add("ISSUE_WORD")
                    with m.If(issue_fifo.w_rdy):
                        m.d.comb += issue_fifo.w_en.eq(1)
                    with m.Else():
                        m.d.comb += write_error.eq(1)
                        m.d.sync += overflow.eq(1)
                with m.Case(offset_of("ISSUE_OVERFLOW_CLEAR")):
                    written.add("ISSUE_OVERFLOW_CLEAR")
                    with m.If(axi.wdata[0]):
                        m.d.sync += overflow.eq(0)
                with m.Case(offset_of("RESULT_POP")):
                    written.add("RESULT_POP")
                    with m.If(result_fifo.r_rdy):
                        m.d.comb += result_fifo.r_en.eq(1)
                    with m.Else():
                        m.d.comb += write_error.eq(1)
                with m.Default():
                    m.d.comb += write_error.eq(1)
        unwritten = {r.name for r in REGISTERS if r.access != "RO"} - written
        assert not unwritten, f"writable registers without a write: {unwritten}"

        # ---- reads: the address is taken, the value formed the next cycle, answered on R
        read_pending = Signal()
        read_offset = Signal(CONTROL_ADDRESS_WIDTH - 2)
        m.d.comb += axi.arready.eq(~read_pending & ~axi.rvalid)
        with m.If(axi.arvalid & axi.arready):
            m.d.sync += [read_pending.eq(1), read_offset.eq(axi.araddr[2:])]
        with m.If(axi.rvalid & axi.rready):
            m.d.sync += axi.rvalid.eq(0)
        with m.If(read_pending):
            m.d.sync += [read_pending.eq(0), axi.rvalid.eq(1), axi.rresp.eq(Response.OKAY)]
            with m.Switch(read_offset):
                for name, value in readable.items():
                    with m.Case(offset_of(name)):
                        m.d.sync += axi.rdata.eq(value)
                        if name.startswith("PERF_") and name.endswith("_LO"):
                            counter = name[len("PERF_"):-len("_LO")].lower()
                            m.d.sync += perf_high[counter].eq(getattr(self.perf, counter)[32:])
                for word in range(words):
                    with m.Case((DEBUG_WINDOW >> 2) + word):
                        m.d.sync += axi.rdata.eq(self.debug_data[32 * word:32 * word + 32])
                with m.Default():
                    m.d.sync += [axi.rdata.eq(0), axi.rresp.eq(Response.SLVERR)]
        return m
