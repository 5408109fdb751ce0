"""Streaming-SVE floating point (sw/arch/isa/sve_fp.py, sim/model/sve_fp.py) and the exact
reference with exceptions it applies (:class:`zatile.sim.fpref.FPArith`).

* Semantics against QEMU 10: every form of the class, random operands, at several SVLs, on
  states full of floating-point specials (NaNs quiet and signalling, infinities, zeros,
  denormals, max normal, one, values whose sums and products tie) under random predicates, in
  every rounding mode with FZ, FZ16, DN and AHP set at random, FPSR starting at 0 or at random
  cumulative bits and compared exactly; and a small campaign of random programs of the class.
* Directed values worked out by hand (docs/isa.md, "Streaming SVE floating point"): the
  pairwise FADDV tree, merging predication and the flags of active elements only, compares
  writing zeroing predicates without touching NZCV, multiply-add negations, FPSR plumbing.
* The reference on values worked out by hand: each exception of ``FPProcessException`` where
  the Arm ARM raises it (docs/isa.md, "Floating-point exceptions"), NaN propagation, FZ/FZ16
  flushing, correctly rounded division and square root, the conversions.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from zatile.sim.fpref import BF16, FP16, FP32, FP64, FPArith, FPRounding
from zatile.sw.arch.pseudocode import recip_estimate_table, rsqrt_estimate_table
from zatile.sim.model import ReferenceModel
from zatile.sim.progen import OP_WEIGHTS, generate_program
from zatile.sim.state import ArchState
from zatile.sw.arch.asm import AsmError, assemble, disassemble
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.constants import FPSR_CUMULATIVE, FpsrFlag
from zatile.sw.arch.isa import sve_fp
from zatile.sw.backends import compare
from tests.test_isa import random_instance

IOC, DZC, OFC, UFC, IXC, IDC = (FpsrFlag.IOC, FpsrFlag.DZC, FpsrFlag.OFC, FpsrFlag.UFC,
                                FpsrFlag.IXC, FpsrFlag.IDC)
FZ, FZ16, DN, AHP = 1 << 24, 1 << 19, 1 << 25, 1 << 26
ONE, TWO, MAX, MIN_NORMAL = 0x3F800000, 0x40000000, 0x7F7FFFFF, 0x00800000
QNAN, SNAN, INF = 0x7FC00001, 0x7F800001, 0x7F800000


def _run(method: str, *args, fpcr: int = 0):
    arith = FPArith(fpcr)
    return getattr(arith, method)(*args), arith.flags


# --- the exact reference ----------------------------------------------------------------------

@pytest.mark.parametrize("method, args, fpcr, result, flags", [
    ("div", (ONE, 0, FP32), 0, INF, DZC),                        # 1/0
    ("div", (0, 0, FP32), 0, 0x7FC00000, IOC),                    # 0/0
    ("div", (INF, 0, FP32), 0, INF, 0),                           # inf/0: no DZC
    ("div", (ONE, 0x40400000, FP32), 0, 0x3EAAAAAB, IXC),         # 1/3 rounds up
    ("div", (ONE, 0x40400000, FP32), 3 << 22, 0x3EAAAAAA, IXC),   # toward zero
    ("mul", (MAX, TWO, FP32), 0, INF, OFC | IXC),
    ("mul", (MAX, TWO, FP32), 3 << 22, MAX, OFC | IXC),           # toward zero: max normal
    ("mul", (MIN_NORMAL, 0x3F000001, FP32), 0, 0x00400000, UFC | IXC),   # tiny and inexact
    ("mul", (MIN_NORMAL, 0x3F000000, FP32), 0, 0x00400000, 0),    # tiny but exact: no UFC
    ("mul", (MIN_NORMAL, 0x3F000000, FP32), FZ, 0, UFC),          # flushed: UFC, not IXC
    ("mul", (0x007FFFFF, ONE, FP32), FZ, 0, IDC),                 # input flushed: IDC
    ("mul", (0x03FF, 0x3C00, FP16), FZ16, 0, 0),                  # FZ16 input flush: no IDC
    ("mul", (0x0400, 0x3800, FP16), FZ16, 0, UFC),                # FZ16 output flush: UFC
    ("mul", (INF, 0, FP32), 0, 0x7FC00000, IOC),                  # inf * 0
    ("mul", (INF, 0, FP32, True), 0, TWO, 0),                     # FMULX: 2.0
    ("add", (SNAN, QNAN, FP32), 0, 0x7FC00001, IOC),              # sNaN first, quietened
    ("add", (QNAN, SNAN, FP32), 0, 0x7FC00001, IOC),              # a sNaN wins over a qNaN
    ("add", (QNAN | 0x80000000, ONE, FP32), 0, 0xFFC00001, 0),    # payload and sign kept
    ("add", (QNAN, ONE, FP32), DN, 0x7FC00000, 0),                # DN: default NaN
    ("add", (INF, INF | 1 << 31, FP32), 0, 0x7FC00000, IOC),      # inf - inf
    ("add", (ONE, ONE | 1 << 31, FP32), 2 << 22, 0x80000000, 0),  # exact zero toward -inf
    ("add", (ONE, QNAN | 1 << 31, FP32, True), 0, 0xFFC00001, 0), # FSUB: a NaN op2 keeps its sign
    ("mul_add", (QNAN, INF, 0, FP32), 0, 0x7FC00000, IOC),        # qNaN + inf*0 is invalid
    ("mul_add", (ONE, 0x3F800001, 0x3F7FFFFF, FP32), 0, TWO, IXC),    # one rounding
    ("sqrt", (TWO, FP32), 0, 0x3FB504F3, IXC),
    ("sqrt", (0x40800000, FP32), 0, TWO, 0),
    ("sqrt", (0xBF800000, FP32), 0, 0x7FC00000, IOC),
    ("sqrt", (0x80000000, FP32), 0, 0x80000000, 0),               # sqrt(-0) = -0
    ("max", (0, 0x80000000, FP32), 0, 0, 0),                      # +0 above -0
    ("max", (0, 0x80000000, FP32, True), 0, 0x80000000, 0),
    ("max", (QNAN, ONE, FP32), 0, QNAN, 0),                       # FMAX propagates
    ("max_num", (QNAN, ONE, FP32), 0, ONE, 0),                    # FMAXNM: the number
    ("max_num", (SNAN, ONE, FP32), 0, 0x7FC00001, IOC),           # but not past a sNaN
    ("round_int", (0x3FC00000, FP32, FPRounding.TIEEVEN, False), 0, TWO, 0),
    ("round_int", (0x40200000, FP32, FPRounding.TIEEVEN, True), 0, TWO, IXC),   # FRINTX 2.5
    ("round_int", (0x40200000, FP32, FPRounding.TIEAWAY, False), 0, 0x40400000, 0),
    ("round_int", (0xBF000000, FP32, FPRounding.POSINF, False), 0, 0x80000000, 0),  # -0
    ("convert", (0x7FF0000000000001, FP64, FP32), 0, 0x7FC00000, IOC),
    ("convert", (0x7FF8000000000000 | 0xABC << 29, FP64, FP32), 0, 0x7FC00ABC, 0),
    ("convert", (0x7FFF, FP16, FP32), 0, 0x7FFFE000, 0),
    ("convert", (0x0001, FP16, FP32), FZ | FZ16, 0x33800000, 0),  # fp16 inputs never flush
    ("convert", (0x477FF000, FP32, FP16), 0, 0x7C00, OFC | IXC),  # 65520 rounds to inf
    ("convert", (0x7C00, FP16, FP32), 1 << 26, 0x47800000, 0),    # AHP: 2^16
    ("convert", (0x7F800000, FP32, FP16), 1 << 26, 0x7FFF, IOC),  # AHP: inf saturates
    ("convert", (0x7C00, FP16, FP32, None, True), 1 << 26, INF, 0),   # SVE: AHP ignored
    ("convert", (0x3FF0000000400000, FP64, FP32, FPRounding.ODD), 0, 0x3F800001, IXC),
    ("convert", (0x3FF0000030000000, FP64, FP32, FPRounding.ODD), 0, 0x3F800001, IXC),
    ("convert", (0x7FEFFFFFFFFFFFFF, FP64, FP32, FPRounding.ODD), 0, MAX, OFC | IXC),
    ("convert_bf16", (0x3F808000,), 0, 0x3F80, IXC),              # tie to even
    ("convert_bf16", (0x3F818000,), 0, 0x3F82, IXC),
    ("convert_bf16", (0x7F800001,), 0, 0x7FC0, IOC),
    ("from_integer", (2 ** 64 - 1, FP32), 0, 0x5F800000, IXC),
    ("from_integer", (65520, FP16), 0, 0x7C00, OFC | IXC),
    ("to_integer", (0x4F000000, FP32, 32, False), 0, 2 ** 31 - 1, IOC),   # 2^31 saturates
    ("to_integer", (QNAN, FP32, 32, False), 0, 0, IOC),
    ("to_integer", (0xBFC00000, FP32, 32, False), 0, -1, IXC),    # -1.5 toward zero
    ("to_integer", (0xBFC00000, FP32, 32, True), 0, 0, IOC),      # unsigned: saturates to 0
    ("to_integer", (0xBF000000, FP32, 32, True), 0, 0, IXC),      # -0.5 -> 0 is in range
    ("to_integer", (0x7C00, FP16, 64, False), 0, 2 ** 63 - 1, IOC),   # half inf is beyond 2^64
    ("to_integer", (0xFC00, FP16, 64, True), 0, 0, IOC),
    ("recip_estimate", (ONE, FP32), 0, 0x3F7F8000, 0),           # 511/512: table entry 256
    ("recip_estimate", (TWO, FP32), 0, 0x3EFF8000, 0),
    ("recip_estimate", (0x00400000, FP32), 0, 0x7EFF8000, 0),     # 2^-127 (denormal): 2^127
    ("recip_estimate", (0x80000001, FP32), 0, INF | 1 << 31, OFC | IXC),   # below 2^-128
    ("recip_estimate", (0x80000001, FP32), 3 << 22, MAX | 1 << 31, OFC | IXC),
    ("recip_estimate", (0x7E800000, FP32), FZ, 0, UFC),           # 2^126 with FZ: flushed
    ("recip_estimate", (0x7E800000, FP32), 0, 0x007FC000, 0),     # ... else a denormal
    ("recip_estimate", (0, FP32), 0, INF, DZC),
    ("recip_estimate", (0x3C00, FP16), 0, 0x3BFC, 0),
    ("rsqrt_estimate", (ONE, FP32), 0, 0x3F7F8000, 0),            # odd exponent: 0.25 scale
    ("rsqrt_estimate", (TWO, FP32), 0, 0x3F348000, 0),            # 361/512 ~ 1/sqrt(2)
    ("rsqrt_estimate", (0x40800000, FP32), 0, 0x3EFF8000, 0),     # 4.0
    ("rsqrt_estimate", (0xBF800000, FP32), 0, 0x7FC00000, IOC),   # negative
    ("rsqrt_estimate", (0x80000000, FP32), 0, INF | 1 << 31, DZC),    # -0
    ("rsqrt_estimate", (1, FP32), 0, 0x64B48000, 0),              # 2^-149: 2^74.5
    ("recip_step", (0x3FC00000, 0x3F000000, FP32), 0, 0x3FA00000, 0),  # 2 - 1.5 * 0.5
    ("recip_step", (INF, 0, FP32), 0, TWO, 0),                    # inf * 0: 2.0, valid
    ("recip_step", (QNAN, ONE, FP32), 0, QNAN | 1 << 31, 0),      # op1 negated, NaN too
    ("rsqrt_step", (ONE, ONE, FP32), 0, ONE, 0),                  # (3 - 1) / 2
    ("rsqrt_step", (0, INF, FP32), 0, 0x3FC00000, 0),             # inf * 0: 1.5
    ("rsqrt_step", (0x40400000, ONE, FP32), 2 << 22, 0x80000000, 0),  # exact 0 toward -inf
    ("recip_exponent", (0x3FC00000, FP32), 0, TWO, 0),            # exponent inverted
    ("recip_exponent", (0x00000001, FP32), FZ, 0x7F000000, IDC),  # denormal: max exponent
    ("recip_exponent", (INF | 1 << 31, FP32), 0, 0x80000000, 0),
    ("recip_exponent", (SNAN, FP32), 0, 0x7FC00001, IOC),
    ("scale", (ONE, 2 ** 62, FP32), 0, INF, OFC | IXC),
    ("scale", (ONE, -149, FP32), 0, 1, 0),
])
def test_the_reference_raises_the_exceptions_of_the_pseudocode(method, args, fpcr, result,
                                                               flags):
    assert _run(method, *args, fpcr=fpcr) == (result, flags)


@pytest.mark.parametrize("condition, operands, expected, flags", [
    ("eq", (QNAN, QNAN), False, 0), ("eq", (SNAN, ONE), False, IOC),
    ("ne", (QNAN, ONE), True, 0), ("un", (QNAN, ONE), True, 0), ("un", (ONE, SNAN), True, IOC),
    ("ge", (QNAN, ONE), False, IOC), ("gt", (ONE, 0), True, 0),
    ("eq", (0, 0x80000000), True, 0), ("ge", (INF, MAX), True, 0),
])
def test_comparisons_raise_invalid_for_signalling_nans_and_ordered_ones_for_any(
        condition, operands, expected, flags):
    assert _run("compare", *operands, FP32, condition) == (expected, flags)


def test_bfloat16_rounding_uses_fz_not_fz16():
    assert _run("convert_bf16", 0x00400000, fpcr=FZ) == (0, IDC)
    assert _run("convert_bf16", 0x00400000, fpcr=FZ16) == (0x0040, 0)
    assert BF16.minimum_exp == -126 and FP64.minimum_exp == -1022


# --- random states for the comparison with QEMU ---------------------------------------------

DTYPES = {2: np.uint16, 4: np.uint32, 8: np.uint64}
FORMATS = {2: FP16, 4: FP32, 8: FP64}


def _specials(fmt) -> list[int]:
    """Bit patterns worth hitting, both signs: zero, denormals, the smallest normal, one and
    its neighbours, 1.5, 2, the largest normal, infinity, quiet and signalling NaNs with
    payloads, halves of the smallest denormal's neighbours (ties when summed), and the
    limits of the integer conversions (2^15, 2^16, 2^31, ... and the values just below)."""
    F, bias = fmt.fraction_bits, fmt.bias
    one = bias << F
    magnitudes = [0, 1, 2, 3, 2 ** F - 1, 2 ** F, 2 ** F + 1, one, one + 1, one - 1,
                  one | 1 << (F - 1), (bias + 1) << F, (bias - 1) << F | 1 << (F - 1),
                  (2 ** fmt.exponent_bits - 2) << F | (2 ** F - 1),
                  (2 ** fmt.exponent_bits - 2) << F, (bias + F) << F | 1, (bias + F + 1) << F,
                  (2 ** fmt.exponent_bits - 1) << F, (2 ** fmt.exponent_bits - 1) << F | 1,
                  (2 ** fmt.exponent_bits - 1) << F | 1 << (F - 1) | 5]
    magnitudes += [(bias + power) << F | below * (2 ** F - 1) for power in (15, 16, 31, 32, 63, 64)
                   for below in (0, 1) if bias + power < 2 ** fmt.exponent_bits - 1]
    return [sign << (fmt.width - 1) | magnitude for sign in (0, 1) for magnitude in magnitudes]


def _integers(bits: int) -> list[int]:
    """Integers worth converting, as ``bits``-bit patterns: small ones of both signs, the
    extremes, and values that round (2^k + 1 beyond a format's precision, odd halves)."""
    values = [0, 1, -1, 2, 3, -7, 100, 2 ** (bits - 1) - 1, -2 ** (bits - 1), 2 ** bits - 1,
              2 ** 11 + 1, 2 ** 24 + 1, 2 ** 24 + 3, 2 ** 53 + 1, 65504, 65520, 65519]
    return [value & (2 ** bits - 1) for value in values]


def _fp_vector(rng: random.Random, svl_bytes: int) -> np.ndarray:
    """Random bytes with most elements (of a random size) specials or values near one."""
    vector = np.frombuffer(rng.randbytes(svl_bytes), np.uint8).copy()
    esize = rng.choice((2, 4, 8))
    lanes = vector.view(DTYPES[esize])
    fmt = FORMATS[esize]
    specials = _specials(fmt)
    for lane in range(lanes.size):
        roll = rng.random()
        if roll < 0.5:
            lanes[lane] = rng.choice(specials)
        elif roll < 0.75:
            lanes[lane] = (rng.randrange(fmt.bias - 3, fmt.bias + 4) << fmt.fraction_bits
                           | rng.getrandbits(3) << (fmt.fraction_bits - 3)
                           | rng.getrandbits(1) << (fmt.width - 1))
        elif roll < 0.85:
            lanes[lane] = rng.choice(_integers(fmt.width))
    return vector


def _predicate(rng: random.Random, svl_bytes: int) -> np.ndarray:
    bits = np.zeros(svl_bytes, np.uint8)
    style = rng.choice(("all", "all", "none", "sparse", "random"))
    if style == "all":
        bits[:] = 1
    elif style == "sparse":
        bits[rng.randrange(8)::rng.choice((2, 4, 8, 16))] = 1
    elif style == "random":
        bits[:] = [rng.getrandbits(1) for _ in range(svl_bytes)]
    return np.packbits(bits, bitorder="little")


def _fp_state(rng: random.Random, svl: int) -> ArchState:
    svl_bytes = svl // 8
    state = ArchState(svl=svl, svcr=1)
    state.z = np.stack([_fp_vector(rng, svl_bytes) for _ in range(32)])
    state.p = np.stack([_predicate(rng, svl_bytes) for _ in range(16)])
    state.fpcr = rng.randrange(4) << 22 | rng.getrandbits(1) * FZ | rng.getrandbits(1) * FZ16 \
        | rng.getrandbits(1) * DN | rng.getrandbits(1) * AHP
    state.fpsr = rng.choice((0, rng.getrandbits(8) & FPSR_CUMULATIVE))
    return state


@pytest.mark.parametrize("svl, seed", [(128, 1), (256, 2), (512, 3), (2048, 4)])
def test_every_form_agrees_with_qemu(qemu, svl, seed):
    """One short program per form (three random instances), each from a fresh specials state
    with a random FPCR and FPSR; the final states, FPSR included, must agree exactly."""
    rng = random.Random(seed)
    config = EngineConfig(max_svl=2048)
    differences = []
    for form in sve_fp.FORMS:
        lines = [disassemble(random_instance(form, rng)).replace("\t", " ", 1)
                 for _ in range(3)]
        comparison = compare("\n".join(lines) + "\n", _fp_state(rng, svl),
                             ["model", "qemu"], config)
        if not comparison.agree:
            differences.append((form.name, lines, comparison.difference))
    assert not differences, differences[:5]


@pytest.mark.parametrize("seed", [5, 6])
def test_campaign_of_floating_point_programs_agrees_with_qemu(qemu, seed):
    """Random 30-instruction programs of the class (and the predicate and DUP setup they
    meet in practice) at SVL 128 and 256, with the generator's FP specials and FPCRs."""
    weights = {op: 0 for op in OP_WEIGHTS if not op.startswith("fp_")}
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

    def __init__(self, fpcr: int = 0):
        self.model = ReferenceModel(EngineConfig(max_svl=128), ArchState(svl=128, svcr=1))
        self.model.state.fpcr = fpcr

    def set(self, register: int, esize: int, values) -> None:
        self.model.state.z[register].view(DTYPES[esize])[:] = values

    def get(self, register: int, esize: int) -> list[int]:
        return [int(value) for value in self.model.state.z[register].view(DTYPES[esize])]

    def predicate(self, register: int, esize: int, active) -> None:
        bits = np.zeros(16, np.uint8)
        bits[::esize] = np.array(active, bool)
        self.model.state.p[register] = np.packbits(bits, bitorder="little")

    def run(self, line: str):
        result = self.model.execute(assemble(line)[0])
        assert result.status.name == "OK"
        return result


def test_faddv_is_a_pairwise_tree_not_a_sequential_sum():
    """(1 + 2^24) + (1 - 2^24) = 2^24 - (2^24 - 1) = 1, where a left-to-right sum rounds
    1 + 2^24 to 2^24 twice and ends at 0."""
    v = Vectors()
    v.set(1, 4, [ONE, 0x4B800000, ONE, 0xCB800000])
    v.predicate(0, 4, [1, 1, 1, 1])
    v.set(2, 4, [0xFFFFFFFF] * 4)
    result = v.run("faddv s2, p0, z1.s")
    assert v.get(2, 4) == [ONE, 0, 0, 0]                  # the rest of Zd is zeroed
    assert result.fpsr_flags == IXC and v.model.state.fpsr == IXC
    v.predicate(0, 4, [0, 1, 0, 0])                       # inactive elements count as +0
    v.run("faddv s2, p0, z1.s")
    assert v.get(2, 4)[0] == 0x4B800000


def test_merging_predication_and_flags_of_active_elements_only():
    v = Vectors()
    v.set(0, 4, [ONE, ONE, ONE, ONE])
    v.set(1, 4, [0, 0, SNAN, TWO])
    v.predicate(0, 4, [1, 0, 0, 1])
    result = v.run("fdiv z0.s, p0/m, z0.s, z1.s")
    assert v.get(0, 4) == [INF, ONE, ONE, 0x3F000000]
    assert result.fpsr_flags == DZC                       # the sNaN element is inactive
    v.model.state.fpsr = IOC | IXC
    result = v.run("fabs z2.s, p0/m, z1.s")
    assert result.fpsr_flags is None and v.model.state.fpsr == IOC | IXC    # cumulative


def test_compares_write_a_zeroing_predicate_and_leave_nzcv_alone():
    v = Vectors()
    v.model.state.nzcv = 0b1010
    v.set(1, 4, [ONE, QNAN, 0x80000000, TWO])
    v.set(2, 4, [ONE, ONE, 0, ONE])
    v.predicate(0, 4, [1, 1, 1, 0])
    result = v.run("fcmeq p1.s, p0/z, z1.s, z2.s")
    assert np.unpackbits(v.model.state.p[1], bitorder="little")[::4].tolist() == [1, 0, 1, 0]
    assert result.nzcv is None and v.model.state.nzcv == 0b1010 and result.fpsr_flags == 0
    result = v.run("fcmlt p2.s, p0/z, z1.s, #0.0")        # a quiet NaN: IOC for LT
    assert np.unpackbits(v.model.state.p[2], bitorder="little")[::4].tolist() == [0, 0, 0, 0]
    assert result.fpsr_flags == IOC
    assert disassemble(assemble("fcmle p3.s, p0/z, z1.s, z2.s")[0]) \
        == "fcmge\tp3.s, p0/z, z2.s, z1.s"


def test_multiply_add_negations_and_operand_roles():
    v = Vectors()
    v.predicate(0, 4, [1, 1, 1, 1])
    three, five = 0x40400000, 0x40A00000
    for line, expected in (("fmla z0.s, p0/m, z1.s, z2.s", 0x40E00000),     # 1 + 2*3 = 7
                           ("fmls z0.s, p0/m, z1.s, z2.s", 0xC0A00000),     # 1 - 6 = -5
                           ("fnmla z0.s, p0/m, z1.s, z2.s", 0xC0E00000),    # -1 - 6 = -7
                           ("fnmls z0.s, p0/m, z1.s, z2.s", five)):         # -1 + 6 = 5
        v.set(0, 4, [ONE] * 4)
        v.set(1, 4, [TWO] * 4)
        v.set(2, 4, [three] * 4)
        v.run(line)
        assert v.get(0, 4)[0] == expected, line
    v.set(0, 4, [TWO] * 4)
    v.run("fmsb z0.s, p0/m, z2.s, z1.s")                  # Za - Zdn*Zm = 2 - 2*3 = -4
    assert v.get(0, 4)[0] == 0xC0800000
    v.set(3, 4, [QNAN] * 4)
    v.run("fmls z3.s, p0/m, z3.s, z3.s")                  # FPNeg flips the multiplicand NaN,
    assert v.get(3, 4)[0] == QNAN                         # but the addend NaN wins


def test_the_straight_line_cpu_ors_the_raised_flags_into_fpsr():
    from zatile.sim.engine import ModelEngine
    from zatile.sim.straight_line import execute_program

    engine = ModelEngine(EngineConfig(max_svl=128))
    engine.sme_enabled = True
    engine.issue(assemble("smstart sm")[0])
    engine.fpsr = IDC
    words = assemble("ptrue p0.s\nfdiv z1.s, p0/m, z1.s, z1.s\n")
    results, *_ = execute_program(engine, words, [0] * 31, 0)
    assert results[-1].fpsr_flags == IOC                  # 0/0
    assert engine.fpsr == IDC | IOC


def _assert_lanes(v: Vectors, register: int, esize: int, expected) -> None:
    assert [hex(value) for value in v.get(register, esize)] == [hex(value) for value in expected]


def test_fcvt_zero_extends_merges_and_ignores_ahp():
    """FPConvertSVE clears AHP: 65520 overflows to infinity (OFC|IXC) and infinity stays
    infinity, where the alternative format would give 0x7BFF+ and 0x7FFF with IOC."""
    v = Vectors(fpcr=AHP)
    v.set(1, 4, [ONE, 0x477FF000, INF, 0x33800000])
    v.set(0, 4, [0xFFFFFFFF] * 4)
    v.predicate(0, 4, [1, 1, 1, 0])
    result = v.run("fcvt z0.h, p0/m, z1.s")
    _assert_lanes(v, 0, 4, [0x3C00, 0x7C00, 0x7C00, 0xFFFFFFFF])
    assert result.fpsr_flags == OFC | IXC
    v.set(3, 8, [0xFFFFFFFFFFFF3C00, 0x7C01])             # 1.0, a signalling NaN (half)
    v.predicate(0, 8, [1, 1])
    result = v.run("fcvt z2.d, p0/m, z3.h")
    _assert_lanes(v, 2, 8, [0x3FF0000000000000, 0x7FF8040000000000])    # payload kept on top
    assert result.fpsr_flags == IOC


def test_integer_conversions_read_and_write_the_low_part_of_each_container():
    v = Vectors()
    v.predicate(0, 8, [1, 1])
    v.set(1, 8, [0x12345678FFFFFFFF, 0x80000000])         # int32 -1 and -2^31 (or 2^32-1, 2^31)
    v.run("scvtf z0.d, p0/m, z1.s")
    _assert_lanes(v, 0, 8, [0xBFF0000000000000, 0xC1E0000000000000])
    v.run("ucvtf z0.d, p0/m, z1.s")
    _assert_lanes(v, 0, 8, [0x41EFFFFFFFE00000, 0x41E0000000000000])
    v.set(1, 8, [65519, 1 << 20])                         # 65504 + 15 rounds down; 2^20 overflows
    result = v.run("scvtf z0.h, p0/m, z1.d")
    _assert_lanes(v, 0, 8, [0x7BFF, 0x7C00])
    assert result.fpsr_flags == OFC | IXC
    v.set(1, 8, [0x7C00, 0xFC00])                         # half +inf and -inf
    result = v.run("fcvtzs z0.d, p0/m, z1.h")
    _assert_lanes(v, 0, 8, [2 ** 63 - 1, 2 ** 63])
    assert result.fpsr_flags == IOC
    v.set(1, 8, [0xBFF8000000000000, 0x41E0000000000000])   # -1.5 and 2^31
    result = v.run("fcvtzs z0.s, p0/m, z1.d")             # int32 results, sign-extended
    _assert_lanes(v, 0, 8, [2 ** 64 - 1, 0x7FFFFFFF])
    assert result.fpsr_flags == IOC | IXC
    result = v.run("fcvtzu z0.s, p0/m, z1.d")
    _assert_lanes(v, 0, 8, [0, 0x80000000])
    assert result.fpsr_flags == IOC                       # -1.5 saturates: IOC, not IXC


def test_fcvtx_rounds_to_odd_and_the_top_forms_use_the_odd_halves():
    v = Vectors()
    v.predicate(0, 8, [1, 1])
    v.set(1, 8, [0x3FF0000000400000, 0x3FF0000030000000])   # 1 + 2^-30, 1 + 3 * 2^-24
    result = v.run("fcvtx z0.s, p0/m, z1.d")              # nearest would give 1.0, 1 + 2^-22
    _assert_lanes(v, 0, 8, [0x3F800001, 0x3F800001])
    assert result.fpsr_flags == IXC
    v.set(0, 4, [0xAAAAAAAA] * 4)
    v.set(1, 8, [0x3FF0000000000000, 0x4000000000000000])   # 1.0, 2.0
    v.predicate(0, 8, [0, 1])
    v.run("fcvtnt z0.s, p0/m, z1.d")
    _assert_lanes(v, 0, 4, [0xAAAAAAAA, 0xAAAAAAAA, 0xAAAAAAAA, TWO])
    v.predicate(0, 8, [1, 1])
    v.run("fcvtxnt z0.s, p0/m, z1.d")
    _assert_lanes(v, 0, 4, [0xAAAAAAAA, ONE, 0xAAAAAAAA, TWO])
    v.set(2, 8, [0] * 2)
    v.run("fcvtlt z2.d, p0/m, z0.s")                      # the odd singles, widened
    _assert_lanes(v, 2, 8, [0x3FF0000000000000, 0x4000000000000000])
    v.set(3, 4, [0x3F808000, 0x3F818000, 0, 0])
    v.set(4, 2, [0x1111] * 8)
    v.predicate(0, 4, [1, 1, 0, 0])
    result = v.run("bfcvtnt z4.h, p0/m, z3.s")            # ties to even
    _assert_lanes(v, 4, 2, [0x1111, 0x3F80, 0x1111, 0x3F82] + [0x1111] * 4)
    assert result.fpsr_flags == IXC


def test_fmov_immediates_expand_imm8_and_print_as_objdump_does():
    v = Vectors()
    for letter, esize, expected in (("h", 2, 0xBFC0), ("s", 4, 0xBFF80000),
                                    ("d", 8, 0xBFFF000000000000)):
        result = v.run(f"fmov z0.{letter}, #-1.9375")       # -(16 + 15)/16 * 2^0
        _assert_lanes(v, 0, esize, [expected] * (16 // esize))
        assert result.fpsr_flags is None
    v.set(1, 4, [0] * 4)
    v.predicate(2, 4, [1, 0, 1, 0])
    v.run("fmov z1.s, p2/m, #0.125")                      # FCPY merges
    _assert_lanes(v, 1, 4, [0x3E000000, 0, 0x3E000000, 0])
    assert disassemble(assemble("fdup z3.d, #31")[0]) \
        == "fmov\tz3.d, #3.100000000000000000e+01"
    assert disassemble(assemble("fcpy z3.h, p15/m, #-0.25")[0]) \
        == "fmov\tz3.h, p15/m, #-2.500000000000000000e-01"
    assert disassemble(assemble("fmov z3.s, #0.0")[0]) == "mov\tz3.s, #0"   # DUP #0
    with pytest.raises(AsmError, match="8-bit floating-point immediate"):
        assemble("fmov z3.s, #0.1")


def test_estimate_tables_are_the_pseudocodes():
    """RecipEstimate and RecipSqrtEstimate at their ends and against the exact values: each
    entry is the reciprocal (square root) of the middle of its input step, to 1/256."""
    assert (recip_estimate_table(256), recip_estimate_table(511)) == (511, 256)
    assert (rsqrt_estimate_table(128), rsqrt_estimate_table(511)) == (511, 256)
    for a in range(256, 512):
        assert abs(recip_estimate_table(a) / 256 - 512 / (a + 0.5)) <= 1 / 512, a
    for a in range(128, 512):
        middle = (a + 0.5) / 512 if a < 256 else (a // 2 * 2 + 1) / 512
        assert abs(rsqrt_estimate_table(a) / 256 - middle ** -0.5) <= 1 / 512, a
    with pytest.raises(ValueError, match="not 512"):
        recip_estimate_table(512)


def test_estimates_are_unpredicated_and_frecpx_merges():
    v = Vectors()
    v.set(1, 4, [ONE, TWO, 0x40800000, 0])
    result = v.run("frecpe z0.s, z1.s")
    _assert_lanes(v, 0, 4, [0x3F7F8000, 0x3EFF8000, 0x3E7F8000, INF])
    assert result.fpsr_flags == DZC
    v.run("frsqrte z0.s, z1.s")
    _assert_lanes(v, 0, 4, [0x3F7F8000, 0x3F348000, 0x3EFF8000, INF])
    v.set(2, 4, [0x3F7F8000] * 4)
    v.run("frecps z3.s, z1.s, z2.s")                      # Newton-Raphson step: 2 - x * e
    assert v.get(3, 4)[0] == 0x3F804000                   # 2 - 0.998046875 = 1.001953125
    v.set(0, 4, [0x11111111] * 4)
    v.predicate(0, 4, [0, 1, 1, 0])
    v.run("frecpx z0.s, p0/m, z1.s")
    _assert_lanes(v, 0, 4, [0x11111111, ONE, 0x3F000000, 0x11111111])     # 2 -> 1, 4 -> 0.5
