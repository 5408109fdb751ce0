"""The on-chip AXI4 memory (hw/soc/axi_ram.py) behind the SoC wrapper's memory manager
(hw/soc/memory_master.py), under the Amaranth simulator: the engine's beats in, answers out,
compared with a Python memory; read bursts at one beat per cycle; errors outside it."""

from __future__ import annotations

import random

import pytest
from amaranth import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from zatile.hw.soc.axi_ram import AxiRam
from zatile.hw.soc.memory_master import AxiMemoryMaster
from zatile.sw.arch.config import EngineConfig

CONFIG = EngineConfig(max_svl=256, mem_data_width=64, mem_outstanding=8)
BEAT = 8
BASE, SIZE = 0x8000, 0x1000


def run(requests: list[dict], cycles: int = 600) -> tuple[list[tuple[int, int]], list[int]]:
    """Offer ``requests`` to the manager in front of the memory; the (data, error) answers and
    the cycles they came in."""
    master = AxiMemoryMaster(CONFIG)
    ram = AxiRam(64, SIZE, BASE)
    top = Module()
    top.submodules.master = master
    top.submodules.ram = ram
    wiring.connect(top, master.axi, ram.axi)
    answers, times = [], []

    async def bench(ctx):
        pending = list(requests)
        ctx.set(master.mem_resp.ready, 1)
        for cycle in range(cycles):
            if pending:
                ctx.set(master.mem_req.valid, 1)
                for name, value in pending[0].items():
                    ctx.set(getattr(master.mem_req.payload, name), value)
            else:
                ctx.set(master.mem_req.valid, 0)
            if ctx.get(master.mem_req.valid) and ctx.get(master.mem_req.ready):
                pending.pop(0)
            if ctx.get(master.mem_resp.valid):
                answers.append((ctx.get(master.mem_resp.payload.data),
                                ctx.get(master.mem_resp.payload.error)))
                times.append(cycle)
            await ctx.tick()
        assert not pending, f"{len(pending)} requests never taken"

    simulator = Simulator(top)
    simulator.add_clock(1e-8)
    simulator.add_testbench(bench)
    simulator.run()
    return answers, times


def beat(address: int, *, write: bool = False, data: int = 0, enables: int = 0xFF,
         first: bool = True) -> dict:
    return {"address": address, "write": int(write), "data": data, "byte_enable": enables,
            "first": int(first)}


def test_random_traffic_matches_a_python_memory():
    rng = random.Random(3)
    memory = bytearray(SIZE)
    requests, expected = [], []
    for _ in range(120):
        address = BASE + BEAT * rng.randrange(SIZE // BEAT)
        if rng.random() < 0.5:
            data, enables = rng.getrandbits(64), rng.randrange(1, 256)
            requests.append(beat(address, write=True, data=data, enables=enables))
            for lane in range(BEAT):
                if enables >> lane & 1:
                    memory[address - BASE + lane] = data >> (8 * lane) & 0xFF
            expected.append(None)
        else:
            requests.append(beat(address))
            expected.append(int.from_bytes(memory[address - BASE:address - BASE + BEAT],
                                           "little"))
    answers, _ = run(requests, cycles=3000)
    assert len(answers) == len(requests)
    for index, ((data, error), want) in enumerate(zip(answers, expected)):
        assert error == 0, index
        if want is not None:
            assert data == want, (index, hex(data), hex(want))


def test_a_streamed_read_is_one_burst_at_one_beat_per_cycle():
    writes = [beat(BASE + BEAT * n, write=True, data=n + 1) for n in range(8)]
    reads = [beat(BASE + BEAT * n, first=n == 0) for n in range(8)]
    answers, times = run(writes + reads)
    assert [data for data, _ in answers[8:]] == list(range(1, 9))
    assert times[-1] - times[8] == 7              # the eight read answers back to back


def test_beats_outside_the_memory_answer_slverr_and_write_nothing():
    requests = [beat(BASE + SIZE - BEAT, write=True, data=0x11, first=True),
                beat(BASE + SIZE, write=True, data=0x22, first=False),   # past the end
                beat(BASE + SIZE - BEAT),
                beat(BASE - BEAT)]                                       # before the start
    answers, _ = run(requests)
    assert [error for _, error in answers] == [0, 1, 0, 1]
    assert answers[2][0] == 0x11 and answers[3][0] == 0


@pytest.mark.parametrize("arguments, quoted", [((64, 100), "not 100"), ((64, 4), "not 4"),
                                               ((64, 0x1000, 0x800), "not 2048")])
def test_arguments_are_checked(arguments, quoted):
    with pytest.raises(ValueError, match=quoted):
        AxiRam(*arguments)
