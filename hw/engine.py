"""The ZA tile engine: real A64 SME instruction words in, architectural effects and results out.

Ports
-----
``issue`` (stream in, :func:`IssuePortLayout`)
    Up to ``config.issue_lanes`` instructions per transfer, in program
    order in the first ``count`` lanes (a transfer with ``count`` 0 carries nothing). Each
    (:data:`IssueLayout`) is the 32-bit ``word`` and ``src0..src2``, the values of the general
    registers it reads, in :func:`sw.isa.scalar_sources` order (the host resolves XZR to 0, SP
    to its value, and W operands to their low 32 bits). The engine holds no general registers.
``result`` (stream out, :func:`ResultPortLayout`)
    The results of the next ``count`` instructions (1 to ``issue_lanes``), in issue order. Each
    (:data:`ResultLayout`): ``status`` (OK, UNDEF, SME_TRAP, FAULT), ``smtc`` for
    an SME trap, ``fault_address`` for a fault, ``scalar`` (the value of MRS SVCR, RDSVL, RDVL,
    CNTx, ADDSVL, ADDSPL, and of the vector unit's INC/DEC Xdn, CNTP, LASTA/B, CLASTA/B to a
    general register, for the host to write to the destination register),
    ``fpsr_reset`` (PSTATE.SM changed: the host sets FPSR to 0x0800009F, which the engine does
    not hold), ``nzcv`` with ``sets_flags`` (an instruction of ``Trait.SETS_FLAGS``
    completed: the host sets PSTATE.NZCV, which the engine does not hold, to ``nzcv``), and
    ``fpsr_flags`` (FPSR bits 7-0: the cumulative exceptions a floating-point instruction of
    ``Trait.FP_FLAGS`` raised, for the host to OR into FPSR).
``mem_req`` / ``mem_resp`` (streams, :mod:`hw.lsu`)
    The memory master: aligned beats of ``mem_data_width`` bits with byte enables; exactly one
    response per request, in order; ``error`` aborts the instruction with FAULT.
Control block (inputs, change only while ``idle``)
    ``smcr_len`` (SMCR_ELx.LEN: the effective SVL is the largest supported length not above
    (LEN+1)·128), ``sme_enable`` (0: every SME/SVE instruction traps with SMTC 0, as before the
    kernel enables SME for a thread), ``fpcr`` (RMode, FZ, FZ16, DN are used), and ``za_context``
    when the configuration has more than one ZA context. A change of the effective SVL zeroes
    Z, P, FFR and every ZA context.
Status outputs
    ``svcr`` (PSTATE.SM, PSTATE.ZA), ``svl_bytes``, ``id_aa64smfr0`` (ID_AA64SMFR0_EL1 of the
    configuration), ``idle`` (no instruction in either queue and no outer product in flight).
``debug_addr`` / ``debug_data``
    Read-only backdoor: ``debug_data`` shows the ZA row, Z, P or FFR register that
    ``debug_addr`` selected one cycle earlier (meaningful while idle). It reads through the
    read ports of execution (the first Z and P ports, the ZA slice port), which it takes while
    the execution queue is empty: debug ports of their own would be another copy of every
    block-RAM bank of Z and ZA. Z and ZA are read at the falling edge
    (``hw/_common.py``, ``falling_edge_reads``), so ``debug_addr`` must change only at rising
    edges, driven from a register.
``perf``
    64-bit event counters since reset (:mod:`zatile.hw.perf_counters`).

Execution
---------
Instructions are routed in order from the issue port, up to ``issue_lanes`` a cycle, to the load
queue (vector and predicate loads legal when routed, :mod:`zatile.hw.load_queue`) or to the
execution queue (everything else); results leave in program order, up to ``issue_lanes`` a cycle
(docs/architecture.md, "Decoupled execution"). The oldest execution-queue instruction is
dispatched from stage ``d_`` once every older load has written its register; its result waits
in the execution results queue until the results before it have left.
A trap is decided there from the decoder and PSTATE and changes nothing. Single-cycle
instructions (state control, predicate set-up and scalar operations, MOVA, ZERO) complete in
their dispatch cycle; the vector unit's (:mod:`zatile.hw.vector`) take the operands read in the
dispatch cycle and wait there for the unit's result (a cycle or more later), which is written as
they complete; memory instructions of the execution queue hold the dispatch stage until the
load/store unit finishes (LD2-4/ST2-4: until the structure sequencer, :mod:`zatile.hw.structure`,
has moved every register), but for a store of one access, which **posts**: it leaves dispatch as
the unit takes its access and completes, in order, when the access is answered, later stores
starting theirs meanwhile and every other instruction completing only once none is in flight;
outer products and ADDHA/ADDVA are handed to their array and complete
(result OK) in the cycle the array accepts them, one per cycle. The arrays capture Z and P
operands at acceptance, so later instructions may overwrite them at once. Loads of the load queue
run in the load/store unit beside all this, several in flight, each once the execution-queue
instructions it depends on for memory and its predicate have completed, and write their register
from their load buffer once the instructions that read or write it have completed
(:mod:`zatile.hw.register_scoreboard`). ZA hazards are resolved by the interlock
(:mod:`zatile.hw.za_interlock`) on the ZA row groups (row mod 8) the arrays have in flight: an
instruction that reads or writes ZA rows an outer product will still write waits for it, an outer
product waits for the other array's overlapping operations, and SVCR writes wait for both
arrays to drain; nothing is routed behind an SVCR write until it has completed.
"""

from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.isa import Trait

from zatile.hw._common import ConfigComponent, check_config, max_bytes
from zatile.hw.decoder import (NO_SLOT, DecodedLayout, Decoder, Op, check_known_params,
                               ops_of)
