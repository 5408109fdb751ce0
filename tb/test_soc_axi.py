"""cocotb tests of the SoC wrapper's AXI ports with cocotbext-axi's own models, and of the
checker behind :class:`tb.soc.SocBench`.

Run by pytest through :mod:`tb.runner` (``tests/test_soc.py``) on a ``zatile_soc`` build; the
settings arrive as JSON in ``ZATILE_TB`` (``config``: the EngineConfig the Verilog was built
from, ``seed``).

``matrix_products``
    A host that knows only the register map runs an int8 SMOPA and an fp32 FMOPA matrix product
    (``C = A·B``) on data placed in a cocotbext-axi ``AxiRam`` and compares the C the engine
    stores back with numpy; ``AxiRam`` and ``AxiLiteMaster`` pause on every channel, and the
    handshake rule is checked on both ports (:mod:`tb.axi_rules`).
``registers``
    ID and CONFIG, an unmapped offset, a write to a read-only register and a read of a
    write-only one answer SLVERR; ``ISSUE_WORD`` on a full FIFO answers SLVERR and sets
    ``STATUS.ISSUE_OVERFLOW`` until ``ISSUE_OVERFLOW_CLEAR``; ``RESULT_POP`` with no result
    answers SLVERR; ``irq`` follows ``CONTROL.IRQ_ENABLE`` and the result FIFO; performance
    counters read as ``_LO``/``_HI`` pairs count what ran (that ``_HI`` is the half latched
    by ``_LO`` shows only once a count passes 2^32, beyond a simulation's reach).
``checker_catches_corrupt_read`` / ``checker_catches_dropped_write``
    A :class:`~tb.soc.SocBench` whose memory flips a byte of one read beat, or drops one write,
    must make the scoreboard name the register byte or memory address that went wrong.
"""

from __future__ import annotations

import json
import logging
import os
import random

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam, AxiResp

from zatile.hw.soc.registers import (DEBUG_WINDOW, ID_VALUE, ISSUE_DEPTH, REGISTERS,
                                     REGISTERS_BY_NAME, RESULT_DEPTH, pack_register,
                                     unpack_register)
from zatile.sim.progen import DATA_BASE
from zatile.sw.arch.asm import disassemble
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.isa import PATTERN_ALL, FORMS_BY_NAME, operand_values
from zatile.tb.axi_rules import MANAGER_CHANNELS, SUBORDINATE_CHANNELS, HandshakeRules
from zatile.tb.engine import CLOCK_NS, smcr_len_for
from zatile.tb.issue import STATUS_NAMES, ScalarFile
from zatile.tb.pauses import pauses_by_name, per_cycle
from zatile.tb.programs import initial_state
from zatile.tb.scoreboard import Mismatch, Scoreboard
from zatile.tb.soc import BusTarget, SocBench, channels_of

#: Where the matrix products keep A's and B's panels and C in the AxiRam.
A_BASE, B_BASE, C_BASE = 0x1000, 0x2000, 0x3000
#: How many results a host waits for at most before it gives up on one.
RESULT_POLLS = 1000


def _config() -> EngineConfig:
    return EngineConfig.from_json_dict(json.loads(os.environ["ZATILE_TB"])["config"])


def _rng(name: str) -> random.Random:
    return random.Random(f"{json.loads(os.environ['ZATILE_TB']).get('seed', 1)}:{name}")


