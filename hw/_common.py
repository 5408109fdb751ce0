"""Helpers shared by the hw components (argument checks, byte-lane utilities, pipeline control)."""

from __future__ import annotations

from amaranth import Cat, ClockDomain, ClockSignal, Const, Signal, Value
from amaranth.lib import data, enum, wiring
from amaranth.lib.memory import Memory

from zatile.sw.arch.config import EngineConfig

__all__ = ["CheckedComponent", "ConfigComponent", "check_config", "row_layout", "byte_mask",
           "max_bytes", "pipeline_advance", "derived_enum", "block_ram", "falling_edge_reads"]


def derived_enum(name: str, members: list[str], shape: int) -> type:
    """An Amaranth enum whose members (values 0, 1, ...) are generated from a software fact (the
    instruction table, the result statuses), with an explicit shape."""
    namespace = enum.EnumType.__prepare__(name, (enum.Enum,))
    for value, member in enumerate(members):
        namespace[member] = value
    return enum.EnumType(name, (enum.Enum,), namespace, shape=shape)


class CheckedComponent(wiring.Component):
    """A component that checks its constructor's arguments before it exists.

    A subclass defines ``check_arguments``, a static method taking the constructor's arguments and
    raising ``TypeError``/``ValueError`` that quotes a bad one. It runs in ``__new__``, before
    Amaranth records the object as an elaboratable that must be used, so a rejected component
    leaves no "created but never used" warning behind; ``__init__`` may then trust its arguments.
    """

    def __new__(cls, *args, **kwargs):
        cls.check_arguments(*args, **kwargs)
        return super().__new__(cls, *args, src_loc_at=1, **kwargs)

    @staticmethod
    def check_arguments(*args, **kwargs) -> None:
        raise NotImplementedError("a CheckedComponent defines check_arguments")


def check_config(config: object) -> None:
    """Raise ``TypeError`` quoting ``config`` unless it is an :class:`EngineConfig`."""
    if not isinstance(config, EngineConfig):
        raise TypeError(f"config must be an EngineConfig, not {config!r}")


class ConfigComponent(CheckedComponent):
    """A component built for one :class:`EngineConfig`: its check, and the ``config`` property.

    A subclass calls ``super().__init__(config, signature)``; one that takes more arguments
    overrides ``check_arguments`` and calls :func:`check_config` from it.
    """

    check_arguments = staticmethod(check_config)

    def __init__(self, config: EngineConfig, signature):
        self._config = config
        super().__init__(signature)

    @property
    def config(self) -> EngineConfig:
        """The configuration the component was built for."""
        return self._config


def max_bytes(config: EngineConfig) -> int:
    """MAXB, the largest SVL in bytes: rows and bytes per row of ZA, bytes of a Z register."""
    return config.max_svl // 8


def row_layout(config: EngineConfig) -> data.ArrayLayout:
    """A ZA row or Z register at the largest SVL: MAXB bytes, byte ``e`` in bits [8e+7:8e]."""
    return data.ArrayLayout(8, max_bytes(config))


def byte_mask(enables: Value) -> Value:
    """Expand one enable bit per byte into a bit mask (each bit replicated 8 times).

    ``enables`` should be a signal (or a slice of one): every output bit slices it, and slicing
    a compound expression makes the netlist builder emit the whole expression again per slice.
    """
    enables = Value.cast(enables)
    if len(enables) == 0:
        return Const(0, 0)
    return Cat(*(enables[i].replicate(8) for i in range(len(enables))))


def pipeline_advance(m, sink, source, stages: list[str]) -> Signal:
    """Valid bits and stall control of an in-order pipeline from stream ``sink`` to ``source``.

    One valid bit per named stage (``<stage>_valid``) moves from ``sink.valid`` to
    ``source.valid`` while the returned ``advance`` is high: whenever the output register is
    empty or being taken. ``sink.ready`` is ``advance``; every stage register of the caller's
    datapath must load under ``m.If(advance)`` too.
    """
    advance = Signal()
    m.d.comb += [advance.eq(~source.valid | source.ready), sink.ready.eq(advance)]
    chain = [sink.valid, *(Signal(name=f"{stage}_valid") for stage in stages), source.valid]
    with m.If(advance):
        m.d.sync += [later.eq(earlier) for earlier, later in zip(chain, chain[1:])]
    return advance


#: Attributes asking Yosys to map a memory to block RAM (``ram_style``, which its
#: ``memory_libmap`` reads), where it would otherwise choose LUT RAM for a shallow one.
BLOCK_RAM = {"ram_style": "block"}


def block_ram(shape, depth: int):
    """A memory of ``shape`` × ``depth``, initially zero, that synthesis maps to block RAM
    (read it through :func:`falling_edge_reads`' domain: block RAM reads at a clock edge)."""
    return Memory(shape=shape, depth=depth, init=[], attrs=BLOCK_RAM)


def falling_edge_reads(m) -> str:
    """Add to module ``m`` a clock domain on the falling edge of ``sync``, and return its name,
    for the read ports of :func:`block_ram` memories.

    Block RAM reads at a clock edge. Read at the falling edge, a memory behaves as one with
    combinational reads to the logic of the rising edge: the address, set after the rising
    edge, is taken half a cycle later, and the data is there before the next rising edge; a
    write at the rising edge is read at the falling edge after it. The price is timing: the
    address logic and the logic after the read get half a cycle each. The addresses must
    therefore come from registers of the ``sync`` domain or memories read combinationally: not
    from another memory read at the falling edge (both take their addresses at the same edge,
    so the second would take the first's previous data), nor from inputs of the design that a
    testbench changes at a falling edge.
    """
    domain = ClockDomain("falling_edge_reads", clk_edge="neg", reset_less=True, local=True)
    m.domains += domain
    m.d.comb += domain.clk.eq(ClockSignal("sync"))
    return domain.name
