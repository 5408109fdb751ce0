"""hw.vector.predicate against the reference model (tests/vector_unit_check.py).

Random instances of every form of the unit's operations (PFIRST, PNEXT, PTRUES, the BRKs, the
WHILEs beyond LT/LO, CNTP, INC/DEC and their saturating forms by pattern and by predicate, the
integer reductions) on random states full of edge values, random predicates and random general
registers: the Z bytes, P bits, scalar result and NZCV must equal the model's. Then planted
differences show the comparison reports the form and the register.
"""

from __future__ import annotations

import pytest

from zatile.hw.vector.predicate import VectorPredicateUnit
from zatile.sw.arch.isa import decode
from tests.vector_unit_check import cases, check


@pytest.mark.parametrize("svl", [128, 512])
def test_matches_the_model(svl):
    assert check(VectorPredicateUnit, svl, cases(VectorPredicateUnit.OPS, svl, 100, svl)) == []


def test_a_planted_difference_is_reported_with_form_and_register():
    names = ("UADDV_B", "PFIRST", "INCB_X", "WHILELE_S_W")
    chosen = [(word, state) for word, state in cases(VectorPredicateUnit.OPS, 128, 0, 9)
              if decode(word).form.name in names]

    def corrupt(word, outputs):
        return {**outputs, "vector": outputs["vector"] ^ 1, "predicate": outputs["predicate"] ^ 1,
                "scalar": outputs["scalar"] ^ 1, "nzcv": outputs["nzcv"] ^ 0b0100}

    problems = check(VectorPredicateUnit, 128, chosen, corrupt)
    words = {decode(word).form.name: decode(word) for word, _ in chosen}
    assert any(p.startswith("UADDV_B") and p.endswith(f"z{words['UADDV_B']['vd']}")
               for p in problems), problems
    assert any(p.startswith("PFIRST") and p.endswith(f"p{words['PFIRST']['pdn']}")
               for p in problems), problems
    assert any(p.startswith("INCB_X") and ": scalar" in p for p in problems), problems
    assert any(p.startswith("WHILELE_S_W") and ": nzcv" in p for p in problems), problems
