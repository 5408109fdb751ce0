"""hw.vector_unit (with hw.decoder in front) against the reference model.

Random instances of every form of the unit's operations (integer element arithmetic, bitwise
and logical immediates, DUPM, compares, predicate logic, PTEST) on random states full of
integer edge values and random predicates, at every SVL an engine of max SVL 512 supports: the
Z bytes it writes, the P register and NZCV must equal the model's. Then a planted difference
shows the comparison reports the form and the register.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from amaranth import Module, Signal, Value
from amaranth.sim import Simulator

from zatile.hw.decoder import Decoder
from zatile.hw.vector_unit import VECTOR_OPS, VectorUnit
from zatile.sim.model import ReferenceModel
from zatile.sim.state import ArchState
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.isa import FORMS, Trait, decode
from zatile.tb.programs import instance
from tests.test_sve_int import _streaming_state

OPS = {op.name.lower() for op in VECTOR_OPS}
CONFIG = EngineConfig(max_svl=512)
MAXB = CONFIG.max_svl // 8


def _cases(svl: int, count: int, seed: int) -> list[tuple[int, ArchState]]:
    rng = random.Random(seed)
    forms = [form for form in FORMS if form.op in OPS]
    words = [instance(form, rng) for form in forms]          # every form once
    words += [instance(rng.choice(forms), rng) for _ in range(count)]
    return [(word, _streaming_state(rng, svl)) for word in words]


def _padded(array: np.ndarray) -> int:
    return int.from_bytes(array.tobytes(), "little")


def _check(svl: int, cases, corrupt=None) -> list[str]:
    """Run ``cases`` through decoder + unit; the differences from the model, by form and
    register (``corrupt(word, vector, predicate, nzcv)`` may alter the unit's outputs)."""
    m = Module()
    m.submodules.decoder = decoder = Decoder(CONFIG)
    m.submodules.unit = unit = VectorUnit(CONFIG)
    operands = {name: Signal(len(Value.cast(getattr(unit.op.payload, name))), name=name)
                for name in ("first", "second", "governing", "pn", "pm", "svl_mask")}
    m.d.comb += [unit.op.payload.decoded.eq(decoder.decoded),
                 *(getattr(unit.op.payload, name).eq(signal)
                   for name, signal in operands.items())]
    problems = []

    async def bench(ctx):
        svl_bytes = svl // 8
        mask = (1 << svl_bytes) - 1
        ctx.set(operands["svl_mask"], mask)
        ctx.set(unit.result.ready, 1)
        for word, state in cases:
            decoded = decode(word)
            fields = decoded.fields
            first = fields.get("zdn", fields.get("zn", 0))
            ctx.set(decoder.word, word)
            ctx.set(operands["first"], _padded(state.z[first]))
            ctx.set(operands["second"], _padded(state.z[fields.get("zm", 0)]))
            for port, field in (("governing", "pg"), ("pn", "pn"), ("pm", "pm")):
                ctx.set(operands[port], _padded(state.p[fields.get(field, 0)]))
            ctx.set(unit.op.valid, 1)
            await ctx.tick()
            ctx.set(unit.op.valid, 0)
            assert ctx.get(unit.result.valid)
            vector = ctx.get(unit.result.payload.vector.as_value())
            lanes = ctx.get(unit.result.payload.vector_lanes)
            predicate = ctx.get(unit.result.payload.predicate)
            nzcv = ctx.get(unit.result.payload.nzcv)
            if corrupt is not None:
                vector, predicate, nzcv = corrupt(word, vector, predicate, nzcv)
            model = ReferenceModel(EngineConfig(max_svl=512, supported_svls=(svl, 512)),
                                   state.copy())
            expected = model.execute(word)
            assert expected.status.name == "OK", decoded.form.name
            name = f"{decoded.form.name} 0x{word:08x}"
            destination = fields.get("zdn", fields.get("zd"))
            if destination is not None and decoded.form.op.startswith("int_"):
                written = bytearray(state.z[destination].tobytes())
                for byte in range(svl_bytes):
                    if lanes >> byte & 1:
                        written[byte] = vector >> (8 * byte) & 0xFF
                if bytes(written) != model.state.z[destination].tobytes():
                    problems.append(f"{name}: z{destination}")
            if "pd" in fields and predicate & mask != _padded(model.state.p[fields["pd"]]):
                problems.append(f"{name}: p{fields['pd']}")
            if Trait.SETS_FLAGS in decoded.form.traits and nzcv != expected.nzcv:
                problems.append(f"{name}: nzcv {nzcv:04b} != {expected.nzcv:04b}")

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return problems


@pytest.mark.parametrize("svl", [128, 256, 512])
def test_matches_the_model(svl):
    assert _check(svl, _cases(svl, 150, svl)) == []


def test_a_planted_difference_is_reported_with_form_and_register():
    cases = [(word, state) for word, state in _cases(128, 0, 9)
             if decode(word).form.name in ("ADD_ZZZ_S", "CMPEQ_B_ZZ")]

    def corrupt(word, vector, predicate, nzcv):
        return vector ^ 1, predicate ^ 1, nzcv

    problems = _check(128, cases, corrupt)
    assert any(p.startswith("ADD_ZZZ_S") and p.endswith(f"z{decode(cases[0][0])['zd']}")
               for p in problems), problems
    assert any(p.startswith("CMPEQ_B_ZZ") and ": p" in p for p in problems), problems
