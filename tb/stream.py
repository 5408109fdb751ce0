"""Source and sink agents for ``amaranth.lib.stream`` handshakes, at whole-transaction grain.

A stream port of the engine appears in Verilog as ``<name>__valid``, ``<name>__ready`` and its
payload, either flattened per field (``<name>__payload__word``) or as one packed vector
(``<name>__payload``) whose fields sit LSB-first in declaration order, as Amaranth's
``StructLayout`` puts them. :class:`Payload` hides which of the two the Verilog has.

Timing discipline shared by every agent in :mod:`tb`: signals are driven and sampled at the
*falling* clock edge. Everything the rising edge changed has settled by then on every simulator,
and what is driven there is stable at the next rising edge, where the transfer happens. A source
samples ``ready`` in the ``ReadOnly`` phase after driving ``valid`` (so a ``ready`` that depends
combinationally on ``valid`` is seen correctly); while nothing can happen, agents sleep on a value
change of the other side's signal instead of waking every cycle, and on waking tell from the
clock phase whether the next rising edge already transfers (:func:`_settled_high`).
"""

from __future__ import annotations

from typing import Callable, Mapping

import cocotb
from amaranth import Shape
from amaranth.lib import data
from cocotb.queue import Queue
from cocotb.triggers import ClockCycles, Event, FallingEdge, ReadOnly, RisingEdge
from cocotb.utils import get_sim_time

from zatile.tb.pauses import PauseGenerator, no_pauses

__all__ = ["Payload", "StreamSource", "StreamSink", "signal", "read_int", "layout_fields",
           "pack_fields", "unpack_fields"]


def layout_fields(layout: data.StructLayout) -> dict[str, int]:
    """Field name to width of a port's Amaranth layout, LSB first: how :class:`Payload` sees it.

    The testbench takes every port layout from the hw component's signature this way, never
    from a copy.

    Raises
    ------
    ValueError
        If the fields do not tile the layout from bit 0 without gaps.
    """
    fields, position = {}, 0
    for name, member in sorted(layout, key=lambda item: item[1].offset):
        if member.offset != position:
            raise ValueError(f"layout field {name!r} starts at bit {member.offset}, not {position}")
        width = Shape.cast(member.shape).width
        fields[name] = width
        position += width
    return fields


def pack_fields(fields: Mapping[str, int], values: Mapping[str, int]) -> int:
    """``values`` (missing fields 0) packed LSB first in the order of ``fields`` (name to width).

    Raises
    ------
    ValueError
        For an unknown field or a value that does not fit its field.
    """
    unknown = set(values) - set(fields)
    if unknown:
        raise ValueError(f"unknown payload field(s) {sorted(unknown)}")
    packed, offset = 0, 0
    for name, width in fields.items():
        value = int(values.get(name, 0))
        if not 0 <= value < 1 << width:
            raise ValueError(f"payload field {name}={value:#x} does not fit {width} bits")
        packed |= value << offset
        offset += width
    return packed


def unpack_fields(fields: Mapping[str, int], packed: int) -> dict[str, int]:
    """The fields (name to width, LSB first) of ``packed``."""
    values, offset = {}, 0
    for name, width in fields.items():
        values[name] = (packed >> offset) & ((1 << width) - 1)
        offset += width
    return values


def signal(dut, name: str):
    """The handle of port ``name`` of ``dut``.

    Raises
    ------
    AttributeError
        Naming the port when the design does not have it.
    """
    try:
        return getattr(dut, name)
    except AttributeError:
        raise AttributeError(f"the design has no port '{name}'") from None


def read_int(handle) -> int:
    """The unsigned value of a signal; X/Z bits are an error (they mean an undriven output).

    Raises
    ------
    ValueError
        Naming the signal when its value holds X or Z bits.
    """
    value = handle.value
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{handle._name} holds non-binary value {value}") from None


def _has(dut, name: str) -> bool:
    try:
        getattr(dut, name)
    except AttributeError:
        return False
    return True


class Payload:
    """The fields of a struct-shaped port, flattened or packed in the Verilog.

    Parameters
    ----------
    dut
        The toplevel handle.
    prefix : str
        Verilog name of the struct port (``issue__payload``, ``debug_addr``).
    fields : mapping of str to int
        Field name to width in bits, in declaration order (LSB first when packed).
    """

    def __init__(self, dut, prefix: str, fields: Mapping[str, int]):
        self.fields = dict(fields)
        self._flat = all(_has(dut, f"{prefix}__{name}") for name in self.fields)
        if self._flat:
            self._handles = {name: getattr(dut, f"{prefix}__{name}") for name in self.fields}
        else:
            self._packed = signal(dut, prefix)

    def write(self, values: Mapping[str, int]) -> None:
        """Drive every field (missing fields are driven 0).

        Raises
        ------
        ValueError
            For an unknown field or a value that does not fit its field.
        """
        packed = pack_fields(self.fields, values)
        if not self._flat:
            self._packed.value = packed
            return
        for name, value in unpack_fields(self.fields, packed).items():
            self._handles[name].value = value

    def read(self) -> dict[str, int]:
        """Every field's current value."""
        if self._flat:
            return {name: read_int(handle) for name, handle in self._handles.items()}
        return unpack_fields(self.fields, read_int(self._packed))