class RegisterHost:
    """A host on the control port that knows only the register map: every access returns the
    answer instead of judging it, so that the tests can expect SLVERR.

    Parameters
    ----------
    dut
        The ``zatile_soc`` toplevel.
    rng : random.Random
        Draws the pauses of the port's channels.
    """

    def __init__(self, dut, rng: random.Random):
        self.master = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil_"), dut.clk, dut.rst)
        for channel in channels_of(self.master):
            channel.set_pause_generator(per_cycle(pauses_by_name("light", rng)))
        for interface in (self.master.write_if, self.master.read_if):
            interface.log.setLevel(logging.WARNING)

    async def write_at(self, offset: int, value: int) -> AxiResp:
        return (await self.master.write(offset, value.to_bytes(4, "little"))).resp

    async def read_at(self, offset: int) -> tuple[int, AxiResp]:
        response = await self.master.read(offset, 4)
        return int.from_bytes(response.data, "little"), response.resp

    async def write(self, name: str, value: int) -> AxiResp:
        return await self.write_at(REGISTERS_BY_NAME[name].offset, value)

    async def read(self, name: str) -> int:
        """The value of register ``name``, which must answer OKAY."""
        value, response = await self.read_at(REGISTERS_BY_NAME[name].offset)
        assert response == AxiResp.OKAY, f"reading {name} answered {response.name}"
        return value

    async def fields(self, name: str) -> dict[str, int]:
        return unpack_register(name, await self.read(name))

    async def issue(self, word: int, sources: tuple[int, ...] = ()) -> AxiResp:
        """Write the operands and then the word; the ISSUE_WORD answer."""
        for slot, value in enumerate(sources):
            assert await self.write(f"ISSUE_SRC{slot}_LO", value & 0xFFFF_FFFF) == AxiResp.OKAY
            assert await self.write(f"ISSUE_SRC{slot}_HI", value >> 32) == AxiResp.OKAY
        return await self.write("ISSUE_WORD", word)

    async def next_result(self) -> dict[str, int]:
        """Wait for the oldest result, pop it, and return its RESULT fields."""
        for _ in range(RESULT_POLLS):
            fields = await self.fields("RESULT")
            if fields["VALID"]:
                assert await self.write("RESULT_POP", 1) == AxiResp.OKAY
                return fields
        raise AssertionError(f"no result after {RESULT_POLLS} reads of RESULT")

    async def execute(self, word: int, sources: tuple[int, ...] = ()) -> None:
        """Issue one instruction and check that it completes OK."""
        assert await self.issue(word, sources) == AxiResp.OKAY
        status = STATUS_NAMES[(await self.next_result())["STATUS"]]
        assert status == "OK", f"'{disassemble(word)}' ended {status}"


async def _reset(dut) -> None:
    Clock(dut.clk, CLOCK_NS, unit="ns").start()
    dut.rst.value = 1
    await ClockCycles(dut.clk, 2, FallingEdge)
    dut.rst.value = 0
    await FallingEdge(dut.clk)


