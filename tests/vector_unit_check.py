"""One execution unit of hw.vector (with hw.decoder in front) against the reference model.

:func:`cases` draws random instances of the unit's forms (every form once first) on random
streaming states full of edge values, random predicates and random general registers;
:func:`check` runs them through the unit the way the engine feeds it (:mod:`zatile.hw.vector.common`
says which register goes where) and lists every difference from the model by form, word and
register: the Z bytes and P bits the unit writes, its scalar result, NZCV and FPSR flags (FPCR's
DN, FZ, FZ16 and rounding mode are random). ``corrupt`` plants
a difference, so each unit's test shows the comparison catches it.
"""

from __future__ import annotations

import random
from typing import Callable

import numpy as np
from amaranth import Module, Signal
from amaranth.sim import Simulator

from zatile.hw.decoder import Decoder
from zatile.hw.vector.common import VectorOpLayout
from zatile.sim.model import ReferenceModel
from zatile.sim.state import ArchState
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.isa import (FORMS, Trait, decode, destination_of, read_operands,
                                 sources_of)
from zatile.tb.programs import instance
from tests.test_sve_int import _streaming_state

__all__ = ["cases", "check", "CONFIG", "MAX_LATENCY"]

#: The configuration the units are built for: every SVL up to 512 bits.
CONFIG = EngineConfig(max_svl=512)
#: The most cycles a unit may take for one instruction.
MAX_LATENCY = 1024

#: Payload fields and the form fields they hold, first present wins (hw/vector/common.py).
_Z_OPERANDS = {"first": ("zdn", "zn", "vdn", "vn"), "second": ("zm", "vm"),
               "third": ("zda", "za")}
_P_OPERANDS = {"governing": ("pg", "pv"), "pn": ("pn", "pdn"), "pm": ("pm", "pdm")}
_GENERAL = ("rn", "rm", "rdn")
_Z_DESTINATIONS = ("zdn", "zda", "vd", "vdn", "zd")
_P_DESTINATIONS = ("pd", "pdn", "pdm")


def _edge_scalar(rng: random.Random) -> int:
    return rng.choice([0, 1, 2, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0x7FFFFFFF, 0x80000000,
                       0xFFFFFFFF, (1 << 63) - 1, 1 << 63, (1 << 64) - 1,
                       rng.getrandbits(64), rng.getrandbits(8), rng.getrandbits(32)])


def cases(ops, svl: int, count: int, seed: int) -> list[tuple[int, ArchState]]:
    """Every form of ``ops`` (a collection of :class:`Op`) once, then ``count`` random ones,
    each with its own random state at ``svl`` bits."""
    rng = random.Random(seed)
    names = {op.name.lower() for op in ops}
    forms = [form for form in FORMS if form.op in names]
    words = [instance(form, rng) for form in forms]
    words += [instance(rng.choice(forms), rng) for _ in range(count)]
    result = []
    for word in words:
        state = _streaming_state(rng, svl)
        state.x = np.array([_edge_scalar(rng) for _ in range(31)], dtype=np.uint64)
        state.nzcv = rng.getrandbits(4)
        # FPCR: DN (25), FZ (24), RMode (23:22), FZ16 (19), each at random.
        state.fpcr = rng.getrandbits(1) << 25 | rng.getrandbits(1) << 24 \
            | rng.getrandbits(2) << 22 | rng.getrandbits(1) << 19
        result.append((word, state))
    return result


def _padded(array: np.ndarray) -> int:
    return int.from_bytes(array.tobytes(), "little")


def _first_present(fields: dict, names: tuple[str, ...]):
    return next((fields[name] for name in names if name in fields), None)


