"""The simulation side of :func:`zatile.tb.rtl_run.run_rtl_batch` (a cocotb test module).

``ZATILE_RTL_REQUEST`` names a directory holding ``request.json`` (configuration, pause style,
seed, and each program's words) and ``initial-<k>.npz`` for program ``k``; the test runs the
programs one after another, each on a freshly reset engine, and writes ``final-<k>.npz`` and
``results-<k>.json`` for each. ``results-<k>.json`` holds each instruction's result, the
simulated cycles of the program (from its reset to its state read back) and the performance
counters' increase over the program alone (the state load before it is not counted).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import cocotb
from cocotb.task import bridge
from cocotb.utils import get_sim_time

from zatile.sim.straight_line import execute_program
from zatile.sim.state import ArchState
from zatile.tb.engine import CLOCK_NS, EngineBench, RtlEngine, smcr_len_for
from zatile.sw.arch.config import EngineConfig


@cocotb.test()
async def run_program(dut) -> None:
    """For each program: load the initial state, run the program from a bridged CPU thread,
    read the state back."""
    directory = Path(os.environ["ZATILE_RTL_REQUEST"])
    request = json.loads((directory / "request.json").read_text())
    config = EngineConfig.from_json_dict(request["config"])
    bench = EngineBench(dut, config, seed=request.get("seed", 0),
                        pauses=request.get("pauses", "none"))
    for index, program in enumerate(request["programs"]):
        started, first_cycle = time.monotonic(), get_sim_time("ns") / CLOCK_NS
        initial = ArchState.load(directory / f"initial-{index}.npz")
        await bench.reset(smcr_len=smcr_len_for(initial.svl), fpcr=initial.fpcr,
                          memory=initial.memory.copy())
        await bench.load_state(initial)
        engine = RtlEngine(bench, fpsr=initial.fpsr)
        await bench.wait_idle()
        before = await bench.read_perf()
        results, x, sp, nzcv = await bridge(execute_program)(engine, program["words"],
                                                             initial.x, initial.sp,
                                                             initial.nzcv)
        await bench.wait_idle()
        perf = {name: count - before[name] for name, count in (await bench.read_perf()).items()}
        snapshot = await bench.snapshot(za=True)
        final = ArchState(svl=initial.svl, svcr=snapshot["svcr"], za=snapshot["za"],
                          z=snapshot["z"], p=snapshot["p"], ffr=snapshot["ffr"],
                          fpcr=initial.fpcr, fpsr=engine.fpsr, nzcv=nzcv, x=x, sp=sp,
                          memory=bench.bus.memory)
        if engine.sm_changes == 0:
            # Non-streaming SVE state and FFR live with the CPU until an SM change resets them.
            final.ffr = initial.ffr.copy()
            if not initial.sm:
                final.z, final.p = initial.z.copy(), initial.p.copy()
        final.save(directory / f"final-{index}.npz")
        (directory / f"results-{index}.json").write_text(json.dumps({
            "results": [{"status": r.status.value, "smtc": r.smtc,
                         "fault_address": r.fault_address, "scalar": r.scalar, "form": r.form}
                        for r in results],
            "cycles": int(get_sim_time("ns") / CLOCK_NS - first_cycle), "perf": perf,
            "seconds": time.monotonic() - started}))
