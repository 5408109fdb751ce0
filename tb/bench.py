"""Performance workloads on the engine (a cocotb test module, run by ``scripts/bench_rtl.py``).

``ZATILE_BENCH`` (JSON) names the configuration, the workloads and an output file. Every
workload is issued as one stream with no pauses on any handshake, from a state with SVCR=3,
P0 all true and random Z; its figures come from the engine's performance counters (deltas over
the workload), the number of memory requests, and the wall-clock time of the simulation:

``mopa_rotating_int`` / ``mopa_rotating_fp``
    1,000 SMOPA / FMOPA .S cycling over the four .S tiles (independent accumulators).
``mopa_one_tile_int`` / ``mopa_one_tile_fp``
    1,000 SMOPA / FMOPA into ZA0.S (each depends on the one before).
``slice_loads_aligned`` / ``slice_loads_unaligned``
    256 horizontal LD1W .S tile slices from consecutive vectors of memory, at an address aligned
    to the bus width, or 4 bytes off it.
``slice_stores_aligned``
    256 horizontal ST1W .S tile slices.
``gemm_fp32`` / ``gemm_int8`` / ``gemm_bf16``
    The inner loop of a 2VL×2VL GEMM kernel, as TVM's and KleidiAI's SME kernels issue it: per
    k step, four contiguous vector loads (two columns of A, two rows of B; LD1W, LD1B, LD1H)
    feeding four outer products into ZA0-ZA3 (FMOPA .S, SMOPA .S, BFMOPA); 64 k steps, 256
    outer products. Its utilization is outer products per busy cycle (the limit is 1.00).
``vector_int`` / ``vector_compare`` / ``vector_shift`` / ``vector_multiply`` / ``vector_predicate`` / ``vector_permute``
    1,000 streaming-SVE instructions of one execution unit of the vector unit, over
    independent registers: ADD, SUB, SMAX, AND, SQADD (.S); CMPGT/CMPEQ into predicates with
    ANDS/ORR on predicates between them; ASR, LSL, SXTH, ABS, SQXTNB; MUL, MLA, SMULH; INCW,
    CNTP, UADDV, WHILELO, BRKA; ZIP1, TBL, INDEX, SEL, LASTB. Its figure is instructions per
    busy cycle.
``mixed``
    A random program of the whole subset (:func:`sim.progen.generate_program`), for the
    simulator's cycles per second with the testbench at work on every handshake.
``free_running``
    20,000 cycles of the idle engine with nothing but the clock running: the simulator's own
    speed on this design.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import cocotb
import numpy as np
from cocotb.triggers import Timer

from zatile.sim.progen import generate_program
from zatile.tb.implemented import rtl_weights
from zatile.sim.state import Memory
from zatile.sw.arch.asm import assemble_line
from zatile.tb.engine import CLOCK_NS, EngineBench, smcr_len_for
from zatile.sw.arch.isa import decode, operand_values
from zatile.tb.issue import ScalarFile
from zatile.sw.arch.config import EngineConfig

DATA = 0x10_0000
COUNT = 1000
SLICES = 256

#: Every workload, in report order (module docstring).
WORKLOADS = ("mopa_rotating_int", "mopa_one_tile_int", "mopa_rotating_fp", "mopa_one_tile_fp",
             "slice_loads_aligned", "slice_loads_unaligned", "slice_stores_aligned",
             "gemm_fp32", "gemm_int8", "gemm_bf16", "vector_int", "vector_compare",
             "vector_shift", "vector_multiply", "vector_predicate", "vector_permute", "mixed",
             "free_running")
#: k steps of the GEMM inner loop (four outer products each).
GEMM_STEPS = 64
#: The GEMM workloads' load and outer product (element size in bytes, load, outer product).
_GEMM_KINDS = {
    "fp32": (4, "ld1w {{z{n}.s}}, p0/z, [x0, x8, lsl #2]",
             "fmopa za{tile}.s, p0/m, p0/m, z{a}.s, z{b}.s"),
    "int8": (1, "ld1b {{z{n}.b}}, p0/z, [x0, x8]", "smopa za{tile}.s, p0/m, p0/m, z{a}.b, z{b}.b"),
    "bf16": (2, "ld1h {{z{n}.h}}, p0/z, [x0, x8, lsl #1]",
             "bfmopa za{tile}.s, p0/m, p0/m, z{a}.h, z{b}.h"),
}


#: The vector workloads' instruction patterns (``{d}``, ``{a}``, ``{b}``: registers).
_VECTOR_KINDS = {
    "int": ("add z{d}.s, z{a}.s, z{b}.s", "sub z{d}.s, p0/m, z{d}.s, z{b}.s",
            "smax z{d}.s, p0/m, z{d}.s, z{a}.s", "and z{d}.d, z{a}.d, z{b}.d",
            "sqadd z{d}.s, z{a}.s, z{b}.s"),
    "compare": ("cmpgt p{p}.s, p0/z, z{a}.s, z{b}.s", "cmpeq p{p}.s, p0/z, z{a}.s, #3",
                "ands p{p}.b, p0/z, p{p}.b, p{q}.b", "orr p{p}.b, p0/z, p{q}.b, p{p}.b"),
    "shift": ("asr z{d}.s, z{a}.s, #3", "lsl z{d}.s, p0/m, z{d}.s, z{b}.s",
              "sxth z{d}.s, p0/m, z{a}.s", "abs z{d}.s, p0/m, z{a}.s",
              "sqxtnb z{d}.h, z{a}.s"),
    "multiply": ("mul z{d}.s, p0/m, z{d}.s, z{b}.s", "mla z{d}.s, p0/m, z{a}.s, z{b}.s",
                 "smulh z{d}.s, z{a}.s, z{b}.s", "mul z{d}.s, z{d}.s, #3"),
    "predicate": ("incw x{x}", "cntp x{x}, p0, p{p}.s", "uaddv d{d}, p0, z{a}.s",
                  "whilelo p{p}.s, x{x}, x{y}", "brka p{p}.b, p0/z, p{q}.b"),
    "permute": ("zip1 z{d}.s, z{a}.s, z{b}.s", "tbl z{d}.s, {{z{a}.s}}, z{b}.s",
                "index z{d}.s, #0, #1", "sel z{d}.s, p{p}, z{a}.s, z{b}.s",
                "lastb w{x}, p0, z{a}.s"),
}


def _vectors(kind: str) -> list[tuple[int, tuple]]:
    patterns = _VECTOR_KINDS[kind]
    return [(assemble_line(patterns[index % len(patterns)].format(
        d=16 + index % 8, a=index % 8, b=8 + index % 8, p=1 + index % 7, q=1 + (index + 3) % 7,
        x=index % 8, y=8 + index % 8)), ()) for index in range(COUNT)]


def _mopas(kind: str, rotate: bool) -> list[tuple[int, tuple]]:
    words = []
    for index in range(COUNT):
        tile = index % 4 if rotate else 0
        zn, zm = index % 8, 8 + index % 8
        if kind == "int":
            text = f"smopa za{tile}.s, p0/m, p0/m, z{zn}.b, z{zm}.b"
        else:
            text = f"fmopa za{tile}.s, p0/m, p0/m, z{zn}.s, z{zm}.s"
        words.append((assemble_line(text), ()))
    return words


def _slices(store: bool, offset: int, svl_bytes: int) -> list[tuple[int, tuple]]:
    text = ("st1w {za0h.s[w12, 0]}, p0, [x0, x8, lsl #2]" if store
            else "ld1w {za0h.s[w12, 0]}, p0/z, [x0, x8, lsl #2]")
    word = assemble_line(text)
    dim = svl_bytes // 4
    # The CPU advances the slice selector and the element index between instructions.
    return [(word, operand_values(word, {"rs": index, "rn": DATA + offset, "rm": index * dim}))
            for index in range(SLICES)]


def _gemm(kind: str, svl_bytes: int) -> list[tuple[int, tuple]]:
    """The 2VL×2VL inner loop: per k step, load A0, A1, B0, B1 (consecutive vectors of one
    packed panel), then ZA0 += A0⊗B0, ZA1 += A0⊗B1, ZA2 += A1⊗B0, ZA3 += A1⊗B1. Unrolled by two
    as KleidiAI's kernels are: even steps load Z0-Z3, odd steps Z4-Z7, so that a step's loads
    do not overwrite what the previous step's outer products read."""
    esize, load, mopa = _GEMM_KINDS[kind]
    lanes = svl_bytes // esize
    stream = []
    for step in range(GEMM_STEPS):
        first = 4 * (step % 2)
        for n in range(4):
            word = assemble_line(load.format(n=first + n))
            index = (4 * step + n) * lanes
            stream.append((word, operand_values(word, {"rn": DATA, "rm": index})))
        stream += [(assemble_line(mopa.format(tile=2 * a + b, a=first + a, b=first + 2 + b)), ())
                   for a in range(2) for b in range(2)]
    return stream


