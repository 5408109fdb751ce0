"""Random differential campaigns: many generated programs, several SVLs, several backends."""

from __future__ import annotations

import random
import shlex
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from zatile.sw.backends import Comparison, compare
from zatile.sim.progen import GeneratedProgram, generate_program
from zatile.sw.arch.config import EngineConfig

__all__ = ["CampaignReport", "campaign_program", "run_campaign"]


@dataclass
class CampaignReport:
    """What a campaign ran and found.

    ``mismatches`` holds real differences only; a difference that a known divergence explains
    goes to ``explained`` and counts under its id in ``divergences``.
    """

    backends: list[str]
    programs: int = 0
    instructions: int = 0
    trapped: int = 0
    mismatches: list[str] = field(default_factory=list)
    explained: list[str] = field(default_factory=list)
    divergences: Counter = field(default_factory=Counter)
    per_svl: Counter = field(default_factory=Counter)
    #: Folders of the saved failing programs (``save_failures``).
    saved: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no program showed a real mismatch."""
        return not self.mismatches

    def summary(self) -> str:
        """The report as text: counts, divergences recognised, the first 20 mismatches."""
        lines = [f"campaign {','.join(self.backends)}: {self.programs} programs "
                 f"({', '.join(f'SVL {s}: {n}' for s, n in sorted(self.per_svl.items()))}), "
                 f"{self.instructions} instructions, {self.trapped} trapped, "
                 f"{len(self.mismatches)} mismatches"]
        if self.divergences:
            lines.append("known QEMU divergences recognised: " + ", ".join(
                f"{name} x{count}" for name, count in sorted(self.divergences.items())))
        lines.extend(f"  DIVERGENCE {e}" for e in self.explained[:20])
        lines.extend(f"  MISMATCH {m}" for m in self.mismatches[:20])
        return "\n".join(lines)

    def to_json_dict(self) -> dict:
        """The report as JSON-ready data."""
        return {"backends": self.backends, "programs": self.programs,
                "instructions": self.instructions, "trapped": self.trapped,
                "per_svl": {str(svl): n for svl, n in sorted(self.per_svl.items())},
                "mismatches": self.mismatches, "explained": self.explained,
                "divergences": dict(sorted(self.divergences.items())), "saved": self.saved,
                "ok": self.ok}


def campaign_program(seed: int, svl: int, index: int, length: int,
                     backends: list[str] = ()) -> GeneratedProgram:
    """Program ``index`` of a campaign with ``seed`` at ``svl`` on ``backends``: a function of
    these only. With the RTL among the backends, only operations the RTL performs are drawn
    (:mod:`zatile.tb.implemented`)."""
    weights = None
    if "rtl" in backends:
        from zatile.tb.implemented import rtl_weights  # local: keeps `zatile --help` fast
        weights = rtl_weights()
    return generate_program(random.Random(f"{seed}:{svl}:{index}"), svl, length,
                            weights=weights)


def _save_failure(folder: Path, program: GeneratedProgram, svl: int,
                  backends: list[str]) -> None:
    """Write ``program.s``, ``state.npz`` and ``replay.sh`` (the ``zatile compare`` command
    that reproduces the mismatch) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "program.s").write_text(program.text)
    program.initial.save(folder / "state.npz")
    command = ["zatile", "compare", "program.s", "--svl", str(svl), "--state-in", "state.npz",
               "--backends", ",".join(backends)]
    (folder / "replay.sh").write_text(f'#!/bin/sh\ncd "$(dirname "$0")" && '
                                      f'exec {shlex.join(command)}\n')
    (folder / "replay.sh").chmod(0o755)


def run_campaign(programs: int, svls: list[int], length: int, seed: int,
                 backends: list[str], *, progress: Callable[[int, int], None] | None = None,
                 save_failures: Path | None = None) -> CampaignReport:
    """Run ``programs`` random programs per SVL on ``backends`` and collect mismatches.

    Each program is reproducible from ``(seed, svl, index)``; a mismatch names them.

    Parameters
    ----------
    progress : callable, optional
        Called as ``progress(done, total)`` after each program.
    save_failures : pathlib.Path, optional
        Each failing program is written to ``save_failures / f"seed{seed}-svl{svl}-p{index}"``
        (see :func:`_save_failure`).

    Raises
    ------
    ValueError
        For a negative program count, a length below 1, no SVL or fewer than two backends.
    """
    if programs < 0:
        raise ValueError(f"the number of programs must be 0 or more, not {programs}")
    if length < 1:
        raise ValueError(f"the program length must be at least 1 instruction, not {length}")
    if not svls:
        raise ValueError("a campaign needs at least one SVL")
    if len(backends) < 2:
        raise ValueError(f"a campaign compares at least two backends, not {list(backends)!r}")
    report = CampaignReport(backends=list(backends))
    config = EngineConfig(max_svl=max(svls))
    total = programs * len(svls)
    for svl in svls:
        for index in range(programs):
            program = campaign_program(seed, svl, index, length, backends)
            result = compare(program.text, program.initial, backends, config)
            _record(report, result, backends, f"seed={seed} svl={svl} program={index}")
            report.per_svl[svl] += 1
            if not result.agree and save_failures is not None:
                folder = Path(save_failures) / f"seed{seed}-svl{svl}-p{index}"
                _save_failure(folder, program, svl, backends)
                report.saved.append(str(folder))
            if progress is not None:
                progress(report.programs, total)
    return report


def _record(report: CampaignReport, result: Comparison, backends: list[str],
            name: str) -> None:
    """Count one program's comparison into ``report``."""
    report.programs += 1
    reference = result.outcomes[backends[0]]
    report.instructions += len(reference.outcomes)
    report.trapped += len(reference.trapped)
    report.divergences.update(result.divergences)
    report.explained.extend(f"{name}: {text}" for text in result.explained)
    if not result.agree:
        report.mismatches.append(f"{name}: {result.difference}")
