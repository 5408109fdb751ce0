"""The streaming-SVE register file: Z0-Z31 (max_svl bits each), P0-P15 and FFR (max_svl/8 bits).

Byte ``e`` of a Z register is bits [8e+7:8e]; predicate bit ``b`` is bit ``b`` of a P register
(bit ``b % 8`` of byte ``b // 8`` in ``sim.state``). Bits above the effective SVL are kept but
not architectural.

Z lives in block RAM, read at the falling edge of the clock (``hw/_common.py``,
``falling_edge_reads``): to the rest of the engine the reads are combinational, but their
addresses must come from registers. There is one memory per write port (the executed
instructions', the load queue's), each read through a copy per read port. A port writes its
value XOR the other memory's word at that address (read through one more copy), so a
register's value is the XOR of the two memories, whichever port wrote each byte last, without a
table of latest writers. One flip-flop per register says whether it was written since the last
PSTATE.SM change (``reset_sve``, which thereby clears all of Z in one cycle): a register that
was not reads as zero, and its first write writes all of it, zeros beyond its enabled bytes.

Measured with ``synth_ecp5`` at SVL 128: with Z in flip-flops the file took 40,816 LUT4 and
4,352 flip-flops; with two memories and a per-byte table of latest writers, 13,432 LUT4, 512
TRELLIS_DPR16X4 (16×4-bit LUT RAMs) and 1,280 flip-flops; this way in LUT RAM (combinational
reads) 3,689 LUT4 and 512 TRELLIS_DPR16X4 (``synth_ecp5 -nowidelut``), which the whole SoC
places as about 3,800 LUT places; in block RAM 2,898 LUT4 and 32 DP16KD (of the LFE5U-85F's
208). P and FFR, a sixteenth of the bits, stay flip-flops.
"""

from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from zatile.sw.arch.config import EngineConfig

from zatile.hw._common import (ConfigComponent, block_ram, byte_mask, falling_edge_reads,
                               max_bytes, row_layout)

__all__ = ["ReadPortSignature", "WritePortSignature", "RegisterFile"]

Z_REGISTERS = 32
P_REGISTERS = 16


def ReadPortSignature(addr_width: int, data_shape) -> wiring.Signature:
    """A read port, from the reader's side: ``addr`` out, ``data`` in, combinationally to the
    reader (Z is read at the falling edge: module documentation)."""
    return wiring.Signature({"addr": Out(addr_width), "data": In(data_shape)})


def WritePortSignature(addr_width: int, data_shape, enables: int) -> wiring.Signature:
    """A write port, from the writer's side: ``en``, ``addr``, ``data`` and per-lane ``lanes``.

    ``lanes`` holds one enable per byte (Z) or per bit (P) of ``data``.
    """
    return wiring.Signature({"en": Out(1), "addr": Out(addr_width), "data": Out(data_shape),
                             "lanes": Out(enables)})


class RegisterFile(ConfigComponent):
    """Z, P and FFR: three read ports for Z, four for P, two write ports each.

    Parameters
    ----------
    config : EngineConfig
        ``max_svl`` sizes the registers.

    Attributes
    ----------
    z_read_a, z_read_b, z_read_c : In(ReadPortSignature(5, row))
        Z reads, at the falling edge (their addresses must come from registers)
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
            "ffr": Out(maxb),
        })

    def elaborate(self, platform):
        m = Module()
        maxb = max_bytes(self._config)
        p = Array(Signal(maxb, name=f"p{n}") for n in range(P_REGISTERS))
        ffr = Signal(maxb)
        m.d.comb += self.ffr.eq(ffr)
        self._z_file(m, maxb)
        for port in (self.p_read_a, self.p_read_b, self.p_read_c, self.p_read_load):
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
        """Z: a memory per write port holding its writes XOR the other memory, and one bit per
        register saying whether it was written since ``reset_sve`` (module documentation)."""
        read_ports = (self.z_read_a, self.z_read_b, self.z_read_c)
        execute, load = self.z_write, self.z_write_load
        live = Signal(Z_REGISTERS)
        # Both ports on one register: the load's write takes the execute port's bytes along.
        collide = execute.en & load.en & (execute.addr == load.addr)
        load_lanes = Signal(maxb)
        load_data = Signal(8 * maxb)
        m.d.comb += [
            load_lanes.eq(load.lanes | Mux(collide, execute.lanes, 0)),
            load_data.eq(Cat(Mux(load.lanes[b], Value.cast(load.data).word_select(b, 8),
                                 Value.cast(execute.data).word_select(b, 8))
                             for b in range(maxb))),
        ]
        writes = {"execute": (execute.en & ~collide, execute.addr, execute.lanes,
                              Value.cast(execute.data)),
                  "load": (load.en, load.addr, load_lanes, load_data)}
        read_domain = falling_edge_reads(m)
        memories = {name: block_ram(8 * maxb, Z_REGISTERS) for name in writes}
        reads = {}
        for name, memory in memories.items():
            m.submodules[f"z_{name}"] = memory
            reads[name] = [memory.read_port(domain=read_domain)
                           for _ in (*read_ports, "writer")]
            for read, port in zip(reads[name], read_ports):
                m.d.comb += read.addr.eq(port.addr)
        for name, (enable, address, lanes, data_) in writes.items():
            other = "load" if name == "execute" else "execute"
            other_value = reads[other][-1]          # the other memory at this write's address
            m.d.comb += other_value.addr.eq(address)
            # A register's first write since the reset writes all of it, zeros beyond `lanes`.
            whole = ~live.bit_select(address, 1)
            write = memories[name].write_port(granularity=8)
            m.d.comb += [
                write.addr.eq(address),
                write.data.eq(Mux(whole, data_ & byte_mask(lanes), data_) ^ other_value.data),
                write.en.eq(Mux(enable, Mux(whole, Const(-1, maxb), lanes), 0)),
            ]
        with m.If(self.reset_sve):
            m.d.sync += live.eq(0)
        with m.Else():
            m.d.sync += live.eq(live | Mux(execute.en, Const(1, Z_REGISTERS) << execute.addr, 0)
                                | Mux(load.en, Const(1, Z_REGISTERS) << load.addr, 0))
        for k, port in enumerate(read_ports):
            m.d.comb += port.data.eq(Mux(live.bit_select(port.addr, 1),
                                         reads["execute"][k].data ^ reads["load"][k].data, 0))
