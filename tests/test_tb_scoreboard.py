"""tb.scoreboard and tb.programs without a simulator: a model-backed stand-in plays the engine.

The stand-in is :class:`sw.driver.ModelEngine` fed by the same CPU-side register file the cocotb
bench uses, so every directed group runs through prediction, operand resolution, write-back and
every comparison. Mutated results, wrong memory and illegal partial store writes must be caught.
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from zatile.sw.arch.engine import Status
from zatile.sim.state import Memory
from zatile.sw.arch.asm import assemble_line
from zatile.sw.arch.config import EngineConfig
from zatile.sim.engine import ModelEngine
from zatile.tb.coverage import OVERLAP_EVENTS, Coverage, OverlapTracker
from zatile.tb.issue import RtlResult, ScalarFile
from zatile.tb.memory import BusMemory
from zatile.tb.programs import DIRECTED, initial_state, random_programs
from zatile.tb.scoreboard import Mismatch, Scoreboard

CONFIG = EngineConfig(max_svl=256)


class StandIn:
    """The reference model behind the engine's ports: results as the RTL would return them."""

    def __init__(self, initial, bus: BusMemory, sme_enabled: bool = True):
        self.engine = ModelEngine(CONFIG, memory=bus.memory)
        self.engine.sme_enabled = True
        self.engine.smcr_len = initial.svl // 128 - 1
        state = self.engine._model.state
        state.svcr, state.fpcr = initial.svcr, initial.fpcr
        state.za[...], state.z[...], state.p[...] = initial.za, initial.z, initial.p
        self.engine.sme_enabled = sme_enabled

    def issue(self, word: int, sources) -> RtlResult:
        svcr = self.engine.svcr
        count = len(self._sources(word))
        result = self.engine.issue(word, sources[:count])
        return RtlResult(result.status.name, result.smtc or 0, (result.scalar or 0) & (2**64 - 1),
                         result.fault_address or 0, bool((svcr ^ self.engine.svcr) & 1)
                         and result.status is Status.OK, result.nzcv or 0,
                         result.nzcv is not None, result.fpsr_flags or 0)

    @staticmethod
    def _sources(word):
        from zatile.sw.arch.isa import decode, scalar_sources
        decoded = decode(word)
        return scalar_sources(decoded) if decoded else ()

    def snapshot(self) -> dict:
        state = self.engine._model.state
        return {"z": state.z, "p": state.p, "ffr": state.ffr, "za": state.za,
                "svcr": state.svcr, "svl_bytes": state.svl_bytes}