def _fixed_stream(name: str, svl_bytes: int) -> list[tuple[int, tuple]] | None:
    """The instruction stream of a workload that is the same every run (all but ``mixed`` and
    ``free_running``: None)."""
    if name.startswith("mopa_"):
        return _mopas(name.rsplit("_", 1)[1], rotate=name.startswith("mopa_rotating"))
    if name.startswith("slice_"):
        return _slices(store="stores" in name, offset=4 if "unaligned" in name else 0,
                       svl_bytes=svl_bytes)
    if name.startswith("gemm_"):
        return _gemm(name.split("_", 1)[1], svl_bytes)
    if name.startswith("vector_"):
        return _vectors(name.split("_", 1)[1])
    return None


def workload_features(name: str) -> frozenset[str]:
    """The optional features (``EngineConfig.features``) the instructions of workload ``name``
    need: on an engine without them its outer products are UNDEF and its figure says nothing.
    ``mixed`` draws from every form and needs none: on an engine without a feature, the
    forms that need it are UNDEF, which is part of its mix."""
    stream = _fixed_stream(name, 16) or []
    return frozenset(feature for feature in (decode(word).form.feature for word, _ in stream)
                     if feature is not None)


async def _measure(bench: EngineBench, stream: list[tuple[int, tuple]]) -> dict:
    before, requests = await bench.read_perf(), bench.memory.requests
    started = time.monotonic()
    for word, sources in stream:
        bench.issue_nowait(word, sources, lambda result: None)
    await bench.drain()
    await bench.wait_idle()
    wall = time.monotonic() - started
    after = await bench.read_perf()
    delta = {name: after[name] - before[name] for name in after}
    delta["memory_requests"] = bench.memory.requests - requests
    delta["wall_seconds"] = wall
    return delta


