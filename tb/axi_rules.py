"""The AXI handshake rule, checked on the design's side of a running AXI4 or AXI4-Lite port.

cocotbext-axi's models check bursts (the 4 KiB boundary, ``WLAST`` on the last beat) but take
whatever a channel carries at the handshake, so a design that changes its address, data or
response while waiting for ``READY``, or drops ``VALID`` before the handshake, would go unseen
as long as the value taken happens to work. AMBA AXI (ARM IHI 0022, A3.2.1) forbids both: once
a source raises ``VALID`` it keeps it high, and the information it carries unchanged, until the
cycle in which ``READY`` is high too. AXI4-Lite keeps the rule. :class:`HandshakeRules` checks
it on the channels the design drives, every cycle.

Timing: values are sampled at each falling clock edge, where what the next rising edge will
see has settled (the discipline of every agent in :mod:`tb`, :mod:`tb.stream`).
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import FallingEdge
from cocotb.utils import get_sim_time

from zatile.tb.stream import read_int, signal

__all__ = ["MANAGER_CHANNELS", "SUBORDINATE_CHANNELS", "HandshakeRules"]

#: What an AXI4 manager drives: its channels' ``VALID``/``READY`` stem and payload signals.
MANAGER_CHANNELS = {
    "aw": ("awid", "awaddr", "awlen", "awsize", "awburst", "awlock", "awcache", "awprot"),
    "w": ("wdata", "wstrb", "wlast"),
    "ar": ("arid", "araddr", "arlen", "arsize", "arburst", "arlock", "arcache", "arprot"),
}
#: What an AXI4-Lite subordinate drives.
SUBORDINATE_CHANNELS = {
    "b": ("bresp",),
    "r": ("rdata", "rresp"),
}


class HandshakeRules:
    """Checks the handshake rule on the channels a design drives on one port (module notes).

    Parameters
    ----------
    dut, clock
        The toplevel and its clock.
    prefix : str
        The port's signal prefix (``m_axi__``, ``s_axil__``).
    channels : mapping of str to tuple of str
        Channel (``aw``) to the payload signals the design drives with its ``VALID``
        (:data:`MANAGER_CHANNELS`, :data:`SUBORDINATE_CHANNELS`).
    cycle_ns : float
        The clock period, for the cycle numbers in messages.

    Raises
    ------
    AssertionError
        From its task, naming the port, channel, signal and cycle of the first broken rule
        (which fails the running cocotb test).
    """

    def __init__(self, dut, clock, prefix: str, channels: dict[str, tuple[str, ...]],
                 cycle_ns: float):
        self._clock = clock
        self._prefix = prefix
        self._cycle_ns = cycle_ns
        self._channels = {
            name: (signal(dut, f"{prefix}{name}valid"), signal(dut, f"{prefix}{name}ready"),
                   {payload: signal(dut, f"{prefix}{payload}") for payload in payloads})
            for name, payloads in channels.items()}
        #: Handshakes the design held ``VALID`` for without ``READY`` (the checks made).
        self.stalls = 0
        self._task = cocotb.start_soon(self._run())

    def stop(self) -> None:
        self._task.cancel()

    async def _run(self) -> None:
        falling = FallingEdge(self._clock)
        waiting: dict[str, dict[str, int]] = {}     # channel -> payload offered, not yet taken
        while True:
            await falling
            for name, (valid, ready, payloads) in self._channels.items():
                offered = int(valid.value) == 1
                if name in waiting:
                    self._check(name, offered, waiting[name], payloads)
                if offered and int(ready.value) != 1:
                    waiting[name] = {payload: read_int(handle)
                                     for payload, handle in payloads.items()}
                    self.stalls += 1
                else:
                    waiting.pop(name, None)

    def _check(self, name: str, offered: bool, before: dict[str, int], payloads) -> None:
        cycle = int(get_sim_time("ns") // self._cycle_ns)
        where = f"{self._prefix}{name}valid"
        if not offered:
            raise AssertionError(f"AXI handshake rule (IHI 0022 A3.2.1): {where} fell at cycle "
                                 f"{cycle} without {self._prefix}{name}ready")
        for payload, handle in payloads.items():
            now = read_int(handle)
            if now != before[payload]:
                raise AssertionError(
                    f"AXI handshake rule (IHI 0022 A3.2.1): {self._prefix}{payload} changed "
                    f"from 0x{before[payload]:x} to 0x{now:x} at cycle {cycle} while {where} "
                    f"waited for {self._prefix}{name}ready")
