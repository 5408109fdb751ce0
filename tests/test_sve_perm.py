"""Streaming-SVE element moves, permutes and MOVPRFX (sw/arch/isa/sve_perm.py and
sim/model/sve_perm.py).

* Semantics against QEMU 10: every form of the class, random operands, at SVL 128, 256, 512 and
  2048, on states of integer edge values under all-true, all-false, sparse and random
  predicates (MOVPRFX always as a valid pair); and a campaign of random programs of the class.
* Directed values worked out by hand for the rules that are easy to get wrong (docs/isa.md,
  "Streaming SVE element moves and permutes"): INDEX wrapping, DUP with an index beyond the
  vector, LASTA/LASTB and CLASTA/CLASTB with no active element, EXT beyond the end, TBL/TBX out of
  range, ZIP/UZP/TRN at the smallest and largest SVL, SPLICE, unpacks, the SIMD&FP scalar
  destination zeroing its Z register.
* MOVPRFX (docs/isa.md, "MOVPRFX"): the generator's pairs are valid (GNU as assembles them
  without a warning), and a pair computes what its two instructions compute.
"""

from __future__ import annotations

import random
import subprocess
import tempfile
from pathlib import Path

import pytest

from zatile.sim.binutils import ARCH_FLAGS, gnu_assemble
from zatile.sim.progen import OP_WEIGHTS, generate_program, movprfx_pair
from zatile.sim.tools import find_tool
from zatile.sw.arch.asm import AsmError, assemble_line, disassemble
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.isa import FORMS_BY_NAME, decode, sve_perm
from zatile.sw.arch.isa.sve_perm import prefixed_destination
from zatile.sw.backends import compare
from tests.conftest import need_tool
from tests.test_isa import random_instance
from tests.test_sve_int import Vectors, _streaming_state


# --- against QEMU ---------------------------------------------------------------------------

def _form_program(form, rng: random.Random) -> list[str]:
    """Three random instances of ``form``; MOVPRFX as two valid pairs."""
    if form.op in sve_perm.MOVPRFX_OPS:
        return [line for _ in range(2) for line in movprfx_pair(form, rng)]
    return [disassemble(random_instance(form, rng)).replace("\t", " ", 1) for _ in range(3)]


@pytest.mark.parametrize("svl, seed", [(128, 1), (256, 2), (512, 3), (2048, 4)])
def test_every_form_agrees_with_qemu(qemu, svl, seed):
    """One short program per form, each from a fresh edge-value state; the final states (Z, P,
    X included) must agree exactly."""
    rng = random.Random(seed)
    config = EngineConfig(max_svl=2048)
    differences = []
    for form in sve_perm.FORMS:
        lines = _form_program(form, rng)
        comparison = compare("\n".join(lines) + "\n", _streaming_state(rng, svl),
                             ["model", "qemu"], config)
        if not comparison.agree:
            differences.append((form.name, lines, comparison.difference))
    assert not differences, differences[:5]


@pytest.mark.parametrize("seed", [7, 8])
def test_campaign_of_permute_programs_agrees_with_qemu(qemu, seed):
    """Random 30-instruction programs of the class (with the predicate and DUP setup they meet
    in practice, and MOVPRFX pairs) at SVL 128, 256 and 2048."""
    weights = {op: 0 for op in OP_WEIGHTS if not op.startswith("perm_")}
    weights.update(ptrue=2, dup_imm=1, dup_scalar=1, msr_svcr_imm=1, perm_movprfx=2)
    rng = random.Random(seed)
    for index in range(15):
        svl = (128, 256, 2048)[index % 3]
        program = generate_program(rng, svl, 30, weights=weights)
        comparison = compare(program.text, program.initial, ["model", "qemu"],
                             EngineConfig(max_svl=2048))
        assert comparison.agree, (program.text, comparison.difference)


# --- directed values ------------------------------------------------------------------------

