"""AXI4 and AXI4-Lite interfaces as Amaranth signatures, with the signal names of the AMBA AXI
specification (``awaddr``, ``wstrb``, ``rresp``, ...), so that generated Verilog ports read
``m_axi__awaddr`` and bus-functional models find them by prefix.

Flows are the manager's (master's): a manager's port is ``Out(signature)``, a subordinate's
(slave's) ``In(signature)``.
"""

from __future__ import annotations

from amaranth.lib import enum, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["Burst", "Response", "axi4_signature", "axi4_lite_signature"]


class Burst(enum.Enum, shape=2):
    """AxBURST."""

    FIXED = 0
    INCR = 1
    WRAP = 2


class Response(enum.Enum, shape=2):
    """xRESP: bit 1 set is an error (SLVERR from the subordinate, DECERR from the
    interconnect)."""

    OKAY = 0
    EXOKAY = 1
    SLVERR = 2
    DECERR = 3


def _check_widths(address_width: int, data_width: int) -> None:
    if not isinstance(address_width, int) or not 12 <= address_width <= 64:
        raise ValueError(f"address width must be 12 to 64 bits, not {address_width!r}")
    if not isinstance(data_width, int) or data_width < 8 or data_width & (data_width - 1):
        raise ValueError(f"data width must be a power of two of at least 8 bits, "
                         f"not {data_width!r}")


def axi4_signature(address_width: int, data_width: int, id_width: int = 1) -> wiring.Signature:
    """The five channels of an AXI4 manager (no user, QoS or region signals).

    Raises
    ------
    ValueError
        Quoting a width that is not usable.
    """
    _check_widths(address_width, data_width)
    if not isinstance(id_width, int) or not 1 <= id_width <= 16:
        raise ValueError(f"ID width must be 1 to 16 bits, not {id_width!r}")
    def address_channel(channel: str) -> dict:
        return {f"{channel}id": Out(id_width), f"{channel}addr": Out(address_width),
                f"{channel}len": Out(8), f"{channel}size": Out(3), f"{channel}burst": Out(Burst),
                f"{channel}lock": Out(1), f"{channel}cache": Out(4), f"{channel}prot": Out(3),
                f"{channel}valid": Out(1), f"{channel}ready": In(1)}

    return wiring.Signature({
        **address_channel("aw"),
        "wdata": Out(data_width), "wstrb": Out(data_width // 8), "wlast": Out(1),
        "wvalid": Out(1), "wready": In(1),
        "bid": In(id_width), "bresp": In(Response), "bvalid": In(1), "bready": Out(1),
        **address_channel("ar"),
        "rid": In(id_width), "rdata": In(data_width), "rresp": In(Response), "rlast": In(1),
        "rvalid": In(1), "rready": Out(1)})


def axi4_lite_signature(address_width: int, data_width: int = 32) -> wiring.Signature:
    """The five channels of an AXI4-Lite manager.

    Raises
    ------
    ValueError
        Quoting a width that is not usable (AXI4-Lite data is 32 or 64 bits).
    """
    _check_widths(address_width, data_width)
    if data_width not in (32, 64):
        raise ValueError(f"AXI4-Lite data width must be 32 or 64 bits, not {data_width!r}")
    return wiring.Signature({
        "awaddr": Out(address_width), "awprot": Out(3), "awvalid": Out(1), "awready": In(1),
        "wdata": Out(data_width), "wstrb": Out(data_width // 8), "wvalid": Out(1),
        "wready": In(1),
        "bresp": In(Response), "bvalid": In(1), "bready": Out(1),
        "araddr": Out(address_width), "arprot": Out(3), "arvalid": Out(1), "arready": In(1),
        "rdata": In(data_width), "rresp": In(Response), "rvalid": In(1), "rready": Out(1)})
