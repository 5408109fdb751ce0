"""hw.sve_unit (with hw.decoder in front) against the reference model.

Random instances of PTRUE, PFALSE, WHILELT/WHILELO, DUP, CNTx, RDVL, RDSVL, ADDSVL, ADDSPL and
MRS SVCR, with operands near every boundary, at every SVL an engine of max SVL 512 supports:
the predicate, vector and scalar outputs must equal what the model writes, and the flags of
WHILE its PredTest.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from amaranth import Module
from amaranth.sim import Simulator

from zatile.hw.decoder import Decoder
from zatile.hw.sve_unit import SVE_OPS, StreamingSveUnit
from zatile.sim.model import ReferenceModel
from zatile.sim.state import ArchState
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.isa import FORMS, decode, scalar_destination, scalar_sources
from zatile.tb.programs import instance

OPS = {op.name.lower() for op in SVE_OPS}
_INTERESTING = (0, 1, 2, 3, 15, 16, 17, 255, 256, 2**31 - 1, 2**31, 2**32 - 1, 2**32,
                2**63 - 1, 2**63, 2**64 - 1, 2**64 - 5)


@pytest.mark.parametrize("svl", [128, 256, 512])
def test_matches_the_model(svl):
    config = EngineConfig(max_svl=512)
    maxb = config.max_svl // 8
    rng = random.Random(svl)
    forms = [form for form in FORMS if form.op in OPS]
    cases = []
    for _ in range(400):
        form = rng.choice(forms)
        word = instance(form, rng)
        x = [rng.choice(_INTERESTING) if rng.random() < 0.7 else rng.getrandbits(64)
             for _ in range(31)]
        cases.append((word, x, rng.getrandbits(64), rng.randrange(4)))

    m = Module()
    m.submodules.decoder = decoder = Decoder(config)
    m.submodules.unit = unit = StreamingSveUnit(config)
    m.d.comb += unit.decoded.eq(decoder.decoded)

    async def bench(ctx):
        ctx.set(unit.svl_log2, (svl // 8).bit_length() - 1)
        for word, x, sp, svcr in cases:
            state = ArchState(svl=svl, svcr=svcr | 1)
            state.x[:] = x
            state.sp = sp
            decoded = decode(word)
            operands = [0 if r.is_zero else (sp if r.is_sp else x[r.number]) & ((1 << r.width) - 1)
                        for r in scalar_sources(decoded)] + [0, 0]
            ctx.set(decoder.word, word)
            ctx.set(unit.first, operands[0])
            ctx.set(unit.second, operands[1])
            ctx.set(unit.svcr, state.svcr)
            model = ReferenceModel(EngineConfig(max_svl=512, supported_svls=(svl, 512)), state)
            result = model.execute(word)
            assert result.status.name == "OK", decoded.form.name
            text = f"{decoded.form.name} 0x{word:08x}"
            if scalar_destination(decoded) is not None:
                assert ctx.get(unit.scalar) == result.scalar & (2**64 - 1), text
            if "pd" in decoded.fields:
                bits = int.from_bytes(state.p[decoded["pd"]].tobytes(), "little")
                assert ctx.get(unit.predicate) == bits, text
            if decoded.form.op == "while":
                # PredTest under all-true: N first active, Z none, C not the last, V 0.
                elements = svl // 8 // decoded.form.params["esize"]
                count = bin(ctx.get(unit.predicate)).count("1")
                expected = (count > 0) << 3 | (count == 0) << 2 | (count < elements) << 1
                assert ctx.get(unit.nzcv) == expected, text
            if decoded.form.op in ("dup_scalar", "dup_imm"):
                vector = ctx.get(unit.vector.as_value()).to_bytes(maxb, "little")
                assert np.array_equal(np.frombuffer(vector[:svl // 8], np.uint8),
                                      state.z[decoded["zd"]]), text

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
