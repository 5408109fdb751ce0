"""The generated Verilog: `zatile verilog`, Verilator lint, and an ECP5 synthesis run.

The lint and synthesis checks run on the cached Verilog of an SVL 128 engine with every feature
(:func:`tb.runner.engine_verilog`), the same files ``zatile verilog --svl 128 -o DIR`` writes.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from zatile.hw.verilog import LINT_WAIVERS, TOPLEVEL
from zatile.sw import cli
from zatile.sw.arch.config import EngineConfig
from zatile.tb.runner import engine_verilog, verilator_env


def test_cli_writes_verilog_control_file_and_json(tmp_path, capsys):
    assert cli.main(["verilog", "--svl", "128", "--features", "i8i32,F32F32", "--mem-width", "64",
                     "--za-contexts", "2", "-o", str(tmp_path)]) == 0
    printed = capsys.readouterr().out.split()
    assert sorted(printed) == sorted(str(tmp_path / f"{TOPLEVEL}{suffix}")
                                     for suffix in (".v", ".vlt", ".json"))
    description = json.loads((tmp_path / f"{TOPLEVEL}.json").read_text())
    config = EngineConfig(max_svl=128, features=frozenset({"I8I32", "F32F32"}),
                          mem_data_width=64, za_contexts=2)
    assert description["config"] == config.to_json_dict()
    assert description["config"]["id_aa64smfr0_el1"] == "0x000000f100000000"
    ports = description["ports"]
    assert ports["mem_req__payload"] == {"direction": "out", "width": 64 + 1 + 64 + 8 + 1}
    assert ports["za_context"] == {"direction": "in", "width": 1}
    assert ports["issue__ready"]["direction"] == "out"
    verilog = (tmp_path / f"{TOPLEVEL}.v").read_text()
    assert re.search(rf"^module {TOPLEVEL}\(", verilog, re.M)
    # Only the configured floating-point unit kinds exist, each as one module.
    modules = re.findall(r"^module (zatile_\w+)\(", verilog, re.M)
    assert modules == [TOPLEVEL, "zatile_fp_mul_add_fp32"]


@pytest.mark.parametrize("arguments, message", [
    (["--svl", "96"], "96"),
    (["--svl", "128", "--features", "I8I32,FP8"], "FP8"),
    (["--svl", "128", "--mem-width", "48"], "48"),
    (["--svl", "128", "--za-contexts", "0"], "0"),
    (["--svl", "256", "--supported-svls", "128,512"], "512"),
])
def test_cli_rejects_bad_arguments_in_one_line(tmp_path, capsys, arguments, message):
    try:
        status = cli.main(["verilog", *arguments, "-o", str(tmp_path)])
    except SystemExit as exit_:         # argparse's own checks (the SVL type)
        status = exit_.code
    assert status == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("zatile: error:") and message in error[0]
    assert not list(tmp_path.iterdir())


def test_verilator_lint_all_warnings_with_listed_waivers():
    verilog, control, _ = engine_verilog(EngineConfig(max_svl=128))
    text = control.read_text()
    for rule, reason in LINT_WAIVERS.items():
        assert f"lint_off -rule {rule}\n" in text and reason in text
    lint = subprocess.run([verilator_env(), "--lint-only", "-Wall", "--top-module", TOPLEVEL,
                           str(control), str(verilog)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stderr[-3000:]
    # The waivers are needed: without them -Wall reports each of those rules.
    bare = subprocess.run([verilator_env(), "--lint-only", "-Wall", "--top-module", TOPLEVEL,
                           str(verilog)], capture_output=True, text=True)
    reported = set(re.findall(r"%Warning-([A-Z]+):", bare.stderr))
    assert set(LINT_WAIVERS) <= reported, set(LINT_WAIVERS) - reported


@pytest.mark.soak
def test_yosys_synth_ecp5_maps_the_whole_engine():
    """The generated Verilog of the SVL 128 engine synthesizes for ECP5 without errors: LUTs,
    flip-flops (ZA, P and pipelines), block RAM (Z) and DSP multipliers (the outer-product
    arrays).

    A soak test: one Yosys run of the whole engine reaches the 4 GiB memory limit of the
    WebAssembly Yosys, so each of its units is synthesized alone (``synth_ecp5_by_unit``),
    two runs at a time; the vector unit takes the longest."""
    from zatile.hw.synthesis import (synth_ecp5_by_unit,  # local: only this test synthesizes
                                     total_counts)

    verilog = engine_verilog(EngineConfig(max_svl=128))[0]
    units = synth_ecp5_by_unit([verilog], TOPLEVEL)
    cells = total_counts(units.values())
    print(units, cells)
    # ZA (16x16 bytes, flip-flop rows with four rows per pass) and P0-P15; Z0-Z31 in two
    # memories, each read through four copies of 4 DP16KD.
    assert cells["TRELLIS_FF"] > 2048 + 256 and cells["DP16KD"] >= 32
    assert cells["LUT4"] > 10_000 and cells["MULT18X18D"] > 0
