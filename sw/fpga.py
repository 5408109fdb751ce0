"""The FPGA flow: a design of one engine configuration placed and routed on a Lattice ECP5 with
the open, pip-installed tools (Yosys ``synth_ecp5`` and nextpnr-ecp5, :mod:`zatile.hw.place_route`),
and a report of what it takes and how fast it runs. ``zatile fpga`` is its command-line face.

The designs (:data:`DESIGNS`): ``soc``, the SoC wrapper an FPGA system instantiates (the engine
on AXI4 and AXI4-Lite, :mod:`zatile.hw.soc`); ``engine``, the bare engine with its native ports;
single units, each alone as its own top, to see which one takes the area or limits the clock;
and ``axi-ram``, the on-chip AXI4 memory a board without other memory gives the engine.
Out of context: ports are not pins, so the figures are the logic's own. The engine and the SoC
are too big for one Yosys run (the WebAssembly Yosys has 4 GiB): they are synthesized a unit at
a time (:data:`UNIT_LEVELS`, :func:`~zatile.hw.synthesis.synth_ecp5_by_unit`) and placed as one
netlist.

On a board (:data:`BOARD_NAMES`; ``--board`` of ``zatile fpga``) the SoC wrapper is placed in
context instead: inside the board top of :mod:`zatile.hw.soc.board` (an ECP5 PLL making the engine
clock, the USB serial port bridged to the control port, an on-chip RAM on the memory port), on
the board's pins, and packed to a bitstream.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

from zatile.hw.place_route import DoesNotFit, place_and_route, utilisation_json
from zatile.sw.arch.config import EngineConfig

__all__ = ["DESIGNS", "UNIT_LEVELS", "REPORT_NAME", "BITSTREAM_NAME", "ON_CHIP_RAM_BYTES",
           "check_board_options", "place_design"]

#: The report's file name in the output folder.
REPORT_NAME = "zatile_fpga.json"
#: The bitstream's file name in the output folder (a design placed on a board).
BITSTREAM_NAME = "zatile_board.bit"
#: Bytes of the on-chip AXI4 memory (``axi-ram``): 64 KiB, 32 of an LFE5U-85F's 208 DP16KD.
ON_CHIP_RAM_BYTES = 64 * 1024


def _soc(config: EngineConfig, directory: Path) -> tuple[list[Path], str]:
    from zatile.hw.soc.verilog import SOC_TOPLEVEL, generate_soc_verilog  # local: heavy import

    return generate_soc_verilog(config, directory)[:1], SOC_TOPLEVEL


def _engine(config: EngineConfig, directory: Path) -> tuple[list[Path], str]:
    from zatile.hw.verilog import TOPLEVEL, generate_verilog  # local: heavy import

    return generate_verilog(config, directory)[:1], TOPLEVEL


def _unit(name: str, make: Callable):
    """A design of one unit alone: ``make(config, library)`` builds it (``library`` a
    :class:`~zatile.hw.library.ModuleLibrary` for its repeated units)."""
    def write(config: EngineConfig, directory: Path) -> tuple[list[Path], str]:
        from amaranth.back import verilog  # local: keeps `zatile --help` fast

        from zatile.hw.library import ModuleLibrary  # local: likewise

        library = ModuleLibrary()
        top = name.replace("-", "_")
        source = directory / f"{top}.v"
        directory.mkdir(parents=True, exist_ok=True)
        source.write_text(verilog.convert(make(config, library), name=top, emit_src=False,
                                          strip_internal_attrs=True) + library.verilog())
        return [source], top
    return write


def _memory_master(config, library):
    from zatile.hw.soc.memory_master import AxiMemoryMaster  # local: heavy import
    return AxiMemoryMaster(config)


def _control(config, library):
    from zatile.hw.soc.control import AxiLiteControl  # local: heavy import
    return AxiLiteControl(config)


def _on_chip_ram(config, library):
    from zatile.hw.soc.axi_ram import AxiRam  # local: heavy import
    return AxiRam(config.mem_data_width, ON_CHIP_RAM_BYTES)


def _int_array(config, library):
    from zatile.hw.int_mopa import IntOuterProductArray  # local: heavy import
    return IntOuterProductArray(config)


def _fp_array(config, library):
    from zatile.hw.fp.fp_mopa import FpOuterProductArray  # local: heavy import
    return FpOuterProductArray(config, library)


def _vector_unit(config, library):
    from zatile.hw.vector.unit import VectorUnit  # local: heavy import
    return VectorUnit(config)


def _za_storage(config, library):
    from zatile.hw.fp.fp_mopa import KIND_FEATURES  # local: heavy import
    from zatile.hw.za_storage import ZaStorage  # local: heavy import

    fp = any(config.has(feature) for feature in KIND_FEATURES.values())
    return ZaStorage(config, tile_ports=2 if fp else 1)   # as the engine builds it


def _lsu(config, library):
    from zatile.hw.lsu import LoadStoreUnit  # local: heavy import
    return LoadStoreUnit(config)


#: Design name: a function writing its Verilog into a folder, returning (files, toplevel).
DESIGNS: dict[str, Callable[[EngineConfig, Path], tuple[list[Path], str]]] = {
    "soc": _soc,
    "engine": _engine,
    "memory-master": _unit("memory-master", _memory_master),
    "control": _unit("control", _control),
    "axi-ram": _unit("axi-ram", _on_chip_ram),
    "int-array": _unit("int-array", _int_array),
    "fp-array": _unit("fp-array", _fp_array),
    "vector-unit": _unit("vector-unit", _vector_unit),
    "za-storage": _unit("za-storage", _za_storage),
    "lsu": _unit("lsu", _lsu),
}


#: How deep the designs too big for one Yosys run are split into units: the engine's units, and
#: the SoC wrapper's units and the engine's within it.
UNIT_LEVELS = {"engine": 1, "soc": 2}


def place_design(config: EngineConfig, output: Path, *, design: str = "soc",
                 device: str | None = None, package: str | None = None,
                 frequency_mhz: float = 100.0, seed: int = 1, board: str | None = None,
                 board_ram_bytes: int | None = None) -> dict:
    """Generate ``design`` for ``config`` into ``output``, place and route it, and write the
    report (:data:`REPORT_NAME`: the configuration, the device, ``fits``, LUT4, FF,
    MULT18X18D, DP16KD, every cell type's use, the Fmax nextpnr reports against the
    ``frequency_mhz`` constraint, the seconds each step took and, for a design synthesized a
    unit at a time, each unit's cells); return the report.

    Without ``board`` the design is placed out of context on ``device`` (default LFE5U-85F) in
    ``package`` (default CABGA381). With ``board`` (a name of
    :data:`~zatile.hw.soc.board.BOARDS`; ``design`` must be ``soc``) it is the SoC in the
    board top on the board's part and pins, its engine clock ``frequency_mhz`` made by the PLL,
    ``board_ram_bytes`` of on-chip RAM (default
    :data:`~zatile.hw.soc.board.DEFAULT_RAM_BYTES`), packed to ``output/``
    :data:`BITSTREAM_NAME`; the report adds ``board``, ``bitstream``, ``pll`` (dividers,
    achieved MHz), ``board_ram_bytes``, ``baud`` and ``engine_clock`` (the PLL output's net,
    Fmax and constraint).

    The nextpnr log is ``output/nextpnr.log``.

    Raises
    ------
    ValueError
        For an unknown design, device or board, a board with another design or another part
        than ``device``/``package``, a frequency the board's PLL cannot make, a RAM size the
        board top does not take.
    ImportError
        For a board, if amaranth-boards is not installed.
    DoesNotFit
        After writing the report (``fits`` false, nextpnr's counts), when the design needs
        more cells of some type than the device has.
    SynthesisError, PlaceRouteError
        When Yosys, nextpnr or ecppack fail otherwise.
    """
    if design not in DESIGNS:
        raise ValueError(f"unknown design {design!r} (known: {', '.join(DESIGNS)})")
    if board is None:
        if board_ram_bytes is not None:
            raise ValueError(f"an on-chip RAM of {board_ram_bytes!r} bytes needs a board")
        device = device or "LFE5U-85F"
        package = package or "CABGA381"
    else:
        device, package = check_board_options(config, board, design=design, device=device,
                                              package=package, frequency_mhz=frequency_mhz,
                                              ram_bytes=board_ram_bytes)
    output.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    options = {"device": device, "package": package, "seed": seed, "log": output / "nextpnr.log",
               "unit_levels": UNIT_LEVELS.get(design, 0), "frequency_mhz": frequency_mhz}
    if board is None:
        sources, top = DESIGNS[design](config, output / "rtl")
        board_report = {}
    else:
        sources, top, board_report = _board_design(board, config, output, frequency_mhz,
                                                   board_ram_bytes)
        options.update(apart=[board_report["soc_toplevel"]],
                       frequency_mhz=board_report["pll"]["output_mhz"],
                       lpf=Path(board_report["lpf"]), bitstream=output / BITSTREAM_NAME)
    generated = time.monotonic()
    report = {"design": design, "toplevel": top, "config": config.to_json_dict(),
              "device": device, "package": package, "frequency_mhz": frequency_mhz,
              **board_report}
    try:
        result = place_and_route(sources, top, **options)
    except DoesNotFit as problem:
        report.update(utilisation_json(problem.utilisation, problem.units))
        _write_report(output, report, started, generated)
        raise
    report.update(result.to_json_dict())
    if board is not None:
        report["engine_clock"] = _engine_clock(result.fmax, report["pll"]["output_mhz"])
    _write_report(output, report, started, generated)
    return report


def check_board_options(config: EngineConfig, board: str, *, design: str = "soc",
                        device: str | None = None, package: str | None = None,
                        frequency_mhz: float = 100.0,
                        ram_bytes: int | None = None) -> tuple[str, str]:
    """Check the options of a :func:`place_design` on ``board``: the ``soc`` design, the
    board's part (``device`` and ``package``, when given, must be its), a frequency its PLL
    makes, a RAM size its board top takes; return the board's (device, package).

    Raises
    ------
    ValueError
        Quoting the first option that does not go with the board.
    ImportError
        If amaranth-boards is not installed.
    """
    # local: heavy import (the board top imports the SoC wrapper)
    from zatile.hw.soc.board import BOARDS, board_part, board_pll, check_ram_bytes

    if board not in BOARDS:
        raise ValueError(f"unknown board {board!r} (known: {', '.join(BOARDS)})")
    if design != "soc":
        raise ValueError(f"board {board} takes the soc design, not {design!r}")
    board_device, board_package = board_part(board)
    for option, asked, fixed in (("device", device, board_device),
                                 ("package", package, board_package)):
        if asked is not None and asked != fixed:
            raise ValueError(f"{option} {asked} conflicts with board {board} ({fixed})")
    board_pll(board, frequency_mhz)
    if ram_bytes is not None:
        check_ram_bytes(config, ram_bytes)
    return board_device, board_package


def _board_design(board: str, config: EngineConfig, output: Path, frequency_mhz: float,
                  ram_bytes: int | None) -> tuple[list[Path], str, dict]:
    """Write the board top and the SoC into ``output/rtl``; return the sources, the top and
    the report's board entries."""
    from zatile.hw.soc.board import DEFAULT_RAM_BYTES, write_board_design  # local: heavy import

    written = write_board_design(board, config, output / "rtl", frequency_mhz=frequency_mhz,
                                 ram_bytes=DEFAULT_RAM_BYTES if ram_bytes is None else ram_bytes)
    soc_sources, soc_top = _soc(config, output / "rtl")
    return [written.verilog, *soc_sources], written.top, {
        "board": board, "pll": written.pll.to_json_dict(), "board_ram_bytes": written.ram_bytes,
        "baud": written.baud, "soc_toplevel": soc_top, "lpf": str(written.lpf)}


def _engine_clock(fmax: dict[str, tuple[float, float]], pll_mhz: float) -> dict | None:
    """The engine clock's entry of nextpnr's Fmax figures: the clock constrained to the PLL's
    output (nextpnr derives it from the oscillator's constraint; the board top has no other
    clocked logic). None if nextpnr reports no such clock."""
    for net, (achieved, constraint) in fmax.items():
        if abs(constraint - pll_mhz) <= pll_mhz / 1000:     # nextpnr rounds it
            return {"net": net, "fmax_mhz": round(achieved, 2), "constraint_mhz": constraint,
                    "timing_met": achieved >= constraint}
    return None


def _write_report(output: Path, report: dict, started: float, generated: float) -> None:
    report["seconds"] = {"verilog": round(generated - started, 1),
                         "synthesis_and_place_route": round(time.monotonic() - generated, 1)}
    (output / REPORT_NAME).write_text(json.dumps(report, indent=1) + "\n")
