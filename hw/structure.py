"""The structure sequencer: LD2/LD3/LD4 and ST2/ST3/ST4 as chunks of the load/store unit.

An LDn/STn of ``n`` registers and elements of ``M`` bytes moves a footprint of ``n·SVL_B``
bytes at its address (docs/isa.md, "Streaming SVE loads and stores"): structure ``e`` is the
``n`` elements ``e`` of Zt, Zt+1, ... (register numbers modulo 32), one after the other, so
footprint byte ``f = (e·n + k)·M + b`` is byte ``b`` of element ``e`` of register ``k``. It is
active when the governing predicate's element ``e`` is, i.e. predicate bit
``(f // (n·M))·M``; an inactive structure is neither read nor written, and a load sets it to
zero.

The sequencer cuts the footprint into ``n`` chunks of SVL_B bytes, each one access of the
load/store unit with byte elements under a byte predicate (:data:`zatile.hw.lsu.STRUCTURE_OPS`,
the unit adds ``chunk``·SVL_B to the address), in address order:

==========  ==================================================================================
phase       what happens (one step per cycle unless it waits for the unit)
==========  ==================================================================================
READ        a store reads Zt+k, k = 0..n-1, through ``z_read`` into row ``k`` of its buffer
ACCESS      chunk ``j`` = 0..n-1: start the unit, wait for ``done``, ``ack``; a store takes
            its data from the registers interleaved into footprint order, a load puts the
            chunk's bytes at ``j``·SVL_B of its buffer
WRITE       a load writes Zt+k, k = 0..n-1, de-interleaved from the footprint, through
            ``z_write`` (bytes inside the SVL)
DONE        ``done`` until ``ack``
==========  ==================================================================================

A chunk that faults ends the sequence: ``fault`` with the unit's ``fault_address`` (the first
enabled byte of the failing beat). A faulting load writes no register; a faulting store has
written the chunks before the failing one and the failing chunk's beats before its failing beat
(memory in address order, as a store of the load/store unit does).

Handshake as the load/store unit's: ``start`` (while ``busy`` and ``done`` are low), then
``done`` with ``fault`` and ``fault_address`` until ``ack``. ``decoded``, ``svl_log2``,
``svl_mask`` and ``predicate`` are read throughout and must hold from ``start`` to ``ack`` (the
engine keeps the instruction in dispatch).
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Signal, Value
from amaranth.lib import enum
from amaranth.lib.wiring import In, Out

from zatile.sw.arch.config import EngineConfig

from zatile.hw._common import ConfigComponent, max_bytes, row_layout
from zatile.hw.decoder import DecodedLayout, Op
from zatile.hw.lsu import MAX_CHUNKS, ControlSignature
from zatile.hw.regfile import ReadPortSignature, WritePortSignature

__all__ = ["StructureAccess"]

#: The ``registers`` of LD2-LD4/ST2-ST4.
_REGISTER_COUNTS = range(2, MAX_CHUNKS + 1)
#: log2 of their element sizes M (B, H, W, D).
_ELEMENT_SIZES = range(4)


class _Phase(enum.Enum, shape=3):
    IDLE = 0
    READ = 1
    ACCESS = 2
    WRITE = 3
    DONE = 4


def _interleaved(registers: Value, count: int, msize: int, maxb: int) -> Value:
    """The footprint of ``count`` register images (row ``k`` of ``registers`` = register
    ``k``) with elements of ``2^msize`` bytes; zero beyond ``count``·MAXB bytes."""
    footprint = []
    for f in range(MAX_CHUNKS * maxb):
        element, within = divmod(f, count << msize)
        register, byte = divmod(within, 1 << msize)
        source = (element << msize) + byte
        footprint.append(registers.word_select(register * maxb + source, 8) if source < maxb
                         else Const(0, 8))
    return Cat(*footprint)


def _deinterleaved(footprint: Value, count: int, msize: int, maxb: int) -> Value:
    """The register images (row ``k`` = register ``k``, zero for ``k`` ≥ ``count``) of a
    footprint of ``count`` registers with elements of ``2^msize`` bytes."""
    rows = []
    for register in range(MAX_CHUNKS):
        for source in range(maxb):
            if register >= count:
                rows.append(Const(0, 8))
                continue
            element, byte = divmod(source, 1 << msize)
            rows.append(footprint.word_select(((element * count + register) << msize) + byte, 8))
    return Cat(*rows)


def _active_footprint(predicate: Value, count: int, msize: int, maxb: int) -> Value:
    """One bit per footprint byte: its structure's element of the predicate is active."""
    bits = []
    for f in range(MAX_CHUNKS * maxb):
        lane = (f // (count << msize)) << msize
        bits.append(predicate[lane] if lane < maxb else Const(0))
    return Cat(*bits)


class StructureAccess(ConfigComponent):
    """LD2-LD4 and ST2-ST4 as register reads, chunk accesses and register writes (module
    documentation).

    Parameters
    ----------
    config : EngineConfig
        ``max_svl`` sizes the buffer (four vectors), ``supported_svls`` the chunk positions.

    Attributes
    ----------
    start : Signal(1), in
    decoded : View(DecodedLayout), in
        The instruction (its ``op`` is LD_STRUCTURE or ST_STRUCTURE).
    svl_log2 : Signal(4), in
        log2 of the effective SVL in bytes.
    svl_mask : Signal(MAXB), in
        Bit ``b`` set when byte ``b`` of a vector is inside the effective SVL.
    predicate : Signal(MAXB), in
        The governing predicate, clear beyond the effective SVL.
    busy, done : Signal(1), out
    ack : Signal(1), in
    fault : Signal(1), out
    fault_address : Signal(64), out
    z_read : Out(ReadPortSignature(5, row))
        Reads the registers a store writes to memory.
    z_write : Out(WritePortSignature(5, row, MAXB))
        Writes the registers of a load.
    lsu : Out(ControlSignature(config))
        Drives the load/store unit for the chunks (:func:`zatile.hw.lsu.ControlSignature`).

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    """

    def __init__(self, config: EngineConfig):
        maxb = max_bytes(config)
        row = row_layout(config)
        super().__init__(config, {
            "start": In(1),
            "decoded": In(DecodedLayout),
            "svl_log2": In(4),
            "svl_mask": In(maxb),
            "predicate": In(maxb),
            "busy": Out(1),
            "done": Out(1),
            "ack": In(1),
            "fault": Out(1),
            "fault_address": Out(64),
            "z_read": Out(ReadPortSignature(5, row)),
            "z_write": Out(WritePortSignature(5, row, maxb)),
            "lsu": Out(ControlSignature(config)),
        })

    def elaborate(self, platform):
        m = Module()
        maxb = max_bytes(self._config)
        decoded, lsu = self.decoded, self.lsu
        store = decoded.op == Op.ST_STRUCTURE

        phase = Signal(_Phase)
        step = Signal(range(MAX_CHUNKS))     # the register or chunk of the phase
        last = step == decoded.registers - 1
        # Stores: row k = Zt+k. Loads: the footprint, chunk j at j·SVL_B.
        buffer = Signal(MAX_CHUNKS * maxb * 8)
        fault = Signal()
        fault_address = Signal(64)
        register = Signal(5)
        m.d.comb += [
            register.eq(decoded.fields.zt + step),
            self.busy.eq((phase != _Phase.IDLE) & (phase != _Phase.DONE)),
            self.done.eq(phase == _Phase.DONE),
            self.fault.eq(fault),
            self.fault_address.eq(fault_address),
        ]

        # ---- the footprint view of the buffer and of the predicate, per (n, M)
        footprint = Signal(MAX_CHUNKS * maxb * 8)      # a store's data in memory order
        registers = Signal(MAX_CHUNKS * maxb * 8)      # a load's registers, row k = Zt+k
        active = Signal(MAX_CHUNKS * maxb)
        with m.Switch(Cat(decoded.msize_log2, decoded.registers)):
            for count in _REGISTER_COUNTS:
                for msize in _ELEMENT_SIZES:
                    with m.Case(msize | count << 2):
                        m.d.comb += [
                            footprint.eq(_interleaved(buffer, count, msize, maxb)),
                            registers.eq(_deinterleaved(buffer, count, msize, maxb)),
                            active.eq(_active_footprint(self.predicate, count, msize, maxb)),
                        ]

        # ---- the chunk ``step`` of the footprint, at the effective SVL
        m.d.comb += lsu.chunk.eq(step)
        with m.Switch(self.svl_log2):
            for svl in self._config.supported_svls:
                svl_bytes = svl // 8
                with m.Case(svl_bytes.bit_length() - 1):
                    m.d.comb += [
                        lsu.store_data.eq(footprint.word_select(step, svl_bytes * 8)),
                        lsu.predicate.eq(active.word_select(step, svl_bytes)),
                    ]
                    with m.If((phase == _Phase.ACCESS) & lsu.done & ~store):
                        m.d.sync += buffer.word_select(step, svl_bytes * 8).eq(
                            lsu.load_data.as_value()[:svl_bytes * 8])

        # ---- the phases
        m.d.comb += [self.z_read.addr.eq(register), self.z_write.addr.eq(register),
                     self.z_write.data.eq(registers.word_select(step, maxb * 8)),
                     self.z_write.lanes.eq(self.svl_mask)]
        with m.Switch(phase):
            with m.Case(_Phase.IDLE):
                with m.If(self.start):
                    m.d.sync += [step.eq(0), fault.eq(0)]
                    with m.If(store):
                        m.d.sync += phase.eq(_Phase.READ)
                    with m.Else():
                        m.d.sync += phase.eq(_Phase.ACCESS)
            with m.Case(_Phase.READ):
                m.d.sync += [buffer.word_select(step, maxb * 8).eq(self.z_read.data),
                             step.eq(step + 1)]
                with m.If(last):
                    m.d.sync += [phase.eq(_Phase.ACCESS), step.eq(0)]
            with m.Case(_Phase.ACCESS):
                m.d.comb += [lsu.start.eq(~lsu.busy & ~lsu.done), lsu.ack.eq(lsu.done)]
                with m.If(lsu.done):
                    m.d.sync += step.eq(step + 1)
                    with m.If(lsu.fault):
                        m.d.sync += [fault.eq(1), fault_address.eq(lsu.fault_address),
                                     phase.eq(_Phase.DONE)]
                    with m.Elif(last):
                        m.d.sync += step.eq(0)
                        with m.If(store):
                            m.d.sync += phase.eq(_Phase.DONE)
                        with m.Else():
                            m.d.sync += phase.eq(_Phase.WRITE)
            with m.Case(_Phase.WRITE):
                m.d.comb += self.z_write.en.eq(1)
                m.d.sync += step.eq(step + 1)
                with m.If(last):
                    m.d.sync += phase.eq(_Phase.DONE)
            with m.Case(_Phase.DONE):
                with m.If(self.ack):
                    m.d.sync += phase.eq(_Phase.IDLE)
        return m
