"""The outcome of running a program on one backend, and the model's own way of running one.

Every backend (the model here, QEMU in :mod:`zatile.sim.qemu`, the RTL in
:mod:`zatile.tb.rtl_run`) returns a :class:`RunOutcome`; :mod:`zatile.sw.backends` dispatches by
name and compares them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zatile.sim import divergences
from zatile.sim.model import ReferenceModel
from zatile.sim.state import ArchState
from zatile.sw.arch.asm import parse_program
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.isa import decode

__all__ = ["InstructionOutcome", "RunOutcome", "run_model"]


@dataclass(frozen=True)
class InstructionOutcome:
    """How one instruction of a program ended, as far as a backend can tell.

    ``status`` is ``ok``, ``undef``, ``sme_trap`` or ``fault`` for the model and the RTL;
    QEMU only reports the signal an instruction raised (``SIGILL`` / ``SIGSEGV``) or ``ok``.
    """

    index: int
    text: str
    status: str
    smtc: int | None = None
    fault_address: int | None = None
    #: Ids of the known QEMU divergences the instruction can trigger from the state before it
    #: (:func:`zatile.sim.divergences.triggered`); recorded by the model run with QEMU quirks.
    triggered: tuple[str, ...] = ()

    @property
    def signal(self) -> str | None:
        """The Linux signal this outcome raises in a user process (None for ``ok``)."""
        return {"ok": None, "undef": "SIGILL", "sme_trap": "SIGILL", "fault": "SIGSEGV"}.get(
            self.status, self.status)


@dataclass
class RunOutcome:
    """Final state and per-instruction outcomes of one run."""

    backend: str
    final: ArchState
    outcomes: list[InstructionOutcome]
    #: False when ZA could not be read back (PSTATE.ZA=0 at the end); ZA is then not comparable.
    za_valid: bool = True
    #: Ids of known divergences (sim.divergences) the run exercised and modelled.
    divergences: list[str] = field(default_factory=list)

    @property
    def trapped(self) -> list[InstructionOutcome]:
        return [o for o in self.outcomes if o.status != "ok"]


def run_model(source: str, initial: ArchState, config: EngineConfig,
              qemu_quirks: bool = False) -> RunOutcome:
    """Run straight-line assembly on the reference model from a copy of ``initial``.

    ``qemu_quirks`` applies the known QEMU divergences :mod:`zatile.sim.divergences` can model,
    so the result is what QEMU is expected to produce.
    """
    model = ReferenceModel(config, initial.copy())
    outcomes, used = [], []
    for index, instruction in enumerate(parse_program(source)):
        triggered = tuple(divergences.triggered(decode(instruction.word), model.state)) \
            if qemu_quirks else ()
        quirks = divergences.quirks_among(triggered)
        before = model.state.copy() if quirks else None
        result = model.execute(instruction.word)
        for quirk in quirks:
            quirk.apply(instruction.word, before, model.state, result)
            used.append(quirk.id)
        outcomes.append(InstructionOutcome(index, instruction.text, result.status.value,
                                           result.smtc, result.fault_address, triggered))
    return RunOutcome("model+qemu-quirks" if qemu_quirks else "model", model.state, outcomes,
                      za_valid=model.state.za_enabled, divergences=sorted(set(used)))
