"""Real programs on the RTL engine: ``zatile exec --backend rtl``.

:func:`run_program_rtl` builds the engine's Verilog for ``EngineConfig(max_svl=svl,
za_contexts=za_contexts)`` (cached by :mod:`zatile.tb.runner`) and starts one simulation in which
:func:`~zatile.sw.abi.runner.run_program` runs unchanged (:mod:`zatile.sw.abi.rtl_exec_sim`):
the scalar code on the host CPU, every SME and streaming-SVE word on the engine's RTL through its
issue port, the engine's memory port served from the guest's memory. The program's standard
output and error are written to the caller's streams when it has ended (the simulator is a
separate process), and its stdin is empty, as with the model backend.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Callable, Iterator, Sequence

from zatile.sw.abi.elf_process import ProcessResult, load_elf_image
from zatile.sw.arch.config import EngineConfig
from zatile.tb.runner import build_engine

__all__ = ["run_program_rtl", "call_rtl", "PROGRESS_CYCLES"]

#: How often (in simulated engine cycles) a simulation with a ``progress`` callback reports its
#: performance counters: about a second of simulation at SVL 128.
PROGRESS_CYCLES = 2000
#: How often (in seconds) the parent looks for a new report.
_PROGRESS_POLL = 0.2


def run_program_rtl(path: str | Path, argv: Sequence[str] = (), *, svl: int = 512,
                    stdout: BinaryIO | None = None, stderr: BinaryIO | None = None,
                    count_instructions: bool = False,
                    environment: Sequence[str] | None = None, simulator: str = "verilator",
                    pauses: str = "none", seed: int = 0, quantum: int | None = None,
                    progress: Callable[[dict], None] | None = None,
                    run_ahead: bool = True, za_contexts: int = 1,
                    config: EngineConfig | None = None) -> ProcessResult:
    """Load and run a static aarch64 program with the RTL engine; ``argv[0]`` is the path
    unless given.

    Parameters
    ----------
    path : str or Path
    argv : sequence of str
    svl : int
        The engine's largest SVL in bits (the Verilog is built for it) and the process's SME
        vector length.
    stdout, stderr : binary file objects
        Where the program's fd 1 and fd 2 go (the process's own by default).
    count_instructions : bool
        Count host instructions (for ``--stats``).
    environment : sequence of str, optional
    simulator : str
        ``verilator`` or ``icarus``.
    pauses : str
        Random idle/backpressure on the engine's handshakes (:data:`zatile.tb.pauses.PAUSE_STYLES`).
    seed : int
        Seed of the pauses.
    quantum : int, optional
        A thread's time slice in host instructions (as for
        :func:`~zatile.sw.abi.runner.run_program`).
    progress : callable, optional
        Called from another thread with the engine's performance counters (a dict by the
        names of :data:`zatile.hw.perf_counters.PERF_COUNTERS`) every :data:`PROGRESS_CYCLES`
        engine cycles while the simulation runs, and once more with the final counters.
    run_ahead : bool
        Whether the host CPU streams instructions ahead of their results (docs/architecture.md,
        "The host runs ahead"); False waits for every result (lock step).
    za_contexts : int
        The engine's physical ZA contexts (the Verilog is built with them).
    config : EngineConfig, optional
        The engine to build instead of ``EngineConfig(max_svl=svl, za_contexts=za_contexts)``
        (any configuration: bus width, features, supported SVLs); the process's vector length
        is then its largest SVL.

    Returns
    -------
    ProcessResult
        With ``engine_cycles`` and ``engine_perf`` set.

    Raises
    ------
    zatile.sw.abi.elf_process.ExecError
        If ``path`` is not a static aarch64 executable.
    zatile.tb.runner.SimulationFailed
        If the simulation itself fails (never for a program that crashes: that is its status).
    """
    path = Path(path).resolve()
    config = config or EngineConfig(max_svl=svl, za_contexts=za_contexts)
    with _simulation(path, config, simulator, {
            "argv": list(argv) or [str(path)],
            "environment": list(environment) if environment is not None
            else ["PATH=/bin", "HOME=/"],
            "count_instructions": count_instructions, "pauses": pauses, "seed": seed,
            "quantum": quantum, "run_ahead": run_ahead},
            progress=progress) as directory:
        for name, stream in (("stdout", stdout or sys.stdout.buffer),
                             ("stderr", stderr or sys.stderr.buffer)):
            stream.write((directory / name).read_bytes())
            stream.flush()
        result = ProcessResult.from_json_dict(json.loads((directory / "result.json").read_text()))
    if progress is not None:
        progress(result.engine_perf)
    return result


def call_rtl(path: str | Path, function: str, arguments: Sequence[int], *,
             inputs: Sequence[tuple[int, bytes]], outputs: Sequence[tuple[int, int]],
             svl: int = 512, simulator: str = "verilator",
             pauses: str = "none",
             progress: Callable[[dict], None] | None = None,
             run_ahead: bool = True) -> tuple[list[bytes], dict]:
    """Call ``function`` of a static program with the RTL engine, without running the program.

    Every ``(address, data)`` of ``inputs`` is mapped (read-write, whole pages) and written
    first; the function is called with integer or pointer ``arguments`` under the AAPCS64
    (:meth:`~zatile.sw.abi.elf_process.ElfProcess.call_with_memory`: floating-point arguments
    and ZA interfaces are the model's only, for now); then every ``(address, length)`` of
    ``outputs`` (inside the mapped inputs) is read. ``progress`` and ``run_ahead`` are as for
    :func:`run_program_rtl`.

    Returns
    -------
    (list of bytes, dict)
        The outputs, and ``{"engine_cycles": ..., "engine_perf": {...}, "host": {...}}`` (the
        simulated cycles, the engine's performance counters, and the host CPU's
        ``engine_instructions``, ``engine_instructions_by_class`` and ``engine_streamed``).

    Raises
    ------
    zatile.sw.abi.elf_process.ExecError
        If ``path`` is not a static aarch64 executable.
    zatile.tb.runner.SimulationFailed
        If the simulation fails, or the function does not return.
    """
    path = Path(path).resolve()
    call = {"function": function, "arguments": [int(value) for value in arguments],
            "inputs": [[address, f"input{index}"]
                                     for index, (address, _) in enumerate(inputs)],
            "outputs": [[address, length, f"output{index}"]
                        for index, (address, length) in enumerate(outputs)]}
    request = {"argv": [str(path)], "call": call, "pauses": pauses, "seed": 0,
               "run_ahead": run_ahead}

    def stage(directory: Path) -> None:
        for index, (_, data) in enumerate(inputs):
            (directory / f"input{index}").write_bytes(bytes(data))

    with _simulation(path, EngineConfig(max_svl=svl), simulator, request, stage,
                     progress) as directory:
        results = [(directory / f"output{index}").read_bytes() for index in range(len(outputs))]
        figures = json.loads((directory / "perf.json").read_text())
    if progress is not None:
        progress(figures["engine_perf"])
    return results, figures


@contextmanager
def _simulation(path: Path, config: EngineConfig, simulator: str, request: dict,
                stage: Callable[[Path], None] | None = None,
                progress: Callable[[dict], None] | None = None) -> Iterator[Path]:
    """Run one simulation of :mod:`zatile.sw.abi.rtl_exec_sim` for ``request`` and yield its
    directory (removed afterwards); its progress reports go to ``progress`` meanwhile."""
    load_elf_image(path)                 # the same errors as the model backend, before building
    build = build_engine(config, simulator)
    runs = build.directory / "runs"
    runs.mkdir(exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix="exec-", dir=runs))
    try:
        if stage is not None:
            stage(directory)
        if progress is not None:
            request = {**request, "progress_cycles": PROGRESS_CYCLES}
        (directory / "request.json").write_text(json.dumps(
            {"program": str(path), "config": config.to_json_dict(), **request}))
        with _watching(directory / "progress.json", progress):
            build.run("zatile.sw.abi.rtl_exec_sim",
                      extra_env={"ZATILE_RTL_EXEC": str(directory),
                                 "COCOTB_LOG_LEVEL": "WARNING"},
                      test_dir=directory, log_file=directory / "sim.log")
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@contextmanager
def _watching(report: Path, progress: Callable[[dict], None] | None) -> Iterator[None]:
    """Pass each new content of ``report`` (JSON, replaced whole by the simulation) to
    ``progress`` from a thread, until the block ends."""
    if progress is None:
        yield
        return
    finished = threading.Event()

    def watch() -> None:
        seen = None
        while not finished.wait(_PROGRESS_POLL):
            try:
                text = report.read_text()
            except FileNotFoundError:
                continue
            if text != seen:
                seen = text
                progress(json.loads(text))

    watcher = threading.Thread(target=watch, name="rtl-progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        finished.set()
        watcher.join()