def test_index_wraps_modulo_the_element_size():
    v = Vectors()
    v.model.state.x[20] = 250
    v.model.state.x[21] = 2**64 - 3                 # -3 as X, 0xFFFD as its low .H bits
    v.run("index z0.b, w20, #3", "index z1.h, #5, w21", "index z2.d, x21, x21",
          "index z3.s, #-16, #-16")
    assert v.get(0, "b")[:4] == [250, 253, 0, 3]
    assert v.get(1, "h", signed=True) == [5, 2, -1, -4, -7, -10, -13, -16]
    assert v.get(2, "d", signed=True) == [-3, -6]
    assert v.get(3, "s", signed=True) == [-16, -32, -48, -64]


def test_dup_indexed_beyond_the_vector_is_zero():
    v = Vectors()                                      # 16 bytes: .S has 4 elements
    v.set(1, "s", [11, 22, 33, 44])
    v.set(0, "s", [9, 9, 9, 9])
    v.run("mov z0.s, z1.s[3]", "mov z2.s, z1.s[4]", "mov z3.s, s1", "mov z4.q, z1.q[0]",
          "mov z5.q, z1.q[1]")
    assert v.get(0, "s") == [44] * 4
    assert v.get(2, "s") == [0] * 4
    assert v.get(3, "s") == [11] * 4
    assert v.get(4, "s") == [11, 22, 33, 44]
    assert v.get(5, "s") == [0] * 4
    wide = Vectors(svl=512)                            # 64 bytes: .Q index 1 exists
    wide.set(1, "d", list(range(8)))
    wide.run("dup z5.q, z1.q[1]")
    assert wide.get(5, "d") == [2, 3] * 4


def test_cpy_zeroing_merging_and_sel():
    v = Vectors()
    v.set(0, "h", [7] * 8)
    v.set(1, "h", [7] * 8)
    v.predicate(0, "h", [1, 0, 1, 0, 0, 0, 0, 1])
    v.model.state.x[20] = 0x12345
    v.run("mov z0.h, p0/z, #-1", "mov z1.h, p0/m, #1, lsl #8", "mov z2.h, p0/m, w20",
          "mov z3.h, p0/m, h1")
    assert v.get(0, "h") == [0xFFFF, 0, 0xFFFF, 0, 0, 0, 0, 0xFFFF]
    assert v.get(1, "h") == [256, 7, 256, 7, 7, 7, 7, 256]
    assert v.get(2, "h")[:3] == [0x2345, 0, 0x2345]
    assert v.get(3, "h")[:3] == [256, 0, 256]
    v.set(4, "h", list(range(8)))
    v.set(5, "h", [100] * 8)
    v.run("sel z6.h, p0, z4.h, z5.h")
    assert v.get(6, "h") == [0, 100, 2, 100, 100, 100, 100, 7]
    assert disassemble(assemble_line("sel z5.h, p0, z4.h, z5.h")) == "mov\tz5.h, p0/m, z4.h"


def test_insr_shifts_up_and_inserts_at_element_zero():
    v = Vectors()
    v.set(0, "s", [1, 2, 3, 4])
    v.model.state.x[20] = 0xAAAA_BBBB_CCCC_DDDD
    v.run("insr z0.s, w20")
    assert v.get(0, "s") == [0xCCCCDDDD, 1, 2, 3]
    v.run("insr z0.s, s0")                              # reads element 0 before shifting
    assert v.get(0, "s") == [0xCCCCDDDD, 0xCCCCDDDD, 1, 2]


def test_last_with_no_active_element():
    """LASTB takes the last element and LASTA element 0; CLASTB/CLASTA keep the destination
    (a scalar only its low element bits)."""
    v = Vectors()
    v.set(1, "s", [10, 20, 30, 40])
    v.predicate(0, "s", [0, 0, 0, 0])
    v.predicate(1, "s", [0, 1, 0, 0])
    v.predicate(2, "s", [0, 0, 0, 1])
    state = v.model.state
    state.x[20] = state.x[21] = 0x1_2345_6789
    v.set(5, "s", [5, 6, 7, 8])
    v.set(6, "s", [5, 6, 7, 8])
    results = [v.model.execute(assemble_line(text)).scalar
               for text in ("lastb x22, p0, z1.d", "lasta w23, p0, z1.s", "lastb w24, p1, z1.s",
                            "lasta w25, p2, z1.s", "clastb w20, p0, w20, z1.s",
                            "clasta w21, p1, w21, z1.s")]
    assert results == [40 << 32 | 30, 10, 20, 10, 0x2345_6789, 30]
    assert [int(state.x[r]) for r in range(20, 26)] == results[4:] + results[:4]
    v.run("clastb z5.s, p0, z5.s, z1.s", "clastb z6.s, p2, z6.s, z1.s", "clastb s5, p0, s5, z1.s",
          "lastb h7, p2, z1.h")
    assert v.get(5, "s") == [5, 0, 0, 0]                # the SIMD&FP write zeroes the rest
    assert v.get(6, "s") == [40] * 4
    assert v.get(7, "h") == [40, 0, 0, 0, 0, 0, 0, 0]    # .H element 6 is the active one


