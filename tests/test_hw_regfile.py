"""hw.regfile against a model of the register file, cycle by cycle.

Random traffic at SVL 128: byte-enabled Z writes and bit-enabled P writes through both write
ports (P to different registers in one cycle, as the engine guarantees; Z sometimes to the
same one, where the load's bytes win), PSTATE.SM changes (``reset_sve``) between and on top of
writes, and every read port reading a random register each cycle: what each port reads must
be the model's register. The Z file keeps its values in two memories whose XOR is the value,
with one bit per register for whether it was written since the reset, so writes that
interleave the ports on one register's bytes, and a reset followed by partial writes, are what
the traffic leans on (most writes go to a few registers). Then a planted difference shows the
comparison names the register, the byte and the port.
"""

from __future__ import annotations

import random

from amaranth import Value
from amaranth.sim import Simulator

from zatile.hw.regfile import P_REGISTERS, Z_REGISTERS, RegisterFile
from zatile.sw.arch.config import EngineConfig

CONFIG = EngineConfig(max_svl=128)
MAXB = 16
#: The clock period of the simulation: the register file reads Z at its falling edge.
PERIOD = 1e-6
Z_READS = ("z_read_a", "z_read_b", "z_read_c")
P_READS = ("p_read_a", "p_read_b", "p_read_c", "p_read_load")


def _merge(old: int, new: int, lanes: int, width: int) -> int:
    """``new`` where ``lanes`` (one bit per ``width``-bit lane) is set, else ``old``."""
    mask = sum(((1 << width) - 1) << (width * lane) for lane in range(MAXB) if lanes >> lane & 1)
    return (old & ~mask) | (new & mask)


def _write(rng: random.Random, addresses: int, width: int, few: range) -> dict:
    """A random write: mostly to the first few registers, with random lanes."""
    lanes = rng.choice([(1 << MAXB) - 1, rng.getrandbits(MAXB), 1 << rng.randrange(MAXB), 0])
    return {"en": int(rng.random() < 0.6),
            "addr": rng.choice(few) if rng.random() < 0.7 else rng.randrange(addresses),
            "data": rng.getrandbits(width * MAXB), "lanes": lanes}


def run(cycles: int, seed: int, corrupt=None) -> list[str]:
    """Drive random traffic for ``cycles``; the differences between what the read ports read
    and the model. ``corrupt(cycle, z)`` may change the model's Z registers first."""
    dut = RegisterFile(CONFIG)
    rng = random.Random(seed)
    z = [0] * Z_REGISTERS
    p = [0] * P_REGISTERS
    problems = []

    async def bench(ctx):
        await ctx.tick()                          # from a rising edge
        for cycle in range(cycles):
            if corrupt is not None:
                corrupt(cycle, z)
            reads = {name: rng.randrange(Z_REGISTERS) for name in Z_READS}
            reads.update({name: rng.randrange(P_REGISTERS) for name in P_READS})
            for name, address in reads.items():
                ctx.set(getattr(dut, name).addr, address)
            writes = {"z_write": _write(rng, Z_REGISTERS, 8, range(3)),
                      "z_write_load": _write(rng, Z_REGISTERS, 8, range(3)),
                      "p_write": _write(rng, P_REGISTERS, 1, range(2)),
                      "p_write_load": _write(rng, P_REGISTERS, 1, range(2))}
            if writes["p_write"]["addr"] == writes["p_write_load"]["addr"]:  # never happens
                writes["p_write"]["en"] = 0
            for name, write in writes.items():
                for field, value in write.items():
                    ctx.set(Value.cast(getattr(getattr(dut, name), field)), value)
            reset = rng.random() < 0.03
            ctx.set(dut.reset_sve, reset)
            # Reads and writes in place by the falling edge, where Z is read.
            await ctx.delay(PERIOD * 3 / 4)
            for name, address in reads.items():
                got = ctx.get(Value.cast(getattr(dut, name).data))
                expected = (z if name.startswith("z") else p)[address]
                if got != expected:
                    if name.startswith("z"):
                        byte = next(b for b in range(MAXB) if (got ^ expected) >> (8 * b) & 0xFF)
                        where = f"z{address} byte {byte}"
                    else:
                        where = f"p{address}"
                    problems.append(f"cycle {cycle}: {where} via {name}: read 0x{got:x}, "
                                    f"expected 0x{expected:x}")
            await ctx.tick()
            if reset:
                z[:], p[:] = [0] * Z_REGISTERS, [0] * P_REGISTERS
                continue
            for name in ("z_write", "z_write_load", "p_write", "p_write_load"):  # load last
                write = writes[name]
                registers, width = (z, 8) if name.startswith("z") else (p, 1)
                if write["en"]:
                    registers[write["addr"]] = _merge(registers[write["addr"]], write["data"],
                                                      write["lanes"], width)

    sim = Simulator(dut)
    sim.add_clock(PERIOD)
    sim.add_testbench(bench)
    sim.run()
    return problems


def test_reads_match_the_model_under_random_traffic():
    assert run(3000, seed=1) == []


def test_a_planted_difference_is_reported_with_register_byte_and_port():
    def corrupt(cycle, z):
        if cycle == 1500:
            z[1] ^= 0x5A << (8 * 7)

    problems = run(3000, seed=1, corrupt=corrupt)
    assert problems and problems[0].startswith("cycle 15") and "z1 byte 7 via z_" in problems[0], \
        problems[:3]
