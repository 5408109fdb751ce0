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
