"""Running a compiled program: a static ELF as the first process of a new kernel model.

:func:`run_program` is what ``zatile exec`` (model backend) and the RTL backend's simulation
run: the program, its threads and its children are processes of a
:class:`~zatile.sw.abi.kernel.Kernel` whose engine is the chosen backend
(:mod:`~zatile.sw.abi.host_tasks`).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import BinaryIO, Sequence

from zatile.sim.engine import ModelEngine
from zatile.sw.abi import constants as c
from zatile.sw.abi.elf_process import ProcessResult, load_elf_image
from zatile.sw.abi.host_tasks import DEFAULT_HOST_QUANTUM
from zatile.sw.abi.kernel import Kernel
from zatile.sw.arch.config import EngineConfig

__all__ = ["run_program"]


def run_program(path: str | Path, argv: Sequence[str] = (), *, svl: int = 512,
                engine_class=ModelEngine, stdout: BinaryIO | None = None,
                stderr: BinaryIO | None = None, count_instructions: bool = False,
                environment: Sequence[str] | None = None,
                quantum: int | None = None, za_contexts: int = 1,
                config: EngineConfig | None = None) -> ProcessResult:
    """Load a static aarch64 program and run it as the first process of a new kernel model
    (its threads and children too) until every thread has ended; ``argv[0]`` is the path
    unless given. When every thread left sleeps (or is stopped) with nothing that could wake
    it, the processes are killed with SIGKILL and one warning line says so (Linux would wait
    for ever).

    Parameters
    ----------
    svl : int
        The engine's largest SVL in bits, and the system's default SME vector length (as if
        ``/proc/sys/abi/sme_default_vector_length`` had been set to it before the start).
    engine_class : callable
        ``engine_class(config, bus)``: the engine backend (the reference model by default).
    quantum : int, optional
        The time slice of a thread, in host instructions (default
        :data:`~zatile.sw.abi.host_tasks.DEFAULT_HOST_QUANTUM`).
    za_contexts : int
        The engine's physical ZA contexts (``EngineConfig.za_contexts``), on which the kernel
        keeps threads' and virtual contexts' ZA resident (docs/abi.md, "Virtual ZA contexts").
    config : EngineConfig, optional
        The engine's whole configuration, instead of ``EngineConfig(max_svl=svl,
        za_contexts=za_contexts)`` (``svl`` stays the default SME vector length).

    Returns
    -------
    ProcessResult
        For the first process: its exit status (128 + the signal if one killed it), the
        host CPU's counts, and the kernel's context switches, preemptions, signals and ZA
        traffic.
    """
    image = load_elf_image(path)
    kernel = Kernel(config or EngineConfig(max_svl=svl, za_contexts=za_contexts),
                    engine_class=engine_class,
                    host_quantum=quantum or DEFAULT_HOST_QUANTUM)
    kernel.sme_default_vl = svl // 8
    arguments = list(argv) or [str(path)]
    envp = list(environment) if environment is not None else ["PATH=/bin", "HOME=/"]
    errors = stderr if stderr is not None else sys.stderr.buffer
    process = kernel.spawn_elf(image, arguments, envp,
                               stdout=stdout if stdout is not None else sys.stdout.buffer,
                               stderr=errors, count_instructions=count_instructions)
    start = time.perf_counter()
    kernel.run(max_steps=1 << 62)
    stuck = [stuck for stuck in kernel.processes.values() if stuck.alive]
    if stuck:
        errors.write(f"zatile: warning: every thread left (process "
                     f"{', '.join(str(each.pid) for each in stuck)}) waits with nothing to wake "
                     f"it: killed with SIGKILL\n".encode())
        for each in stuck:
            kernel._kill_process(each, c.SIGKILL, None)
    elapsed = time.perf_counter() - start
    stats, host = kernel.stats, process.mm.cpu.stats
    signal = process.exit_signal
    return ProcessResult(
        128 + signal if signal is not None else process.exit_code or 0, signal, elapsed,
        host.host_instructions, host.engine_instructions, dict(host.engine_by_class),
        stats.syscalls, host.v_pulls + host.v_pushes,
        process.mm.last_stop if signal is not None else None,
        engine_seconds=host.engine_seconds, engine_streamed=host.engine_streamed,
        engine_drains=host.engine_drains, context_switches=stats.context_switches,
        preemptions=stats.preemptions, sme_saves=stats.saves, lazy_restores=stats.restores,
        signals_delivered=stats.signals_delivered,
        za_bytes_saved=stats.za_bytes_saved, za_bytes_restored=stats.za_bytes_restored,
        za_loads=stats.za_loads, za_evictions=stats.za_evictions,
        za_resident_hits=stats.za_resident_hits,
        kernel_engine_cycles=stats.kernel_engine_cycles)
