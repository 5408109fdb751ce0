"""Streaming-SVE replicating, sign-extending, structure and non-temporal loads and stores, and
prefetches (sw/arch/isa/sve_mem.py and sim/model/sve_mem.py).

* Semantics against QEMU 10: every form of the class, random operands addressing the data
  region, at several SVLs under all-true, all-false, sparse and random predicates; and a small
  campaign of random programs of the class.
* Directed values worked out by hand for the rules that are easy to get wrong (docs/isa.md,
  "Streaming SVE loads and stores"): sign extension, broadcast under an inactive first element
  and with no active element at all, structure interleaving and the register wrap from z31 to
  z0, LD1RQ replication, prefetches of unmapped addresses, the first faulting address of a
  structure store and of a structure load, inactive elements that never fault.
* The assembler's register lists, as GNU as reads and objdump prints them.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from zatile.sim.model import ReferenceModel
from zatile.sim.progen import DATA_BASE, DATA_SIZE, OP_WEIGHTS, generate_program
from zatile.sim.state import ArchState, Memory
from zatile.sw.arch.asm import AsmError, assemble, assemble_line, disassemble
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.engine import Status
from zatile.sw.arch.isa import Trait, decode, sve_mem
from zatile.sw.backends import compare
from tests.test_sve_int import Vectors, _predicate

#: The operations of the class.
MEMORY_OPS = tuple(dict.fromkeys(form.op for form in sve_mem.FORMS))


# --- random states and instances for the comparison with QEMU ---------------------------------

def _memory_state(rng: random.Random, svl: int) -> ArchState:
    """Streaming mode, random Z, random predicates, X0-X7 and SP in the data region, X8-X11
    small indexes (the conventions of :mod:`zatile.sim.progen`), random data."""
    svl_bytes = svl // 8
    state = ArchState(svl=svl, svcr=1)
    state.z = np.frombuffer(rng.randbytes(32 * svl_bytes), np.uint8).reshape(32, svl_bytes).copy()
    state.p = np.stack([_predicate(rng, svl_bytes) for _ in range(16)])
    x = [rng.getrandbits(64) for _ in range(31)]
    x[0:8] = [DATA_BASE + rng.randrange(8 * svl_bytes, DATA_SIZE // 2) for _ in range(8)]
    x[8:12] = [rng.randrange(64) for _ in range(4)]
    state.x = np.array(x, np.uint64)
    state.sp = DATA_BASE + DATA_SIZE // 2
    state.memory = Memory({DATA_BASE: np.frombuffer(rng.randbytes(DATA_SIZE), np.uint8).copy()})
    return state


def _instance(form, rng: random.Random) -> str:
    """A random instance of ``form`` whose access lands in the data region of
    :func:`_memory_state` (a prefetch takes any base register: it never faults)."""
    while True:
        values = {field.name: rng.getrandbits(field.width) for field in form.fields}
        if form.op != "prefetch":
            values["rn"] = rng.choice((0, 1, 2, 3, 4, 5, 6, 7, 31))
        if "rm" in values:
            values["rm"] = rng.choice((8, 9, 10, 11))
        word = form.value
        for field in form.fields:
            word |= values[field.name] << field.lo
        if decode(word) is not None:
            return disassemble(word).replace("\t", " ", 1)


@pytest.mark.parametrize("svl, seed", [(128, 1), (256, 2), (512, 3), (2048, 4)])
def test_every_form_agrees_with_qemu(qemu, svl, seed):
    """One short program per form (four random instances), each from a fresh random state;
    the final states, memory included, must agree exactly."""
    rng = random.Random(seed)
    config = EngineConfig(max_svl=2048)
    differences = []
    for form in sve_mem.FORMS:
        lines = [_instance(form, rng) for _ in range(4)]
        comparison = compare("\n".join(lines) + "\n", _memory_state(rng, svl),
                             ["model", "qemu"], config)
        if not comparison.agree:
            differences.append((form.name, lines, comparison.difference))
    assert not differences, differences[:5]


@pytest.mark.parametrize("seed", [5, 6])
def test_campaign_of_memory_programs_agrees_with_qemu(qemu, seed):
    """Random 30-instruction programs of the class (and the predicate set-up and contiguous
    stores they meet in practice) at SVL 128 to 2048, drawn by the campaign generator."""
    weights = {op: 0 for op in OP_WEIGHTS if op not in MEMORY_OPS}
    weights.update(ptrue=2, st1_contiguous=1, msr_svcr_imm=1)
    rng = random.Random(seed)
    for index in range(10):
        svl = (128, 256, 512, 1024, 2048)[index % 5]
        program = generate_program(rng, svl, 30, weights=weights)
        comparison = compare(program.text, program.initial, ["model", "qemu"],
                             EngineConfig(max_svl=2048))
        assert comparison.agree, (program.text, comparison.difference)


def test_the_generator_draws_addresses_that_mostly_stay_in_the_region():
    """The class's loads and stores fault rarely in generated programs (only by design: a base
    register near the region's edge with a large offset), and no store, STR Z included, faults
    past the region's end."""
    weights = {op: 0 for op in OP_WEIGHTS if op not in MEMORY_OPS}
    weights.update(msr_svcr_imm=1, str_register=2)
    rng = random.Random(7)
    accesses, faults, store_faults = 0, 0, []
    for index in range(40):
        program = generate_program(rng, (128, 512, 2048)[index % 3], 30, weights=weights)
        model = ReferenceModel(EngineConfig(max_svl=2048), program.initial)
        for word in assemble(program.text):
            result = model.execute(word)
            form = decode(word).form
            if result.status is Status.FAULT and Trait.STORE in form.traits:
                store_faults.append(result.fault_address)
            if form.op in MEMORY_OPS and result.status is not Status.UNDEF:
                accesses += 1
                faults += result.status is Status.FAULT
    assert accesses > 300
    assert faults < accesses // 20, (faults, accesses)
    # docs/divergences.md, "qemu-faulting-store-partial-write": no store reaches the region's end.
    assert all(address < DATA_BASE for address in store_faults), store_faults