def test_ext_offsets_and_beyond_the_end():
    v = Vectors()
    v.set(1, "b", list(range(16)))
    v.set(2, "b", list(range(100, 116)))
    v.set(3, "b", list(range(16)))
    v.set(31, "b", list(range(16)))
    v.set(0, "b", list(range(200, 216)))
    v.run("ext z1.b, z1.b, z2.b, #14", "ext z3.b, z3.b, z2.b, #16", "ext z4.b, {z31.b, z0.b}, #1")
    assert v.get(1, "b") == [14, 15] + list(range(100, 114))
    assert v.get(3, "b") == list(range(16))             # 16 >= 16 bytes: offset 0
    assert v.get(4, "b") == list(range(1, 16)) + [200]  # the pair wraps to z0


def test_table_lookups_out_of_range():
    v = Vectors()
    v.set(1, "h", list(range(10, 18)))
    v.set(2, "h", list(range(20, 28)))
    v.set(3, "h", [0, 7, 8, 15, 16, 0xFFFF, 3, 9])
    v.set(4, "h", [99] * 8)
    v.run("tbl z5.h, {z1.h}, z3.h", "tbl z6.h, {z1.h, z2.h}, z3.h", "tbx z4.h, z1.h, z3.h")
    assert v.get(5, "h") == [10, 17, 0, 0, 0, 0, 13, 0]
    assert v.get(6, "h") == [10, 17, 20, 27, 0, 0, 13, 21]
    assert v.get(4, "h") == [10, 17, 99, 99, 99, 99, 13, 99]


@pytest.mark.parametrize("svl", [128, 2048])
def test_zip_uzp_trn_at_the_smallest_and_largest_svl(svl):
    v = Vectors(svl)
    count = svl // 64
    first, second = list(range(count)), list(range(1000, 1000 + count))
    v.set(1, "d", first)
    v.set(2, "d", second)
    v.run("zip1 z3.d, z1.d, z2.d", "zip2 z4.d, z1.d, z2.d", "uzp1 z5.d, z1.d, z2.d",
          "uzp2 z6.d, z1.d, z2.d", "trn1 z7.d, z1.d, z2.d", "trn2 z8.d, z1.d, z2.d")
    half = count // 2
    assert v.get(3, "d") == [x for pair in zip(first[:half], second[:half]) for x in pair]
    assert v.get(4, "d") == [x for pair in zip(first[half:], second[half:]) for x in pair]
    assert v.get(5, "d") == first[0::2] + second[0::2]
    assert v.get(6, "d") == first[1::2] + second[1::2]
    assert v.get(7, "d") == [x for pair in zip(first[0::2], second[0::2]) for x in pair]
    assert v.get(8, "d") == [x for pair in zip(first[1::2], second[1::2]) for x in pair]


def test_predicate_permutes_move_whole_predicate_elements():
    v = Vectors()
    state = v.model.state
    state.p[1] = [0b0000_0011, 0b0101_0000]            # .H elements: 3, 0, 0, 0, 0, 0, 1, 1
    state.p[2] = [0xFF, 0x00]
    v.run("rev p3.h, p1.h", "zip1 p4.h, p1.h, p2.h", "uzp2 p5.b, p1.b, p2.b",
          "punpkhi p6.h, p1.b", "punpklo p7.h, p2.b")
    assert list(state.p[3]) == [0b0000_0101, 0b1100_0000]
    assert list(state.p[4]) == [0b1100_1111, 0b1100_1100]    # .H elements 3, 3, 0, 3, 0, 3, 0, 3
    assert list(state.p[5]) == [0b0000_0001, 0b0000_1111]
    assert list(state.p[6]) == [0b0000_0000, 0b0001_0001]
    assert list(state.p[7]) == [0b0101_0101, 0b0101_0101]


