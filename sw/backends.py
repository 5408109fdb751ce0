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

    #: Each backend's own run (the model's is the architecture's, without QEMU's quirks).
    outcomes: dict[str, RunOutcome]
    #: None when every backend agrees; otherwise the first difference, named.
    difference: str | None
    #: The model run with QEMU's modelled divergences applied, when the model is compared with
    #: QEMU; that pair, and only that pair, is compared through it.
    model_as_qemu: RunOutcome | None = None

    @property
    def agree(self) -> bool:
        return self.difference is None

    @property
    def divergences(self) -> list[str]:
        """Ids of the known QEMU divergences the comparison recognised and allowed for."""
        return self.model_as_qemu.divergences if self.model_as_qemu else []

    def to_json_dict(self) -> dict:
        """The comparison for scripts: the difference, the divergences, each backend's traps."""
        return {
            "difference": self.difference,
            "divergences": self.divergences,
            "outcomes": {name: {"instructions": len(run.outcomes),
                                "trapped": [{"index": o.index, "text": o.text, "status": o.status,
                                             "smtc": o.smtc, "fault_address": o.fault_address}
                                            for o in run.trapped]}
                         for name, run in self.outcomes.items()},
        }


def _side(name: str, other: str, outcomes: dict[str, RunOutcome],
          model_as_qemu: RunOutcome | None) -> RunOutcome:
    """What backend ``name`` is compared through against backend ``other``."""
    if name == "model" and other == "qemu":
        return model_as_qemu
    return outcomes[name]


def _pair_difference(left_name: str, left: RunOutcome, right_name: str,
                     right: RunOutcome) -> str | None:
    """The first difference between two runs, by instruction outcome then by final state.

    QEMU reports only the signal an instruction raised, so a pair with QEMU compares signals.
    """
    for mine, theirs in zip(left.outcomes, right.outcomes):
        if "qemu" in (left_name, right_name):
            same = mine.signal == theirs.signal
        else:
            same = (mine.status, mine.smtc, mine.fault_address) == \
                   (theirs.status, theirs.smtc, theirs.fault_address)
        if not same:
            return (f"instruction {mine.index} '{mine.text}': {left_name} "
                    f"{describe_outcome(mine)} != {right_name} {describe_outcome(theirs)}")
    difference = first_difference(left.final, right.final,
                                  compare_za=left.za_valid and right.za_valid)
    return f"{left_name} != {right_name}: {difference}" if difference else None


def _pairs(backends: list[str]) -> list[tuple[str, str]]:
    """Every backend against the first; but when QEMU is first, the others face the model.

    QEMU's quirks can be applied to the model only, so another backend checked against QEMU
    directly would report them as mismatches.
    """
    reference = backends[0]
    return [("model" if reference == "qemu" and name != "model" and "model" in backends
             else reference, name) for name in backends[1:]]


def compare(source: str, initial: ArchState, backends: list[str],
            config: EngineConfig | None = None) -> Comparison:
    """Run ``source`` on every backend and report the first disagreement with the first one.

    Each pair is compared with the divergences that apply to it only: the model against QEMU
    through the model run with QEMU's modelled quirks (:attr:`Comparison.model_as_qemu`), every
    other pair through the backends' own runs, so a QEMU quirk never shows up as, or hides, a
    model/RTL difference.
    """
    if len(backends) < 2:
        raise ValueError(f"compare needs at least two backends, not {backends!r}")
    outcomes = {backend: run_program(backend, source, initial, config) for backend in backends}
    model_as_qemu = None
    if "model" in backends and "qemu" in backends:
        model_as_qemu = run_program("model", source, initial, config, qemu_quirks=True)
    for reference, name in _pairs(backends):
        difference = _pair_difference(
            reference, _side(reference, name, outcomes, model_as_qemu),
            name, _side(name, reference, outcomes, model_as_qemu))
        if difference:
            return Comparison(outcomes, difference, model_as_qemu)
    return Comparison(outcomes, None, model_as_qemu)