def test_the_load_and_store_traits():
    for form in sve_mem.FORMS:
        expected = {"prefetch": set(), "st_structure": {Trait.STORE},
                    "stnt1_contiguous": {Trait.STORE}}.get(form.op, {Trait.LOAD})
        assert set(form.traits) == expected, form.name


# --- directed values ------------------------------------------------------------------------

class Memories(Vectors):
    """:class:`Vectors` with a data region at 0x10000 (X0 points at it) and nothing mapped
    below it or after it."""

    BASE = 0x10000

    def __init__(self, svl: int = 128, size: int = 0x1000):
        super().__init__(svl)
        state = self.model.state
        state.memory = Memory({self.BASE: np.zeros(size, np.uint8)})
        state.x[0] = self.BASE

    def poke(self, offset: int, dtype, values) -> None:
        data = np.array(values, dtype=dtype).view(np.uint8)
        self.model.state.memory.write(self.BASE + offset, data)

    def peek(self, offset: int, dtype, count: int) -> list[int]:
        size = np.dtype(dtype).itemsize
        data = self.model.state.memory.read(self.BASE + offset, count * size)
        return [int(value) for value in data.view(dtype)]

    def execute(self, line: str):
        return self.model.execute(assemble_line(line))


def test_sign_extending_loads():
    m = Memories()
    m.poke(0, np.uint8, [0x80, 0x7F, 0xFF, 0x01] * 4)
    m.poke(0x38, np.uint16, [0x8000, 0x7FFF, 0xFFFE, 0x0001])
    m.poke(0x70, np.uint32, [0x80000000, 0x7FFFFFFF])
    m.predicate(0, "b", [1] * 16)
    m.model.state.x[1] = 0x1C
    m.run("ld1sb {z0.h}, p0/z, [x0]", "ld1sb {z1.d}, p0/z, [x0]",
          "ld1sh {z2.s}, p0/z, [x0, #7, mul vl]",         # 7 × (4 elements × 2 bytes) = 0x38
          "ld1sh {z3.s}, p0/z, [x0, x1, lsl #1]", "ld1sw {z4.d}, p0/z, [x0, x1, lsl #2]")
    assert m.get(0, "h", signed=True) == [-128, 127, -1, 1] * 2
    assert m.get(1, "d", signed=True) == [-128, 127]
    assert m.get(2, "s", signed=True) == m.get(3, "s", signed=True) == [-32768, 32767, -2, 1]
    assert m.get(4, "d", signed=True) == [-2**31, 2**31 - 1]
    m.predicate(1, "s", [1, 0, 1, 0])
    m.run("ld1sh {z3.s}, p1/z, [x0, x1, lsl #1]")
    assert m.get(3, "s", signed=True) == [-32768, 0, -2, 0]      # inactive elements are zero


