"""The streaming-SVE register file: Z0-Z31 (max_svl bits each), P0-P15 and FFR (max_svl/8 bits).

Byte ``e`` of a Z register is bits [8e+7:8e]; predicate bit ``b`` is bit ``b`` of a P register
(bit ``b % 8`` of byte ``b // 8`` in ``sim.state``). Bits above the effective SVL are kept but
not architectural.

Z lives in memories with asynchronous reads, which FPGA tools map to distributed (LUT) RAM: one
memory per write port (the executed instructions', the load queue's), each read through a copy
per read port, and two flip-flops per byte of each register saying whether the byte was written
since the last PSTATE.SM change (``reset_sve``, which thereby clears all of Z in one cycle) and
which memory holds its latest value (a live-value table). A read takes each byte from that
memory, or zero. Measured with ``synth_ecp5`` at SVL 128 when this was chosen: with Z in
flip-flops the file took 40,816 LUT4 and 4,352 flip-flops, this way 13,432 LUT4, 512
TRELLIS_DPR16X4 (16×4-bit LUT RAMs) and 1,280 flip-flops. P and FFR, a sixteenth of the bits,
stay flip-flops.
"""

from __future__ import annotations

from amaranth import Array, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from zatile.sw.arch.config import EngineConfig

from zatile.hw._common import ConfigComponent, max_bytes, row_layout

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
        one register through both ports in one cycle; if it did, the load's write would win
        (for Z, on the bytes it writes).
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
        p = Array(Signal(maxb, name=f"p{n}") for n in range(P_REGISTERS))
        ffr = Signal(maxb)
        m.d.comb += self.ffr.eq(ffr)
        self._z_file(m, maxb)
        for port in (self.p_read_a, self.p_read_b, self.p_read_c, self.p_read_load,
                     self.p_debug):
            m.d.comb += port.data.eq(p[port.addr])
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

    def _z_file(self, m: Module, maxb: int) -> None:
        """Z: a memory per write port, and per byte of each register whether it was written
        since ``reset_sve`` and whether by the load port (module documentation)."""
        read_ports = (self.z_read_a, self.z_read_b, self.z_read_c, self.z_debug)
        write_ports = {"execute": self.z_write, "load": self.z_write_load}
        reads = {}
        for name, port in write_ports.items():
            memory = m.submodules[f"z_{name}"] = Memory(shape=8 * maxb, depth=Z_REGISTERS,
                                                        init=[])
            write = memory.write_port(granularity=8)
            m.d.comb += [write.addr.eq(port.addr), write.data.eq(port.data),
                         write.en.eq(Mux(port.en, port.lanes, 0))]
            reads[name] = [memory.read_port(domain="comb") for _ in read_ports]
            for read, port in zip(reads[name], read_ports):
                m.d.comb += read.addr.eq(port.addr)
        written = Array(Signal(maxb, name=f"z{n}_written") for n in range(Z_REGISTERS))
        by_load = Array(Signal(maxb, name=f"z{n}_by_load") for n in range(Z_REGISTERS))
        for index in range(Z_REGISTERS):
            executed, loaded = (Mux(port.en & (port.addr == index), port.lanes, 0)
                                for port in write_ports.values())
            with m.If(self.reset_sve):
                m.d.sync += written[index].eq(0)
            with m.Else():
                m.d.sync += [written[index].eq(written[index] | executed | loaded),
                             by_load[index].eq((by_load[index] & ~executed) | loaded)]
        for k, port in enumerate(read_ports):
            live, loaded = written[port.addr], by_load[port.addr]
            execute_data, load_data = reads["execute"][k].data, reads["load"][k].data
            m.d.comb += port.data.eq(Cat(
                Mux(live[b], Mux(loaded[b], load_data.word_select(b, 8),
                                 execute_data.word_select(b, 8)), 0)
                for b in range(maxb)))