@cocotb.test()
async def workloads(dut) -> None:
    settings = json.loads(os.environ["ZATILE_BENCH"])
    config = EngineConfig.from_json_dict(settings["config"])
    svl = config.max_svl
    svl_bytes = svl // 8
    rng = random.Random(1)
    bench = EngineBench(dut, config, seed=1, pauses="none", timeout_cycles=200_000)
    memory = Memory({DATA: np.frombuffer(rng.randbytes(SLICES * svl_bytes + 64), np.uint8)})
    await bench.reset(smcr_len=smcr_len_for(svl), memory=memory)
    for text in ["smstart", "ptrue p0.b"] + [f"mov z{n}.b, #{n + 1}" for n in range(16)]:
        result = await bench.execute(assemble_line(text))
        assert result.status == "OK", text
    results = {}
    for name in settings["workloads"]:
        stream = _fixed_stream(name, svl_bytes)
        if name == "free_running":
            started = time.monotonic()
            await Timer(20_000 * CLOCK_NS, "ns")     # no Python per cycle
            results[name] = {"cycles": 20_000, "wall_seconds": time.monotonic() - started,
                             "instructions": 0}
            continue
        if name == "mixed":
            program = generate_program(rng, svl, 2000, weights=rtl_weights())
            initial = program.initial
            host = ScalarFile(initial.x, initial.sp, initial.fpsr, initial.nzcv)
            await bench.load_state(program.initial)
            bench.bus.memory = program.initial.memory.copy()
            stream = [(assemble_line(line), None) for line in program.text.splitlines()
                      if line.strip()]
            stream = [(word, host.sources(word)) for word, _ in stream]
        elif stream is None:
            raise ValueError(f"unknown workload {name!r}")
        results[name] = await _measure(bench, stream)
        results[name]["instructions"] = len(stream)
    Path(settings["output"]).write_text(json.dumps(results, indent=1))
