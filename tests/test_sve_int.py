"""Streaming-SVE integer arithmetic, logic and shifts (sw/arch/isa/sve_int.py and
sim/model/sve_int.py).

* Semantics against QEMU 10: every form of the class, random operands, at several SVLs, on
  states full of integer edge values under all-true, all-false, sparse and random predicates;
  and a small campaign of random programs of the class.
* Directed values worked out by hand for the rules that are easy to get wrong (docs/isa.md,
  "Streaming SVE integer arithmetic"): merging predication, division by zero and INT_MIN / -1,
  shifts by the element size or more, wide shifts, saturation, 64-bit high products, SVE2
  rounding shifts, narrowing, logical immediates, multiply-add operand roles.
* Logical immediates whose ``immr`` has bits above the element size: valid, read as the
  canonical word, printed as objdump prints them.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from zatile.sim import divergences
from zatile.sim.binutils import gnu_disassemble
from zatile.sim.model import ReferenceModel
from zatile.sim.progen import OP_WEIGHTS, generate_program
from zatile.sim.state import ArchState
from zatile.sw.arch.asm import assemble, assemble_line, disassemble
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.isa import FORMS_BY_NAME, decode, sve_int
from zatile.sw.backends import compare
from tests.conftest import need_tool
from tests.test_isa import random_instance

DTYPES = {"b": np.uint8, "h": np.uint16, "s": np.uint32, "d": np.uint64}
SIGNED_DTYPES = {"b": np.int8, "h": np.int16, "s": np.int32, "d": np.int64}


# --- random states for the comparison with QEMU ---------------------------------------------

def _edge_vector(rng: random.Random, svl_bytes: int) -> np.ndarray:
    """Random bytes with half the elements (of a random size) set to integer edge values."""
    vector = np.frombuffer(rng.randbytes(svl_bytes), np.uint8).copy()
    letter = rng.choice("bhsd")
    lanes = vector.view(DTYPES[letter])
    bits = 8 * lanes.itemsize
    edges = (0, 1, 2, (1 << bits) - 1, 1 << (bits - 1), (1 << (bits - 1)) - 1,
             (1 << (bits - 1)) + 1, bits, bits - 1, bits + 1, (1 << bits) - bits)
    for lane in range(lanes.size):
        if rng.random() < 0.5:
            lanes[lane] = rng.choice(edges)
    return vector


def _predicate(rng: random.Random, svl_bytes: int) -> np.ndarray:
    bits = np.zeros(svl_bytes, np.uint8)
    style = rng.choice(("all", "none", "sparse", "random"))
    if style == "all":
        bits[:] = 1
    elif style == "sparse":
        bits[rng.randrange(8)::rng.choice((2, 4, 8, 16))] = 1
    elif style == "random":
        bits[:] = [rng.getrandbits(1) for _ in range(svl_bytes)]
    return np.packbits(bits, bitorder="little")


def _streaming_state(rng: random.Random, svl: int) -> ArchState:
    svl_bytes = svl // 8
    state = ArchState(svl=svl, svcr=1)
    state.z = np.stack([_edge_vector(rng, svl_bytes) for _ in range(32)])
    state.p = np.stack([_predicate(rng, svl_bytes) for _ in range(16)])
    return state


@pytest.mark.parametrize("svl, seed", [(128, 1), (256, 2), (512, 3), (2048, 4)])
def test_every_form_agrees_with_qemu(qemu, svl, seed):
    """One short program per form (three random instances), each from a fresh edge-value
    state; the final states must agree exactly."""
    rng = random.Random(seed)
    config = EngineConfig(max_svl=2048)
    differences = []
    for form in sve_int.FORMS:
        lines = [disassemble(random_instance(form, rng)).replace("\t", " ", 1)
                 for _ in range(3)]
        comparison = compare("\n".join(lines) + "\n", _streaming_state(rng, svl),
                             ["model", "qemu"], config)
        if not comparison.agree:
            differences.append((form.name, lines, comparison.difference))
    assert not differences, differences[:5]


@pytest.mark.parametrize("seed", [5, 6])
def test_campaign_of_integer_programs_agrees_with_qemu(qemu, seed):
    """Random 30-instruction programs of the class (and the predicate and DUP setup they
    meet in practice) at SVL 128 and 256."""
    weights = {op: 0 for op in OP_WEIGHTS if not op.startswith("int_")}
    weights.update(ptrue=2, dup_imm=1, dup_scalar=1, msr_svcr_imm=1)
    rng = random.Random(seed)
    for index in range(20):
        svl = (128, 256)[index % 2]
        program = generate_program(rng, svl, 30, weights=weights)
        comparison = compare(program.text, program.initial, ["model", "qemu"],
                             EngineConfig(max_svl=256))
        assert comparison.agree, (program.text, comparison.difference)


# --- directed values ------------------------------------------------------------------------

class Vectors:
    """A model at SVL 128 in streaming mode, with typed access to Z and P registers."""

    def __init__(self, svl: int = 128):
        self.model = ReferenceModel(EngineConfig(max_svl=svl), ArchState(svl=svl, svcr=1))

    def set(self, register: int, letter: str, values) -> None:
        lanes = self.model.state.z[register].view(DTYPES[letter])
        lanes[:] = [value & ((1 << (8 * lanes.itemsize)) - 1) for value in values]

    def get(self, register: int, letter: str, signed: bool = False) -> list[int]:
        view = self.model.state.z[register].view((SIGNED_DTYPES if signed else DTYPES)[letter])
        return [int(value) for value in view]

    def predicate(self, register: int, letter: str, active) -> None:
        """P<register> with element e of size ``letter`` active where ``active[e]``."""
        esize = np.dtype(DTYPES[letter]).itemsize
        bits = np.zeros(self.model.state.svl // 8, np.uint8)
        bits[::esize] = np.array(active, bool)
        self.model.state.p[register] = np.packbits(bits, bitorder="little")

    def run(self, *lines: str) -> None:
        for word in assemble("\n".join(lines)):
            assert self.model.execute(word).status.name == "OK"


def _repeat(values, count):
    return (list(values) * count)[:count]


def test_merging_predication_keeps_inactive_elements_of_the_destination():
    v = Vectors()
    v.set(0, "s", [10, 20, 30, 40])
    v.set(1, "s", [1, 2, 3, 4])
    v.set(2, "s", [-5, -6, -7, -8])
    v.predicate(0, "s", [1, 0, 0, 1])
    v.run("add z0.s, p0/m, z0.s, z1.s", "neg z1.s, p0/m, z2.s")
    assert v.get(0, "s") == [11, 20, 30, 44]
    assert v.get(1, "s", signed=True) == [5, 2, 3, 8]      # unary: inactive keep Zd, not Zn
    v.predicate(1, "s", [0, 0, 0, 0])
    v.run("subr z0.s, p1/m, z0.s, z1.s")
    assert v.get(0, "s") == [11, 20, 30, 44]


def test_division_by_zero_is_zero_and_int_min_by_minus_one_is_int_min():
    v = Vectors()
    int_min = -2**31
    v.set(0, "s", [7, -7, int_min, 5])
    v.set(1, "s", [2, 2, -1, 0])
    v.predicate(0, "s", [1, 1, 1, 1])
    v.run("sdiv z0.s, p0/m, z0.s, z1.s")
    assert v.get(0, "s", signed=True) == [3, -3, int_min, 0]
    v.set(2, "d", [2**64 - 1, 9])
    v.set(3, "d", [0, 4])
    v.run("udiv z2.d, p0/m, z2.d, z3.d")
    assert v.get(2, "d") == [0, 2]
    v.set(4, "s", [7, 0, -9, 100])
    v.set(5, "s", [3, 3, 2, 7])
    v.run("sdivr z4.s, p0/m, z4.s, z5.s")                  # Zm / Zdn
    assert v.get(4, "s", signed=True) == [0, 0, 0, 0]


def test_shifts_by_the_element_size_or_more():
    v = Vectors()
    v.predicate(0, "b", [1] * 16)
    v.set(0, "b", _repeat([0x81, 0x81, 0x81, 0x81], 16))
    v.set(1, "b", _repeat([7, 8, 9, 255], 16))
    v.set(2, "b", _repeat([0x81], 16))
    v.set(3, "b", _repeat([0x41], 16))
    v.run("lsl z0.b, p0/m, z0.b, z1.b", "asr z2.b, p0/m, z2.b, z1.b",
          "asr z3.b, p0/m, z3.b, z1.b")
    assert v.get(0, "b")[:4] == [0x80, 0, 0, 0]
    assert v.get(2, "b")[:4] == [0xFF, 0xFF, 0xFF, 0xFF]     # sign fill
    assert v.get(3, "b")[:4] == [0, 0, 0, 0]
    v.set(4, "b", _repeat([0x81], 16))
    v.set(5, "b", _repeat([0x81], 16))
    v.run("asr z4.b, z4.b, #8", "lsr z5.b, p0/m, z5.b, #8")
    assert v.get(4, "b")[0] == 0xFF and v.get(5, "b")[0] == 0


def test_wide_shifts_take_the_64_bit_element_of_the_same_lane():
    v = Vectors()
    v.predicate(0, "h", [1] * 8)
    v.set(0, "h", [0x8000] * 8)
    v.set(1, "d", [3, 2**63])                     # lane 0 by 3, lane 1 by 2^63
    v.run("asr z0.h, p0/m, z0.h, z1.d")
    assert v.get(0, "h") == [0xF000] * 4 + [0xFFFF] * 4
    v.set(2, "s", [1, 1, 1, 1])
    v.run("lsl z3.s, z2.s, z1.d")
    assert v.get(3, "s") == [8, 8, 0, 0]


def test_saturating_arithmetic():
    v = Vectors()
    v.set(0, "b", _repeat([100, -100, 5, -128], 16))
    v.set(1, "b", _repeat([100, -100, -10, 1], 16))
    v.set(2, "b", _repeat([200, 5, 0, 255], 16))
    v.set(3, "b", _repeat([100, 10, 1, 1], 16))
    v.run("sqadd z4.b, z0.b, z1.b", "uqadd z5.b, z2.b, z3.b", "uqsub z6.b, z2.b, z3.b",
          "sqsub z7.b, z1.b, z0.b")
    assert v.get(4, "b", signed=True)[:4] == [127, -128, -5, -127]
    assert v.get(5, "b")[:4] == [255, 15, 1, 255]
    assert v.get(6, "b")[:4] == [100, 0, 0, 254]
    assert v.get(7, "b", signed=True)[:4] == [0, 0, -15, 127]
    v.set(8, "h", [0x7000, -0x8000, 0, 1, 2, 3, 4, 5])
    v.run("sqadd z8.h, z8.h, #65280", "uqsub z9.s, z9.s, #1")
    assert v.get(8, "h", signed=True)[:3] == [32767, 32512, 32767]
    assert v.get(9, "s") == [0, 0, 0, 0]


def test_64_bit_high_products_and_doubling_multiplies():
    v = Vectors()
    v.predicate(0, "d", [1, 1])
    v.set(0, "d", [2**64 - 1, -2**63])
    v.set(1, "d", [2**64 - 1, -2**63])
    v.set(2, "d", [2**64 - 1, -2**63])
    v.run("umulh z0.d, p0/m, z0.d, z1.d", "smulh z2.d, p0/m, z2.d, z1.d")
    assert v.get(0, "d") == [2**64 - 2, (2**126) >> 64]
    assert v.get(2, "d", signed=True) == [0, 2**62]
    v.set(3, "h", [-0x8000, 0x4000, -0x4000, 3, 0, 0, 0, 0])
    v.set(4, "h", [-0x8000, 0x4000, 0x4000, 0x7FFF, 0, 0, 0, 0])
    v.run("sqdmulh z5.h, z3.h, z4.h", "sqrdmulh z6.h, z3.h, z4.h")
    assert v.get(5, "h", signed=True)[:4] == [32767, 0x2000, -0x2000, 2]
    assert v.get(6, "h", signed=True)[:4] == [32767, 0x2000, -0x2000, 3]


def test_sve2_shifts_by_vector_use_the_signed_element_and_round():
    v = Vectors()
    v.predicate(0, "s", [1] * 4)
    v.set(0, "s", [5, -5, 5, 1])
    v.set(1, "s", [-1, -1, 40, 0x100])            # 0x100: a left shift of 256, not of 0
    v.run("srshl z0.s, p0/m, z0.s, z1.s")
    assert v.get(0, "s", signed=True) == [3, -2, 0, 0]
    v.set(2, "b", _repeat([64, -65, 1, 3], 16))
    v.set(3, "b", _repeat([1, 1, -1, -1], 16))
    v.predicate(1, "b", [1] * 16)
    v.run("sqshl z2.b, p1/m, z2.b, z3.b")
    assert v.get(2, "b", signed=True)[:4] == [127, -128, 0, 1]
    v.set(4, "b", _repeat([3, 3, 200, 255], 16))
    v.run("urshr z4.b, p1/m, z4.b, #1", "asrd z5.s, p0/m, z5.s, #1")
    assert v.get(4, "b")[:4] == [2, 2, 100, 128]
    v.set(6, "s", [-7, 7, -1, 1])
    v.run("asrd z6.s, p0/m, z6.s, #1")                 # rounds toward zero
    assert v.get(6, "s", signed=True) == [-3, 3, 0, 0]


def test_saturating_extract_narrow_bottom_zeroes_and_top_keeps():
    v = Vectors()
    v.set(1, "h", [300, -300, 5, -1, 127, -128, 128, 0])
    v.set(0, "b", [0xAA] * 16)
    v.run("sqxtnb z0.b, z1.h")
    assert v.get(0, "b", signed=True) == [127, 0, -128, 0, 5, 0, -1, 0, 127, 0, -128, 0,
                                           127, 0, 0, 0]
    v.set(2, "b", [0xAA] * 16)
    v.run("sqxtunt z2.b, z1.h", "uqxtnb z3.b, z1.h")
    assert v.get(2, "b")[:8] == [0xAA, 255, 0xAA, 0, 0xAA, 5, 0xAA, 0]
    assert v.get(3, "b")[:8] == [255, 0, 255, 0, 5, 0, 255, 0]     # -300 is 0xFED4 unsigned


def test_shift_right_narrow_rounds_then_truncates_or_saturates():
    v = Vectors()
    v.set(1, "h", [0x1234, 0x0180, -0x0180, 0x7FFF, -0x8000, 0x00FF, 0x0001, 0x0100])
    v.set(0, "b", [0xAA] * 16)
    v.run("shrnb z2.b, z1.h, #4", "rshrnb z3.b, z1.h, #8", "sqshrnt z0.b, z1.h, #1",
          "sqrshrunb z4.b, z1.h, #1", "uqshrnb z5.b, z1.h, #1")
    assert v.get(2, "b")[0:16:2] == [0x23, 0x18, 0xE8, 0xFF, 0x00, 0x0F, 0x00, 0x10]
    assert v.get(3, "b")[0:16:2] == [0x12, 0x02, 0xFF, 0x80, 0x80, 0x01, 0x00, 0x01]
    assert v.get(0, "b", signed=True)[1:16:2] == [127, 127, -128, 127, -128, 127, 0, 127]
    assert v.get(0, "b")[0:16:2] == [0xAA] * 8                      # top keeps the even ones
    assert v.get(4, "b")[0:16:2] == [255, 192, 0, 255, 0, 128, 1, 128]
    assert v.get(4, "b")[1:16:2] == [0] * 8                         # bottom zeroes the odd ones
    assert v.get(5, "b")[0:16:2] == [255, 192, 255, 255, 255, 127, 0, 128]


def test_widening_takes_even_or_odd_narrow_elements():
    v = Vectors()
    v.set(1, "b", _repeat([-1, 100, 127, -128], 16))
    v.set(2, "b", _repeat([-1, 100, 127, -128], 16))
    v.run("saddlb z3.h, z1.b, z2.b", "uaddlt z4.h, z1.b, z2.b", "smullt z5.h, z1.b, z2.b",
          "usublb z6.h, z1.b, z2.b")
    assert v.get(3, "h", signed=True)[:2] == [-2, 254]              # even: -1+-1, 127+127
    assert v.get(4, "h")[:2] == [200, 256]                          # odd: 100+100, 128+128
    assert v.get(5, "h")[:2] == [10000, 16384]
    assert v.get(6, "h")[:2] == [0, 0]
    v.set(7, "s", [-2**31, 5, 1, 1])
    v.set(8, "d", [10, -2**63])
    v.run("sqdmullb z9.d, z7.s, z7.s", "ssubwt z10.d, z8.d, z7.s")
    assert v.get(9, "d", signed=True) == [2**63 - 1, 2]             # 2·(-2^31)² saturates
    assert v.get(10, "d", signed=True) == [10 - 5, 2**63 - 1]       # odd .S: 5, 1; wraps


def test_logical_immediates_and_dupm():
    v = Vectors()
    v.set(0, "s", [0x12345678] * 4)
    v.set(1, "s", [0x12345678] * 4)
    v.set(2, "s", [0x12345678] * 4)
    v.run("and z0.s, z0.s, #0xff", "bic z1.s, z1.s, #0xff", "eor z2.b, z2.b, #0x55",
          "mov z3.s, #0xff800000", "dupm z4.h, #0x1")
    assert v.get(0, "s") == [0x78] * 4
    assert v.get(1, "s") == [0x12345600] * 4
    assert v.get(2, "s") == [0x12345678 ^ 0x55555555] * 4
    assert v.get(3, "s") == [0xFF800000] * 4
    assert v.get(4, "h") == [1] * 8
    assert disassemble(assemble_line("bic z1.s, z1.s, #0xff")) == "and\tz1.s, z1.s, #0xffffff00"
    assert disassemble(assemble_line("orr z5.d, z6.d, z6.d")) == "mov\tz5.d, z6.d"


def test_multiply_add_operand_roles():
    v = Vectors()
    v.predicate(0, "s", [1, 1, 1, 0])
    v.set(0, "s", [1, 2, 3, 4])
    v.set(1, "s", [10, 10, 10, 10])
    v.set(2, "s", [100, 200, 300, 400])
    v.run("mla z0.s, p0/m, z1.s, z2.s")               # Zda + Zn * Zm
    assert v.get(0, "s") == [1001, 2002, 3003, 4]
    v.set(3, "s", [1, 2, 3, 4])
    v.run("mad z3.s, p0/m, z1.s, z2.s", "msb z1.s, p0/m, z1.s, z2.s")   # Za + Zdn * Zm
    assert v.get(3, "s") == [110, 220, 330, 4]
    assert v.get(1, "s", signed=True) == [0, 100, 200, 10]


def test_bit_counts_extends_and_absolute_values():
    v = Vectors()
    v.predicate(0, "b", [1] * 16)
    v.set(0, "b", _repeat([0, 0xFF, 0x01, 0x80, 0x3F], 16))
    v.run("cls z1.b, p0/m, z0.b", "clz z2.b, p0/m, z0.b", "cnt z3.b, p0/m, z0.b",
          "cnot z4.b, p0/m, z0.b", "not z5.b, p0/m, z0.b", "abs z6.b, p0/m, z0.b",
          "sqabs z7.b, p0/m, z0.b")
    assert v.get(1, "b")[:5] == [7, 7, 6, 0, 1]
    assert v.get(2, "b")[:5] == [8, 0, 7, 0, 2]
    assert v.get(3, "b")[:5] == [0, 8, 1, 1, 6]
    assert v.get(4, "b")[:5] == [1, 0, 0, 0, 0]
    assert v.get(5, "b")[:5] == [0xFF, 0, 0xFE, 0x7F, 0xC0]
    assert v.get(6, "b")[:5] == [0, 1, 1, 0x80, 0x3F]       # ABS(INT_MIN) wraps
    assert v.get(7, "b")[:5] == [0, 1, 1, 0x7F, 0x3F]       # SQABS saturates
    v.set(10, "h", [0x1280, 0x347F, 0, 0, 0, 0, 0, 0])
    v.set(11, "s", [0x12348000, 0x56787FFF, 0, 0])
    v.run("sxtb z12.h, p0/m, z10.h", "uxtb z13.h, p0/m, z10.h", "sxth z14.s, p0/m, z11.s",
          "uxth z15.s, p0/m, z11.s")
    assert v.get(12, "h")[:2] == [0xFF80, 0x007F]
    assert v.get(13, "h")[:2] == [0x0080, 0x007F]
    assert v.get(14, "s")[:2] == [0xFFFF8000, 0x7FFF]
    assert v.get(15, "s")[:2] == [0x8000, 0x7FFF]


# --- logical immediates that ignore bits of immr ----------------------------------------------

def test_logical_immediates_ignore_immr_bits_above_the_element_size():
    """``immr`` bits at or above the element size do not change the immediate: such words are
    valid, execute as the canonical word and print as objdump prints them."""
    need_tool("objdump")
    words, canonical = [], []
    for name in ("AND_ZZI_BHS", "ORR_ZZI_BHS", "EOR_ZZI_BHS", "DUPM_BHS"):
        form = FORMS_BY_NAME[name]
        for imms, element_bits in ((0b000111, 32), (0b100011, 16), (0b110001, 8), (0b111001, 4),
                                   (0b111100, 2)):
            base = form.encode(immr=1, imms=imms, **{form.fields[-1].name: 3})
            for high in range(1, 64 // element_bits):
                words.append(base | (high * element_bits) << 11)
                canonical.append(base)
    assert all(decode(word) is not None for word in words)
    assert [disassemble(word) for word in words] == gnu_disassemble(words)
    assert [disassemble(word) for word in words] == [disassemble(word) for word in canonical]
    for word, reference in zip(words, canonical):
        states = []
        for executed in (word, reference):
            v = Vectors()
            v.set(3, "d", [0x0123456789ABCDEF, 0xFEDCBA9876543210])
            assert v.model.execute(executed).status.name == "OK"
            states.append(v.get(3, "d"))
        assert states[0] == states[1]


# --- a QEMU divergence ----------------------------------------------------------------------

@pytest.mark.parametrize("text, top", [("uqxtnb z0.s, z1.d", 0), ("uqxtnt z0.s, z1.d", 1)])
def test_qemu_saturates_uqxtn_of_large_d_elements_to_zero_at_svl_2048(qemu, text, top):
    """docs/divergences.md, "qemu-uqxtn-d-signed": the architecture saturates 2^63 and more to
    0xFFFFFFFF; QEMU's helper (256-byte vectors only) writes 0. The comparison models it."""
    from zatile.sw.backends import run_program

    sources = [2**64 - 1, 2**63, 2**63 - 1, 5]
    for svl, quirk in ((1024, False), (2048, True)):
        state = ArchState(svl=svl, svcr=1)
        state.z[1].view(np.uint64)[:] = _repeat(sources, svl // 64)
        decoded = decode(assemble_line(text))
        assert (divergences.triggered(decoded, state) == ["qemu-uqxtn-d-signed"]) == quirk
        config = EngineConfig(max_svl=2048)
        model = run_program("model", text + "\n", state, config).final.z[0].view(np.uint32)
        qemu_result = run_program("qemu", text + "\n", state, config).final.z[0].view(np.uint32)
        assert list(model[top:8:2]) == [0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 5]
        assert list(qemu_result[top:8:2]) == ([0, 0] if quirk else [0xFFFFFFFF] * 2) \
            + [0xFFFFFFFF, 5]
        comparison = compare(text + "\n", state, ["model", "qemu"], config)
        assert comparison.agree, comparison.difference
        assert ("qemu-uqxtn-d-signed" in comparison.divergences) == quirk
