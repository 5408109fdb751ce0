"""The engine's memory: a sparse bus-slave model behind ``mem_req`` / ``mem_resp``.

:class:`BusMemory` is the pure-Python part: beat-level reads and writes on a
:class:`sim.state.Memory` (the architectural regions, shared format with the reference model and
snapshots) plus private regions the testbench itself uses (the staging area that loads an
initial state through the issue port). It answers ``error=1`` for a beat any of whose enabled
bytes is unmapped, can force errors on mapped beats, poisons the bytes of a read beat that the
request did not enable (so an LSU that uses them is caught), and logs every write. It keeps the
port's abandon rule (:mod:`zatile.hw.lsu`, "Beats"): after a beat answered with ``error``, every
beat up to the next one marked ``first`` is answered with ``error`` and not performed, so the
beats of a failing store requested after its failing one write nothing.

:class:`MemoryResponder` is the cocotb agent: a :class:`~tb.stream.StreamSink` on ``mem_req``
and a :class:`~tb.stream.StreamSource` on ``mem_resp``, each with its own pause generator, so
requests see random backpressure and responses random latency. Exactly one response per request,
in order, as the port contract demands.

Error granularity is the beat (``mem_data_width/8`` bytes). The reference model faults at the
first unmapped byte of an access, so test memory regions should start and end on beat
boundaries for the two fault addresses to be comparable.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from zatile.hw.lsu import MemRequestLayout, MemResponseLayout
from zatile.sim.state import Memory, MemoryFault
from zatile.tb.pauses import PauseGenerator
from zatile.tb.stream import StreamSink, StreamSource, layout_fields

__all__ = ["BusError", "BeatWrite", "BusMemory", "MemoryResponder", "memory_with_holes",
           "memory_in_whole_beats", "request_fields", "response_fields"]


class BusError(AssertionError):
    """The design broke the memory port contract (unaligned address, stray enables)."""


def request_fields(data_width: int) -> dict[str, int]:
    """``mem_req`` payload fields (:func:`zatile.hw.lsu.MemRequestLayout`), LSB first."""
    return layout_fields(MemRequestLayout(data_width))


def response_fields(data_width: int) -> dict[str, int]:
    """``mem_resp`` payload fields (:func:`zatile.hw.lsu.MemResponseLayout`), LSB first."""
    return layout_fields(MemResponseLayout(data_width))


@dataclass(frozen=True)
class BeatWrite:
    """One write beat the design issued (whether or not it succeeded)."""

    address: int
    data: bytes
    byte_enable: int
    error: bool
    forced: bool

    def written(self) -> dict[int, int]:
        """Address -> byte for every byte the beat changed (none if it failed)."""
        if self.error:
            return {}
        return {self.address + lane: self.data[lane] for lane in range(len(self.data))
                if self.byte_enable >> lane & 1}


def _runs(byte_enable: int, lanes: int) -> list[tuple[int, int]]:
    """Maximal runs (first lane, length) of set bits."""
    runs, lane = [], 0
    while lane < lanes:
        if byte_enable >> lane & 1:
            start = lane
            while lane < lanes and byte_enable >> lane & 1:
                lane += 1
            runs.append((start, lane - start))
        else:
            lane += 1
    return runs


class BusMemory:
    """Beat-level access to architectural and private memory, with error injection.

    Parameters
    ----------
    memory : sim.state.Memory
        The architectural memory (used in place; copy it first to keep the original).
    beat_bytes : int
        Bytes per beat (``mem_data_width // 8``).
    rng : random.Random
        Source of poison bytes and of forced errors.
    forced_error_rate : float
        Probability that an otherwise good beat answers ``error=1``.

    Attributes
    ----------
    writes : list of BeatWrite
        Every write beat, in request order.
    forced : list of tuple
        (address, byte_enable, write) of every forced error since :meth:`take_forced`.
    """

    def __init__(self, memory: Memory, beat_bytes: int, rng: random.Random | None = None,
                 forced_error_rate: float = 0.0):
        if beat_bytes < 1 or beat_bytes & (beat_bytes - 1):
            raise ValueError(f"beat size must be a power of two of bytes, not {beat_bytes!r}")
        self.memory = memory
        self.private = Memory()
        self.beat_bytes = beat_bytes
        self.rng = rng or random.Random(0)
        self.forced_error_rate = forced_error_rate
        self.private_enabled = True
        self.writes: list[BeatWrite] = []
        self.forced: list[tuple[int, int, bool]] = []
        self.reads = 0
        self.errors = 0
        #: Beats dropped by the abandon rule.
        self.abandoned = 0
        self._abandoning = False

    # ---------------------------------------------------------------- private staging memory
    def map_private(self, base: int, data) -> None:
        """Map a testbench-only region (never compared, invisible when disabled).

        Raises
        ------
        ValueError
            If it overlaps an architectural region.
        """
        size = len(bytes(data)) if not isinstance(data, np.ndarray) else data.size
        for other, other_data in self.memory.regions.items():
            if base < other + other_data.size and other < base + size:
                raise ValueError(f"private region at 0x{base:x} overlaps memory at 0x{other:x}")
        self.private.map(base, data)

    def _space(self, address: int, length: int, write: bool) -> Memory | None:
        """The memory holding all of ``[address, address+length)``, or None."""
        spaces = (self.memory, self.private) if self.private_enabled else (self.memory,)
        for space in spaces:
            try:
                space.check(address, length, write)
                return space
            except MemoryFault:
                continue
        return None

    def _mapped(self, address: int, length: int, write: bool) -> list[tuple[Memory, int, int]]:
        """(space, address, length) pieces covering the run, or [] if any byte is unmapped."""
        space = self._space(address, length, write)
        if space is not None:
            return [(space, address, length)]
        pieces = []                         # the run may straddle two adjacent regions
        for offset in range(length):
            space = self._space(address + offset, 1, write)
            if space is None:
                return []
            pieces.append((space, address + offset, 1))
        return pieces

    # ---------------------------------------------------------------------------- beats
    def access(self, address: int, write: bool, data: int, byte_enable: int,
               first: bool = True, forceable: bool = True) -> tuple[int, bool]:
        """Perform one beat; returns (read data, error).

        A beat not marked ``first`` after one answered with ``error`` is abandoned: answered
        with ``error``, not performed (module documentation). ``forceable=False`` exempts the
        beat from forced errors.

        Raises
        ------
        BusError
            For an address not aligned to the beat or enables beyond the beat.
        """
        lanes = self.beat_bytes
        if address % lanes:
            raise BusError(f"mem_req address 0x{address:x} is not aligned to {lanes} bytes")
        if byte_enable >> lanes:
            raise BusError(f"mem_req byte_enable 0x{byte_enable:x} has more than {lanes} lanes")
        if first:
            self._abandoning = False
        elif self._abandoning:
            self.abandoned += 1
            if write:
                self.writes.append(BeatWrite(address, data.to_bytes(lanes, "little"),
                                             byte_enable, True, False))
            return int.from_bytes(self.rng.randbytes(lanes), "little"), True
        pieces, error = [], False
        for lane, length in _runs(byte_enable, lanes):
            mapped = self._mapped(address + lane, length, write)
            if not mapped:
                error = True
                break
            pieces.extend(mapped)
        forced = False
        if not error and byte_enable and forceable and self.forced_error_rate \
                and self.rng.random() < self.forced_error_rate:
            error = forced = True
            self.forced.append((address, byte_enable, write))
        if error:
            self.errors += 1
            self._abandoning = True
        if write:
            payload = data.to_bytes(lanes, "little")
            self.writes.append(BeatWrite(address, payload, byte_enable, error, forced))
            if not error:
                for space, start, length in pieces:
                    offset = start - address
                    space.write(start, payload[offset:offset + length])
            return 0, error
        self.reads += 1
        # Lanes the request did not enable (and every lane of a failed beat) carry noise.
        beat = bytearray(self.rng.randbytes(lanes))
        if not error:
            for space, start, length in pieces:
                offset = start - address
                beat[offset:offset + length] = space.read(start, length).tobytes()
        return int.from_bytes(beat, "little"), error

    def take_writes(self) -> list[BeatWrite]:
        """The write log since the last call (and clear it)."""
        writes, self.writes = self.writes, []
        return writes

    def take_forced(self) -> list[tuple[int, int, bool]]:
        """Forced errors since the last call (and clear them)."""
        forced, self.forced = self.forced, []
        return forced


def memory_with_holes(memory: Memory, holes: list[tuple[int, int]]) -> tuple[Memory, callable]:
    """A copy of ``memory`` with the given byte ranges unmapped, and a function to merge back.

    The reference model sees a forced bus error as the bytes of the failing beat being unmapped;
    ``merge_back()`` copies whatever it then wrote into the original regions.
    """
    cut = set()
    for start, length in holes:
        cut.update(range(start, start + length))
    pieces: dict[int, tuple[int, int]] = {}          # new base -> (original base, offset)
    regions = {}
    for base, data in memory.regions.items():
        offset = 0
        while offset < data.size:
            if base + offset in cut:
                offset += 1
                continue
            end = offset
            while end < data.size and base + end not in cut:
                end += 1
            regions[base + offset] = data[offset:end]
            pieces[base + offset] = (base, offset)
            offset = end
    split = Memory(regions)

    def merge_back() -> None:
        originals = memory.regions
        for base, data in split.regions.items():
            original, offset = pieces[base]
            originals[original][offset:offset + data.size] = data

    return split, merge_back


def memory_in_whole_beats(memory: Memory, beat_bytes: int) -> Memory:
    """A copy of ``memory`` mapped in whole beats of ``beat_bytes``: every region rounded out to
    beat boundaries (the added bytes zero), and regions that then overlap or touch merged into
    one (a beat-wide access crosses from one to the next, as on the bus).

    A bus whose reads carry no byte enables (AXI, :mod:`zatile.tb.soc`) reads whole beats, so
    its memory must be mapped in whole beats for the reference model to see the same memory.
    """
    spans: list[list[int]] = []
    for base, data in memory.regions.items():            # in address order
        start = base - base % beat_bytes
        end = min(-(-(base + data.size) // beat_bytes) * beat_bytes, 1 << 64)
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    rounded = Memory({start: np.zeros(end - start, np.uint8) for start, end in spans})
    for base, data in memory.regions.items():
        rounded.write(base, data)
    return rounded


class MemoryResponder:
    """Serves ``mem_req``/``mem_resp`` from a :class:`BusMemory`.

    Parameters
    ----------
    dut, clock
        The toplevel and its clock.
    bus : BusMemory
        What the requests access.
    request_pauses, response_pauses : PauseGenerator
        Backpressure on ``mem_req.ready`` and idle before each ``mem_resp.valid``.
    """

    def __init__(self, dut, clock, bus: BusMemory, request_pauses: PauseGenerator | None = None,
                 response_pauses: PauseGenerator | None = None):
        width = bus.beat_bytes * 8
        self.bus = bus
        self.requests = 0
        #: The most requests taken and not yet answered at any time.
        self.most_outstanding = 0
        self.responses = StreamSource(dut, clock, "mem_resp", response_fields(width),
                                      response_pauses)
        self.sink = StreamSink(dut, clock, "mem_req", request_fields(width), self._request,
                               request_pauses)

    def _request(self, request: dict[str, int]) -> None:
        self.requests += 1
        self.most_outstanding = max(self.most_outstanding,
                                    self.requests - self.responses.transfers)
        data, error = self.bus.access(request["address"], bool(request["write"]),
                                      request["data"], request["byte_enable"],
                                      bool(request["first"]))
        self.responses.send_nowait({"data": data, "error": int(error)})

    def stop(self) -> None:
        self.sink.stop()
        self.responses.stop()
