"""The engine's memory port as an AXI4 manager.

The engine requests aligned beats in order and takes their answers in request order
(:mod:`zatile.hw.lsu`, "Beats"); :class:`AxiMemoryMaster` carries them over AXI4 with one ID:

Reads
    Consecutive read beats (of one access or of several: a row after a row) at consecutive
    addresses within a 4 KiB page become one INCR burst of up to :data:`MAX_BURST` beats. A
    burst stays open while the engine offers the next beat in the very next cycle, so a burst
    costs no cycle of waiting when the engine streams; it is sent as soon as a cycle brings no
    beat to add. Each R beat answers its request, ``RRESP`` SLVERR or DECERR its error.
Writes
    One single-beat transaction per write beat, ``WSTRB`` = the beat's byte enables; stores of
    single-beat accesses are pipelined (posted) up to the engine's outstanding limit. The beats
    of a multi-beat store after its first wait until every earlier beat is answered: a write
    burst has one response for all its beats, so a failing beat could not keep the later ones
    from being written, and the abandon rule (below) must.
Ordering
    AXI orders neither channel against the other, so reads and writes never overlap: a read
    waits until every write is answered and a write until every read is, which keeps every load
    after an earlier store to the same address (and the reverse).
Errors and the abandon rule
    A beat answered with an error is answered to the engine with ``error``; so is every later
    beat up to the next one marked ``first``, and a write among them is not sent at all — the
    abandon rule of :mod:`zatile.hw.lsu`, kept here because an AXI subordinate knows nothing of
    accesses.

AxCACHE is 0b0011 (normal non-cacheable bufferable), AxPROT 0b010 (unprivileged, non-secure,
data), AxLOCK 0.
"""

from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from zatile.hw._common import ConfigComponent
from zatile.hw.lsu import MemRequestLayout, MemResponseLayout
from zatile.hw.soc.axi import Burst, axi4_signature

__all__ = ["MAX_BURST", "ADDRESS_WIDTH", "AxiMemoryMaster"]

#: The longest read burst, in beats (AXI3's limit, which every interconnect accepts).
MAX_BURST = 16
#: AXI address bits: the engine's addresses are 64-bit virtual addresses, passed through.
ADDRESS_WIDTH = 64
_PAGE_BITS = 12
_CACHE = 0b0011
_PROT = 0b010


class _Answer(enum.Enum, shape=2):
    """Where the answer to an accepted beat comes from."""

    READ = 0        # an R beat
    WRITE = 1       # a B response
    ABANDONED = 2   # nothing: a write beat dropped by the abandon rule answers error


_PendingLayout = data.StructLayout({"answer": _Answer, "first": 1})


