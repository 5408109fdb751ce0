"""ZA storage: MAXB rows of MAXB bytes, with tile-slice and whole-tile access at every size.

The outer-product arrays read and write the rows of a pass of a tile per cycle
(``config.array_rows`` rows, a whole .S tile by default), slices are read and written in any
direction, and ZA 0→1 and ZERO clear any set of rows in one cycle.

Mapping (docs/isa.md, "Tile mapping"): for element size E bytes, horizontal slice ``i`` of
tile ``k`` is the row ``k + i*E``; element ``i`` of vertical slice ``j`` of tile ``k`` is bytes
[j*E, j*E+E) of row ``k + i*E``. The storage is SVL-agnostic: callers reduce slice indices
modulo the effective dimension and mask element enables to the effective SVL (the tile rows and
columns at a smaller SVL are a prefix of those at MAXB).

Two implementations, chosen by ``array_rows``:

* With one row per pass (the FPGA configurations), ZA is held in MAXB byte-wide **banks** of
  block RAM, read at the falling edge of the clock (``hw/_common.py``, ``falling_edge_reads``:
  combinational reads to the rest of the engine, from addresses that come from registers). Byte
  ``c`` of row ``r`` lives in bank ``(c + r) mod MAXB`` at address ``r`` (a diagonal skew), so
  every access touches each bank once: a row (a horizontal slice, a tile row) is one address in
  every bank, and a vertical slice of tile ``k``, column ``j`` and size E finds its byte ``p``
  in bank ``(p + k + j*E) mod MAXB``, at the row ``k + (p & -E)``. Both directions are therefore
  a rotation of the slice's bytes by ``k + index*E`` and an address per bank. As in the
  register file (``hw/regfile.py``), there is one copy of the banks per write port (the tile
  ports and the slice write), read through a copy per read port, and two flip-flops per byte (a
  live-value table: which copy holds the byte's latest value, and whether it was written since
  it was last zeroed, which makes zeroing one cycle). Measured with ``synth_ecp5`` at SVL 128
  with two tile ports when this was chosen: flip-flop rows 32,710 LUT4 and 2,048 flip-flops;
  banks in LUT RAM 13,692 LUT4, 384 TRELLIS_DPR16X4 (16×4-bit LUT RAMs) and 768 flip-flops.
  Without the debug backdoor's read port (the engine reads rows as byte slices through the
  slice port, ``hw/engine.py``), 8,045 LUT4 and 288 TRELLIS_DPR16X4 in LUT RAM (about 2,200 of
  the SoC's LUT places), 8,154 LUT4 and 144 DP16KD in block RAM (``synth_ecp5 -nowidelut``).
  A bank fills a sixteenth of a DP16KD at SVL 128: block RAM is what the LFE5U-85F has spare,
  not LUTs.
* With more rows per pass, a pass needs several rows of every bank at once, so ZA is held in
  flip-flop rows.

Contexts: with ``config.za_contexts`` > 1 the storage holds that many independent ZA arrays; the
``context`` input selects the one every port (and ``zero_all``) acts on. ``clear`` zeroes all of
them (a change of the effective SVL).
"""

from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In

from zatile.sw.arch.config import EngineConfig

from zatile.hw._common import (ConfigComponent, block_ram, check_config, falling_edge_reads,
                               max_bytes, row_layout)
from zatile.hw.barrel import barrel_shift

__all__ = ["ELEMENT_SIZES", "SliceLayout", "SliceReadSignature", "SliceWriteSignature",
           "PassShape", "TileReadSignature", "TileWriteSignature", "tile_passes",
           "tile_row_groups", "ZaStorage"]

#: log2 of every element size (B, H, S, D, Q).
ELEMENT_SIZES = range(5)


def SliceLayout(config: EngineConfig) -> data.StructLayout:
    """Which slice: tile number, slice index, element size and direction."""
    return data.StructLayout({"tile": 4, "index": range(max_bytes(config)),
                              "esize_log2": range(5), "vertical": 1})


