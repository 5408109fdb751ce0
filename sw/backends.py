"""One interface over every way zatile can execute a program: reference model, QEMU, RTL.

:func:`run_program` runs straight-line assembly from an initial
:class:`~zatile.sim.state.ArchState` on a named backend and returns a
:class:`~zatile.sim.run.RunOutcome`; :func:`compare` runs several backends on the same program
and names the first architectural byte on which they differ, handling every known QEMU
divergence (:mod:`zatile.sim.divergences`) explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass

from zatile.sim import divergences
from zatile.sim.compare import describe_outcome, first_difference
from zatile.sim.qemu import run_qemu
from zatile.sim.run import InstructionOutcome, RunOutcome, run_model
from zatile.sim.state import ArchState
from zatile.sw.arch.asm import parse_program
from zatile.sw.arch.config import EngineConfig
from zatile.tb.rtl_run import run_rtl, run_rtl_batch

__all__ = ["BACKENDS", "Comparison", "run_program", "run_programs", "compare"]

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


def run_programs(backend: str, programs: list[tuple[str, ArchState]],
                 config: EngineConfig) -> list[RunOutcome]:
    """:func:`run_program` of each of ``programs`` (source, initial) on ``backend``; the RTL
    runs them all in one simulation (:func:`~zatile.tb.rtl_run.run_rtl_batch`).

    Raises
    ------
    zatile.tb.runner.SimulationFailed
        When the RTL's simulation fails (which program made it fail is not known then).
    """
    if backend == "rtl":
        return run_rtl_batch(programs, config)
    return [run_program(backend, source, initial, config) for source, initial in programs]


@dataclass(frozen=True)
class Comparison:
    """Result of running one program on several backends."""

    #: Each backend's own run (the model's is the architecture's, without QEMU's quirks). When
    #: QEMU is compared with a backend other than the model, the model runs too, as the
    #: reference between them, and its run is here as well.
    outcomes: dict[str, RunOutcome]
    #: None when no pair differs except through a known divergence; otherwise the first real
    #: difference, named (a mismatch).
    difference: str | None
    #: The model run with QEMU's modelled divergences applied, when the model is compared with
    #: QEMU; that pair, and only that pair, is compared through it.
    model_as_qemu: RunOutcome | None = None
    #: Differences explained by a known divergence, each naming its id; the pair's comparison
    #: stops at such a difference (its states are no longer expected to agree).
    explained: tuple[str, ...] = ()
    #: Ids of the divergences behind :attr:`explained`.
    explained_ids: tuple[str, ...] = ()
    #: The pairs compared, (reference, other).
    pairs: tuple[tuple[str, str], ...] = ()

    @property
    def agree(self) -> bool:
        """True when nothing but known divergences separates the backends."""
        return self.difference is None

    @property
    def divergences(self) -> list[str]:
        """Ids of the known QEMU divergences recognised: those modelled (applied to the model's
        run) and those that explained a difference."""
        modelled = self.model_as_qemu.divergences if self.model_as_qemu else []
        return sorted({*modelled, *self.explained_ids})

    def to_json_dict(self) -> dict:
        """The comparison for scripts: the difference, the divergences recognised and the
        differences they explain, the pairs compared, each backend's traps."""
        return {
            "difference": self.difference,
            "divergences": self.divergences,
            "explained": list(self.explained),
            "pairs": [list(pair) for pair in self.pairs],
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


@dataclass(frozen=True)
class _PairVerdict:
    """How one pair compared: a real difference, or one a known divergence explains."""

    difference: str | None = None
    explained: str | None = None
    divergence: str | None = None


def _pair_difference(left_name: str, left: RunOutcome, right_name: str,
                     right: RunOutcome, initial: ArchState) -> _PairVerdict:
    """The first difference between two runs, by instruction outcome then by final state.

    QEMU reports only the signal an instruction raised, so a pair with QEMU compares signals,
    and is always with the model (:func:`_pairs`); a difference there that a known divergence
    explains (``initial`` gives the regions and FPCR it depends on) is returned as explained,
    not as a difference.
    """
    with_qemu = "qemu" in (left_name, right_name)
    for mine, theirs in zip(left.outcomes, right.outcomes):
        if with_qemu:
            same = mine.signal == theirs.signal
        else:
            same = (mine.status, mine.smtc, mine.fault_address) == \
                   (theirs.status, theirs.smtc, theirs.fault_address)
        if not same:
            text = (f"instruction {mine.index} '{mine.text}': {left_name} "
                    f"{describe_outcome(mine)} != {right_name} {describe_outcome(theirs)}")
            known = None
            if with_qemu:
                model, qemu = (mine, theirs) if left_name == "model" else (theirs, mine)
                known = divergences.outcome_divergence(
                    model.triggered, model.status, model.fault_address, qemu.signal,
                    initial.memory.regions)
            if known:
                return _PairVerdict(explained=f"{text} [{known}; the rest of the run is not "
                                              f"compared]", divergence=known)
            return _PairVerdict(difference=text)
    difference = first_difference(left.final, right.final,
                                  compare_za=left.za_valid and right.za_valid)
    if not difference:
        return _PairVerdict()
    text = f"{left_name} != {right_name}: {difference}"
    known = divergences.state_divergence(initial) if with_qemu else None
    if known:
        return _PairVerdict(explained=f"{text} [{known}: the initial FPCR/FPSR]",
                            divergence=known)
    return _PairVerdict(difference=text)


def _pairs(backends: list[str]) -> list[tuple[str, str]]:
    """Which runs are compared: every backend against the first, except that QEMU is only ever
    compared with the model.

    QEMU's quirks can be applied to the model only, so any other backend checked against QEMU
    directly would report them as mismatches: such a backend faces the model instead, and the
    model faces QEMU (the model is added when it is not among ``backends``).
    """
    if "qemu" in backends and "model" not in backends and len(backends) > 1:
        backends = [*backends, "model"]
    reference, pairs = backends[0], []
    for name in backends[1:]:
        pair = (reference, name)
        if "qemu" in pair and "model" not in pair:
            pair = ("model", name) if reference == "qemu" else ("model", "qemu")
        if pair not in pairs:
            pairs.append(pair)
    return pairs


def compare(source: str, initial: ArchState, backends: list[str],
            config: EngineConfig | None = None, *,
            runs: dict[str, RunOutcome] | None = None) -> Comparison:
    """Run ``source`` on every backend and report the first real disagreement.

    ``runs`` gives backends' runs of this program already made (:func:`run_programs`); only the
    others are run here.

    Each pair is compared with the divergences that apply to it only (:func:`_pairs`): the
    model against QEMU through the model run with QEMU's modelled quirks
    (:attr:`Comparison.model_as_qemu`), every other pair through the backends' own runs, so a
    QEMU quirk never shows up as, or hides, a model/RTL difference. A difference a known
    divergence explains is listed in :attr:`Comparison.explained` under its id, never as the
    difference.
    """
    if len(backends) < 2:
        raise ValueError(f"compare needs at least two backends, not {backends!r}")
    pairs = _pairs(list(backends))
    names = list(dict.fromkeys([*backends, *(name for pair in pairs for name in pair)]))
    runs = runs or {}
    outcomes = {backend: runs[backend] if backend in runs
                else run_program(backend, source, initial, config) for backend in names}
    model_as_qemu = None
    if "qemu" in names:
        model_as_qemu = run_program("model", source, initial, config, qemu_quirks=True)
    explained, explained_ids = [], []
    for reference, name in pairs:
        verdict = _pair_difference(
            reference, _side(reference, name, outcomes, model_as_qemu),
            name, _side(name, reference, outcomes, model_as_qemu), initial)
        if verdict.difference:
            return Comparison(outcomes, verdict.difference, model_as_qemu, tuple(explained),
                              tuple(explained_ids), tuple(pairs))
        if verdict.explained:
            explained.append(verdict.explained)
            explained_ids.append(verdict.divergence)
    return Comparison(outcomes, None, model_as_qemu, tuple(explained), tuple(explained_ids),
                      tuple(pairs))
