"""The verification IP of tb/ on its own: pure-Python parts, and the cocotb agents against a tiny
loopback design (built here, with the same port names as the engine) on Verilator and Icarus."""

from __future__ import annotations

import inspect
import itertools
import os
import random
import re
from pathlib import Path

import numpy as np
import pytest

from zatile.sim.state import Memory
from zatile.sw.arch.asm import assemble_line
from zatile.sw.arch.config import EngineConfig

from zatile.tb.coverage import Coverage, Sample, predicate_class
from zatile.tb.issue import RESULT_FIELDS, RtlResult, ScalarFile, issue_payload, results_of
from zatile.tb.memory import BusError, BusMemory, memory_in_whole_beats, memory_with_holes
from zatile.tb.pauses import (bursty_pauses, no_pauses, pauses_by_name, per_cycle,
                              random_pauses)


# ----------------------------------------------------------------------------- pure Python
def test_pause_generators():
    rng = random.Random(1)
    assert list(itertools.islice(no_pauses(), 5)) == [0] * 5
    drawn = list(itertools.islice(random_pauses(rng, 0.5, 3), 2000))
    assert set(drawn) == {0, 1, 2, 3}
    assert 0.4 < drawn.count(0) / len(drawn) < 0.6
    bursts = list(itertools.islice(bursty_pauses(rng, 4, 9), 500))
    assert max(bursts) <= 9 and bursts.count(0) > len(bursts) / 2
    with pytest.raises(ValueError, match="2"):
        random_pauses(rng, 2.0).__next__()
    with pytest.raises(ValueError, match="sloppy"):
        pauses_by_name("sloppy", rng)
    # per cycle (cocotbext-axi): each number is that many paused cycles, then a free one
    assert list(per_cycle(iter([0, 2, 0, 1]))) == [False, True, True, False, False, True, False]


def _bus(beat=16, rate=0.0):
    memory = Memory({0x1000: np.arange(56, dtype=np.uint8), 0x1038: np.full(32, 0xEE, np.uint8)})
    return BusMemory(memory, beat, random.Random(3), forced_error_rate=rate)


def test_bus_memory_reads_writes_and_errors():
    bus = _bus()
    data, error = bus.access(0x1010, False, 0, 0xFFFF)
    assert not error and data.to_bytes(16, "little") == bytes(range(16, 32))
    # Disabled lanes carry noise, enabled ones the memory.
    data, error = bus.access(0x1000, False, 0, 0x0001)
    assert not error and data & 0xFF == 0
    # A beat straddling two adjacent regions is fine.
    data, error = bus.access(0x1030, False, 0, 0xFFFF)
    assert not error
    # An enabled unmapped byte fails the whole beat; a write then changes nothing.
    assert bus.access(0x1060, False, 0, 0x0001)[1]
    before = bus.memory.read(0x1050, 8).copy()
    _, error = bus.access(0x1050, True, int.from_bytes(b"\x11" * 16, "little"), 0xFFFF)
    assert error and np.array_equal(bus.memory.read(0x1050, 8), before)
    # A partial write only touches enabled lanes and is logged.
    _, error = bus.access(0x1000, True, int.from_bytes(bytes(range(100, 116)), "little"), 0x8001)
    assert not error
    assert bus.memory.read(0x1000, 16).tolist() == [100] + list(range(1, 15)) + [115]
    log = bus.take_writes()
    assert [w.error for w in log] == [True, False]
    assert log[1].written() == {0x1000: 100, 0x100F: 115} and bus.take_writes() == []
    with pytest.raises(BusError, match="aligned"):
        bus.access(0x1001, False, 0, 1)
    with pytest.raises(BusError, match="lanes"):
        bus.access(0x1000, False, 0, 1 << 16)


