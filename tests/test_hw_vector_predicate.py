"""hw.vector.predicate against the reference model (tests/vector_unit_check.py).

Random instances of every form of the unit's operations (PFIRST, PNEXT, PTRUES, the BRKs, the
WHILEs beyond LT/LO, CNTP, INC/DEC and their saturating forms by pattern and by predicate, the
integer reductions) on random states full of edge values, random predicates and random general
registers: the Z bytes, P bits, scalar result and NZCV must equal the model's. Then planted
differences show the comparison reports the form and the register. Saturating INC/DEC of Z
registers whose elements sit next to their limits exercise the saturation at every element size.
"""

from __future__ import annotations

import random

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


def _element_bytes(form_name: str) -> int:
    """The element size of a vector INC/DEC form: its last letter before ``_Z``, or after it."""
    prefix, _, suffix = form_name.partition("_Z")
    return {"H": 2, "W": 4, "S": 4, "D": 8}[suffix[1:] or prefix[-1]]


def test_vector_saturation_at_every_element_size():
    rng = random.Random(11)
    chosen = []
    for word, state in cases(VectorPredicateUnit.OPS, 128, 800, 11):
        instruction = decode(word)
        name = instruction.form.name
        if not (name.startswith(("SQ", "UQ")) and "_Z" in name):
            continue
        size = _element_bytes(name)
        bits = 8 * size
        near_limits = [(1 << bits - 1) - 1, 1 << bits - 1, (1 << bits) - 1, 0]
        values = [(rng.choice(near_limits) + rng.randrange(-150, 150)) % (1 << bits)
                  for _ in range(16 // size)]
        state.z[instruction["zdn"]] = list(b"".join(v.to_bytes(size, "little") for v in values))
        chosen.append((word, state))
    assert len(chosen) > 100, len(chosen)
    assert check(VectorPredicateUnit, 128, chosen) == []
