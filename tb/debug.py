"""The read-only debug backdoor: ZA rows, Z, P and FFR as the scoreboard sees them.

``debug_addr`` selects (space, index); ``debug_data`` shows the selection one cycle later
(:mod:`zatile.hw.engine`). Reads are pipelined one per cycle: at each falling edge the reader takes the data
for the address it drove one edge earlier and drives the next address. Only meaningful while the
engine is idle.
"""

from __future__ import annotations

import numpy as np
from cocotb.triggers import FallingEdge

from zatile.hw.engine import DebugAddressLayout, DebugSpace
from zatile.tb.stream import Payload, layout_fields, read_int, signal

__all__ = ["DebugReader"]


class DebugReader:
    """Reads architectural registers through ``debug_addr`` / ``debug_data``.

    Parameters
    ----------
    dut, clock
        The toplevel and its clock.
    max_svl : int
        ``config.max_svl``: the width of ``debug_data``.
    """

    def __init__(self, dut, clock, max_svl: int):
        self._clock = clock
        self._addr = Payload(dut, "debug_addr", layout_fields(DebugAddressLayout))
        self._data = signal(dut, "debug_data")
        self.max_bytes = max_svl // 8
        self._addr.write({"space": 0, "index": 0})

    async def read(self, selections: list[tuple[int, int]]) -> list[bytes]:
        """The contents (``max_svl//8`` bytes each) of every (space, index), in order.

        Must be awaited at a falling edge; returns at a falling edge.
        """
        falling = FallingEdge(self._clock)
        contents = []
        for space, index in selections:
            self._addr.write({"space": space, "index": index})
            await falling
            contents.append(read_int(self._data).to_bytes(self.max_bytes, "little"))
        return contents

    async def snapshot(self, svl: int, za: bool = True) -> dict[str, np.ndarray]:
        """ZA (if ``za``), Z, P and FFR at effective SVL ``svl``, as :class:`ArchState` arrays."""
        svl_bytes = svl // 8
        selections = [(DebugSpace.Z, n) for n in range(32)] \
            + [(DebugSpace.P, n) for n in range(16)] + [(DebugSpace.FFR, 0)] \
            + ([(DebugSpace.ZA, n) for n in range(svl_bytes)] if za else [])
        raw = await self.read(selections)

        def rows(chunk: list[bytes], length: int) -> np.ndarray:
            return np.array([np.frombuffer(row[:length], np.uint8) for row in chunk], np.uint8)

        arrays = {"z": rows(raw[0:32], svl_bytes), "p": rows(raw[32:48], svl_bytes // 8),
                  "ffr": rows(raw[48:49], svl_bytes // 8)[0]}
        if za:
            arrays["za"] = rows(raw[49:], svl_bytes)
        return arrays
