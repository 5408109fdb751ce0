"""A FIFO that takes and gives several entries per cycle, in lane order.

The engine's issue and result ports move up to ``EngineConfig.issue_lanes`` instructions per
transfer (docs/architecture.md, "Decoupled execution"); the queues between them (the execution
queue, the program-order queue, the execution results) take and give as many per cycle. Writes and reads of one cycle are independent: an entry written this cycle can
be read from the next.

The entries live in ``lanes`` banks of memory, place ``p`` in bank ``p mod lanes``: the places
one cycle writes (or reads) are consecutive, so each bank has one write and one read port, which
an FPGA holds in distributed RAM instead of flip-flops and wide multiplexers, or (``block_ram``)
in block RAM read at the falling edge (``hw/_common.py``, ``falling_edge_reads``): the read
address is the head pointer, a register, so the oldest entries are there from the middle of
the cycle; what they feed must not address another memory read at the falling edge (the
execution queue's head addresses the register files, so it stays in LUT RAM).
"""

from __future__ import annotations

from amaranth import Array, Const, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from zatile.hw._common import CheckedComponent, block_ram, falling_edge_reads

__all__ = ["LaneFifo"]


class LaneFifo(CheckedComponent):
    """``depth`` entries of ``width`` bits; up to ``lanes`` written and read per cycle.

    Parameters
    ----------
    width : int
        Bits of an entry (at least 1).
    depth : int
        Entries: a power of two, at least ``lanes``.
    lanes : int
        Entries written and read per cycle: a power of two.
    block_ram : bool
        Hold the entries in block RAM, read at the falling edge (``r_data`` is valid from the
        middle of the cycle), instead of LUT RAM read combinationally.

    Attributes
    ----------
    w_en : Signal(lanes), in
        Which of ``w_data``'s lanes are written this cycle; the written lanes enter in lane
        order, whichever they are (lanes 0 and 2 of 3 take two consecutive places).
    w_data : Signal(ArrayLayout(width, lanes)), in
    w_rdy : Signal(1), out
        At least ``lanes`` places are free: a whole cycle's writes fit. Writing when it is low
        loses the entries that do not fit (the caller must not).
    r_count : Signal(range(lanes + 1)), in
        How many of the oldest entries leave this cycle (at most ``level``).
    r_data : Signal(ArrayLayout(width, lanes)), out
        The oldest ``lanes`` entries, oldest first; meaningful up to ``level``.
    level : Signal(range(depth + 1)), out
        Entries held.

    Raises
    ------
    ValueError
        Quoting a width, depth or lane count that is not usable.
    """

    @staticmethod
    def check_arguments(width: int, depth: int, lanes: int, *, block_ram: bool = False) -> None:
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"width must be a positive integer, not {width!r}")
        if not isinstance(lanes, int) or lanes < 1 or lanes & (lanes - 1):
            raise ValueError(f"lanes must be a power of two, not {lanes!r}")
        if not isinstance(depth, int) or depth < lanes or depth & (depth - 1):
            raise ValueError(f"depth must be a power of two of at least {lanes} lanes, "
                             f"not {depth!r}")
        if not isinstance(block_ram, bool):
            raise ValueError(f"block_ram must be a bool, not {block_ram!r}")

    def __init__(self, width: int, depth: int, lanes: int, *, block_ram: bool = False):
        self._width, self._depth, self._lanes = width, depth, lanes
        self._block_ram = block_ram
        super().__init__({
            "w_en": In(lanes), "w_data": In(data.ArrayLayout(width, lanes)), "w_rdy": Out(1),
            "r_count": In(range(lanes + 1)), "r_data": Out(data.ArrayLayout(width, lanes)),
            "level": Out(range(depth + 1)),
        })

    @property
    def depth(self) -> int:
        return self._depth

    @property
    def lanes(self) -> int:
        return self._lanes

    def elaborate(self, platform):
        m = Module()
        depth, lanes = self._depth, self._lanes
        rows = depth // lanes
        lane_bits = (lanes - 1).bit_length()
        pointer = range(2 * depth)            # one wrap bit beyond the place
        head, tail = Signal(pointer), Signal(pointer)

        def bank_of(position):
            return position[:lane_bits] if lane_bits else Const(0, 1)

        def row_of(position):
            return position[lane_bits:lane_bits + (rows - 1).bit_length()]

        # The place each written lane takes: after the lanes written before it.
        places, written = [], Const(0, range(lanes + 1))
        for lane in range(lanes):
            places.append((tail + written)[:len(tail)])
            written = written + self.w_en[lane]
        read_data = []
        read_domain = falling_edge_reads(m) if self._block_ram else "comb"
        for bank in range(lanes):
            memory = (block_ram(self._width, rows) if self._block_ram
                      else Memory(shape=self._width, depth=rows, init=[]))
            m.submodules[f"bank{bank}"] = memory
            write, read = memory.write_port(), memory.read_port(domain=read_domain)
            # The last lane whose place is in this bank writes it. Data and address need no
            # zero default (the enable decides), which saves a gate per bit of the entry.
            data_, address, enable = self.w_data[0], row_of(places[0]), Const(0)
            for lane, place in enumerate(places):
                hit = self.w_en[lane] & (bank_of(place) == bank)
                if lane:
                    data_ = Mux(hit, self.w_data[lane], data_)
                    address = Mux(hit, row_of(place), address)
                enable = enable | hit
            m.d.comb += [write.en.eq(enable), write.data.eq(data_), write.addr.eq(address)]
            # Of the places head .. head + lanes - 1, the one in this bank.
            m.d.comb += read.addr.eq(row_of(head + ((bank - bank_of(head))
                                                    % lanes if lanes > 1 else 0)))
            read_data.append(read.data)
        level = Signal(range(depth + 1))
        m.d.comb += [
            level.eq((tail - head)[:len(level)]),
            self.level.eq(level),
            self.w_rdy.eq(level <= depth - lanes),
        ]
        m.d.sync += [tail.eq(tail + written), head.eq(head + self.r_count)]
        banks = Array(read_data)
        for lane in range(lanes):
            m.d.comb += self.r_data[lane].eq(banks[bank_of(head + lane)])
        return m
