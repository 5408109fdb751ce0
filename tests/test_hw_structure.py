"""The structure sequencer with the load/store unit: LD2-4/ST2-4 interleave exactly as the
architecture says, under a partial predicate, wrapping from Z31 to Z0, with both address forms;
a fault in a later chunk writes no register; and the cycles an LD4/ST4 takes."""

from __future__ import annotations

import random

import numpy as np
import pytest
from amaranth import Module, Signal
from amaranth.lib.wiring import Out
from amaranth.sim import Simulator

from zatile.hw.decoder import DecodedLayout, Op
from zatile.hw.lsu import LoadStoreUnit, access_of
from zatile.hw.structure import StructureAccess
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.isa import FORMS_BY_NAME, decode

#: Both SVLs (a 256-bit bus); the fault and timing tests use an SVL 128 engine (128-bit bus).
CONFIG = EngineConfig(max_svl=256)
CONFIG_128 = EngineConfig(max_svl=128)
BASE = 0x8000


class _Bench:
    """Sequencer and load/store unit, with the decoded instruction, Z and memory held by the
    testbench."""

    def __init__(self, config: EngineConfig, svl: int, z: np.ndarray, memory: np.ndarray,
                 failing: set[int]):
        self.svl_bytes = svl // 8
        self.maxb = config.max_svl // 8
        self.beat_bytes = config.mem_data_width // 8
        self.z, self.memory, self.failing = z, memory, failing
        self.cycles = 0
        self.fault = None
        self.abandoning = False        # the port's abandon rule (hw/lsu.py, "Beats")
        self.top = m = Module()
        self.decoded = Signal(DecodedLayout)
        m.submodules.structure = self.structure = StructureAccess(config)
        m.submodules.lsu = self.lsu = LoadStoreUnit(config)
        structure, lsu = self.structure, self.lsu
        m.d.comb += [structure.decoded.eq(self.decoded), lsu.access.eq(access_of(self.decoded))]
        for name, member in structure.lsu.signature.members.items():
            source, sink = (structure.lsu, lsu) if member.flow == Out else (lsu, structure.lsu)
            m.d.comb += getattr(sink, name).eq(getattr(source, name))

    def run(self, word: int, predicate: int, base: int, index: int = 0) -> None:
        structure, lsu = self.structure, self.lsu
        svl_bytes = self.svl_bytes

        decoded = decode(word)
        params = decoded.form.params
        fields = {"zt": decoded["zt"], "imm4": decoded.fields.get("imm4", 0)}

        async def bench(ctx):
            ctx.set(self.decoded, {
                "op": Op[decoded.form.op.upper()], "registers": params["registers"],
                "msize_log2": params["msize"].bit_length() - 1,
                "flags": {"scalar_offset": int(params["scalar_offset"])}, "fields": fields})
            ctx.set(lsu.base, base)
            ctx.set(lsu.index, index)
            for port in (structure, lsu):
                ctx.set(port.svl_log2, svl_bytes.bit_length() - 1)
                ctx.set(port.svl_mask, (1 << svl_bytes) - 1)
            ctx.set(structure.predicate, predicate)
            ctx.set(structure.start, 1)
            ctx.set(lsu.mem_req.ready, 1)
            responses = []
            while not ctx.get(structure.done):
                assert self.cycles < 100, "the sequence does not end"
                if responses:
                    ctx.set(lsu.mem_resp.valid, 1)
                    ctx.set(lsu.mem_resp.payload, responses[0])
                else:
                    ctx.set(lsu.mem_resp.valid, 0)
                taken = bool(responses) and bool(ctx.get(lsu.mem_resp.ready))
                read = self.z[ctx.get(structure.z_read.addr)].tobytes()
                ctx.set(structure.z_read.data.as_value(), int.from_bytes(read, "little"))
                if ctx.get(structure.z_write.en):
                    register = ctx.get(structure.z_write.addr)
                    data = ctx.get(structure.z_write.data.as_value()).to_bytes(self.maxb,
                                                                                "little")
                    lanes = ctx.get(structure.z_write.lanes)
                    for byte in range(self.maxb):
                        if lanes >> byte & 1:
                            self.z[register, byte] = data[byte]
                if ctx.get(lsu.mem_req.valid):
                    responses.append(self._beat(ctx.get(lsu.mem_req.payload)))
                await ctx.tick()
                ctx.set(structure.start, 0)
                if taken:
                    responses.pop(0)
                self.cycles += 1
            if ctx.get(structure.fault):
                self.fault = ctx.get(structure.fault_address)

        sim = Simulator(self.top)
        sim.add_clock(1e-6)
        sim.add_testbench(bench)
        sim.run()

    def _beat(self, request) -> dict:
        """Perform one beat on the memory (at BASE); return the response."""
        width = self.beat_bytes
        address = request.address - BASE
        self.abandoning &= not request.first
        if self.abandoning or request.address in self.failing:
            self.abandoning = True
            return {"data": 0, "error": 1}
        if request.write:
            data = request.data.to_bytes(width, "little")
            for lane in range(width):
                if request.byte_enable >> lane & 1:
                    self.memory[address + lane] = data[lane]
            return {"data": 0, "error": 0}
        beat = self.memory[address:address + width].tobytes()
        return {"data": int.from_bytes(beat, "little"), "error": 0}


