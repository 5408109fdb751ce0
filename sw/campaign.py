"""Random differential campaigns: many generated programs, several SVLs, several backends."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from zatile.sw.backends import compare
from zatile.sim.progen import generate_program
from zatile.sw.arch.config import EngineConfig

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


def run_campaign(programs: int, svls: list[int], length: int, seed: int,
                 backends: list[str]) -> CampaignReport:
    """Run ``programs`` random programs per SVL on ``backends`` and collect mismatches.

    Each program is reproducible from ``(seed, svl, index)``; a mismatch names them.
    """
    if programs < 0 or length < 1:
        raise ValueError(f"need programs >= 0 and length >= 1, not {programs} and {length}")
    report = CampaignReport(backends=list(backends))
    config = EngineConfig(max_svl=max(svls))
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
    return report