from zatile.hw.fp.fp_mopa import FpOuterProductArray, FpOuterProductKind, KIND_FEATURES
from zatile.hw.int_mopa import IntOpKind, IntOuterProductArray
from zatile.hw.library import ModuleLibrary
from zatile.hw.lane_fifo import LaneFifo
from zatile.hw.load_queue import LoadQueue, index_width, load_pointer
from zatile.hw.lsu import (MEMORY_OPS, STORE_OPS, STRUCTURE_OPS, ControlSignature,
                           LoadStoreUnit, MemRequestLayout, MemResponseLayout, access_of)
from zatile.hw.perf_counters import PerfCounters, PerfLayout
from zatile.hw.regfile import P_REGISTERS, Z_REGISTERS, RegisterFile
from zatile.hw.register_scoreboard import RegisterScoreboard
from zatile.hw.state_control import StateControl, Status
from zatile.hw.structure import StructureAccess
from zatile.hw.sve_unit import SVE_OPS, StreamingSveUnit
from zatile.hw.vector import VECTOR_OPS, VectorUnit
from zatile.hw.za_interlock import ZaInterlock
from zatile.hw.za_storage import ELEMENT_SIZES, ZaStorage

__all__ = ["IssueLayout", "IssuePortLayout", "ExecutionEntryLayout", "ResultLayout",
           "ResultPortLayout", "DebugAddressLayout", "DebugSpace", "FP_OPS", "IMPLEMENTED_OPS",
           "ZaTileEngine"]

#: One instruction of the issue port.
IssueLayout = data.StructLayout({"word": 32, "src0": 64, "src1": 64, "src2": 64})
#: The result of one instruction.
ResultLayout = data.StructLayout({"status": Status, "smtc": 3, "scalar": 64,
                                  "fault_address": 64, "fpsr_reset": 1, "nzcv": 4,
                                  "sets_flags": 1, "fpsr_flags": 8})
#: What ``debug_addr`` selects.
DebugAddressLayout = data.StructLayout({"space": 2, "index": 8})


def IssuePortLayout(config: EngineConfig) -> data.StructLayout:
    """The issue payload: ``count`` instructions in program order, in the first of
    ``config.issue_lanes`` lanes."""
    return data.StructLayout({"lanes": data.ArrayLayout(IssueLayout, config.issue_lanes),
                              "count": range(config.issue_lanes + 1)})


def ResultPortLayout(config: EngineConfig) -> data.StructLayout:
    """The result payload: the results of the next ``count`` instructions, in the first of
    ``config.issue_lanes`` lanes."""
    return data.StructLayout({"lanes": data.ArrayLayout(ResultLayout, config.issue_lanes),
                              "count": range(config.issue_lanes + 1)})


def ExecutionEntryLayout(config: EngineConfig) -> data.StructLayout:
    """An entry of the execution queue: the instruction, how many loads were routed before it
    (:func:`~zatile.hw.load_queue.load_pointer`), and the instruction decoded as it was routed
    (one decoder per issue lane serves routing and execution)."""
    return data.StructLayout({"issue": IssueLayout, "loads_before": load_pointer(config),
                              "decoded": DecodedLayout})


class DebugSpace:
    """``debug_addr.space`` values."""

    ZA = 0
    Z = 1
    P = 2
    FFR = 3


#: Outer products of the floating-point array, with its operation kind.
FP_OPS = {Op.FMOPA_FP32: FpOuterProductKind.FMOPA_S, Op.FMOPA_FP64: FpOuterProductKind.FMOPA_D,
          Op.FMOPA_FP16_WIDENING: FpOuterProductKind.FMOPA_H_S,
          Op.BFMOPA: FpOuterProductKind.BFMOPA}
#: Outer products of the integer array: every other one.
_INT_OPS = tuple(op for op in ops_of(Trait.OUTER_PRODUCT) if op not in FP_OPS)
_SLICE_OPS = ops_of(Trait.ZA_SLICE)
_SVCR_WRITERS = ops_of(Trait.SVCR_WRITE)
#: Stores of one load/store-unit access: they leave dispatch as their access starts.
_POSTED_STORES = tuple(op for op in STORE_OPS if op not in STRUCTURE_OPS)
_FLAG_SETTERS = ops_of(Trait.SETS_FLAGS)
#: Loads that write the Z register ``Zt`` with the load/store unit's data.
_VECTOR_LOADS = (Op.LD1_CONTIGUOUS, Op.LDNT1_CONTIGUOUS, Op.LD1_SIGNED, Op.LD1_REPLICATE,
                 Op.LD1RQ)
#: The loads routed to the load queue (when legal): they write only a Z or P register.
DECOUPLED_LOADS = (*_VECTOR_LOADS, Op.LDR_REGISTER)
#: Decoded fields naming Z registers, P registers, and P registers an instruction may write.
_Z_FIELDS = ("zn", "zd", "zm", "zt", "zdn", "zda", "za", "vd", "vn", "vm", "vdn")
_P_FIELDS = ("pg", "pm", "pn", "pd", "pt", "pdn", "pv", "pdm")
_P_WRITTEN_FIELDS = ("pd", "pdn", "pdm")
#: Every operation the engine performs: every one of the table (``tests/test_tb_engine.py``
#: checks that none is left out; the decoder would make the forms of one left out UNDEF).
IMPLEMENTED_OPS = frozenset((*FP_OPS, *_INT_OPS, *_SLICE_OPS, *_SVCR_WRITERS, *SVE_OPS, *VECTOR_OPS,
                             Op.ZERO_ZA, Op.PREFETCH, *_VECTOR_LOADS,
                             Op.ST1_CONTIGUOUS, Op.STNT1_CONTIGUOUS, Op.LDR_REGISTER,
                             Op.STR_REGISTER, *STRUCTURE_OPS))
check_known_params(IMPLEMENTED_OPS)


def _one_of(value, members) -> object:
    return Cat(value == member for member in members).any()


def _loads_predicate(decoded) -> object:
    """Whether ``decoded`` is LDR P: the one decoupled load that writes a P register."""
    return decoded.flags.predicate & (decoded.op == Op.LDR_REGISTER)


