"""hw.vector.fp_convert against the reference model (tests/vector_unit_check.py).

Random instances of every form of the unit's operations (SCVTF, UCVTF, FCVTZS, FCVTZU at every
size pairing, FCVT, BFCVT, FCVTX, the SVE2 top/bottom conversions, FRINT<x>, FRECPX, FRECPE,
FRSQRTE, FSQRT, FDIV and FDIVR) on random
states full of edge values, random predicates and random FPCR (DN, FZ, FZ16,
RMode): the Z bytes the unit writes and the FPSR flags must equal the model's. Then a planted
difference shows the comparison reports the form and the register.
"""

from __future__ import annotations

import pytest

from zatile.hw.vector.fp_convert import VectorFpConvert
from zatile.sw.arch.isa import decode
from tests.vector_unit_check import cases, check


# Every form once, then random ones; FDIV and FSQRT take up to ~500 simulated cycles each.
@pytest.mark.parametrize("svl, count", [(128, 40), (512, 15)])
def test_matches_the_model(svl, count):
    assert check(VectorFpConvert, svl, cases(VectorFpConvert.OPS, svl, count, svl)) == []


def test_a_planted_difference_is_reported_with_form_and_register():
    chosen = [(word, state) for word, state in cases(VectorFpConvert.OPS, 128, 0, 9)
              if decode(word).form.name in ("SCVTF_SS", "FRINTN_S")]

    def corrupt(word, outputs):
        # Flip the first written byte (or write byte 0) and Inexact.
        lanes = outputs["vector_lanes"] or 1
        first_byte = (lanes & -lanes).bit_length() - 1
        return {**outputs, "vector": outputs["vector"] ^ 0xFF << 8 * first_byte,
                "vector_lanes": lanes, "fpsr_flags": outputs["fpsr_flags"] ^ 0x10}

    problems = check(VectorFpConvert, 128, chosen, corrupt)
    for word, _ in chosen:
        name = decode(word).form.name
        assert any(p.startswith(name) and p.endswith(f"z{decode(word)['zd']}")
                   for p in problems), problems
        assert any(p.startswith(name) and "fpsr flags" in p for p in problems), problems
