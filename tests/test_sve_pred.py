"""Streaming-SVE compares, predicate operations, counts and reductions (sw/arch/isa/sve_pred.py
and sim/model/sve_pred.py).

* Semantics against QEMU 10: every form of the class, random operands, at several SVLs, on
  states full of integer edge values, random predicates and general registers near the 32- and
  64-bit limits (NZCV is compared too); and a campaign of random programs of the class.
* Directed values worked out by hand for the rules that are easy to get wrong (docs/isa.md,
  "Streaming SVE predicates, counts and reductions"): PredTest flags, zeroing compares, wide
  compares, BRK* propagation, PNEXT, WHILE wrap-around and descending WHILEs, saturating
  counts in 32 and 64 bits, reductions into a SIMD&FP scalar that zero the rest of the vector.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from zatile.sim.progen import OP_WEIGHTS, generate_program
from zatile.sim.state import ArchState
from zatile.sw.arch.asm import assemble_line, disassemble
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.isa import sve_pred
from zatile.sw.backends import compare
from tests.test_isa import random_instance
from tests.test_sve_int import Vectors, _streaming_state

#: General-register values that meet the saturation and wrap-around corners.
_EDGES = (0, 1, 2, 3, 7, 100, (1 << 31) - 1, (1 << 31) - 3, 1 << 31, (1 << 32) - 1, (1 << 32) - 2,
          (1 << 63) - 1, (1 << 63) - 5, 1 << 63, (1 << 64) - 1, (1 << 64) - 3, 0xFFFF_FFFF_8000_0000)

_OPS = tuple(dict.fromkeys(form.op for form in sve_pred.FORMS))


def _state(rng: random.Random, svl: int) -> ArchState:
    state = _streaming_state(rng, svl)
    state.x = np.array([rng.choice(_EDGES) if rng.random() < 0.7 else rng.getrandbits(64)
                        for _ in range(31)], np.uint64)
    state.nzcv = rng.randrange(16)
    return state


@pytest.mark.parametrize("svl, seed", [(128, 1), (256, 2), (512, 3), (2048, 4)])
def test_every_form_agrees_with_qemu(qemu, svl, seed):
    """One short program per form (three random instances), each from a fresh edge-value
    state; the final states (Z, P, X, NZCV) must agree exactly."""
    rng = random.Random(seed)
    config = EngineConfig(max_svl=2048)
    differences = []
    for form in sve_pred.FORMS:
        lines = [disassemble(random_instance(form, rng)).replace("\t", " ", 1)
                 for _ in range(3)]
        comparison = compare("\n".join(lines) + "\n", _state(rng, svl), ["model", "qemu"],
                             config)
        if not comparison.agree:
            differences.append((form.name, lines, comparison.difference))
    assert not differences, differences[:5]


@pytest.mark.parametrize("seed", [7, 8])
def test_campaign_of_predicate_programs_agrees_with_qemu(qemu, seed):
    """Random 30-instruction programs of the class with the integer arithmetic and predicate
    set-up they meet in practice, at SVL 128 and 256."""
    weights = {op: 0 for op in OP_WEIGHTS}
    weights.update({op: 3 for op in _OPS})
    weights.update({"ptrue": 2, "while": 2, "dup_imm": 1, "int_add": 1, "int_sub": 1})
    rng = random.Random(seed)
    for index in range(16):
        svl = (128, 256)[index % 2]
        program = generate_program(rng, svl, 30, weights=weights)
        comparison = compare(program.text, program.initial, ["model", "qemu"],
                             EngineConfig(max_svl=256))
        assert comparison.agree, (program.text, comparison.difference)


# --- directed values ------------------------------------------------------------------------

def _flags(v: Vectors) -> str:
    nzcv = v.model.state.nzcv
    return "".join(letter if nzcv >> (3 - index) & 1 else "-" for index, letter in enumerate("NZCV"))


def _elements(v: Vectors, register: int, letter: str) -> list[int]:
    esize = "bhsd".index(letter)
    bits = np.unpackbits(v.model.state.p[register], bitorder="little")
    return [int(bit) for bit in bits[::1 << esize]]


def test_compares_zero_inactive_elements_and_set_flags_by_pred_test():
    v = Vectors()
    v.set(0, "s", [5, -3, 7, 7])
    v.set(1, "s", [5, 4, 8, 6])
    v.predicate(0, "s", [0, 1, 1, 1])
    v.run("cmpge p1.s, p0/z, z0.s, z1.s")
    assert _elements(v, 1, "s") == [0, 0, 0, 1]         # lane 0 is equal but inactive
    assert _flags(v) == "----"                          # first active false, some true, last true
    v.run("cmphi p2.s, p0/z, z0.s, z1.s")               # unsigned: -3 is huge
    assert _elements(v, 2, "s") == [0, 1, 0, 1]
    assert _flags(v) == "N---"                          # first active true, last true
    v.run("cmpeq p3.s, p0/z, z0.s, #9")
    assert _elements(v, 3, "s") == [0, 0, 0, 0] and _flags(v) == "-ZC-"
    v.run("cmplt p4.s, p0/z, z0.s, #0")                 # only -3, the first active element
    assert _elements(v, 4, "s") == [0, 1, 0, 0] and _flags(v) == "N-C-"
    # the predicate of a .s result has only bit 0 of each element set
    assert v.model.state.p[4].tolist() == [0x10, 0]


def test_wide_compares_take_the_64_bit_element_of_the_same_lane():
    v = Vectors()
    v.set(0, "h", [1, 2, 3, 4, 5, 6, 7, 8])
    v.set(1, "d", [3, 2**63])                            # lanes 0-3 against 3, 4-7 against 2^63
    v.predicate(0, "h", [1] * 8)
    v.run("cmpgt p1.h, p0/z, z0.h, z1.d", "cmplo p2.h, p0/z, z0.h, z1.d")
    assert _elements(v, 1, "h") == [0, 0, 0, 1, 1, 1, 1, 1]     # signed: 2^63 is negative
    assert _elements(v, 2, "h") == [1, 1, 0, 0, 1, 1, 1, 1]


def test_assembler_only_swapped_compares_encode_as_binutils():
    assert assemble_line("cmplt p1.h, p2/z, z3.h, z4.h") == 0x24438891     # cmpgt z4, z3
    assert disassemble(0x24438891) == "cmpgt\tp1.h, p2/z, z4.h, z3.h"


def test_predicate_logic_aliases_and_flags():
    v = Vectors()
    v.predicate(0, "b", [1] * 8 + [0] * 8)
    v.predicate(1, "b", [1, 0] * 8)
    v.run("ands p2.b, p0/z, p1.b, p1.b")
    assert _elements(v, 2, "b") == [1, 0] * 4 + [0] * 8 and _flags(v) == "N-C-"
    v.run("nor p3.b, p0/z, p1.b, p2.b")
    assert _elements(v, 3, "b") == [0, 1] * 4 + [0] * 8
    v.run("mov p4.b, p0/m, p1.b")                      # SEL with Pm = Pd
    v.run("sel p5.b, p1, p0.b, p3.b")
    assert _elements(v, 5, "b") == [1] * 8 + [0] * 8
    assert disassemble(assemble_line("orr p6.b, p2/z, p2.b, p2.b")) == "mov\tp6.b, p2.b"
    assert disassemble(assemble_line("eor p6.b, p2/z, p3.b, p2.b")) == "not\tp6.b, p2/z, p3.b"


def test_breaks_and_propagation():
    v = Vectors()
    v.predicate(0, "b", [0, 1, 1, 1, 1, 1, 0, 1] + [0] * 8)
    v.predicate(1, "b", [1, 0, 0, 1, 0, 1, 1, 0] + [0] * 8)
    v.run("brka p2.b, p0/z, p1.b", "brkb p3.b, p0/z, p1.b")
    assert _elements(v, 2, "b")[:8] == [0, 1, 1, 1, 0, 0, 0, 0]   # up to the first true (3)
    assert _elements(v, 3, "b")[:8] == [0, 1, 1, 0, 0, 0, 0, 0]   # before it
    v.predicate(4, "b", [1] * 16)
    v.run("brka p4.b, p0/m, p1.b")                               # inactive keep Pd
    assert _elements(v, 4, "b") == [1, 1, 1, 1, 0, 0, 1, 0] + [1] * 8
    v.run("brkbs p5.b, p0/z, p1.b")
    assert _flags(v) == "N-C-"                                   # first active (1) is set
    # BRKPA: the last active element of Pn (7) is false, so everything breaks
    v.run("brkpa p6.b, p0/z, p1.b, p1.b")
    assert _elements(v, 6, "b") == [0] * 16
    v.predicate(7, "b", [1] * 16)
    v.run("brkpb p8.b, p0/z, p7.b, p1.b")        # last active of p7 true: break before p1's 3
    assert _elements(v, 8, "b")[:8] == [0, 1, 1, 0, 0, 0, 0, 0]
    v.predicate(9, "b", [1, 1] + [0] * 14)
    v.run("brkn p9.b, p0/z, p1.b, p9.b")                        # last active of p1 false
    assert _elements(v, 9, "b") == [0] * 16


def test_pfirst_and_pnext_walk_the_active_elements():
    v = Vectors()
    v.predicate(0, "s", [0, 1, 0, 1])
    v.predicate(1, "s", [0, 0, 0, 0])
    v.run("pnext p1.s, p0, p1.s")
    assert _elements(v, 1, "s") == [0, 1, 0, 0] and _flags(v) == "N-C-"
    v.run("pnext p1.s, p0, p1.s")
    assert _elements(v, 1, "s") == [0, 0, 0, 1] and _flags(v) == "----"
    v.run("pnext p1.s, p0, p1.s")
    assert _elements(v, 1, "s") == [0, 0, 0, 0] and _flags(v) == "-ZC-"
    v.predicate(2, "b", [0, 0, 0, 1] + [0] * 12)
    v.predicate(3, "b", [0, 0, 1, 1] + [1] * 12)
    v.run("pfirst p2.b, p3, p2.b")
    assert _elements(v, 2, "b") == [0, 0, 1, 1] + [0] * 12 and _flags(v) == "N-C-"


def test_whiles_of_every_direction_and_their_wrap_around():
    v = Vectors()
    x = v.model.state.x
    x[0], x[1] = 5, 7
    v.run("whilele p0.s, x0, x1")
    assert _elements(v, 0, "s") == [1, 1, 1, 0]
    v.run("whilege p1.s, x1, x0", "whilegt p2.s, x1, x0")       # from the last element down
    assert _elements(v, 1, "s") == [0, 1, 1, 1] and _elements(v, 2, "s") == [0, 0, 1, 1]
    assert _flags(v) == "----"                                  # first false, last true
    x[2], x[3] = 0x7FFF_FFFE, 0x7FFF_FFFF
    v.run("whilele p3.s, w2, w3")            # 2^31-2 <= max, max <= max, then wraps to INT_MIN
    assert _elements(v, 3, "s") == [1, 1, 1, 1]
    x[4], x[5] = 1, 0xFFFF_FFFF
    v.run("whilehs p4.s, w4, w5")            # 1 >= UINT_MAX never holds
    assert _elements(v, 4, "s") == [0, 0, 0, 0] and _flags(v) == "-ZC-"


def test_counts_saturate_in_their_width():
    v = Vectors(svl=256)                      # 32 bytes: CNTB = 32, CNTD = 4
    x = v.model.state.x
    x[0] = x[1] = x[2] = x[3] = 0x7FFF_FFF0
    v.run("incb x0", "sqincb x1, w1", "uqincb w2, vl16", "decd x3, all, mul #3")
    assert [int(r) for r in x[:4]] == [0x8000_0010, 0x7FFF_FFFF, 0x8000_0000, 0x7FFF_FFE4]
    x[4], x[5], x[6] = 3, 0xFFFF_FFFF_FFFF_FFFE, 5
    v.run("sqdecw x4, w4", "uqincd x5", "uqdecw w6")
    assert [int(r) for r in x[4:7]] == [(-5) & (2**64 - 1), 2**64 - 1, 0]
    v.predicate(0, "h", [1, 0, 1, 1] + [0] * 12)
    x[7] = 2
    v.run("cntp x8, p0, p0.h", "decp x7, p0.h")
    assert int(x[8]) == 3 and int(x[7]) == 2**64 - 1
    v.set(0, "h", [0x7FFE, 1, 0x8001] + [0] * 13)
    v.run("sqinch z0.h, pow2", "sqdecp z0.h, p0.h")      # +16 saturating, then -3
    assert v.get(0, "h")[:3] == [0x7FFC, 14, 0x800E]
    v.run("addvl x9, x8, #-2", "addpl x10, x8, #3")
    assert int(x[9]) == 3 - 64 & (2**64 - 1) and int(x[10]) == 3 + 12


def test_reductions_write_a_simd_scalar_and_zero_the_rest():
    v = Vectors()
    v.set(0, "b", [0xFF, 1, 0x80, 5] + [0x7F] * 12)
    v.set(1, "b", [0xAA] * 16)
    v.predicate(0, "b", [1, 1, 1, 1] + [0] * 12)
    v.predicate(1, "b", [0] * 16)
    v.run("saddv d1, p0, z0.b")
    assert v.get(1, "d") == [(-1 + 1 - 128 + 5) & (2**64 - 1), 0]
    v.run("uaddv d2, p0, z0.b", "smaxv b3, p0, z0.b", "uminv b4, p0, z0.b",
          "andv b5, p1, z0.b", "sminv b6, p1, z0.b")
    assert v.get(2, "d") == [0xFF + 1 + 0x80 + 5, 0]
    assert v.get(3, "b") == [5] + [0] * 15 and v.get(4, "b")[0] == 1
    assert v.get(5, "b")[0] == 0xFF and v.get(6, "b")[0] == 0x7F   # identities when none active


def test_a_register_spelled_twice_is_one_operand():
    """``sqincb x3, w3`` reads and writes X3 once: one source operand, the 64-bit spelling."""
    from zatile.sw.arch.isa import decode, scalar_destination, scalar_sources
    decoded = decode(assemble_line("sqincb x3, w3"))
    sources = scalar_sources(decoded)
    assert [(r.field, r.number, r.width) for r in sources] == [("rdn", 3, 64)]
    assert scalar_destination(decoded).number == 3
