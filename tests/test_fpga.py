"""``zatile fpga`` (sw/fpga.py): a design synthesized, placed and routed on an ECP5 with the
pip-installed Yosys and nextpnr, and the report it writes. The default suite places units small
enough to take seconds; the whole SoC wrapper is a soak test (synthesized a unit at a time and
brought to nextpnr, 11 to 16 minutes here)."""

from __future__ import annotations

import json

import pytest

from zatile.sw.cli import main

pytestmark = pytest.mark.usefixtures("open_flow")


def test_the_memory_master_places_and_routes_with_a_report(tmp_path, capsys):
    status = main(["fpga", "--svl", "128", "--features", "I8I32,F32F32",
                   "--design", "memory-master", "-o", str(tmp_path)])
    out = capsys.readouterr().out.splitlines()
    assert status == 0
    report = json.loads((tmp_path / "zatile_fpga.json").read_text())
    assert out[0].startswith("memory_master on LFE5U-85F CABGA381: ") and "Fmax clk" in out[0]
    assert out[1] == str(tmp_path / "zatile_fpga.json")
    assert report["design"] == "memory-master" and report["config"]["max_svl"] == 128
    assert report["fits"] and report["MULT18X18D"] == 0 and report["DP16KD"] == 0
    # Its state: the read-burst registers (64-bit address and next address), AW/W, the
    # pending FIFO; far from the device's 83,640 LUT4.
    assert 200 < report["FF"] < 1000 and 0 < report["LUT4"] < 2000
    assert report["utilisation"]["TRELLIS_COMB"]["available"] > 80_000
    assert report["fmax_mhz"]["clk"] > 50 and report["constraint_mhz"]["clk"] == 100
    assert (tmp_path / "nextpnr.log").read_text().count("Max frequency for clock") >= 1


def test_a_design_that_does_not_fit_is_one_line_and_a_report(tmp_path, capsys):
    status = main(["fpga", "--svl", "128", "--features", "I8I32", "--design", "int-array",
                   "--device", "LFE5U-12F", "--package", "CABGA256", "-o", str(tmp_path)])
    captured = capsys.readouterr()
    assert status == 1 and captured.out == ""
    assert captured.err == ("zatile: error: int_array does not fit LFE5U-12F: MULT18X18D 64 "
                            f"of 28 (report: {tmp_path / 'zatile_fpga.json'})\n")
    report = json.loads((tmp_path / "zatile_fpga.json").read_text())
    assert not report["fits"] and report["MULT18X18D"] == 64
    assert report["utilisation"]["MULT18X18D"] == {"used": 64, "available": 28}


@pytest.mark.soak
def test_the_fpga_configuration_of_the_soc_wrapper(tmp_path, capsys):
    """The SoC wrapper at SVL 128 with I8I32 and F32F32 on an LFE5U-85F: a report either way,
    its ``fits`` true exactly when no cell type is over."""
    status = main(["fpga", "--svl", "128", "--features", "I8I32,F32F32", "-o", str(tmp_path)])
    report = json.loads((tmp_path / "zatile_fpga.json").read_text())
    print(json.dumps({key: report[key] for key in ("fits", "LUT4", "FF", "MULT18X18D",
                                                   "DP16KD")}))
    over = [cell for cell, counts in report["utilisation"].items()
            if counts["used"] > counts["available"]]
    assert report["fits"] == (not over) and status == (0 if report["fits"] else 1)
    assert report["LUT4"] > 10_000 and report["MULT18X18D"] >= 16
    # Synthesized a unit at a time: the SoC's units and the engine's, whose multipliers are
    # every one placed.
    units = report["units"]
    assert "zatile_soc.engine" in units
    assert any(unit.startswith("zatile_soc.engine.vector") for unit in units)
    assert sum(cells.get("MULT18X18D", 0) for cells in units.values()) == report["MULT18X18D"]