def test_bus_memory_abandons_the_beats_after_an_error_up_to_the_next_first_one():
    """The port's abandon rule: a store's beats after its failing one write nothing, the next
    access (its first beat) is performed again."""
    bus = _bus()
    ones = int.from_bytes(b"\x11" * 16, "little")
    assert not bus.access(0x1000, True, ones, 0xFFFF)[1]              # beat 0 written
    assert bus.access(0x1060, True, ones, 0xFFFF, first=False)[1]     # beat 1 unmapped
    assert bus.access(0x1010, True, ones, 0xFFFF, first=False)[1]     # beat 2 abandoned
    assert bus.memory.read(0x1010, 16).tolist() == list(range(16, 32))
    assert bus.access(0x1020, False, 0, 0xFFFF, first=False)[1]       # so is a read
    assert bus.abandoned == 2
    assert [beat.written() != {} for beat in bus.take_writes()] == [True, False, False]
    assert not bus.access(0x1010, True, ones, 0xFFFF)[1]              # the next access
    assert bus.memory.read(0x1010, 16).tolist() == [0x11] * 16
    # Without an error, later beats are performed.
    assert not bus.access(0x1020, True, ones, 0x0001, first=False)[1]


def test_bus_memory_private_regions_and_forced_errors():
    bus = _bus()
    bus.map_private(0x9000, bytes(range(16)))
    assert bus.access(0x9000, False, 0, 0xFFFF) == (int.from_bytes(bytes(range(16)), "little"),
                                                    False)
    bus.private_enabled = False
    assert bus.access(0x9000, False, 0, 0xFFFF)[1]
    with pytest.raises(ValueError, match="overlaps"):
        bus.map_private(0x1050, bytes(32))
    forcing = _bus(rate=1.0)
    assert forcing.access(0x1000, False, 0, 0xFFFF)[1]
    assert forcing.take_forced() == [(0x1000, 0xFFFF, False)] and forcing.take_forced() == []
    assert not forcing.access(0x1000, False, 0, 0)[1]       # nothing enabled: nothing to fail
    assert not forcing.access(0x1000, False, 0, 0xFFFF, forceable=False)[1]


def test_memory_in_whole_beats_rounds_regions_out_and_merges_those_that_meet():
    memory = Memory({0x1003: b"\x01\x02", 0x1012: b"\x03", 0x1040: bytes(range(1, 17)),
                     0x1050: b"\x04", 0x2000: b"\x05"})
    rounded = memory_in_whole_beats(memory, 16)
    assert {base: data.size for base, data in rounded.regions.items()} == {
        0x1000: 0x20, 0x1040: 0x20, 0x2000: 0x10}
    assert rounded.read(0x1000, 0x20).tolist() == [0, 0, 0, 1, 2] + [0] * 13 + [3] + [0] * 13
    assert rounded.read(0x1040, 0x11).tolist() == list(range(1, 17)) + [4]
    assert memory.regions.keys() == {0x1003, 0x1012, 0x1040, 0x1050, 0x2000}   # a copy
    top = Memory({(1 << 64) - 3: b"\x07\x08\x09"})
    assert {b: d.size for b, d in memory_in_whole_beats(top, 16).regions.items()} == {
        (1 << 64) - 16: 16}


def test_memory_with_holes_merges_back():
    memory = Memory({0x100: np.zeros(32, np.uint8)})
    split, merge_back = memory_with_holes(memory, [(0x108, 4)])
    assert sorted(split.regions) == [0x100, 0x10C]
    split.write(0x104, b"\x01\x02\x03\x04")
    with pytest.raises(Exception):
        split.write(0x108, b"\x05")
    merge_back()
    assert memory.read(0x104, 8).tolist() == [1, 2, 3, 4, 0, 0, 0, 0]


def test_scalar_file_resolves_and_writes_back():
    registers = ScalarFile(np.arange(31, dtype=np.uint64) + 0x1_0000_0000, sp=0x8000, fpsr=0)
    word = assemble_line("ld1w {za1h.s[w13, 1]}, p2/z, [sp, x5, lsl #2]")
    # w13 is zero-extended from 32 bits; SP is the stack pointer.
    assert registers.sources(word) == (13, 0x8000, 0x1_0000_0005)
    assert registers.reads(word) == {"x13", "sp", "x5"}
    word = assemble_line("rdsvl x20, #2")
    assert registers.writes(word) == "x20" and registers.sources(word) == (0, 0, 0)
    registers.retire(word, RtlResult("OK", 0, 64, 0, False))
    assert registers.x[20] == 64
    registers.retire(assemble_line("smstart"), RtlResult("OK", 0, 0, 0, True))
    assert registers.fpsr == 0x0800009F
    registers.retire(assemble_line("addsvl sp, sp, #1"), RtlResult("OK", 0, 0x9000, 0, False))
    assert registers.sp == 0x9000