def SliceReadSignature(config: EngineConfig) -> wiring.Signature:
    """Slice read, from the reader's side: ``data`` follows ``slice`` combinationally, or (in
    the banked storage) at the next falling edge."""
    return wiring.Signature({"slice": wiring.Out(SliceLayout(config)),
                             "data": wiring.In(row_layout(config))})


def SliceWriteSignature(config: EngineConfig) -> wiring.Signature:
    """Slice write at the clock edge; ``elements`` bit ``i`` enables element ``i`` of the slice."""
    return wiring.Signature({"en": wiring.Out(1), "slice": wiring.Out(SliceLayout(config)),
                             "data": wiring.Out(row_layout(config)),
                             "elements": wiring.Out(max_bytes(config))})


def tile_passes(config: EngineConfig) -> int:
    """Passes of an outer product into a .S tile: its rows (MAXB/4) over ``array_rows``."""
    return max_bytes(config) // 4 // config.array_rows


def PassShape(config: EngineConfig) -> range:
    """The shape of a pass number (at least one bit: a zero-width register is written as
    [-1:0], which lint rejects)."""
    return range(max(tile_passes(config), 2))


def _pass_rows(config: EngineConfig) -> data.ArrayLayout:
    return data.ArrayLayout(row_layout(config), config.array_rows)


def TileReadSignature(config: EngineConfig) -> wiring.Signature:
    """Read of the rows of one pass of a .S (``double`` = 0) or .D (``double`` = 1) tile:
    ``config.array_rows`` rows (all of a .S tile's by default), at the falling edge in the
    banked storage (as the slice read).

    ``rows[s]`` is tile row ``i = pass_ * array_rows + s`` (ZA row ``tile + i*E``); a .D tile has
    MAXB/8 rows, and ``rows[s]`` beyond them reads as zero.
    """
    return wiring.Signature({"double": wiring.Out(1), "tile": wiring.Out(3),
                             "pass_": wiring.Out(PassShape(config)),
                             "rows": wiring.In(_pass_rows(config))})


def TileWriteSignature(config: EngineConfig) -> wiring.Signature:
    """Write of the rows of one pass of a tile (as :func:`TileReadSignature` numbers them) at
    the clock edge, with one enable per 32-bit lane of each row (clear beyond a .D tile)."""
    lanes = max_bytes(config) // 4
    return wiring.Signature({"en": wiring.Out(1), "double": wiring.Out(1),
                             "tile": wiring.Out(3), "pass_": wiring.Out(PassShape(config)),
                             "rows": wiring.Out(_pass_rows(config)),
                             "lanes": wiring.Out(data.ArrayLayout(lanes, config.array_rows))})


def tile_row_groups(double, tile) -> Value:
    """The ZA rows of a .S or .D tile as a mask over (row mod 8).

    A .S tile ``k`` holds the rows congruent to ``k`` mod 4 (groups ``k`` and ``k + 4``); a .D
    tile ``k`` the rows congruent to ``k`` mod 8. Hazard logic keys on these groups.
    """
    tile = Value.cast(tile)
    return Mux(double, Const(1, 8) << tile[:3], Const(0b0001_0001, 8) << tile[:2])