def test_splice_copies_first_to_last_active_then_fills():
    v = Vectors()
    v.set(0, "s", [1, 2, 3, 4])
    v.set(1, "s", [5, 6, 7, 8])
    v.set(2, "s", [1, 2, 3, 4])
    v.set(3, "s", [1, 2, 3, 4])
    v.predicate(0, "s", [0, 1, 0, 1])
    v.predicate(1, "s", [0, 0, 0, 0])
    v.run("splice z0.s, p0, z0.s, z1.s", "splice z2.s, p1, z2.s, z1.s",
          "splice z4.s, p0, {z3.s, z4.s}")
    assert v.get(0, "s") == [2, 3, 4, 5]                # the inactive 3 between is kept
    assert v.get(2, "s") == [5, 6, 7, 8]
    assert v.get(4, "s") == [2, 3, 4, 0]                # z4 was zero


def test_reverses_and_unpacks():
    v = Vectors()
    v.set(1, "s", [0x11223344, 0x80000001, 0xFFFF0000, 0x0000FFFF])
    v.predicate(0, "s", [1, 1, 1, 0])
    v.set(2, "s", [7, 7, 7, 7])
    v.run("revb z2.s, p0/m, z1.s", "revh z3.s, p0/m, z1.s", "rbit z4.s, p0/m, z1.s",
          "rev z5.s, z1.s")
    assert v.get(2, "s") == [0x44332211, 0x01000080, 0x0000FFFF, 7]
    assert v.get(3, "s")[:3] == [0x33441122, 0x00018000, 0x0000FFFF]
    assert v.get(4, "s")[:2] == [0x22CC4488, 0x80000001]
    assert v.get(5, "s") == [0x0000FFFF, 0xFFFF0000, 0x80000001, 0x11223344]
    v.set(6, "b", [0x80, 0x7F, 0xFF, 1] + [0] * 8 + [0xFE, 2, 3, 0x90])
    v.run("sunpklo z7.h, z6.b", "uunpkhi z8.h, z6.b")
    assert v.get(7, "h", signed=True)[:4] == [-128, 127, -1, 1]
    assert v.get(8, "h")[4:] == [0xFE, 2, 3, 0x90]


# --- MOVPRFX --------------------------------------------------------------------------------

def test_movprfx_pairs_compute_what_their_instructions_compute():
    v = Vectors()
    v.set(1, "s", [1, 2, 3, 4])
    v.set(2, "s", [10, 20, 30, 40])
    v.set(0, "s", [9, 9, 9, 9])
    v.set(3, "s", [9, 9, 9, 9])
    v.predicate(0, "s", [1, 0, 1, 0])
    v.run("movprfx z0.s, p0/z, z1.s", "add z0.s, p0/m, z0.s, z2.s",
          "movprfx z3.s, p0/m, z1.s", "add z3.s, p0/m, z3.s, z2.s",
          "movprfx z4, z1", "add z4.s, z4.s, #100")
    assert v.get(0, "s") == [11, 0, 33, 0]
    assert v.get(3, "s") == [11, 9, 33, 9]
    assert v.get(4, "s") == [101, 102, 103, 104]