def test_replicating_load_with_an_inactive_first_element():
    m = Memories()
    m.poke(0x7E, np.uint16, [0x8001])
    m.set(0, "h", [0x1111] * 8)
    m.predicate(0, "h", [0, 1, 1, 0, 1, 0, 0, 1])
    m.run("ld1rh {z0.h}, p0/z, [x0, #126]", "ld1rsh {z1.s}, p0/z, [x0, #126]",
          "ld1rh {z2.d}, p0/z, [x0, #126]")
    assert m.get(0, "h") == [0, 0x8001, 0x8001, 0, 0x8001, 0, 0, 0x8001]
    # .S element e takes predicate bit 4e, the bit of .H element 2e; .D element e that of 4e.
    assert m.get(1, "s") == [0, 0xFFFF8001, 0xFFFF8001, 0]
    assert m.get(2, "d") == [0, 0x8001]


def test_replicating_load_with_no_active_element_reads_no_memory():
    m = Memories()
    m.set(0, "d", [5, 5])
    m.predicate(0, "d", [0, 0])
    m.model.state.x[1] = 0xDEAD0000                          # unmapped
    assert m.execute("ld1rd {z0.d}, p0/z, [x1, #504]").status is Status.OK
    assert m.get(0, "d") == [0, 0]
    m.predicate(0, "d", [0, 1])
    result = m.execute("ld1rd {z0.d}, p0/z, [x1, #8]")
    assert result.status is Status.FAULT and result.fault_address == 0xDEAD0008


def test_structure_loads_deinterleave_and_wrap_from_z31_to_z0():
    m = Memories()
    m.poke(0, np.uint32, range(100, 116))                   # 4 structures of 4 words
    m.predicate(0, "s", [1, 1, 0, 1])
    m.set(2, "s", [7] * 4)
    m.run("ld4w {z30.s, z31.s, z0.s, z1.s}, p0/z, [x0]")
    assert m.get(30, "s") == [100, 104, 0, 112]
    assert m.get(31, "s") == [101, 105, 0, 113]
    assert m.get(0, "s") == [102, 106, 0, 114]
    assert m.get(1, "s") == [103, 107, 0, 115]
    assert m.get(2, "s") == [7] * 4                          # the fifth register is untouched
    m.poke(0x100, np.uint8, range(48))
    m.predicate(1, "b", [1] * 16)
    m.model.state.x[1] = 0x100
    m.run("ld3b {z5.b-z7.b}, p1/z, [x0, x1]")
    assert m.get(5, "b") == list(range(0, 48, 3))
    assert m.get(7, "b") == list(range(2, 48, 3))


def test_structure_stores_interleave_and_the_immediate_counts_whole_structures():
    m = Memories()
    m.set(31, "d", [1, 2])
    m.set(0, "d", [3, 4])
    m.predicate(0, "d", [1, 1])
    m.run("st2d {z31.d, z0.d}, p0, [x0, #2, mul vl]")      # 2 × VL = 32 bytes on
    assert m.peek(0x20, np.uint64, 4) == [1, 3, 2, 4]
    m.predicate(1, "d", [0, 1])
    m.set(31, "d", [9, 8])
    m.run("st2d {z31.d, z0.d}, p1, [x0, #2, mul vl]")
    assert m.peek(0x20, np.uint64, 4) == [1, 3, 8, 4]        # the inactive structure is kept


def test_fault_address_of_a_structure_store_and_nothing_written():
    m = Memories(size=0x1000)
    for register in range(4, 8):
        m.set(register, "s", [register] * 4)
    m.predicate(0, "s", [1, 1, 1, 1])
    # Structure e occupies [0xFD0 + 16e, +16): structure 3 starts at 0x1000, the end of memory.
    m.model.state.x[1] = m.BASE + 0xFD0
    before = m.model.state.memory.copy()
    result = m.execute("st4w {z4.s-z7.s}, p0, [x1]")
    assert result.status is Status.FAULT and result.fault_address == m.BASE + 0x1000
    assert m.model.state.memory == before
    # Structure 2 straddles the end: its first unmapped byte is the fault address.
    m.model.state.x[1] = m.BASE + 0xFD8
    result = m.execute("st4w {z4.s-z7.s}, p0, [x1]")
    assert result.status is Status.FAULT and result.fault_address == m.BASE + 0x1000
    # The structures past the end inactive: no fault.
    m.predicate(1, "s", [1, 1, 0, 0])
    assert m.execute("st4w {z4.s-z7.s}, p1, [x1]").status is Status.OK
    assert m.peek(0xFD8, np.uint32, 8) == [4, 5, 6, 7] * 2