async def _settled_high(handle, clock, falling) -> None:
    """Return in the clock-low phase once ``handle`` has settled at 1 before a rising edge.

    Called in the clock-low phase (at or after a falling edge). The other side's signal may
    rise in that same phase (a combinational ready reacting to something driven at the falling
    edge): then the very next rising edge transfers. If it rises after a rising edge instead,
    the earliest transfer is the rising edge after the next falling edge.
    """
    while True:
        await ReadOnly()
        if handle.value == 1:
            return
        await RisingEdge(handle)
        if clock.value == 1:
            await falling


class _StreamAgent:
    """What a stream source and a stream sink share: the handshake signals, the payload, the
    pauses before each transfer and the count of transfers; the agent runs as a cocotb task."""

    def __init__(self, dut, clock, name: str, fields: Mapping[str, int],
                 pauses: PauseGenerator | None):
        self.name = name
        self._clock = clock
        self._valid = signal(dut, f"{name}__valid")
        self._ready = signal(dut, f"{name}__ready")
        self._payload = Payload(dut, f"{name}__payload", fields)
        self.pauses = pauses or no_pauses()
        self.transfers = 0
        #: Transfers for which this side waited for the other (a source for ``ready``).
        self.waits = 0
        self._task = None

    def _start(self) -> None:
        self._task = cocotb.start_soon(self._run())

    def stop(self) -> None:
        self._task.cancel()

    async def _offer(self, own, other, falling, prepare: Callable[[], None] | None = None) -> None:
        """Idle ``next(pauses)`` cycles with ``own`` low, call ``prepare`` (if any), raise
        ``own``, and return in the clock-low phase before the rising edge at which ``other`` is
        high too (the transfer)."""
        idle = next(self.pauses)
        if idle:
            own.value = 0
            await ClockCycles(self._clock, idle, FallingEdge)
        if prepare is not None:
            prepare()
        own.value = 1
        offered = get_sim_time("ns")
        await _settled_high(other, self._clock, falling)
        if get_sim_time("ns") != offered:
            self.waits += 1


class StreamSource(_StreamAgent):
    """Drives a stream into the design, one whole payload per transfer.

    Items are queued with :meth:`send_nowait` (or awaited with :meth:`send`) and offered in order;
    before each offer the agent idles for ``next(pauses)`` cycles with ``valid`` low.

    With ``gather``, one transfer carries several items: at each offer the agent takes every
    item queued by then, up to ``gather.most()`` of them, and drives ``gather.payload(items)``
    (each item's ``on_accept`` runs once the transfer is taken).
    """

    def __init__(self, dut, clock, name: str, fields: Mapping[str, int],
                 pauses: PauseGenerator | None = None, gather=None):
        super().__init__(dut, clock, name, fields, pauses)
        self._gather = gather
        #: Items taken by the design (more than ``transfers`` when gathering).
        self.items = 0
        self._queue: Queue = Queue()
        self._idle = Event()
        self._idle.set()
        self._valid.value = 0
        self._start()

    def send_nowait(self, values: Mapping[str, int],
                    on_accept: Callable[[], None] | None = None) -> None:
        """Queue one payload; ``on_accept`` runs once the design has taken it."""
        self._idle.clear()
        self._queue.put_nowait((dict(values), on_accept))

    async def send(self, values: Mapping[str, int]) -> None:
        """Queue one payload and wait until the design has taken it."""
        taken = Event()
        self.send_nowait(values, taken.set)
        await taken.wait()

    async def wait_idle(self) -> None:
        """Wait until every queued payload has been taken."""
        await self._idle.wait()

    async def _run(self) -> None:
        falling = FallingEdge(self._clock)
        while True:
            if self._queue.empty():
                self._valid.value = 0
                self._idle.set()
            batch = [await self._queue.get()]

            def prepare() -> None:             # valid is low, or the last transfer just ended
                if self._gather is None:
                    self._payload.write(batch[0][0])
                    return
                most = self._gather.most()
                while len(batch) < most and not self._queue.empty():
                    batch.append(self._queue.get_nowait())
                self._payload.write(self._gather.payload([values for values, _ in batch]))

            await self._offer(self._valid, self._ready, falling, prepare)
            await falling                     # the rising edge in between took the payload
            self.transfers += 1
            self.items += len(batch)
            for _, on_accept in batch:
                if on_accept is not None:
                    on_accept()


class StreamSink(_StreamAgent):
    """Accepts a stream from the design and hands each payload to ``callback``.

    Before accepting each transfer the agent holds ``ready`` low for ``next(pauses)`` cycles.
    The callback runs at the falling edge after the transfer, in transfer order.
    """

    def __init__(self, dut, clock, name: str, fields: Mapping[str, int],
                 callback: Callable[[dict[str, int]], None],
                 pauses: PauseGenerator | None = None):
        super().__init__(dut, clock, name, fields, pauses)
        self._callback = callback
        self._ready.value = 0
        self._start()

    async def _run(self) -> None:
        falling = FallingEdge(self._clock)
        await falling
        while True:
            await self._offer(self._ready, self._valid, falling)
            values = self._payload.read()
            await falling                     # the rising edge in between completed the transfer
            self.transfers += 1
            self._callback(values)
