"""The load/store unit: every memory instruction of the subset, as beats on the memory master.

Instructions (docs/isa.md, "Tile slice loads and stores", "LDR and STR of ZA", "Streaming SVE subset"):

==================  ===================================  =========================================
operation           address                              footprint (bytes ``i`` of the access)
==================  ===================================  =========================================
LD1/ST1 tile slice  ``Xn|SP + Xm·E``                     SVL_B bytes, element ``i/E`` active if
                                                         predicate bit ``(i/E)·E`` is set
LDR/STR ZA          ``Xn|SP + off·SVL_B``                SVL_B bytes, unpredicated
LDR/STR Z, P        ``Xn|SP + imm9·SVL_B`` (P: ``/8``)   SVL_B (P: SVL_B/8) bytes, unpredicated
LD1/ST1 contiguous  ``Xn|SP + Xm·M`` or                  (SVL_B/E)·M bytes: element ``e`` (M bytes
(LDNT1, STNT1,      ``Xn|SP + imm4·(SVL_B/E)·M``         of memory, an E-byte lane of Z) active if
LD1S)                                                    predicate bit ``e·E`` is set
LD1R                ``Xn|SP + imm6·M``                   M bytes, read if any E-byte element is
                                                         active
LD1RQ               ``Xn|SP + Xm·M`` or                  16 bytes, element ``e`` active if
                    ``Xn|SP + imm4·16``                  predicate bit ``e·M`` is set
LD2-4/ST2-4 chunk   ``Xn|SP + Xm·M`` or                  SVL_B bytes ``chunk``·SVL_B on, byte
                    ``Xn|SP + imm4·n·SVL_B``,            ``i`` active if ``predicate`` bit ``i`` is
                    plus ``chunk``·SVL_B                 set (:mod:`zatile.hw.structure` sets it)
==================  ===================================  =========================================

Inactive elements are neither read nor written and cannot fault; a load sets them to zero.
Contiguous loads zero-extend each M-byte element to its E-byte lane (LD1S and LD1RS
sign-extend), stores truncate. LD1R writes its element to every active lane, LD1RQ its 16 bytes
to every 16-byte segment.

Beats
-----
The access is cut into beats of ``mem_data_width/8`` bytes at aligned addresses (wrapping at
2^64), with one byte enable per byte of the footprint that is active. A beat with no enabled
byte is never requested, so an all-false predicate makes no memory access at all. An aligned
access at a bus as wide as the SVL takes one beat: one tile slice per beat.

Accesses are pipelined: a new access may start (``ready``) in the cycle the previous one
requests its last beat, so that single-beat accesses request one beat per cycle; up to
``config.mem_outstanding`` beats are in flight, answered in order, and accesses complete in order.
Loads and stores alike request every beat of their footprint, one per cycle, without waiting for
the answers. The first beat an access requests is marked ``first``. A beat answered with
``error`` makes its access fail with ``fault`` and ``fault_address`` = the first enabled byte of
the failing beat. A faulting load changes nothing (its data is discarded).

The abandon rule keeps a faulting store precise: after a beat answered with ``error``, the slave
answers every beat up to the next one marked ``first`` with ``error`` and does not perform it.
The beats of a failing store requested after its failing one are thus never written: it has
written exactly the beats before the failing one (in address order). The next access starts a
new run with its ``first`` beat (each instruction faults or completes on its own; the engine
orders accesses, docs/architecture.md, "Decoupled execution").

Handshake with the engine
-------------------------
``start`` while ``ready`` captures the access from ``access``, the operands, ``chunk``,
``predicate`` and ``store_data``. ``busy`` is high while an access is in flight. The oldest
completed access raises ``done``, which stays high, with ``fault``, ``fault_address`` and
``load_data``, until ``ack`` (the next access completes in the cycle after an ``ack`` at the
earliest; acknowledging at once keeps the pipeline full). These ports, without ``ready``, are
:func:`ControlSignature`, which the structure sequencer drives for LD2-4/ST2-4, one access at a
time (``start`` while ``busy`` and ``done`` are low, as the engine does for the other memory
instructions of its execution queue).
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.isa import Trait

from zatile.hw._common import ConfigComponent, byte_mask, max_bytes, row_layout
from zatile.hw.decoder import DecodedLayout, FieldsLayout, FlagsLayout, Op, ops_of

__all__ = ["MEMORY_OPS", "STORE_OPS", "STRUCTURE_OPS", "MAX_CHUNKS", "AccessLayout", "access_of",
           "MemRequestLayout", "MemResponseLayout", "ControlSignature", "LoadStoreUnit"]

#: Operations the unit performs: every one the table marks as a load or a store.
MEMORY_OPS = ops_of(Trait.LOAD, Trait.STORE)
#: The ones among them that write memory.
STORE_OPS = ops_of(Trait.STORE)
#: LD2-LD4 and ST2-ST4: one access per chunk of SVL_B bytes, each with byte elements
#: (:mod:`zatile.hw.structure` interleaves the registers and sets the byte predicate).
STRUCTURE_OPS = (Op.LD_STRUCTURE, Op.ST_STRUCTURE)
#: The largest ``registers`` of a structure access, the number of chunks it has.
MAX_CHUNKS = 4
#: The contiguous accesses of LD1/ST1 (LDNT1 and STNT1 are the same access with a hint; LD1S
#: sign-extends what it loads).
_CONTIGUOUS_OPS = (Op.LD1_CONTIGUOUS, Op.ST1_CONTIGUOUS, Op.LDNT1_CONTIGUOUS,
                   Op.STNT1_CONTIGUOUS, Op.LD1_SIGNED)


def _members(layout: data.StructLayout, names) -> data.StructLayout:
    return data.StructLayout({name: layout[name].shape for name in names})


#: What the unit reads of a decoded memory instruction: the members of :data:`DecodedLayout`
#: of the same names, under an eighth of its bits: few enough for the load queue to carry each
#: load as routing decoded it rather than decode its word again.
AccessLayout = data.StructLayout({
    **{name: DecodedLayout[name].shape for name in ("op", "esize_log2", "msize_log2",
                                                     "registers")},
    "flags": _members(FlagsLayout, ("predicate", "scalar_offset", "signed")),
    "fields": _members(FieldsLayout, ("off", "imm9l", "imm9h", "imm4", "imm6")),
})


def access_of(decoded) -> Value:
    """The :data:`AccessLayout` part of ``decoded``, a view of :data:`DecodedLayout`."""
    def part(view, layout):
        return Cat(part(view[name], field.shape) if isinstance(field.shape, data.StructLayout)
                   else Value.cast(view[name]) for name, field in layout)
    return part(decoded, AccessLayout)


def MemRequestLayout(width: int) -> data.StructLayout:
    """A memory beat request: aligned ``address``, ``write``, ``data``, one enable per byte,
    and ``first`` on the first beat of an access (the abandon rule, module documentation)."""
    return data.StructLayout({"address": 64, "write": 1, "data": width,
                              "byte_enable": width // 8, "first": 1})


def MemResponseLayout(width: int) -> data.StructLayout:
    """The response to one request, in request order: read ``data`` and ``error``."""
    return data.StructLayout({"data": width, "error": 1})


def ControlSignature(config: EngineConfig) -> wiring.Signature:
    """The unit's handshake and per-access ports, from the side of whoever drives them.

    ``start``, ``chunk``, ``predicate``, ``store_data`` and ``ack`` out; ``busy``, ``done``,
    ``fault``, ``fault_address`` and ``load_data`` in (module documentation, "Handshake").
    """
    maxb = max_bytes(config)
    return wiring.Signature({
        "start": Out(1),
        "chunk": Out(range(MAX_CHUNKS)),
        "predicate": Out(maxb),
        "store_data": Out(row_layout(config)),
        "ack": Out(1),
        "busy": In(1),
        "done": In(1),
        "fault": In(1),
        "fault_address": In(64),
        "load_data": In(row_layout(config)),
    })


def _lowest_set(m, bits, name: str) -> tuple[Signal, Signal]:
    """(index of the lowest set bit of ``bits``, one-hot of it); both zero when none is set."""
    width = len(bits)
    index = Signal(range(max(width, 2)), name=f"{name}_index")
    one_hot = Signal(width, name=f"{name}_one_hot")
    m.d.comb += one_hot.eq(bits & -bits)
    for position in reversed(range(width)):
        with m.If(bits[position]):
            m.d.comb += index.eq(position)
    return index, one_hot


class LoadStoreUnit(ConfigComponent):
    """Memory instructions as aligned beats (module documentation).

    Parameters
    ----------
    config : EngineConfig
        ``max_svl`` sizes the access buffers, ``mem_data_width`` the beats.

    Attributes
    ----------
    access : View(AccessLayout), in
        The memory instruction (its ``op`` is one of :data:`MEMORY_OPS`), :func:`access_of` its
        decoded form.
    base, index : Signal(64), in
        The ``Xn|SP`` and ``Xm`` operands (``index`` is unused by the other address forms).
    svl_log2 : Signal(4), in
        log2 of the effective SVL in bytes.
    svl_mask : Signal(MAXB), in
        Bit ``b`` set when byte ``b`` of a vector is inside the effective SVL.
    start : Signal(1), in
    chunk : Signal(range(4)), in
        Which SVL_B-byte chunk of an LD2-4/ST2-4 footprint to access (0 for the others).
    predicate : Signal(MAXB), in
        The governing predicate, clear beyond the effective SVL (LD2-4/ST2-4: one bit per byte
        of the chunk).
    store_data : View(row), in
        What a store writes: the tile slice, ZA row, Z or P register (P in the low bytes), or
        the chunk of an ST2-4.
    ready : Signal(1), out
        A ``start`` is taken this cycle.
    busy, done : Signal(1), out
    ack : Signal(1), in
    fault : Signal(1), out
    fault_address : Signal(64), out
    load_data : View(row), out
        What a load read, in the destination's format (contiguous elements zero-extended to
        their lanes, inactive elements zero; the bytes of an LD2-4 chunk as they are).
    mem_req : Out(stream.Signature(MemRequestLayout(mem_data_width)))
    mem_resp : In(stream.Signature(MemResponseLayout(mem_data_width)))

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    """

    def __init__(self, config: EngineConfig):
        maxb = max_bytes(config)
        width = config.mem_data_width
        super().__init__(config, {
            "access": In(AccessLayout),
            "base": In(64),
            "index": In(64),
            "svl_log2": In(4),
            "svl_mask": In(maxb),
            **ControlSignature(config).flip().members,
            "ready": Out(1),
            "mem_req": Out(stream.Signature(MemRequestLayout(width))),
            "mem_resp": In(stream.Signature(MemResponseLayout(width))),
        })

    @property
    def beat_bytes(self) -> int:
        return self._config.mem_data_width // 8

    @property
    def max_beats(self) -> int:
        """Beats an access can span: one per beat of the largest vector, plus one if unaligned."""
        return max_bytes(self._config) // self.beat_bytes + 1

    def _layouts(self) -> list[tuple[int, int]]:
        """Every (log2 memory element size M, log2 lane size E) an access can have."""
        tile = [(log2, log2) for log2 in range(5)]
        contiguous = [(msize, esize) for esize in range(4) for msize in range(esize)]
        return tile + contiguous

    def elaborate(self, platform):
        m = Module()
        maxb = max_bytes(self._config)
        beat = self.beat_bytes
        beats = self.max_beats
        image_bytes = beats * beat
        decoded, fields, op = self.access, self.access.fields, self.access.op
        svl_mask = self.svl_mask

        # ---- the access the instruction makes (combinational, captured at start)
        msize_log2 = Signal(range(5))   # memory element size
        esize_log2 = Signal(range(5))   # register lane size
        predicated = Signal()
        predicate_register = Signal()   # LDR/STR P: a footprint of SVL_B/8 bytes
        quadword = Signal()             # LD1RQ: a footprint of the first 16 bytes
        replicate = Signal()            # LD1R: element 0, broadcast to the active elements
        signed_load = Signal()          # LD1S, LD1RS: elements sign-extended to their lanes
        offset = Signal(64)
        shift = Signal(range(16))       # log2 of the "mul vl" unit of an immediate offset
        with m.Switch(op):
            with m.Case(Op.LD1_TILE, Op.ST1_TILE):
                m.d.comb += [msize_log2.eq(decoded.esize_log2), esize_log2.eq(decoded.esize_log2),
                             predicated.eq(1), offset.eq(self.index << decoded.esize_log2)]
            with m.Case(Op.LDR_ZA, Op.STR_ZA):
                m.d.comb += [shift.eq(self.svl_log2), offset.eq(fields.off << shift)]
            with m.Case(Op.LDR_REGISTER, Op.STR_REGISTER):
                imm9 = Cat(fields.imm9l, fields.imm9h).as_signed()
                m.d.comb += [predicate_register.eq(decoded.flags.predicate),
                             shift.eq(Mux(decoded.flags.predicate, self.svl_log2 - 3,
                                          self.svl_log2)),
                             offset.eq(imm9 << shift)]
            with m.Case(*_CONTIGUOUS_OPS):
                m.d.comb += [
                    msize_log2.eq(decoded.msize_log2), esize_log2.eq(decoded.esize_log2),
                    predicated.eq(1),
                    shift.eq(self.svl_log2 - decoded.esize_log2 + decoded.msize_log2),
                    offset.eq(Mux(decoded.flags.scalar_offset,
                                  self.index << decoded.msize_log2,
                                  fields.imm4 << shift)),
                ]
            with m.Case(*STRUCTURE_OPS):
                scaled = self.index << decoded.msize_log2
                # imm4·n for n = 2..4 without a multiplier
                count = decoded.registers
                structures = (Mux(count[0], fields.imm4, 0) + Mux(count[1], fields.imm4 << 1, 0)
                              + Mux(count[2], fields.imm4 << 2, 0))
                whole = structures << self.svl_log2
                m.d.comb += [predicated.eq(1),
                             offset.eq(Mux(decoded.flags.scalar_offset, scaled, whole)
                                       + (self.chunk << self.svl_log2))]
            with m.Case(Op.LD1_REPLICATE):
                # One element (M bytes, lane 0 of a layout M = M), read if any is active.
                m.d.comb += [msize_log2.eq(decoded.msize_log2), esize_log2.eq(decoded.msize_log2),
                             offset.eq(fields.imm6 << decoded.msize_log2)]
            with m.Case(Op.LD1RQ):
                m.d.comb += [msize_log2.eq(decoded.msize_log2), esize_log2.eq(decoded.msize_log2),
                             predicated.eq(1), quadword.eq(1),
                             offset.eq(Mux(decoded.flags.scalar_offset,
                                           self.index << decoded.msize_log2,
                                           fields.imm4 << 4))]
        m.d.comb += [replicate.eq(op == Op.LD1_REPLICATE),
                     signed_load.eq((op == Op.LD1_SIGNED) | (replicate & decoded.flags.signed))]
        address = Signal(64)
        m.d.comb += address.eq(self.base + offset)
        is_store = Signal()
        m.d.comb += is_store.eq(Cat(op == store for store in STORE_OPS).any())

        # Enabled footprint bytes and the bytes a store writes, per (M, E).
        enables = Signal(maxb)
        footprint = Signal(maxb * 8)
        predicate = self.predicate | ~predicated.replicate(maxb)
        store_data = self.store_data.as_value()
        with m.Switch(Cat(esize_log2, msize_log2)):
            for msize, esize in self._layouts():
                with m.Case(esize | msize << 3):
                    bits, stored = [], []
                    for i in range(maxb):
                        lane = (i >> msize) << esize       # first byte of the element's lane
                        if lane >= maxb:
                            bits.append(Const(0))
                            stored.append(Const(0, 8))
                            continue
                        bits.append(predicate[lane] & svl_mask[lane])
                        stored.append(store_data.word_select(lane + (i & ((1 << msize) - 1)), 8))
                    m.d.comb += [enables.eq(Cat(*bits)), footprint.eq(Cat(*stored))]
        # The lanes a replicating load writes (its element's lanes that are active), and
        # whether it reads memory at all.
        lanes = Signal(maxb)
        with m.Switch(decoded.esize_log2):
            for log2 in range(4):
                with m.Case(log2):
                    m.d.comb += lanes.eq(Cat(self.predicate[b & ~((1 << log2) - 1)]
                                             for b in range(maxb)) & svl_mask)
        limit = Signal(maxb)           # LDR/STR P only reach SVL_B/8 bytes, LD1RQ 16
        with m.If(predicate_register):
            m.d.comb += limit.eq(Cat(svl_mask[8 * i] if 8 * i < maxb else Const(0)
                                     for i in range(maxb)))
        with m.Elif(quadword):
            m.d.comb += limit.eq(0xFFFF)
        with m.Elif(replicate):
            m.d.comb += limit.eq(Mux(lanes.any(),
                                     (Const(1, 9) << (Const(1, 4) << msize_log2)) - 1, 0))
        with m.Else():
            m.d.comb += limit.eq((1 << maxb) - 1)

        # ---- the access being requested (q_), and the accesses in flight
        r_loaded = Signal(image_bytes * 8)     # the beats of the oldest access, as they arrive
        misalign = address[:(beat - 1).bit_length()] if beat > 1 else Const(0, 1)
        enable_image = Signal(image_bytes)
        data_image = Signal(image_bytes * 8)
        m.d.comb += [enable_image.eq((enables & limit) << misalign),
                     data_image.eq(footprint << (misalign * 8))]
        nonempty = Cat(enable_image.word_select(k, beat).any() for k in range(beats))

        access_layout = data.StructLayout({
            "write": 1, "layout": 6, "replicate": 1, "quadword": 1, "signed": 1, "lanes": maxb,
            "misalign": range(beat), "beat_base": 64, "enables": image_bytes, "empty": 1})
        beat_layout = data.StructLayout({"beat": range(beats), "last": 1})
        outstanding = self._config.mem_outstanding
        m.submodules.accesses = accesses = SyncFIFO(width=access_layout.size, depth=outstanding)
        m.submodules.beats = beat_tags = SyncFIFO(width=beat_layout.size, depth=outstanding)
        head = data.View(access_layout, accesses.r_data)
        tag = data.View(beat_layout, beat_tags.r_data)

        q_valid = Signal()
        q_write = Signal()
        q_first = Signal()              # no beat of the access has been requested yet
        q_beat_base = Signal(64)
        q_enables = Signal(image_bytes)
        q_data = Signal(image_bytes * 8)
        q_to_request = Signal(beats)
        request_beat, request_one_hot = _lowest_set(m, q_to_request, "request")
        final_beat = (q_to_request & ~request_one_hot) == 0
        width = beat * 8
        m.d.comb += [
            self.mem_req.valid.eq(q_valid & q_to_request.any() & beat_tags.w_rdy),
            self.mem_req.payload.address.eq(q_beat_base + request_beat * beat),
            self.mem_req.payload.write.eq(q_write),
            self.mem_req.payload.data.eq(q_data.word_select(request_beat, width)),
            self.mem_req.payload.byte_enable.eq(q_enables.word_select(request_beat, beat)),
            self.mem_req.payload.first.eq(q_first),
        ]
        requested = self.mem_req.valid & self.mem_req.ready
        m.d.comb += [beat_tags.w_en.eq(requested),
                     beat_tags.w_data.eq(Cat(request_beat, final_beat))]

        # ---- responses, in order, for the oldest access in flight (``head``)
        c_valid = Signal()
        completion_free = ~c_valid | self.ack
        h_fault = Signal()
        h_fault_address = Signal(64)
        fault_lane, _ = _lowest_set(m, head.enables.word_select(tag.beat, beat), "fault_lane")
        m.d.comb += self.mem_resp.ready.eq(accesses.r_rdy & ~head.empty & completion_free)
        responded = self.mem_resp.valid & self.mem_resp.ready
        failed = responded & self.mem_resp.payload.error
        failing_address = head.beat_base + tag.beat * beat + fault_lane
        m.d.comb += beat_tags.r_en.eq(responded)
        with m.If(responded):
            m.d.sync += r_loaded.word_select(tag.beat, width).eq(self.mem_resp.payload.data)
        with m.If(failed & ~h_fault):
            m.d.sync += [h_fault.eq(1), h_fault_address.eq(failing_address)]
        completes = accesses.r_rdy & Mux(head.empty, completion_free, responded & tag.last)

        # ---- a new access
        m.d.comb += self.ready.eq((~q_valid | (requested & final_beat)) & accesses.w_rdy)
        accepted = self.start & self.ready
        m.d.comb += [
            accesses.w_en.eq(accepted),
            accesses.w_data.eq(Cat(
                is_store, Cat(Mux(replicate, decoded.esize_log2, esize_log2), msize_log2),
                replicate, quadword, signed_load, lanes, misalign,
                address & ~Const(beat - 1, 64), enable_image, ~nonempty.any())),
        ]
        with m.If(accepted):
            m.d.sync += [q_valid.eq(nonempty.any()), q_write.eq(is_store), q_first.eq(1),
                         q_beat_base.eq(address & ~Const(beat - 1, 64)),
                         q_enables.eq(enable_image), q_data.eq(data_image),
                         q_to_request.eq(nonempty)]
        with m.Elif(requested):
            m.d.sync += [q_to_request.eq(q_to_request & ~request_one_hot),
                         q_valid.eq(~final_beat), q_first.eq(0)]

        # ---- the completed access, held until ``ack``
        c_layout = Signal(6)
        c_replicate = Signal()
        c_quadword = Signal()
        c_signed = Signal()
        c_lanes = Signal(maxb)
        c_misalign = Signal(range(beat))
        c_enables = Signal(image_bytes)
        c_fault = Signal()
        c_fault_address = Signal(64)
        m.d.comb += accesses.r_en.eq(completes)
        with m.If(completes):
            m.d.sync += [
                c_valid.eq(1), c_layout.eq(head.layout), c_replicate.eq(head.replicate),
                c_quadword.eq(head.quadword), c_signed.eq(head.signed), c_lanes.eq(head.lanes),
                c_misalign.eq(head.misalign), c_enables.eq(head.enables),
                c_fault.eq(h_fault | failed),
                c_fault_address.eq(Mux(h_fault, h_fault_address, failing_address)),
                h_fault.eq(0),
            ]
        with m.Elif(self.ack):
            m.d.sync += c_valid.eq(0)
        m.d.comb += [self.busy.eq(q_valid | accesses.r_rdy), self.done.eq(c_valid),
                     self.fault.eq(c_fault), self.fault_address.eq(c_fault_address)]

        # ---- load data in the destination's format
        buffer = Signal(maxb * 8)
        active = Signal(maxb)
        m.d.comb += [buffer.eq(r_loaded >> (c_misalign * 8)), active.eq(c_enables >> c_misalign)]
        loaded = Signal(maxb * 8)
        m.d.comb += loaded.eq(buffer & byte_mask(active))
        formatted = Signal(maxb * 8)
        with m.Switch(c_layout):
            for msize, esize in self._layouts():
                with m.Case(esize | msize << 3):
                    m.d.comb += formatted.eq(self._formatted(loaded, msize, esize, c_signed))
        replicated = Signal(maxb * 8)
        with m.Switch(c_layout):     # LD1R: element 0 of layout M = M, widened to E (below)
            for msize in range(4):
                for esize in range(msize, 4):
                    with m.Case(esize | msize << 3):
                        element = self._formatted(loaded, msize, esize, c_signed)[:8 << esize]
                        m.d.comb += replicated.eq(element.replicate(maxb >> esize))
        with m.If(c_replicate):
            m.d.comb += self.load_data.eq(replicated & byte_mask(c_lanes))
        with m.Elif(c_quadword):
            m.d.comb += self.load_data.eq(loaded[:128].replicate(maxb // 16))
        with m.Else():
            m.d.comb += self.load_data.eq(formatted)
        return m

    @staticmethod
    def _formatted(loaded, msize: int, esize: int, signed) -> Value:
        """Memory elements of ``2^msize`` bytes in ``loaded`` widened to lanes of ``2^esize``
        bytes, sign-extended when ``signed``."""
        maxb = len(loaded) // 8
        lanes = []
        for j in range(maxb):
            within = j & ((1 << esize) - 1)
            base = (j >> esize) << msize
            source = base + within
            if base + (1 << msize) > maxb:
                lanes.append(Const(0, 8))
            elif within < (1 << msize):
                lanes.append(loaded.word_select(source, 8))
            else:
                top = loaded.word_select(base + (1 << msize) - 1, 8)[7]
                lanes.append((top & signed).replicate(8))
        return Cat(*lanes)
