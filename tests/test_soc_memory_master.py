"""The SoC wrapper's AXI4 memory manager (hw/soc/memory_master.py) under the Amaranth simulator,
against a small AXI4 subordinate model: read bursts, single-beat writes, read/write ordering,
errors and the abandon rule, the 4 KiB boundary."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from amaranth.sim import Simulator

from zatile.hw.soc.axi import Burst, Response
from zatile.hw.soc.memory_master import AxiMemoryMaster
from zatile.sw.arch.config import EngineConfig

BEAT = 8
CONFIG = EngineConfig(max_svl=256, mem_data_width=BEAT * 8, mem_outstanding=8)


@dataclass
class Subordinate:
    """An AXI4 memory: bytes in a dict, an error for any beat touching ``bad`` addresses;
    ``stall`` cycles before it takes each address (latency and backpressure)."""

    bad: set[int] = field(default_factory=set)
    memory: dict[int, int] = field(default_factory=dict)
    ar: list[tuple[int, int]] = field(default_factory=list)     # (address, AxLEN)
    aw: list[int] = field(default_factory=list)
    writes: list[tuple[int, int, int]] = field(default_factory=list)  # (address, data, strobes)

    def failing(self, address: int) -> bool:
        return any(address <= b < address + BEAT for b in self.bad)

    def read(self, address: int) -> tuple[int, int]:
        value = sum(self.memory.get(address + i, i + 1) << (8 * i) for i in range(BEAT))
        return (0, 2) if self.failing(address) else (value, 0)

    def write(self, address: int, value: int, strobes: int) -> int:
        self.writes.append((address, value, strobes))
        if self.failing(address):
            return 2
        for i in range(BEAT):
            if strobes >> i & 1:
                self.memory[address + i] = value >> (8 * i) & 0xFF
        return 0


def run(requests: list[dict], subordinate: Subordinate, cycles: int = 200,
        accept_every: int = 1) -> list[tuple[int, int]]:
    """Offer ``requests`` (address, write, data, byte_enable, first) in order; return the
    (data, error) answers in order."""
    dut = AxiMemoryMaster(CONFIG)
    answers = []

    async def bench(ctx):
        offered = deque(requests)
        r_beats, b_answers, w_data = deque(), deque(), deque()
        aw_addresses = deque()
        for cycle in range(cycles):
            if offered:
                request = offered[0]
                ctx.set(dut.mem_req.valid, 1)
                for name in ("address", "write", "data", "byte_enable", "first"):
                    ctx.set(getattr(dut.mem_req.payload, name), request.get(name, 0))
            else:
                ctx.set(dut.mem_req.valid, 0)
            taking = cycle % accept_every == 0
            for ready in (dut.axi.arready, dut.axi.awready, dut.axi.wready):
                ctx.set(ready, taking)
            ctx.set(dut.axi.rvalid, bool(r_beats))
            if r_beats:
                value, response, last = r_beats[0]
                ctx.set(dut.axi.rdata, value)
                ctx.set(dut.axi.rresp, Response(response))
                ctx.set(dut.axi.rlast, last)
            ctx.set(dut.axi.bvalid, bool(b_answers))
            if b_answers:
                ctx.set(dut.axi.bresp, Response(b_answers[0]))
            ctx.set(dut.mem_resp.ready, 1)
            if ctx.get(dut.mem_req.valid) and ctx.get(dut.mem_req.ready):
                offered.popleft()
            if ctx.get(dut.mem_resp.valid):
                answers.append((ctx.get(dut.mem_resp.payload.data),
                                ctx.get(dut.mem_resp.payload.error)))
            if r_beats and ctx.get(dut.axi.rready):
                r_beats.popleft()
            if b_answers and ctx.get(dut.axi.bready):
                b_answers.popleft()
            if ctx.get(dut.axi.arvalid) and taking:
                address, length = ctx.get(dut.axi.araddr), ctx.get(dut.axi.arlen)
                assert ctx.get(dut.axi.arsize) == 3 and ctx.get(dut.axi.arburst) == Burst.INCR
                subordinate.ar.append((address, length))
                for beat in range(length + 1):
                    r_beats.append((*subordinate.read(address + BEAT * beat), beat == length))
            if ctx.get(dut.axi.awvalid) and taking:
                assert ctx.get(dut.axi.awlen) == 0
                aw_addresses.append(ctx.get(dut.axi.awaddr))
                subordinate.aw.append(aw_addresses[-1])
            if ctx.get(dut.axi.wvalid) and taking:
                assert ctx.get(dut.axi.wlast) == 1
                w_data.append((ctx.get(dut.axi.wdata), ctx.get(dut.axi.wstrb)))
            while aw_addresses and w_data:
                b_answers.append(subordinate.write(aw_addresses.popleft(), *w_data.popleft()))
            await ctx.tick()
        assert not offered, f"requests never taken: {list(offered)}"

    simulator = Simulator(dut)
    simulator.add_clock(1e-8)
    simulator.add_testbench(bench)
    simulator.run()
    return answers


def beats(start: int, count: int, *, write: bool = False, first: bool = True) -> list[dict]:
    return [{"address": start + BEAT * n, "write": int(write), "first": int(first and n == 0),
             "byte_enable": 0xFF, "data": 0x1111111111111111 * (n + 1)}
            for n in range(count)]


def expected_read(address: int) -> int:
    return Subordinate().read(address)[0]


def test_consecutive_read_beats_become_one_burst_across_accesses():
    subordinate = Subordinate()
    answers = run(beats(0x1000, 3) + beats(0x1018, 2), subordinate)
    assert subordinate.ar == [(0x1000, 4)]
    assert answers == [(expected_read(0x1000 + BEAT * n), 0) for n in range(5)]


def test_a_burst_stops_at_a_4k_boundary_and_at_a_gap():
    subordinate = Subordinate()
    run(beats(0x1FF0, 4) + beats(0x3000, 1), subordinate)
    assert subordinate.ar == [(0x1FF0, 1), (0x2000, 1), (0x3000, 0)]


def test_writes_are_single_beats_with_the_byte_enables_as_strobes():
    subordinate = Subordinate()
    requests = beats(0x2000, 2, write=True) + beats(0x2010, 1, write=True)
    requests[1]["byte_enable"] = 0x0F
    answers = run(requests, subordinate)
    assert [error for _, error in answers] == [0, 0, 0]
    assert subordinate.writes == [(0x2000, 0x1111111111111111, 0xFF),
                                  (0x2008, 0x2222222222222222, 0x0F),
                                  (0x2010, 0x1111111111111111, 0xFF)]


def test_a_read_after_a_write_waits_for_the_write_response():
    subordinate = Subordinate()
    answers = run(beats(0x3000, 1, write=True) + beats(0x3000, 1), subordinate,
                  accept_every=3)
    assert answers[1] == (0x1111111111111111, 0)


def test_a_failing_store_beat_abandons_the_rest_of_its_access_and_nothing_else():
    subordinate = Subordinate(bad={0x4008})
    requests = beats(0x4000, 4, write=True) + beats(0x5000, 1, write=True)
    answers = run(requests, subordinate)
    assert [error for _, error in answers] == [0, 1, 1, 1, 0]
    # The beats after the failing one were never sent; the next access was.
    assert subordinate.aw == [0x4000, 0x4008, 0x5000]
    assert 0x4010 not in subordinate.memory and subordinate.memory[0x5000] == 0x11


def test_a_failing_read_beat_makes_the_rest_of_its_access_fail():
    subordinate = Subordinate(bad={0x6008})
    answers = run(beats(0x6000, 3) + beats(0x6018, 1), subordinate)
    assert [error for _, error in answers] == [0, 1, 1, 0]
