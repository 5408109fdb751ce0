"""Kernel-ABI tests on the RTL engine (a cocotb test module, run by tests/test_abi_rtl.py).

``ZATILE_ABI`` (JSON) holds the configuration the Verilog was built from, the test functions to
run — ``[module, function, keyword arguments]`` from the ``tests/test_abi_*`` modules, which
build their kernels with ``test_abi_common.new_kernel`` — and an output file. Each test runs
unchanged in a :func:`cocotb.task.bridge` thread, on a freshly reset engine that
``new_kernel`` receives as a :class:`tb.engine.RtlEngine` whose memory port is served from the
kernel's own :class:`~sw.abi.mm.SystemBus`. The output records, per test, ``passed`` or the
failure, and the instructions the engine executed.
"""

from __future__ import annotations

import importlib
import json
import os
import time
import traceback
from pathlib import Path

import cocotb
from cocotb.task import bridge

from zatile.tb.engine import EngineBench, RtlEngine, smcr_len_for
from zatile.sw.arch.config import EngineConfig


@cocotb.test()
async def abi_tests(dut) -> None:
    settings = json.loads(os.environ["ZATILE_ABI"])
    config = EngineConfig.from_json_dict(settings["config"])
    bench = EngineBench(dut, config, seed=1, pauses=settings.get("pauses", "none"))
    common = importlib.import_module("test_abi_common")

    def engine_class(kernel_config, memory):
        if kernel_config != config:
            raise ValueError(f"the test asks for {kernel_config}, the RTL is {config}")
        bench.bus.memory = memory
        return RtlEngine(bench)

    common.use_engine(engine_class, config.max_svl, config.za_contexts)
    outcomes = []
    for module_name, function_name, arguments in settings["tests"]:
        await bench.reset(smcr_len=smcr_len_for(config.min_svl), sme_enable=False)
        function = getattr(importlib.import_module(module_name), function_name)
        listed = ", ".join(f"{name}={value}" for name, value in arguments.items())
        label = f"{module_name}.{function_name}({listed})"
        started = time.monotonic()
        try:
            await bridge(function)(**arguments)
            outcome = "passed"
        except Exception:                      # report every failure, run the rest
            outcome = traceback.format_exc(limit=6)
        perf = await bench.read_perf()
        outcomes.append({"test": label, "outcome": outcome, "cycles": perf["cycles"],
                         "instructions": perf["retired"] + perf["traps"],
                         "seconds": round(time.monotonic() - started, 1)})
        dut._log.info(f"{label}: {'passed' if outcome == 'passed' else 'FAILED'}")
    Path(settings["output"]).write_text(json.dumps(outcomes, indent=1))
