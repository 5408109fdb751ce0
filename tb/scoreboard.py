"""The scoreboard: the reference model run in lock step with the engine.

Each instruction is predicted by :class:`sim.model.ReferenceModel` when it is issued and checked
when its result comes back (results are in issue order). Per instruction it compares status,
SMTC, fault address, the scalar result, ``fpsr_reset``, the flags (``sets_flags``, ``nzcv``) and
the FPSR exception bits (``fpsr_flags``);
the testbench calls :meth:`Scoreboard.compare_memory` and :meth:`Scoreboard.compare_state` (ZA,
Z, P, FFR and SVCR read through the debug port) whenever the engine is idle: after every instruction in lock-step
mode, at the end of each program and at drain points in streaming mode.

Store faults and partial writes (hw.engine): a memory error aborts the instruction with FAULT and
``fault_address`` = the first byte of the failing beat's part of the access. A load then changes
nothing. A store may already have written the beats *before* the failing one; the reference
model checks every element first and writes nothing. The scoreboard accepts exactly that
difference: every byte the engine wrote for a faulting store must lie below ``fault_address``
and hold the value the store would have written (the model re-runs the store on a copy of the
pre-state with the unmapped bytes mapped); those bytes are then applied to the model's memory
so both sides continue from the same state. Any other write, or a wrong value, is an error.

Forced bus errors (:class:`tb.memory.BusMemory` with ``forced_error_rate``) hit mapped memory the
model cannot know about; after such a result the scoreboard re-predicts the instruction from its
pre-state with the failing beat's enabled bytes unmapped. This needs lock-step issue.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass

import numpy as np

from zatile.sim.compare import za_location
from zatile.sim.model import ReferenceModel
from zatile.sw.arch.engine import Result, Status
from zatile.sim.state import ArchState, Memory
from zatile.sw.arch.asm import disassemble
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.isa import Decoded, decode
from zatile.tb.coverage import MEMORY_OPS, STORE_OPS, Coverage, Sample
from zatile.tb.issue import RtlResult
from zatile.tb.memory import BusMemory, memory_with_holes
from zatile.sw.arch.constants import MASK64

__all__ = ["OUTER_PRODUCT_OPS", "Mismatch", "Expectation", "Scoreboard", "mac_count"]

#: Operations the engine counts as outer products (``perf.retired_mopa``).
OUTER_PRODUCT_OPS = frozenset({"fmopa_fp32", "fmopa_fp64", "fmopa_fp16_widening", "bfmopa",
                               "int_mopa", "add_vector_to_tile"})


def mac_count(decoded: Decoded, predicates: dict, svl_bytes: int) -> int:
    """Multiply-accumulates an outer product performs: for each of its k-way sub-products, the
    active rows times the active columns (ADDHA/ADDVA multiply nothing)."""
    op, esize = decoded.form.op, decoded.form.params.get("esize")
    if op == "add_vector_to_tile":
        return 0
    ways = {"int_mopa": 4, "fmopa_fp16_widening": 2, "bfmopa": 2}.get(op, 1)
    source_size = esize // ways                     # bytes of one source element
    dimension = svl_bytes // esize

    def active(name: str, k: int) -> int:
        bits = np.unpackbits(predicates[name], bitorder="little")
        return sum(int(bits[(ways * e + k) * source_size]) for e in range(dimension))

    return sum(active("pn", k) * active("pm", k) for k in range(ways))

_SLICE_SELECTORS = ("rs", "rv")


class Mismatch(AssertionError):
    """The engine disagreed with the reference model (the message names where and how)."""


@dataclass
class Expectation:
    """One issued instruction: what the model did, and what checking it needs."""

    index: int
    word: int
    decoded: Decoded | None
    result: Result
    svcr_before: int
    svcr_after: int
    pre: ArchState | None
    predicates: dict
    slice_selector: int | None

    @property
    def text(self) -> str:
        return disassemble(self.word).replace("\t", " ")

    @property
    def is_store(self) -> bool:
        return self.decoded is not None and self.decoded.form.op in STORE_OPS


def _describe(result: Result) -> str:
    if result.status is Status.SME_TRAP:
        return f"SME_TRAP (SMTC {result.smtc})"
    if result.status is Status.FAULT:
        return f"FAULT at 0x{result.fault_address:x}"
    return result.status.name


class Scoreboard:
    """Predicts with the reference model and checks the engine against it.

    Parameters
    ----------
    config : EngineConfig
        What the engine implements.
    initial : ArchState
        The state the engine was loaded with (copied).
    bus : BusMemory
        The engine's memory (compared with the model's; its write log and forced errors are
        consumed here).
    sme_enabled : bool
        The ``sme_enable`` input during the program.
    coverage : Coverage, optional
        Sampled once per checked instruction.
    name : str
        Program name for messages.
    """

    def __init__(self, config: EngineConfig, initial: ArchState, bus: BusMemory, *,
                 sme_enabled: bool = True, coverage: Coverage | None = None, name: str = ""):
        self.model = ReferenceModel(config, initial.copy(), sme_enabled=sme_enabled)
        self.bus = bus
        self.coverage = coverage
        self.name = name
        self.pending: deque[Expectation] = deque()
        self.issued = 0
        self.checked = 0
        self.partial_store_bytes = 0
        #: Performance-counter increments the checked instructions must have caused.
        self.expected_perf: Counter = Counter()

    # ------------------------------------------------------------------ prediction
    def predict(self, word: int) -> Expectation:
        """Run the model on the next issued instruction and queue the expectation."""
        state = self.model.state
        decoded = decode(word)
        keep_pre = decoded is not None and (decoded.form.op in STORE_OPS
                                            or self.bus.forced_error_rate > 0)
        pre = state.copy() if keep_pre else None
        predicates, selector = {}, None
        if decoded is not None:
            for name in ("pg", "pn", "pm"):
                if name in decoded.fields:
                    predicates[name] = state.p[decoded[name]].copy()
            for name in _SLICE_SELECTORS:
                if name in decoded.fields:
                    selector = int(state.x[12 + decoded[name]]) & 0xFFFF_FFFF
        svcr_before = state.svcr
        result = self.model.execute(word)
        expectation = Expectation(self.issued, word, decoded, result, svcr_before,
                                  self.model.state.svcr, pre, predicates, selector)
        self.issued += 1
        self.pending.append(expectation)
        return expectation

    @property
    def predicted_fault(self) -> bool:
        """Whether the latest prediction is a FAULT (the issuer drains around those)."""
        return bool(self.pending) and self.pending[-1].result.status is Status.FAULT

    # ------------------------------------------------------------------ checking
    def _fail(self, expectation: Expectation | None, message: str) -> None:
        where = f"program {self.name}" if self.name else "program"
        if expectation is not None:
            where += f", instruction #{expectation.index} '{expectation.text}' " \
                     f"(0x{expectation.word:08x})"
        raise Mismatch(f"{where}: {message}")

    def check(self, rtl: RtlResult) -> Expectation:
        """Compare one engine result with the oldest outstanding prediction.

        Raises
        ------
        Mismatch
            On the first difference.
        """
        if not self.pending:
            self._fail(None, f"the engine returned a result ({rtl.describe()}) for no "
                       "outstanding instruction")
        expectation = self.pending.popleft()
        forced = self.bus.take_forced()
        if forced:
            self._repredict_with_holes(expectation, forced)
        expected = expectation.result
        if rtl.status != expected.status.name:
            self._fail(expectation, f"status {rtl.describe()}, model {_describe(expected)}")
        if expected.status is Status.SME_TRAP and rtl.smtc != expected.smtc:
            self._fail(expectation, f"SMTC {rtl.smtc}, model {expected.smtc}")
        if expected.status is Status.FAULT and rtl.fault_address != expected.fault_address:
            self._fail(expectation, f"fault address 0x{rtl.fault_address:x}, model "
                       f"0x{expected.fault_address:x}")
        if expected.status is Status.OK:
            if expected.scalar is not None and rtl.scalar != expected.scalar & MASK64:
                self._fail(expectation, f"scalar result 0x{rtl.scalar:x}, model "
                           f"0x{expected.scalar & MASK64:x}")
            sm_changed = bool((expectation.svcr_before ^ expectation.svcr_after) & 1)
            if rtl.fpsr_reset != sm_changed:
                self._fail(expectation, f"fpsr_reset={int(rtl.fpsr_reset)} but PSTATE.SM "
                           f"{'changed' if sm_changed else 'did not change'}")
        elif rtl.fpsr_reset:
            self._fail(expectation, "fpsr_reset=1 on an instruction that did not execute")
        if rtl.sets_flags != (expected.nzcv is not None):
            self._fail(expectation, f"sets_flags={int(rtl.sets_flags)} but the model "
                       f"{'sets' if expected.nzcv is not None else 'does not set'} NZCV")
        if expected.nzcv is not None and rtl.nzcv != expected.nzcv:
            self._fail(expectation, f"NZCV 0b{rtl.nzcv:04b}, model 0b{expected.nzcv:04b}")
        if rtl.fpsr_flags != (expected.fpsr_flags or 0):
            self._fail(expectation, f"FPSR flags 0b{rtl.fpsr_flags:08b}, model "
                       f"0b{expected.fpsr_flags or 0:08b}")
        partial = 0
        writes = self.bus.take_writes()
        if expectation.is_store and expected.status is Status.FAULT:
            partial = self._account_partial_writes(expectation, writes)
        self.checked += 1
        self._count(expectation)
        if self.coverage is not None:
            self.coverage.sample(Sample(
                expectation.decoded, expected.status.name, expected.smtc,
                expectation.svcr_before, expectation.svcr_after, self.model.sme_enabled,
                self.model.state.svl, expectation.predicates, expectation.slice_selector,
                partial, len(forced)))
        return expectation

    def _count(self, expectation: Expectation) -> None:
        """What the engine's performance counters must have counted for this instruction."""
        counts = self.expected_perf
        if expectation.result.status is not Status.OK:
            counts["traps"] += 1
            return
        counts["retired"] += 1
        op = expectation.decoded.form.op
        if op in OUTER_PRODUCT_OPS:
            counts["retired_mopa"] += 1
            counts["macs"] += mac_count(expectation.decoded, expectation.predicates,
                                        self.model.state.svl_bytes)
        elif op in MEMORY_OPS:
            counts["retired_ldst"] += 1
        else:
            counts["retired_other"] += 1

    def _repredict_with_holes(self, expectation: Expectation,
                              forced: list[tuple[int, int, bool]]) -> None:
        """Re-run a forced-error instruction as if the failing beats' bytes were unmapped."""
        if self.pending:
            self._fail(expectation, "forced bus errors need lock-step issue (later instructions "
                       "were already predicted)")
        if expectation.pre is None:
            self._fail(expectation, "no pre-state kept for a forced-error instruction")
        holes = [(address + lane, 1) for address, enables, _ in forced
                 for lane in range(self.bus.beat_bytes) if enables >> lane & 1]
        state = expectation.pre.copy()
        whole = state.memory
        state.memory, merge_back = memory_with_holes(whole, holes)
        self.model.state = state
        expectation.result = self.model.execute(expectation.word)
        merge_back()
        state.memory = whole
        expectation.svcr_after = state.svcr

    def _account_partial_writes(self, expectation: Expectation, writes) -> int:
        """Validate and apply what a faulting store wrote before its failing beat."""
        written: dict[int, int] = {}
        for beat in writes:
            written.update(beat.written())
        if not written:
            return 0
        fault = expectation.result.fault_address
        late = sorted(address for address in written if address >= fault)
        if late:
            self._fail(expectation, f"the store faulted at 0x{fault:x} but wrote 0x{late[0]:x} "
                       "(only beats before the failing one may be written)")
        # the store's whole footprint (LD2-4/ST2-4: one vector per register) must fit
        registers = expectation.decoded.form.params.get("registers", 1)
        footprint = self.model.state.svl_bytes * registers
        shadow = ReferenceModel(self.model.config, _mapped_everywhere(
            expectation.pre, fault, footprint), sme_enabled=True)
        if shadow.execute(expectation.word).status is not Status.OK:
            self._fail(expectation, "cannot tell what the faulting store would have written")
        for address, value in sorted(written.items()):
            wanted = int(shadow.state.memory.read(address, 1)[0])
            if value != wanted:
                self._fail(expectation, f"partial store wrote 0x{value:02x} at 0x{address:x}, "
                           f"the store's data there is 0x{wanted:02x}")
            self.model.state.memory.write(address, bytes([value]))
        self.partial_store_bytes += len(written)
        return len(written)

    # ------------------------------------------------------------------ state comparison
    def compare_memory(self) -> None:
        """The engine's memory must equal the model's (call with nothing outstanding)."""
        mine, theirs = self.bus.memory.regions, self.model.state.memory.regions
        for base, data in theirs.items():
            differing = np.flatnonzero(mine[base] != data)
            if differing.size:
                offset = int(differing[0])
                self._fail(None, f"memory 0x{base + offset:x} holds 0x{int(mine[base][offset]):02x}"
                           f", model 0x{int(data[offset]):02x} (after {self.checked} "
                           "instructions)")

    def compare_state(self, snapshot: dict, after: str = "") -> None:
        """Compare debug-port contents (``z``, ``p``, ``ffr``, optionally ``za``) and the
        ``svcr``/``svl_bytes`` outputs with the model."""
        state = self.model.state
        where = after or f"after {self.checked} instructions"
        if snapshot["svcr"] != state.svcr:
            self._fail(None, f"svcr output {snapshot['svcr']}, model {state.svcr} ({where})")
        if snapshot["svl_bytes"] != state.svl_bytes:
            self._fail(None, f"svl_bytes output {snapshot['svl_bytes']}, model "
                       f"{state.svl_bytes}")
        arrays = [("z", state.z), ("p", state.p), ("ffr", state.ffr[None, :])]
        if state.za_enabled and "za" in snapshot:
            arrays.append(("za", state.za))
        for name, model_array in arrays:
            engine_array = snapshot[name] if name != "ffr" else snapshot[name][None, :]
            differing = np.argwhere(engine_array != model_array)
            if differing.size:
                row, byte = (int(v) for v in differing[0])
                label = {"za": za_location(row, byte), "z": f"z{row} byte {byte}",
                         "p": f"p{row} byte {byte}", "ffr": f"FFR byte {byte}"}[name]
                self._fail(None, f"{label} is 0x{int(engine_array[row, byte]):02x}, "
                           f"model 0x{int(model_array[row, byte]):02x} ({where})")


