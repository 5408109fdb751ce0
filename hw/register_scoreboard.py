"""What a routed load must wait for in the execution queue (docs/architecture.md, "Decoupled
execution").

The engine numbers the instructions of its execution queue as it routes them (``route_index``,
modulo ``2**index_width``). For every Z and P register the scoreboard remembers the youngest
routed execution-queue instruction that uses it (reads or writes it), for every P register the
youngest that writes it, and the youngest memory instruction; an entry is forgotten when that
instruction completes. A load routed to the load queue gets two waits:

* before it **starts** (reads memory and its governing predicate): the youngest of the writer of
  its governing predicate and the memory instruction (stores, tile-slice and structure accesses
  are ordered with loads);
* before it **writes** its destination register: the user of that register (a pending read of
  the register it overwrites, or an older write of it).

Everything else a load could conflict with is older than it and complete before its result is
taken, which the engine's in-order results already ensure (an execution-queue instruction never
runs before every older load has written its register).

Up to ``config.issue_lanes`` instructions are routed per cycle, in lane
order: a load's lookup also sees the execution-queue instructions of the lanes before it in the
same cycle (younger than anything in the tables), and the tables take the youngest lane's
number for a register several lanes use.
"""

from __future__ import annotations

from amaranth import Array, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from zatile.sw.arch.config import EngineConfig

from zatile.hw._common import ConfigComponent
from zatile.hw.load_queue import InstructionWaitLayout, index_width
from zatile.hw.regfile import P_REGISTERS, Z_REGISTERS

__all__ = ["RouteLayout", "LoadLookupLayout", "WaitLayout", "RegisterScoreboard"]


def RouteLayout(config: EngineConfig) -> data.StructLayout:
    """One lane's execution-queue instruction being routed: whether there is one, its number,
    the Z and P registers it uses (one bit each), the P registers it writes, whether it
    accesses memory."""
    return data.StructLayout({"route": 1, "index": index_width(config), "z_uses": Z_REGISTERS,
                              "p_uses": P_REGISTERS, "p_writes": P_REGISTERS, "memory": 1})


#: One lane's load being routed: its destination (Z, or P when ``predicate``), and its
#: governing predicate ``pg`` when ``predicated``.
LoadLookupLayout = data.StructLayout({"dest": 5, "predicate": 1, "pg": 4, "predicated": 1})


def WaitLayout(config: EngineConfig) -> data.StructLayout:
    """Whether a load must wait, and for which execution-queue instruction: before it starts,
    and before it writes its register."""
    wait = InstructionWaitLayout(config)
    return data.StructLayout({"start": wait, "write": wait})


class RegisterScoreboard(ConfigComponent):
    """The youngest execution-queue users and writers of each register (module documentation).

    Parameters
    ----------
    config : EngineConfig
        ``queue_depth`` sizes the instruction numbers.

    Attributes
    ----------
    routes : Signal(ArrayLayout(RouteLayout, issue_lanes)), in
        The execution-queue instructions routed this cycle, by lane.
    complete : Signal(1), in
        The execution-queue instruction numbered ``x_completed`` completes.
    x_completed : Signal(index_width), in
        How many execution-queue instructions have completed (modulo).
    loads : Signal(ArrayLayout(LoadLookupLayout, issue_lanes)), in
        The load of each lane (meaningful for the lanes that route a load).
    waits : Signal(ArrayLayout(WaitLayout, issue_lanes)), out
        What each lane's load must wait for, before it starts and before it writes.
    """

    def __init__(self, config: EngineConfig):
        width, lanes = index_width(config), config.issue_lanes
        super().__init__(config, {
            "routes": In(data.ArrayLayout(RouteLayout(config), lanes)),
            "complete": In(1), "x_completed": In(width),
            "loads": In(data.ArrayLayout(LoadLookupLayout, lanes)),
            "waits": Out(data.ArrayLayout(WaitLayout(config), lanes)),
        })

    def elaborate(self, platform):
        m = Module()
        width = index_width(self._config)
        tables = {}
        for name, count in (("z_user", Z_REGISTERS), ("p_user", P_REGISTERS),
                            ("p_writer", P_REGISTERS), ("memory", 1)):
            index = Array(Signal(width, name=f"{name}{n}_index") for n in range(count))
            valid = Signal(count, name=f"{name}_valid")
            for n in range(count):
                with m.If(self.complete & valid[n] & (index[n] == self.x_completed)):
                    m.d.sync += valid[n].eq(0)
                for route in self.routes:         # the youngest lane last: it wins
                    with m.If(route.route & _marks(route, name)[n]):
                        m.d.sync += [valid[n].eq(1), index[n].eq(route.index)]
            tables[name] = (index, valid)

        def entry(name, register):
            index, valid = tables[name]
            return valid.bit_select(register, 1), index[register]

        for lane, (load, wait) in enumerate(zip(self.loads, self.waits)):
            z_valid, z_index = entry("z_user", load.dest)
            p_valid, p_index = entry("p_user", load.dest[:4])
            writer_valid, writer_index = entry("p_writer", load.pg)
            # An execution-queue instruction of an earlier lane is younger than the tables.
            earlier = self.routes[:lane]
            write_valid, write_index = self._youngest(m, [
                (Mux(load.predicate, p_valid, z_valid), Mux(load.predicate, p_index, z_index)),
            ], [(route, route.route & Mux(load.predicate,
                                          route.p_uses.bit_select(load.dest[:4], 1),
                                          route.z_uses.bit_select(load.dest, 1)))
                for route in earlier])
            start_valid, start_index = self._youngest(m, [
                (writer_valid & load.predicated, writer_index),
                entry("memory", 0),
            ], [(route, route.route & ((load.predicated & route.p_writes.bit_select(load.pg, 1))
                                       | route.memory))
                for route in earlier])
            m.d.comb += [wait.write.valid.eq(write_valid), wait.write.index.eq(write_index),
                         wait.start.valid.eq(start_valid), wait.start.index.eq(start_index)]
        return m

    def _youngest(self, m, candidates, same_cycle):
        """The youngest of ``candidates`` (valid, index) from the tables, unless one of the
        ``same_cycle`` (route, conflict) routes conflicts: the last such lane then."""
        width = index_width(self._config)
        youngest_valid, youngest_index = candidates[0]
        for valid, index in candidates[1:]:
            # The youngest: the one furthest from the oldest instruction not yet completed.
            later = Signal()
            m.d.comb += later.eq(((index - self.x_completed)[:width])
                                 > ((youngest_index - self.x_completed)[:width]))
            take = valid & (~youngest_valid | later)
            youngest_index = Mux(take, index, youngest_index)
            youngest_valid = youngest_valid | valid
        for route, conflict in same_cycle:
            youngest_index = Mux(conflict, route.index, youngest_index)
            youngest_valid = youngest_valid | conflict
        return youngest_valid, youngest_index


def _marks(route, table: str):
    """The registers a routed instruction puts in ``table``."""
    return {"z_user": route.z_uses, "p_user": route.p_uses, "p_writer": route.p_writes,
            "memory": route.memory}[table]
