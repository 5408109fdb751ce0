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
    #: Simulated clock cycles and wall-clock seconds of the simulation.
    cycles: int = 0
    seconds: float = 0.0

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
            waves: bool | None = None, pauses: str = "none", seed: int = 0) -> RtlRun:
    """Run ``program`` (assembly text or instruction words) from ``initial`` on the RTL.

    Parameters
    ----------
    program : str or sequence of int
    initial : ArchState
    config : EngineConfig, optional
        Defaults to ``EngineConfig(max_svl=initial.svl)``.
    simulator : str
        ``verilator`` or ``icarus``.
    waves : bool, optional
        Record an FST waveform (default from ``ZATILE_WAVES``); the run directory is then kept
        and its path printed.
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
    waves = waves_requested(waves)
    build = build_engine(config, simulator, waves)
    runs = build.directory / "runs"
    runs.mkdir(exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix="run-", dir=runs))
    try:
        initial.save(directory / "initial.npz")
        (directory / "request.json").write_text(json.dumps(
            {"words": words, "config": config.to_json_dict(), "pauses": pauses, "seed": seed}))
        build.run("zatile.tb.rtl_backend", extra_env={"ZATILE_RTL_REQUEST": str(directory),
                                               "COCOTB_LOG_LEVEL": "WARNING"},
                  test_dir=directory, log_file=directory / "sim.log")
        final = ArchState.load(directory / "final.npz")
        report = json.loads((directory / "results.json").read_text())
    finally:
        if waves:
            print(f"RTL run kept in {directory} (waveform: dump.fst / *.fst)")
        else:
            shutil.rmtree(directory, ignore_errors=True)
    results = [Result(Status(r["status"]), r["smtc"], r["fault_address"], r["scalar"], r["form"])
               for r in report["results"]]
    outcomes = [InstructionOutcome(index, text, result.status.value, result.smtc,
                                   result.fault_address)
                for index, (text, result) in enumerate(zip(texts, results))]
    return RtlRun("rtl", final, outcomes, za_valid=final.za_enabled, results=results,
                  cycles=report["cycles"], seconds=report["seconds"])
