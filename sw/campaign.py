"""Random differential campaigns: many generated programs, several SVLs, several backends."""

from __future__ import annotations

import random
import shlex
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from zatile.sim.progen import GeneratedProgram, generate_program
from zatile.sw.arch.config import EngineConfig
from zatile.sw.backends import compare

__all__ = ["CampaignReport", "run_campaign"]


@dataclass
class CampaignReport:
    """What a campaign ran and found."""

    backends: list[str]
    programs: int = 0
    instructions: int = 0
    trapped: int = 0
    mismatches: list[str] = field(default_factory=list)
    divergences: Counter = field(default_factory=Counter)
    per_svl: Counter = field(default_factory=Counter)
    #: Folders of the saved failing programs (``save_failures``).
    saved: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def summary(self) -> str:
        lines = [f"campaign {','.join(self.backends)}: {self.programs} programs "
                 f"({', '.join(f'SVL {s}: {n}' for s, n in sorted(self.per_svl.items()))}), "
                 f"{self.instructions} instructions, {self.trapped} trapped, "
                 f"{len(self.mismatches)} mismatches"]
        if self.divergences:
            lines.append("modelled QEMU divergences exercised: " + ", ".join(
                f"{name} x{count}" for name, count in sorted(self.divergences.items())))
        lines.extend(f"  MISMATCH {m}" for m in self.mismatches[:20])
        return "\n".join(lines)

    def to_json_dict(self) -> dict:
        """The report for scripts (``zatile campaign --json``)."""
        return {"backends": self.backends, "programs": self.programs,
                "per_svl": {str(svl): count for svl, count in sorted(self.per_svl.items())},
                "instructions": self.instructions, "trapped": self.trapped,
                "mismatches": self.mismatches, "divergences": dict(sorted(self.divergences.items())),
                "saved": self.saved, "ok": self.ok}


def _save_failure(folder: Path, program: GeneratedProgram, svl: int, backends: list[str]) -> None:
    """Write ``program.s``, ``state.npz`` and ``replay.sh`` (the command that reproduces it)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "program.s").write_text(program.text)
    program.initial.save(folder / "state.npz")
    command = ["zatile", "compare", "program.s", "--svl", str(svl), "--state-in", "state.npz",
               "--backends", ",".join(backends)]
    (folder / "replay.sh").write_text("#!/bin/sh\n# Reproduces one campaign mismatch.\n"
                                      f'cd "$(dirname "$0")" && {shlex.join(command)}\n')
    (folder / "replay.sh").chmod(0o755)


def run_campaign(programs: int, svls: list[int], length: int, seed: int, backends: list[str], *,
                 progress: Callable[[int, int], None] | None = None,
                 save_failures: Path | None = None) -> CampaignReport:
    """Run ``programs`` random programs per SVL on ``backends`` and collect mismatches.

    Each program is reproducible from ``(seed, svl, index)``; a mismatch names them.
    ``progress(done, total)`` is called after each program; with ``save_failures`` each failing
    program is written to ``save_failures / f"seed{seed}-svl{svl}-p{index}"``.

    Raises
    ------
    ValueError
        For a negative program count, a length below 1, or no SVL or fewer than two backends.
    """
    if programs < 0 or length < 1:
        raise ValueError(f"need programs >= 0 and length >= 1, not {programs} and {length}")
    if not svls or len(backends) < 2:
        raise ValueError(f"need at least one SVL and two backends, not {svls!r} and {backends!r}")
    report = CampaignReport(backends=list(backends))
    config = EngineConfig(max_svl=max(svls))
    total = programs * len(svls)
    for svl in svls:
        for index in range(programs):
            rng = random.Random(f"{seed}:{svl}:{index}")
            program = generate_program(rng, svl, length)
            result = compare(program.text, program.initial, backends, config)
            report.programs += 1
            report.per_svl[svl] += 1
            reference = result.outcomes[backends[0]]
            report.instructions += len(reference.outcomes)
            report.trapped += len(reference.trapped)
            report.divergences.update(result.divergences)
            if not result.agree:
                report.mismatches.append(f"seed={seed} svl={svl} program={index}: "
                                         f"{result.difference}")
                if save_failures is not None:
                    folder = Path(save_failures) / f"seed{seed}-svl{svl}-p{index}"
                    _save_failure(folder, program, svl, backends)
                    report.saved.append(str(folder))
            if progress is not None:
                progress(report.programs, total)
    return report