def _register_marks(present, fields, names: tuple[str, ...], registers: int):
    """One bit per register (of ``registers``) that the present fields ``names`` name."""
    marks = Const(0, registers)
    for name in names:
        marks = marks | Mux(getattr(present, name), Const(1, registers) << getattr(fields, name),
                            0)
    return marks[:registers]


def _second_registers(present, fields):
    """The Z registers after ``Zn`` and ``Zt`` that multi-register forms use: Zn+1 (a table
    pair), Zt+1..Zt+3 (structure loads and stores); marked whether or not the form uses them."""
    marks = Mux(present.zn, Const(1, Z_REGISTERS) << (fields.zn + 1)[:5], 0)
    for k in range(1, 4):
        marks = marks | Mux(present.zt, Const(1, Z_REGISTERS) << (fields.zt + k)[:5], 0)
    return marks[:Z_REGISTERS]


def _first_present(present, fields, names: tuple[str, ...]):
    """The value of the first of the fields ``names`` the form has (the last one otherwise)."""
    value = getattr(fields, names[-1])
    for name in reversed(names[:-1]):
        value = Mux(getattr(present, name), getattr(fields, name), value)
    return value


class ZaTileEngine(ConfigComponent):
    """The ZA tile engine (module documentation).

    Parameters
    ----------
    config : EngineConfig
        Every parameter of the engine: SVLs, features, memory width, ZA contexts.
    library : ModuleLibrary, optional
        When generating Verilog: the outer-product units become one module per kind
        (:mod:`hw.library`).

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    """

    @staticmethod
    def check_arguments(config: EngineConfig, library: ModuleLibrary | None = None) -> None:
        check_config(config)

    def __init__(self, config: EngineConfig, library: ModuleLibrary | None = None):
        self._library = library
        maxb = max_bytes(config)
        width = config.mem_data_width
        members = {
            "issue": In(stream.Signature(IssuePortLayout(config))),
            "result": Out(stream.Signature(ResultPortLayout(config))),
            "mem_req": Out(stream.Signature(MemRequestLayout(width))),
            "mem_resp": In(stream.Signature(MemResponseLayout(width))),
            "smcr_len": In(4),
            "sme_enable": In(1),
            "fpcr": In(32),
            "svcr": Out(2),
            "svl_bytes": Out(range(maxb + 1)),
            "id_aa64smfr0": Out(64),
            "idle": Out(1),
            "debug_addr": In(DebugAddressLayout),
            "debug_data": Out(maxb * 8),
            "perf": Out(PerfLayout),
        }
        if config.za_contexts > 1:
            members["za_context"] = In(range(config.za_contexts))
        super().__init__(config, members)

    @property
    def has_fp(self) -> bool:
        """Whether the configuration has a floating-point outer-product feature."""
        return any(self._config.has(feature) for feature in KIND_FEATURES.values())

    def elaborate(self, platform):
        m = Module()
        config = self._config
        maxb = max_bytes(config)

        m.submodules.state = state = StateControl(config)
        m.submodules.registers = registers = RegisterFile(config)
        m.submodules.za = za = ZaStorage(config, tile_ports=2 if self.has_fp else 1)
        m.submodules.lsu = lsu = LoadStoreUnit(config)
        m.submodules.structure = structure = StructureAccess(config)
        m.submodules.sve = sve = StreamingSveUnit(config)
        m.submodules.vector = vector = VectorUnit(config)
        m.submodules.int_array = int_array = IntOuterProductArray(config)
        fp_array = None
        if self.has_fp:
            m.submodules.fp_array = fp_array = FpOuterProductArray(config, self._library)

        m.d.comb += [
            self.id_aa64smfr0.eq(config.id_aa64smfr0),
            state.smcr_len.eq(self.smcr_len),
            state.sme_enable.eq(self.sme_enable),
            self.svcr.eq(state.svcr),
            self.svl_bytes.eq(state.svl_bytes),
        ]
        if config.za_contexts > 1:
            m.d.comb += [state.context.eq(self.za_context), za.context.eq(self.za_context)]
        svl_mask = state.svl_mask

        # ---- routing: every instruction from the issue port goes, in program order, to the
        # load queue (a vector or predicate load that is legal now) or to the execution queue
        # (everything else), up to issue_lanes a cycle; ``order`` remembers which, for in-order
        # results. An execution-queue entry remembers how many loads were routed before it.
        depth = config.queue_depth
        width = index_width(config)
        lanes = config.issue_lanes
        x_entry_layout = ExecutionEntryLayout(config)
        # The execution queue's head addresses the register files, which read at the falling
        # edge: it stays in LUT RAM, read combinationally (hw/_common.py, falling_edge_reads).
        m.submodules.execution_queue = x_queue = LaneFifo(x_entry_layout.size, depth, lanes)
        m.submodules.order = order = LaneFifo(1, 2 * depth, lanes)
        m.submodules.load_queue = load_queue = LoadQueue(config)
        m.submodules.scoreboard = scoreboard = RegisterScoreboard(config)
        # An SVCR write changes what is legal: nothing is routed behind it until it completes
        # (a later lane of its own transfer goes to the execution queue).
        svcr_pending = Signal()
        x_routed = Signal(width)
        x_completed = Signal(width)
        m.d.comb += self.issue.ready.eq(x_queue.w_rdy & load_queue.room & order.w_rdy
                                        & ~(svcr_pending & (x_queue.level != 0)))
        routing = self.issue.valid & self.issue.ready
        loads_before = load_queue.tail
        x_index = x_routed
        behind_svcr_write = Const(0)
        x_svcr_write = Const(0)
        for lane, incoming in enumerate(self.issue.payload.lanes):
            route_decoder = Decoder(config, IMPLEMENTED_OPS)
            m.submodules[f"route_decoder{lane}"] = route_decoder
            routed = route_decoder.decoded
            present, routed_fields = routed.present, routed.fields
            m.d.comb += route_decoder.word.eq(incoming.word)
            arrives = Signal(name=f"lane{lane}_arrives")
            to_load_queue = Signal(name=f"lane{lane}_to_load_queue")
            svcr_writer = _one_of(routed.op, _SVCR_WRITERS)
            m.d.comb += [
                arrives.eq(routing & (self.issue.payload.count > lane)),
                to_load_queue.eq(_one_of(routed.op, DECOUPLED_LOADS) & ~routed.undef
                                 & self.sme_enable & state.svcr[0] & ~behind_svcr_write),
            ]
            to_x_queue = arrives & ~to_load_queue
            behind_svcr_write = behind_svcr_write | (arrives & svcr_writer)
            x_svcr_write = x_svcr_write | (to_x_queue & svcr_writer)
            sources = Array([incoming.src0, incoming.src1, incoming.src2, Const(0, 64)])
            route, lookup = scoreboard.routes[lane], scoreboard.loads[lane]
            entry = load_queue.entries[lane]
            m.d.comb += [
                order.w_en[lane].eq(arrives), order.w_data[lane].eq(to_load_queue),
                x_queue.w_en[lane].eq(to_x_queue),
                x_queue.w_data[lane].eq(Cat(incoming.as_value(),
                                            loads_before[:len(load_queue.tail)],
                                            routed.as_value())),
                load_queue.push[lane].eq(arrives & to_load_queue),
                route.route.eq(to_x_queue),
                route.index.eq(x_index),
                route.z_uses.eq(_register_marks(present, routed_fields, _Z_FIELDS, Z_REGISTERS)
                                | _second_registers(present, routed_fields)),
                route.p_uses.eq(_register_marks(present, routed_fields, _P_FIELDS,
                                                P_REGISTERS)),
                route.p_writes.eq(_register_marks(present, routed_fields, _P_WRITTEN_FIELDS,
                                                  P_REGISTERS)),
                route.memory.eq(_one_of(routed.op, MEMORY_OPS)),
                lookup.dest.eq(Mux(routed.flags.predicate, routed_fields.pt, routed_fields.zt)),
                lookup.predicate.eq(_loads_predicate(routed)),
                lookup.pg.eq(routed_fields.pg),
                lookup.predicated.eq(present.pg),
                entry.access.eq(access_of(routed)),
                entry.pg.eq(routed_fields.pg),
                entry.base.eq(sources[routed.slots.rn]),
                entry.index.eq(sources[routed.slots.rm]),
                entry.dest.eq(lookup.dest),
                entry.predicate.eq(lookup.predicate),
                entry.governed.eq(present.pg),
                entry.start_wait.eq(scoreboard.waits[lane].start),
                entry.write_wait.eq(scoreboard.waits[lane].write),
            ]
            loads_before = loads_before + (arrives & to_load_queue)
            x_index = (x_index + to_x_queue)[:width]
        m.d.sync += x_routed.eq(x_index)
        with m.If(x_index != x_routed):
            m.d.sync += svcr_pending.eq(x_svcr_write)
        with m.Elif(x_queue.level == 0):
            m.d.sync += svcr_pending.eq(0)

        # ---- d: the oldest instruction of the execution queue, once every older load has
        # written its register (its result may still wait in the load queue) and its own result
        # has room
        d_valid = Signal()
        d_done = Signal()           # the instruction in dispatch completes (not a posted store)
        posting = Signal()          # it is a store and leaves dispatch as its access starts
        posted = Signal(range(depth + 1))     # posted stores whose access has not completed
        posted_completes = Signal()           # the oldest of them completes
        completes = Signal()        # the oldest incomplete execution-queue instruction completes
        x_head = data.View(x_entry_layout, x_queue.r_data[0])
        issued = x_head.issue
        d_sources = Cat(issued.src0, issued.src1, issued.src2)
        m.submodules.x_results = x_results = LaneFifo(ResultLayout.size, depth, lanes,
                                                      block_ram=True)
        m.d.comb += [
            load_queue.x_loads_before.eq(x_head.loads_before),
            d_valid.eq((x_queue.level != 0) & load_queue.x_loads_written & x_results.w_rdy),
            x_queue.r_count.eq(d_done | posting),
            completes.eq(d_done | posted_completes),
        ]
        m.d.sync += posted.eq(posted + posting - posted_completes)
        with m.If(completes):
            m.d.sync += x_completed.eq(x_completed + 1)
        m.d.comb += [scoreboard.complete.eq(completes), scoreboard.x_completed.eq(x_completed),
                     load_queue.x_completed.eq(x_completed),
                     load_queue.x_completing.eq(completes)]

        decoded = x_head.decoded
        m.d.comb += state.decoded.eq(decoded)
        fields, flags, op = decoded.fields, decoded.flags, decoded.op
        sources = Array([*(d_sources.word_select(k, 64) for k in range(3)), Const(0, 64)])
        assert NO_SLOT == 3, "slot 3 reads as zero"
        operands = {}
        for name in ("rn", "rm", "rs", "rv", "rt", "rdn"):
            operands[name] = Signal(64, name=f"d_{name}")
            m.d.comb += operands[name].eq(sources[decoded.slots[name]])

        def operand(field: str) -> Signal:
            return operands[field]

        legal = state.verdict.status == Status.OK
        is_int = _one_of(op, _INT_OPS)
        is_fp = _one_of(op, FP_OPS)
        is_memory = _one_of(op, MEMORY_OPS)
        is_structure = _one_of(op, STRUCTURE_OPS)
        is_slice = _one_of(op, _SLICE_OPS)
        is_svcr_write = _one_of(op, _SVCR_WRITERS)
        is_vector = _one_of(op, VECTOR_OPS)
        present = decoded.present

        # ---- register reads (the vector unit's operand places: hw/vector/common.py)
        def first_present(*names):
            return _first_present(present, fields, names)

        # The debug backdoor reads through the first ports while nothing is dispatched.
        debugging = Signal()
        debug = self.debug_addr
        m.d.comb += debugging.eq(x_queue.level == 0)
        m.d.comb += [
            registers.z_read_a.addr.eq(Mux(
                debugging, debug.index,
                Mux(is_structure, structure.z_read.addr,
                    Mux(_one_of(op, (Op.STR_REGISTER, Op.ST1_CONTIGUOUS, Op.STNT1_CONTIGUOUS)),
                        fields.zt, first_present("zdn", "zn", "vdn", "vn"))))),
            structure.z_read.data.eq(registers.z_read_a.data),
            registers.z_read_b.addr.eq(first_present("zm", "vm")),
            registers.z_read_c.addr.eq(Mux(present.zda | present.za, first_present("zda", "za"),
                                           (fields.zn + 1)[:5])),
            registers.p_read_a.addr.eq(Mux(debugging, debug.index,
                                           Mux(op == Op.STR_REGISTER, fields.pt,
                                               Mux(is_int | is_fp, fields.pn,
                                                   first_present("pg", "pv"))))),
            registers.p_read_b.addr.eq(first_present("pm", "pdm")),
            registers.p_read_c.addr.eq(first_present("pn", "pdn")),
        ]
        governing = Signal(maxb)             # Pg, or Pn of an outer product, inside the SVL
        column_predicate = Signal(maxb)      # Pm of an outer product, inside the SVL
        m.d.comb += [governing.eq(registers.p_read_a.data & svl_mask),
                     column_predicate.eq(registers.p_read_b.data & svl_mask)]

        # ---- the addressed ZA slice (tile slice operations, LDR/STR ZA)
        esize_log2 = decoded.esize_log2
        selector = Mux(_one_of(op, (Op.LDR_ZA, Op.STR_ZA)), operand("rv"), operand("rs"))
        dimension_log2 = Signal(range(16))
        m.d.comb += dimension_log2.eq(state.svl_log2 - esize_log2)
        slice_index = Signal(range(maxb))
        m.d.comb += slice_index.eq((selector[:8] + fields.off)
                                   & ((Const(1, 9) << dimension_log2) - 1))
        addressed = za.slice_write.slice
        m.d.comb += [addressed.tile.eq(fields.tile), addressed.index.eq(slice_index),
                     addressed.esize_log2.eq(esize_log2), addressed.vertical.eq(flags.vertical)]
        # A debug read of ZA row r is horizontal byte slice r of ZA0.B.
        with m.If(debugging):
            m.d.comb += za.slice_read.slice.index.eq(debug.index)
        with m.Else():
            m.d.comb += za.slice_read.slice.eq(addressed)
        # Elements of the slice inside the SVL, and those of them the predicate enables.
        slice_in_svl = Signal(maxb)
        slice_active = Signal(maxb)
        with m.Switch(esize_log2):
            for log2 in ELEMENT_SIZES:
                with m.Case(log2):
                    count = maxb >> log2
                    m.d.comb += [
                        slice_in_svl.eq(Cat(svl_mask[e << log2] for e in range(count))),
                        slice_active.eq(Cat(governing[e << log2] for e in range(count))),
                    ]
        # Bytes of a vector whose element (of the instruction's size) is active.
        active_bytes = Signal(maxb)
        with m.Switch(esize_log2):
            for log2 in ELEMENT_SIZES:
                with m.Case(log2):
                    m.d.comb += active_bytes.eq(
                        Cat(governing[b & ~((1 << log2) - 1)] for b in range(maxb)))

        # ZA hazards, by row group (row mod 8).
        m.submodules.interlock = interlock = ZaInterlock()
        double = esize_log2 == 3
        m.d.comb += [
            interlock.access.zero.eq(op == Op.ZERO_ZA),
            interlock.access.mask.eq(fields.mask),
            interlock.access.slice.eq(is_slice),
            interlock.access.vertical.eq(flags.vertical),
            interlock.access.tile.eq(fields.tile),
            interlock.access.index.eq(slice_index),
            interlock.access.esize_log2.eq(esize_log2),
            interlock.outer.double.eq(double),
            interlock.outer.tile.eq(fields.zada),
            interlock.int_busy.eq(int_array.busy),
            interlock.fp_busy.eq(fp_array.busy if fp_array is not None else 0),
        ]
        za_hazard, int_hazard, fp_hazard = \
            interlock.slice_hazard, interlock.int_hazard, interlock.fp_hazard

        # ---- when the instruction can complete
        lsu_idle = ~lsu.busy & ~lsu.done
        fp_ready = fp_array.op.ready if fp_array is not None else Const(0)
        can_complete = Signal()
        with m.If(~legal):
            m.d.comb += can_complete.eq(1)
        with m.Elif(is_int):
            m.d.comb += can_complete.eq(~int_hazard & int_array.op.ready)
        with m.Elif(is_fp):
            m.d.comb += can_complete.eq(~fp_hazard & fp_ready)
        with m.Elif(is_structure):
            m.d.comb += can_complete.eq(structure.done)
        with m.Elif(is_memory):
            m.d.comb += can_complete.eq(lsu.done)
        with m.Elif(is_svcr_write):
            m.d.comb += can_complete.eq(~interlock.busy)
        with m.Elif(is_vector):
            m.d.comb += can_complete.eq(vector.result.valid)
        with m.Else():
            m.d.comb += can_complete.eq(~za_hazard)
        # Posted stores (docs/architecture.md, "Decoupled execution"): a legal store of one
        # access leaves dispatch when the load/store unit takes it, and completes when the unit
        # has its answer, in order; later stores may start meanwhile. Every other instruction
        # completes only when no posted store is in flight, so completions, results and
        # memory accesses stay in program order.
        is_posted_store = _one_of(op, _POSTED_STORES)
        posts = legal & is_posted_store
        # Room for the result of every posted store and this one, whatever the result port does.
        result_room = (x_results.level + posted) < (depth - lanes)
        none_posted = posted == 0
        m.d.comb += [
            d_done.eq(d_valid & can_complete & ~posts & none_posted),
            posting.eq(d_valid & posts & ~za_hazard & result_room & lsu.ready),
            posted_completes.eq(~none_posted & lsu.done),
        ]
        execute = d_done & legal
        faulted = is_memory & Mux(is_structure, structure.fault, lsu.fault)

        # ---- state control and whole-state zeroing
        svl_changed = Signal()
        previous_svl_log2 = Signal.like(state.svl_log2)
        m.d.sync += previous_svl_log2.eq(state.svl_log2)
        m.d.comb += [
            svl_changed.eq(previous_svl_log2 != state.svl_log2),
            state.operand.eq(operand("rt")),
            state.execute.eq(execute & is_svcr_write),
            registers.reset_sve.eq(state.reset_sve | svl_changed),
            za.zero_all.eq(state.zero_za),
            za.clear.eq(svl_changed),
            za.zero_mask.eq(Mux(execute & (op == Op.ZERO_ZA), fields.mask, 0)),
        ]

        # ---- single-cycle units
        m.d.comb += [
            sve.decoded.eq(decoded),
            sve.first.eq(operand("rn")),
            sve.second.eq(operand("rm")),
            sve.svl_log2.eq(state.svl_log2),
            sve.svcr.eq(state.svcr),
        ]

        # ---- vector unit: the instruction waits in dispatch for its result (one cycle later)
        vector_sent = Signal()
        payload = vector.op.payload
        m.d.comb += [
            vector.op.valid.eq(d_valid & legal & is_vector & ~vector_sent),
            payload.decoded.eq(decoded),
            payload.first.eq(registers.z_read_a.data),
            payload.second.eq(registers.z_read_b.data),
            payload.third.eq(registers.z_read_c.data),
            payload.governing.eq(governing),
            payload.pn.eq(registers.p_read_c.data & svl_mask),
            payload.pm.eq(column_predicate),
            payload.rn.eq(operand("rn")),
            payload.rm.eq(operand("rm")),
            payload.rdn.eq(operand("rdn")),
            payload.svl_mask.eq(svl_mask),
            payload.svl_log2.eq(state.svl_log2),
            payload.fpcr.eq(self.fpcr),
            vector.result.ready.eq(d_done & is_vector),
        ]
        with m.If(d_done):
            m.d.sync += vector_sent.eq(0)
        with m.Elif(vector.op.valid & vector.op.ready):
            m.d.sync += vector_sent.eq(1)

        # ---- load/store unit: driven by the oldest instruction when it is a memory instruction
        # (for LD2-4/ST2-4 by the structure sequencer, which the engine starts and acknowledges
        # instead), otherwise by the load queue (nothing older or younger is in flight then)
        sequencer = structure.lsu
        starting = load_queue.start_entry
        x_uses_lsu = d_valid & is_memory
        m.d.comb += [
            registers.p_read_load.addr.eq(starting.pg),
            structure.decoded.eq(decoded),
            structure.svl_log2.eq(state.svl_log2),
            structure.svl_mask.eq(svl_mask),
            structure.predicate.eq(governing),
            structure.start.eq(d_valid & legal & is_structure & ~structure.busy
                               & ~structure.done & ~za_hazard & none_posted),
            structure.ack.eq(d_done & is_structure),
            lsu.svl_log2.eq(state.svl_log2),
            lsu.svl_mask.eq(svl_mask),
            load_queue.start.eq(~x_uses_lsu & none_posted & load_queue.start_valid & lsu.ready),
            load_queue.complete.eq(~x_uses_lsu & none_posted & lsu.done),
            load_queue.fault.eq(lsu.fault),
            load_queue.fault_address.eq(lsu.fault_address),
            self.mem_req.valid.eq(lsu.mem_req.valid),
            self.mem_req.payload.eq(lsu.mem_req.payload),
            lsu.mem_req.ready.eq(self.mem_req.ready),
            lsu.mem_resp.valid.eq(self.mem_resp.valid),
            lsu.mem_resp.payload.eq(self.mem_resp.payload),
            self.mem_resp.ready.eq(lsu.mem_resp.ready),
        ]
        with m.If(x_uses_lsu):
            m.d.comb += [
                lsu.access.eq(access_of(decoded)),
                lsu.base.eq(operand("rn")),
                lsu.index.eq(operand("rm")),
                lsu.chunk.eq(sequencer.chunk),
                lsu.predicate.eq(Mux(is_structure, sequencer.predicate, governing)),
                lsu.store_data.eq(Mux(is_structure, sequencer.store_data,
                                      Mux(_one_of(op, (Op.ST1_TILE, Op.STR_ZA)),
                                          za.slice_read.data,
                                          Mux(op == Op.STR_REGISTER,
                                              Mux(flags.predicate, registers.p_read_a.data,
                                                  registers.z_read_a.data),
                                              registers.z_read_a.data)))),
                lsu.start.eq(Mux(is_structure, sequencer.start,
                                 Mux(posts, d_valid & ~za_hazard & result_room,
                                     d_valid & legal & lsu_idle & ~za_hazard))),
                lsu.ack.eq(Mux(~none_posted, lsu.done,
                               Mux(is_structure, sequencer.ack, d_done))),
            ]
        with m.Else():
            m.d.comb += [
                lsu.access.eq(starting.access),
                lsu.base.eq(starting.base),
                lsu.index.eq(starting.index),
                lsu.predicate.eq(registers.p_read_load.data & svl_mask),
                lsu.start.eq(load_queue.start),
                lsu.ack.eq(lsu.done),
            ]
        for name, member in ControlSignature(config).members.items():
            if member.flow == In:
                m.d.comb += getattr(sequencer, name).eq(getattr(lsu, name))
        # A load of the load queue writes its register from its load buffer.
        m.d.comb += load_queue.data.eq(lsu.load_data)
        for port, selected, data_value in (
                (registers.z_write_load, ~load_queue.write_predicate, load_queue.write_data),
                (registers.p_write_load, load_queue.write_predicate,
                 load_queue.write_data[:maxb])):
            m.d.comb += [port.en.eq(load_queue.write & ~load_queue.write_fault & selected),
                         port.addr.eq(load_queue.write_dest), port.data.eq(data_value),
                         port.lanes.eq(svl_mask)]
        loaded = execute & ~faulted

        # ---- register writes
        z_write, p_write = registers.z_write, registers.p_write
        with m.Switch(op):
            with m.Case(*DECOUPLED_LOADS):
                # A load routed to the execution queue (the later lane of an SVCR writer's
                # transfer) writes its register here, as it completes.
                predicate_load = _loads_predicate(decoded)
                m.d.comb += [z_write.en.eq(loaded & ~predicate_load), z_write.addr.eq(fields.zt),
                             z_write.data.eq(lsu.load_data), z_write.lanes.eq(svl_mask),
                             p_write.en.eq(loaded & predicate_load), p_write.addr.eq(fields.pt),
                             p_write.data.eq(lsu.load_data[:maxb]), p_write.lanes.eq(svl_mask)]
            with m.Case(Op.MOVA_TO_VECTOR):
                m.d.comb += [z_write.en.eq(execute), z_write.addr.eq(fields.zd),
                             z_write.data.eq(za.slice_read.data),
                             z_write.lanes.eq(active_bytes & svl_mask)]
            with m.Case(Op.DUP_SCALAR, Op.DUP_IMM):
                m.d.comb += [z_write.en.eq(execute), z_write.addr.eq(fields.zd),
                             z_write.data.eq(sve.vector), z_write.lanes.eq(svl_mask)]
            with m.Case(Op.LD_STRUCTURE):
                m.d.comb += [getattr(z_write, name).eq(getattr(structure.z_write, name))
                             for name in structure.z_write.signature.members]
            with m.Case(*VECTOR_OPS):
                result = vector.result.payload
                m.d.comb += [z_write.en.eq(execute),
                             z_write.addr.eq(first_present("zdn", "zda", "vd", "vdn", "zd")),
                             z_write.data.eq(result.vector), z_write.lanes.eq(result.vector_lanes),
                             p_write.en.eq(execute),
                             p_write.addr.eq(first_present("pd", "pdn", "pdm")),
                             p_write.data.eq(result.predicate),
                             p_write.lanes.eq(result.predicate_lanes)]
            with m.Case(Op.PTRUE, Op.PFALSE, Op.WHILE):
                m.d.comb += [p_write.en.eq(execute), p_write.addr.eq(fields.pd),
                             p_write.data.eq(sve.predicate), p_write.lanes.eq(svl_mask)]

        # ---- ZA slice writes
        slice_write = za.slice_write
        with m.Switch(op):
            with m.Case(Op.MOVA_TO_TILE):
                m.d.comb += [slice_write.en.eq(execute),
                             slice_write.data.eq(registers.z_read_a.data),
                             slice_write.elements.eq(slice_active & slice_in_svl)]
            with m.Case(Op.LD1_TILE, Op.LDR_ZA):
                m.d.comb += [slice_write.en.eq(loaded), slice_write.data.eq(lsu.load_data),
                             slice_write.elements.eq(slice_in_svl)]

        # ---- outer-product arrays
        zn, zm = registers.z_read_a.data, registers.z_read_b.data
        m.d.comb += [
            int_array.op.valid.eq(d_valid & legal & is_int & ~int_hazard & none_posted),
            int_array.op.payload.kind.as_value().eq(
                Mux(op == Op.INT_MOPA, IntOpKind.MOPA.value,
                    Mux(flags.vertical, IntOpKind.ADDVA.value, IntOpKind.ADDHA.value))),
            int_array.op.payload.double.eq(double),
            int_array.op.payload.tile.eq(fields.zada),
            int_array.op.payload.zn_unsigned.eq(flags.zn_unsigned),
            int_array.op.payload.zm_unsigned.eq(flags.zm_unsigned),
            int_array.op.payload.subtract.eq(flags.subtract),
            int_array.op.payload.zn.eq(zn),
            int_array.op.payload.zm.eq(zm),
            int_array.op.payload.pn.eq(governing),
            int_array.op.payload.pm.eq(column_predicate),
        ]
        wiring.connect(m, int_array.acc, za.tile_read[0])
        wiring.connect(m, int_array.write, za.tile_write[0])
        if fp_array is not None:
            kind = Signal(FpOuterProductKind)
            with m.Switch(op):
                for fp_op, fp_kind in FP_OPS.items():
                    with m.Case(fp_op):
                        m.d.comb += kind.eq(fp_kind)
            payload = fp_array.op.payload
            m.d.comb += [
                fp_array.op.valid.eq(d_valid & legal & is_fp & ~fp_hazard & none_posted),
                payload.kind.eq(kind),
                payload.subtract.eq(flags.subtract),
                payload.tile.eq(fields.zada),
                payload.zn.eq(zn),
                payload.zm.eq(zm),
                payload.pn.eq(governing),
                payload.pm.eq(column_predicate),
                payload.fpcr.rmode.eq(self.fpcr[22:24]),
                payload.fpcr.fz.eq(self.fpcr[24]),
                payload.fpcr.fz16.eq(self.fpcr[19]),
                za.tile_read[1].double.eq(fp_array.acc.double),
                za.tile_read[1].tile.eq(fp_array.acc.tile),
                za.tile_read[1].pass_.eq(fp_array.acc.pass_),
                fp_array.acc.rows.eq(za.tile_read[1].rows),
                za.tile_write[1].en.eq(fp_array.result.valid),
                za.tile_write[1].double.eq(fp_array.result.payload.double),
                za.tile_write[1].tile.eq(fp_array.result.payload.tile),
                za.tile_write[1].pass_.eq(fp_array.result.payload.pass_),
                za.tile_write[1].rows.eq(fp_array.result.payload.rows),
                za.tile_write[1].lanes.eq(fp_array.result.payload.lanes),
                fp_array.result.ready.eq(1),
            ]

        # ---- the result of the instruction, kept until it is the oldest (unless it is already)
        x_result = data.View(ResultLayout, x_results.w_data[0])
        store_result = Signal(ResultLayout)       # of the oldest posted store as it completes
        m.d.comb += [
            store_result.status.as_value().eq(Mux(lsu.fault, Status.FAULT.value,
                                                  Status.OK.value)),
            store_result.fault_address.eq(Mux(lsu.fault, lsu.fault_address, 0)),
        ]
        dispatch_result = Signal(ResultLayout)    # of the instruction in dispatch
        m.d.comb += x_result.eq(Mux(posted_completes, store_result, dispatch_result))
        m.d.comb += [
            dispatch_result.status.as_value().eq(Mux(legal & faulted, Status.FAULT.value,
                                                     state.verdict.status.as_value())),
            dispatch_result.smtc.eq(state.verdict.smtc),
            dispatch_result.scalar.eq(Mux(is_vector, vector.result.payload.scalar, sve.scalar)),
            dispatch_result.fault_address.eq(
                Mux(faulted, Mux(is_structure, structure.fault_address, lsu.fault_address), 0)),
            dispatch_result.fpsr_reset.eq(state.reset_sve),
            dispatch_result.nzcv.eq(Mux(is_vector, vector.result.payload.nzcv, sve.nzcv)),
            dispatch_result.sets_flags.eq(legal & _one_of(op, _FLAG_SETTERS)),
            dispatch_result.fpsr_flags.eq(Mux(legal & is_vector,
                                              vector.result.payload.fpsr_flags, 0)),
        ]

        # ---- results: the oldest instructions whose results are there, in program order, up
        # to issue_lanes per transfer, from the load queue and the execution results
        result_free = ~self.result.valid | self.result.ready
        loads_taken = Const(0, range(lanes + 1))
        x_taken = Const(0, range(lanes + 1))
        x_dequeued = Const(0, range(lanes + 1))
        x_bypassed = Const(0)
        load_faults = Const(0, range(lanes + 1))
        in_order = Const(1)
        emitted = []
        for lane in range(lanes):
            is_load = order.r_data[lane]
            load_fault = load_queue.report_fault.bit_select(loads_taken, 1)
            load_result = Signal(ResultLayout, name=f"load_result{lane}")
            m.d.comb += [
                load_result.status.as_value().eq(Mux(load_fault, Status.FAULT.value,
                                                     Status.OK.value)),
                load_result.fault_address.eq(
                    Mux(load_fault, Array(load_queue.report_fault_address)[loads_taken], 0)),
            ]
            # The next execution result is queued, or is the one completing now (it goes
            # straight out then, and is not queued).
            queued = x_results.level > x_taken
            arriving = completes & (x_results.level == x_taken)
            ready = Mux(is_load, load_queue.report_valid.bit_select(loads_taken, 1),
                        queued | arriving)
            in_order = in_order & (order.level > lane) & ready
            emits = Signal(name=f"result_lane{lane}")
            m.d.comb += emits.eq(in_order & result_free)
            emitted.append((emits, Mux(is_load, load_result.as_value(),
                                       Mux(queued, Array(x_results.r_data)[x_taken],
                                           x_result.as_value()))))
            load_faults = load_faults + (emits & is_load & load_fault)
            loads_taken = loads_taken + (emits & is_load)
            x_taken = x_taken + (emits & ~is_load)
            x_dequeued = x_dequeued + (emits & ~is_load & queued)
            x_bypassed = x_bypassed | (emits & ~is_load & ~queued)
        emitting = Signal(range(lanes + 1))
        m.d.comb += [
            emitting.eq(loads_taken + x_taken),
            order.r_count.eq(emitting),
            load_queue.report.eq(loads_taken),
            x_results.r_count.eq(x_dequeued),
            x_results.w_en.eq(completes & ~x_bypassed),
        ]
        with m.If(result_free):
            m.d.sync += [self.result.valid.eq(emitting != 0),
                         self.result.payload.count.eq(emitting)]
            m.d.sync += [self.result.payload.lanes[lane].eq(value)
                         for lane, (_, value) in enumerate(emitted)]

        # ---- idle, debug, performance counters
        m.d.comb += self.idle.eq((order.level == 0) & ~interlock.busy)
        with m.Switch(debug.space):
            with m.Case(DebugSpace.ZA):
                m.d.sync += self.debug_data.eq(za.slice_read.data)
            with m.Case(DebugSpace.Z):
                m.d.sync += self.debug_data.eq(registers.z_read_a.data)
            with m.Case(DebugSpace.P):
                m.d.sync += self.debug_data.eq(registers.p_read_a.data)
            with m.Case(DebugSpace.FFR):
                m.d.sync += self.debug_data.eq(registers.ffr)

        m.submodules.perf = perf = PerfCounters(config)
        m.d.comb += [
            perf.event.idle.eq(self.idle),
            perf.event.completed.eq(completes),
            perf.event.retired.eq((execute & ~faulted) | (posted_completes & ~lsu.fault)),
            perf.event.outer_product.eq(d_done & (is_int | is_fp)),
            perf.event.memory.eq(is_memory | posted_completes),
            perf.event.loads.eq(loads_taken),
            perf.event.load_faults.eq(load_faults),
            perf.event.double.eq(double),
            perf.op.eq(op),
            perf.row_predicate.eq(governing),
            perf.column_predicate.eq(column_predicate),
            self.perf.eq(perf.counters),
        ]
        return m
