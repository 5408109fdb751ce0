"""hw.vector.alu against the reference model (tests/vector_unit_check.py).

Random instances of every form of the unit's operations (integer element arithmetic, bitwise
and logical immediates, DUPM, compares, predicate logic, PTEST) on random states full of
integer edge values and random predicates, at the smallest and the largest SVL of an engine of
max SVL 512, with a whole vector and 64 bits per cycle: the Z bytes it writes, the P register
and NZCV must equal the model's. Then a planted difference shows the comparison reports the form
and the register.
"""

from __future__ import annotations

import pytest

from zatile.hw.vector.alu import VectorAlu
from zatile.sw.arch.isa import decode
from zatile.sw.arch.config import EngineConfig
from tests.vector_unit_check import CONFIG, cases, check

#: The units built to make 64 bits of a vector per cycle.
NARROW = EngineConfig(max_svl=CONFIG.max_svl, vector_bits_per_cycle=64)


@pytest.mark.parametrize("svl", [128, 512])
def test_matches_the_model(svl):
    assert check(VectorAlu, svl, cases(VectorAlu.OPS, svl, 150, svl)) == []


@pytest.mark.parametrize("svl", [128, 256])
def test_matches_the_model_64_bits_per_cycle(svl):
    """The ALU built to make 64 bits per cycle: two chunks at SVL 128, four at 256 (of the
    eight it has at max SVL 512)."""
    assert check(VectorAlu, svl, cases(VectorAlu.OPS, svl, 150, svl + 1), config=NARROW) == []


def test_a_planted_difference_is_reported_with_form_and_register():
    chosen = [(word, state) for word, state in cases(VectorAlu.OPS, 128, 0, 9)
              if decode(word).form.name in ("ADD_ZZZ_S", "CMPEQ_B_ZZ")]

    def corrupt(word, outputs):
        return {**outputs, "vector": outputs["vector"] ^ 1, "predicate": outputs["predicate"] ^ 1}

    problems = check(VectorAlu, 128, chosen, corrupt)
    assert any(p.startswith("ADD_ZZZ_S") and p.endswith(f"z{decode(chosen[0][0])['zd']}")
               for p in problems), problems
    assert any(p.startswith("CMPEQ_B_ZZ") and ": p" in p for p in problems), problems
