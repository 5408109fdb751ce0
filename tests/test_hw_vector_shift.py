"""hw.vector.shift against the reference model (tests/vector_unit_check.py).

Random instances of every form of the unit's operations (shifts by vector, wide element and
immediate, rounding and saturating shifts, extends and the other unary operations, halving adds,
widening and narrowing operations) on random states full of integer edge values and random
predicates, at the smallest and largest SVL of an engine of max SVL 512 (256 adds nothing the
two do not and costs 40 s), with a whole vector and 64 bits per cycle: the Z bytes it writes
must equal the model's. Then a planted difference shows the comparison reports the form and the
register.
"""

from __future__ import annotations

import pytest

from zatile.hw.vector.shift import VectorShifter
from zatile.sw.arch.isa import decode
from tests.test_hw_vector_alu import NARROW
from tests.vector_unit_check import cases, check


@pytest.mark.parametrize("svl", [128, 512])
def test_matches_the_model(svl):
    assert check(VectorShifter, svl, cases(VectorShifter.OPS, svl, 10, svl)) == []


@pytest.mark.parametrize("svl", [128, 256])
def test_matches_the_model_64_bits_per_cycle(svl):
    """The shifter built to make 64 bits per cycle: two chunks at SVL 128, four at 256."""
    assert check(VectorShifter, svl, cases(VectorShifter.OPS, svl, 10, svl + 1),
                 config=NARROW) == []


def test_a_planted_difference_is_reported_with_form_and_register():
    chosen = [(word, state) for word, state in cases(VectorShifter.OPS, 128, 0, 9)
              if decode(word).form.name in ("ASR_ZPZI_S", "SQXTNT_H")]

    def corrupt(word, outputs):
        return {**outputs, "vector": outputs["vector"] ^ ((1 << 512) - 1)}

    problems = check(VectorShifter, 128, chosen, corrupt)
    for word, _ in chosen:
        fields = decode(word).fields
        destination = fields.get("zdn", fields.get("zd"))
        assert any(p.startswith(decode(word).form.name) and p.endswith(f"z{destination}")
                   for p in problems), problems