def test_issue_transfers_pack_lanes_and_result_transfers_unpack_them():
    payload = issue_payload([{"word": 0xA5484001, "src0": 7}, {"word": 3, "src2": 9}])
    assert payload["count"] == 2
    lane_bits = 32 + 3 * 64
    assert payload["lanes"] & 0xFFFF_FFFF == 0xA5484001
    assert payload["lanes"] >> 32 & (2**64 - 1) == 7
    assert payload["lanes"] >> lane_bits & 0xFFFF_FFFF == 3
    assert payload["lanes"] >> (lane_bits + 32 + 128) == 9
    size = sum(RESULT_FIELDS.values())
    fault = 3 | 0x1234 << (2 + 3 + 64)             # status FAULT, fault_address
    results = results_of({"count": 2, "lanes": fault << size | 5 << 5}, 2)
    assert results[0] == RtlResult("OK", 0, 5, 0, False)
    assert results[1].describe() == "FAULT at 0x1234"


@pytest.mark.parametrize("count, lanes", [(0, 2), (3, 2), (2, 1)])
def test_a_result_transfer_of_no_result_or_too_many_is_reported(count, lanes):
    with pytest.raises(ValueError, match=f"carries {count} results \\(1 to {lanes} expected"):
        results_of({"count": count, "lanes": 0}, lanes)


def test_predicate_classes():
    def predicate(bits):
        return np.packbits(np.array(bits, np.uint8), bitorder="little")
    assert predicate_class(predicate([1] * 16), 1, 16) == "all_true"
    assert predicate_class(predicate([0] * 16), 4, 16) == "all_false"
    assert predicate_class(predicate([1, 0, 0, 0] + [0] * 12), 4, 16) == "first_only"
    assert predicate_class(predicate([0] * 12 + [1, 1, 1, 1]), 4, 16) == "last_only"
    assert predicate_class(predicate([1, 0] * 8), 1, 16) == "sparse"
    # Bits between elements do not count: only bit e*granule does.
    assert predicate_class(predicate([1, 0] * 8), 2, 16) == "all_true"


def test_coverage_bins_sample_and_merge():
    config = EngineConfig(max_svl=128, features=frozenset({"I8I32", "I16I64"}))
    coverage = Coverage(config, [128])
    hit, total = coverage.totals()
    assert hit == 0 and total > 500
    from zatile.sw.arch.isa import decode
    decoded = decode(assemble_line("ld1d {za0v.d[w12, 1]}, p1/z, [x0]"))
    sample = Sample(decoded, "OK", None, 3, 3, True, 128,
                    predicates={"pg": np.array([0x01, 0x01], np.uint8)}, slice_selector=7)
    coverage.sample(sample)
    coverage.sample(Sample(decode(assemble_line("fmopa za0.s, p0/m, p0/m, z0.s, z0.s")),
                           "UNDEF", None, 3, 3, True, 128))
    assert coverage.bins["outcome"]["LD1D_ZA_V:ok"] == 1
    assert coverage.bins["outcome"]["FMOPA_S:undef"] == 1
    assert "FMOPA_S:ok" not in coverage.bins["outcome"]      # feature absent: not declared
    assert coverage.bins["predicate"]["LD1D_ZA_V:pg:all_true"] == 1
    assert coverage.bins["slice"]["ld1_tile:wrapped"] == 1
    assert coverage.bins["pstate"]["sm_za:svcr3"] == 2
    other = Coverage(config, [128])
    other.merge(coverage.to_json())
    other.merge(coverage.to_json())
    assert other.bins["outcome"]["LD1D_ZA_V:ok"] == 2
    report = other.report()
    assert report.startswith(f"functional coverage: {other.totals()[0]}/{total}")
    unhit = other.unhit()
    assert len(unhit) == total - other.totals()[0]
    assert "outcome/LD1D_ZA_V:ok" not in unhit and "outcome/LD1D_ZA_V:fault" in unhit