class AxiMemoryMaster(ConfigComponent):
    """The engine's ``mem_req``/``mem_resp`` streams on an AXI4 manager port (module notes).

    Parameters
    ----------
    config : EngineConfig
        ``mem_data_width`` is the AXI data width; ``mem_outstanding`` the beats in flight.

    Attributes
    ----------
    mem_req : In(stream.Signature(MemRequestLayout(mem_data_width)))
        From the engine's ``mem_req``.
    mem_resp : Out(stream.Signature(MemResponseLayout(mem_data_width)))
        To the engine's ``mem_resp``.
    axi : Out(axi4_signature(64, mem_data_width))
    idle : Out(1)
        No beat accepted and not yet answered.
    """

    def __init__(self, config):
        width = config.mem_data_width
        super().__init__(config, wiring.Signature({
            "mem_req": In(stream.Signature(MemRequestLayout(width))),
            "mem_resp": Out(stream.Signature(MemResponseLayout(width))),
            "axi": Out(axi4_signature(ADDRESS_WIDTH, width)),
            "idle": Out(1),
        }))

    def elaborate(self, platform):
        m = Module()
        config, axi = self.config, self.axi
        beat_bytes = config.mem_data_width // 8
        size = beat_bytes.bit_length() - 1
        longest = min(MAX_BURST, (1 << _PAGE_BITS) // beat_bytes)
        depth = config.mem_outstanding
        request = self.mem_req.payload

        m.submodules.pending = pending = SyncFIFO(width=_PendingLayout.size, depth=depth)
        pushed = data.View(_PendingLayout, pending.w_data)
        oldest = data.View(_PendingLayout, pending.r_data)
        reads = Signal(range(depth + 1))        # read beats accepted, not yet answered
        writes = Signal(range(depth + 1))       # write beats likewise
        abandoning = Signal()                   # the last answer was an error

        # ---- read bursts: open while the next beat may still join, then offered on AR
        burst_open = Signal()
        burst_closed = Signal()                 # ARVALID was high: the burst may not grow
        burst_address = Signal(ADDRESS_WIDTH)
        burst_next = Signal(ADDRESS_WIDTH)
        burst_length = Signal(8)                # AxLEN: beats - 1
        is_read = self.mem_req.valid & ~request.write
        joins = Signal()
        m.d.comb += joins.eq(is_read & burst_open & ~burst_closed & pending.w_rdy
                             & (request.address == burst_next)
                             & (request.address[_PAGE_BITS:] == burst_address[_PAGE_BITS:])
                             & (burst_length < longest - 1))
        ar_fire = axi.arvalid & axi.arready
        m.d.comb += [
            axi.arvalid.eq(burst_open & (burst_closed | ~joins)),
            axi.araddr.eq(burst_address), axi.arlen.eq(burst_length), axi.arsize.eq(size),
            axi.arburst.eq(Burst.INCR), axi.arcache.eq(_CACHE), axi.arprot.eq(_PROT),
        ]
        with m.If(axi.arvalid & ~axi.arready):
            m.d.sync += burst_closed.eq(1)
        with m.If(ar_fire):
            m.d.sync += [burst_open.eq(0), burst_closed.eq(0)]
        accept_read = Signal()
        m.d.comb += accept_read.eq(is_read & pending.w_rdy & (writes == 0)
                                   & (joins | ~burst_open | ar_fire))
        with m.If(accept_read):
            with m.If(joins):
                m.d.sync += [burst_length.eq(burst_length + 1),
                             burst_next.eq(burst_next + beat_bytes)]
            with m.Else():
                m.d.sync += [burst_open.eq(1), burst_closed.eq(0),
                             burst_address.eq(request.address), burst_length.eq(0),
                             burst_next.eq(request.address + beat_bytes)]

        # ---- writes: AW and W of one beat, each held until taken
        aw_held = Signal()
        w_held = Signal()
        is_write = self.mem_req.valid & request.write
        accept_write = Signal()
        abandon_write = Signal()
        m.d.comb += [
            accept_write.eq(is_write & pending.w_rdy & (reads == 0) & ~aw_held & ~w_held
                            & (request.first | (pending.level == 0))),
            abandon_write.eq(~request.first & abandoning),
            axi.awvalid.eq(aw_held), axi.awlen.eq(0), axi.awsize.eq(size),
            axi.awburst.eq(Burst.INCR), axi.awcache.eq(_CACHE), axi.awprot.eq(_PROT),
            axi.wvalid.eq(w_held), axi.wlast.eq(1),
        ]
        with m.If(axi.awvalid & axi.awready):
            m.d.sync += aw_held.eq(0)
        with m.If(axi.wvalid & axi.wready):
            m.d.sync += w_held.eq(0)
        with m.If(accept_write & ~abandon_write):
            m.d.sync += [aw_held.eq(1), w_held.eq(1), axi.awaddr.eq(request.address),
                         axi.wdata.eq(request.data), axi.wstrb.eq(request.byte_enable)]

        m.d.comb += [
            self.mem_req.ready.eq(accept_read | accept_write),
            pending.w_en.eq(accept_read | accept_write),
            pushed.first.eq(request.first),
        ]
        with m.If(accept_read):
            m.d.comb += pushed.answer.eq(_Answer.READ)
        with m.Elif(abandon_write):
            m.d.comb += pushed.answer.eq(_Answer.ABANDONED)
        with m.Else():
            m.d.comb += pushed.answer.eq(_Answer.WRITE)

        # ---- answers, in request order
        answered = Signal()
        error = Signal()
        m.d.comb += self.mem_resp.payload.data.eq(axi.rdata)
        with m.If(pending.r_rdy):
            with m.Switch(oldest.answer):
                with m.Case(_Answer.READ):
                    m.d.comb += [answered.eq(axi.rvalid), error.eq(axi.rresp.as_value()[1]),
                                 axi.rready.eq(self.mem_resp.ready)]
                with m.Case(_Answer.WRITE):
                    m.d.comb += [answered.eq(axi.bvalid), error.eq(axi.bresp.as_value()[1]),
                                 axi.bready.eq(self.mem_resp.ready)]
                with m.Default():
                    m.d.comb += [answered.eq(1), error.eq(1)]
        delivered = self.mem_resp.valid & self.mem_resp.ready
        m.d.comb += [
            self.mem_resp.valid.eq(answered),
            self.mem_resp.payload.error.eq(error | (abandoning & ~oldest.first)),
            pending.r_en.eq(delivered),
        ]
        with m.If(delivered):
            m.d.sync += abandoning.eq(self.mem_resp.payload.error)
        read_answered = delivered & (oldest.answer == _Answer.READ)
        write_answered = delivered & (oldest.answer == _Answer.WRITE)
        m.d.sync += [reads.eq(reads + accept_read - read_answered),
                     writes.eq(writes + (accept_write & ~abandon_write) - write_answered)]
        m.d.comb += self.idle.eq((pending.level == 0) & ~burst_open & ~aw_held & ~w_held)
        return m
