"""The RTL regression: the engine's Verilog under cocotb against the reference model.

Default run (``make test``), on Verilator:

* SVL 128 (``max_svl=128``): every directed group, ZA/Z/P compared after every lock-step
  instruction; random programs in lock step and streaming.
* SVL 256 (``max_svl=256``): every directed group (state compared per program), random
  programs; and the same build run at SVL 128 through SMCR.LEN.
* A variant configuration (64-bit bus, two ZA contexts, some features) at SVL 128.
* Icarus: a smaller set at SVL 128 (skipped with a reason without iverilog, unless
  ``ZATILE_REQUIRE_TOOLS=1``).
* The merged functional-coverage report (``-rP`` shows it; also written to
  ``.zatile-cache/regression/<run>/coverage.txt``).

``-m soak`` runs long random campaigns (``ZATILE_SOAK_PROGRAMS``, default 200 per SVL) and the
SVL 512 smoke subset.
``ZATILE_TB_SEED`` changes every seed; ``ZATILE_WAVES=1`` records FST waveforms.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from zatile.sw.arch.config import EngineConfig
from zatile.tb.coverage import Coverage
from zatile.tb.programs import DIRECTED
from zatile.tb.runner import CACHE, build_engine

SEED = int(os.environ.get("ZATILE_TB_SEED", "1"))
#: The bins the README says SVL 128 leaves unhit with the default seed.
README_SVL128_UNHIT_OUTCOMES = ["outcome/STNT1W_SS:fault"]
GROUPS = sorted(DIRECTED)
RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"local-{os.getpid()}"
OUTPUT = CACHE / "regression" / RUN



def _label(test_name: str) -> str | None:
    """The output directory label of a regression test (by pytest item name)."""
    fixed = {"test_svl128_random": "svl128-random", "test_svl256_random": "svl256-random",
             "test_svl256_build_at_svl128": "svl256-len0", "test_svl512_smoke": "svl512-smoke",
             "test_variant_configuration": "variant",
             "test_icarus_smoke": "icarus-svl128"}
    if test_name in fixed:
        return fixed[test_name]
    for prefix, label in (("test_svl128_directed[", "svl128-"),
                          ("test_svl256_directed[", "svl256-"),
                          ("test_soak[", "soak-svl")):
        if test_name.startswith(prefix):
            return label + test_name[len(prefix):-1]
    return None


def _run(label: str, max_svl: int, tests: list[str], *, svl: int | None = None,
         simulator: str = "verilator", programs: int = 8, length: int = 60,
         check_every: bool = False, scale: float = 1.0, seed: int = SEED,
         config: EngineConfig | None = None) -> dict:
    """Build (cached) and run cocotb tests of ``tb.test_engine``; print what it measured."""
    config = config or EngineConfig(max_svl=max_svl)
    build = build_engine(config, simulator)
    directory = OUTPUT / label
    settings = {"config": config.to_json_dict(), "svl": svl or max_svl, "seed": seed,
                "programs": programs, "length": length, "check_every": check_every,
                "scale": scale, "output": str(directory)}
    started = time.monotonic()
    try:
        run = build.run("zatile.tb.test_engine", testcase=tests,
                        extra_env={"ZATILE_TB": json.dumps(settings)}, test_dir=directory,
                        log_file=directory / "sim.log")
    finally:
        (directory / "finished").touch()
    stats = {"instructions": 0, "cycles": 0.0, "wall_seconds": 0.0, "programs": 0}
    coverage = Coverage(config, [svl or max_svl])
    for path in directory.glob("*.stats.json"):
        for key, value in json.loads(path.read_text()).items():
            stats[key] = stats.get(key, 0) + value
    for path in directory.glob("*.coverage.json"):
        coverage.merge_file(path)
    summary = {"label": label, "simulator": simulator, "build_seconds": build.seconds,
               "build_cached": build.cached, "run_seconds": round(time.monotonic() - started, 1),
               "cocotb_tests": run.tests, **stats,
               "cycles_per_second": round(stats["cycles"] / max(stats["wall_seconds"], 1e-9))}
    (directory / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary))
    print(coverage.report(missing=6))
    assert run.tests == len(tests), f"ran {run.tests} of {len(tests)} cocotb tests"
    assert stats["instructions"] > 0
    return summary


@pytest.mark.parametrize("group", GROUPS)
def test_svl128_directed(group):
    _run(f"svl128-{group}", 128, [f"directed_{group}"], check_every=True)


def test_svl128_random():
    _run("svl128-random", 128, ["random_streams"], programs=16, length=80)


@pytest.mark.parametrize("group", GROUPS)
def test_svl256_directed(group):
    _run(f"svl256-{group}", 256, [f"directed_{group}"])


def test_svl256_random():
    _run("svl256-random", 256, ["random_streams"], programs=12, length=80)


def test_svl256_build_at_svl128():
    """The 256-bit engine running at SVL 128 (SMCR.LEN=0): slices, traps, random traffic."""
    _run("svl256-len0", 256, ["directed_slices", "directed_svcr", "directed_memory_errors",
                              "random_streams"], svl=128, programs=4, scale=0.5)


#: A configuration unlike the default ones: a 64-bit bus (multi-beat slices), two ZA
#: contexts, two supported SVLs, only some features (the others' forms are UNDEF),
#: outer-product arrays of one row (eight passes per .S outer product, four per .D; ZA in
#: skewed banks with a live-value table, holding both contexts), a vector ALU, shifter and
#: FP compare of 64 bits (two chunks per instruction at SVL 128), and one issue lane (one
#: instruction per transfer, one decoder).
VARIANT = EngineConfig(max_svl=256, supported_svls=(128, 256), mem_data_width=64, za_contexts=2,
                       features=frozenset({"I8I32", "F32F32"}), array_rows=1,
                       vector_bits_per_cycle=64, issue_lanes=1)


def test_variant_configuration():
    """The variant engine running at SVL 128: memory traffic over a narrow bus, absent
    features, every form, random streams, and ZA context switches, on arrays computing one
    tile row per cycle, a vector ALU, shifter and FP compare making 64 bits per cycle, and
    one instruction per issue transfer."""
    summary = _run("variant", VARIANT.max_svl, ["directed_forms", "directed_memory_errors",
                                                "directed_unallocated", "random_streams",
                                                "za_contexts"],
                   svl=128, programs=4, config=VARIANT)
    # Multi-beat accesses failed with later beats in flight: the memory abandoned them (and
    # the scoreboard saw no store byte written after a fault).
    assert summary["abandoned_beats"] > 0 and summary["partial_store_bytes"] > 0, summary


@pytest.mark.soak
def test_svl512_smoke():
    """SVL 512 elaborates, builds and runs a slice of every kind of stimulus (soak: the build
    alone took 20 minutes of the default suite's 85)."""
    _run("svl512-smoke", 512, ["directed_forms", "directed_svcr", "directed_memory_errors",
                               "random_streams"], programs=2, length=40, scale=0.25)


def test_icarus_smoke():
    """The engine on a second simulator: a faulting-memory program and a random stream (Icarus
    runs this engine at about 20 cycles per second, so the run is kept to a few minutes)."""
    from conftest import need_tool
    need_tool("iverilog")
    summary = _run("icarus-svl128", 128, ["directed_memory_errors", "random_streams"],
                   simulator="icarus", programs=1, length=40, scale=0.1)
    assert summary["abandoned_beats"] > 0, summary       # accesses did fault part-way


@pytest.mark.soak
@pytest.mark.parametrize("max_svl", [128, 256, 512])
def test_soak(max_svl):
    programs = int(os.environ.get("ZATILE_SOAK_PROGRAMS", "200"))
    _run(f"soak-svl{max_svl}", max_svl, ["random_streams"], programs=programs, length=120,
         seed=SEED + 1000 + max_svl)


def test_zz_coverage_report(request):
    """Merge the coverage of this run's regression tests and print the report (waits for the
    selected regression tests still running on other xdist workers)."""
    selected = {_label(item.name) for item in request.session.items} - {None}
    deadline = time.monotonic() + float(os.environ.get("ZATILE_COVERAGE_WAIT", "900"))
    while time.monotonic() < deadline:
        if all((OUTPUT / label / "finished").exists() for label in selected):
            break
        time.sleep(2)
    reports = {}
    for max_svl in (128, 256):
        coverage = Coverage(EngineConfig(max_svl=max_svl), [max_svl])
        for path in OUTPUT.glob(f"svl{max_svl}-*/*.coverage.json"):
            coverage.merge_file(path)
        reports[max_svl] = coverage
    summaries = [json.loads(p.read_text()) for p in sorted(OUTPUT.glob("*/summary.json"))]
    if not summaries:
        pytest.skip("no regression results in this run (tests deselected)")
    text = "\n".join(
        [f"SVL {svl}: {cov.report(missing=8)}" for svl, cov in reports.items()]
        + [f"{s['label']}: {s['instructions']} instructions, {int(s['cycles'])} cycles, "
           f"{s['cycles_per_second']} cycles/s, run {s['run_seconds']} s, build "
           f"{s['build_seconds']} s{' (cached)' if s['build_cached'] else ''}"
           for s in summaries])
    (OUTPUT / "coverage.txt").write_text(text + "\n")
    print(text)
    hit, total = reports[128].totals()
    if all(_label(f"test_svl128_directed[{g}]") in selected for g in GROUPS):
        assert hit / total > 0.6, f"SVL 128 coverage only {hit}/{total}"
        if SEED == 1 and _label("test_svl128_random") in selected:
            # The README's figure ("SVL 128 hits 10,681 of 10,826 bins"), exactly, and the
            # outcomes it leaves out.
            unhit_outcomes = [b for b in reports[128].unhit() if b.startswith("outcome/")]
            assert unhit_outcomes == README_SVL128_UNHIT_OUTCOMES, reports[128].report()
            assert (hit, total) == (10681, 10826), reports[128].report()


def test_the_rtl_performs_every_operation_of_the_table():
    from zatile.sw.arch.isa import FORMS
    from zatile.tb.implemented import PENDING_OPS, RTL_FORMS
    assert PENDING_OPS == ()
    assert RTL_FORMS == FORMS