def test_a_one_lane_engine_declares_no_paired_transfer_bins():
    """A transfer of a one-lane engine carries one instruction and one result: paired
    transfers are not coverage it could close."""
    paired = {"paired_issue", "paired_results"}
    assert paired <= set(Coverage(EngineConfig(max_svl=128), [128]).bins["overlap"])
    one_lane = Coverage(EngineConfig(max_svl=128, issue_lanes=1), [128]).bins["overlap"]
    assert not paired & set(one_lane) and "issue_stalled" in one_lane


# ----------------------------------------------------------------------------- loopback design
LOOPBACK_WIDTH = 128
#: The configuration whose issue and result layouts the loopback's ports have (two lanes).
PORTS = EngineConfig()


def _loopback(width: int):
    """A stand-in with the engine's port names and issue/result layouts: each instruction of an
    issue transfer in turn, op = word[1:0]; 0 read beat at src0 with enables src2, 1 write src1
    (replicated) at src0 with enables src2, 2 scalar = src0 + src1, 3 SME trap with SMTC
    word[4:2]; the results of a transfer leave together in one result transfer.
    debug_data = {space, index} replicated, one cycle late. The next transfer is accepted while
    the results are taken (issue.ready = result.ready)."""
    from amaranth import Array, Cat, Module, Signal
    from amaranth.lib import data, stream, wiring
    from amaranth.lib.wiring import In, Out

    from zatile.hw.engine import IssuePortLayout, ResultPortLayout

    issue_layout, result_layout = IssuePortLayout(PORTS), ResultPortLayout(PORTS)
    lanes = PORTS.issue_lanes

    class Loopback(wiring.Component):
        def __init__(self):
            super().__init__({
                "issue": In(stream.Signature(issue_layout)),
                "result": Out(stream.Signature(result_layout)),
                "mem_req": Out(stream.Signature(data.StructLayout(
                    {"address": 64, "write": 1, "data": width, "byte_enable": width // 8,
                     "first": 1}))),
                "mem_resp": In(stream.Signature(data.StructLayout({"data": width, "error": 1}))),
                "debug_addr": In(data.StructLayout({"space": 2, "index": 8})),
                "debug_data": Out(width),
            })

        def elaborate(self, platform):
            m = Module()
            taken = Signal(issue_layout)
            results = Signal(result_layout)
            lane = Signal(range(lanes))
            current = Array(taken.lanes)[lane]
            word, src0, src1, src2 = (Signal(32), Signal(64), Signal(64), Signal(64))
            m.d.comb += [word.eq(current.word), src0.eq(current.src0), src1.eq(current.src1),
                         src2.eq(current.src2)]
            result = Array(results.lanes)[lane]
            tag = Cat(self.debug_addr.index, self.debug_addr.space)
            m.d.sync += self.debug_data.eq(Cat(*[tag] * (width // 10 + 1))[:width])

            def take_transfer():
                m.d.sync += [taken.eq(self.issue.payload), results.eq(0), lane.eq(0),
                             results.count.eq(self.issue.payload.count)]
                with m.If(self.issue.payload.count != 0):
                    m.next = "DISPATCH"
                with m.Else():
                    m.next = "IDLE"

            def finish(status, scalar):
                m.d.sync += [result.status.eq(status), result.smtc.eq(word[2:5]),
                             result.scalar.eq(scalar), result.fault_address.eq(src0)]
                with m.If(lane + 1 < taken.count):
                    m.d.sync += lane.eq(lane + 1)
                    m.next = "DISPATCH"
                with m.Else():
                    m.next = "RESULT"

            with m.FSM():
                with m.State("IDLE"):
                    m.d.comb += self.issue.ready.eq(1)
                    with m.If(self.issue.valid):
                        take_transfer()
                with m.State("DISPATCH"):
                    with m.Switch(word[0:2]):
                        with m.Case(0, 1):
                            m.next = "REQUEST"
                        with m.Case(2):
                            finish(0, src0 + src1)
                        with m.Case(3):
                            finish(2, 0)
                with m.State("REQUEST"):
                    m.d.comb += [self.mem_req.valid.eq(1),
                                 self.mem_req.payload.address.eq(src0),
                                 self.mem_req.payload.write.eq(word[0]),
                                 self.mem_req.payload.data.eq(Cat(*[src1] * (width // 64))),
                                 self.mem_req.payload.byte_enable.eq(src2),
                                 self.mem_req.payload.first.eq(1)]
                    with m.If(self.mem_req.ready):
                        m.next = "RESPONSE"
                with m.State("RESPONSE"):
                    m.d.comb += self.mem_resp.ready.eq(1)
                    with m.If(self.mem_resp.valid):
                        finish(self.mem_resp.payload.error * 3, self.mem_resp.payload.data[:64])
                with m.State("RESULT"):
                    m.d.comb += [self.result.valid.eq(1), self.result.payload.eq(results),
                                 # Like the engine: the next transfer is taken in the cycle the
                                 # results go, so issue.ready follows result.ready
                                 # combinationally (and can rise in the clock-low phase).
                                 self.issue.ready.eq(self.result.ready)]
                    with m.If(self.result.ready & self.issue.valid):
                        take_transfer()
                    with m.Elif(self.result.ready):
                        m.next = "IDLE"
            return m

    return Loopback()


def _build_loopback(simulator: str, waves: bool = False):
    from amaranth.back import verilog

    from zatile.tb.runner import build_design

    def write(directory: Path) -> list[Path]:
        path = directory / "loopback.v"
        path.write_text(verilog.convert(_loopback(LOOPBACK_WIDTH), name="loopback"))
        return [path]

    from zatile.hw.engine import IssuePortLayout, ResultPortLayout

    key = [inspect.getsource(_loopback), LOOPBACK_WIDTH, repr(IssuePortLayout(PORTS)),
           repr(ResultPortLayout(PORTS))]
    return build_design("loopback", write, key, simulator, waves)


def _run_loopback(simulator: str, seed: int, waves: bool = False):
    build = _build_loopback(simulator, waves)
    tests_dir = str(Path(__file__).parent)
    run = build.run("test_tb_vip", extra_env={"PYTHONPATH": tests_dir,
                                              "LOOPBACK_SEED": str(seed)},
        test_dir=build.directory / f"run-{seed}")
    assert run.tests >= 2
    return build


def test_loopback_verilator():
    build = _run_loopback("verilator", 1)
    # The second request for the same design is served from the cache.
    again = _build_loopback("verilator")
    assert again.cached and again.directory == build.directory


def test_loopback_icarus():
    from conftest import need_tool
    need_tool("iverilog")
    _run_loopback("icarus", 2)


@pytest.mark.parametrize("simulator", ["verilator", "icarus"])
def test_waveforms_on_request(simulator):
    """A traced build (ZATILE_WAVES=1 or waves=True) writes a waveform of the run: FST, except
    Verilator without the lz4 headers (Debian liblz4-dev), which falls back to VCD."""
    from conftest import need_tool
    from zatile.tb.runner import _fst_available
    if simulator == "icarus":
        need_tool("iverilog")
    build = _run_loopback(simulator, 3, waves=True)
    assert build.waves and build.directory.name.startswith(f"loopback-{simulator}-waves-")
    run = build.directory / "run-3"
    names = {"icarus": ["loopback.fst"],
             "verilator": ["dump.fst"] if _fst_available() else ["dump.vcd"]}[simulator]
    for name in names:
        assert (run / name).stat().st_size > 1000, name
    assert build.waves_file(run) == run / names[0]
    assert build.trace_format == names[0].rsplit(".", 1)[1]


@pytest.mark.parametrize("quiet", [False, True])
def test_a_build_says_what_it_builds_and_where_unless_quiet(quiet, monkeypatch, tmp_path,
                                                            capfd):
    """An uncached build names the design, the simulator and the cache folder on stderr (an
    engine build takes minutes); ZATILE_QUIET=1 silences it. Icarus builds in a second."""
    from conftest import need_tool
    from zatile.tb import runner
    need_tool("iverilog")
    monkeypatch.setattr(runner, "CACHE", tmp_path)
    monkeypatch.setenv("ZATILE_QUIET", "1" if quiet else "0")
    build = _build_loopback("icarus", waves=True)
    assert not build.cached
    out, err = capfd.readouterr()
    if quiet:
        assert err == "" and out == ""
    else:
        assert f"zatile: building loopback with icarus with waveforms as FST in " \
               f"{build.directory} (cache: {tmp_path}, set by ZATILE_CACHE" in err
        assert re.search(r"zatile: built loopback with icarus in \d+ s", err)
        assert out == ""


def test_waiting_for_another_build_is_said(tmp_path, capfd, monkeypatch):
    import fcntl
    import threading

    from zatile.tb.runner import _locked

    monkeypatch.delenv("ZATILE_QUIET", raising=False)
    lock_path = tmp_path / "design.lock"
    entered = threading.Event()
    with open(lock_path, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)

        def wait_for_it():
            with _locked(lock_path, "another process's build of loopback"):
                entered.set()

        waiter = threading.Thread(target=wait_for_it)
        waiter.start()
        assert not entered.wait(0.5)                       # blocked behind the held lock
        fcntl.flock(held, fcntl.LOCK_UN)
    waiter.join(5)
    assert entered.is_set()
    assert "zatile: waiting for another process's build of loopback" in capfd.readouterr().err


def test_a_vcd_trace_is_called_vcd():
    from zatile.tb.runner import Build, _trace_format_note

    assert _trace_format_note("vcd").startswith("as VCD (dump.vcd: Verilator's FST writer "
                                                "needs lz4.h")
    build = Build("verilator", Path("/x"), "top", 0.0, False, True, {"traced_as": "vcd"})
    assert build.waves_file(Path("/run")) == Path("/run/dump.vcd")
    assert Build("verilator", Path("/x"), "top", 0.0, False, False).waves_file(Path("/r")) is None


@pytest.mark.parametrize("how, message", [
    ({"extra_env": {"LOOPBACK_PLANT_SKIP": "1"}}, r"loopback_planted_skip: skipped"),
    ({"testcase": "no_such_test"}, r"no test ran|no_such_test: requested but never ran"),
    ({"testcase": ["loopback_debug_port", "no_such_test"]},
     r"no_such_test: requested but never ran"),
])
def test_a_skipped_or_missing_cocotb_test_fails_the_run(how, message):
    """Only failures and errors used to count: a skipped test, or one a filter never reached,
    passed silently. Verilator's loopback build is the cheapest cached design."""
    from zatile.tb.runner import SimulationFailed

    build = _build_loopback("verilator")
    extra_env = {"PYTHONPATH": str(Path(__file__).parent), "LOOPBACK_SEED": "1",
                 **how.get("extra_env", {})}
    run_dir = build.directory / "run-planted"
    with pytest.raises(SimulationFailed, match=message):
        build.run("test_tb_vip", extra_env=extra_env, testcase=how.get("testcase"),
                  test_dir=run_dir)
    run = build.run("test_tb_vip", extra_env=extra_env, testcase=how.get("testcase"),
                    test_dir=run_dir, check=False)
    assert not run.failures


# ----------------------------------------------------------------------------- cocotb side
try:
    import cocotb
    from cocotb.clock import Clock
    from cocotb.triggers import ClockCycles, FallingEdge
except ImportError:                                         # pragma: no cover
    cocotb = None

if cocotb is not None and os.environ.get("COCOTB_TEST_MODULES"):
    from zatile.tb.debug import DebugReader
    from zatile.tb.issue import IssueDriver, ResultMonitor
    from zatile.tb.memory import MemoryResponder

    async def _reset(dut):
        Clock(dut.clk, 10, unit="ns").start()
        dut.rst.value = 1
        await ClockCycles(dut.clk, 3)
        dut.rst.value = 0
        await FallingEdge(dut.clk)

    def _agents(dut, rng, style):
        bus = BusMemory(Memory({0x4000: np.frombuffer(rng.randbytes(1024), np.uint8)}),
                        LOOPBACK_WIDTH // 8, rng)
        issue = IssueDriver(dut, dut.clk, PORTS, pauses_by_name(style, rng), rng=rng,
                            single_rate=0.3)
        results = ResultMonitor(dut, dut.clk, PORTS, pauses_by_name(style, rng))
        responder = MemoryResponder(dut, dut.clk, bus, pauses_by_name(style, rng),
                                    pauses_by_name(style, rng))
        return bus, issue, results, responder

    @cocotb.test(timeout_time=2, timeout_unit="ms")
    async def loopback_transactions(dut):
        """Random reads, writes, adds and traps under every pause style; all answered in order."""
        rng = random.Random(int(os.environ.get("LOOPBACK_SEED", "1")))
        await _reset(dut)
        for style in ("none", "light", "heavy", "bursty"):
            bus, issue, results, responder = _agents(dut, rng, style)
            shadow = bus.memory.copy()
            expected, received = [], []
            results.callbacks.append(received.append)
            for _ in range(150):
                op = rng.randrange(4)
                address = rng.choice((0x4000 + 16 * rng.randrange(64), 0x8000))
                enables = rng.choice((0xFFFF, rng.getrandbits(16)))
                value = rng.getrandbits(64)
                if op == 0:
                    fault = address == 0x8000 and enables != 0
                    data = int.from_bytes(shadow.read(address, 8), "little") if not fault else 0
                    full = enables & 0xFF == 0xFF and not fault
                    expected.append(("FAULT" if fault else "OK", data if full else None))
                elif op == 1:
                    fault = address == 0x8000 and enables != 0
                    if not fault:
                        payload = value.to_bytes(8, "little") * 2
                        for lane in range(16):
                            if enables >> lane & 1:
                                shadow.write(address + lane, payload[lane:lane + 1])
                    expected.append(("FAULT" if fault else "OK", None))
                elif op == 2:
                    expected.append(("OK", (address + value) & (2**64 - 1)))
                else:
                    expected.append(("SME_TRAP", None))
                issue.issue_nowait(op | rng.randrange(8) << 2, (address, value, enables))
            await issue.wait_idle()
            while len(received) < len(expected):
                await FallingEdge(dut.clk)
            await ClockCycles(dut.clk, 2, FallingEdge)
            for index, ((status, scalar), got) in enumerate(zip(expected, received)):
                assert got.status == status, f"{style} #{index}: {got} != {status}"
                if scalar is not None:
                    assert got.scalar == scalar, f"{style} #{index}: {got.scalar:#x} != {scalar:#x}"
            assert bus.memory == shadow, style
            assert responder.requests == responder.responses.transfers
            # Transfers of one and of two instructions, and of one and two results.
            assert issue.transfers < issue.issued < 2 * issue.transfers, style
            assert results.sink.transfers < results.received, style
            for agent in (issue.source, results.sink, responder):
                agent.stop()

    @cocotb.test()
    async def loopback_debug_port(dut):
        """Pipelined debug reads return the data of the address driven one cycle earlier."""
        await _reset(dut)
        reader = DebugReader(dut, dut.clk, LOOPBACK_WIDTH)
        selections = [(space, index) for space in range(4) for index in (0, 1, 2, 77, 255)]
        contents = await reader.read(selections)
        for (space, index), content in zip(selections, contents):
            assert int.from_bytes(content, "little") & 0x3FF == index | space << 8, (space, index)

    if os.environ.get("LOOPBACK_PLANT_SKIP"):
        @cocotb.test(skip=True)
        async def loopback_planted_skip(dut):
            """Skipped on purpose: the pytest that launched the run must fail."""
