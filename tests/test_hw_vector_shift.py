"""hw.vector.shift against the reference model (tests/vector_unit_check.py).

Random instances of every form of the unit's operations (shifts by vector, wide element and
immediate, rounding and saturating shifts, extends and the other unary operations, halving adds,
widening and narrowing operations) on random states full of integer edge values and random
predicates, at the smallest and largest SVL of an engine of max SVL 512 (256 adds nothing the
two do not and costs 40 s), with a whole vector and 64 bits per cycle: the Z bytes it writes
must equal the model's; then the shifts by vector with amounts at every element size's edges.
Then a planted difference shows the comparison reports the form and the register.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from zatile.hw.decoder import Op
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


#: The shifts whose amount is an element of a vector.
_BY_VECTOR = (Op.INT_ASR, Op.INT_LSR, Op.INT_LSL, Op.INT_SRSHL, Op.INT_URSHL, Op.INT_SQSHL,
              Op.INT_UQSHL, Op.INT_SQRSHL, Op.INT_UQRSHL)


def _edge_amounts(bits: int) -> list[int]:
    """Shift amounts around the edges of elements of ``bits`` bits, and of 7- and 8-bit values
    (the shifter holds an amount's magnitude in 7 bits)."""
    edges = [0, 1, 2, bits - 1, bits, bits + 1, bits + 2, 63, 64, 65, 127, 128, 129, 255, 256]
    return edges + [-amount for amount in edges]


def test_shifts_by_vector_at_the_edges_of_the_amount():
    """Every element of the amount (Zm, or Zdn of a reversed form; the 64-bit lane element of
    a wide form) at an edge of its element size or of the 7-bit magnitude, on edge values."""
    rng = random.Random(11)
    chosen = []
    for word, state in cases(_BY_VECTOR, 128, 20, 12):
        form = decode(word).form.name
        if "zm" not in decode(word).fields:
            continue            # a shift by immediate
        mnemonic, _, operands = form.partition("_")
        register = decode(word).fields["zdn" if mnemonic.endswith(("LR", "RR")) else "zm"]
        value_bits = 8 << "BHSD".index(form[-1])
        amount_bytes = 8 if "W" in operands.split("_")[0] else value_bits // 8
        amounts = b"".join(
            (rng.choice(_edge_amounts(value_bits)) % (1 << 8 * amount_bytes))
            .to_bytes(amount_bytes, "little") for _ in range(16 // amount_bytes))
        state.z[register] = np.frombuffer(amounts, dtype=state.z.dtype)
        chosen.append((word, state))
    assert check(VectorShifter, 128, chosen, config=NARROW) == []


def test_a_planted_difference_is_reported_with_form_and_register():
    chosen = [(word, state) for word, state in cases(VectorShifter.OPS, 128, 0, 9)
              if decode(word).form.name in ("ASR_ZPZI_S", "SQXTNT_H")]

    def corrupt(word, outputs):
        return {**outputs, "vector": outputs["vector"] ^ ((1 << 512) - 1)}

    problems = check(VectorShifter, 128, chosen, corrupt, config=NARROW)   # the smaller build
    for word, _ in chosen:
        fields = decode(word).fields
        destination = fields.get("zdn", fields.get("zd"))
        assert any(p.startswith(decode(word).form.name) and p.endswith(f"z{destination}")
                   for p in problems), problems
