"""hw.vector.fp_compare against the reference model (tests/vector_unit_check.py).

Random instances of every form of the unit's operations (FMAX/FMIN(NM) with vectors and
immediates, FABS/FNEG, FCMxx/FACxx with vectors and #0.0, FMAX(NM)V/FMIN(NM)V, FMOV
immediates) on random states, with FPCR's DN, FZ and FZ16 at random; a third of the elements of
every Z register are replaced by floating-point special values of a random size (signed zeros,
denormals, infinities, quiet and signalling NaNs, ones) and a third of those copied between
registers, so equal operands and NaN pairs meet; with a whole vector and 64 bits per cycle. The
Z bytes, the P register and the FPSR flags must equal the model's. The two-vector forms also
meet operands that differ only across element boundaries (the unit's one subtraction serves
every element size). Then a planted difference shows the comparison reports the form and the
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
from tests.vector_unit_check import CONFIG, cases, check

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


_ELEMENT_TYPES = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _apart_across_boundaries(case_list, seed: int):
    """The two-vector forms of ``case_list``, all elements active, with operands that tell
    elements apart only across their boundaries. Element ``4i`` of the first operand is one
    below the second's (its subtraction borrows out of the element), ``4i + 1`` the same in
    both, ``4i + 2`` one above (the two differ in the low half only), ``4i + 3`` a pair of
    zeros of random signs. The low half of each single or double element is a NaN or a
    denormal of the smaller size (never all ones, so one more stays in the low half)."""
    lows = {16: (0,), 32: (0x7E01, 0x7C01, 0x0001, 0x03FF),
            64: (0x7F800001, 0x7FC07E01, 0x00000001, 0x007FFFFF)}
    rng = random.Random(seed)
    chosen = []
    for word, state in case_list:
        fields = decode(word).fields
        first, second = fields.get("zdn", fields.get("zn")), fields.get("zm")
        if second is None or first == second:
            continue
        size = decode(word).form.params["esize"]
        bits = 8 * size
        first_lanes = state.z[first].view(_ELEMENT_TYPES[size])
        second_lanes = state.z[second].view(_ELEMENT_TYPES[size])
        for lane in range(first_lanes.size):
            low = rng.choice(lows[bits])
            pattern = rng.getrandbits(bits) & ~((1 << (bits // 2)) - 1) | low
            first_pattern, second_pattern = (
                (pattern, pattern + 1), (pattern, pattern), (pattern + 1, pattern),
                (rng.getrandbits(1) << (bits - 1), rng.getrandbits(1) << (bits - 1)))[lane % 4]
            first_lanes[lane], second_lanes[lane] = first_pattern, second_pattern
        state.p[fields["pg"]][:] = 0xFF
        chosen.append((word, state))
    return chosen


@pytest.mark.parametrize("config", [CONFIG, NARROW], ids=["whole vector", "64 bits per cycle"])
def test_elements_apart_only_across_their_boundaries(config):
    """One subtraction serves every element: a borrow or equality must not cross an element
    boundary, and each element size classifies only its own fields."""
    case_list = _apart_across_boundaries(cases(VectorFpCompare.OPS, 256, 0, 5), 5)
    assert len(case_list) > 30
    assert check(VectorFpCompare, 256, case_list, config=config) == []


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