def test_fault_of_a_structure_load_changes_no_register():
    m = Memories(size=0x1000)
    m.poke(0, np.uint16, [0x1234, 0x5678])
    m.predicate(0, "h", [0, 0, 0, 0, 0, 0, 0, 1])
    m.model.state.x[1] = m.BASE - 2 * 7 * 2                  # the last structure at BASE
    assert m.execute("ld2h {z0.h, z1.h}, p0/z, [x1]").status is Status.OK
    assert m.get(0, "h") == [0] * 7 + [0x1234] and m.get(1, "h") == [0] * 7 + [0x5678]
    m.model.state.x[1] -= 2
    result = m.execute("ld2h {z0.h, z1.h}, p0/z, [x1]")     # now it starts 2 bytes below
    assert result.status is Status.FAULT and result.fault_address == m.BASE - 2
    assert m.get(0, "h") == [0] * 7 + [0x1234] and m.get(1, "h") == [0] * 7 + [0x5678]


def test_quadword_replicating_load():
    m = Memories(svl=512)
    m.poke(0x30, np.uint16, range(1, 9))
    m.predicate(0, "h", [1, 0, 1, 1, 0, 0, 0, 1] + [0] * 24)
    m.run("ld1rqh {z0.h}, p0/z, [x0, #48]")
    assert m.get(0, "h") == [1, 0, 3, 4, 0, 0, 0, 8] * 4
    # Predicate bits past the first quadword are ignored.
    m.predicate(1, "h", [0] * 8 + [1] * 24)
    m.run("ld1rqh {z1.h}, p1/z, [x0, #48]")
    assert m.get(1, "h") == [0] * 32
    m.model.state.x[1] = 5
    m.predicate(2, "d", [1] * 8)
    m.run("ld1rqd {z2.d}, p2/z, [x0, x1, lsl #3]")          # bytes 0x28-0x37
    assert m.get(2, "d") == [0, 0x0004000300020001] * 4


def test_non_temporal_loads_and_stores_move_data_like_ld1_and_st1():
    m = Memories(svl=256)
    m.poke(0, np.uint32, range(1, 17))
    m.predicate(0, "s", [1, 0] * 4)
    m.model.state.x[1] = 8
    m.run("ldnt1w {z0.s}, p0/z, [x0, #1, mul vl]", "ld1w {z1.s}, p0/z, [x0, x1, lsl #2]",
          "stnt1w {z0.s}, p0, [x0, #3, mul vl]")
    assert m.get(0, "s") == m.get(1, "s") == [9, 0, 11, 0, 13, 0, 15, 0]
    assert m.peek(0x60, np.uint32, 8) == [9, 0, 11, 0, 13, 0, 15, 0]


def test_prefetches_of_unmapped_addresses_do_not_fault():
    m = Memories()
    m.predicate(0, "b", [1] * 16)
    state_before = m.model.state.copy()
    for word in assemble("prfb pldl1keep, p0, [x5, #-32, mul vl]\n"
                         "prfd #15, p0, [sp, x1, lsl #3]\n"
                         "prfw pstl3strm, p0, [x0, #31, mul vl]"):
        m.model.state.x[5] = 0xFFFF_FFFF_FFFF_FF00
        m.model.state.x[1] = 0x1234_5678_9ABC
        assert m.model.execute(word).status is Status.OK
    assert (m.model.state.z == state_before.z).all()
    assert m.model.state.memory == state_before.memory


