"""Benchmarks: the reference model's instruction rate and the RTL engine's figures.

``zatile bench`` prints these, ``scripts/bench_model.py`` and ``scripts/bench_rtl.py`` too (with
the extras that take minutes: cold builds, synthesis).

* Model (:func:`bench_model`): instructions per second of :class:`~zatile.sim.model.ReferenceModel`
  on a stream, all predicates true and every access mapped. ``mopa``: FMOPA .S and SMOPA .S
  alternating over the four .S tiles; ``ldst``: LD1W/ST1W of horizontal and vertical .S slices
  and LDR/STR ZA.
* RTL (:func:`bench_rtl`): the workloads of :mod:`zatile.tb.bench` run under cocotb, with the
  figures derived from the engine's performance counters (outer products per busy cycle, slices
  per memory beat, cycles per slice) and the simulator's speed. Cycle figures are deterministic;
  seconds depend on the machine.
* GEMM (:func:`bench_gemm`): one call of the kernel library's GEMM (:mod:`zatile.sw.kernels`)
  through :func:`zatile.sw.ops.matmul`; on the RTL, the engine's utilization: the outer
  products a perfect engine needs (one per cycle) divided by the engine's busy cycles.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import numpy as np

from zatile.sim.model import ReferenceModel
from zatile.sim.state import ArchState, Memory
from zatile.sw.arch.asm import assemble
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.engine import Status
from zatile.sw.kernels.gemm import GEMM_TYPES, numpy_dtype

__all__ = ["MODEL_WORKLOADS", "GEMM_DTYPES", "bench_model", "bench_rtl", "rtl_workloads",
           "bench_gemm"]

#: ``zatile bench gemm --dtype``: the kernel types (:data:`zatile.sw.kernels.gemm.GEMM_TYPES`)
#: of each choice.
GEMM_DTYPES = {"fp32": "f32", "fp64": "f64", "fp16": "f16", "bf16": "bf16", "int8": "s8",
               "int16": "s16"}

#: Where the model workloads' data lives.
_DATA = 0x10_0000


def _mopa_stream() -> list[int]:
    lines = []
    for index in range(64):
        tile, zn, zm = index % 4, index % 16, 16 + index % 16
        if index % 2:
            lines.append(f"smopa za{tile}.s, p0/m, p0/m, z{zn}.b, z{zm}.b")
        else:
            lines.append(f"fmopa za{tile}.s, p0/m, p0/m, z{zn}.s, z{zm}.s")
    return assemble("\n".join(lines))


def _load_store_stream() -> list[int]:
    lines = []
    for index in range(64):
        tile, selector, hv = index % 4, 12 + index % 4, "hv"[index // 4 % 2]
        kind = index % 4
        if kind == 0:
            lines.append(f"ld1w {{za{tile}{hv}.s[w{selector}, 1]}}, p0/z, [x0, x1, lsl #2]")
        elif kind == 1:
            lines.append(f"st1w {{za{tile}{hv}.s[w{selector}, 2]}}, p1, [x2, x1, lsl #2]")
        elif kind == 2:
            lines.append(f"ldr za[w{selector}, 3], [x0, #3, mul vl]")
        else:
            lines.append(f"str za[w{selector}, 5], [x2, #5, mul vl]")
    return assemble("\n".join(lines))


#: Model workloads by name, each a function returning its instruction stream.
MODEL_WORKLOADS = {"mopa": _mopa_stream, "ldst": _load_store_stream}


def _model(svl: int) -> ReferenceModel:
    rng = np.random.default_rng(svl)
    svl_b = svl // 8
    state = ArchState(svl=svl, svcr=3, za=rng.integers(0, 256, (svl_b, svl_b)),
                      memory=Memory({_DATA: rng.integers(0, 256, 1 << 16, dtype=np.uint8)}))
    # Z: finite fp32 values (arbitrary bytes to SMOPA); P0/P1 all true.
    state.z[...] = np.frombuffer(rng.uniform(-2, 2, 8 * svl_b).astype(np.float32).tobytes(),
                                 np.uint8).reshape(32, svl_b)
    state.p[...] = 0xFF
    state.x[0], state.x[1], state.x[2] = _DATA, 3, _DATA + 0x8000
    state.x[12:16] = (0, 5, 70000, 0xFFFF_FFFF)
    return ReferenceModel(EngineConfig(max_svl=svl), state)


def bench_model(svl: int, workload: str, instructions: int) -> dict:
    """Run about ``instructions`` instructions of ``workload`` on the model at ``svl``.

    Returns
    -------
    dict
        ``workload``, ``svl``, ``instructions`` (executed), ``seconds`` and
        ``instructions_per_second``.

    Raises
    ------
    ValueError
        For an unknown workload or fewer than one instruction.
    """
    if workload not in MODEL_WORKLOADS:
        raise ValueError(f"unknown model workload {workload!r}; choose from "
                         f"{', '.join(MODEL_WORKLOADS)}")
    if instructions < 1:
        raise ValueError(f"instructions must be at least 1, not {instructions!r}")
    words = MODEL_WORKLOADS[workload]()
    model = _model(svl)
    for word in words:                                    # warm the decode cache
        model.execute(word)
    executed, started = 0, time.perf_counter()
    while executed < instructions:
        for word in words:
            result = model.execute(word)
            if result.status is not Status.OK:
                raise RuntimeError(f"benchmark instruction 0x{word:08x} ended {result}")
        executed += len(words)
    seconds = time.perf_counter() - started
    return {"workload": workload, "svl": svl, "instructions": executed, "seconds": seconds,
            "instructions_per_second": executed / seconds}


def rtl_workloads(config: EngineConfig | None = None) -> tuple[str, ...]:
    """The RTL workloads (:data:`zatile.tb.bench.WORKLOADS`); with ``config``, those whose
    instructions it has the features of."""
    from zatile.tb.bench import WORKLOADS, workload_features  # local: keeps `zatile --help` fast

    return tuple(name for name in WORKLOADS
                 if config is None or workload_features(name) <= config.features)


def _derived(name: str, raw: dict) -> dict:
    """The figures an engineer reads off one RTL workload's raw counters."""
    if name.startswith(("mopa_", "gemm_")):
        return {"outer_products_per_cycle": raw["retired_mopa"] / raw["busy_cycles"]}
    if name.startswith("vector_"):
        return {"instructions_per_cycle": raw["instructions"] / raw["busy_cycles"]}
    if name.startswith("slice_"):
        return {"slices_per_beat": raw["instructions"] / raw["memory_requests"],
                "cycles_per_slice": raw["busy_cycles"] / raw["instructions"]}
    return {"cycles_per_second": raw["cycles"] / raw["wall_seconds"]}


