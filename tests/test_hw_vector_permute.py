"""hw.vector.permute against the reference model (tests/vector_unit_check.py).

Random instances of every form of the unit's operations (INDEX, DUP indexed, CPY, SEL, INSR,
LAST/CLAST, EXT, REV, ZIP/UZP/TRN, TBL/TBX, SPLICE, REVB/REVH/REVW/RBIT, SUNPK/UUNPK, MOVPRFX
and the predicate permutes) on random states, at SVL 128 and 512 on an engine of max SVL 512
(the unit's chunk count is the SVL's; building the simulation dominates the run time): the Z
bytes it writes, the P register and the general-register result must equal the model's. Then
a planted difference shows the comparison reports the form and the register.

The operations whose source bytes the unit computes from the destination byte's lane and chunk
(EXT, INSR and SPLICE as a shift of the chunk, the element permutes, TBL/TBX) get many more
instances at SVL 256, a third SVL; and the gather's multiplexer (``_select``, stages of 4:1
multiplexers) picks every input of a table of random bytes.
"""

from __future__ import annotations

import random

import pytest
from amaranth import Module, Signal
from amaranth.sim import Simulator

from zatile.hw.decoder import Op
from zatile.hw.vector.permute import VectorPermuter, _select
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


#: The operations whose source bytes are computed from the destination's lane and chunk.
_MOVES = (Op.PERM_EXT, Op.PERM_INSR, Op.PERM_SPLICE, Op.PERM_TBL, Op.PERM_TBX, Op.PERM_REV,
          Op.PERM_ZIP, Op.PERM_UZP, Op.PERM_TRN, Op.PERM_UNPACK, Op.PERM_REVB,
          Op.PERM_DUP_INDEXED, Op.PERM_CLAST)


def test_moves_at_a_third_svl_match_the_model():
    assert check(VectorPermuter, 256, cases(_MOVES, 256, 200, 256)) == []


@pytest.mark.parametrize("select_bits", [5, 6])
def test_the_gather_multiplexer_picks_every_input(select_bits):
    rng = random.Random(select_bits)
    m = Module()
    inputs = [Signal(8, name=f"input_{k}") for k in range(1 << select_bits)]
    select = Signal(select_bits)
    output = Signal(8)
    m.d.comb += output.eq(_select(m, "check", select, inputs))
    seen = []

    async def bench(ctx):
        for _ in range(2):
            values = [rng.getrandbits(8) for _ in inputs]
            for signal, value in zip(inputs, values):
                ctx.set(signal, value)
            for k in range(len(inputs)):
                ctx.set(select, k)
                seen.append((k, ctx.get(output), values[k]))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert [(k, got) for k, got, want in seen if got != want] == []