def _mapped_everywhere(pre: ArchState, fault_address: int, span: int) -> ArchState:
    """A copy of ``pre`` whose memory maps every byte within ``span`` of ``fault_address`` as
    one region (old contents kept, holes zero), so a faulting store of at most ``span`` bytes
    can complete. Accesses of the model must lie in one region, hence one window (two when it
    wraps at 2^64)."""
    state = pre.copy()
    low, high = fault_address - span, fault_address + span
    windows = [(max(low, 0), min(high, 1 << 64))]
    if low < 0:
        windows.append(((1 << 64) + low, 1 << 64))
    if high > 1 << 64:
        windows.append((0, high - (1 << 64)))
    regions: dict[int, np.ndarray] = {}
    contents = {start: np.zeros(end - start, np.uint8) for start, end in windows}
    for base, data in state.memory.regions.items():
        cuts = [base, base + data.size]
        for start, end in windows:
            first, last = max(base, start), min(base + data.size, end)
            if first < last:
                contents[start][first - start:last - start] = data[first - base:last - base]
                cuts += [first, last]
        cuts = sorted(set(cuts))
        for first, last in zip(cuts, cuts[1:]):
            if not any(start <= first < end for start, end in windows):
                regions[first] = data[first - base:last - base]
    regions.update(contents)
    state.memory = Memory(regions)
    return state
