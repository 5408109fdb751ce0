"""sim.rtl: the RTL backend behind ``zatile run/compare/demo --backend rtl`` (Verilator)."""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest

from zatile.sw.backends import compare, run_program
from zatile.sim.compare import first_difference
from zatile.sim.progen import generate_program
from zatile.tb.rtl_run import run_rtl, run_rtl_batch
from zatile.sim.state import ArchState, Memory
from zatile.sw import cli
from zatile.hw.perf_counters import PERF_COUNTERS
from zatile.sw.arch.config import EngineConfig

PROGRAM = """\
smstart
rdsvl x20, #2
mrs x21, svcr
ptrue p0.s
ld1w {za1h.s[w12, 1]}, p0/z, [x0]
mov z3.s, p0/m, za1h.s[w12, 1]
smopa za0.s, p0/m, p0/m, z3.b, z3.b
st1w {za0v.s[w13, 2]}, p0, [x1, x8, lsl #2]
str za[w12, 3], [x0, #3, mul vl]
ld1w {za2h.s[w12, 0]}, p0/z, [x2]
addsvl sp, sp, #-1
smstop sm
"""


def _state(svl: int = 128) -> ArchState:
    rng = np.random.default_rng(7)
    state = ArchState(svl=svl)
    state.memory = Memory({0x10000: rng.integers(0, 256, 4096, dtype=np.uint8)})
    state.x[0:2] = (0x10000, 0x10400)
    state.x[2] = 0x9000                        # unmapped: the last load faults
    state.x[8] = 3
    state.x[12:14] = (5, 0xFFFF_FFFF)
    state.sp = 0x10800
    state.fpsr = 0x10
    return state


def test_program_matches_the_model_and_unpacks():
    initial = _state()
    outcome = run_rtl(PROGRAM, initial, EngineConfig(max_svl=128))
    final, results = outcome
    assert final is outcome.final and len(results) == len(outcome.outcomes) == 12
    assert [o.status for o in outcome.outcomes].count("fault") == 1
    assert final.x[20] == 32 and final.x[21] == 3 and final.sp == 0x10800 - 16
    assert final.fpsr == 0x0800009F and outcome.cycles > 0
    model = run_program("model", PROGRAM, initial, EngineConfig(max_svl=128))
    assert [(o.status, o.smtc, o.fault_address) for o in model.outcomes] == \
        [(o.status, o.smtc, o.fault_address) for o in outcome.outcomes]


def test_a_batch_in_one_simulation_gives_what_each_program_gives_alone():
    """run_rtl_batch resets the engine between programs: each program's outcome (final state,
    results, performance counters) is the one it has alone, whatever ran before it."""
    from zatile.tb.implemented import rtl_weights  # local: as in the test below

    config = EngineConfig(max_svl=128)
    programs = [generate_program(random.Random(f"rtl-batch:{index}"), 128, 30,
                                 weights=rtl_weights()) for index in range(3)]
    pairs = [(program.text, program.initial) for program in programs] + [(PROGRAM, _state())]
    batch = run_rtl_batch(pairs, config)
    assert len(batch) == 4
    for (source, initial), together in zip(pairs, batch):
        alone = run_rtl(source, initial, config)
        assert first_difference(alone.final, together.final, compare_za=True) is None
        assert together.results == alone.results and together.perf == alone.perf
    with pytest.raises(ValueError, match="SVL 256 is not supported"):
        run_rtl_batch([(PROGRAM, _state()), ("smstart", ArchState(svl=256))], config)


def test_compare_model_and_rtl_on_random_programs():
    from zatile.tb.implemented import rtl_weights

    for index in range(3):
        # only what the RTL performs (the model executes the pending operations, the RTL
        # makes them UNDEF)
        program = generate_program(random.Random(f"rtl-backend:{index}"), 128, 40,
                                   weights=rtl_weights())
        result = compare(program.text, program.initial, ["model", "rtl"],
                         EngineConfig(max_svl=128))
        assert result.agree, result.difference


@pytest.fixture
def program_files(tmp_path):
    """PROGRAM and its initial state, as the files ``zatile run`` takes."""
    source = tmp_path / "prog.s"
    source.write_text(PROGRAM)
    state = tmp_path / "in.npz"
    _state().save(state)
    return source, state


