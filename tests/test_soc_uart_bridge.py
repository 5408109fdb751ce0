"""The UART to AXI4-Lite bridge (hw/soc/uart_bridge.py) in front of the SoC wrapper's control
port (hw/soc/control.py), under the Amaranth simulator: a host's bytes on the serial line
become register reads and writes, and their responses come back on it."""

from __future__ import annotations

import pytest
from amaranth import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from zatile.hw.soc.control import AxiLiteControl
from zatile.hw.soc.registers import ID_VALUE, REGISTERS_BY_NAME
from zatile.hw.soc.uart_bridge import (READ_COMMAND, UNKNOWN_COMMAND, WRITE_COMMAND,
                                       UartAxiLiteBridge)
from zatile.sw.arch.config import EngineConfig

DIVISOR = 5      # clock cycles per bit: odd, so that sampling in the middle matters


def offset(name: str) -> int:
    return REGISTERS_BY_NAME[name].offset


def read_request(address: int) -> bytes:
    return bytes([READ_COMMAND]) + address.to_bytes(2, "little")


def write_request(address: int, value: int) -> bytes:
    return bytes([WRITE_COMMAND]) + address.to_bytes(2, "little") + value.to_bytes(4, "little")


def converse(requests: list[tuple[bytes, int]]) -> list[bytes]:
    """Send each request on ``rx`` and collect the given number of answer bytes from ``tx``."""
    bridge = UartAxiLiteBridge(DIVISOR)
    control = AxiLiteControl(EngineConfig(max_svl=128, features=frozenset({"I8I32"})))
    top = Module()
    top.submodules.bridge = bridge
    top.submodules.control = control
    wiring.connect(top, bridge.axi, control.axi)
    answers = []

    async def send(ctx, byte: int):
        for level in [0] + [byte >> bit & 1 for bit in range(8)] + [1]:
            ctx.set(bridge.rx, level)
            await ctx.tick().repeat(DIVISOR)

    async def receive(ctx) -> int:
        for _ in range(40 * DIVISOR):                       # a few bytes' time at most
            if not ctx.get(bridge.tx):
                break
            await ctx.tick()
        else:
            raise AssertionError(f"no answer byte after {answers} and {request.hex()}")
        await ctx.tick().repeat(DIVISOR + DIVISOR // 2)      # to the middle of bit 0
        value = 0
        for bit in range(8):
            value |= ctx.get(bridge.tx) << bit
            await ctx.tick().repeat(DIVISOR)
        assert ctx.get(bridge.tx) == 1, "no stop bit"
        return value

    async def bench(ctx):
        ctx.set(bridge.rx, 1)
        await ctx.tick().repeat(3)
        for request, length in requests:
            for byte in request:
                await send(ctx, byte)
            answers.append(bytes([await receive(ctx) for _ in range(length)]))

    simulator = Simulator(top)
    simulator.add_clock(1e-8)
    simulator.add_testbench(bench)
    simulator.run()
    return answers


def test_register_reads_and_writes_over_the_serial_line():
    answers = converse([
        (read_request(offset("ID")), 5),
        (write_request(offset("FPCR"), 0x01C0_0000), 1),
        (read_request(offset("FPCR")), 5),
        (read_request(offset("CONFIG")), 5),
    ])
    assert answers[0] == b"\x00" + ID_VALUE.to_bytes(4, "little")
    assert answers[1] == b"\x00"
    assert answers[2] == b"\x00" + (0x01C0_0000).to_bytes(4, "little")
    config = int.from_bytes(answers[3][1:], "little")
    assert (config & 0xFFF, config >> 12 & 0xFFF) == (128, 128)


def test_errors_come_back_as_the_response_byte_and_an_unknown_command_as_0xff():
    answers = converse([
        (read_request(0x7FC), 5),                             # unmapped: SLVERR
        (write_request(offset("ID"), 1), 1),                  # read-only: SLVERR
        (bytes([0x41]), 1),                                   # no such command
        (read_request(offset("ID")), 5),                      # and in step again
    ])
    assert answers[0] == b"\x02\x00\x00\x00\x00"
    assert answers[1] == b"\x02"
    assert answers[2] == bytes([UNKNOWN_COMMAND])
    assert answers[3] == b"\x00" + ID_VALUE.to_bytes(4, "little")


@pytest.mark.parametrize("arguments, quoted", [
    ((3,), "at least 4, not 3"),
    ((16, 20), r"12 to 16 bits \(two address bytes\), not 20"),
])
def test_arguments_are_checked(arguments, quoted):
    with pytest.raises(ValueError, match=quoted):
        UartAxiLiteBridge(*arguments)
