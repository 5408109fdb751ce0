"""hw.vector.fp_compare against the reference model (tests/vector_unit_check.py).

Random instances of every form of the unit's operations (FMAX/FMIN(NM) with vectors and
immediates, FABS/FNEG, FCMxx/FACxx with vectors and #0.0, FMAX(NM)V/FMIN(NM)V, FMOV
immediates) on random states, with FPCR's DN, FZ and FZ16 at random; a third of the elements of
every Z register are replaced by floating-point special values of a random size (signed zeros,
denormals, infinities, quiet and signalling NaNs, ones) and a third of those copied between
registers, so equal operands and NaN pairs meet; with a whole vector and 64 bits per cycle. The
Z bytes, the P register and the FPSR flags must equal the model's. Then a planted difference shows the comparison reports the form and the
register.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from zatile.hw.vector.fp_compare import VectorFpCompare
from zatile.sim.fpref import FP16, FP32, FP64, special_values
from zatile.sw.arch.isa import decode
from tests.test_hw_vector_alu import NARROW
from tests.vector_unit_check import cases, check

_FORMATS = {np.uint16: FP16, np.uint32: FP32, np.uint64: FP64}


def _with_specials(case_list, seed: int):
    """``case_list`` with floating-point special values planted in every Z register."""
    rng = random.Random(seed)
    for _, state in case_list:
        dtype = rng.choice(list(_FORMATS))
        values = special_values(_FORMATS[dtype])
        for register in range(32):
            lanes = state.z[register].view(dtype)
            for lane in range(lanes.size):
                if rng.random() < 1 / 3:
                    lanes[lane] = rng.choice(values)
        for _ in range(8):      # equal operands and NaN pairs in other registers
            source, target = rng.randrange(32), rng.randrange(32)
            lanes, other = state.z[source].view(dtype), state.z[target].view(dtype)
            lane = rng.randrange(lanes.size)
            other[lane] = lanes[lane]
    return case_list


@pytest.mark.parametrize("svl", [128, 512])
def test_matches_the_model(svl):
    case_list = _with_specials(cases(VectorFpCompare.OPS, svl, 60, svl), svl)
    assert check(VectorFpCompare, svl, case_list) == []


@pytest.mark.parametrize("svl", [128, 256])
def test_matches_the_model_64_bits_per_cycle(svl):
    """The unit built to compare 64 bits per cycle: element operations chunk by chunk, each
    reduction step over every chunk (two at SVL 128, four at 256)."""
    case_list = _with_specials(cases(VectorFpCompare.OPS, svl, 30, svl + 1), svl + 1)
    assert check(VectorFpCompare, svl, case_list, config=NARROW) == []


def test_a_planted_difference_is_reported_with_form_and_register():
    chosen = [(word, state) for word, state in cases(VectorFpCompare.OPS, 128, 0, 9)
              if decode(word).form.name in ("FMAX_ZPZZ_S", "FCMGT_PPZZ_H")]

    def corrupt(word, outputs):
        return {**outputs, "vector": outputs["vector"] ^ ~0,
                "predicate": outputs["predicate"] ^ 1,
                "fpsr_flags": outputs["fpsr_flags"] ^ 0x80}

    problems = check(VectorFpCompare, 128, chosen, corrupt)
    assert any(p.startswith("FMAX_ZPZZ_S") and p.endswith(f"z{decode(chosen[0][0])['zdn']}")
               for p in problems), problems
    assert any(p.startswith("FCMGT_PPZZ_H") and ": p" in p for p in problems), problems
    assert any(p.startswith("FCMGT_PPZZ_H") and "fpsr flags" in p for p in problems), problems
