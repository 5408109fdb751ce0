"""The read-only debug backdoor: ZA rows, Z, P and FFR as the scoreboard sees them.

``debug_addr`` selects (space, index); ``debug_data`` shows the selection one cycle later
(:mod:`zatile.hw.engine`). The engine reads its block RAMs at the falling edge, so the reader
drives ``debug_addr`` at rising edges, as a register of the design would. Reads are pipelined
one per cycle: at each rising edge the reader drives the next address, and at the falling edge
after it takes the data for the address it drove one cycle earlier. Only meaningful while the
engine is idle.
"""

from __future__ import annotations

import numpy as np
from cocotb.triggers import FallingEdge, RisingEdge

from zatile.hw.engine import DebugAddressLayout, DebugSpace
from zatile.tb.stream import Payload, layout_fields, read_int, signal

__all__ = ["DebugReader", "snapshot_selections", "snapshot_arrays"]


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
        rising, falling = RisingEdge(self._clock), FallingEdge(self._clock)
        contents = []
        for step in range(len(selections) + 1):
            await rising
            if step < len(selections):
                space, index = selections[step]
                self._addr.write({"space": space, "index": index})
            if step:
                await falling
                contents.append(read_int(self._data).to_bytes(self.max_bytes, "little"))
        return contents

    async def snapshot(self, svl: int, za: bool = True) -> dict[str, np.ndarray]:
        """ZA (if ``za``), Z, P and FFR at effective SVL ``svl``, as :class:`ArchState` arrays."""
        selections = snapshot_selections(svl // 8, za)
        raw = await self.read([(space, index) for space, index, _ in selections])
        return snapshot_arrays(raw, selections)


def snapshot_selections(svl_bytes: int, za: bool = True) -> list[tuple[int, int, int]]:
    """What a snapshot reads through the debug port, in order: (space, index, bytes) of Z0-Z31,
    P0-P15, FFR and (if ``za``) every ZA row at ``svl_bytes``."""
    return ([(DebugSpace.Z, n, svl_bytes) for n in range(32)]
            + [(DebugSpace.P, n, svl_bytes // 8) for n in range(16)]
            + [(DebugSpace.FFR, 0, svl_bytes // 8)]
            + ([(DebugSpace.ZA, n, svl_bytes) for n in range(svl_bytes)] if za else []))


def snapshot_arrays(raw: list[bytes], selections: list[tuple[int, int, int]]
                    ) -> dict[str, np.ndarray]:
    """The :class:`ArchState` arrays (``z``, ``p``, ``ffr``, ``za``) from the contents read
    for :func:`snapshot_selections` (each at least as long as its selection)."""
    rows: dict[int, list[np.ndarray]] = {}
    for (space, _, length), content in zip(selections, raw, strict=True):
        rows.setdefault(space, []).append(np.frombuffer(content[:length], np.uint8))
    arrays = {"z": np.array(rows[DebugSpace.Z], np.uint8),
              "p": np.array(rows[DebugSpace.P], np.uint8),
              "ffr": rows[DebugSpace.FFR][0].copy()}
    if DebugSpace.ZA in rows:
        arrays["za"] = np.array(rows[DebugSpace.ZA], np.uint8)
    return arrays
