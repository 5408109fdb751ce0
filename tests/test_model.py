"""The architectural reference model (sim.model) and the QEMU divergence list (sim.divergences).

Expected values are computed here independently, with plain-Python loops over elements written
from docs/isa.md (tile row = tile + slice*esize, predicate bit e*esize, ...), never with the
model's own helpers. Floating-point expectations use the exact scalar reference sim.fpref.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from zatile.sim import divergences, fpref
from zatile.sim.model import OP_HANDLERS, ReferenceModel
from zatile.sw.arch.engine import Result, Status
from zatile.sim.state import ArchState, Memory
from zatile.sw.arch.asm import assemble, assemble_line
from zatile.sw.arch.config import FEATURES, EngineConfig
from zatile.sw.arch.isa import (
    FORMS, FORMS_BY_NAME, OPS, decode, sve_fp, sve_int, sve_mem, sve_perm, sve_pred,
)
from zatile.sw.arch.constants import FPSR_RESET_ON_SM_CHANGE, MASK64

DATA = 0x10000            # base of the data region of most tests
DATA_SIZE = 0x4000


# --------------------------------------------------------------------------- helpers
def make_model(svl=128, svcr=3, *, seed=0, features=None, memory=None, supported=None,
               sme_enabled=True, fill=True) -> ReferenceModel:
    """A model with random Z/P/ZA/X contents (when ``fill``) and one random data region."""
    rng = np.random.default_rng(seed)
    svl_b = svl // 8
    kwargs = {}
    if fill:
        kwargs = dict(za=rng.integers(0, 256, (svl_b, svl_b)), z=rng.integers(0, 256, (32, svl_b)),
                      p=rng.integers(0, 256, (16, svl_b // 8)),
                      ffr=rng.integers(0, 256, svl_b // 8),
                      x=rng.integers(0, 2**63, 31, dtype=np.uint64))
    if memory is None:
        memory = Memory({DATA: rng.integers(0, 256, DATA_SIZE, dtype=np.uint8)})
    state = ArchState(svl=svl, svcr=svcr, fpcr=0, fpsr=0x10, sp=DATA + 0x2000, memory=memory,
                      **kwargs)
    config = EngineConfig(max_svl=max(svl, 128) if supported is None else max(supported),
                          supported_svls=supported,
                          features=frozenset(FEATURES if features is None else features))
    return ReferenceModel(config, state, sme_enabled=sme_enabled)


def run(model: ReferenceModel, text: str) -> Result:
    return model.execute(assemble_line(text))


def snapshot(state: ArchState) -> ArchState:
    return state.copy()


def assert_same_state(left: ArchState, right: ArchState) -> None:
    for name in ("svl", "svcr", "fpcr", "fpsr", "sp"):
        assert getattr(left, name) == getattr(right, name), name
    for name in ("za", "z", "p", "ffr", "x"):
        assert np.array_equal(getattr(left, name), getattr(right, name)), name
    assert left.memory == right.memory


def pbit(predicate, bit: int) -> int:
    return (int(predicate[bit // 8]) >> (bit % 8)) & 1


def set_predicate(state: ArchState, number: int, bits) -> None:
    """P<number> from a list of bits (bit b is bit b%8 of byte b//8)."""
    value = [0] * (state.svl_bytes // 8)
    for index, bit in enumerate(bits):
        if bit:
            value[index // 8] |= 1 << (index % 8)
    state.p[number] = value


def element_predicate(state: ArchState, number: int, active, esize: int) -> None:
    """P<number> with element e (of esize bytes) active iff active[e]; other bits random-free."""
    bits = [0] * state.svl_bytes
    for element, flag in enumerate(active):
        bits[element * esize] = 1 if flag else 0
    set_predicate(state, number, bits)


def za_get(za, esize, tile, row, column) -> int:
    line = tile + row * esize
    return int.from_bytes(bytes(za[line, column * esize:(column + 1) * esize]), "little")


def za_set(za, esize, tile, row, column, value) -> None:
    line = tile + row * esize
    za[line, column * esize:(column + 1) * esize] = list(
        (value % (1 << (8 * esize))).to_bytes(esize, "little"))


def z_get(z, register, esize, element) -> int:
    return int.from_bytes(bytes(z[register, element * esize:(element + 1) * esize]), "little")


def z_set(z, register, esize, element, value) -> None:
    z[register, element * esize:(element + 1) * esize] = list(
        (value % (1 << (8 * esize))).to_bytes(esize, "little"))


def mem_get(memory: Memory, address: int, size: int) -> int:
    return int.from_bytes(bytes(memory.read(address, size)), "little")


def signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) else value


def random_activity(rng: random.Random, count: int, style: str) -> list[int]:
    if style == "all":
        return [1] * count
    if style == "none":
        return [0] * count
    if style == "sparse":
        step, start = rng.choice((2, 3, 4)), rng.randrange(count)
        return [1 if e >= start and (e - start) % step == 0 else 0 for e in range(count)]
    if style == "last_inactive":
        return [1] * (count - 1) + [0] if count > 1 else [0]
    return [rng.getrandbits(1) for _ in range(count)]


STYLES = ("all", "none", "sparse", "random", "last_inactive")
SIZES = {"B": 1, "H": 2, "W": 4, "D": 8, "Q": 16}


# --------------------------------------------------------------------------- structure
def test_every_op_of_the_table_has_a_handler():
    assert set(OP_HANDLERS) == set(OPS)
    model = make_model()
    for op, method in OP_HANDLERS.items():
        assert callable(getattr(model, method)), op


def test_constructor_defaults_and_validation():
    config = EngineConfig(max_svl=512)
    model = ReferenceModel(config)
    assert model.state.svl == 512 and model.state.svcr == 0 and model.sme_enabled
    assert not model.state.za.any()
    with pytest.raises(ValueError, match="256"):
        ReferenceModel(EngineConfig(max_svl=512, supported_svls=(128, 512)), ArchState(svl=256))
    with pytest.raises(ValueError, match="1024"):
        ReferenceModel(EngineConfig(max_svl=512), ArchState(svl=1024))


def test_unallocated_word_is_undef_without_form():
    model = make_model()
    before = snapshot(model.state)
    result = model.execute(0)
    assert result == Result(Status.UNDEF)
    assert_same_state(model.state, before)


# --------------------------------------------------------------------------- ZA mapping
def test_worked_mapping_examples():
    # ZA1H.S[2] = ZA[9] (SVL 128), ZA1H.H[7] = ZA[15], ZA4H.D[2] = ZA[20] (needs SVL >= 256).
    for svl, text, ws, row in ((128, "mova za1h.s[w12, 2], p0/m, z3.s", 0, 9),
                               (128, "mova za1h.h[w12, 7], p0/m, z3.h", 0, 15),
                               (256, "mova za4h.d[w12, 1], p0/m, z3.d", 1, 20)):
        model = make_model(svl)
        state = model.state
        state.x[12] = ws
        state.p[0] = 0xFF
        before = snapshot(state)
        assert run(model, text).status is Status.OK
        expected = before.za.copy()
        expected[row] = state.z[3]
        assert np.array_equal(state.za, expected), text


def test_smopa_worked_example():
    model = make_model(128)
    state = model.state
    assert run(model, "zero {za}").status is Status.OK
    assert run(model, "ptrue p0.b").status is Status.OK
    state.z[0] = np.arange(16)
    state.z[1] = np.arange(16) + 16
    assert run(model, "smopa za0.s, p0/m, p0/m, z0.b, z1.b").status is Status.OK
    rows = [[za_get(state.za, 4, 0, r, c) for c in range(4)] for r in range(4)]
    assert rows == [[110, 134, 158, 182], [390, 478, 566, 654], [670, 822, 974, 1126],
                    [950, 1166, 1382, 1598]]


@pytest.mark.parametrize("ws, off", [(70000, 1), (0xFFFFFFFF, 3), (0xDEADBEEF_FFFFFFFF, 2),
                                     (0xFFFFFFFF_00000005, 0), (2**32 - 2, 3)])
def test_slice_index_wraps_with_huge_selectors(ws, off):
    for esize, letter in ((1, "b"), (2, "h"), (4, "s"), (8, "d")):
        model = make_model(256)
        state = model.state
        state.x[13] = ws
        state.p[1] = 0xFF
        tile = 1 if esize > 1 else 0
        off_text = off if esize < 8 else off % 2
        before = snapshot(state)
        result = run(model, f"mova za{tile}v.{letter}[w13, {off_text}], p1/m, z7.{letter}")
        assert result.status is Status.OK
        dim = 32 // esize
        column = ((ws & 0xFFFFFFFF) + off_text) % dim
        expected = before.za.copy()
        for r in range(dim):
            za_set(expected, esize, tile, r, column, z_get(before.z, 7, esize, r))
        assert np.array_equal(state.za, expected), (letter, ws)


def test_overlapping_tiles():
    model = make_model(256)
    state = model.state
    state.p[0] = 0xFF
    state.x[12] = 0
    # ZA0.S = ZA0.D ∪ ZA4.D: slice i of ZA0.S is row 4i; ZA0.D rows are 8j, ZA4.D rows 8j+4.
    run(model, "zero {za}")
    for i in range(8):
        state.x[12] = i
        state.z[5] = i + 1
        assert run(model, "mova za0h.s[w12, 0], p0/m, z5.s").status is Status.OK
    for j in range(4):
        assert np.all(state.za[8 * j] == 2 * j + 1)          # ZA0H.D[j] = ZA0H.S[2j]
        assert np.all(state.za[8 * j + 4] == 2 * j + 2)      # ZA4H.D[j] = ZA0H.S[2j+1]
    # Zeroing ZA0.D and ZA4.D is exactly zeroing ZA0.S; ZA1.S is untouched.
    state.za[:] = 7
    run(model, "zero {za0.d, za4.d}")
    for row in range(32):
        assert np.all(state.za[row] == (0 if row % 4 == 0 else 7)), row
    # ZAk.D = ZAk.Q ∪ ZA(k+8).Q: ZA9.Q slice 0 is row 9 = ZA1.D row 1.
    state.x[12] = 0
    state.z[2] = np.arange(32)
    run(model, "mova za9h.q[w12, 0], p0/m, z2.q")
    state.x[12] = 1
    state.z[3] = 0
    run(model, "mova z3.d, p0/m, za1h.d[w12, 0]")
    assert np.array_equal(state.z[3], np.arange(32))


@pytest.mark.parametrize("mask", [0x00, 0x01, 0x80, 0x11, 0x22, 0x44, 0x88, 0x33, 0x55, 0xAA,
                                  0xFF, 0xCA, 0xB7, 0x7E])
@pytest.mark.parametrize("svl", [128, 512])
def test_zero_every_mask_class(mask, svl):
    model = make_model(svl, svcr=2)          # ZERO needs ZA only
    before = snapshot(model.state)
    result = model.execute(0xC0080000 | mask)
    assert result.status is Status.OK and result.form == "ZERO"
    for row in range(svl // 8):
        if (mask >> (row % 8)) & 1:
            assert not model.state.za[row].any(), row
        else:
            assert np.array_equal(model.state.za[row], before.za[row]), row


# --------------------------------------------------------------------------- tile LD1/ST1
def ld1_case(rng: random.Random, svl: int, letter: str, vertical: bool, store: bool, style: str):
    esize = SIZES[letter]
    name = f"{'ST' if store else 'LD'}1{letter}_ZA_{'V' if vertical else 'H'}"
    form = FORMS_BY_NAME[name]
    fields = {"rs": rng.randrange(4), "pg": rng.randrange(8), "rn": rng.choice((3, 31)),
              "rm": rng.choice((4, 31))}
    if "tile" in form.field_map:
        fields["tile"] = rng.randrange(esize)
    if "off" in form.field_map:
        fields["off"] = rng.randrange(16 // esize)
    model = make_model(svl, seed=rng.randrange(1000))
    state = model.state
    dim = svl // 8 // esize
    state.x[12 + fields["rs"]] = rng.choice((rng.randrange(100), rng.getrandbits(64)))
    state.x[3] = DATA + rng.randrange(256)
    state.sp = DATA + rng.randrange(256)
    state.x[4] = rng.randrange(64)
    activity = random_activity(rng, dim, style)
    element_predicate(state, fields["pg"], activity, esize)
    return model, form.encode(**fields), fields, activity, esize, dim


@pytest.mark.parametrize("letter", list(SIZES))
@pytest.mark.parametrize("vertical", [False, True])
@pytest.mark.parametrize("svl", [128, 256, 2048])
def test_tile_ld1(letter, vertical, svl):
    rng = random.Random(f"ld1{letter}{vertical}{svl}")
    for style in STYLES:
        model, word, fields, activity, esize, dim = ld1_case(rng, svl, letter, vertical, False,
                                                             style)
        state = model.state
        before = snapshot(state)
        result = model.execute(word)
        assert result.status is Status.OK, result
        base = int(before.sp if fields["rn"] == 31 else before.x[fields["rn"]])
        index = 0 if fields["rm"] == 31 else int(before.x[fields["rm"]])
        slice_ = ((int(before.x[12 + fields["rs"]]) & 0xFFFFFFFF) + fields.get("off", 0)) % dim
        expected = before.za.copy()
        for e in range(dim):
            value = mem_get(before.memory, base + (index + e) * esize, esize) if activity[e] else 0
            row, column = (e, slice_) if vertical else (slice_, e)
            za_set(expected, esize, fields.get("tile", 0), row, column, value)
        assert np.array_equal(state.za, expected), style
        state.za[...] = before.za
        assert_same_state(state, before)


@pytest.mark.parametrize("letter", list(SIZES))
@pytest.mark.parametrize("vertical", [False, True])
@pytest.mark.parametrize("svl", [128, 512])
def test_tile_st1(letter, vertical, svl):
    rng = random.Random(f"st1{letter}{vertical}{svl}")
    for style in STYLES:
        model, word, fields, activity, esize, dim = ld1_case(rng, svl, letter, vertical, True,
                                                             style)
        state = model.state
        before = snapshot(state)
        assert model.execute(word).status is Status.OK
        base = int(before.sp if fields["rn"] == 31 else before.x[fields["rn"]])
        index = 0 if fields["rm"] == 31 else int(before.x[fields["rm"]])
        slice_ = ((int(before.x[12 + fields["rs"]]) & 0xFFFFFFFF) + fields.get("off", 0)) % dim
        expected = before.memory.copy()
        for e in range(dim):
            if activity[e]:
                row, column = (e, slice_) if vertical else (slice_, e)
                value = za_get(before.za, esize, fields.get("tile", 0), row, column)
                expected.write(base + (index + e) * esize, value.to_bytes(esize, "little"))
        assert state.memory == expected, style
        state.memory = before.memory
        assert_same_state(state, before)


def test_ld1_inactive_elements_at_unmapped_addresses_do_not_fault():
    # Only elements 0 and 3 of a .S slice are mapped (two 4-byte regions); 1 and 2 are inactive.
    memory = Memory({0x1000: bytes([1, 2, 3, 4]), 0x100C: bytes([5, 6, 7, 8])})
    model = make_model(128, memory=memory)
    state = model.state
    state.x[0], state.x[12] = 0x1000, 0
    element_predicate(state, 2, [1, 0, 0, 1], 4)
    assert run(model, "ld1w {za0h.s[w12, 0]}, p2/z, [x0]").status is Status.OK
    assert list(state.za[0]) == [1, 2, 3, 4] + [0] * 8 + [5, 6, 7, 8]
    state.za[0, 4:12] = 0xEE
    before = snapshot(state)
    assert run(model, "st1w {za0h.s[w12, 0]}, p2, [x0]").status is Status.OK
    assert_same_state(state, before)                  # same bytes written back, gap untouched
    # All-false predicate: no access at all, the slice becomes zero.
    state.p[3] = 0
    state.x[1] = 0xDEAD_0000
    assert run(model, "ld1w {za0v.s[w12, 1]}, p3/z, [x1]").status is Status.OK
    assert all(za_get(state.za, 4, 0, r, 1) == 0 for r in range(4))
    assert run(model, "st1w {za0v.s[w12, 1]}, p3, [x1]").status is Status.OK


def test_ld1_fault_leaves_state_unchanged():
    model = make_model(256)
    state = model.state
    state.x[0] = DATA + DATA_SIZE - 16           # a .D slice of 4 elements: the 3rd faults
    state.x[12] = 1
    state.p[4] = 0xFF
    before = snapshot(state)
    result = run(model, "ld1d {za3h.d[w12, 0]}, p4/z, [x0]")
    assert result.status is Status.FAULT and result.fault_address == DATA + DATA_SIZE
    assert result.form == "LD1D_ZA_H"
    assert_same_state(state, before)
    # The same load is fine once the faulting elements are inactive.
    element_predicate(state, 4, [1, 1, 0, 0], 8)
    assert run(model, "ld1d {za3h.d[w12, 0]}, p4/z, [x0]").status is Status.OK


def test_store_whose_later_element_faults_writes_nothing():
    model = make_model(512)
    state = model.state
    state.x[0] = DATA + DATA_SIZE - 40           # 16 .S elements; elements 10.. are unmapped
    state.x[12] = 0
    state.p[1] = 0xFF
    before = snapshot(state)
    result = run(model, "st1w {za2v.s[w12, 3]}, p1, [x0]")
    assert result.status is Status.FAULT and result.fault_address == DATA + DATA_SIZE
    assert_same_state(state, before)
    # Sparse predicate whose faulting element is active and comes after active mapped ones.
    element_predicate(state, 1, [1, 0, 1] + [0] * 9 + [1, 0, 0, 0], 4)
    before = snapshot(state)
    result = run(model, "st1w {za2v.s[w12, 3]}, p1, [x0]")
    assert result.status is Status.FAULT and result.fault_address == DATA + DATA_SIZE + 8
    assert_same_state(state, before)


def test_fault_reports_first_faulting_byte_of_a_straddling_element():
    memory = Memory({0x2000: np.zeros(12, np.uint8)})
    model = make_model(128, memory=memory)
    state = model.state
    state.x[0], state.x[12] = 0x2000, 0
    state.p[0] = 0xFF
    result = run(model, "ld1d {za0h.d[w12, 0]}, p0/z, [x0, xzr, lsl #3]")
    assert result == Result(Status.FAULT, fault_address=0x200C, form="LD1D_ZA_H")


# --------------------------------------------------------------------------- LDR/STR ZA
@pytest.mark.parametrize("svl", [128, 1024])
def test_ldr_str_za(svl):
    svl_b = svl // 8
    model = make_model(svl, svcr=2)                 # legal with SM=0
    state = model.state
    for wv, off in ((0, 0), (5, 15), (0xFFFFFFFF, 3), (0x1_0000_0007, 9)):
        state.x[14] = wv
        state.x[10] = DATA + 64
        before = snapshot(state)
        word = assemble_line(f"ldr za[w14, {off}], [x10, #{off}, mul vl]")
        assert model.execute(word).status is Status.OK
        vector = ((wv & 0xFFFFFFFF) + off) % svl_b
        expected = before.za.copy()
        expected[vector] = before.memory.read(DATA + 64 + off * svl_b, svl_b)
        assert np.array_equal(state.za, expected)
        state.za[vector] = np.arange(svl_b) % 251
        word = assemble_line(f"str za[w14, {off}], [x10, #{off}, mul vl]")
        assert model.execute(word).status is Status.OK
        assert np.array_equal(state.memory.read(DATA + 64 + off * svl_b, svl_b),
                              np.arange(svl_b) % 251)
    # SP base, and a fault that changes nothing.
    state.sp = DATA + DATA_SIZE - svl_b // 2
    before = snapshot(state)
    result = run(model, "str za[w12, 0], [sp]")
    assert result.status is Status.FAULT and result.fault_address == DATA + DATA_SIZE
    assert_same_state(state, before)


def test_address_arithmetic_wraps_modulo_2_64():
    memory = Memory({(1 << 64) - 8: bytes(range(8)), 0: bytes(range(8, 16))})
    model = make_model(128, svcr=2, memory=memory)
    state = model.state
    state.x[0], state.x[12] = (1 << 64) - 8, 0
    assert run(model, "ldr za[w12, 0], [x0]").status is Status.OK
    assert list(state.za[0]) == list(range(16))
    state.x[0] = (1 << 64) - 8 - 16                  # + 1 * SVL_B
    assert run(model, "str za[w12, 1], [x0, #1, mul vl]").status is Status.OK
    assert list(state.memory.read(0, 8)) == list(state.za[1, 8:])


# --------------------------------------------------------------------------- MOVA
@pytest.mark.parametrize("letter", "bhsdq")
@pytest.mark.parametrize("vertical", [False, True])
def test_mova_both_directions_merge(letter, vertical):
    rng = random.Random(f"mova{letter}{vertical}")
    esize = {"b": 1, "h": 2, "s": 4, "d": 8, "q": 16}[letter]
    hv = "v" if vertical else "h"
    for svl in (128, 512):
        for style in STYLES:
            model = make_model(svl, seed=rng.randrange(1000))
            state = model.state
            dim = svl // 8 // esize
            tile = rng.randrange(esize)
            off = rng.randrange(16 // esize) if esize < 16 else 0
            state.x[15] = rng.getrandbits(64)
            activity = random_activity(rng, dim, style)
            element_predicate(state, 6, activity, esize)
            slice_ = ((int(state.x[15]) & 0xFFFFFFFF) + off) % dim
            before = snapshot(state)
            assert run(model, f"mova za{tile}{hv}.{letter}[w15, {off}], p6/m, z9.{letter}") \
                .status is Status.OK
            expected = before.za.copy()
            for e in range(dim):
                if activity[e]:
                    row, column = (e, slice_) if vertical else (slice_, e)
                    za_set(expected, esize, tile, row, column, z_get(before.z, 9, esize, e))
            assert np.array_equal(state.za, expected)
            before = snapshot(state)
            assert run(model, f"mova z20.{letter}, p6/m, za{tile}{hv}.{letter}[w15, {off}]") \
                .status is Status.OK
            expected_z = before.z.copy()
            for e in range(dim):
                if activity[e]:
                    row, column = (e, slice_) if vertical else (slice_, e)
                    z_set(expected_z, 20, esize, e, za_get(before.za, esize, tile, row, column))
            assert np.array_equal(state.z, expected_z)
            assert np.array_equal(state.za, before.za)


# --------------------------------------------------------------------------- integer MOPA
def int_mopa_reference(before, esize, tile, zn, zm, pn, pm, zn_unsigned, zm_unsigned, subtract):
    za = before.za.copy()
    dim = before.svl_bytes // esize
    q = esize // 4
    for row in range(dim):
        for column in range(dim):
            total = za_get(za, esize, tile, row, column)
            for k in range(4):
                if pbit(before.p[pn], (4 * row + k) * q) \
                        and pbit(before.p[pm], (4 * column + k) * q):
                    a = z_get(before.z, zn, q, 4 * row + k)
                    b = z_get(before.z, zm, q, 4 * column + k)
                    a = a if zn_unsigned else signed(a, 8 * q)
                    b = b if zm_unsigned else signed(b, 8 * q)
                    total += -a * b if subtract else a * b
            za_set(za, esize, tile, row, column, total)
    return za


@pytest.mark.parametrize("name", [f.name for f in FORMS if f.op == "int_mopa"])
def test_integer_outer_products(name):
    form = FORMS_BY_NAME[name]
    esize = form.params["esize"]
    rng = random.Random(name)
    for svl, style in ((128, "all"), (128, "random"), (256, "sparse"), (128, "none")):
        model = make_model(svl, seed=rng.randrange(1000))
        state = model.state
        if rng.random() < 0.5:                          # extreme values: wrap-around
            state.z[1] = rng.choice((0x80, 0x7F, 0xFF))
            state.z[2] = rng.choice((0x80, 0x7F, 0xFF))
            state.za[:] = 0xFF
        bits = random_activity(rng, svl // 8, style)
        set_predicate(state, 3, bits)
        set_predicate(state, 5, random_activity(rng, svl // 8, style))
        fields = dict(zada=rng.randrange(esize), pn=3, pm=5, zn=1, zm=2)
        before = snapshot(state)
        assert model.execute(form.encode(**fields)).status is Status.OK
        expected = int_mopa_reference(before, esize, fields["zada"], 1, 2, 3, 5,
                                      form.params["zn_unsigned"], form.params["zm_unsigned"],
                                      form.params["subtract"])
        assert np.array_equal(state.za, expected), (name, svl, style)
        assert state.fpsr == before.fpsr


@pytest.mark.parametrize("name", ["ADDHA_S", "ADDVA_S", "ADDHA_D", "ADDVA_D"])
def test_addha_addva(name):
    form = FORMS_BY_NAME[name]
    esize, vertical = form.params["esize"], form.params["vertical"]
    rng = random.Random(name)
    for svl, style in ((128, "all"), (256, "random"), (512, "sparse")):
        model = make_model(svl, seed=rng.randrange(1000))
        state = model.state
        dim = svl // 8 // esize
        element_predicate(state, 1, random_activity(rng, dim, style), esize)
        element_predicate(state, 2, random_activity(rng, dim, "random"), esize)
        tile = rng.randrange(esize)
        before = snapshot(state)
        assert model.execute(form.encode(zada=tile, pn=1, pm=2, zn=30)).status is Status.OK
        expected = before.za.copy()
        for row in range(dim):
            for column in range(dim):
                if pbit(before.p[1], row * esize) and pbit(before.p[2], column * esize):
                    addend = z_get(before.z, 30, esize, row if vertical else column)
                    za_set(expected, esize, tile, row, column,
                           za_get(expected, esize, tile, row, column) + addend)
        assert np.array_equal(state.za, expected), (svl, style)


# --------------------------------------------------------------------------- FP MOPA
FP32_VALUES = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7FA00000,
               0x00000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x3F800000, 0xBF800000,
               0x3F800001, 0x33800000, 0x4B800000]
FP16_VALUES = [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7D00, 0x0001, 0x03FF, 0x0400, 0x7BFF,
               0x3C00, 0xBC00, 0x3C01, 0x4000, 0x3800]
FP64_VALUES = [0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
               0x7FF4000000000000, 1, 0x000FFFFFFFFFFFFF, 0x0010000000000000,
               0x7FEFFFFFFFFFFFFF, 0x3FF0000000000000, 0xBFF0000000000000,
               0x3FF0000000000001, 0x3CA0000000000000]


def fill_fp(rng, state, register, esize, specials, one):
    for e in range(state.svl_bytes // esize):
        roll = rng.random()
        if roll < 0.3:
            value = rng.choice(specials)
        elif roll < 0.7:
            value = one + rng.randrange(-1000, 1000)
            value ^= rng.getrandbits(1) << (8 * esize - 1)
        else:
            value = rng.getrandbits(8 * esize)
        z_set(state.z, register, esize, e, value)


@pytest.mark.parametrize("name", ["FMOPA_S", "FMOPS_S", "FMOPA_D", "FMOPS_D"])
def test_fmopa_non_widening(name):
    form = FORMS_BY_NAME[name]
    esize = form.params["esize"]
    subtract = form.params["subtract"]
    scalar = fpref.fmla_f32 if esize == 4 else fpref.fmla_f64
    specials, one = (FP32_VALUES, 0x3F800000) if esize == 4 else (FP64_VALUES, 0x3FF0000000000000)
    rng = random.Random(name)
    for svl, style, fpcr in ((128, "all", 0), (256, "random", 0x00C00000), (128, "sparse", 1 << 24),
                             (128, "random", 0x00400000 | 1 << 24), (128, "none", 0)):
        model = make_model(svl, seed=rng.randrange(1000))
        state = model.state
        state.fpcr = fpcr
        dim = svl // 8 // esize
        fill_fp(rng, state, 4, esize, specials, one)
        fill_fp(rng, state, 6, esize, specials, one)
        element_predicate(state, 0, random_activity(rng, dim, style), esize)
        element_predicate(state, 7, random_activity(rng, dim, "random"), esize)
        tile = rng.randrange(esize)
        before = snapshot(state)
        assert model.execute(form.encode(zada=tile, pn=0, pm=7, zn=4, zm=6)).status is Status.OK
        expected = before.za.copy()
        sign = 1 << (8 * esize - 1)
        for row in range(dim):
            for column in range(dim):
                if pbit(before.p[0], row * esize) and pbit(before.p[7], column * esize):
                    a = z_get(before.z, 4, esize, row) ^ (sign if subtract else 0)
                    b = z_get(before.z, 6, esize, column)
                    acc = za_get(before.za, esize, tile, row, column)
                    za_set(expected, esize, tile, row, column, scalar(acc, a, b, fpcr))
        assert np.array_equal(state.za, expected), (svl, style, hex(fpcr))
        assert state.fpsr == before.fpsr                 # outer products never touch FPSR


@pytest.mark.parametrize("name", ["FMOPA_H_S", "FMOPS_H_S", "BFMOPA", "BFMOPS"])
def test_widening_fp_outer_products(name):
    form = FORMS_BY_NAME[name]
    subtract = form.params["subtract"]
    bfloat = form.op == "bfmopa"
    rng = random.Random(name)
    specials = FP16_VALUES if not bfloat else [v >> 16 for v in FP32_VALUES]
    one = 0x3C00 if not bfloat else 0x3F80
    for svl, style, fpcr in ((128, "all", 0), (128, "random", 0x00800000 | 1 << 19),
                             (256, "sparse", 1 << 24), (128, "last_inactive", 0x00C00000)):
        model = make_model(svl, seed=rng.randrange(1000))
        state = model.state
        state.fpcr = fpcr
        dim = svl // 32
        fill_fp(rng, state, 10, 2, specials, one)
        fill_fp(rng, state, 21, 2, specials, one)
        for e in range(dim):                            # accumulators: ordinary fp32 values
            za_set(state.za, 4, 1, e, 0, 0)
        element_predicate(state, 5, random_activity(rng, 2 * dim, style), 2)
        element_predicate(state, 2, random_activity(rng, 2 * dim, "random"), 2)
        before = snapshot(state)
        assert model.execute(form.encode(zada=1, pn=5, pm=2, zn=10, zm=21)).status is Status.OK
        expected = before.za.copy()
        for row in range(dim):
            for column in range(dim):
                pr = [pbit(before.p[5], (2 * row + k) * 2) for k in range(2)]
                pc = [pbit(before.p[2], (2 * column + k) * 2) for k in range(2)]
                if not ((pr[0] and pc[0]) or (pr[1] and pc[1])):
                    continue
                er = [z_get(before.z, 10, 2, 2 * row + k) if pr[k] else 0 for k in range(2)]
                ec = [z_get(before.z, 21, 2, 2 * column + k) if pc[k] else 0 for k in range(2)]
                if subtract:
                    er = [v ^ 0x8000 if pr[k] else v for k, v in enumerate(er)]
                acc = za_get(before.za, 4, 1, row, column)
                value = fpref.bfdotadd(acc, er[0], er[1], ec[0], ec[1]) if bfloat else \
                    fpref.fdotadd_f16(acc, er[0], er[1], ec[0], ec[1], fpcr)
                za_set(expected, 4, 1, row, column, value)
        assert np.array_equal(state.za, expected), (svl, style, hex(fpcr))
        assert state.fpsr == before.fpsr


def test_widening_inactive_half_counts_as_plus_zero():
    # -0 accumulator + (active: 1.0 * +0) + (inactive pair) = +0; infinity paired with an
    # inactive (zero) partner in an active pair gives the default NaN.
    model = make_model(128)
    state = model.state
    state.za[:] = 0
    for row in range(4):
        za_set(state.za, 4, 0, row, 0, 0x80000000)
    z_set(state.z, 1, 2, 0, 0x3C00)     # Zn.h[0] = 1.0 (row 0, k=0)
    z_set(state.z, 1, 2, 1, 0x7C00)     # Zn.h[1] = +inf (row 0, k=1)
    z_set(state.z, 2, 2, 0, 0x0000)     # Zm.h[0] = +0 (column 0, k=0)
    z_set(state.z, 2, 2, 1, 0x3C00)     # Zm.h[1] = 1.0 (column 0, k=1), inactive below
    set_predicate(state, 0, [1, 0, 1, 0] + [0] * 12)     # Zn.h[0], Zn.h[1] active (row 0)
    set_predicate(state, 1, [1] + [0] * 15)              # only Zm.h[0] active (column 0)
    assert run(model, "fmopa za0.s, p0/m, p1/m, z1.h, z2.h").status is Status.OK
    assert za_get(state.za, 4, 0, 0, 0) == 0x7FC00000    # inf * (+0 for inactive) is invalid
    za_set(state.za, 4, 0, 0, 0, 0x80000000)
    z_set(state.z, 1, 2, 1, 0x3C00)
    assert run(model, "fmopa za0.s, p0/m, p1/m, z1.h, z2.h").status is Status.OK
    assert za_get(state.za, 4, 0, 0, 0) == 0x00000000    # -0 + (+0) = +0
    assert za_get(state.za, 4, 0, 1, 0) == 0x80000000    # row 1 inactive: unchanged


# --------------------------------------------------------------------------- SVCR
def test_svcr_transitions():
    model = make_model(256, svcr=0)
    state = model.state
    state.fpsr = 0x10
    za_before = state.za.copy()
    assert run(model, "smstart").status is Status.OK
    assert state.svcr == 3 and state.fpsr == FPSR_RESET_ON_SM_CHANGE
    assert not state.z.any() and not state.p.any() and not state.ffr.any() and not state.za.any()
    assert za_before.any()
    # SMSTART again changes nothing (SetPSTATE_* act only on a change).
    state.z[3], state.za[5], state.fpsr = 7, 9, 0x2
    before = snapshot(state)
    assert run(model, "smstart").status is Status.OK
    assert_same_state(state, before)
    # SMSTOP SM keeps ZA, zeroes Z/P/FFR, resets FPSR.
    assert run(model, "smstop sm").status is Status.OK
    assert state.svcr == 2 and not state.z.any() and state.za[5].all()
    assert state.fpsr == FPSR_RESET_ON_SM_CHANGE
    # SMSTOP ZA then SMSTART ZA: zeroed ZA; Z/P/FPSR untouched by ZA changes.
    state.z[1], state.fpsr = 3, 0x4
    assert run(model, "smstop za").status is Status.OK and state.svcr == 0
    assert run(model, "smstart za").status is Status.OK and state.svcr == 2
    assert not state.za.any() and state.z[1].all() and state.fpsr == 0x4
    # MSR SVCR, Xt: SM then ZA from bits 0 and 1; upper bits ignored.
    state.x[1] = 0xFFFF_FFFF_FFFF_FFF1
    assert run(model, "msr svcr, x1").status is Status.OK and state.svcr == 1
    assert state.fpsr == FPSR_RESET_ON_SM_CHANGE
    state.x[1] = 3
    state.za[:] = 1
    assert run(model, "msr svcr, x1").status is Status.OK and state.svcr == 3
    assert not state.za.any()
    assert run(model, "msr svcrsm, #0").status is Status.OK and state.svcr == 2
    assert run(model, "msr svcr, xzr").status is Status.OK and state.svcr == 0
    # MRS SVCR
    state.svcr = 3
    result = run(model, "mrs x5, svcr")
    assert result.scalar == 3 and int(state.x[5]) == 3 and result.form == "MRS_SVCR"
    before = snapshot(state)
    assert run(model, "mrs xzr, svcr").scalar == 3
    assert_same_state(state, before)


# --------------------------------------------------------------------------- trap table
SVE_OPS = {"ptrue", "pfalse", "while", "dup_scalar", "dup_imm", "cnt", "ldr_register",
           "str_register", "ld1_contiguous", "st1_contiguous"} \
    | {form.op for module in (sve_int, sve_pred, sve_fp, sve_perm, sve_mem) for form in module.FORMS
       if form.op != "addsvl"}
#: Streaming-SVE forms of an SME operation (RDVL is RDSVL, ADDVL/ADDPL are ADDSVL/ADDSPL).
SVE_FORMS_OF_SME_OPS = {"RDVL", "ADDVL", "ADDPL"}
ZA_ONLY_OPS = {"zero_za", "ldr_za", "str_za"}
SM_ZA_OPS = {"ld1_tile", "st1_tile", "mova_to_tile", "mova_to_vector", "fmopa_fp32",
             "fmopa_fp64", "fmopa_fp16_widening", "bfmopa", "int_mopa", "add_vector_to_tile"}
ANY_STATE_OPS = {"msr_svcr_imm", "mrs_svcr", "msr_svcr", "rdsvl", "addsvl"}


def expected_outcome(form, svcr):
    """docs/isa.md, "Trap order", written out per operation (RDVL is SVE, RDSVL is SME)."""
    sm, za = svcr & 1, svcr & 2
    if form.op in SVE_OPS or form.name in SVE_FORMS_OF_SME_OPS:
        return (Status.OK, None) if sm else (Status.UNDEF, None)
    if form.op in ANY_STATE_OPS:
        return Status.OK, None
    if form.op in ZA_ONLY_OPS:
        return (Status.OK, None) if za else (Status.SME_TRAP, 3)
    assert form.op in SM_ZA_OPS, form.op
    if not sm:
        return Status.SME_TRAP, 2
    return (Status.OK, None) if za else (Status.SME_TRAP, 3)


@pytest.mark.parametrize("svcr", [0, 1, 2, 3])
def test_trap_table_for_every_form(svcr):
    assert ANY_STATE_OPS | ZA_ONLY_OPS | SM_ZA_OPS | SVE_OPS == set(OPS)
    memory = Memory({0: np.zeros(0x10000, np.uint8)})
    for form in FORMS:
        model = make_model(128, svcr=svcr, memory=memory.copy(), fill=False)
        model.state.sp = 0x8000
        before = snapshot(model.state)
        result = model.execute(form.value)
        status, smtc = expected_outcome(form, svcr)
        assert (result.status, result.smtc) == (status, smtc), (form.name, svcr)
        if status is not Status.OK:
            assert result.form == (form.name if status is Status.SME_TRAP else None)
            assert_same_state(model.state, before)
        else:
            assert result.form == form.name


def test_sme_disabled_traps_everything_with_smtc_0():
    for svcr in range(4):
        model = make_model(128, svcr=svcr, sme_enabled=False)
        before = snapshot(model.state)
        for form in FORMS:
            result = model.execute(form.value)
            assert result == Result(Status.SME_TRAP, smtc=0, form=form.name), form.name
        assert_same_state(model.state, before)
    model.sme_enabled = True
    assert run(model, "rdsvl x0, #1").status is Status.OK


def test_feature_gating():
    model = make_model(256, features=set(FEATURES) - {"F64F64", "I16I64"})
    before = snapshot(model.state)
    for text in ("fmopa za0.d, p0/m, p0/m, z0.d, z0.d", "smopa za0.d, p0/m, p0/m, z0.h, z0.h",
                 "addha za7.d, p7/m, p7/m, z31.d", "usmops za7.d, p7/m, p7/m, z31.h, z31.h"):
        assert run(model, text) == Result(Status.UNDEF), text
    model.sme_enabled = False                          # UNDEF comes before the SME trap
    assert run(model, "fmopa za0.d, p0/m, p0/m, z0.d, z0.d") == Result(Status.UNDEF)
    model.sme_enabled = True
    assert_same_state(model.state, before)
    assert run(model, "fmopa za0.s, p0/m, p0/m, z0.s, z0.s").status is Status.OK
    assert run(model, "smopa za0.s, p0/m, p0/m, z0.b, z0.b").status is Status.OK


def test_run_continues_after_traps_and_faults():
    model = make_model(128, svcr=0)
    model.state.x[0] = 0
    results = model.run(assemble("""
        ptrue p0.s
        zero {za}
        mova z0.s, p0/m, za0h.s[w12, 0]
        smstart za
        ldr za[w12, 0], [x0]
        smstart sm
        ptrue p0.s
        rdsvl x3, #2
    """))
    assert [r.status for r in results] == [Status.UNDEF, Status.SME_TRAP, Status.SME_TRAP,
                                           Status.OK, Status.FAULT, Status.OK, Status.OK,
                                           Status.OK]
    assert [r.smtc for r in results[1:3]] == [3, 2]
    assert results[-1].scalar == 32 and int(model.state.x[3]) == 32


# --------------------------------------------------------------------------- scalar SME
@pytest.mark.parametrize("svcr", [0, 1, 2, 3])
def test_rdsvl_addsvl_addspl(svcr):
    model = make_model(512, svcr=svcr)
    state = model.state
    state.x[8] = 1000
    state.sp = 0x8000
    assert run(model, "rdsvl x21, #-32").scalar == (-32 * 64) & MASK64
    assert int(state.x[21]) == (-32 * 64) & MASK64
    before = snapshot(state)
    assert run(model, "rdsvl xzr, #-1").scalar == MASK64 - 63
    assert_same_state(state, before)
    assert run(model, "addsvl x23, x8, #-1").scalar == 1000 - 64 and int(state.x[23]) == 936
    assert run(model, "addspl x24, x8, #3").scalar == 1024 and int(state.x[24]) == 1024
    assert run(model, "addsvl sp, sp, #31").scalar == 0x8000 + 31 * 64
    assert state.sp == 0x8000 + 31 * 64
    assert run(model, "addspl x0, sp, #-32").scalar == 0x8000 + 31 * 64 - 32 * 8
    state.x[8] = 0
    assert run(model, "addsvl x1, x8, #-1").scalar == MASK64 - 63


# --------------------------------------------------------------------------- streaming SVE
def pred_count(pattern, elements):
    fixed = {1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7, 8: 8, 9: 16, 10: 32, 11: 64, 12: 128,
             13: 256}
    if pattern == 0:
        power = 1
        while power * 2 <= elements:
            power *= 2
        return power
    if pattern in fixed:
        return fixed[pattern] if fixed[pattern] <= elements else 0
    return {29: elements // 4 * 4, 30: elements // 3 * 3, 31: elements}.get(pattern, 0)


@pytest.mark.parametrize("svl", [128, 256, 2048])
def test_ptrue_every_pattern_and_cnt(svl):
    model = make_model(svl)
    state = model.state
    svl_b = svl // 8
    for letter, esize in zip("bhsd", (1, 2, 4, 8)):
        for pattern in range(32):
            word = FORMS_BY_NAME[f"PTRUE_{letter.upper()}"].encode(pattern=pattern, pd=9)
            assert model.execute(word).status is Status.OK
            count = pred_count(pattern, svl_b // esize)
            expected_bits = [1 if b % esize == 0 and b // esize < count else 0
                             for b in range(svl_b)]
            assert [pbit(state.p[9], b) for b in range(svl_b)] == expected_bits, (letter, pattern)
            for imm4 in (0, 15):
                cnt = FORMS_BY_NAME[f"CNT{'BHWD'['bhsd'.index(letter)]}"]
                result = model.execute(cnt.encode(imm4=imm4, pattern=pattern, rd=20))
                assert result.scalar == count * (imm4 + 1) == int(state.x[20])
    before = snapshot(state)
    assert run(model, "cntb xzr").scalar == svl_b
    assert_same_state(state, before)
    assert run(model, "pfalse p9.b").status is Status.OK and not state.p[9].any()
    assert run(model, "rdvl x2, #-3").scalar == (-3 * svl_b) & MASK64


WHILE_CASES = [(0, 5), (5, 0), (3, 3), (-3, 2), (0x7FFFFFFE, 0x7FFFFFFF), (-(1 << 31), 1 << 20),
               (0xFFFF_FFFF, 4), (0x1_0000_0002, 0x2_0000_0007), (-(1 << 63), (1 << 63) - 1),
               (MASK64 - 2, MASK64), (10, 1000)]


def while_reference(op1, op2, bits, unsigned, elements):
    mask = (1 << bits) - 1

    def value(x):
        x &= mask
        return x if unsigned else signed(x, bits)
    active, last = [], True
    a = op1 & mask
    for _ in range(elements):
        last = last and value(a) < value(op2)
        active.append(1 if last else 0)
        a = (a + 1) & mask                  # operand1 = operand1 + 1 in bits(rsize)
    return active


@pytest.mark.parametrize("name", [f.name for f in FORMS if f.op == "while"])
def test_whilelt_whilelo(name):
    form = FORMS_BY_NAME[name]
    esize, bits = form.params["esize"], 64 if form.params["wide"] else 32
    for svl in (128, 1024):
        model = make_model(svl)
        state = model.state
        for op1, op2 in WHILE_CASES:
            state.x[3], state.x[4] = op1 & MASK64, op2 & MASK64
            assert model.execute(form.encode(rn=3, rm=4, pd=2)).status is Status.OK
            active = while_reference(op1, op2, bits, form.params["unsigned"], svl // 8 // esize)
            expected = [0] * (svl // 8)
            for e, flag in enumerate(active):
                expected[e * esize] = flag
            assert [pbit(state.p[2], b) for b in range(svl // 8)] == expected, (op1, op2)
    # XZR operands
    assert model.execute(form.encode(rn=31, rm=31, pd=2)).status is Status.OK
    assert not state.p[2].any()


def test_dup_scalar_and_immediate():
    model = make_model(256)
    state = model.state
    state.x[5] = 0x1122_3344_5566_7788
    state.sp = 0xAABB_CCDD_EEFF_0011
    for text, esize, value in (("mov z1.b, w5", 1, 0x88), ("mov z1.h, w5", 2, 0x7788),
                               ("mov z1.s, w5", 4, 0x55667788),
                               ("mov z1.d, x5", 8, 0x1122334455667788),
                               ("dup z1.s, wsp", 4, 0xEEFF0011),
                               ("mov z1.d, sp", 8, 0xAABBCCDDEEFF0011),
                               ("mov z1.b, #-1", 1, 0xFF), ("mov z1.h, #-128", 2, 0xFF80),
                               ("mov z1.s, #32512", 4, 0x7F00),
                               ("mov z1.d, #-256", 8, MASK64 - 255),
                               ("mov z1.h, #127", 2, 127)):
        assert run(model, text).status is Status.OK, text
        assert all(z_get(state.z, 1, esize, e) == value for e in range(32 // esize)), text


@pytest.mark.parametrize("name", [f.name for f in FORMS if f.op in ("ld1_contiguous",
                                                                     "st1_contiguous")])
def test_contiguous_ld1_st1(name):
    form = FORMS_BY_NAME[name]
    msize, esize = form.params["msize"], form.params["esize"]
    store = form.op == "st1_contiguous"
    rng = random.Random(name)
    for svl, style in ((128, "all"), (256, "random"), (512, "sparse"), (128, "none")):
        model = make_model(svl, seed=rng.randrange(1000))
        state = model.state
        elements = svl // 8 // esize
        activity = random_activity(rng, elements, style)
        element_predicate(state, 3, activity, esize)
        state.x[6] = DATA + 0x1000 + rng.randrange(64)
        state.x[7] = rng.randrange(32)
        if form.params["scalar_offset"]:
            fields = dict(rm=7, pg=3, rn=6, zt=12)
            start = int(state.x[6]) + int(state.x[7]) * msize
        else:
            imm4 = rng.choice((-8, -1, 0, 3, 7))
            fields = dict(imm4=imm4, pg=3, rn=6, zt=12)
            start = int(state.x[6]) + imm4 * elements * msize
        before = snapshot(state)
        assert model.execute(form.encode(**fields)).status is Status.OK
        if store:
            expected = before.memory.copy()
            for e in range(elements):
                if activity[e]:
                    value = z_get(before.z, 12, esize, e) & ((1 << (8 * msize)) - 1)
                    expected.write(start + e * msize, value.to_bytes(msize, "little"))
            assert state.memory == expected, (svl, style)
        else:
            expected = before.z.copy()
            for e in range(elements):
                value = mem_get(before.memory, start + e * msize, msize) if activity[e] else 0
                z_set(expected, 12, esize, e, value)
            assert np.array_equal(state.z, expected), (svl, style)


def test_contiguous_fault_and_unmapped_inactive():
    model = make_model(128)
    state = model.state
    state.x[0] = DATA + DATA_SIZE - 8              # .S elements 2 and 3 are unmapped
    element_predicate(state, 1, [1, 1, 0, 0], 4)
    assert run(model, "ld1w {z0.s}, p1/z, [x0]").status is Status.OK
    element_predicate(state, 1, [1, 0, 0, 1], 4)
    before = snapshot(state)
    result = run(model, "st1w {z0.s}, p1, [x0]")
    assert result.status is Status.FAULT and result.fault_address == DATA + DATA_SIZE + 4
    assert_same_state(state, before)


def test_ldr_str_z_and_p():
    model = make_model(256)
    state = model.state
    state.x[9] = DATA + 0x800
    for imm in (0, 5, -7, 255, -256):
        if not 0 <= 0x800 + imm * 32 <= DATA_SIZE - 32:
            continue
        assert run(model, f"ldr z4, [x9, #{imm}, mul vl]").status is Status.OK
        assert np.array_equal(state.z[4], state.memory.read(DATA + 0x800 + imm * 32, 32))
        assert run(model, f"ldr p4, [x9, #{imm}, mul vl]").status is Status.OK
        assert np.array_equal(state.p[4], state.memory.read(DATA + 0x800 + imm * 4, 4))
    state.z[5] = np.arange(32)
    state.p[6] = [1, 2, 3, 4]
    assert run(model, "str z5, [x9, #-3, mul vl]").status is Status.OK
    assert list(state.memory.read(DATA + 0x800 - 96, 32)) == list(range(32))
    assert run(model, "str p6, [x9, #-3, mul vl]").status is Status.OK
    assert list(state.memory.read(DATA + 0x800 - 12, 4)) == [1, 2, 3, 4]
    state.x[9] = DATA + DATA_SIZE - 16
    before = snapshot(state)
    assert run(model, "str z5, [x9]").status is Status.FAULT
    assert_same_state(state, before)


# --------------------------------------------------------------------------- set_svl
def test_set_svl():
    config = EngineConfig(max_svl=1024, supported_svls=(128, 512, 1024))
    state = ArchState(svl=512, svcr=3, fpcr=0x400000, fpsr=5, sp=0x40,
                      memory=Memory({0: bytes(16)}))
    state.za[:] = 1
    state.x[3] = 77
    model = ReferenceModel(config, state)
    model.set_svl(512)                                 # unchanged: contents kept
    assert model.state.za.all()
    model.set_svl(256)                                 # largest supported <= 256 is 128
    state = model.state
    assert state.svl == 128 and state.za.shape == (16, 16) and not state.za.any()
    assert state.z.shape == (32, 16) and state.p.shape == (16, 2) and state.ffr.shape == (2,)
    assert (state.svcr, state.fpcr, state.fpsr, state.sp, int(state.x[3])) == \
        (3, 0x400000, 5, 0x40, 77)
    assert state.memory == Memory({0: bytes(16)})
    model.set_svl(64)                                  # below the minimum: the minimum
    assert model.state.svl == 128
    model.set_svl(4096)
    assert model.state.svl == 1024
    assert run(model, "rdsvl x0, #1").scalar == 128
    with pytest.raises(ValueError, match="-5"):
        model.set_svl(-5)


# --------------------------------------------------------------------------- divergences
def test_divergence_list_is_complete_data():
    ids = {d.id for d in divergences.DIVERGENCES}
    assert {"qemu-int32-mopa", "qemu-vertical-ld1-stale-tail", "qemu-non-streaming-sve",
            "za-unknown-after-disable"} <= ids
    for d in divergences.DIVERGENCES:
        assert d.description and d.reference and d.how and d.qemu_versions
        assert isinstance(d.handling, divergences.Handling)
    mopa = divergences.DIVERGENCES_BY_ID["qemu-int32-mopa"]
    assert mopa.affects((7, 2, 22)) and mopa.affects((8, 2, 2))
    assert not mopa.affects((8, 2, 3)) and not mopa.affects((9, 0)) and not mopa.affects((10, 0, 2))
    assert divergences.DIVERGENCES_BY_ID["qemu-vertical-ld1-stale-tail"].affects((10, 0, 2))


def test_divergence_triggers():
    model = make_model(128)
    state = model.state

    def ids(text, **kwargs):
        return divergences.triggered(decode(assemble_line(text)), state, **kwargs)
    element_predicate(state, 1, [1, 1, 0, 0], 4)
    state.p[2] = 0
    state.p[3] = 0xFF
    assert ids("ld1w {za0v.s[w12, 0]}, p1/z, [x0]") == ["qemu-vertical-ld1-stale-tail"]
    assert ids("ld1w {za0h.s[w12, 0]}, p1/z, [x0]") == []
    assert ids("ld1w {za0v.s[w12, 0]}, p2/z, [x0]") == []        # all-false: QEMU is right
    assert ids("ld1w {za0v.s[w12, 0]}, p3/z, [x0]") == []        # last element active
    assert ids("smopa za0.s, p0/m, p0/m, z0.b, z1.b") == []
    assert ids("smopa za0.s, p0/m, p0/m, z0.b, z1.b", qemu_version=(7, 2, 22)) == \
        ["qemu-int32-mopa"]
    assert ids("smopa za0.d, p0/m, p0/m, z0.h, z1.h", qemu_version=(7, 2, 22)) == []
    assert ids("ptrue p0.s") == []
    assert ids("smstop za") == ["za-unknown-after-disable"]
    state.svcr = 0
    assert ids("ptrue p0.s") == ["qemu-non-streaming-sve"]
    assert ids("ld1w {za0v.s[w12, 0]}, p1/z, [x0]") == []        # traps in both
    assert ids("smstop za") == []
    assert divergences.triggered(None, state) == []


def test_qemu_vertical_ld1_effect():
    model = make_model(128)
    state = model.state
    state.x[0], state.x[12] = DATA, 5
    element_predicate(state, 1, [0, 1, 0, 0], 4)       # element 1 active; 2, 3 trailing
    word = assemble_line("ld1w {za2v.s[w12, 2]}, p1/z, [x0]")
    before = snapshot(state)
    quirks = divergences.modelled_quirks(word, state)
    assert [q.id for q in quirks] == ["qemu-vertical-ld1-stale-tail"]
    result = model.execute(word)
    qemu_za = divergences.qemu_vertical_ld1_za(decode(word), before, state)
    column = (5 + 2) % 4
    for row in range(4):
        architectural = za_get(state.za, 4, 2, row, column)
        assert architectural == (mem_get(before.memory, DATA + 4 * row, 4) if row == 1 else 0)
        expected = za_get(before.za, 4, 2, row, column) if row >= 2 else architectural
        assert za_get(qemu_za, 4, 2, row, column) == expected
    untouched = np.ones_like(state.za, dtype=bool)
    for row in range(4):
        untouched[2 + 4 * row, 4 * column:4 * column + 4] = False
    assert np.array_equal(qemu_za[untouched], state.za[untouched])
    quirks[0].apply(word, before, state, result)
    assert np.array_equal(state.za, qemu_za)


T, F = True, False


@pytest.mark.parametrize("address, esize, active, expected", [
    # all on one page: zeroed before the first active element, stale after the last
    (0, 4, [0, 1, 0, 1, 0, 0], [T, T, T, T, F, F]),
    (0, 4, [0, 0, 0, 0], [T, T, T, T]),                       # all false: all zeroed
    (0, 4, [1, 1, 1, 1], [T, T, T, T]),
    # crossing at an element boundary (16 bytes before the page end): the inactive elements
    # on the second page before its first active one stay stale; after the last active one
    # everything up to the end of its 64-byte predicate chunk is written
    (4096 - 16, 4, [0, 1, 0, 0, 0, 0, 1] + [0] * 9, [T, T, T, T, F, F] + [T] * 10),
    # an inactive element straddling the boundary stays stale
    (4096 - 12, 8, [1, 0, 1, 0, 0, 0, 0, 0], [T, F, T, T, T, T, T, T]),
    # the straddling element is the last active one: nothing after it is written
    (4096 - 12, 8, [0, 1, 0, 0, 0, 0, 0, 0], [T, T, F, F, F, F, F, F]),
    # bytes at SVL 2048: second page from element 100 to the end of its 64-byte chunk (128)
    (4096 - 8, 1, [1 if e in (2, 100) else 0 for e in range(256)],
     [e < 8 or 100 <= e < 128 for e in range(256)]),
])
def test_qemu_vertical_ld1_written(address, esize, active, expected):
    written = divergences.qemu_vertical_ld1_written(address, esize, np.array(active, bool))
    assert written.tolist() == expected


def test_vertical_ld1_quirk_matches_qemu(qemu):
    """Vertical loads across a page boundary with awkward predicates, against QEMU itself."""
    from zatile.sw.backends import compare

    rng = random.Random(5)
    svl, svl_b = 512, 64
    state = ArchState(svl=svl, svcr=3, za=np.frombuffer(rng.randbytes(svl_b * svl_b),
                                                        np.uint8).reshape(svl_b, svl_b))
    for number in range(8):
        set_predicate(state, number, [rng.getrandbits(1) for _ in range(svl_b)])
    state.memory = Memory({0x400000: np.frombuffer(rng.randbytes(0x2000), np.uint8)})
    state.x[0:8] = [0x401000 - rng.randrange(1, svl_b + 1) for _ in range(8)]
    state.x[12:16] = [0, 1, 2, 3]
    lines = []
    for index in range(16):
        letter, suffix, lsl = rng.choice((("b", "b", ""), ("h", "h", ", lsl #1"),
                                          ("w", "s", ", lsl #2"), ("d", "d", ", lsl #3"),
                                          ("q", "q", ", lsl #4")))
        lines.append(f"ld1{letter} {{za0v.{suffix}[w{12 + index % 4}, 0]}}, p{index % 8}/z, "
                     f"[x{index % 8}, xzr{lsl}]")
    comparison = compare("\n".join(lines) + "\n", state, ["model", "qemu"],
                         EngineConfig(max_svl=svl))
    assert comparison.agree, comparison.difference
    assert comparison.divergences == ["qemu-vertical-ld1-stale-tail"]
    assert comparison.outcomes["model"].divergences == []          # the model's own run is faithful


def test_backend_applies_modelled_quirks():
    from zatile.sw.backends import run_program

    state = make_model(128).state
    state.x[0], state.x[12] = DATA, 0
    element_predicate(state, 1, [1, 0, 0, 0], 4)
    program = "ld1w {za0v.s[w12, 0]}, p1/z, [x0]\n"
    plain = run_program("model", program, state)
    quirky = run_program("model", program, state, qemu_quirks=True)
    assert plain.divergences == [] and quirky.divergences == ["qemu-vertical-ld1-stale-tail"]
    assert za_get(plain.final.za, 4, 0, 3, 0) == 0
    assert za_get(quirky.final.za, 4, 0, 3, 0) == za_get(state.za, 4, 0, 3, 0)


# --------------------------------------------------------------------------- randomized
def test_random_programs_never_break_the_invariants():
    """Random straight-line programs: traps/faults change nothing; shapes and dtypes hold."""
    from zatile.sim.progen import generate_program

    for svl in (128, 512):
        rng = random.Random(svl)
        for _ in range(6):
            program = generate_program(rng, svl, 60)
            model = ReferenceModel(EngineConfig(max_svl=svl), program.initial.copy())
            for word in assemble(program.text):
                before = snapshot(model.state)
                result = model.execute(word)
                if result.status is not Status.OK:
                    assert_same_state(model.state, before)
                state = model.state
                assert state.za.shape == (svl // 8, svl // 8) and state.za.dtype == np.uint8
                assert state.z.dtype == np.uint8 and state.x.dtype == np.uint64