# --- syntax ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text, printed", [
    ("ld2b {z31.b, z0.b}, p0/z, [x0]", "ld2b\t{z31.b, z0.b}, p0/z, [x0]"),
    ("ld2d {z0.d-z1.d}, p0/z, [x0, #-16, mul vl]", "ld2d\t{z0.d, z1.d}, p0/z, [x0, #-16, mul vl]"),
    ("ld3h {z30.h, z31.h, z0.h}, p1/z, [sp, x2, lsl #1]",
     "ld3h\t{z30.h, z31.h, z0.h}, p1/z, [sp, x2, lsl #1]"),
    ("st4w { z4.s , z5.s, z6.s, z7.s }, p0, [x1]", "st4w\t{z4.s-z7.s}, p0, [x1]"),
    ("ld1rw {z0.d}, p0/z, [x0, #0]", "ld1rw\t{z0.d}, p0/z, [x0]"),
    ("ld1rqb {z0.b}, p0/z, [x0, #-128]", "ld1rqb\t{z0.b}, p0/z, [x0, #-128]"),
    ("prfh 3, p0, [x0, x1, lsl #1]", "prfh\tpldl2strm, p0, [x0, x1, lsl #1]"),
    ("prfb #6, p0, [x0]", "prfb\t#6, p0, [x0]"),
])
def test_register_lists_offsets_and_prefetch_operations_read_and_print_as_binutils_does(
        text, printed):
    assert disassemble(assemble_line(text)) == printed


@pytest.mark.parametrize("text, message", [
    ("ld4d {z31.d-z2.d}, p0/z, [x0]", "the range must name 4 registers in increasing order"),
    ("ld3d {z0.d, z1.d, z3.d}, p0/z, [x0]", "the registers of the list must be consecutive"),
    ("ld2d {z0.d, z1.s}, p0/z, [x0]", "the registers of the list must be .d, not .s"),
    ("ld2b {z0.b, z1.b}, p0/z, [x0, #1, mul vl]", "the offset must be a multiple of 2"),
    ("ld1rh {z0.h}, p0/z, [x0, #3]", "the offset must be a multiple of 2 between 0 and 126"),
    ("ld1rqw {z0.s}, p0/z, [x0, #128]", "the offset must be a multiple of 16 between -128 and 112"),
    ("ld2b {z0.b, z1.b}, p0/z, [x0, xzr]", "unallocated encoding"),
    ("prfb #16, p0, [x0]", "the prefetch operation must be a name or #0-#15"),
])
def test_what_gnu_as_rejects_is_an_error(text, message):
    with pytest.raises(AsmError, match=message):
        assemble_line(text)


def test_rm_xzr_is_unallocated_for_every_scalar_plus_scalar_form():
    forms = [form for form in sve_mem.FORMS if form.params.get("scalar_offset")]
    assert len(forms) == 46
    for form in forms:
        assert decode(form.encode(rm=31)) is None, form.name
        assert decode(form.encode(rm=30)).form is form


# --- a QEMU divergence ----------------------------------------------------------------------

def test_qemu_writes_part_of_a_structure_store_that_faults_at_the_end_of_a_region(qemu):
    """docs/divergences.md, "qemu-faulting-store-partial-write": the model's faulting ST4W
    writes nothing; QEMU writes the structures (and elements) wholly below the unmapped page."""
    from zatile.sim.divergences import DIVERGENCES_BY_ID
    from zatile.sw.backends import run_program

    state = _memory_state(random.Random(8), 128)
    state.p[0] = 0xFF
    end = DATA_BASE + DATA_SIZE
    state.x[1] = end - 0x38                 # structures at -0x38, -0x28, -0x18, -0x8 (straddles)
    program = "st4w {z4.s-z7.s}, p0, [x1]\n"
    config = EngineConfig(max_svl=2048)
    model = run_program("model", program, state, config)
    qemu_run = run_program("qemu", program, state, config)
    assert [o.status for o in model.outcomes] == ["fault"]
    assert model.outcomes[0].fault_address == end
    assert [o.signal for o in qemu_run.outcomes] == ["SIGSEGV"]
    initial = state.memory.regions[DATA_BASE]
    assert np.array_equal(model.final.memory.regions[DATA_BASE], initial)
    written = qemu_run.final.memory.regions[DATA_BASE][-0x38:]
    words = np.stack([state.z[register].view(np.uint32) for register in range(4, 8)], axis=1)
    assert list(written.view(np.uint32)) == list(words.reshape(-1)[:14])
    assert DIVERGENCES_BY_ID["qemu-faulting-store-partial-write"].affects((10, 0, 2))
    comparison = compare(program, state, ["model", "qemu"], config)
    assert not comparison.agree and "memory" in comparison.difference
