"""The SoC wrapper on a development board: a board top that makes the engine clock with an ECP5
PLL, bridges the board's USB serial port to the control port and gives the memory port an
on-chip RAM; the Verilog and the pin constraints (LPF) that the open flow builds a bitstream
from (:func:`zatile.hw.place_route.place_and_route`).

========================  =========================================================================
part                      what
========================  =========================================================================
clock                     the board oscillator into an ``EHXPLLL``; its CLKOP (fed back to CLKFB)
                          is the engine clock, the one clock domain of the board top
reset                     held while the PLL is not locked (or the board's reset button, if any,
                          is pressed) and for :data:`RESET_STAGES` engine cycles after
``uart`` resource 0       the :class:`~zatile.hw.soc.uart_bridge.UartAxiLiteBridge`, into ``s_axil``
``m_axi``                 an :class:`~zatile.hw.soc.axi_ram.AxiRam` at address 0
``irq``                   the board's first LED (green of the first RGB LED on the ECPIX-5)
========================  =========================================================================

The SoC is an ``Instance`` of the module :data:`~zatile.hw.soc.verilog.SOC_TOPLEVEL` (its
Verilog from :func:`~zatile.hw.soc.verilog.generate_soc_verilog`), so the board top converts
without elaborating the engine and the SoC is synthesized apart.

ECP5 PLL facts used here (the ECP5 family data sheet's sysCLOCK PLL timing; the relation of the
dividers as Project Trellis's ``ecppll`` states it): with ``FEEDBK_PATH = "CLKOP"``,
``f_PFD = f_in / CLKI_DIV``, ``f_out = f_PFD * CLKFB_DIV`` and ``f_VCO = f_out * CLKOP_DIV``;
input 8 to 400 MHz, PFD 3.125 to 400 MHz, VCO 400 to 800 MHz, output 3.125 to 400 MHz; each
divider 1 to 128.

amaranth-boards (the platforms: pins, I/O standards, the oscillator's frequency) is imported
only by the functions that need a board, so this module imports without it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from amaranth import ClockDomain, ClockSignal, Instance, Module, ResetSignal, Signal, Value
from amaranth.lib import io, wiring
from amaranth.lib.cdc import ResetSynchronizer
from amaranth.lib.wiring import Out

from zatile.hw._common import CheckedComponent
from zatile.hw.soc.axi_ram import AxiRam
from zatile.hw.soc.control import CONTROL_ADDRESS_WIDTH
from zatile.hw.soc.memory_master import ADDRESS_WIDTH
from zatile.hw.soc.top import soc_signature
from zatile.hw.soc.uart_bridge import UartAxiLiteBridge
from zatile.hw.soc.verilog import SOC_TOPLEVEL
from zatile.sw.arch.config import EngineConfig

__all__ = ["PllSettings", "ecp5_pll", "BOARD_TOPLEVEL", "BOARDS",
           "DEFAULT_RAM_BYTES", "MAX_RAM_BYTES", "DEFAULT_BAUD", "RESET_STAGES",
           "check_ram_bytes", "ZaTileBoard", "BoardDesign", "board_platform", "board_part",
           "board_pll", "write_board_design"]

#: (low, high) MHz of the PLL's input, phase detector, oscillator and output.
PLL_INPUT_MHZ = (Fraction(8), Fraction(400))
PLL_PFD_MHZ = (Fraction(25, 8), Fraction(400))
PLL_VCO_MHZ = (Fraction(400), Fraction(800))
PLL_OUTPUT_MHZ = (Fraction(25, 8), Fraction(400))
#: Every divider (CLKI_DIV, CLKFB_DIV, CLKOP_DIV) is 1 to this.
PLL_MAX_DIVIDER = 128
#: Among dividers that make the same frequency, the search prefers the VCO nearest this (MHz),
#: the middle of its range, as ecppll does.
PLL_VCO_TARGET_MHZ = 600


@dataclass(frozen=True)
class PllSettings:
    """The dividers of an ``EHXPLLL`` making one output on CLKOP, fed back from CLKOP.

    Attributes
    ----------
    input_mhz : Fraction
    clki_div, clkfb_div, clkop_div : int
    """

    input_mhz: Fraction
    clki_div: int
    clkfb_div: int
    clkop_div: int

    @property
    def pfd_mhz(self) -> Fraction:
        return self.input_mhz / self.clki_div

    @property
    def output_mhz(self) -> Fraction:
        return self.pfd_mhz * self.clkfb_div

    @property
    def vco_mhz(self) -> Fraction:
        return self.output_mhz * self.clkop_div

    @property
    def clkop_cphase(self) -> int:
        """CLKOP's coarse phase in VCO cycles: half an output period, as ecppll and Lattice's
        own tools set it."""
        return self.clkop_div // 2

    def to_json_dict(self) -> dict:
        return {"input_mhz": float(self.input_mhz), "clki_div": self.clki_div,
                "clkfb_div": self.clkfb_div, "clkop_div": self.clkop_div,
                "clkop_cphase": self.clkop_cphase, "vco_mhz": round(float(self.vco_mhz), 4),
                "output_mhz": round(float(self.output_mhz), 4)}


def _mhz(value) -> str:
    return f"{float(value):g} MHz"


def ecp5_pll(input_mhz: float, output_mhz: float, *, tolerance: float = 0.01) -> PllSettings:
    """The ECP5 PLL dividers making the frequency nearest ``output_mhz`` from ``input_mhz``
    (module notes for the ranges); of equally near ones, the one with its VCO nearest
    :data:`PLL_VCO_TARGET_MHZ`, then the smallest dividers (CLKI_DIV, CLKFB_DIV, CLKOP_DIV in
    that order), the choice ecppll makes.

    Raises
    ------
    ValueError
        Quoting the frequency, if ``input_mhz`` or ``output_mhz`` is outside the PLL's range or
        the nearest frequency it makes is further than ``tolerance`` (a fraction of
        ``output_mhz``) from it.
    """
    for name, value in (("input_mhz", input_mhz), ("output_mhz", output_mhz),
                        ("tolerance", tolerance)):
        if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
            raise TypeError(f"{name} must be a number, not {value!r}")
    source = Fraction(input_mhz)
    wanted = Fraction(output_mhz)
    if not PLL_INPUT_MHZ[0] <= source <= PLL_INPUT_MHZ[1]:
        raise ValueError(f"an ECP5 PLL takes {_mhz(PLL_INPUT_MHZ[0])} to "
                         f"{_mhz(PLL_INPUT_MHZ[1])} in, not {input_mhz:g} MHz")
    if not PLL_OUTPUT_MHZ[0] <= wanted <= PLL_OUTPUT_MHZ[1]:
        raise ValueError(f"an ECP5 PLL makes {_mhz(PLL_OUTPUT_MHZ[0])} to "
                         f"{_mhz(PLL_OUTPUT_MHZ[1])}, not {output_mhz:g} MHz")
    candidates = []
    for clki_div in range(1, PLL_MAX_DIVIDER + 1):
        pfd = source / clki_div
        if not PLL_PFD_MHZ[0] <= pfd <= PLL_PFD_MHZ[1]:
            continue
        for clkfb_div in range(1, PLL_MAX_DIVIDER + 1):
            output = pfd * clkfb_div
            if output > PLL_OUTPUT_MHZ[1]:
                break
            for clkop_div in range(1, PLL_MAX_DIVIDER + 1):
                vco = output * clkop_div
                if vco > PLL_VCO_MHZ[1]:
                    break
                if vco >= PLL_VCO_MHZ[0]:
                    candidates.append((abs(output - wanted), abs(vco - PLL_VCO_TARGET_MHZ),
                                       clki_div, clkfb_div, clkop_div))
    _, _, clki_div, clkfb_div, clkop_div = min(candidates)
    settings = PllSettings(source, clki_div, clkfb_div, clkop_div)
    if abs(settings.output_mhz - wanted) > wanted * Fraction(tolerance):
        raise ValueError(f"an ECP5 PLL cannot make {output_mhz:g} MHz from {input_mhz:g} MHz "
                         f"within {tolerance:.0%} (nearest {float(settings.output_mhz):.4g} MHz)")
    return settings


#: Name of the board top's module.
BOARD_TOPLEVEL = "zatile_board"
#: Board name: (amaranth-boards module, platform class) of the board's LFE5U-85F variant.
BOARDS = {"ulx3s": ("amaranth_boards.ulx3s", "ULX3S_85F_Platform"),
          "ecpix5": ("amaranth_boards.ecpix5", "ECPIX585Platform")}
#: The nextpnr ``--package`` of the amaranth-boards package names.
NEXTPNR_PACKAGES = {"BG256": "CABGA256", "MG285": "CSFBGA285", "BG381": "CABGA381",
                    "BG554": "CABGA554", "BG756": "CABGA756"}
#: On-chip RAM of the board top: 16 KiB, 8 DP16KD; the FPGA configuration of the SoC wrapper
#: (SVL 128, I8I32 and F32F32) takes 181 of an LFE5U-85F's 208.
DEFAULT_RAM_BYTES = 16 * 1024
#: The most on-chip RAM the board top takes: 32 KiB, 16 of the 27 DP16KD that SoC leaves.
MAX_RAM_BYTES = 32 * 1024
DEFAULT_BAUD = 115_200
#: The UART's baud rate is the engine clock over a whole number of cycles per bit: at most this
#: fraction from the rate asked for (8N1 framing tolerates some 4% between the two ends).
BAUD_TOLERANCE = 0.02
#: Engine cycles the reset lasts after the PLL locks.
RESET_STAGES = 4


def check_ram_bytes(config: EngineConfig, ram_bytes: int) -> None:
    """Raise ``ValueError`` quoting ``ram_bytes`` unless it is a size of the board top's RAM
    for ``config``: a power of two from one memory beat to :data:`MAX_RAM_BYTES`."""
    beat = config.mem_data_width // 8
    if (isinstance(ram_bytes, bool) or not isinstance(ram_bytes, int)
            or ram_bytes & (ram_bytes - 1) or not beat <= ram_bytes <= MAX_RAM_BYTES):
        raise ValueError(f"the board RAM must be a power of two from {beat} to "
                         f"{MAX_RAM_BYTES} bytes, not {ram_bytes!r}")


class ZaTileBoard(CheckedComponent):
    """The board top (module notes). Its ports are the board's pins, which it requests from the
    platform it is elaborated for (an amaranth-boards ECP5 platform with ``uart`` resource 0).

    Parameters
    ----------
    config : EngineConfig
        The SoC's configuration (its memory port's data width).
    pll : PllSettings
        The PLL making the engine clock from the board's default clock.
    ram_bytes : int
        On-chip RAM: a power of two from one memory beat to :data:`MAX_RAM_BYTES`.
    baud : int
        The serial port's rate (8N1).

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig` or ``pll`` not a :class:`PllSettings`.
    ValueError
        Quoting ``ram_bytes`` or ``baud`` if not usable (a rate the engine clock cannot divide
        to within :data:`BAUD_TOLERANCE`).
    """

    @staticmethod
    def check_arguments(config, pll, ram_bytes: int = DEFAULT_RAM_BYTES,
                        baud: int = DEFAULT_BAUD) -> None:
        if not isinstance(config, EngineConfig):
            raise TypeError(f"config must be an EngineConfig, not {config!r}")
        if not isinstance(pll, PllSettings):
            raise TypeError(f"pll must be PllSettings, not {pll!r}")
        check_ram_bytes(config, ram_bytes)
        if isinstance(baud, bool) or not isinstance(baud, int) or baud <= 0:
            raise ValueError(f"baud must be a positive integer, not {baud!r}")
        divisor = _divisor(pll, baud)
        if divisor < 4 or abs(pll.output_mhz * 1_000_000 / divisor - baud) > baud * Fraction(
                BAUD_TOLERANCE):
            raise ValueError(f"a {float(pll.output_mhz):g} MHz clock cannot make {baud} baud "
                             f"within {BAUD_TOLERANCE:.0%}")

    def __init__(self, config: EngineConfig, pll: PllSettings,
                 ram_bytes: int = DEFAULT_RAM_BYTES, baud: int = DEFAULT_BAUD):
        self._config = config
        self._pll = pll
        self._ram_bytes = ram_bytes
        self._baud = baud
        super().__init__({})

    @property
    def config(self) -> EngineConfig:
        return self._config

    @property
    def pll(self) -> PllSettings:
        return self._pll

    @property
    def ram_bytes(self) -> int:
        return self._ram_bytes

    @property
    def baud(self) -> int:
        return self._baud

    @property
    def divisor(self) -> int:
        """Engine cycles per bit of the serial port."""
        return _divisor(self._pll, self._baud)

    def elaborate(self, platform):
        m = Module()
        pll = self._pll
        m.submodules.board_clock = board_clock = io.Buffer(
            "i", platform.request(platform.default_clk, 0, dir="-"))
        engine_clock = Signal()
        locked = Signal()
        m.submodules.pll = Instance(
            "EHXPLLL",
            a_FREQUENCY_PIN_CLKI=f"{float(pll.input_mhz):g}",
            a_FREQUENCY_PIN_CLKOP=f"{float(pll.output_mhz):g}",
            p_CLKI_DIV=pll.clki_div, p_CLKFB_DIV=pll.clkfb_div,
            p_CLKOP_DIV=pll.clkop_div, p_CLKOP_CPHASE=pll.clkop_cphase, p_CLKOP_FPHASE=0,
            p_CLKOP_ENABLE="ENABLED", p_FEEDBK_PATH="CLKOP",
            i_CLKI=board_clock.i, i_CLKFB=engine_clock, o_CLKOP=engine_clock, o_LOCK=locked,
            i_RST=0, i_STDBY=0, i_PHASESEL0=0, i_PHASESEL1=0, i_PHASEDIR=1, i_PHASESTEP=1,
            i_PHASELOADREG=1, i_PLLWAKESYNC=0, i_ENCLKOP=0)
        m.domains.sync = sync = ClockDomain("sync")
        m.d.comb += sync.clk.eq(engine_clock)
        held = ~locked
        if platform.default_rst is not None:
            m.submodules.reset_button = button = io.Buffer(
                "i", platform.request(platform.default_rst, 0, dir="-"))
            held = held | button.i
        m.submodules.reset = ResetSynchronizer(held, domain="sync", stages=RESET_STAGES)

        uart = platform.request("uart", 0, dir="-")
        m.submodules.uart_rx = uart_rx = io.Buffer("i", uart.rx)
        m.submodules.uart_tx = uart_tx = io.Buffer("o", uart.tx)
        m.submodules.bridge = bridge = UartAxiLiteBridge(self.divisor, CONTROL_ADDRESS_WIDTH)
        m.d.comb += [bridge.rx.eq(uart_rx.i), uart_tx.o.eq(bridge.tx)]
        m.submodules.ram = ram = AxiRam(self._config.mem_data_width, self._ram_bytes,
                                        address_width=ADDRESS_WIDTH)

        soc = soc_signature(self._config).create()
        ports = {"i_clk": ClockSignal(), "i_rst": ResetSignal()}
        for path, member, value in soc.signature.flatten(soc):
            direction = "o" if member.flow == Out else "i"
            ports[f"{direction}_{'__'.join(str(part) for part in path)}"] = Value.cast(value)
        m.submodules.soc = Instance(SOC_TOPLEVEL, **ports)
        wiring.connect(m, bridge.axi, soc.s_axil)
        wiring.connect(m, soc.m_axi, ram.axi)
        led = _irq_led(platform)
        if led is not None:
            m.submodules.irq_led = led_buffer = io.Buffer("o", led)
            m.d.comb += led_buffer.o.eq(soc.irq)
        return m


def _divisor(pll: PllSettings, baud: int) -> int:
    return round(pll.output_mhz * 1_000_000 / baud)


def _irq_led(platform):
    """The port of the board's first LED, or of the green of its first RGB LED; None if it has
    neither."""
    from amaranth.build import ResourceError  # local: only board tops use the build layer

    for name, colour in (("led", None), ("rgb_led", "g")):
        try:
            platform.lookup(name, 0)
        except ResourceError:
            continue
        led = platform.request(name, 0, dir="-")
        return getattr(led, colour) if colour else led
    return None


@dataclass(frozen=True)
class BoardDesign:
    """The board top written for one board (:func:`write_board_design`).

    Attributes
    ----------
    board : str
        A name of :data:`BOARDS`.
    device, package : str
        The ECP5 part and the nextpnr package name.
    top : str
        The top module (:data:`BOARD_TOPLEVEL`).
    verilog, lpf : Path
        The board top's Verilog (without the SoC's) and its pin constraints.
    pll : PllSettings
    ram_bytes, baud : int
    """

    board: str
    device: str
    package: str
    top: str
    verilog: Path
    lpf: Path
    pll: PllSettings
    ram_bytes: int
    baud: int


def board_platform(board: str):
    """A new amaranth-boards platform of ``board`` (:data:`BOARDS`).

    Raises
    ------
    ValueError
        If ``board`` is not one of :data:`BOARDS`.
    ImportError
        If amaranth-boards is not installed.
    """
    if board not in BOARDS:
        raise ValueError(f"unknown board {board!r} (known: {', '.join(BOARDS)})")
    module, platform = BOARDS[board]
    try:
        return getattr(importlib.import_module(module), platform)()
    except ModuleNotFoundError as missing:
        raise ImportError("amaranth-boards not found: pip install amaranth-boards (part of "
                          "zatile's [dev] extras)") from missing


def board_part(board: str) -> tuple[str, str]:
    """(ECP5 part, nextpnr package) of ``board``.

    Raises
    ------
    ValueError, ImportError
        As :func:`board_platform`.
    """
    platform = board_platform(board)
    return platform.device, NEXTPNR_PACKAGES[platform.package]


def board_pll(board: str, frequency_mhz: float) -> PllSettings:
    """The PLL making ``frequency_mhz`` from ``board``'s oscillator (:func:`ecp5_pll`).

    Raises
    ------
    ValueError, ImportError
        As :func:`board_platform` and :func:`ecp5_pll`.
    """
    return ecp5_pll(board_platform(board).default_clk_frequency / 1e6, frequency_mhz)


def write_board_design(board: str, config: EngineConfig, directory: str | Path, *,
                       frequency_mhz: float, ram_bytes: int = DEFAULT_RAM_BYTES,
                       baud: int = DEFAULT_BAUD) -> BoardDesign:
    """Write the board top of ``board`` (:data:`BOARDS`) for ``config``, its engine clock
    ``frequency_mhz`` (:func:`ecp5_pll`), as ``<BOARD_TOPLEVEL>.v`` and
    ``<BOARD_TOPLEVEL>.lpf`` into ``directory``.

    The platform's own build plan (``platform.prepare``) gives both files: the Verilog with
    the pins' I/O buffers and the LPF with their sites, I/O standards and the oscillator's
    frequency. Its build scripts are not used: :func:`zatile.hw.place_route.place_and_route`
    runs the tools.

    Raises
    ------
    ValueError, TypeError, ImportError
        As :func:`board_platform`, :func:`ecp5_pll` and :class:`ZaTileBoard`.
    """
    platform = board_platform(board)
    pll = board_pll(board, frequency_mhz)
    top = ZaTileBoard(config, pll, ram_bytes, baud)
    plan = platform.prepare(top, name=BOARD_TOPLEVEL, debug_verilog=True)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    verilog = directory / f"{BOARD_TOPLEVEL}.v"
    lpf = directory / f"{BOARD_TOPLEVEL}.lpf"
    verilog.write_text(plan.files[f"{BOARD_TOPLEVEL}.debug.v"])
    lpf.write_text(plan.files[f"{BOARD_TOPLEVEL}.lpf"])
    return BoardDesign(board, platform.device, NEXTPNR_PACKAGES[platform.package],
                       BOARD_TOPLEVEL, verilog, lpf, pll, ram_bytes, baud)
