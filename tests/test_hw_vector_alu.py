"""hw.vector.alu against the reference model (tests/vector_unit_check.py).

Random instances of every form of the unit's operations (integer element arithmetic, bitwise
and logical immediates, DUPM, compares, predicate logic, PTEST) on random states full of
integer edge values and random predicates, at the smallest and the largest SVL of an engine of
max SVL 512, with a whole vector and 64 bits per cycle: the Z bytes it writes, the P register
and NZCV must equal the model's. Wide compares also meet 64-bit lanes at the edges of the
narrower types. Then a planted difference shows the comparison reports the form and the
register.
"""

from __future__ import annotations

import random

import numpy as np
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


#: 64-bit values at the edges of the narrower element types, signed and unsigned: the second
#: operands of a wide compare that just fit, or just do not fit, its elements.
_NARROW_EDGES = tuple(value for k in (7, 8, 15, 16, 31, 32)
                      for value in ((1 << k) - 1, 1 << k, (1 << 64) - (1 << k),
                                    (1 << 64) - (1 << k) - 1))


def test_wide_compares_against_lanes_at_the_edges_of_the_element_types():
    """CMP<cc> .B/.H/.S against 64-bit lanes of Zm just inside and just outside the elements'
    signed and unsigned ranges, with elements of Zn next to the lane's low bits: the ALU must
    decide whether a lane fits the elements before it compares their bits."""
    rng = random.Random(17)
    chosen = [(word, state) for word, state in cases(VectorAlu.OPS, 128, 400, 18)
              if decode(word).form.name.endswith("_ZW")]
    for word, state in chosen:
        fields = decode(word).fields
        bits = 8 * decode(word).form.params["esize"]
        lanes = np.array([rng.choice(_NARROW_EDGES) for _ in range(2)], dtype=np.uint64)
        elements = [(int(lanes[index * bits // 64]) + rng.choice((-1, 0, 1))) % (1 << bits)
                    for index in range(128 // bits)]
        state.z[fields["zm"]] = lanes.view(np.uint8)
        state.z[fields["zn"]] = np.frombuffer(b"".join(
            element.to_bytes(bits // 8, "little") for element in elements), np.uint8)
    assert len(chosen) > 40
    assert check(VectorAlu, 128, chosen) == []


def test_a_planted_difference_is_reported_with_form_and_register():
    chosen = [(word, state) for word, state in cases(VectorAlu.OPS, 128, 0, 9)
              if decode(word).form.name in ("ADD_ZZZ_S", "CMPEQ_B_ZZ")]

    def corrupt(word, outputs):
        return {**outputs, "vector": outputs["vector"] ^ 1, "predicate": outputs["predicate"] ^ 1}

    problems = check(VectorAlu, 128, chosen, corrupt)
    assert any(p.startswith("ADD_ZZZ_S") and p.endswith(f"z{decode(chosen[0][0])['zd']}")
               for p in problems), problems
    assert any(p.startswith("CMPEQ_B_ZZ") and ": p" in p for p in problems), problems