def _run(program, coverage=None):
    initial = program.initial
    bus = BusMemory(initial.memory.copy(), CONFIG.mem_data_width // 8, random.Random(0))
    stand_in = StandIn(initial, bus, program.sme_enabled)
    scoreboard = Scoreboard(CONFIG, initial, bus, sme_enabled=program.sme_enabled,
                            coverage=coverage, name=program.name)
    host = ScalarFile(initial.x, initial.sp, initial.fpsr, initial.nzcv)
    for word in program.words:
        scoreboard.predict(word)
        result = stand_in.issue(word, host.sources(word))
        scoreboard.check(result)
        host.retire(word, result)
    scoreboard.compare_memory()
    scoreboard.compare_state(stand_in.snapshot())
    assert np.array_equal(host.x, scoreboard.model.state.x)
    return scoreboard


@pytest.mark.parametrize("group", sorted(DIRECTED))
def test_directed_groups_agree_with_the_model(group):
    coverage = Coverage(CONFIG, [128])
    for program in DIRECTED[group](CONFIG, 128, random.Random(group)):
        if program.forced_error_rate:
            continue                   # forced errors need the bus in the loop (cocotb tests)
        _run(program, coverage)
    assert coverage.totals()[0] > 0


def test_random_programs_agree_and_cover():
    coverage = Coverage(CONFIG, [128])
    for program in random_programs(CONFIG, 128, random.Random(5), 6, 60):
        _run(program, coverage)
    hit, total = coverage.totals()
    assert hit > 100, coverage.report()


def _store_fault_setup():
    initial = initial_state(random.Random(9), 128, 3)
    end = 0x20010
    initial.memory = Memory({0x20000: np.zeros(16, np.uint8)})     # one beat, then nothing
    initial.x[0] = end - 8                                           # STR ZA straddles the end
    initial.x[12] = 0
    bus = BusMemory(initial.memory.copy(), 16, random.Random(0))
    scoreboard = Scoreboard(CONFIG, initial, bus, name="partial")
    word = assemble_line("str za[w12, 0], [x0]")
    return initial, bus, scoreboard, word, end


def test_partial_store_write_before_the_fault_is_accepted_and_applied():
    initial, bus, scoreboard, word, end = _store_fault_setup()
    scoreboard.predict(word)
    row = initial.za[0]
    data = int.from_bytes(bytes(8) + row[:8].tobytes(), "little")
    assert not bus.access(end - 16, True, data, 0xFF00)[1]           # first beat written
    assert bus.access(end, True, 0, 0x00FF)[1]                       # second beat fails
    scoreboard.check(RtlResult("FAULT", 0, 0, end, False))
    scoreboard.compare_memory()
    assert scoreboard.partial_store_bytes == 8


def test_partial_store_with_wrong_data_or_after_the_fault_is_caught():
    initial, bus, scoreboard, word, end = _store_fault_setup()
    scoreboard.predict(word)
    bus.access(end - 16, True, 0x5A << 64 | 0x5A << 120, 0xFF00)
    with pytest.raises(Mismatch, match="partial store wrote"):
        scoreboard.check(RtlResult("FAULT", 0, 0, end, False))
    initial, bus, scoreboard, word, end = _store_fault_setup()
    scoreboard.predict(word)
    bus.memory.map(end, np.zeros(16, np.uint8))                      # a write past the fault
    bus.access(end, True, 1, 0x0001)
    with pytest.raises(Mismatch, match="only beats before the failing one"):
        scoreboard.check(RtlResult("FAULT", 0, 0, end, False))


def test_forced_bus_error_is_repredicted():
    initial = initial_state(random.Random(3), 128, 3)
    initial.x[0] = 0x400000
    bus = BusMemory(initial.memory.copy(), 16, random.Random(0), forced_error_rate=1.0)
    scoreboard = Scoreboard(CONFIG, initial, bus, name="forced")
    scoreboard.predict(assemble_line("ldr z3, [x0]"))
    assert bus.access(0x400000, False, 0, 0xFFF0)[1]                 # lanes 4..15 enabled
    scoreboard.check(RtlResult("FAULT", 0, 0, 0x400004, False))
    scoreboard.compare_memory()


def test_mismatches_name_the_instruction():
    initial = initial_state(random.Random(4), 128, 3)
    bus = BusMemory(initial.memory.copy(), 16, random.Random(0))
    scoreboard = Scoreboard(CONFIG, initial, bus, name="mutants")
    scoreboard.predict(assemble_line("rdsvl x20, #3"))
    with pytest.raises(Mismatch, match=r"mutants, instruction #0 'rdsvl x20, #3'.*0x2f.*0x30"):
        scoreboard.check(RtlResult("OK", 0, 47, 0, False))
    scoreboard.predict(assemble_line("smstop"))
    with pytest.raises(Mismatch, match="fpsr_reset=0 but PSTATE.SM changed"):
        scoreboard.check(RtlResult("OK", 0, 0, 0, False))
    scoreboard.predict(assemble_line("zero {za}"))
    with pytest.raises(Mismatch, match=r"status OK, model SME_TRAP \(SMTC 3\)"):
        scoreboard.check(RtlResult("OK", 0, 0, 0, False))
    bus.memory.write(0x400010, b"\x99")
    with pytest.raises(Mismatch, match="memory 0x400010"):
        scoreboard.compare_memory()


# --------------------------------------- every comparison of the scoreboard, shown to catch
#: Program run before planting: leaves ZA, Z, P, FFR, memory and scalars all non-trivial.
_PLANT_PROGRAM = ["smstart", "ptrue p1.s", "ld1w {za1h.s[w12, 3]}, p1/z, [x0]",
                  "st1w {za1h.s[w12, 3]}, p1, [x1]", "ldr z2, [x0]", "rdsvl x20, #1"]


def _finished_scoreboard():
    """A scoreboard and the stand-in's snapshot after :data:`_PLANT_PROGRAM`, all agreeing."""
    initial = initial_state(random.Random(11), 128, 0)
    initial.memory = Memory({0x400000: np.arange(256, dtype=np.uint8)})
    initial.x[0], initial.x[1], initial.x[12] = 0x400000, 0x400040, 0
    bus = BusMemory(initial.memory.copy(), 16, random.Random(0))
    stand_in = StandIn(initial, bus)
    scoreboard = Scoreboard(CONFIG, initial, bus, name="planted")
    host = ScalarFile(initial.x, initial.sp, initial.fpsr, initial.nzcv)
    for text in _PLANT_PROGRAM:
        word = assemble_line(text)
        scoreboard.predict(word)
        result = stand_in.issue(word, host.sources(word))
        scoreboard.check(result)
        host.retire(word, result)
    snapshot = {name: np.array(value, copy=True) if isinstance(value, np.ndarray) else value
                for name, value in stand_in.snapshot().items()}
    scoreboard.compare_memory()
    scoreboard.compare_state(snapshot)
    return scoreboard, bus, snapshot


def _flip(array, index):
    array[index] ^= 0x40


@pytest.mark.parametrize("plant, where", [
    (lambda s: _flip(s["za"], (13, 9)), r"za1h\.s slice 3 element 2 \(za row 13 byte 9\) is"),
    (lambda s: _flip(s["z"], (2, 5)), r"z2 byte 5 is"),
    (lambda s: _flip(s["p"], (1, 1)), r"p1 byte 1 is"),
    (lambda s: _flip(s["ffr"], (1,)), r"FFR byte 1 is"),
    (lambda s: s.update(svcr=2), r"svcr output 2, model 3"),
    (lambda s: s.update(svl_bytes=32), r"svl_bytes output 32, model 16"),
], ids=["za", "z", "p", "ffr", "svcr", "svl"])
def test_one_planted_byte_of_state_is_named(plant, where):
    scoreboard, _, snapshot = _finished_scoreboard()
    plant(snapshot)
    with pytest.raises(Mismatch, match=f"program planted: {where}"):
        scoreboard.compare_state(snapshot)


def test_one_planted_byte_of_memory_is_named():
    scoreboard, bus, _ = _finished_scoreboard()
    bus.memory.write(0x400047, b"\x00")
    with pytest.raises(Mismatch, match=r"memory 0x400047 holds 0x00, model 0x07"):
        scoreboard.compare_memory()


@pytest.mark.parametrize("text, planted, where", [
    ("rdsvl x21, #1", RtlResult("OK", 0, 17, 0, False), r"scalar result 0x11, model 0x10"),
    ("zero {za}", RtlResult("SME_TRAP", 2, 0, 0, False), r"SMTC 2, model 3"),
    ("zero {za}", RtlResult("UNDEF", 0, 0, 0, False), r"status UNDEF.*model SME_TRAP"),
    ("ldr z1, [x2]", RtlResult("FAULT", 0, 0, 0x10, False), r"fault address 0x10, model 0x0"),
    ("rdsvl x21, #1", RtlResult("OK", 0, 16, 0, True), r"fpsr_reset=1 but PSTATE.SM did not"),
    ("whilelo p1.s, xzr, x2", RtlResult("OK", 0, 0, 0, False, 0b0010, True),
     r"NZCV 0b0010, model 0b0110"),
    ("whilelo p1.s, xzr, x2", RtlResult("OK", 0, 0, 0, False, 0b0110, False),
     r"sets_flags=0 but the model sets NZCV"),
    ("ptrue p1.s", RtlResult("OK", 0, 0, 0, False, 0, True),
     r"sets_flags=1 but the model does not set NZCV"),
    ("ptrue p1.s", RtlResult("OK", 0, 0, 0, False, 0, False, 0b10),
     r"FPSR flags 0b00000010, model 0b00000000"),
], ids=["scalar", "smtc", "status", "fault-address", "fpsr-reset", "nzcv", "flags-missing",
        "flags-extra", "fpsr-flags"])
def test_one_planted_result_field_is_named(text, planted, where):
    initial = initial_state(random.Random(4), 128, 1)            # SM=1, ZA=0
    initial.x[2] = 0
    bus = BusMemory(initial.memory.copy(), 16, random.Random(0))
    scoreboard = Scoreboard(CONFIG, initial, bus, name="planted")
    scoreboard.predict(assemble_line(text))
    with pytest.raises(Mismatch, match=f"planted, instruction #0 '{re.escape(text)}'.*{where}"):
        scoreboard.check(planted)


def _overlap_events(steps) -> list[str]:
    """Feed an :class:`OverlapTracker` ``(cycle, "accept", text)`` / ``(cycle, "result",
    status)`` steps and return the events it reported."""
    events = []
    tracker = OverlapTracker(events.append)
    for cycle, kind, what in steps:
        if kind == "accept":
            tracker.accepted(assemble_line(what), cycle)
        else:
            tracker.result(what, cycle)
    return events


@pytest.mark.parametrize("steps, event", [
    ([(0, "accept", "fmopa za0.s, p0/m, p0/m, z1.s, z2.s"),
      (1, "accept", "ld1w {z2.s}, p0/z, [x0]")], "load_behind_mopa_same_z"),
    ([(0, "accept", "ld1w {z2.s}, p0/z, [x0]"),
      (1, "accept", "smopa za1.s, p0/m, p0/m, z2.b, z3.b")], "mopa_behind_load"),
    ([(0, "accept", "fmopa za3.s, p0/m, p0/m, z1.s, z2.s"), (1, "result", "OK"),
      (3, "accept", "st1w {za3h.s[w12, 0]}, p0, [x0]")], "slice_store_behind_mopa"),
    ([(0, "accept", "fmopa za3.s, p0/m, p0/m, z1.s, z2.s"), (1, "result", "OK"),
      (2, "accept", "str za[w12, 0], [x0]")], "slice_store_behind_mopa"),
    ([(0, "accept", "fmopa za0.s, p0/m, p0/m, z1.s, z2.s"),
      (1, "accept", "ld1w {z5.s}, p0/z, [x0]"), (2, "result", "OK"),
      (3, "result", "FAULT")], "fault_with_mopa_in_flight"),
])
def test_the_overlap_tracker_reports_each_case(steps, event):
    assert _overlap_events(steps) == [event]


@pytest.mark.parametrize("steps", [
    # the load's destination is not a source of the outer product
    [(0, "accept", "fmopa za0.s, p0/m, p0/m, z1.s, z2.s"), (1, "accept", "ld1w {z3.s}, p0/z, [x0]")],
    # the load had its result before the outer product entered
    [(0, "accept", "ld1w {z2.s}, p0/z, [x0]"), (1, "result", "OK"),
     (2, "accept", "smopa za1.s, p0/m, p0/m, z2.b, z3.b")],
    # another tile, and an outer product whose ZA writes are over
    [(0, "accept", "fmopa za3.s, p0/m, p0/m, z1.s, z2.s"), (1, "result", "OK"),
     (2, "accept", "st1w {za2h.s[w12, 0]}, p0, [x0]"),
     (9, "accept", "st1w {za3h.s[w12, 0]}, p0, [x0]")],
    # a fault with nothing else in flight
    [(0, "accept", "ld1w {z5.s}, p0/z, [x0]"), (5, "result", "FAULT")],
])
def test_the_overlap_tracker_ignores_near_misses(steps):
    assert _overlap_events(steps) == []


def test_overlap_bins_are_declared_and_counted():
    coverage = Coverage(CONFIG, [128])
    assert set(coverage.bins["overlap"]) == set(OVERLAP_EVENTS)
    tracker = OverlapTracker(coverage.hit_overlap)
    tracker.issue_stalled()
    tracker.memory_saturated()
    assert coverage.unhit().count("overlap/issue_stalled") == 0
    assert "overlap/mopa_behind_load" in coverage.unhit()
