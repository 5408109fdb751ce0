"""hw.vector.fp_arith against the reference model (tests/vector_unit_check.py).

Random instances of every form of the unit's operations (FADD, FSUB, FSUBR, FMUL with vectors
and immediates, FMULX, FABD, FSCALE, the FMLA and FMAD families, FRECPS, FRSQRTS, FADDV) under
a random FPCR (DN, FZ, FZ16, RMode), on states whose elements (at the form's size) are mostly
floating-point edge values: zeros, denormals, infinities, NaNs, numbers near 1 with short
fractions (cancellation, exact steps), near the bottom (underflow) and the top (overflow) of
the range. The Z bytes the unit writes and the FPSR flags must equal the model's. Then a
planted difference shows the comparison reports the form and the register or the flags.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from zatile.hw.vector.fp_arith import VectorFpArith
from zatile.sim.fpref import FP16, FP32, FP64, Format, special_values
from zatile.sw.arch.isa import decode
from tests.vector_unit_check import cases, check

_FORMATS = {2: (FP16, np.uint16), 4: (FP32, np.uint32), 8: (FP64, np.uint64)}


def _edge_value(rng: random.Random, fmt: Format) -> int:
    """A special value, or a number with its exponent near 1, the bottom or the top of the
    range, or half-way down, with a short or random fraction; else random bits."""
    fraction_bits, exponent_bits = fmt.fraction_bits, fmt.exponent_bits
    sign = rng.getrandbits(1) << (fmt.width - 1)
    fraction = rng.choice([0, 1, 1 << (fraction_bits - 1), 1 << (fraction_bits - 2),
                           3 << (fraction_bits - 2), (1 << fraction_bits) - 1,
                           rng.getrandbits(fraction_bits)])
    choice = rng.random()
    if choice < 0.2:
        return rng.choice(special_values(fmt))
    if choice < 0.45:
        exponent = fmt.bias + rng.randint(-3, 3)
    elif choice < 0.6:
        exponent, fraction = rng.randint(0, 3), rng.getrandbits(fraction_bits)
    elif choice < 0.75:
        exponent = (1 << exponent_bits) - 1 - rng.randint(1, 3)
    elif choice < 0.85:
        exponent = fmt.bias // 2 + rng.randint(-3, 3)
    else:
        return rng.getrandbits(fmt.width)
    return sign | exponent << fraction_bits | fraction


def fp_cases(svl: int, count: int, seed: int):
    """:func:`cases` of the unit's operations with nine in ten elements of every Z register
    (at the form's element size) replaced by :func:`_edge_value`."""
    rng = random.Random(seed)
    result = []
    for word, state in cases(VectorFpArith.OPS, svl, count, seed):
        fmt, dtype = _FORMATS[decode(word).form.params["esize"]]
        for register in state.z:
            lanes = register.view(dtype)
            for lane in range(lanes.size):
                if rng.random() < 0.9:
                    lanes[lane] = _edge_value(rng, fmt)
        result.append((word, state))
    return result


@pytest.mark.parametrize("svl, count", [(128, 60), (512, 30)])
def test_matches_the_model(svl, count):
    assert check(VectorFpArith, svl, fp_cases(svl, count, svl)) == []


def test_a_planted_difference_is_reported_with_form_and_register():
    chosen = [(word, state) for word, state in fp_cases(128, 0, 9)
              if decode(word).form.name in ("FADD_ZZZ_S", "FMLA_D")]

    def corrupt(word, outputs):
        return {**outputs, "vector": outputs["vector"] ^ 1,
                "fpsr_flags": outputs["fpsr_flags"] ^ 0x10}

    problems = check(VectorFpArith, 128, chosen, corrupt)
    fadd = next(word for word, _ in chosen if decode(word).form.name == "FADD_ZZZ_S")
    assert any(p.startswith("FADD_ZZZ_S") and p.endswith(f"z{decode(fadd)['zd']}")
               for p in problems), problems
    assert any(p.startswith("FMLA_D") and "fpsr flags" in p for p in problems), problems


def _sticky_cases() -> list:
    """FADD of +-1.0 and ``2^-k`` at SVL 512 in every element size, ``k`` running one per
    element from just above the format's round bit to past the bits the shared datapath keeps
    (its normalized window, then the alignment's), under each directed rounding mode and to
    nearest: the round and sticky bits at each format's place in the one FP64 datapath."""
    svl = 512
    result = []
    for word, state in cases(VectorFpArith.OPS, svl, 0, 11):
        decoded = decode(word)
        if not decoded.form.name.startswith("FADD_ZZZ") or decoded["zn"] == decoded["zm"]:
            continue
        fmt, dtype = _FORMATS[decoded.form.params["esize"]]
        precision, bias = fmt.fraction_bits + 1, fmt.bias
        lanes = svl // fmt.width
        smallest = bias - 1 + fmt.fraction_bits     # 2^-smallest is the smallest denormal
        last = min(smallest, 3 * precision + 8)
        for start in range(precision - 2, last + 1, lanes):
            # Toward +infinity on positive sums and toward -infinity on negative ones (both
            # round up the magnitude when inexact); to nearest on sums and differences.
            for rounding in (1, 2, 0):
                first = np.zeros(lanes, dtype)
                second = np.zeros(lanes, dtype)
                for lane in range(lanes):
                    k = min(start + lane, last)
                    first_sign = lane & 1 if rounding == 0 else rounding == 2
                    first[lane] = first_sign << (fmt.width - 1) | bias << fmt.fraction_bits
                    second[lane] = ((rounding == 2) << (fmt.width - 1)
                                    | ((bias - k) << fmt.fraction_bits if k < bias
                                       else 1 << (fmt.fraction_bits - (k - bias + 1))))
                case_state = state.copy()
                case_state.z[decoded["zn"]] = first.view(np.uint8)
                case_state.z[decoded["zm"]] = second.view(np.uint8)
                case_state.fpcr = rounding << 22
                result.append((word, case_state))
    return result


def test_round_and_sticky_bits_of_every_format():
    chosen = _sticky_cases()
    assert {decode(word).form.name for word, _ in chosen} == {"FADD_ZZZ_H", "FADD_ZZZ_S",
                                                              "FADD_ZZZ_D"}
    assert check(VectorFpArith, 512, chosen) == []


#: Cycles an element takes from its issue to its write: the registers after reading, the
#: product, the sum and the normalization (hw/vector/fp_arith.py, "the pipeline").
PIPELINE_CYCLES = 4


@pytest.mark.parametrize("svl", [128, 512])
def test_the_latency_is_one_cycle_an_element_plus_the_pipeline(svl):
    names = ("FADD_ZZZ_H", "FADD_ZZZ_S", "FMLA_D", "FADDV_S", "FADDV_D")
    chosen = {}
    for word, state in fp_cases(svl, 0, 5):
        chosen.setdefault(decode(word).form.name, (word, state))
    latencies = []
    assert check(VectorFpArith, svl, [chosen[name] for name in names],
                 latencies=latencies) == []
    expected = []
    for name in names:
        elements = svl // _FORMATS[decode(chosen[name][0]).form.params["esize"]][0].width
        # FADDV: a level of additions at a time, each half the last, the next level's
        # elements issued once this one's are written.
        levels = ([elements >> level for level in range(1, elements.bit_length())]
                  if name.startswith("FADDV") else [elements])
        expected.append(sum(count + PIPELINE_CYCLES + 1 for count in levels) + 1)
    assert latencies == expected
