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
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

from zatile.hw.place_route import DoesNotFit, place_and_route, utilisation_json
from zatile.sw.arch.config import EngineConfig

__all__ = ["DESIGNS", "UNIT_LEVELS", "REPORT_NAME", "ON_CHIP_RAM_BYTES", "place_design"]

#: The report's file name in the output folder.
REPORT_NAME = "zatile_fpga.json"
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
                 device: str = "LFE5U-85F", package: str = "CABGA381",
                 frequency_mhz: float = 100.0, seed: int = 1) -> dict:
    """Generate ``design`` for ``config`` into ``output``, place and route it, and write the
    report (:data:`REPORT_NAME`: the configuration, the device, ``fits``, LUT4, FF,
    MULT18X18D, DP16KD, every cell type's use, the Fmax nextpnr reports against the
    ``frequency_mhz`` constraint, the seconds each step took and, for a design synthesized a
    unit at a time, each unit's cells); return the report.

    The nextpnr log is ``output/nextpnr.log``.

    Raises
    ------
    ValueError
        For an unknown design or device.
    DoesNotFit
        After writing the report (``fits`` false, nextpnr's counts), when the design needs
        more cells of some type than the device has.
    SynthesisError, PlaceRouteError
        When Yosys or nextpnr fail otherwise.
    """
    if design not in DESIGNS:
        raise ValueError(f"unknown design {design!r} (known: {', '.join(DESIGNS)})")
    output.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    sources, top = DESIGNS[design](config, output / "rtl")
    generated = time.monotonic()
    report = {"design": design, "toplevel": top, "config": config.to_json_dict(),
              "device": device, "package": package, "frequency_mhz": frequency_mhz}
    try:
        result = place_and_route(sources, top, device=device, package=package,
                                 frequency_mhz=frequency_mhz, seed=seed,
                                 log=output / "nextpnr.log",
                                 unit_levels=UNIT_LEVELS.get(design, 0))
    except DoesNotFit as problem:
        report.update(utilisation_json(problem.utilisation, problem.units))
        _write_report(output, report, started, generated)
        raise
    report.update(result.to_json_dict())
    _write_report(output, report, started, generated)
    return report


def _write_report(output: Path, report: dict, started: float, generated: float) -> None:
    report["seconds"] = {"verilog": round(generated - started, 1),
                         "synthesis_and_place_route": round(time.monotonic() - generated, 1)}
    (output / REPORT_NAME).write_text(json.dumps(report, indent=1) + "\n")
