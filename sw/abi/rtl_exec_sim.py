"""The simulation side of :func:`zatile.sw.abi.rtl_exec.run_program_rtl` (a cocotb test module).

``ZATILE_RTL_EXEC`` names a directory holding ``request.json`` (program, argv, environment, SVL,
pause style, seed, whether to count host instructions, the time slice, whether the host runs
ahead of the engine). The program runs
unchanged as a process of the kernel model (:func:`zatile.sw.abi.runner.run_program`) in a
:func:`cocotb.task.bridge` thread, with a :class:`zatile.tb.engine.RtlEngine` as the kernel's
engine, whose memory port is the kernel's bus (the current process's memory, and the kernel's
save areas at EL1). Its fd 1 and fd 2 go to ``stdout`` and
``stderr`` in the directory; ``result.json`` holds the :class:`ProcessResult`, the simulated
cycles and the engine's performance counters. A request with a ``call`` calls one function of
the program instead of running it (:func:`zatile.sw.abi.rtl_exec.call_rtl`). A request with
``progress_cycles`` has the performance counters written to ``progress.json`` (replaced whole)
every that many cycles while the program runs, for a progress bar in the parent process.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import cocotb
from cocotb.task import bridge
from cocotb.triggers import ClockCycles
from cocotb.utils import get_sim_time

from zatile.sw.abi.elf_process import ElfProcess, load_elf_image
from zatile.sw.abi.runner import run_program
from zatile.sw.arch.config import EngineConfig
from zatile.tb.engine import CLOCK_NS, EngineBench, RtlEngine, smcr_len_for


@cocotb.test()
async def exec_program(dut) -> None:
    """Run the requested program with the RTL engine behind the host CPU."""
    directory = Path(os.environ["ZATILE_RTL_EXEC"])
    request = json.loads((directory / "request.json").read_text())
    config = EngineConfig.from_json_dict(request["config"])
    bench = EngineBench(dut, config, seed=request["seed"], pauses=request["pauses"])
    await bench.reset(smcr_len=smcr_len_for(config.min_svl), sme_enable=False)

    def engine_class(process_config: EngineConfig, memory) -> RtlEngine:
        if process_config != config:
            raise ValueError(f"the program asks for {process_config}, the RTL is {config}")
        bench.bus.memory = memory
        return RtlEngine(bench, run_ahead=request["run_ahead"])

    if request.get("progress_cycles"):
        reporter = cocotb.start_soon(_report_progress(bench, directory,
                                                      request["progress_cycles"]))
    if "call" in request:
        host = await bridge(_call)(directory, request, config.max_svl, engine_class)
        await bench.wait_idle()
        (directory / "perf.json").write_text(json.dumps({
            "engine_cycles": int(get_sim_time("ns") / CLOCK_NS),
            "engine_perf": await bench.read_perf(), "host": host}))
    else:
        with open(directory / "stdout", "wb") as stdout, \
                open(directory / "stderr", "wb") as stderr:
            result = await bridge(run_program)(
                request["program"], request["argv"], svl=config.max_svl, config=config,
                engine_class=engine_class, stdout=stdout, stderr=stderr,
                count_instructions=request["count_instructions"],
                environment=request["environment"], quantum=request["quantum"])
        await bench.wait_idle()
        result.engine_cycles = int(get_sim_time("ns") / CLOCK_NS)
        result.engine_perf = await bench.read_perf()
        (directory / "result.json").write_text(json.dumps(result.to_json_dict()))
    if request.get("progress_cycles"):
        reporter.cancel()


async def _report_progress(bench: EngineBench, directory: Path, cycles: int) -> None:
    """Write the performance counters to ``progress.json`` every ``cycles`` cycles (through a
    temporary file, so a reader never sees half of one)."""
    partial, progress = directory / "progress.json.partial", directory / "progress.json"
    while True:
        await ClockCycles(bench.clock, cycles)
        partial.write_text(json.dumps(await bench.read_perf()))
        os.replace(partial, progress)


def _call(directory: Path, request: dict, svl: int, engine_class) -> dict:
    """Load the program without running it and call one function with its buffers
    (:meth:`~zatile.sw.abi.elf_process.ElfProcess.call_with_memory`, for
    :func:`zatile.sw.abi.rtl_exec.call_rtl`); the outputs go to files, the host CPU's counts are
    returned."""
    call = request["call"]
    process = ElfProcess(load_elf_image(request["program"]), request["argv"], svl=svl,
                         engine_class=engine_class, stdout=io.BytesIO(), stderr=io.BytesIO())
    outputs, counts = process.call_with_memory(
        call["function"], call["arguments"],
        [(address, (directory / name).read_bytes()) for address, name in call["inputs"]],
        [(address, length) for address, length, _ in call["outputs"]])
    for data, (_, _, name) in zip(outputs, call["outputs"]):
        (directory / name).write_bytes(data)
    return counts
