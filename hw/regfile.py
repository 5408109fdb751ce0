"""The streaming-SVE register file: Z0-Z31 (max_svl bits each), P0-P15 and FFR (max_svl/8 bits).

Registers are flip-flops so that a PSTATE.SM change (``reset_sve``) clears all of them in one
cycle. Byte ``e`` of a Z register is bits [8e+7:8e]; predicate bit ``b`` is bit ``b`` of a P
register (bit ``b % 8`` of byte ``b // 8`` in ``sim.state``). Bits above the effective SVL are
kept but not architectural.
"""

from __future__ import annotations

from amaranth import Array, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from zatile.sw.arch.config import EngineConfig

from zatile.hw._common import ConfigComponent, byte_mask, max_bytes, row_layout

__all__ = ["ReadPortSignature", "WritePortSignature", "RegisterFile"]

Z_REGISTERS = 32
P_REGISTERS = 16


def ReadPortSignature(addr_width: int, data_shape) -> wiring.Signature:
    """A combinational read port, from the reader's side: ``addr`` out, ``data`` in."""
    return wiring.Signature({"addr": Out(addr_width), "data": In(data_shape)})


def WritePortSignature(addr_width: int, data_shape, enables: int) -> wiring.Signature:
    """A write port, from the writer's side: ``en``, ``addr``, ``data`` and per-lane ``lanes``.

    ``lanes`` holds one enable per byte (Z) or per bit (P) of ``data``.
    """
    return wiring.Signature({"en": Out(1), "addr": Out(addr_width), "data": Out(data_shape),
                             "lanes": Out(enables)})


class RegisterFile(ConfigComponent):
    """Z, P and FFR: three read ports for Z, four for P, two write ports each, a debug port.

    Parameters
    ----------
    config : EngineConfig
        ``max_svl`` sizes the registers.

    Attributes
    ----------
    z_read_a, z_read_b, z_read_c : In(ReadPortSignature(5, row)), combinational Z reads
    p_read_a, p_read_b, p_read_c : In(ReadPortSignature(4, MAXB)), combinational P reads
        (three for the predicate operations, ``Pg``, ``Pn`` and ``Pm``)
    p_read_load : In(ReadPortSignature(4, MAXB))
        The governing predicate of the load the load queue starts.
    z_write : In(WritePortSignature(5, row, MAXB)), byte-enabled Z write at the clock edge
    p_write : In(WritePortSignature(4, MAXB, MAXB)), bit-enabled P write at the clock edge
    z_write_load, p_write_load
        The same, for the loads of the load queue as they complete. The engine never writes
        one register through both ports in one cycle; if it did, the load's write would win.
    reset_sve : Signal(1), in
        Zero every Z, P and FFR bit at the clock edge (has priority over the write ports).
    z_debug : In(ReadPortSignature(5, row)), p_debug : In(ReadPortSignature(4, MAXB))
        Read ports for the debug backdoor.
    ffr : Signal(MAXB), out
        The first-fault register (only ever zeroed: the subset has no first-fault loads).

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    """

    def __init__(self, config: EngineConfig):
        maxb = max_bytes(config)
        row = row_layout(config)
        super().__init__(config, {
            "z_read_a": In(ReadPortSignature(5, row)),
            "z_read_b": In(ReadPortSignature(5, row)),
            "z_read_c": In(ReadPortSignature(5, row)),
            "p_read_a": In(ReadPortSignature(4, maxb)),
            "p_read_b": In(ReadPortSignature(4, maxb)),
            "p_read_c": In(ReadPortSignature(4, maxb)),
            "p_read_load": In(ReadPortSignature(4, maxb)),
            "z_write": In(WritePortSignature(5, row, maxb)),
            "p_write": In(WritePortSignature(4, maxb, maxb)),
            "z_write_load": In(WritePortSignature(5, row, maxb)),
            "p_write_load": In(WritePortSignature(4, maxb, maxb)),
            "reset_sve": In(1),
            "z_debug": In(ReadPortSignature(5, row)),
            "p_debug": In(ReadPortSignature(4, maxb)),
            "ffr": Out(maxb),
        })

    def elaborate(self, platform):
        m = Module()
        maxb = max_bytes(self._config)
        z = Array(Signal(maxb * 8, name=f"z{n}") for n in range(Z_REGISTERS))
        p = Array(Signal(maxb, name=f"p{n}") for n in range(P_REGISTERS))
        ffr = Signal(maxb)
        m.d.comb += self.ffr.eq(ffr)

        for port in (self.z_read_a, self.z_read_b, self.z_read_c, self.z_debug):
            m.d.comb += port.data.eq(z[port.addr])
        for port in (self.p_read_a, self.p_read_b, self.p_read_c, self.p_read_load,
                     self.p_debug):
            m.d.comb += port.data.eq(p[port.addr])

        z_ports = {"load": self.z_write_load, "execute": self.z_write}    # the load wins
        z_masks = {}
        for name, port in z_ports.items():
            z_masks[name] = Signal(maxb * 8, name=f"z_mask_{name}")
            m.d.comb += z_masks[name].eq(byte_mask(port.lanes))
        for index in range(Z_REGISTERS):
            with m.If(self.reset_sve):
                m.d.sync += z[index].eq(0)
            for name, port in z_ports.items():
                mask = z_masks[name]
                with m.Elif(port.en & (port.addr == index)):
                    m.d.sync += z[index].eq((z[index] & ~mask) | (port.data.as_value() & mask))
        for index in range(P_REGISTERS):
            with m.If(self.reset_sve):
                m.d.sync += p[index].eq(0)
            for port in (self.p_write_load, self.p_write):
                with m.Elif(port.en & (port.addr == index)):
                    m.d.sync += p[index].eq((p[index] & ~port.lanes)
                                            | (port.data & port.lanes))
        with m.If(self.reset_sve):
            m.d.sync += ffr.eq(0)
        return m
