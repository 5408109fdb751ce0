"""One interface over every way zatile can execute a program: reference model, QEMU, RTL.

:func:`run_program` runs straight-line assembly from an initial
:class:`~zatile.sim.state.ArchState` on a named backend and returns a
:class:`~zatile.sim.run.RunOutcome`; :func:`compare` runs several backends on the same program
and names the first architectural byte on which they differ, handling every known QEMU
divergence (:mod:`zatile.sim.divergences`) explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass

from zatile.sim.compare import describe_outcome, first_difference
from zatile.sim.qemu import run_qemu
from zatile.sim.run import InstructionOutcome, RunOutcome, run_model
from zatile.sim.state import ArchState
from zatile.sw.arch.asm import parse_program
from zatile.sw.arch.config import EngineConfig
from zatile.tb.rtl_run import run_rtl

__all__ = ["BACKENDS", "Comparison", "run_program", "compare"]

BACKENDS = ("model", "qemu", "rtl")


def _run_qemu(source: str, initial: ArchState) -> RunOutcome:
    instructions = parse_program(source)
    result = run_qemu(source, initial)
    outcomes = [InstructionOutcome(index, instruction.text, result.trapped.get(index, "ok"))
                for index, instruction in enumerate(instructions)]
    return RunOutcome("qemu", result.state, outcomes, za_valid=result.za_valid)


def run_program(backend: str, source: str, initial: ArchState,
                config: EngineConfig | None = None, *, qemu_quirks: bool = False) -> RunOutcome:
    """Run ``source`` from ``initial`` on ``backend`` (one of :data:`BACKENDS`).

    ``qemu_quirks`` (model only) applies the known QEMU divergences that
    :mod:`zatile.sim.divergences` can model, so the result is what QEMU is expected to produce.

    Raises
    ------
    ValueError
        For an unknown backend or an SVL the configuration does not support.
    zatile.sw.arch.isa.AsmError
        For a program that does not assemble.
    """
    config = config or EngineConfig(max_svl=max(initial.svl, 128))
    if initial.svl not in config.supported_svls:
        raise ValueError(f"SVL {initial.svl} is not supported by the configuration "
                         f"(supported: {', '.join(map(str, config.supported_svls))})")
    if backend == "model":
        return run_model(source, initial, config, qemu_quirks)
    if backend == "qemu":
        return _run_qemu(source, initial)
    if backend == "rtl":
        return run_rtl(source, initial, config)
    raise ValueError(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")


@dataclass(frozen=True)
class Comparison:
    """Result of running one program on several backends."""

    outcomes: dict[str, RunOutcome]
    #: None when every backend agrees; otherwise the first difference, named.
    difference: str | None

    @property
    def agree(self) -> bool:
        return self.difference is None


def compare(source: str, initial: ArchState, backends: list[str],
            config: EngineConfig | None = None) -> Comparison:
    """Run ``source`` on every backend and report the first disagreement with the first one.

    When QEMU takes part, the model side applies the known, modelled QEMU divergences (and says
    which it used); a divergence the comparison cannot model is reported as such.
    """
    if len(backends) < 2:
        raise ValueError(f"compare needs at least two backends, not {backends!r}")
    outcomes = {}
    for backend in backends:
        quirks = backend == "model" and "qemu" in backends
        outcomes[backend] = run_program(backend, source, initial, config, qemu_quirks=quirks)
    reference_name = backends[0]
    reference = outcomes[reference_name]
    for name in backends[1:]:
        other = outcomes[name]
        for mine, theirs in zip(reference.outcomes, other.outcomes):
            if "qemu" in (reference_name, name):
                same = mine.signal == theirs.signal
            else:
                same = (mine.status, mine.smtc, mine.fault_address) == \
                       (theirs.status, theirs.smtc, theirs.fault_address)
            if not same:
                return Comparison(outcomes, f"instruction {mine.index} '{mine.text}': "
                                  f"{reference_name} {describe_outcome(mine)} != {name} "
                                  f"{describe_outcome(theirs)}")
        difference = first_difference(reference.final, other.final,
                                      compare_za=reference.za_valid and other.za_valid)
        if difference:
            return Comparison(outcomes, f"{reference_name} != {name}: {difference}")
    return Comparison(outcomes, None)
