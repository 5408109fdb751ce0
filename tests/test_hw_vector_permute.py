"""hw.vector.permute against the reference model (tests/vector_unit_check.py).

Random instances of every form of the unit's operations (INDEX, DUP indexed, CPY, SEL, INSR,
LAST/CLAST, EXT, REV, ZIP/UZP/TRN, TBL/TBX, SPLICE, REVB/REVH/REVW/RBIT, SUNPK/UUNPK, MOVPRFX
and the predicate permutes) on random states, at SVL 128 and 512 on an engine of max SVL 512
(the unit's chunk count is the SVL's; building the simulation dominates the run time): the Z
bytes it writes, the P register and the general-register result must equal the model's. Then
a planted difference shows the comparison reports the form and the register.
"""

from __future__ import annotations

import pytest

from zatile.hw.vector.permute import VectorPermuter
from zatile.sw.arch.isa import decode
from tests.vector_unit_check import cases, check


@pytest.mark.parametrize("svl", [128, 512])
def test_matches_the_model(svl):
    assert check(VectorPermuter, svl, cases(VectorPermuter.OPS, svl, 100, svl)) == []


def test_a_planted_difference_is_reported_with_form_and_register():
    chosen = [(word, state) for word, state in cases(VectorPermuter.OPS, 128, 0, 9)
              if decode(word).form.name in ("TBL_B", "ZIP1_P_H", "LASTB_SCALAR_S")]

    def corrupt(word, outputs):
        return {**outputs, "vector": outputs["vector"] ^ 1, "predicate": outputs["predicate"] ^ 1,
                "scalar": outputs["scalar"] ^ 1}

    problems = check(VectorPermuter, 128, chosen, corrupt)
    by_name = {decode(word).form.name: decode(word) for word, _ in chosen}
    assert any(p.startswith("TBL_B") and p.endswith(f"z{by_name['TBL_B']['zd']}")
               for p in problems), problems
    assert any(p.startswith("ZIP1_P_H") and p.endswith(f"p{by_name['ZIP1_P_H']['pd']}")
               for p in problems), problems
    assert any(p.startswith("LASTB_SCALAR_S") and ": scalar" in p for p in problems), problems
