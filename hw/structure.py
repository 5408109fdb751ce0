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
ACCESS      chunk ``j`` = 0..n-1: start the unit, wait for ``done``, ``ack``; a store sends
            it from its buffer, a load puts it into row ``j`` of its buffer
WRITE       a load writes Zt+k, k = 0..n-1, from its buffer through ``z_write`` (bytes inside
            the SVL)
DONE        ``done`` until ``ack``
==========  ==================================================================================

Buffer
------
Four rows of MAXB bytes, row ``s`` written at step ``s`` from the step's input (a store's
register, a load's chunk) and the step's output (a store's chunk, a load's register) read from
all rows, with only rotations and one multiplexer per column between them. With W = SVL_B/M
elements a vector, each byte of the footprint is in row ``s`` (its register for a store, its
chunk for a load) and in the column

- of a load: (``p`` + M·``a_k``) mod SVL_B, byte ``p`` of register ``k``; ``a_k`` = ``k``·n⁻¹
  mod W for n = 3, ``k``·W/n for n = 2, 4 if W >= n, else ``k`` mod W;
- of a store: (``i`` + M·``b_j``) mod SVL_B, byte ``i`` of chunk ``j``; ``b_j`` = 0 for
  n = 3, ``j`` for n = 2, 4 if W >= n, else ``j``·W/n.

So the bytes a step writes, and those it reads, are in distinct columns (for n = 3, element
``e``·n + ``k`` of the footprint is in element column (``e``·n + ``k``)·n⁻¹ mod W of a load,
(``e``·n + ``k``) mod W of a store), and the columns of a step are those of step 0 rotated
(:func:`_layout` checks both for each case). One path per cycle does either direction: per
column, a multiplexer over the bytes of the step's input it can take (``spread``, by SVL, op,
n and M) or over the rows (by SVL, op, n, M and step), then a rotation of log2(MAXB) stages of
two-way multiplexers by the step's amount; its result is the row written and the output
(``lsu.store_data`` and ``z_write.data``, each meaningful only in the phase that reads it). The
predicate bits of a chunk, those of its structures, are a multiplexer per byte over the
predicate.

