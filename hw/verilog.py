"""Verilog of the ZA tile engine for one configuration.

:func:`generate_verilog` writes ``zatile_engine.v`` (one self-contained file, toplevel module
``zatile_engine``, clock ``clk`` and synchronous active-high reset ``rst``) and
``zatile_engine.json`` (the configuration, the ID register value and the port list) into a
directory. ``zatile verilog`` is the command-line face of it.
"""

from __future__ import annotations

import json
from pathlib import Path

from amaranth import Value
from amaranth.back import verilog
from amaranth.lib import wiring

from zatile.sw.arch.config import EngineConfig

from zatile.hw.engine import ZaTileEngine
from zatile.hw.library import ModuleLibrary

__all__ = ["TOPLEVEL", "LINT_WAIVERS", "generate_verilog", "write_design"]

#: Name of the generated toplevel module.
TOPLEVEL = "zatile_engine"

#: Verilator lint rules waived for the generated Verilog, and why. Every one is a property of
#: how Amaranth and Yosys write Verilog, not of the design.
LINT_WAIVERS = {
    "UNUSEDSIGNAL": "Amaranth declares whole structured signals (payloads, decoded fields) "
                    "of which each consumer reads only some bits",
    "WIDTHEXPAND": "Yosys' Verilog backend writes operands at their natural widths and relies "
                   "on Verilog's context-determined extension (e.g. a 3-bit shift amount)",
    "WIDTHTRUNC": "likewise for truncation, e.g. '!' applied to a multi-bit slice",
    "CASEINCOMPLETE": "Yosys writes decoders as casez without a default and marks them "
                      "full_case/parallel_case; uncovered values are don't-cares",
    "PROCASSINIT": "registers carry their reset value as a declaration initialiser, which is "
                   "how FPGA flows get power-on values",
    "DECLFILENAME": "one file holds the whole hierarchy, with Amaranth's hierarchical module "
                    "names",
}


def generate_verilog(config: EngineConfig, directory: str | Path) -> list[Path]:
    """Write the engine's Verilog and its configuration JSON; return the paths written.

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    """
    library = ModuleLibrary()
    return write_design(ZaTileEngine(config, library), TOPLEVEL, library, directory,
                        {"config": config.to_json_dict()})


def write_design(top: wiring.Component, name: str, library: ModuleLibrary,
                 directory: str | Path, description: dict) -> list[Path]:
    """Write ``top`` as Verilog module ``name`` with the modules of ``library`` (``<name>.v``),
    its Verilator control file (``<name>.vlt``: the lint waivers, the repeated units as
    hierarchical blocks) and ``<name>.json`` (``description`` and the port list); return the
    three paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    text = verilog.convert(top, name=name, emit_src=False, strip_internal_attrs=True)
    source = directory / f"{name}.v"
    source.write_text(text + library.verilog())
    control = directory / f"{name}.vlt"
    control.write_text("`verilator_config\n" + "".join(
        f"// {rule}: {reason}\nlint_off -rule {rule}\n" for rule, reason in LINT_WAIVERS.items())
        + "// Repeated units: Verilated once each with --hierarchical\n" + "".join(
        f'hier_block -module "{module}"\n' for module in library.modules))
    ports = {"clk": {"direction": "in", "width": 1}, "rst": {"direction": "in", "width": 1}}
    for path, member, value in top.signature.flatten(top):
        ports["__".join(str(part) for part in path)] = {
            "direction": "in" if member.flow == wiring.In else "out",
            "width": len(Value.cast(value))}
    json_file = directory / f"{name}.json"
    json_file.write_text(json.dumps({"toplevel": name, **description, "ports": ports},
                                    indent=1) + "\n")
    return [source, control, json_file]