def bench_rtl(config: EngineConfig, workloads, simulator: str = "verilator") -> dict:
    """Run RTL ``workloads`` on the engine built for ``config`` (built once, then cached).

    Returns
    -------
    dict
        Per workload: the raw figures of :mod:`zatile.tb.bench` (cycles, busy cycles, retired
        outer products, memory requests, wall seconds, instructions) and the derived ones.

    Raises
    ------
    ValueError
        For an unknown workload, or one that needs a feature ``config`` leaves out.
    """
    from zatile.tb import runner  # local: keeps `zatile --help` fast
    from zatile.tb.bench import workload_features  # local: keeps `zatile --help` fast

    known = rtl_workloads()
    for name in workloads:
        if name not in known:
            raise ValueError(f"unknown RTL workload {name!r}; choose from {', '.join(known)}")
        missing = sorted(workload_features(name) - config.features)
        if missing:
            raise ValueError(f"RTL workload {name!r} needs {', '.join(missing)}, which the "
                             f"configuration leaves out")
    build = runner.build_engine(config, simulator)
    with tempfile.TemporaryDirectory() as directory:
        output = Path(directory) / "bench.json"
        settings = {"config": config.to_json_dict(), "workloads": list(workloads),
                    "output": str(output)}
        build.run("zatile.tb.bench", extra_env={"ZATILE_BENCH": json.dumps(settings),
                                                "COCOTB_LOG_LEVEL": "WARNING"},
                  test_dir=Path(directory), log_file=Path(directory) / "sim.log")
        results = json.loads(output.read_text())
    return {name: {**raw, **_derived(name, raw)} for name, raw in results.items()}


def bench_gemm(dtype: str, m: int, n: int, k: int, svl: int, backend: str = "rtl") -> dict:
    """One ``m×k @ k×n`` GEMM of random ``dtype`` operands on ``backend`` at ``svl``.

    Returns
    -------
    dict
        ``dtype``, ``m``, ``n``, ``k``, ``svl``, ``backend``, ``seconds`` (wall), ``mopas`` (the
        outer products a perfect engine needs: one per VL×VL tile of C per k group), ``exact``
        (whether C equals :func:`zatile.sw.ops.matmul_reference` bit for bit, or numpy's
        product wrapped to the accumulator for integers), the
        counters of :func:`zatile.sw.ops.matmul`, and on the RTL ``utilization`` (``mopas`` /
        busy cycles), ``loads_per_outer_product`` (memory instructions per outer product issued)
        and ``bytes_moved`` (memory instructions × SVL bytes); ``utilization`` is None on the
        model, which has no cycles.

    Raises
    ------
    ValueError
        For an unknown dtype.
    """
    from zatile.sw.ops import matmul, matmul_reference  # local: keeps `zatile --help` fast

    if dtype not in GEMM_DTYPES:
        raise ValueError(f"unknown GEMM dtype {dtype!r}; choose from {', '.join(GEMM_DTYPES)}")
    kind = GEMM_TYPES[GEMM_DTYPES[dtype]]
    rng = np.random.default_rng(0)

    def operand(name, shape):
        element = numpy_dtype(name)
        if element.kind in "fV":                                   # V: ml_dtypes' bfloat16
            return rng.standard_normal(shape).astype(element)
        limits = np.iinfo(element)
        return rng.integers(limits.min, limits.max + 1, shape).astype(element)

    a, b = operand(kind.a, (m, k)), operand(kind.b, (k, n))
    stats: dict = {}
    started = time.perf_counter()
    product = matmul(a, b, backend=backend, svl=svl, stats=stats)
    seconds = time.perf_counter() - started
    if product.dtype.kind == "f":
        expected = matmul_reference(a, b)
    else:                                  # the accumulators wrap
        expected = (a.astype(np.int64) @ b.astype(np.int64)).astype(product.dtype)
    exact = product.tobytes() == expected.tobytes()
    vl = svl // (8 << kind.result_shift)
    mopas = -(-m // vl) * -(-n // vl) * -(-k // kind.group)
    figures = {"dtype": dtype, "m": m, "n": n, "k": k, "svl": svl, "backend": backend,
               "seconds": seconds, "mopas": mopas, "exact": exact, **stats,
               "utilization": None}
    if "busy_cycles" in stats:
        figures.update(utilization=mopas / stats["busy_cycles"],
                       loads_per_outer_product=stats["memory_instructions"]
                       / stats["outer_products"],
                       bytes_moved=stats["memory_instructions"] * svl // 8)
    return figures
