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


def _steps():
    """Every (``registers``, log2 M, step) of an LD2-4/ST2-4: step ``j`` < ``registers`` is
    the chunk of an access or the register of a read or write."""
    return [(count, msize, step) for count in _REGISTER_COUNTS for msize in _ELEMENT_SIZES
            for step in range(count)]


def _gathered(m: Module, value: Value, width: int, case: Value, sources: dict,
              name: str) -> Value:
    """Parts of ``width`` bits of ``value`` chosen by ``case``: ``sources`` maps each value of
    ``case`` that occurs to a list, for each result part, of the part of ``value`` it takes
    (an index in units of ``width`` bits, or None for zeros).

    Each result part is a multiplexer over only the parts it can take, its select a table of
    ``case``. Measured with ``synth_ecp5 -nowidelut``: the sequencer of the FPGA configuration
    (SVL 128) takes 6,011 LUT4 this way, 6,983 as one whole permutation per (n, M); the
    default one (SVL 512, three SVLs, so more bytes each byte can take) 32,742 against
    30,909."""
    parts = []
    for position in range(len(next(iter(sources.values())))):
        choices = sorted({table[position] for table in sources.values()},
                         key=lambda part: -1 if part is None else part)
        select = Signal(range(len(choices)), name=f"{name}_{position}_select")
        with m.Switch(case):
            for key, table in sources.items():
                with m.Case(key):
                    m.d.comb += select.eq(choices.index(table[position]))
        parts.append(Cat(Const(0, width) if part is None else value.word_select(part, width)
                         for part in choices).word_select(select, width))
    return Cat(parts)


def _store_chunk_sources(count: int, msize: int, chunk: int, svl_bytes: int,
                        maxb: int) -> tuple[list[int], list[int]]:
    """Where chunk ``chunk`` of a store's footprint comes from: ``count`` registers, elements
    of ``2^msize`` bytes, SVL_B = ``svl_bytes``. Returns, for each byte of the chunk, its
    buffer byte (row ``k`` = register ``k``: ``k``·``maxb`` + its byte in the register) and
    its structure's predicate bit."""
    sources, lanes = [], []
    for byte in range(svl_bytes):
        element, within = divmod(chunk * svl_bytes + byte, count << msize)
        register, element_byte = divmod(within, 1 << msize)
        sources.append(register * maxb + (element << msize) + element_byte)
        lanes.append(element << msize)
    return sources, lanes


def _load_register_sources(count: int, msize: int, register: int, maxb: int) -> list[int]:
    """The footprint byte of each byte of register ``register`` (of ``count``, elements of
    ``2^msize`` bytes) of a load."""
    sources = []
    for byte in range(maxb):
        element, element_byte = divmod(byte, 1 << msize)
        sources.append(((element * count + register) << msize) + element_byte)
    return sources


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

        # ---- the step's part of the footprint, per (SVL, n, M, step): a store's chunk
        # interleaved from the registers with its predicate bits, a load's register
        # de-interleaved from the footprint
        m.d.comb += lsu.chunk.eq(step)
        shape = Cat(step, decoded.msize_log2, decoded.registers)     # (n, M, step)
        chunk_data, chunk_lanes, register_data = {}, {}, {}
        for count, msize, index in _steps():
            key = index | msize << len(step) | count << len(step) + len(decoded.msize_log2)
            register_data[key] = _load_register_sources(count, msize, index, maxb)
            for svl in self._config.supported_svls:
                svl_key = key | (svl // 8).bit_length() - 1 << len(shape)
                padding = [None] * (maxb - svl // 8)
                sources, lanes = _store_chunk_sources(count, msize, index, svl // 8, maxb)
                chunk_data[svl_key], chunk_lanes[svl_key] = sources + padding, lanes + padding
        m.d.comb += [
            lsu.store_data.eq(_gathered(m, buffer, 8, Cat(shape, self.svl_log2), chunk_data,
                                        "store_byte")),
            lsu.predicate.eq(_gathered(m, self.predicate, 1, Cat(shape, self.svl_log2),
                                       chunk_lanes, "store_lane")),
            self.z_write.data.eq(_gathered(m, buffer, 8, shape, register_data, "load_byte")),
        ]
        with m.Switch(self.svl_log2):
            for svl in self._config.supported_svls:
                svl_bytes = svl // 8
                with m.Case(svl_bytes.bit_length() - 1):
                    with m.If((phase == _Phase.ACCESS) & lsu.done & ~store):
                        m.d.sync += buffer.word_select(step, svl_bytes * 8).eq(
                            lsu.load_data.as_value()[:svl_bytes * 8])

        # ---- the phases
        m.d.comb += [self.z_read.addr.eq(register), self.z_write.addr.eq(register),
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
