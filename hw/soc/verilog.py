"""Verilog of the SoC wrapper for one configuration.

:func:`generate_soc_verilog` writes ``zatile_soc.v`` (toplevel module ``zatile_soc``, clock
``clk``, synchronous active-high reset ``rst``), ``zatile_soc.vlt`` and ``zatile_soc.json`` (the
configuration, the port list and the register map of the control port).
"""

from __future__ import annotations

from pathlib import Path

from zatile.sw.arch.config import EngineConfig

from zatile.hw.library import ModuleLibrary
from zatile.hw.soc.registers import register_map_json
from zatile.hw.soc.top import ZaTileSoc
from zatile.hw.verilog import write_design

__all__ = ["SOC_TOPLEVEL", "generate_soc_verilog"]

#: Name of the SoC wrapper's toplevel module.
SOC_TOPLEVEL = "zatile_soc"


def generate_soc_verilog(config: EngineConfig, directory: str | Path) -> list[Path]:
    """Write the SoC wrapper's Verilog, Verilator control file and JSON description; return
    the paths written.

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    """
    library = ModuleLibrary()
    return write_design(ZaTileSoc(config, library), SOC_TOPLEVEL, library, directory,
                        {"config": config.to_json_dict(),
                         "register_map": register_map_json(config)})
