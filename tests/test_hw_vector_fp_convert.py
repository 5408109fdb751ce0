"""hw.vector.fp_convert against the reference model (tests/vector_unit_check.py).

Random instances of every form of the unit's operations (SCVTF, UCVTF, FCVTZS, FCVTZU at every
size pairing, FCVT, BFCVT, FCVTX, the SVE2 top/bottom conversions, FRINT<x>, FRECPX, FRECPE,
FRSQRTE, FSQRT, FDIV and FDIVR) on random
states full of edge values, random predicates and random FPCR (DN, FZ, FZ16,
RMode): the Z bytes the unit writes and the FPSR flags must equal the model's. Then a planted
difference shows the comparison reports the form and the register.
"""

from __future__ import annotations

import copy
import struct

import numpy as np
import pytest

from zatile.hw.vector.fp_convert import VectorFpConvert
from zatile.sw.arch.isa import decode
from tests.vector_unit_check import cases, check


# Every form once, then random ones; FDIV and FSQRT take up to ~500 simulated cycles each.
@pytest.mark.parametrize("svl, count", [(128, 40), (512, 15)])
def test_matches_the_model(svl, count):
    assert check(VectorFpConvert, svl, cases(VectorFpConvert.OPS, svl, count, svl)) == []


def test_a_planted_difference_is_reported_with_form_and_register():
    chosen = [(word, state) for word, state in cases(VectorFpConvert.OPS, 128, 0, 9)
              if decode(word).form.name in ("SCVTF_SS", "FRINTN_S")]

    def corrupt(word, outputs):
        # Flip the first written byte (or write byte 0) and Inexact.
        lanes = outputs["vector_lanes"] or 1
        first_byte = (lanes & -lanes).bit_length() - 1
        return {**outputs, "vector": outputs["vector"] ^ 0xFF << 8 * first_byte,
                "vector_lanes": lanes, "fpsr_flags": outputs["fpsr_flags"] ^ 0x10}

    problems = check(VectorFpConvert, 128, chosen, corrupt)
    for word, _ in chosen:
        name = decode(word).form.name
        assert any(p.startswith(name) and p.endswith(f"z{decode(word)['zd']}")
                   for p in problems), problems
        assert any(p.startswith(name) and "fpsr flags" in p for p in problems), problems


def _packed(values, code: str, offset: int) -> np.ndarray:
    """The first 16 bytes of ``values`` from ``offset`` on (cyclically) as ``struct`` format
    ``code`` (d, f or e)."""
    data = b"".join(struct.pack(f"<{code}", value) for value in values[offset:] + values)
    return np.frombuffer(data[:16], dtype=np.uint8)


#: Values at each destination format's overflow and underflow edges, ties, and denormals.
_EDGES = {"d": [65504.0, 65520.0, 2.0 ** -14 * (1 - 2.0 ** -12), 3 * 2.0 ** -26,
                3.4028235677973366e38, 2.0 ** -149 * 1.5, (2 - 2.0 ** -9) * 2.0 ** 127,
                2.0 ** -133 * 1.25, 2.5, -0.5, 1.5 - 2.0 ** -40, 5e-324, 1e308, 2.0 ** 52 - 0.5],
          "f": [65504.0, 65520.0, 2.0 ** -14, 2.0 ** -24, 2.0 ** -25 * 1.5, 3.0 ** 20,
                2.0 ** -149, 2.0 ** -127, (2 - 2.0 ** -8) * 2.0 ** 127, 2.5, -1.5,
                8388607.5, 3.4028234663852886e38, 2.0 ** -126 * 1.75, 0.75, -2.5],
          "e": [65504.0, 2.0 ** -24, 2.0 ** -14, 1023.5, 0.5, -2.5, 6.1e-05, 3 * 2.0 ** -24,
                -65504.0, 1.5, 2.0 ** -15, 33.0, -0.25, 2047.0, 4095.5, 1.0]}


@pytest.mark.parametrize("code", ["d", "f", "e"])
def test_the_shared_rounder_at_every_formats_edges(code):
    """The conversions, divisions, square roots and FRINT<x> on values at the overflow,
    underflow and tie edges of every destination format, in every rounding and with and
    without flushing, all lanes active."""
    ops = [op for op in VectorFpConvert.OPS
           if op.name.startswith(("FP_FCVT", "FP_BFCVT", "FP_SCVTF", "FP_UCVTF", "FP_DIV",
                                  "FP_SQRT", "FP_FRINT"))]
    values = _EDGES[code]
    per_register = 16 // struct.calcsize(code)
    chosen = []
    for number, (word, state) in enumerate(cases(ops, 128, 0, 11)):
        for rounding in range(4):
            # Each form sees a different window of the edges in each rounding.
            offset = (number + rounding) * per_register % len(values)
            edge_state = copy.deepcopy(state)
            for register in range(32):
                edge_state.z[register] = _packed(values, code, offset + register % 3)
            edge_state.p[:] = 0xFF
            flush = (number + rounding) % 2
            edge_state.fpcr = rounding << 22 | flush << 24 | flush << 19
            chosen.append((word, edge_state))
    assert check(VectorFpConvert, 128, chosen) == []