class ZaStorage(ConfigComponent):
    """The ZA array with slice, tile and zeroing ports.

    Parameters
    ----------
    config : EngineConfig
        ``max_svl`` sizes the array (MAXB × MAXB bytes); ``za_contexts`` is the number of arrays.
    tile_ports : int
        Number of whole-tile read/write port pairs (one per outer-product array).

    Attributes
    ----------
    slice_read : In(SliceReadSignature)
        Horizontal or vertical slice of any element size (read at the falling edge by the
        banked storage: module documentation).
    slice_write : In(SliceWriteSignature)
        Horizontal or vertical slice write with element-granular enables.
    tile_read : In(TileReadSignature) array of ``tile_ports``
    tile_write : In(TileWriteSignature) array of ``tile_ports``
        .S/.D tile access for the outer-product arrays, a pass of rows at a time. Writes through
        different ports in one cycle must target different rows (the engine's hazard logic
        guarantees it).
    zero_mask : Signal(8), in
        Zero every row ``r`` whose bit ``r % 8`` is set (ZERO: one bit per ZAk.D tile).
    zero_all : Signal(1), in
        Zero every row of the selected context (PSTATE.ZA 0→1).
    clear : Signal(1), in
        Zero every row of every context.
    context : Signal(range(za_contexts)), in
        Only when ``config.za_contexts`` > 1: the ZA array the ports act on.

    Zeroing has priority over the tile writes, which have priority over the slice write.

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    ValueError
        If ``tile_ports`` is not a positive integer.
    """

    @staticmethod
    def check_arguments(config: EngineConfig, tile_ports: int = 1) -> None:
        check_config(config)
        if not isinstance(tile_ports, int) or tile_ports < 1:
            raise ValueError(f"tile_ports must be a positive integer, not {tile_ports!r}")

    def __init__(self, config: EngineConfig, tile_ports: int = 1):
        self._tile_ports = tile_ports
        members = {
            "slice_read": In(SliceReadSignature(config)),
            "slice_write": In(SliceWriteSignature(config)),
            "tile_read": In(TileReadSignature(config)).array(tile_ports),
            "tile_write": In(TileWriteSignature(config)).array(tile_ports),
            "zero_mask": In(8),
            "zero_all": In(1),
            "clear": In(1),
        }
        if config.za_contexts > 1:
            members["context"] = In(range(config.za_contexts))
        super().__init__(config, members)

    @property
    def tile_ports(self) -> int:
        return self._tile_ports

    def elaborate(self, platform):
        m = Module()
        if self._config.array_rows == 1:
            self._banks(m)
        else:
            self._flip_flop_rows(m)
        return m

    def _flip_flop_rows(self, m: Module) -> None:
        """ZA in flip-flop rows, any number of rows per pass."""
        config = self._config
        maxb = max_bytes(config)
        row_bits = maxb * 8
        contexts = config.za_contexts
        # Row registers; their next values are decided per byte (below), from a row-level and a
        # column-level condition, so the write logic (and a simulator's code) stays narrow.
        banks = [[Signal(row_bits, name=f"ctx{b}_row{r}" if contexts > 1 else f"row{r}")
                  for r in range(maxb)] for b in range(contexts)]
        context = self.context if contexts > 1 else Const(0, 1)
        if contexts > 1:
            rows = []
            for r in range(maxb):
                selected = Signal(row_bits, name=f"row{r}")
                m.d.comb += selected.eq(Array(bank[r] for bank in banks)[context])
                rows.append(selected)
        else:
            rows = banks[0]
        row_array = Array(rows)

        # ---- slice read
        read = self.slice_read.slice
        horizontal_row = Signal(range(maxb))
        with m.Switch(read.esize_log2):
            for log2 in ELEMENT_SIZES:
                with m.Case(log2):
                    index_bits = (maxb >> log2).bit_length() - 1
                    m.d.comb += horizontal_row.eq(
                        Cat(read.tile[:log2], read.index[:index_bits]))
        horizontal_data = Signal(row_bits)
        m.d.comb += horizontal_data.eq(row_array[horizontal_row])
        vertical_data = Signal(row_bits)
        with m.Switch(read.esize_log2):
            for log2 in ELEMENT_SIZES:
                esize, count = 1 << log2, maxb >> log2
                index_bits = count.bit_length() - 1
                elements = []
                for element in range(count):
                    # Column `index` of each candidate row, then the row of tile `tile`.
                    candidates = Array(
                        rows[element * esize + t].word_select(read.index[:index_bits], 8 * esize)
                        for t in range(esize))
                    elements.append(candidates[read.tile[:log2]] if log2 else candidates[0])
                with m.Case(log2):
                    m.d.comb += vertical_data.eq(Cat(*elements))
        m.d.comb += self.slice_read.data.eq(Mux(read.vertical, vertical_data, horizontal_data))

        # ---- slice write: column-level conditions (one bit per byte of a row)
        write = self.slice_write
        wslice = write.slice
        write_bytes = [Value.cast(write.data).word_select(c, 8) for c in range(maxb)]
        horizontal_target = Signal(range(maxb))
        horizontal_bytes = _slice_bytes(m, write, maxb)   # bytes of a horizontal slice written
        column_bytes = Signal(maxb)         # bytes of each row in the vertical slice's column
        with m.Switch(wslice.esize_log2):
            for log2 in ELEMENT_SIZES:
                count = maxb >> log2
                index_bits = count.bit_length() - 1
                with m.Case(log2):
                    m.d.comb += [
                        horizontal_target.eq(Cat(wslice.tile[:log2], wslice.index[:index_bits])),
                        column_bytes.eq(Cat(wslice.index[:index_bits] == (byte >> log2)
                                            for byte in range(maxb))),
                    ]
        size_is = [Signal(name=f"slice_size_is_{log2}") for log2 in ELEMENT_SIZES]
        m.d.comb += [size_is[log2].eq(wslice.esize_log2 == log2) for log2 in ELEMENT_SIZES]

        # ---- per row: which sources write it, then per byte: the value
        for r in range(maxb):
            zero = Signal(name=f"zero_row{r}")
            m.d.comb += zero.eq(self.zero_all | self.zero_mask[r & 7])
            horizontal = Signal(name=f"horizontal_row{r}")
            m.d.comb += horizontal.eq(write.en & ~wslice.vertical & (horizontal_target == r))
            # Vertical: row r holds element r >> log2 of the slice if its tile is the slice's.
            vertical = Signal(name=f"vertical_row{r}")
            m.d.comb += vertical.eq(write.en & wslice.vertical & _or(
                size_is[log2] & write.elements[r >> log2]
                & ((wslice.tile[:log2] == (r & ((1 << log2) - 1))) if log2 else Const(1))
                for log2 in ELEMENT_SIZES))
            vertical_data = Signal(row_bits, name=f"vertical_data{r}")
            with m.Switch(wslice.esize_log2):
                for log2 in ELEMENT_SIZES:
                    first = (r >> log2) << log2        # byte 0 of the row's element
                    with m.Case(log2):
                        m.d.comb += vertical_data.eq(Cat(
                            write_bytes[first + (c & ((1 << log2) - 1))] for c in range(maxb)))
            # Tile ports: ZA row r is tile row r>>2 of a .S tile (r>>3 of .D), which pass i //
            # array_rows writes from its slot i % array_rows.
            rows_per_pass = config.array_rows
            tile_hits, tile_data, tile_lanes = [], [], []
            for k, port in enumerate(self.tile_write):
                hit = Signal(name=f"tile{k}_row{r}")
                single_row, double_row = r >> 2, r >> 3
                m.d.comb += hit.eq(port.en & Mux(
                    port.double,
                    (port.tile[:3] == (r & 7)) & (port.pass_ == double_row // rows_per_pass),
                    (port.tile[:2] == (r & 3)) & (port.pass_ == single_row // rows_per_pass)))
                data_ = Signal(row_bits, name=f"tile{k}_data{r}")
                lanes = Signal(maxb // 4, name=f"tile{k}_lanes{r}")
                single_slot, double_slot = single_row % rows_per_pass, double_row % rows_per_pass
                m.d.comb += [data_.eq(Mux(port.double, port.rows[double_slot],
                                          port.rows[single_slot])),
                             lanes.eq(Mux(port.double, port.lanes[double_slot],
                                          port.lanes[single_slot]))]
                tile_hits.append(hit)
                tile_data.append(data_)
                tile_lanes.append(lanes)
            for b, bank in enumerate(banks):
                row = bank[r]
                values = []
                for c in range(maxb):
                    # Priority: zero (below), tile ports in order, then the slice write.
                    value = Mux(vertical & column_bytes[c], vertical_data.word_select(c, 8),
                                Mux(horizontal & horizontal_bytes[c], write_bytes[c],
                                    row.word_select(c, 8)))
                    for hit, data_, lanes in reversed(list(zip(tile_hits, tile_data, tile_lanes))):
                        value = Mux(hit & lanes[c >> 2], data_.word_select(c, 8), value)
                    values.append(value)
                with m.If(self.clear | ((context == b) & zero)):
                    m.d.sync += row.eq(0)
                with m.Elif(context == b):
                    m.d.sync += row.eq(Cat(*values))

        # ---- tile reads: slot s of pass p is tile row p * array_rows + s
        rows_per_pass, passes = config.array_rows, PassShape(config).stop
        zero = Const(0, row_bits)
        for port in self.tile_read:
            for slot in range(rows_per_pass):
                single = Array(rows[t + 4 * (p * rows_per_pass + slot)]
                               if p * rows_per_pass + slot < maxb // 4 else zero
                               for p in range(passes) for t in range(4))
                double = Array(rows[t + 8 * (p * rows_per_pass + slot)]
                               if p * rows_per_pass + slot < maxb // 8 else zero
                               for p in range(passes) for t in range(8))
                m.d.comb += port.rows[slot].eq(Mux(
                    port.double, double[Cat(port.tile[:3], port.pass_)],
                    single[Cat(port.tile[:2], port.pass_)]))


    def _banks(self, m: Module) -> None:
        """ZA in skewed byte banks, one row per pass (module documentation)."""
        config = self._config
        maxb = max_bytes(config)
        contexts = config.za_contexts
        depth = maxb * contexts
        context = self.context if contexts > 1 else Const(0, 1)

        def addresses(rows):
            return [Cat(row, context) if contexts > 1 else row for row in rows]

        # Accesses: (the rotation of their bytes into the banks, the row of each bank).
        slice_write = _slice_access(m, maxb, self.slice_write.slice, "slice_write")
        written = {}    # writer -> (access, data bytes, byte enables), in priority order
        for k, port in enumerate(self.tile_write):
            row, beyond = _tile_row(port, maxb)
            lanes = port.lanes[0]
            written[f"tile{k}"] = ((row, [row] * maxb), Value.cast(port.rows[0]), Cat(
                port.en & ~beyond & lanes[byte >> 2] for byte in range(maxb)))
        written["slice"] = (slice_write, Value.cast(self.slice_write.data),
                            Mux(self.slice_write.en, _slice_bytes(m, self.slice_write, maxb), 0))

        # Readers: (access, the output the bytes it reads go to).
        readers = {"slice": (_slice_access(m, maxb, self.slice_read.slice, "slice_read"),
                             self.slice_read.data.eq)}
        for k, port in enumerate(self.tile_read):
            row, beyond = _tile_row(port, maxb)
            readers[f"tile{k}"] = ((row, [row] * maxb),
                                   lambda data_, port=port, beyond=beyond:
                                   port.rows[0].eq(Mux(beyond, 0, data_)))

        # Per bank and write port, a memory read through a copy per read port.
        read_domain = falling_edge_reads(m)
        reads = {}      # (writer, bank) -> its read ports, in the order of `readers`
        hits = {}       # (writer, bank) -> one bit per address the writer writes
        for name, ((rotation, rows), data_, enables) in written.items():
            bank_data = barrel_shift(m, data_, rotation, "rotate_left", f"{name}_write_data",
                                     unit=8)
            bank_enables = barrel_shift(m, enables, rotation, "rotate_left",
                                        f"{name}_write_enables")
            for b, bank_address in enumerate(addresses(rows)):
                memory = m.submodules[f"{name}_bank{b}"] = block_ram(8, depth)
                write = memory.write_port()
                m.d.comb += [write.addr.eq(bank_address), write.en.eq(bank_enables[b]),
                             write.data.eq(bank_data.word_select(b, 8))]
                reads[name, b] = [memory.read_port(domain=read_domain) for _ in readers]
                hit = hits[name, b] = Signal(depth, name=f"{name}_bank{b}_hit")
                m.d.comb += hit.eq(Mux(bank_enables[b], Const(1, depth) << bank_address, 0))

        # The live-value table: per byte, the writer holding it and whether it is live.
        owner = [[Signal(range(len(written)), name=f"bank{b}_owner{a}") for a in range(depth)]
                 for b in range(maxb)]
        live = [[Signal(name=f"bank{b}_live{a}") for a in range(depth)] for b in range(maxb)]
        for a in range(depth):
            zero = Signal(name=f"zero_address{a}")
            m.d.comb += zero.eq(self.clear | ((context == a // maxb)
                                              & (self.zero_all | self.zero_mask[a % maxb % 8])))
            for b in range(maxb):
                with m.If(zero):
                    m.d.sync += live[b][a].eq(0)
                for w, name in enumerate(written):
                    with m.Elif(hits[name, b][a]):
                        m.d.sync += [live[b][a].eq(1), owner[b][a].eq(w)]

        for k, (name, ((rotation, rows), output)) in enumerate(readers.items()):
            bank_bytes = []
            for b, bank_address in enumerate(addresses(rows)):
                for read in (reads[writer, b][k] for writer in written):
                    m.d.comb += read.addr.eq(bank_address)
                latest = Array(reads[writer, b][k].data for writer in written)
                bank_bytes.append(Mux(Array(live[b])[bank_address],
                                      latest[Array(owner[b])[bank_address]], 0))
            m.d.comb += output(barrel_shift(m, Cat(*bank_bytes), -rotation, "rotate_left",
                                            f"{name}_read", unit=8))


def _slice_bytes(m: Module, write, maxb: int) -> Signal:
    """The bytes of a slice write's data that its ``elements`` enable (one bit per byte)."""
    enabled = Signal(maxb, name="slice_write_bytes")
    with m.Switch(write.slice.esize_log2):
        for log2 in ELEMENT_SIZES:
            with m.Case(log2):
                m.d.comb += enabled.eq(Cat(write.elements[byte >> log2] for byte in range(maxb)))
    return enabled


def _slice_access(m: Module, maxb: int, slice_, name: str) -> tuple[Signal, list]:
    """A slice in the banks: the rotation of its bytes (``k + index*E``: the row of a horizontal
    slice, and for a vertical one the bank of its byte 0) and the row each bank holds it in."""
    rotation = Signal(range(maxb), name=f"{name}_rotation")
    rows = [Signal(range(maxb), name=f"{name}_bank{b}_row") for b in range(maxb)]
    with m.Switch(slice_.esize_log2):
        for log2 in ELEMENT_SIZES:
            index_bits = (maxb >> log2).bit_length() - 1
            with m.Case(log2):
                m.d.comb += rotation.eq(Cat(slice_.tile[:log2], slice_.index[:index_bits]))
                for b, row in enumerate(rows):
                    # Bank b holds byte p of a vertical slice, of element p >> log2 (row k +
                    # (p & -E)).
                    position = (b - rotation)[:len(rotation)]
                    m.d.comb += row.eq(Mux(slice_.vertical,
                                           Cat(slice_.tile[:log2], position[log2:]), rotation))
    return rotation, rows


def _tile_row(port, maxb: int) -> tuple[Value, Value]:
    """The ZA row of a tile port's pass (one row per pass: tile row ``pass_``), and whether the
    pass lies beyond the rows of a .D tile."""
    row = Mux(port.double, Cat(port.tile[:3], port.pass_), Cat(port.tile[:2], port.pass_))
    return row[:(maxb - 1).bit_length()], port.double & (port.pass_ >= maxb // 8)



def _or(terms):
    """OR of 1-bit values."""
    result = Const(0)
    for term in terms:
        result = result | term
    return result