def test_generated_movprfx_pairs_are_valid():
    """Every pair the generator makes obeys the rule of docs/isa.md, "MOVPRFX", and GNU as,
    which warns about any pair that breaks it, assembles them without a warning."""
    need_tool("as")
    rng = random.Random(11)
    lines = []
    for form in (f for f in sve_perm.FORMS if f.op in sve_perm.MOVPRFX_OPS):
        for _ in range(40):
            prefix, prefixed = movprfx_pair(form, rng)
            first, second = decode(assemble_line(prefix)), decode(assemble_line(prefixed))
            destination = prefixed_destination(second.form)
            assert second.fields[destination] == first["zd"]
            assert first["zd"] not in [second.fields[name] for name in ("zn", "zm", "za")
                                       if name in second.fields]
            if "pg" in first.fields:
                assert second["pg"] == first["pg"]
                assert second.form.params["esize"] == first.form.params["esize"]
            lines += [prefix, prefixed]
    with tempfile.TemporaryDirectory() as work:
        source = Path(work, "pairs.s")
        source.write_text("\n".join(lines) + "\n")
        run = subprocess.run([find_tool("as"), *ARCH_FLAGS, str(source), "-o",
                              str(Path(work, "pairs.o"))], capture_output=True, text=True)
    assert run.returncode == 0 and not run.stderr, run.stderr[:2000]
    invalid = "movprfx z1, z2\nadd z1.s, p0/m, z1.s, z1.s\n"
    with tempfile.TemporaryDirectory() as work:
        Path(work, "bad.s").write_text(invalid)
        run = subprocess.run([find_tool("as"), *ARCH_FLAGS, str(Path(work, "bad.s")), "-o",
                              str(Path(work, "bad.o"))], capture_output=True, text=True)
    assert "movprfx" in run.stderr                      # the check above can fail


def test_only_the_integer_class_is_prefixed():
    assert prefixed_destination(FORMS_BY_NAME["ADD_ZPZZ_S"]) == "zdn"
    assert prefixed_destination(FORMS_BY_NAME["MLA_ZPZZZ_S"]) == "zda"
    assert prefixed_destination(FORMS_BY_NAME["ABS_ZPZ_S"]) == "zd"
    assert prefixed_destination(FORMS_BY_NAME["ADD_ZZZ_S"]) is None
    assert prefixed_destination(FORMS_BY_NAME["SPLICE_S"]) is None
    with pytest.raises(ValueError, match="ADD_ZPZZ_S is not a MOVPRFX form"):
        movprfx_pair(FORMS_BY_NAME["ADD_ZPZZ_S"], random.Random(0))


def test_a_destination_named_twice_is_one_source():
    """CLASTA Wdn names Rdn twice: the CPU reads it once and gets the result back in it."""
    from zatile.sw.arch.isa import scalar_destination, scalar_sources
    decoded = decode(assemble_line("clasta w5, p0, w5, z1.s"))
    assert [r.name for r in scalar_sources(decoded)] == ["x5"]
    assert scalar_destination(decoded).name == "x5"


#: Spellings GNU as accepts besides the ones objdump prints (``dup``, ``cpy``, ``sel`` with
#: Zm = Zd, index 0 written out) and operands at the ends of their ranges.
SPELLINGS = ("dup z0.s, z1.s[0]", "mov z0.s, z1.s[0]", "cpy z0.s, p0/m, w1", "cpy z0.s, p0/z, #1",
             "cpy z0.d, p0/m, sp", "cpy z0.h, p0/m, h3", "sel z0.s, p1, z2.s, z0.s",
             "dup z0.q, z1.q[3]", "dup z0.b, z1.b[63]", "mov z0.d, p1/z, #-128, lsl #8",
             "ext z0.b, {z31.b, z0.b}, #255", "tbl z0.d, {z31.d, z0.d}, z1.d",
             "splice z0.b, p7, {z31.b, z0.b}", "index z0.d, #-16, #15",
             "movprfx z0.d, p7/m, z1.d", "clasta x0, p0, x0, z1.d", "punpkhi p15.h, p15.b")


def test_other_spellings_assemble_as_gnu_as_assembles_them():
    need_tool("as")
    assert [assemble_line(line) for line in SPELLINGS] == gnu_assemble(list(SPELLINGS))
    with pytest.raises(AsmError, match="disagree"):
        assemble_line("ext z0.b, {z1.b, z3.b}, #1")         # not consecutive


def test_dup_immediate_prints_a_shifted_zero_as_objdump_does():
    word = assemble_line("mov z2.h, #0, lsl #8")
    assert word == 0x2578E002
    assert disassemble(word) == "mov\tz2.h, #0, lsl #8"
    assert disassemble(assemble_line("mov z4.h, p3/m, #0, lsl #8")) == \
        "mov\tz4.h, p3/m, #0, lsl #8"