@pytest.mark.soak
def test_cli_run_writes_a_waveform(tmp_path, capsys, program_files):
    """``zatile run --backend rtl --waves``: a traced engine build (about 7 minutes of Verilator
    for the SVL 128 engine, hence under soak; the tb's traced builds are covered by
    tests/test_tb_vip.py on a small design)."""
    source, state = program_files
    waves = tmp_path / "run.wave"
    assert cli.main(["run", str(source), "--svl", "128", "--backend", "rtl", "--state-in",
                     str(state), "--waves", str(waves), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["waveform"] == str(waves) and waves.stat().st_size > 0
    assert set(report["rtl"]["perf"]) == set(PERF_COUNTERS) and report["rtl"]["perf"]["traps"] == 1


def test_cli_run_and_compare(tmp_path, capsys, program_files):
    source, state = program_files
    out = tmp_path / "out.npz"
    assert cli.main(["run", str(source), "--svl", "128", "--backend", "rtl", "--state-in",
                     str(state), "--state-out", str(out), "--show", "za0.s"]) == 0
    text = capsys.readouterr().out
    assert "12 instructions on rtl at SVL 128; 1 trapped" in text and "za0.s (4x4" in text
    assert ArchState.load(out).x[20] == 32
    # Every performance counter, over the program alone: 12 instructions, 1 fault, 1 SMOPA
    # whose .b predicates (PTRUE .S) keep 1 byte of each 4: 4 rows x 4 columns x 1 way.
    assert re.search(r"RTL: \d+ cycles for the program", text)
    assert re.search(r"retired=11, retired_mopa=1, retired_ldst=3, retired_other=7, traps=1, "
                     r"macs=16", text), text
    assert cli.main(["compare", str(source), "--svl", "128", "--backends", "model,rtl",
                     "--state-in", str(state)]) == 0
    assert "model, rtl agree at SVL 128" in capsys.readouterr().out


@pytest.mark.soak
def test_demo_on_rtl(capsys):
    """The shipped int8 GEMM (SVL 512) on the RTL, checked against numpy (soak: the only
    default test that would need an SVL 512 build)."""
    assert cli.main(["demo", "--backend", "rtl"]) == 0
    assert "matches numpy" in capsys.readouterr().out


def test_unsupported_svl_is_rejected():
    with pytest.raises(ValueError, match="SVL 512 is not supported"):
        run_rtl("smstart", ArchState(svl=512), EngineConfig(max_svl=256))


def test_a_qemu_quirk_does_not_leak_into_the_model_rtl_pair(qemu):
    """The campaign that once reported a false ``model != rtl: za row 11 byte 24``: with QEMU in
    the list, the vertical-LD1 quirk is applied to the model-versus-QEMU pair only, in a
    campaign whose programs meet the quirk."""
    from zatile.sw.campaign import run_campaign
    from tests.test_compare import QUIRK_CAMPAIGN, seed_meeting_the_quirk

    report = run_campaign(**QUIRK_CAMPAIGN, seed=seed_meeting_the_quirk(),
                          backends=["model", "qemu", "rtl"])
    assert report.mismatches == []
    assert report.divergences["qemu-vertical-ld1-stale-tail"] >= 1


def test_bench_rtl_prints_the_deterministic_cycle_figures(capsys):
    """``zatile bench --backend rtl``: the outer-product and slice figures are cycle counts of
    the engine, the same on every run (README, "Measured")."""
    assert cli.main(["bench", "--backend", "rtl", "--svl", "128", "--workloads",
                 "mopa_rotating_int,mopa_one_tile_fp,slice_loads_aligned,slice_stores_aligned",
                 "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)["results"]["128"]
    # One per cycle, and the integer array's three stages to drain.
    assert (figures["mopa_rotating_int"]["retired_mopa"],
            figures["mopa_rotating_int"]["busy_cycles"]) == (1000, 1003)
    assert figures["mopa_one_tile_fp"]["outer_products_per_cycle"] == pytest.approx(0.25, abs=1e-3)
    # Four cycles per slice; the last result leaves as the last slice completes.
    assert (figures["slice_loads_aligned"]["slices_per_beat"],
            figures["slice_loads_aligned"]["busy_cycles"]) == (1.0, 4 * 256)
    # Stores post (docs/architecture.md): one per cycle, three cycles of fill and drain.
    assert (figures["slice_stores_aligned"]["slices_per_beat"],
            figures["slice_stores_aligned"]["busy_cycles"]) == (1.0, 256 + 3)


@pytest.mark.parametrize("svl", [128, 256])
def test_bench_gemm_inner_loop_overlaps_loads_and_outer_products(capsys, svl):
    """The 2VL×2VL GEMM inner loop (four loads feeding four outer products per k step): its
    deterministic cycle count, one outer product per cycle once the load queue overlaps the
    loads with the outer products (docs/architecture.md, "Decoupled execution")."""
    assert cli.main(["bench", "--backend", "rtl", "--svl", str(svl), "--workloads",
                     "gemm_fp32,gemm_int8,gemm_bf16", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)["results"][str(svl)]
    for kind in ("fp32", "int8", "bf16"):
        gemm = figures[f"gemm_{kind}"]
        assert gemm["retired_mopa"] == 256 and gemm["memory_requests"] == 256, kind
        assert gemm["busy_cycles"] == GEMM_BUSY_CYCLES[kind], kind


def test_bench_vector_unit_throughput(capsys):
    """Vector-unit instructions: each waits in dispatch for the unit's result, so a stream of
    them completes one every two cycles (deterministic; the decoupled engine will overlap them)."""
    assert cli.main(["bench", "--backend", "rtl", "--svl", "128", "--workloads",
                     "vector_int,vector_compare", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)["results"]["128"]
    for name in ("vector_int", "vector_compare"):
        assert figures[name]["retired"] == 1000, name
        assert figures[name]["busy_cycles"] == VECTOR_BUSY_CYCLES_SVL128, name


#: Busy cycles of 1,000 vector-unit instructions at SVL 128 (two per instruction: dispatch, then
#: the unit's result; a result nothing is queued before leaves as its instruction completes).
VECTOR_BUSY_CYCLES_SVL128 = 2000


#: Busy cycles of the 64-step GEMM inner loop (the same at SVL 128 and 256, whose engine the
#: regression builds anyway): its 256 outer products, one per cycle
#: (two instructions per cycle through the issue port), plus the pipeline's fill and drain
#: (utilization 256 / this: 0.959; one instruction per cycle took 520, the one-at-a-time engine
#: 1,284). The integer array's last accumulation drains 1 cycle sooner than the floating-point
#: ones (its products, sums and write-back take three stages to their four).
GEMM_BUSY_CYCLES = {"fp32": 267, "int8": 266, "bf16": 267}
