"""SVE instructions that are illegal in streaming mode on an engine without FEAT_SME_FA64 stay
UNDEFINED (docs/isa.md, "Illegal in streaming mode"): binutils assembles each one, and neither
zatile's table nor the reference model accepts it at PSTATE.SM=1 — whatever streaming-SVE forms
are added."""

from __future__ import annotations

import pytest

from zatile.sim.binutils import gnu_assemble
from zatile.sim.model import ReferenceModel
from zatile.sim.state import ArchState
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.engine import Status
from zatile.sw.arch.isa import decode
from tests.conftest import need_tool

#: One instance of each class, as GNU as spells it.
ILLEGAL_IN_STREAMING = {
    "gather load, scalar plus vector": "ld1w {z0.s}, p0/z, [x0, z1.s, uxtw #2]",
    "gather load, vector plus immediate": "ld1d {z0.d}, p0/z, [z1.d, #8]",
    "scatter store": "st1w {z0.s}, p0, [x0, z1.s, uxtw #2]",
    "non-temporal gather (SVE2)": "ldnt1w {z0.s}, p0/z, [z1.s]",
    "gather prefetch": "prfb pldl1keep, p0, [x0, z0.s, uxtw]",
    "first-fault load": "ldff1w {z0.s}, p0/z, [x0, x1, lsl #2]",
    "non-fault load": "ldnf1w {z0.s}, p0/z, [x0]",
    "read FFR": "rdffr p0.b",
    "set FFR": "setffr",
    "write FFR": "wrffr p0.b",
    "FADDA": "fadda s0, p0, s0, z1.s",
    "COMPACT": "compact z0.s, p0, z1.s",
    "ADR": "adr z0.s, [z1.s, z2.s]",
    "FEXPA": "fexpa z0.s, z1.s",
    "FTMAD": "ftmad z0.s, z0.s, z1.s, #0",
    "FTSMUL": "ftsmul z0.s, z1.s, z2.s",
    "FTSSEL": "ftssel z0.s, z1.s, z2.s",
    "HISTCNT": "histcnt z0.s, p0/z, z1.s, z2.s",
    "HISTSEG": "histseg z0.b, z1.b, z2.b",
    "MATCH": "match p0.b, p1/z, z0.b, z1.b",
    "NMATCH": "nmatch p0.b, p1/z, z0.b, z1.b",
}


@pytest.fixture(scope="module")
def words():
    need_tool("as")
    need_tool("objcopy")
    return dict(zip(ILLEGAL_IN_STREAMING, gnu_assemble(list(ILLEGAL_IN_STREAMING.values()))))


@pytest.mark.parametrize("name", ILLEGAL_IN_STREAMING)
def test_an_instruction_illegal_in_streaming_mode_is_undefined(words, name):
    word = words[name]
    assert decode(word) is None, f"{ILLEGAL_IN_STREAMING[name]} is in the table"
    state = ArchState(svl=256, svcr=3)
    state.z[1] = 7
    before = state.copy()
    result = ReferenceModel(EngineConfig(max_svl=256), state).execute(word)
    assert result.status is Status.UNDEF
    assert (state.z == before.z).all() and (state.p == before.p).all()
