"""The SoC wrapper (hw/soc) under cocotb, through its AXI ports, on Verilator.

Built once for the FPGA configuration (SVL 128, I8I32 and F32F32, a 128-bit bus, one tile row
per cycle) with
:func:`tb.runner.build_soc`, then:

* every directed group of :data:`tb.programs.DIRECTED` and a few random programs, each
  checked by the scoreboard, with the engine bench's operations done through the registers and
  the AXI4 memory (``tb.test_engine`` with ``"soc": true``, :class:`tb.soc.SocBench`), with
  pauses on every channel: the groups that work the memory port hardest whole, the others at
  a small scale;
* ``tb.test_soc_axi``: matrix products from a cocotbext-axi ``AxiRam`` compared with numpy,
  the register map's rules, and the checker catching a corrupted read and a dropped write.

``ZATILE_TB_SEED`` changes every seed; ``ZATILE_SOC_SCALE`` the fraction of the programs of
the other groups (default 0.1, at least one program a group; 1 runs every program of every
group, about 33,000 instructions in 6 minutes on two cores).
"""

from __future__ import annotations

import json
import os
import time

import pytest

from zatile.sim.tools import tools_required

try:
    import cocotbext.axi  # noqa: F401 (tb.soc needs it; here only to skip without it)
except ImportError as missing:
    if tools_required():
        raise ImportError(f"cocotbext-axi is not installed (ZATILE_REQUIRE_TOOLS=1): "
                          f"{missing}") from None
    pytest.skip(f"cocotbext-axi is not installed: {missing}", allow_module_level=True)

from zatile.sw.arch.config import EngineConfig
from zatile.tb.programs import DIRECTED
from zatile.tb.runner import CACHE, Build, build_soc

SEED = int(os.environ.get("ZATILE_TB_SEED", "1"))
SCALE = float(os.environ.get("ZATILE_SOC_SCALE", "0.1"))
#: The configuration the FPGA build uses: its arrays compute one tile row per cycle (four
#: passes per outer product), a quarter of the multipliers and FP units, its vector ALU
#: and shifter 64 bits per cycle, half their element datapaths, its queues hold 4
#: instructions each (a quarter of the load queue's buffers), and it has one issue lane (the
#: control block issues one instruction per transfer).
FPGA = EngineConfig(max_svl=128, features=frozenset({"I8I32", "F32F32"}), array_rows=1,
                    vector_bits_per_cycle=64, queue_depth=4, issue_lanes=1)
RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"local-{os.getpid()}"
OUTPUT = CACHE / "soc" / RUN
#: Directed groups run whole: memory faults, forced read errors, partial stores, posted stores
#: and read bursts, structure chunks, slices (about 3,700 instructions).
WHOLE_GROUPS = {"memory_errors", "decoupled", "structures", "slices", "overlap", "svcr"}
AXI_TESTS = ["matrix_products", "registers", "checker_catches_corrupt_read",
             "checker_catches_dropped_write"]


@pytest.fixture(scope="module")
def soc() -> Build:
    """The SoC build (cached per configuration and source state)."""
    return build_soc(FPGA)


def _run(build: Build, label: str, module: str, tests: list[str], **settings) -> dict:
    """Run cocotb ``tests`` of ``module`` on the SoC build; what they measured."""
    directory = OUTPUT / label
    settings = {"config": FPGA.to_json_dict(), "svl": FPGA.max_svl, "seed": SEED, "soc": True,
                "output": str(directory), **settings}
    started = time.monotonic()
    run = build.run(module, testcase=tests, extra_env={"ZATILE_TB": json.dumps(settings)},
                    test_dir=directory, log_file=directory / "sim.log")
    stats = {"instructions": 0, "programs": 0, "cycles": 0.0}
    for path in directory.glob("*.stats.json"):
        for key, value in json.loads(path.read_text()).items():
            stats[key] = stats.get(key, 0) + value
    summary = {"label": label, "build_seconds": build.seconds, "build_cached": build.cached,
               "run_seconds": round(time.monotonic() - started, 1), "cocotb_tests": run.tests,
               **stats}
    print(json.dumps(summary))
    assert run.tests == len(tests), f"ran {run.tests} of {len(tests)} cocotb tests"
    return summary


@pytest.mark.parametrize("group", sorted(DIRECTED))
def test_directed_group_through_axi(soc, group):
    summary = _run(soc, f"directed-{group}", "zatile.tb.test_engine", [f"directed_{group}"],
                   scale=1.0 if group in WHOLE_GROUPS else SCALE)
    assert summary["programs"] > 0 and summary["instructions"] > 0, summary
    if group == "memory_errors":
        # through the wrapper: stores faulted after writing their first beats, and errors
        # forced on read beats (never on writes, tb.soc) made loads fault
        coverage = json.loads((OUTPUT / f"directed-{group}" / f"directed_{group}.coverage.json")
                              .read_text())["bins"]["memory"]
        assert summary["partial_store_bytes"] > 0, summary
        assert coverage["forced_error_load"] > 0 and coverage["forced_error_store"] == 0, coverage


def test_random_programs_through_axi(soc):
    summary = _run(soc, "random", "zatile.tb.test_engine", ["random_streams"], programs=8,
                   length=60)
    assert summary["programs"] == 8, summary


def test_axi_models_registers_and_checker(soc):
    _run(soc, "axi", "zatile.tb.test_soc_axi", AXI_TESTS)
