"""hw.vector.multiply against the reference model (tests/vector_unit_check.py).

Random instances of every form of the unit's operations (MUL, MLA/MLS/MAD/MSB, SMULH/UMULH,
SDIV/UDIV and their reversed forms, SQDMULH/SQRDMULH, SMULL/UMULL/SQDMULL bottom and top) on
random states full of integer edge values and random predicates, at every SVL an engine of max
SVL 512 supports, together with directed corner values (division by zero, INT_MIN / -1, the
saturating INT_MIN · INT_MIN) that random states seldom put in the right places: the Z bytes it
writes must equal the model's. Then a planted difference shows the comparison reports the form
and the register. The multiplier array alone is checked against Python products at every
element size, signed and unsigned, for the bias the module documentation describes.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from amaranth import Module, Signal
from amaranth.sim import Simulator

from zatile.hw.vector.multiply import CHUNK, VectorMultiplier, _bias, _ControlLayout, \
    _product_array
from zatile.sw.arch.isa import FORMS, decode
from zatile.tb.programs import instance
from tests.vector_unit_check import cases, check
from tests.test_sve_int import SIGNED_DTYPES, _streaming_state

#: Operations whose corner cases random edge values rarely meet: division by zero and
#: INT_MIN / -1, the saturation of the doubling forms at INT_MIN · INT_MIN, signed high halves.
_CORNER_OPS = ("int_sdiv", "int_udiv", "int_sqdmulh", "int_sqrdmulh", "int_sqdmull",
               "int_smulh", "int_smull")


def _corner_cases(svl: int, seed: int) -> list:
    """Each form of :data:`_CORNER_OPS` with its operands made of pairs of corner values at
    its (narrow) element size, every element active; as many instances as it takes for every
    pair to meet every form."""
    rng = random.Random(seed)
    result = []
    for form in (form for form in FORMS if form.op in _CORNER_OPS):
        esize = form.params["esize"] // (2 if "top" in form.params else 1)
        low, high = -(1 << (8 * esize - 1)), (1 << (8 * esize - 1)) - 1
        pairs = [(low, -1), (-7, 2), (5, 0), (low, low), (7, -2), (high, high), (low, high),
                 (-1, -1), (high, -1), (-high, 3), (low, 1), (0, 0), (0, 7), (-1, low)]
        count = svl // 8 // esize
        dtype = SIGNED_DTYPES["bhsd"[esize.bit_length() - 1]]
        for offset in range(0, len(pairs), count):
            word = instance(form, rng)
            fields = decode(word).fields
            while fields.get("zdn", fields.get("zn")) == fields["zm"]:
                word = instance(form, rng)
                fields = decode(word).fields
            state = _streaming_state(rng, svl)
            chosen = [pairs[(offset + k) % len(pairs)] for k in range(count)]
            state.z[fields.get("zdn", fields.get("zn"))] = \
                np.array([a for a, _ in chosen], dtype).view(np.uint8)
            state.z[fields["zm"]] = np.array([b for _, b in chosen], dtype).view(np.uint8)
            if "pg" in fields:
                state.p[fields["pg"]] = 0xFF
            result.append((word, state))
    return result


@pytest.mark.parametrize("svl", [128, 512])
def test_matches_the_model(svl):
    assert check(VectorMultiplier, svl, cases(VectorMultiplier.OPS, svl, 40, svl)
                 + _corner_cases(svl, svl)) == []


def test_a_planted_difference_is_reported_with_form_and_register():
    chosen = [(word, state) for word, state in cases(VectorMultiplier.OPS, 128, 0, 9)
              if decode(word).form.name in ("MUL_ZZZ_S", "SMULLT_D")]

    def corrupt(word, outputs):
        return {**outputs, "vector": outputs["vector"] ^ ((1 << 128) - 1)}

    problems = check(VectorMultiplier, 128, chosen, corrupt)
    for word, _ in chosen:
        decoded = decode(word)
        assert any(p.startswith(decoded.form.name) and p.endswith(f"z{decoded['zd']}")
                   for p in problems), problems


@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("log2", [0, 1, 2, 3])
def test_the_array_gives_each_product_plus_its_bias(log2, signed):
    """Every element's double-width product, plus :func:`_bias` of its size when signed, each
    in its own ``2n`` bits (no carry between elements), on random elements and the extremes."""
    m = Module()
    control = Signal(_ControlLayout)
    a, b = Signal(CHUNK), Signal(CHUNK)
    product = Signal(2 * CHUNK)
    m.d.comb += product.eq(_product_array(m, control, a, b))
    bits = 8 << log2
    extremes = [0, 1, (1 << bits) - 1, 1 << (bits - 1), (1 << (bits - 1)) - 1,
                (1 << (bits - 1)) + 1]
    rng = random.Random(log2 * 2 + signed)
    sim = Simulator(m)

    def value(element):
        return element - (element >> (bits - 1) << bits) if signed else element

    async def bench(ctx):
        ctx.set(control.array_log2, log2)
        ctx.set(control.signed, signed)
        for _ in range(200):
            firsts, seconds = ([rng.choice(extremes + [rng.getrandbits(bits)] * 4)
                                for _ in range(CHUNK // bits)] for _ in range(2))
            ctx.set(a, sum(x << (bits * k) for k, x in enumerate(firsts)))
            ctx.set(b, sum(y << (bits * k) for k, y in enumerate(seconds)))
            expected = sum((value(x) * value(y) + (_bias(log2) if signed else 0))
                           % (1 << 2 * bits) << (2 * bits * k)
                           for k, (x, y) in enumerate(zip(firsts, seconds)))
            assert ctx.get(product) == expected, (log2, signed, firsts, seconds)

    sim.add_testbench(bench)
    sim.run()
