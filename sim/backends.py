"""One interface over every way zatile can execute a program: reference model, QEMU, RTL.

:func:`run_program` runs straight-line assembly from an initial :class:`~sim.state.ArchState`
on a named backend and returns a :class:`RunOutcome`; :func:`compare` runs several backends on
the same program and names the first architectural byte on which they differ, handling every
known QEMU divergence (:mod:`sim.divergences`) explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sim.state import ArchState
from sw.asm import parse_program
from sw.config import EngineConfig

__all__ = ["BACKENDS", "InstructionOutcome", "RunOutcome", "Comparison", "run_program",
           "compare", "first_difference"]

BACKENDS = ("model", "qemu", "rtl")


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


def _run_model(source: str, initial: ArchState, config: EngineConfig,
               qemu_quirks: bool) -> RunOutcome:
    from sim import divergences
    from sim.model import ReferenceModel

    model = ReferenceModel(config, initial.copy())
    outcomes, used = [], []
    for index, instruction in enumerate(parse_program(source)):
        quirks = divergences.modelled_quirks(instruction.word, model.state) if qemu_quirks else []
        before = model.state.copy() if quirks else None
        result = model.execute(instruction.word)
        for quirk in quirks:
            quirk.apply(instruction.word, before, model.state, result)
            used.append(quirk.id)
        outcomes.append(InstructionOutcome(index, instruction.text, result.status.value,
                                           result.smtc, result.fault_address))
    return RunOutcome("model+qemu-quirks" if qemu_quirks else "model", model.state, outcomes,
                      za_valid=model.state.za_enabled, divergences=sorted(set(used)))


def _run_qemu(source: str, initial: ArchState) -> RunOutcome:
    from sim.qemu import run_qemu

    instructions = parse_program(source)
    result = run_qemu(source, initial)
    outcomes = [InstructionOutcome(index, instruction.text, result.trapped.get(index, "ok"))
                for index, instruction in enumerate(instructions)]
    return RunOutcome("qemu", result.state, outcomes, za_valid=result.za_valid)


def _run_rtl(source: str, initial: ArchState, config: EngineConfig) -> RunOutcome:
    from sim.rtl import run_rtl

    return run_rtl(source, initial, config)


def run_program(backend: str, source: str, initial: ArchState,
                config: EngineConfig | None = None, *, qemu_quirks: bool = False) -> RunOutcome:
    """Run ``source`` from ``initial`` on ``backend`` (one of :data:`BACKENDS`).

    ``qemu_quirks`` (model only) applies the known QEMU divergences that
    :mod:`sim.divergences` can model, so the result is what QEMU is expected to produce.

    Raises
    ------
    ValueError
        For an unknown backend or an SVL the configuration does not support.
    sw.asm.AsmError
        For a program that does not assemble.
    """
    config = config or EngineConfig(max_svl=max(initial.svl, 128))
    if initial.svl not in config.supported_svls:
        raise ValueError(f"SVL {initial.svl} is not supported by the configuration "
                         f"(supported: {', '.join(map(str, config.supported_svls))})")
    if backend == "model":
        return _run_model(source, initial, config, qemu_quirks)
    if backend == "qemu":
        return _run_qemu(source, initial)
    if backend == "rtl":
        return _run_rtl(source, initial, config)
    raise ValueError(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")


def first_difference(left: ArchState, right: ArchState, *, compare_za: bool = True) -> str | None:
    """Name the first architectural byte on which two states differ, or None if they agree."""
    for name in ("svl", "svcr", "fpcr", "fpsr", "sp"):
        if getattr(left, name) != getattr(right, name):
            return f"{name}: 0x{getattr(left, name):x} != 0x{getattr(right, name):x}"
    for register in range(31):
        if left.x[register] != right.x[register]:
            return f"x{register}: 0x{int(left.x[register]):x} != 0x{int(right.x[register]):x}"
    arrays = [("z", left.z, right.z), ("p", left.p, right.p)]
    if compare_za:
        arrays.append(("za", left.za, right.za))
    for name, mine, theirs in arrays:
        differing = np.argwhere(mine != theirs)
        if differing.size:
            row, byte = (int(v) for v in differing[0])
            label = f"za row {row}" if name == "za" else f"{name}{row}"
            return (f"{label} byte {byte}: 0x{int(mine[row, byte]):02x} != "
                    f"0x{int(theirs[row, byte]):02x}")
    differing = np.flatnonzero(left.ffr != right.ffr)
    if differing.size:
        byte = int(differing[0])
        return f"ffr byte {byte}: 0x{int(left.ffr[byte]):02x} != 0x{int(right.ffr[byte]):02x}"
    mine, theirs = left.memory.regions, right.memory.regions
    if mine.keys() != theirs.keys():
        return f"memory regions differ: {sorted(mine)} != {sorted(theirs)}"
    for base, data in mine.items():
        differing = np.flatnonzero(data != theirs[base])
        if differing.size:
            offset = int(differing[0])
            return (f"memory 0x{base + offset:x}: 0x{int(data[offset]):02x} != "
                    f"0x{int(theirs[base][offset]):02x}")
    return None


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
                                  f"{reference_name} {_describe(mine)} != {name} {_describe(theirs)}")
        difference = first_difference(reference.final, other.final,
                                      compare_za=reference.za_valid and other.za_valid)
        if difference:
            return Comparison(outcomes, f"{reference_name} != {name}: {difference}")
    return Comparison(outcomes, None)


def _describe(outcome: InstructionOutcome) -> str:
    if outcome.status == "sme_trap":
        return f"sme_trap (SMTC {outcome.smtc})"
    if outcome.status == "fault":
        return f"fault at 0x{outcome.fault_address:x}"
    return outcome.status
