"""The host runs ahead of the engine (docs/architecture.md, "The host runs ahead").

The host CPU streams an engine instruction (does not wait for its result) when it has shown the
instruction ends OK and returns nothing but FPSR bits; these tests check which instructions
stream, and that the program cannot tell: on :class:`tests.deferred_engine.DeferredEngine`,
which runs streamed instructions only when the CPU drains them, every ordering the CPU gets
wrong shows as a wrong value. Scalar words are numbers (checked with binutils when written).
"""

from __future__ import annotations

import io
import struct

import numpy as np
import pytest

from tests import test_host_cpu as host_cpu_tests
from tests.deferred_engine import DeferredEngine
from tests.test_ops import _operands, _same_bits
from tests.test_real_programs import _need_zig
from zatile.sim.engine import ModelEngine
from zatile.sim.footprint import FootprintProbe
from zatile.sim.host_cpu import PROT_READ, SIGSEGV, HostCpu, StopKind
from zatile.sw.abi.elf_process import ElfProcess, load_elf_image
from zatile.sw.arch.asm import assemble_line
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.constants import FpsrFlag
from zatile.sw.arch.engine import StreamError
from zatile.sw.kernels import library
from zatile.sw.ops import matmul_reference

CODE, DATA = host_cpu_tests.CODE, host_cpu_tests.DATA
OTHER, UNMAPPED = 0x30000, 0x50000
LDR_X1_X0 = 0xF9400001          # ldr x1, [x0]
STR_X3_X0 = 0xF9000003          # str x3, [x0]
LDR_X7_X6 = 0xF94000C7          # ldr x7, [x6]
MRS_X2_FPSR = 0xD53B4422        # mrs x2, fpsr


def make_cpu(words, engine_class=DeferredEngine):
    """:func:`tests.test_host_cpu.make_cpu` at SVL 128 on ``engine_class``, with a read-only
    page at OTHER and X0 = DATA."""
    cpu = host_cpu_tests.make_cpu(words, svl=128, engine_class=engine_class)
    cpu.map(OTHER, 0x1000, PROT_READ)
    cpu.set_x(0, DATA)
    return cpu


def test_instructions_without_results_stream_and_the_rest_wait():
    """Vector arithmetic, a store to writable memory and an outer product stream; SMSTART (an
    SVCR write), CNTW (a scalar result), WHILELT (NZCV), a load from unmapped memory and a
    store to read-only memory are issued and waited for."""
    cpu = make_cpu(["smstart", "ptrue p0.s", "index z1.s, #7, #1", "st1w {z1.s}, p0, [x0]",
                    "fmopa za0.s, p0/m, p0/m, z1.s, z1.s", "cntw x9", "whilelt p1.s, xzr, x9",
                    "st1w {z1.s}, p0, [x6]", "smstop"])
    cpu.set_x(6, OTHER)
    stop = cpu.run()
    assert stop.kind is StopKind.SIGNAL and stop.signal == SIGSEGV and stop.address == OTHER
    assert cpu.stats.engine_instructions == 8
    assert cpu.stats.engine_streamed == 4          # ptrue, index, st1w to DATA, fmopa
    assert cpu.read_memory(DATA, 16) == struct.pack("<4I", 7, 8, 9, 10)


def test_a_host_load_waits_for_an_engine_store_to_the_same_bytes():
    cpu = make_cpu(["smstart sm", "ptrue p0.s", "index z1.s, #7, #1", "st1w {z1.s}, p0, [x0]",
                    LDR_X7_X6, LDR_X1_X0, "smstop sm"])
    cpu.set_x(6, DATA + 0x800)
    assert cpu.run().kind is StopKind.EXIT
    assert cpu.x(1) == 7 | 8 << 32
    # The load of other bytes did not wait; the one of the stored bytes did, once.
    assert cpu.stats.engine_streamed == 3 and cpu.stats.engine_drains == 1


def test_a_host_store_waits_for_an_engine_load_of_the_same_bytes():
    cpu = make_cpu(["smstart sm", "ptrue p0.s", "ld1w {z1.s}, p0/z, [x0]", STR_X3_X0,
                    "st1w {z1.s}, p0, [x4]", "smstop sm"])
    cpu.write_memory(DATA, struct.pack("<4I", 1, 2, 3, 4))
    cpu.set_x(3, 0xFFFF_FFFF_FFFF_FFFF)
    cpu.set_x(4, DATA + 0x100)
    assert cpu.run().kind is StopKind.EXIT
    assert cpu.read_memory(DATA + 0x100, 16) == struct.pack("<4I", 1, 2, 3, 4)
    assert cpu.read_memory(DATA, 8) == bytes([0xFF] * 8)


def test_the_ordering_checks_catch_a_cpu_that_does_not_watch_its_accesses(monkeypatch):
    """Planted: the CPU remembers the streamed accesses but installs no hook on its own. The
    deferred engine then shows both orderings broken."""
    watch = HostCpu._watch

    def remember_only(self, spans):
        self._access_hook = "planted: as if installed"
        watch(self, spans)
        self._access_hook = None

    monkeypatch.setattr(HostCpu, "_watch", remember_only)
    with pytest.raises(AssertionError):
        test_a_host_load_waits_for_an_engine_store_to_the_same_bytes()
    with pytest.raises(AssertionError):
        test_a_host_store_waits_for_an_engine_load_of_the_same_bytes()


