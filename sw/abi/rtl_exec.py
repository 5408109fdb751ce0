"""Real programs on the RTL engine: ``zatile exec --backend rtl``.

:func:`run_program_rtl` builds the engine's Verilog for ``EngineConfig(max_svl=svl)`` (cached by
:mod:`zatile.tb.runner`) and starts one simulation in which
:func:`~zatile.sw.abi.elf_process.run_program` runs unchanged (:mod:`zatile.sw.abi.rtl_exec_sim`):
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
from pathlib import Path
from typing import BinaryIO, Sequence

from zatile.sw.abi.elf_process import ProcessResult, load_elf_image
from zatile.sw.arch.config import EngineConfig
from zatile.tb.runner import build_engine

__all__ = ["run_program_rtl"]


def run_program_rtl(path: str | Path, argv: Sequence[str] = (), *, svl: int = 512,
                    stdout: BinaryIO | None = None, stderr: BinaryIO | None = None,
                    count_instructions: bool = False,
                    environment: Sequence[str] | None = None, simulator: str = "verilator",
                    pauses: str = "none", seed: int = 0) -> ProcessResult:
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
    load_elf_image(path)                 # the same errors as the model backend, before building
    config = EngineConfig(max_svl=svl)
    build = build_engine(config, simulator)
    runs = build.directory / "runs"
    runs.mkdir(exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix="exec-", dir=runs))
    try:
        (directory / "request.json").write_text(json.dumps({
            "program": str(path), "argv": list(argv) or [str(path)],
            "environment": list(environment) if environment is not None
            else ["PATH=/bin", "HOME=/"],
            "config": config.to_json_dict(), "count_instructions": count_instructions,
            "pauses": pauses, "seed": seed}))
        build.run("zatile.sw.abi.rtl_exec_sim",
                  extra_env={"ZATILE_RTL_EXEC": str(directory), "COCOTB_LOG_LEVEL": "WARNING"},
                  test_dir=directory, log_file=directory / "sim.log")
        for name, stream in (("stdout", stdout or sys.stdout.buffer),
                             ("stderr", stderr or sys.stderr.buffer)):
            stream.write((directory / name).read_bytes())
            stream.flush()
        return ProcessResult.from_json_dict(json.loads((directory / "result.json").read_text()))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
