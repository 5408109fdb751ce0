"""The RTL backend: programs run on the engine's Verilog under cocotb (Verilator or Icarus).

:func:`run_rtl` is what ``zatile run --backend rtl`` and ``zatile compare --backends model,rtl``
call through :mod:`zatile.sw.backends`; :func:`run_rtl_batch` runs several programs in one
simulation (campaigns). Each builds the engine for the configuration (cached, see
:mod:`zatile.tb.runner`), starts one simulation, and inside it (:mod:`zatile.tb.rtl_backend`),
for each program, resets the engine and:

1. loads the initial state into the engine through its issue port
   (:meth:`zatile.tb.engine.EngineBench.load_state`), with memory served from the state's regions;
2. runs :func:`zatile.sim.straight_line.execute_program` - plain blocking CPU-side code written
   against the :class:`~zatile.sw.arch.engine.Engine` interface - in a
   :func:`cocotb.task.bridge` thread, each ``Engine.issue`` resuming the bench's coroutine that
   drives the issue port;
3. reads Z, P, FFR and ZA back through the debug port.

State the engine cannot hold is carried by the CPU side, as in a real system: X0-X30, SP and FPSR
(reset to 0x0800009F on every ``fpsr_reset``), and FPCR (an input). Z/P of a state with SM=0 and
FFR are not loadable into the engine (:mod:`zatile.tb.engine`); they are the CPU's non-streaming SVE
state and are reported unchanged while PSTATE.SM never changes, and as the engine's (reset)
contents after it did.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from zatile.sim.run import InstructionOutcome, RunOutcome
from zatile.sim.state import ArchState
from zatile.sw.arch.asm import disassemble, parse_program
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.engine import Result, Status
from zatile.tb.runner import build_engine, waves_requested

__all__ = ["RtlRun", "run_rtl", "run_rtl_batch"]


@dataclass
class RtlRun(RunOutcome):
    """A :class:`~zatile.sim.run.RunOutcome` of the RTL backend, also unpackable as
    ``final, results = run_rtl(...)``."""

    #: The engine's Result of every instruction, in order.
    results: list = field(default_factory=list)
    #: Simulated clock cycles and wall-clock seconds of the program's part of the simulation,
    #: from its reset (its state load included).
    cycles: int = 0
    seconds: float = 0.0
    #: How much each performance counter (:data:`zatile.hw.perf_counters.PERF_COUNTERS`) rose
    #: while the program ran: ``cycles`` is the program's own cycle count.
    perf: dict = field(default_factory=dict)
    #: The waveform file written, when one was requested.
    waveform: Path | None = None

    def __iter__(self):
        return iter((self.final, self.results))


def _program(program: str | Sequence[int]) -> tuple[list[int], list[str]]:
    if isinstance(program, str):
        instructions = parse_program(program)
        return [i.word for i in instructions], [i.text for i in instructions]
    words = [int(word) & 0xFFFF_FFFF for word in program]
    return words, [disassemble(word).replace("\t", " ") for word in words]


def _check_svl(config: EngineConfig, initial: ArchState) -> None:
    if initial.svl not in config.supported_svls:
        raise ValueError(f"SVL {initial.svl} is not supported by the configuration "
                         f"(supported: {', '.join(map(str, config.supported_svls))})")


def run_rtl(program: str | Sequence[int], initial: ArchState,
            config: EngineConfig | None = None, *, simulator: str = "verilator",
            waves: bool | str | Path | None = None, pauses: str = "none",
            seed: int = 0) -> RtlRun:
    """Run ``program`` (assembly text or instruction words) from ``initial`` on the RTL.

    Parameters
    ----------
    program : str or sequence of int
    initial : ArchState
    config : EngineConfig, optional
        Defaults to ``EngineConfig(max_svl=initial.svl)``.
    simulator : str
        ``verilator`` or ``icarus``.
    waves : bool or path, optional
        Record a waveform (default from ``ZATILE_WAVES``): FST, or VCD from a Verilator built
        without the lz4 headers (:mod:`zatile.tb.runner`). ``True`` keeps the run directory and
        prints the waveform's path; a path moves the waveform there (the run directory is then
        removed). The outcome's ``waveform`` names the file.
    pauses : str
        Random idle/backpressure on every handshake (:data:`zatile.tb.pauses.PAUSE_STYLES`).
    seed : int
        Seed of the pauses.

    Raises
    ------
    ValueError
        If the configuration does not support ``initial.svl``.
    zatile.sw.arch.isa.AsmError
        If the program does not assemble.
    zatile.tb.runner.SimulationFailed
        If the simulation fails.
    """
    config = config or EngineConfig(max_svl=max(initial.svl, 128))
    _check_svl(config, initial)
    waves_to = None if waves is None or isinstance(waves, bool) else Path(waves)
    waves = True if waves_to is not None else waves_requested(waves)
    build = build_engine(config, simulator, waves)
    directory = _request_directory(build)
    waveform = None
    try:
        (run,) = _simulate(build, directory, [(program, initial)], config, pauses, seed)
        waveform = _waveform(build, directory) if waves else None
        if waveform is not None and waves_to is not None:
            waveform = Path(shutil.move(waveform, waves_to))
    finally:
        if waves and waves_to is None:
            named = f" (waveform: {waveform.name})" if waveform is not None else ""
            print(f"RTL run kept in {directory}{named}", file=sys.stderr)
        else:
            shutil.rmtree(directory, ignore_errors=True)
    run.waveform = waveform
    return run


def run_rtl_batch(programs: Sequence[tuple[str | Sequence[int], ArchState]],
                  config: EngineConfig, *, simulator: str = "verilator", pauses: str = "none",
                  seed: int = 0) -> list[RtlRun]:
    """Run several programs, each from its own initial state on a freshly reset engine, in one
    simulation: what :func:`run_rtl` gives for each, without starting a simulator per program
    (that start is most of a short program's time).

    Raises
    ------
    ValueError
        If the configuration does not support an initial state's SVL.
    zatile.sw.arch.isa.AsmError
        If a program does not assemble.
    zatile.tb.runner.SimulationFailed
        If the simulation fails (no program's result is given then).
    """
    for _, initial in programs:
        _check_svl(config, initial)
    build = build_engine(config, simulator, False)
    directory = _request_directory(build)
    try:
        return _simulate(build, directory, programs, config, pauses, seed)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _request_directory(build) -> Path:
    runs = build.directory / "runs"
    runs.mkdir(exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="run-", dir=runs))


def _simulate(build, directory: Path, programs, config: EngineConfig, pauses: str,
              seed: int) -> list[RtlRun]:
    """Write the request of ``programs`` into ``directory``, run :mod:`zatile.tb.rtl_backend`
    on ``build`` there and read each program's outcome back."""
    assembled = [_program(program) for program, _ in programs]
    for index, (_, initial) in enumerate(programs):
        initial.save(directory / f"initial-{index}.npz")
    (directory / "request.json").write_text(json.dumps(
        {"programs": [{"words": words} for words, _ in assembled],
         "config": config.to_json_dict(), "pauses": pauses, "seed": seed}))
    build.run("zatile.tb.rtl_backend", extra_env={"ZATILE_RTL_REQUEST": str(directory),
                                                  "COCOTB_LOG_LEVEL": "WARNING"},
              test_dir=directory, log_file=directory / "sim.log")
    runs = []
    for index, (_, texts) in enumerate(assembled):
        final = ArchState.load(directory / f"final-{index}.npz")
        report = json.loads((directory / f"results-{index}.json").read_text())
        results = [Result(Status(r["status"]), r["smtc"], r["fault_address"], r["scalar"],
                          r["form"]) for r in report["results"]]
        outcomes = [InstructionOutcome(position, text, result.status.value, result.smtc,
                                       result.fault_address)
                    for position, (text, result) in enumerate(zip(texts, results))]
        runs.append(RtlRun("rtl", final, outcomes, za_valid=final.za_enabled, results=results,
                           cycles=report["cycles"], seconds=report["seconds"],
                           perf=report["perf"]))
    return runs


def _waveform(build, directory: Path) -> Path:
    """The waveform a traced run of ``build`` wrote into ``directory`` (:meth:`Build.waves_file`:
    FST, or VCD from a Verilator built without lz4)."""
    waveform = build.waves_file(directory)
    if waveform is None or not waveform.exists():
        raise RuntimeError(f"the traced simulation wrote no waveform {waveform} into {directory}")
    return waveform