def test_a_fault_after_streamed_instructions_is_precise():
    """A load from unmapped memory after streamed stores: it is not streamed, so SIGSEGV comes
    at its own address with every older instruction done and no younger one, on the deferred
    engine exactly as in lock step."""
    program = ["smstart sm", "ptrue p0.s", "index z1.s, #1, #1", "st1w {z1.s}, p0, [x0]",
               "st1w {z1.s}, p0, [x0, #1, mul vl]", "ld1w {z2.s}, p0/z, [x5]",
               "st1w {z1.s}, p0, [x6]"]
    outcomes = []
    for engine_class in (DeferredEngine, ModelEngine):
        cpu = make_cpu(program, engine_class)
        cpu.set_x(5, UNMAPPED)
        cpu.set_x(6, DATA + 0x100)
        stop = cpu.run()
        assert (stop.kind, stop.signal, stop.address) == (StopKind.SIGNAL, SIGSEGV, UNMAPPED)
        assert cpu.pc == CODE + 5 * 4
        outcomes.append((cpu.read_memory(DATA, 0x200), cpu.stats.engine_streamed))
    (deferred, streamed), (lock_step, none) = outcomes
    assert deferred == lock_step == struct.pack("<8I", 1, 2, 3, 4, 1, 2, 3, 4) + bytes(0x1E0)
    assert (streamed, none) == (4, 0)


def test_fpsr_read_sees_the_exception_bits_of_streamed_instructions():
    cpu = make_cpu(["smstart sm", "ptrue p0.s", "fmov z1.s, #1.0", "fmov z2.s, #3.0",
                    "fdiv z1.s, p0/m, z1.s, z2.s", MRS_X2_FPSR, "smstop sm"])
    assert cpu.run().kind is StopKind.EXIT
    assert cpu.stats.engine_streamed == 4
    assert cpu.x(2) & FpsrFlag.IXC


def test_a_streamed_instruction_that_fails_is_an_error_of_the_engine_not_the_guest():
    """The CPU streams only what it has shown ends OK; an engine that fails one anyway has
    broken the interface, and the drain says which instruction."""
    config = EngineConfig(max_svl=128)
    engine = DeferredEngine(config)
    engine.smcr_len, engine.sme_enabled = 0, True
    engine.issue(assemble_line("smstart sm"))
    engine.issue(assemble_line("ptrue p0.s"))
    engine.stream(assemble_line("ld1w {z2.s}, p0/z, [x5]"), [UNMAPPED])
    with pytest.raises(StreamError, match="0xa540a0a2 ended fault"):
        engine.drain()


def test_the_probe_finds_every_byte_an_instruction_may_touch():
    """Contiguous, tile-slice, ZA-vector and structure accesses at SVL 128 and 512, with every
    element active; an instruction without memory access has none; a word outside the table
    is refused."""
    probe = FootprintProbe(EngineConfig(max_svl=512))
    cases = [("ld1w {z0.s}, p0/z, [x13, #1, mul vl]", [0x1000], [(0x1010, 16)], [(0x1040, 64)]),
             ("st1w {za1h.s[w12, 0]}, p1, [x15, x9, lsl #2]", [3, 0x2000, 2],
              [(0x2008, 16)], [(0x2008, 64)]),
             ("ldr za[w12, 1], [x0, #1, mul vl]", [2, 0x4000], [(0x4010, 16)], [(0x4040, 64)]),
             ("st4w {z0.s-z3.s}, p0, [x0]", [0x8000], [(0x8000, 64)], [(0x8000, 256)]),
             ("fmopa za0.s, p0/m, p1/m, z0.s, z1.s", [], [], [])]
    for line, operands, at_128, at_512 in cases:
        word = assemble_line(line)
        for svl, expected in ((128, at_128), (512, at_512)):
            spans = probe.spans(word, operands, svl)
            assert {(address, length) for address, length, _ in spans} == set(expected), line
            assert all(write == line.startswith("st") for _, _, write in spans), line
    with pytest.raises(ValueError, match="0x00000000 does not execute"):
        probe.spans(0, [], 128)


def test_the_library_gemm_runs_ahead_and_matches_numpy():
    """The kernel library's fp32 GEMM under a deferred engine: its k loops and its stores of C
    stream (whole blocks between the WHILELTs at a block's start), and C is exact."""

    _need_zig()
    a, b = _operands(20, 24, 40, seed=3)
    path = library()
    process = ElfProcess(load_elf_image(path), [str(path)], svl=128,
                         engine_class=DeferredEngine, stdout=io.BytesIO(), stderr=io.BytesIO())
    packed_a = np.ascontiguousarray(a.T).tobytes()
    base = 0x7000_0000
    places = [base, base + 0x10_0000, base + 0x20_0000]
    (c,), counts = process.call_with_memory(
        "zatile_gemm_f32", [*places, 20, 24, 40],
        [(places[0], packed_a), (places[1], b.tobytes()), (places[2], bytes(20 * 24 * 4))],
        [(places[2], 20 * 24 * 4)])
    assert _same_bits(np.frombuffer(c, np.float32).reshape(20, 24), matmul_reference(a, b))
    host = process.cpu.stats
    assert host.engine_streamed / host.engine_instructions > 0.95, counts
    assert process.cpu.engine.most_queued > 300