Measured with ``synth_ecp5 -nowidelut``, the sequencer of the FPGA configuration (SVL 128)
takes 2,821 LUT4 and 582 FF this way, against 6,011 LUT4 and 582 FF with a multiplexer per
output byte over the buffer for each of the store's chunk and the load's register (the
footprint in the buffer as it is in memory, a store's registers as they are).

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

from amaranth import Cat, Const, Module, Mux, Signal, Value
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


#: In a table of :func:`_gathered`: a part whose value does not matter (beyond the SVL).
_ANY = -2


def _gathered(m: Module, value: Value, width: int, case: Value, sources: dict,
              name: str) -> Value:
    """Parts of ``width`` bits of ``value`` chosen by ``case``: ``sources`` maps each value of
    ``case`` that occurs to a list, for each result part, of the part of ``value`` it takes
    (an index in units of ``width`` bits, None for zeros or :data:`_ANY` for any).

    Each result part is a multiplexer over only the parts it can take, its select a table of
    ``case``."""
    parts = []
    for position in range(len(next(iter(sources.values())))):
        choices = sorted({table[position] for table in sources.values()} - {_ANY},
                         key=lambda part: -1 if part is None else part) or [None]
        select = Signal(range(len(choices)), name=f"{name}_{position}_select")
        with m.Switch(case):
            for key, table in sources.items():
                if table[position] != _ANY:
                    with m.Case(key):
                        m.d.comb += select.eq(choices.index(table[position]))
        parts.append(Cat(Const(0, width) if part is None else value.word_select(part, width)
                         for part in choices).word_select(select, width))
    result = Signal(len(parts) * width, name=name)
    m.d.comb += result.eq(Cat(parts))
    return result


def _rotated(m: Module, value: Value, amount: Value, svl_log2: Value, svl_sizes: list[int],
             maxb: int, name: str) -> Value:
    """The first SVL_B bytes of ``value`` (MAXB bytes) rotated up by ``amount`` bytes: byte
    ``y`` of the result is byte (``y`` - ``amount``) mod SVL_B of ``value``, for SVL_B in
    ``svl_sizes`` (the bytes beyond it any). One stage of two-way multiplexers per bit of
    ``amount``."""
    for bit in range(len(amount)):
        sources = {}
        for svl_bytes in svl_sizes:
            code = (svl_bytes.bit_length() - 1) << 1
            sources[code] = list(range(maxb))
            if 1 << bit < svl_bytes:
                sources[code | 1] = [(byte - (1 << bit)) % svl_bytes if byte < svl_bytes
                                     else _ANY for byte in range(maxb)]
        value = _gathered(m, value, 8, Cat(amount[bit], svl_log2), sources,
                          f"{name}_by_{1 << bit}")
    return value


def _register_offset(count: int, elements: int, register: int) -> int:
    """Where a load puts register ``register`` (of ``count``, ``elements`` elements a vector)
    in the columns of its buffer: an offset in elements (module documentation, "Buffer")."""
    if count % 2:
        return register * pow(count, -1, elements) % elements
    return register * elements // count if elements >= count else register % elements


def _chunk_offset(count: int, elements: int, chunk: int) -> int:
    """Where a store puts chunk ``chunk`` (of ``count``, ``elements`` elements a vector) in the
    columns of its buffer: an offset in elements (module documentation, "Buffer")."""
    if count % 2:
        return 0
    return chunk if elements >= count else chunk * elements // count


def _layout(svl_bytes: int, count: int, msize: int, store: bool) -> tuple:
    """The buffer of an LDn/STn of ``count`` registers, elements of ``2^msize`` bytes, at SVL_B
    = ``svl_bytes`` (module documentation, "Buffer").

    Returns
    -------
    spread : list[int]
        For each column, the byte of the input of step 0 (chunk or register) written there.
    write_rotations, read_rotations : list[int]
        For each step, how far its input is rotated from ``spread`` into the columns of its
        row, and how far the columns are rotated back into its output (register or chunk).
    read_rows : list[list[int]]
        For each step and column, the row of the byte it outputs there.

    Raises
    ------
    AssertionError
        If the layout is not a rotation of one spread per step (it is, for every SVL_B a
        power of two of 16 or more).
    """
    size, elements = 1 << msize, svl_bytes >> msize
    write_columns = [[None] * svl_bytes for _ in range(count)]     # [step][input byte]
    read_columns = [[None] * svl_bytes for _ in range(count)]      # [step][output byte]
    read_rows = [[_ANY] * svl_bytes for _ in range(count)]         # [step][column]
    for footprint_byte in range(count * svl_bytes):
        chunk, chunk_byte = divmod(footprint_byte, svl_bytes)
        element, element_byte = divmod(footprint_byte, size)
        structure, register = divmod(element, count)
        register_byte = structure * size + element_byte
        if store:
            column = (chunk_byte + size * _chunk_offset(count, elements, chunk)) % svl_bytes
            write, read = (register, register_byte), (chunk, chunk_byte)
        else:
            column = (register_byte + size * _register_offset(count, elements, register)) \
                % svl_bytes
            write, read = (chunk, chunk_byte), (register, register_byte)
        write_columns[write[0]][write[1]] = column
        read_columns[read[0]][read[1]] = column
        assert read_rows[read[0]][column] == _ANY
        read_rows[read[0]][column] = write[0]

    def rotations(columns, base):
        offsets = [{(column - origin) % svl_bytes for column, origin in zip(row, base)}
                   for row in columns]
        assert all(len(offset) == 1 for offset in offsets)
        return [offset.pop() for offset in offsets]

    spread = [None] * svl_bytes
    for byte, column in enumerate(write_columns[0]):
        spread[column] = byte
    assert None not in spread and all(_ANY not in rows for rows in read_rows)
    return (spread, rotations(write_columns, write_columns[0]),
            [(-rotation) % svl_bytes for rotation in rotations(read_columns,
                                                               range(svl_bytes))],
            read_rows)


def _shapes():
    """Every (``registers``, log2 M, is a store) of an LD2-4/ST2-4."""
    return [(count, msize, store) for count in _REGISTER_COUNTS for msize in _ELEMENT_SIZES
            for store in (False, True)]


def _chunk_lanes(count: int, msize: int, chunk: int, svl_bytes: int) -> list[int]:
    """The predicate bit of each byte of chunk ``chunk`` (``count`` registers, elements of
    ``2^msize`` bytes, SVL_B = ``svl_bytes``): that of its structure's element."""
    return [(chunk * svl_bytes + byte) // (count << msize) << msize
            for byte in range(svl_bytes)]


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
        # Row s: the input of step s (a load's chunk, a store's register), spread and rotated
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

        # ---- the buffer (module documentation, "Buffer"): one path, per (SVL, op, n, M),
        # step and direction, its columns rotated: writing row ``step`` from the step's input,
        # reading the step's output from the rows
        svl_sizes = [svl // 8 for svl in self._config.supported_svls]
        reading = (phase == _Phase.WRITE) | (phase == _Phase.ACCESS) & store
        case = Cat(step, decoded.msize_log2, decoded.registers, store, self.svl_log2, reading)
        columns, rotation = {}, Signal(range(maxb))
        with m.Switch(case):
            for svl_bytes in svl_sizes:
                padding = [_ANY] * (maxb - svl_bytes)
                for count, msize, is_store in _shapes():
                    spread, write_rotations, read_rotations, rows = _layout(
                        svl_bytes, count, msize, is_store)
                    for index in range(count):
                        key = Const.cast(Cat(
                            Const(index, len(step)), Const(msize, len(decoded.msize_log2)),
                            Const(count, len(decoded.registers)), Const(is_store),
                            Const(svl_bytes.bit_length() - 1, len(self.svl_log2)))).value
                        read_key = key | 1 << len(case) - 1
                        # inputs: the step's input, then the rows of the buffer
                        columns[key] = spread + padding
                        columns[read_key] = [(1 + row) * maxb + column
                                             for column, row in enumerate(rows[index])] \
                            + padding
                        with m.Case(key):
                            m.d.comb += rotation.eq(write_rotations[index])
                        with m.Case(read_key):
                            m.d.comb += rotation.eq(read_rotations[index])
        step_input = Signal(maxb * 8)
        m.d.comb += step_input.eq(Mux(store, self.z_read.data.as_value(),
                                      lsu.load_data.as_value()))
        inputs = Cat(step_input, buffer)
        rotated = _rotated(m, _gathered(m, inputs, 8, case, columns, "column"), rotation,
                           self.svl_log2, svl_sizes, maxb, "rotated")
        with m.If((phase == _Phase.READ) | (phase == _Phase.ACCESS) & lsu.done & ~store):
            m.d.sync += buffer.word_select(step, maxb * 8).eq(rotated)
        m.d.comb += [lsu.store_data.eq(rotated), self.z_write.data.eq(rotated)]

        # ---- the step's predicate bits, per (SVL, n, M, step)
        m.d.comb += lsu.chunk.eq(step)
        lanes = {}
        for svl_bytes in svl_sizes:
            for count in _REGISTER_COUNTS:
                for msize in _ELEMENT_SIZES:
                    for index in range(count):
                        key = Const.cast(Cat(
                            Const(index, len(step)), Const(msize, len(decoded.msize_log2)),
                            Const(count, len(decoded.registers)),
                            Const(svl_bytes.bit_length() - 1, len(self.svl_log2)))).value
                        lanes[key] = (_chunk_lanes(count, msize, index, svl_bytes)
                                      + [None] * (maxb - svl_bytes))
        m.d.comb += lsu.predicate.eq(_gathered(
            m, self.predicate, 1, Cat(step, decoded.msize_log2, decoded.registers,
                                      self.svl_log2), lanes, "lane"))

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
                m.d.sync += step.eq(step + 1)
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
