"""The RTL backend: programs run on the engine's Verilog under cocotb (Verilator or Icarus).

:func:`run_rtl` is what ``zatile run --backend rtl`` and ``zatile compare --backends model,rtl``
call through :mod:`zatile.sw.backends`. It builds the engine for the configuration (cached, see
:mod:`zatile.tb.runner`), starts one simulation, and inside it (:mod:`zatile.tb.rtl_backend`):

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

__all__ = ["RtlRun", "run_rtl"]


@dataclass
class RtlRun(RunOutcome):
    """A :class:`~zatile.sim.run.RunOutcome` of the RTL backend, also unpackable as
    ``final, results = run_rtl(...)``."""

    #: The engine's Result of every instruction, in order.
    results: list = field(default_factory=list)
    #: Simulated clock cycles and wall-clock seconds of the whole simulation (state load included).
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
    if initial.svl not in config.supported_svls:
        raise ValueError(f"SVL {initial.svl} is not supported by the configuration "
                         f"(supported: {', '.join(map(str, config.supported_svls))})")
    words, texts = _program(program)
    waves_to = None if waves is None or isinstance(waves, bool) else Path(waves)
    waves = True if waves_to is not None else waves_requested(waves)
    build = build_engine(config, simulator, waves)
    runs = build.directory / "runs"
    runs.mkdir(exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix="run-", dir=runs))
    waveform = None
    try:
        initial.save(directory / "initial.npz")
        (directory / "request.json").write_text(json.dumps(
            {"words": words, "config": config.to_json_dict(), "pauses": pauses, "seed": seed}))
        build.run("zatile.tb.rtl_backend", extra_env={"ZATILE_RTL_REQUEST": str(directory),
                                               "COCOTB_LOG_LEVEL": "WARNING"},
                  test_dir=directory, log_file=directory / "sim.log")
        final = ArchState.load(directory / "final.npz")
        report = json.loads((directory / "results.json").read_text())
        waveform = _waveform(build, directory) if waves else None
        if waveform is not None and waves_to is not None:
            waveform = Path(shutil.move(waveform, waves_to))
    finally:
        if waves and waves_to is None:
            named = f" (waveform: {waveform.name})" if waveform is not None else ""
            print(f"RTL run kept in {directory}{named}", file=sys.stderr)
        else:
            shutil.rmtree(directory, ignore_errors=True)
    results = [Result(Status(r["status"]), r["smtc"], r["fault_address"], r["scalar"], r["form"])
               for r in report["results"]]
    outcomes = [InstructionOutcome(index, text, result.status.value, result.smtc,
                                   result.fault_address)
                for index, (text, result) in enumerate(zip(texts, results))]
    return RtlRun("rtl", final, outcomes, za_valid=final.za_enabled, results=results,
                  cycles=report["cycles"], seconds=report["seconds"], perf=report["perf"],
                  waveform=waveform)


def _waveform(build, directory: Path) -> Path:
    """The waveform a traced run of ``build`` wrote into ``directory`` (:meth:`Build.waves_file`:
    FST, or VCD from a Verilator built without lz4)."""
    waveform = build.waves_file(directory)
    if waveform is None or not waveform.exists():
        raise RuntimeError(f"the traced simulation wrote no waveform {waveform} into {directory}")
    return waveform