def check(unit_class, svl: int, case_list, corrupt: Callable | None = None,
          config: EngineConfig = CONFIG, latencies: list | None = None) -> list[str]:
    """Run ``case_list`` through decoder + ``unit_class`` (built for ``config``, whose
    ``max_svl`` is :data:`CONFIG`'s); the differences from the model.

    ``corrupt(word, outputs)`` may alter the unit's outputs (a dict of ``vector``,
    ``vector_lanes``, ``predicate``, ``predicate_lanes``, ``scalar``, ``nzcv``,
    ``fpsr_flags``) before the comparison. ``latencies``, when given, gets each case's cycles
    from the one its instruction is accepted in to the one its result is offered in.
    """
    m = Module()
    m.submodules.decoder = decoder = Decoder(config, frozenset(unit_class.OPS))
    m.submodules.unit = unit = unit_class(config)
    payload = Signal(VectorOpLayout(config))      # what the testbench drives
    m.d.comb += [getattr(unit.op.payload, name).eq(getattr(payload, name))
                 for name, _ in VectorOpLayout(config) if name != "decoded"]
    m.d.comb += unit.op.payload.decoded.eq(decoder.decoded)
    problems = []
    svl_bytes = svl // 8
    mask = (1 << svl_bytes) - 1

    async def bench(ctx):
        ctx.set(payload.svl_mask, mask)
        ctx.set(payload.svl_log2, svl_bytes.bit_length() - 1)
        ctx.set(unit.result.ready, 1)
        for word, state in case_list:
            decoded = decode(word)
            fields = decoded.fields
            ctx.set(decoder.word, word)
            for port, names in _Z_OPERANDS.items():
                number = _first_present(fields, names)
                if port == "third" and number is None and decoded.form.params.get("pairs"):
                    number = (fields["zn"] + 1) % 32
                ctx.set(getattr(payload, port).as_value(),
                        _padded(state.z[number or 0]))
            for port, names in _P_OPERANDS.items():
                ctx.set(getattr(payload, port), _padded(state.p[_first_present(fields, names)
                                                                or 0]))
            sources = dict(zip((r.field for r in sources_of(word)),
                               read_operands(word, state)))
            for name in _GENERAL:
                ctx.set(getattr(payload, name), sources.get(name, 0))
            ctx.set(payload.fpcr, state.fpcr)
            ctx.set(unit.op.valid, 1)
            if not await _wait(ctx, unit.op.ready):
                problems.append(f"{decoded.form.name} 0x{word:08x}: not accepted")
                return
            await ctx.tick()
            ctx.set(unit.op.valid, 0)
            latency = await _wait(ctx, unit.result.valid)
            if latency is None:
                problems.append(f"{decoded.form.name} 0x{word:08x}: no result in "
                                f"{MAX_LATENCY} cycles")
                return
            if latencies is not None:
                latencies.append(latency)
            out = unit.result.payload
            outputs = {name: ctx.get(getattr(out, name).as_value()
                                     if name == "vector" else getattr(out, name))
                       for name in ("vector", "vector_lanes", "predicate", "predicate_lanes",
                                    "scalar", "nzcv", "fpsr_flags")}
            await ctx.tick()        # the result is taken
            if corrupt is not None:
                outputs = corrupt(word, outputs)
            problems.extend(_compare(word, state, outputs, svl))

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return problems


async def _wait(ctx, signal) -> int | None:
    """Tick until ``signal`` is high (at most :data:`MAX_LATENCY` cycles); the ticks it took
    plus one (the cycles from the one before the first tick), or None if it stays low."""
    for ticks in range(MAX_LATENCY):
        if ctx.get(signal):
            return ticks + 1
        await ctx.tick()
    return None


def _compare(word: int, state: ArchState, outputs: dict, svl: int) -> list[str]:
    decoded = decode(word)
    fields = decoded.fields
    svl_bytes = svl // 8
    model = ReferenceModel(EngineConfig(max_svl=512, supported_svls=(svl, 512)), state.copy())
    expected = model.execute(word)
    name = f"{decoded.form.name} 0x{word:08x}"
    if expected.status.name != "OK":
        return [f"{name}: the model says {expected.status.name}"]
    problems = []
    destination = _first_present(fields, _Z_DESTINATIONS)
    if destination is not None:
        written = bytearray(state.z[destination].tobytes())
        for byte in range(svl_bytes):
            if outputs["vector_lanes"] >> byte & 1:
                written[byte] = outputs["vector"] >> (8 * byte) & 0xFF
        if bytes(written) != model.state.z[destination].tobytes():
            problems.append(f"{name}: z{destination}")
    elif outputs["vector_lanes"]:
        problems.append(f"{name}: writes a Z register it has not")
    destination = _first_present(fields, _P_DESTINATIONS)
    if destination is not None:
        old = _padded(state.p[destination])
        lanes = outputs["predicate_lanes"]
        written = (old & ~lanes | outputs["predicate"] & lanes) & ((1 << svl_bytes) - 1)
        if written != _padded(model.state.p[destination]):
            problems.append(f"{name}: p{destination}")
    elif outputs["predicate_lanes"]:
        problems.append(f"{name}: writes a P register it has not")
    if destination_of(word) is not None and expected.scalar is not None \
            and outputs["scalar"] != expected.scalar & ((1 << 64) - 1):
        problems.append(f"{name}: scalar 0x{outputs['scalar']:x} != 0x{expected.scalar:x}")
    if Trait.SETS_FLAGS in decoded.form.traits and outputs["nzcv"] != expected.nzcv:
        problems.append(f"{name}: nzcv {outputs['nzcv']:04b} != {expected.nzcv:04b}")
    flags = expected.fpsr_flags or 0
    if outputs["fpsr_flags"] != flags:
        problems.append(f"{name}: fpsr flags {outputs['fpsr_flags']:08b} != {flags:08b}")
    return problems