def _matrix_program(kind: str, svl_bytes: int, rng: random.Random):
    """The words with their operands and the memory of C = A·B on one .S tile, and the C
    numpy computes: ``int8`` (SMOPA, 4-way sums) or ``fp32`` (FMOPA, exact small integers)."""
    dim = svl_bytes // 4                          # rows and columns of a .S tile
    if kind == "int8":
        depth = 16
        a = np.array([[rng.randint(-128, 127) for _ in range(depth)] for _ in range(dim)],
                     np.int8)
        b = np.array([[rng.randint(-128, 127) for _ in range(dim)] for _ in range(depth)],
                     np.int8)
        # step s: Zn byte 4i+q = A[i, 4s+q], Zm byte 4j+q = B[4s+q, j]
        a_panels = [a[:, 4 * s:4 * s + 4].reshape(-1) for s in range(depth // 4)]
        b_panels = [b[4 * s:4 * s + 4, :].T.reshape(-1) for s in range(depth // 4)]
        product = FORMS_BY_NAME["SMOPA_S"]
        expected = a.astype(np.int32) @ b.astype(np.int32)
    else:
        depth = 8
        a = np.array([[rng.randint(-8, 8) for _ in range(depth)] for _ in range(dim)],
                     np.float32)
        b = np.array([[rng.randint(-8, 8) for _ in range(dim)] for _ in range(depth)],
                     np.float32)
        a_panels = [a[:, k].copy() for k in range(depth)]
        b_panels = [b[k, :].copy() for k in range(depth)]
        product = FORMS_BY_NAME["FMOPA_S"]
        expected = a @ b
    memory = {A_BASE: b"".join(p.tobytes() for p in a_panels),
              B_BASE: b"".join(p.tobytes() for p in b_panels),
              C_BASE: bytes(dim * dim * 4)}
    load = FORMS_BY_NAME["LDR_Z"]
    store_row = FORMS_BY_NAME["ST1W_ZA_H"].encode(tile=0, rs=0, off=0, pg=0, rn=2, rm=31)
    steps = [(FORMS_BY_NAME["SMSTART"].encode(), ()),
             (FORMS_BY_NAME["PTRUE_B"].encode(pattern=PATTERN_ALL, pd=0), ()),
             (FORMS_BY_NAME["ZERO"].encode(mask=0xFF), ())]
    for step in range(len(a_panels)):
        for register, base in ((0, A_BASE), (1, B_BASE)):
            word = load.encode(zt=register, rn=register, imm9h=0, imm9l=0)
            steps.append((word, operand_values(word, {"rn": base + step * svl_bytes})))
        steps.append((product.encode(zada=0, pn=0, pm=0, zn=0, zm=1), ()))
    for row in range(dim):
        steps.append((store_row, operand_values(store_row, {"rs": row,
                                                            "rn": C_BASE + row * dim * 4})))
    steps.append((FORMS_BY_NAME["SMSTOP"].encode(), ()))
    return steps, memory, expected


@cocotb.test()
async def matrix_products(dut) -> None:
    """int8 SMOPA and fp32 FMOPA products from an AxiRam, checked against numpy."""
    config = _config()
    rng = _rng("matrix_products")
    await _reset(dut)
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi_"), dut.clk, dut.rst, size=1 << 16)
    for interface in (ram.write_if, ram.read_if):
        interface.log.setLevel(logging.WARNING)
    for channel in channels_of(ram):
        channel.set_pause_generator(per_cycle(pauses_by_name("heavy", rng)))
    host = RegisterHost(dut, rng)
    rules = [HandshakeRules(dut, dut.clk, "m_axi__", MANAGER_CHANNELS, CLOCK_NS),
             HandshakeRules(dut, dut.clk, "s_axil__", SUBORDINATE_CHANNELS, CLOCK_NS)]
    await ClockCycles(dut.clk, 2)
    svl_bytes = config.max_svl // 8
    for kind in ("int8", "fp32"):
        steps, memory, expected = _matrix_program(kind, svl_bytes, rng)
        for base, data in memory.items():
            ram.write(base, data)
        for word, sources in steps:
            await host.execute(word, sources)
        stored = np.frombuffer(ram.read(C_BASE, expected.size * 4), expected.dtype)
        assert np.array_equal(stored.reshape(expected.shape), expected), \
            f"{kind}: C from the engine\n{stored.reshape(expected.shape)}\nnumpy\n{expected}"
    # the pauses made the design wait with VALID high, and it kept its offers
    assert all(rule.stalls > 0 for rule in rules), [rule.stalls for rule in rules]


@cocotb.test()
async def registers(dut) -> None:
    """Identification, SLVERR for what the map forbids, the FIFOs, irq, performance counters."""
    config = _config()
    rng = _rng("registers")
    await _reset(dut)
    host = RegisterHost(dut, rng)
    await ClockCycles(dut.clk, 2)

    assert await host.read("ID") == ID_VALUE
    assert await host.fields("CONFIG") == {"MAX_SVL": config.max_svl,
                                           "MEM_DATA_WIDTH": config.mem_data_width,
                                           "ZA_CONTEXTS": config.za_contexts}
    smfr0 = await host.read("SMFR0_HI") << 32 | await host.read("SMFR0_LO")
    assert smfr0 == config.id_aa64smfr0
    fifo = await host.fields("FIFO")
    assert fifo == {"ISSUE_FREE": ISSUE_DEPTH, "RESULTS": 0, "ISSUE_DEPTH": ISSUE_DEPTH,
                    "RESULT_DEPTH": RESULT_DEPTH}

    # what the map forbids answers SLVERR and changes nothing
    listed = {register.offset for register in REGISTERS}
    unmapped = next(offset for offset in range(0, DEBUG_WINDOW, 4) if offset not in listed)
    assert (await host.read_at(unmapped))[1] == AxiResp.SLVERR
    assert await host.write_at(unmapped, 0xFFFF_FFFF) == AxiResp.SLVERR
    assert await host.write("ID", 0x1234_5678) == AxiResp.SLVERR
    assert await host.read("ID") == ID_VALUE
    assert (await host.read_at(REGISTERS_BY_NAME["ISSUE_WORD"].offset))[1] == AxiResp.SLVERR
    assert await host.write("RESULT_POP", 1) == AxiResp.SLVERR

    # Fill everything: results pile up in the result FIFO, then in the engine, then in the
    # issue FIFO, until an ISSUE_WORD write finds it full.
    undefined = 0x0000_0000
    accepted = 0
    limit = ISSUE_DEPTH + RESULT_DEPTH + 4 * config.queue_depth
    while accepted < limit and await host.issue(undefined) == AxiResp.OKAY:
        accepted += 1
    assert accepted < limit, f"{accepted} ISSUE_WORD writes and none answered SLVERR"
    status = await host.fields("STATUS")
    assert status["ISSUE_OVERFLOW"] == 1 and status["IDLE"] == 0, status
    fifo = await host.fields("FIFO")
    assert fifo["ISSUE_FREE"] == 0 and fifo["RESULTS"] == RESULT_DEPTH, fifo
    assert dut.irq.value == 0                      # IRQ_ENABLE is 0 after reset
    assert await host.write("ISSUE_OVERFLOW_CLEAR", 0) == AxiResp.OKAY
    assert (await host.fields("STATUS"))["ISSUE_OVERFLOW"] == 1     # bit 0 clear: kept
    assert await host.write("ISSUE_OVERFLOW_CLEAR", 1) == AxiResp.OKAY
    assert (await host.fields("STATUS"))["ISSUE_OVERFLOW"] == 0
    for _ in range(accepted):
        assert STATUS_NAMES[(await host.next_result())["STATUS"]] == "UNDEF"
    assert (await host.fields("RESULT"))["VALID"] == 0
    assert await host.write("RESULT_POP", 1) == AxiResp.SLVERR
    assert (await host.fields("STATUS"))["IDLE"] == 1

    # irq: high while enabled and a result waits
    control = {"SME_ENABLE": 1, "SMCR_LEN": smcr_len_for(config.max_svl), "ZA_CONTEXT": 0}
    assert await host.write("CONTROL", pack_register("CONTROL", IRQ_ENABLE=1,
                                                     **control)) == AxiResp.OKAY
    await ClockCycles(dut.clk, 2)
    assert dut.irq.value == 0
    assert await host.issue(undefined) == AxiResp.OKAY
    while not (await host.fields("RESULT"))["VALID"]:
        pass
    await ClockCycles(dut.clk, 2)
    assert dut.irq.value == 1
    assert await host.write("CONTROL", pack_register("CONTROL", IRQ_ENABLE=0,
                                                     **control)) == AxiResp.OKAY
    await ClockCycles(dut.clk, 2)
    assert dut.irq.value == 0
    assert await host.write("CONTROL", pack_register("CONTROL", IRQ_ENABLE=1,
                                                     **control)) == AxiResp.OKAY
    await ClockCycles(dut.clk, 2)
    assert dut.irq.value == 1
    assert await host.write("RESULT_POP", 1) == AxiResp.OKAY
    await ClockCycles(dut.clk, 2)
    assert dut.irq.value == 0

    # performance counters: _LO then _HI is one 64-bit value
    async def counter(name: str) -> int:
        low = await host.read(f"PERF_{name.upper()}_LO")
        return await host.read(f"PERF_{name.upper()}_HI") << 32 | low

    assert await counter("traps") == accepted + 1
    assert await counter("retired") == 0
    first = await counter("cycles")
    await ClockCycles(dut.clk, 100)
    second = await counter("cycles")
    assert second - first >= 100 and second >> 32 == 0, (first, second)


class CorruptingTarget(BusTarget):
    """Flips every bit of the byte at ``address`` in the first read beat that holds it."""

    def __init__(self, bus, address: int):
        super().__init__(bus)
        self.address = address
        self.corrupted = False

    async def read(self, address: int, length: int) -> bytes:
        data = bytearray(await super().read(address, length))
        if not self.corrupted and address <= self.address < address + length:
            data[self.address - address] ^= 0xFF
            self.corrupted = True
        return bytes(data)


class DroppingTarget(BusTarget):
    """Answers OKAY to the first write run that holds ``address`` without performing it."""

    def __init__(self, bus, address: int):
        super().__init__(bus)
        self.address = address
        self.dropped = False

    async def write(self, address: int, data: bytes) -> None:
        if not self.dropped and address <= self.address < address + len(data):
            self.dropped = True
            return
        await super().write(address, data)


async def _expect_mismatch(dut, name: str, target, words: list[int], state) -> str:
    """Run ``words`` in lock step from ``state`` on a SocBench with memory ``target``, checking
    memory and registers after each; the scoreboard's complaint."""
    config = _config()
    bench = SocBench(dut, config, seed=_rng(name).getrandbits(32), target=target)
    await bench.reset(smcr_len=smcr_len_for(state.svl), fpcr=state.fpcr,
                      memory=state.memory.copy())
    await bench.load_state(state)
    scoreboard = Scoreboard(config, state, bench.bus, name=name)
    host = ScalarFile(state.x, state.sp, state.fpsr, state.nzcv)
    try:
        for word in words:
            scoreboard.predict(word)
            result = await bench.execute(word, host.sources(word))
            scoreboard.check(result)
            host.retire(word, result)
            scoreboard.compare_memory()
            scoreboard.compare_state(await bench.snapshot())
    except Mismatch as mismatch:
        return str(mismatch)
    raise AssertionError(f"{name}: the scoreboard did not notice")


def _checker_state(name: str, svl: int):
    """A random SVCR=3 state with x0 and x1 at beat-aligned data, Z3 all 0xA5 and zeros at
    x1 (so that a lost store shows at x1 itself)."""
    state = initial_state(_rng(name), svl, 3)
    state.x[0:2] = (DATA_BASE + 0x100, DATA_BASE + 0x200)
    state.z[3] = 0xA5
    state.memory.write(DATA_BASE + 0x200, bytes(svl // 8))
    return state


@cocotb.test()
async def checker_catches_corrupt_read(dut) -> None:
    """A byte flipped in a read beat shows as the Z register byte it was loaded into."""
    config = _config()
    state = _checker_state("corrupt_read", config.max_svl)
    ldr = FORMS_BY_NAME["LDR_Z"].encode(zt=3, rn=0, imm9h=0, imm9l=0)
    targets = []

    def target(bus):
        targets.append(CorruptingTarget(bus, DATA_BASE + 0x100 + 5))
        return targets[-1]

    message = await _expect_mismatch(dut, "corrupt_read", target, [ldr], state)
    assert targets[0].corrupted
    assert "z3 byte 5 is" in message and "after 1 instructions" in message, message


@cocotb.test()
async def checker_catches_dropped_write(dut) -> None:
    """A write beat answered OKAY but not performed shows as the first memory byte it missed."""
    config = _config()
    state = _checker_state("dropped_write", config.max_svl)
    store = FORMS_BY_NAME["STR_Z"].encode(zt=3, rn=1, imm9h=0, imm9l=0)
    targets = []

    def target(bus):
        targets.append(DroppingTarget(bus, DATA_BASE + 0x200 + 5))
        return targets[-1]

    message = await _expect_mismatch(dut, "dropped_write", target, [store], state)
    assert targets[0].dropped
    assert f"memory 0x{DATA_BASE + 0x200:x} holds 0x00, model 0xa5" in message, message
