"""What a routed load must wait for in the execution queue (docs/architecture.md, "Decoupled
execution").

The engine numbers the instructions of its execution queue as it routes them (``route_index``,
modulo ``2**index_width``). For every Z and P register the scoreboard remembers the youngest
routed execution-queue instruction that uses it (reads or writes it), for every P register the
youngest that writes it, and the youngest memory instruction; an entry is forgotten when that
instruction completes. A load routed to the load queue must wait for the youngest of:

* the user of its destination register (a pending read of the register it overwrites, or an
  older write of it);
* the writer of its governing predicate;
* the memory instruction (stores, tile-slice and structure accesses are ordered with loads).

Everything else a load could conflict with is older than it and complete before its result is
taken, which the engine's in-order results already ensure (an execution-queue instruction never
runs before every older load has its result).
"""

from __future__ import annotations

from amaranth import Array, Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from zatile.sw.arch.config import EngineConfig

from zatile.hw._common import ConfigComponent
from zatile.hw.load_queue import index_width
from zatile.hw.regfile import P_REGISTERS, Z_REGISTERS

__all__ = ["RegisterScoreboard"]


class RegisterScoreboard(ConfigComponent):
    """The youngest execution-queue users and writers of each register (module documentation).

    Parameters
    ----------
    config : EngineConfig
        ``queue_depth`` sizes the instruction numbers.

    Attributes
    ----------
    route : Signal(1), in
        An execution-queue instruction is routed, numbered ``route_index``, using the Z
        registers ``z_uses`` and the P registers ``p_uses`` (one bit each), writing the P
        registers ``p_writes``, accessing memory if ``memory``.
    complete : Signal(1), in
        The execution-queue instruction numbered ``x_completed`` completes.
    x_completed : Signal(index_width), in
        How many execution-queue instructions have completed (modulo).
    load_dest, load_predicate, load_pg, load_predicated : in
        The load being routed: its destination (Z, or P when ``load_predicate``), and its
        governing predicate when ``load_predicated``.
    wait_valid, wait_index : out
        Whether the load must wait, and for which instruction.
    """

    def __init__(self, config: EngineConfig):
        width = index_width(config)
        super().__init__(config, {
            "route": In(1), "route_index": In(width), "z_uses": In(Z_REGISTERS),
            "p_uses": In(P_REGISTERS), "p_writes": In(P_REGISTERS), "memory": In(1),
            "complete": In(1), "x_completed": In(width),
            "load_dest": In(5), "load_predicate": In(1), "load_pg": In(4),
            "load_predicated": In(1),
            "wait_valid": Out(1), "wait_index": Out(width),
        })

    def elaborate(self, platform):
        m = Module()
        width = index_width(self._config)
        tables = {}
        for name, count, marks in (("z_user", Z_REGISTERS, self.z_uses),
                                   ("p_user", P_REGISTERS, self.p_uses),
                                   ("p_writer", P_REGISTERS, self.p_writes),
                                   ("memory", 1, self.memory)):
            index = Array(Signal(width, name=f"{name}{n}_index") for n in range(count))
            valid = Signal(count, name=f"{name}_valid")
            for n in range(count):
                with m.If(self.complete & valid[n] & (index[n] == self.x_completed)):
                    m.d.sync += valid[n].eq(0)
                with m.If(self.route & marks[n]):
                    m.d.sync += [valid[n].eq(1), index[n].eq(self.route_index)]
            tables[name] = (index, valid)

        def entry(name, register):
            index, valid = tables[name]
            return valid.bit_select(register, 1), index[register]

        z_valid, z_index = entry("z_user", self.load_dest)
        p_valid, p_index = entry("p_user", self.load_dest[:4])
        writer_valid, writer_index = entry("p_writer", self.load_pg)
        candidates = [
            (Mux(self.load_predicate, p_valid, z_valid), Mux(self.load_predicate, p_index, z_index)),
            (writer_valid & self.load_predicated, writer_index),
            entry("memory", 0),
        ]
        # The youngest: the one furthest from the oldest instruction not yet completed.
        youngest_valid, youngest_index = candidates[0]
        for valid, index in candidates[1:]:
            later = Signal()
            m.d.comb += later.eq(((index - self.x_completed)[:width])
                                 > ((youngest_index - self.x_completed)[:width]))
            take = valid & (~youngest_valid | later)
            youngest_index = Mux(take, index, youngest_index)
            youngest_valid = youngest_valid | valid
        m.d.comb += [self.wait_valid.eq(youngest_valid), self.wait_index.eq(youngest_index)]
        return m