def _active(predicate: int, msize: int, svl_bytes: int) -> np.ndarray:
    return np.array([bool(predicate >> (e * msize) & 1) for e in range(svl_bytes // msize)])


def _setup(seed: int, svl: int, config: EngineConfig = CONFIG):
    rng = random.Random(seed)
    maxb = config.max_svl // 8
    z = np.frombuffer(rng.randbytes(32 * maxb), np.uint8).reshape(32, maxb).copy()
    memory = np.frombuffer(rng.randbytes(1024), np.uint8).copy()
    predicate = rng.getrandbits(svl // 8)
    return z, memory, predicate


@pytest.mark.parametrize("svl", [128, 256])
@pytest.mark.parametrize("registers", [2, 3, 4])
@pytest.mark.parametrize("letter, msize", [("B", 1), ("H", 2), ("W", 4), ("D", 8)])
def test_a_store_interleaves_the_active_structures_and_wraps_to_z0(svl, registers, letter, msize):
    z, memory, predicate = _setup(registers * 10 + msize, svl)
    svl_bytes = svl // 8
    before = memory.copy()
    form = FORMS_BY_NAME[f"ST{registers}{letter}_SS"]
    bench = _Bench(CONFIG, svl, z.copy(), memory, set())
    bench.run(form.encode(zt=30, pg=0, rn=0, rm=1), predicate, BASE + 8, index=3)
    start = 8 + 3 * msize
    count = svl_bytes // msize
    data = np.stack([z[(30 + k) % 32, :svl_bytes].reshape(-1, msize) for k in range(registers)],
                    axis=1).reshape(count, -1)
    expected = before.copy()
    for element in np.flatnonzero(_active(predicate, msize, svl_bytes)):
        at = start + element * registers * msize
        expected[at:at + registers * msize] = data[element]
    assert bench.fault is None
    assert (memory == expected).all()


@pytest.mark.parametrize("svl", [128, 256])
@pytest.mark.parametrize("registers", [2, 3, 4])
@pytest.mark.parametrize("letter, msize", [("B", 1), ("H", 2), ("W", 4), ("D", 8)])
def test_a_load_deinterleaves_and_zeroes_inactive_elements(svl, registers, letter, msize):
    z, memory, predicate = _setup(100 + registers * 10 + msize, svl)
    svl_bytes = svl // 8
    form = FORMS_BY_NAME[f"LD{registers}{letter}_SI"]
    bench = _Bench(CONFIG, svl, z.copy(), memory, set())
    # imm4 = -1: the structures start n vectors below the base
    bench.run(form.encode(zt=31, pg=0, rn=0, imm4=-1), predicate,
              BASE + 8 + registers * svl_bytes)
    count = svl_bytes // msize
    loaded = memory[8:8 + registers * svl_bytes].reshape(count, registers, msize).copy()
    loaded[~_active(predicate, msize, svl_bytes)] = 0
    expected = z.copy()
    for k in range(registers):
        expected[(31 + k) % 32, :svl_bytes] = loaded[:, k].reshape(-1)
    assert bench.fault is None
    assert (bench.z == expected).all()


def test_a_fault_in_the_third_chunk_of_a_load_writes_no_register():
    svl = 128
    z, memory, _ = _setup(7, svl, CONFIG_128)
    form = FORMS_BY_NAME["LD4W_SS"]
    failing_beat = BASE + 2 * 16 + 16        # the beat after the third chunk's first
    bench = _Bench(CONFIG_128, svl, z.copy(), memory, {failing_beat})
    bench.run(form.encode(zt=5, pg=0, rn=0, rm=1), (1 << 16) - 1, BASE + 4, index=0)
    assert bench.fault == failing_beat
    assert (bench.z == z).all()


def test_a_fault_in_the_second_chunk_of_a_store_keeps_the_first():
    svl = 128
    z, memory, _ = _setup(8, svl, CONFIG_128)
    before = memory.copy()
    form = FORMS_BY_NAME["ST2B_SI"]
    bench = _Bench(CONFIG_128, svl, z.copy(), memory, {BASE + 16})
    bench.run(form.encode(zt=0, pg=0, rn=0, imm4=0), (1 << 16) - 1, BASE)
    assert bench.fault == BASE + 16
    first = np.stack([z[0, :16], z[1, :16]], axis=1).reshape(-1)[:16]
    assert (memory[:16] == first).all() and (memory[16:] == before[16:]).all()


@pytest.mark.parametrize("name, cycles", [("LD4D_SI", 21), ("ST4D_SI", 21)])
def test_cycles_of_an_aligned_ld4_st4_at_svl_128(name, cycles):
    """One beat per chunk (bus as wide as the SVL), memory answering in the next cycle."""
    z, memory, _ = _setup(9, 128, CONFIG_128)
    bench = _Bench(CONFIG_128, 128, z, memory, set())
    bench.run(FORMS_BY_NAME[name].encode(zt=0, pg=0, rn=0, imm4=0), (1 << 16) - 1, BASE)
    assert bench.cycles == cycles
