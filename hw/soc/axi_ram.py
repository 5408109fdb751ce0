"""On-chip memory as an AXI4 subordinate: what the SoC wrapper's memory manager reads and writes
on a board with no other memory (block RAM on an FPGA).

One read burst and one write burst at a time, each one beat per cycle. INCR bursts of any
length; a beat outside the memory (``base`` to ``base + size``) or of another burst type is
answered SLVERR, reads it with zero data, writes it without writing (a write burst's B
response is SLVERR if any of its beats was). Strobes select the bytes written.
"""

from __future__ import annotations

from amaranth import Module, Mux, Signal
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In

from zatile.hw._common import CheckedComponent
from zatile.hw.soc.axi import Burst, Response, axi4_signature

__all__ = ["AxiRam"]


class AxiRam(CheckedComponent):
    """``size`` bytes at ``base`` on an AXI4 subordinate port (module notes).

    Parameters
    ----------
    data_width : int
        AXI data bits (a power of two, at least 8).
    size : int
        Bytes: a power of two, a multiple of the beat.
    base : int
        Address of the first byte: a multiple of ``size``.
    address_width : int
        AXI address bits (64 for the SoC wrapper's manager).

    Attributes
    ----------
    axi : In(axi4_signature(address_width, data_width))
    """

    @staticmethod
    def check_arguments(data_width: int, size: int, base: int = 0,
                        address_width: int = 64) -> None:
        axi4_signature(address_width, data_width)           # checks the widths
        beat = data_width // 8
        if not isinstance(size, int) or size < beat or size & (size - 1):
            raise ValueError(f"size must be a power of two of at least one {beat}-byte beat, "
                             f"not {size!r}")
        if not isinstance(base, int) or base % size or not 0 <= base < 1 << address_width:
            raise ValueError(f"base must be a multiple of the size 0x{size:x} inside the "
                             f"address space, not {base!r}")

    def __init__(self, data_width: int, size: int, base: int = 0, address_width: int = 64):
        self._data_width = data_width
        self._size = size
        self._base = base
        super().__init__({"axi": In(axi4_signature(address_width, data_width))})

    def elaborate(self, platform):
        m = Module()
        axi = self.axi
        beat = self._data_width // 8
        words = self._size // beat
        m.submodules.storage = storage = Memory(shape=self._data_width, depth=words, init=[])
        reader = storage.read_port()
        writer = storage.write_port(granularity=8)

        def word_of(address):
            """(word index, inside the memory) of a beat address."""
            offset = address - self._base
            return offset[(beat.bit_length() - 1):], (address >= self._base) & (
                offset < self._size)

        # ---- reads: the burst's next beat is read while the previous one is offered
        read_address = Signal.like(axi.araddr)
        read_left = Signal(9)                   # beats still to read
        read_incr = Signal()
        reading_good = Signal()                 # the beat offered is inside and INCR
        advance = ~axi.rvalid | axi.rready
        word, inside = word_of(read_address)
        m.d.comb += [axi.arready.eq((read_left == 0) & advance), reader.addr.eq(word),
                     reader.en.eq(advance)]
        with m.If(axi.arvalid & axi.arready):
            m.d.sync += [read_address.eq(axi.araddr), read_left.eq(axi.arlen + 1),
                         read_incr.eq(axi.arburst == Burst.INCR)]
        with m.If(advance):
            m.d.sync += axi.rvalid.eq(read_left != 0)
            with m.If(read_left != 0):
                good = inside & read_incr
                m.d.sync += [read_left.eq(read_left - 1), read_address.eq(read_address + beat),
                             axi.rlast.eq(read_left == 1),
                             axi.rresp.eq(Response.OKAY), reading_good.eq(good)]
                with m.If(~good):
                    m.d.sync += axi.rresp.eq(Response.SLVERR)
        m.d.comb += axi.rdata.eq(Mux(reading_good, reader.data, 0))

        # ---- writes: the address, then one beat per cycle, then the response
        write_address = Signal.like(axi.awaddr)
        writing = Signal()
        write_incr = Signal()
        write_failed = Signal()
        word, inside = word_of(write_address)
        m.d.comb += [axi.awready.eq(~writing & ~axi.bvalid), axi.wready.eq(writing),
                     writer.addr.eq(word)]
        with m.If(axi.awvalid & axi.awready):
            m.d.sync += [write_address.eq(axi.awaddr), writing.eq(1), write_failed.eq(0),
                         write_incr.eq(axi.awburst == Burst.INCR)]
        with m.If(axi.wvalid & axi.wready):
            good = inside & write_incr
            m.d.comb += [writer.data.eq(axi.wdata), writer.en.eq(Mux(good, axi.wstrb, 0))]
            m.d.sync += write_address.eq(write_address + beat)
            with m.If(~good):
                m.d.sync += write_failed.eq(1)
            with m.If(axi.wlast):
                m.d.sync += [writing.eq(0), axi.bvalid.eq(1),
                             axi.bresp.eq(Mux(write_failed | ~good, Response.SLVERR,
                                              Response.OKAY))]
        with m.If(axi.bvalid & axi.bready):
            m.d.sync += axi.bvalid.eq(0)
        return m
