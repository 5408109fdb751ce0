"""A UART to AXI4-Lite bridge: a host on a serial line (a board's USB serial port) reads and
writes the SoC wrapper's control registers (:mod:`zatile.hw.soc.registers`).

Serial format: 8 data bits, no parity, one stop bit, least significant bit first, at
``clock_hz / divisor`` baud. The protocol, one request at a time, little-endian fields:

=========================================  ==============================================
host sends                                 bridge answers
=========================================  ==============================================
``0x57`` ('W'), address (2 bytes),         the write response: one byte, ``BRESP`` (0 OKAY,
data (4 bytes)                             2 SLVERR, 3 DECERR)
``0x52`` ('R'), address (2 bytes)          ``RRESP`` (one byte), then the data (4 bytes)
any other first byte                       ``0xFF``; the next byte starts a new request
=========================================  ==============================================

A write has all four byte strobes set. The address is the AXI-Lite byte address, of which the
port's ``address_width`` low bits are used.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from zatile.hw._common import CheckedComponent
from zatile.hw.soc.axi import axi4_lite_signature

__all__ = ["WRITE_COMMAND", "READ_COMMAND", "UNKNOWN_COMMAND", "UartReceiver",
           "UartTransmitter", "UartAxiLiteBridge"]

WRITE_COMMAND = 0x57
READ_COMMAND = 0x52
#: What the bridge answers to a first byte that is no command.
UNKNOWN_COMMAND = 0xFF


def _check_divisor(divisor: int) -> None:
    if not isinstance(divisor, int) or divisor < 4:
        raise ValueError(f"clock cycles per bit must be an integer of at least 4, "
                         f"not {divisor!r}")


class UartReceiver(CheckedComponent):
    """Bytes from a serial line (8N1), sampled in the middle of each bit.

    Parameters
    ----------
    divisor : int
        Clock cycles per bit (at least 4).

    Attributes
    ----------
    rx : In(1), idle high
    data : Out(stream.Signature(8))
        Each received byte; a byte arriving while the previous one is still offered is lost.
    """

    check_arguments = staticmethod(_check_divisor)

    def __init__(self, divisor: int):
        self._divisor = divisor
        super().__init__({"rx": In(1, init=1), "data": Out(stream.Signature(8))})

    def elaborate(self, platform):
        m = Module()
        divisor = self._divisor
        synchronized = Signal(2, init=0b11)     # two flip-flops against metastability
        m.d.sync += synchronized.eq(Cat(self.rx, synchronized[0]))
        line = synchronized[1]
        count = Signal(range(divisor * 3 // 2 + 1))
        bits = Signal(range(9))
        shift = Signal(8)
        with m.If(self.data.ready):
            m.d.sync += self.data.valid.eq(0)
        with m.FSM():
            with m.State("idle"):
                with m.If(~line):
                    # to the middle of the first data bit: one and a half bits
                    m.d.sync += [count.eq(divisor * 3 // 2 - 1), bits.eq(0)]
                    m.next = "data"
            with m.State("data"):
                m.d.sync += count.eq(count - 1)
                with m.If(count == 0):
                    m.d.sync += [shift.eq(Cat(shift[1:], line)), bits.eq(bits + 1),
                                 count.eq(divisor - 1)]
                    with m.If(bits == 7):
                        m.next = "stop"
            with m.State("stop"):
                m.d.sync += count.eq(count - 1)
                with m.If(count == 0):
                    with m.If(line):                # a framing error drops the byte
                        m.d.sync += [self.data.payload.eq(shift), self.data.valid.eq(1)]
                    m.next = "idle"
        return m


class UartTransmitter(CheckedComponent):
    """Bytes onto a serial line (8N1).

    Parameters
    ----------
    divisor : int
        Clock cycles per bit (at least 4).

    Attributes
    ----------
    data : In(stream.Signature(8))
    tx : Out(1), idle high
    """

    check_arguments = staticmethod(_check_divisor)

    def __init__(self, divisor: int):
        self._divisor = divisor
        super().__init__({"data": In(stream.Signature(8)), "tx": Out(1, init=1)})

    def elaborate(self, platform):
        m = Module()
        count = Signal(range(self._divisor))
        frame = Signal(10, init=0x3FF)          # start bit, 8 data bits, stop bit
        bits_left = Signal(range(11))
        m.d.comb += [self.tx.eq(frame[0]), self.data.ready.eq(bits_left == 0)]
        with m.If(self.data.valid & self.data.ready):
            m.d.sync += [frame.eq(Cat(0, self.data.payload, 1)), bits_left.eq(10),
                         count.eq(self._divisor - 1)]
        with m.Elif(bits_left != 0):
            m.d.sync += count.eq(count - 1)
            with m.If(count == 0):
                m.d.sync += [frame.eq(Cat(frame[1:], 1)), bits_left.eq(bits_left - 1),
                             count.eq(self._divisor - 1)]
        return m


class UartAxiLiteBridge(CheckedComponent):
    """Requests from a serial line as AXI4-Lite transactions (module notes).

    Parameters
    ----------
    divisor : int
        Clock cycles per bit: the clock frequency over the baud rate (at least 4).
    address_width : int
        AXI4-Lite address bits (12 for the SoC wrapper's control port).

    Attributes
    ----------
    rx : In(1)
    tx : Out(1)
    axi : Out(axi4_lite_signature(address_width))
    """

    @staticmethod
    def check_arguments(divisor: int, address_width: int = 12) -> None:
        _check_divisor(divisor)
        if not isinstance(address_width, int) or not 12 <= address_width <= 16:
            raise ValueError(f"address width must be 12 to 16 bits (two address bytes), "
                             f"not {address_width!r}")

    def __init__(self, divisor: int, address_width: int = 12):
        self._divisor = divisor
        super().__init__({"rx": In(1, init=1), "tx": Out(1),
                          "axi": Out(axi4_lite_signature(address_width))})

    def elaborate(self, platform):
        m = Module()
        axi = self.axi
        m.submodules.receiver = receiver = UartReceiver(self._divisor)
        m.submodules.transmitter = transmitter = UartTransmitter(self._divisor)
        m.d.comb += [receiver.rx.eq(self.rx), self.tx.eq(transmitter.tx)]

        command = Signal(8)
        address = Signal(16)
        value = Signal(32)
        received = Signal(range(7))            # bytes after the command byte
        answer = Signal(40)                     # response byte, then the data, low byte first
        answer_bytes = Signal(range(6))
        byte = receiver.data.payload
        m.d.comb += [axi.awaddr.eq(address), axi.araddr.eq(address), axi.wdata.eq(value),
                     axi.wstrb.eq(0b1111), transmitter.data.payload.eq(answer[:8])]
        with m.FSM():
            with m.State("command"):
                m.d.comb += receiver.data.ready.eq(1)
                with m.If(receiver.data.valid):
                    m.d.sync += [command.eq(byte), received.eq(0)]
                    with m.If((byte == WRITE_COMMAND) | (byte == READ_COMMAND)):
                        m.next = "fields"
                    with m.Else():
                        m.d.sync += [answer.eq(UNKNOWN_COMMAND), answer_bytes.eq(1)]
                        m.next = "answer"
            with m.State("fields"):
                m.d.comb += receiver.data.ready.eq(1)
                with m.If(receiver.data.valid):
                    m.d.sync += received.eq(received + 1)
                    with m.If(received < 2):
                        m.d.sync += address.eq(Cat(address[8:], byte))
                    with m.Else():
                        m.d.sync += value.eq(Cat(value[8:], byte))
                    with m.If((command == READ_COMMAND) & (received == 1)):
                        m.d.sync += axi.arvalid.eq(1)
                        m.next = "read"
                    with m.If((command == WRITE_COMMAND) & (received == 5)):
                        m.d.sync += [axi.awvalid.eq(1), axi.wvalid.eq(1)]
                        m.next = "write"
            with m.State("write"):
                with m.If(axi.awready):
                    m.d.sync += axi.awvalid.eq(0)
                with m.If(axi.wready):
                    m.d.sync += axi.wvalid.eq(0)
                m.d.comb += axi.bready.eq(~axi.awvalid & ~axi.wvalid)
                with m.If(axi.bvalid & axi.bready):
                    m.d.sync += [answer.eq(axi.bresp.as_value()), answer_bytes.eq(1)]
                    m.next = "answer"
            with m.State("read"):
                with m.If(axi.arready):
                    m.d.sync += axi.arvalid.eq(0)
                m.d.comb += axi.rready.eq(~axi.arvalid)
                with m.If(axi.rvalid & axi.rready):
                    m.d.sync += [answer.eq(Cat(axi.rresp.as_value(), Const(0, 6), axi.rdata)),
                                 answer_bytes.eq(5)]
                    m.next = "answer"
            with m.State("answer"):
                m.d.comb += transmitter.data.valid.eq(1)
                with m.If(transmitter.data.ready):
                    m.d.sync += [answer.eq(answer[8:]), answer_bytes.eq(answer_bytes - 1)]
                    with m.If(answer_bytes == 1):
                        m.next = "command"
        return m
