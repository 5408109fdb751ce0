"""What every execution unit of the streaming vector unit takes and gives.

An execution unit is a component with an ``op`` stream in (:func:`VectorOpLayout`) and a
``result`` stream out (:func:`VectorResultLayout`), one result per op, in order, after any number
of cycles; its class attribute ``OPS`` lists the operations it performs. The engine reads the
registers the form names and puts them at fixed places of the payload:

======================  ==================================================================
payload field           the register it holds
======================  ==================================================================
``first``               ``Zdn``, else ``Zn``, else ``Vdn``, else ``Vn``
``second``              ``Zm``, else ``Vm``
``third``               ``Zda``, else ``Za``, else ``Zn+1`` (modulo 32) of a ``pairs`` form
``governing``           ``Pg``, else ``Pv``
``pn``                  ``Pn``, else ``Pdn``
``pm``                  ``Pm``, else ``Pdm``
``rn``, ``rm``, ``rdn``  the general registers of those fields (XZR read as 0)
======================  ==================================================================

P values are clear beyond the effective SVL; ``svl_mask`` has one bit per byte inside it and
``svl_log2`` is log2 of the SVL in bytes; ``fpcr`` is FPCR. A result writes the bytes ``vector_lanes`` of the Z
destination (``Zdn``, ``Zda``, ``Vd``, ``Vdn`` or ``Zd``), the bits ``predicate_lanes`` of the P
destination (``Pd``, ``Pdn`` or ``Pdm``), and carries the general-register result ``scalar`` and
the flags ``nzcv`` (the engine reports them for the forms that have them).
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out

from zatile.sw.arch.config import EngineConfig

from zatile.hw._common import ConfigComponent, max_bytes, row_layout
from zatile.hw.decoder import DecodedLayout

__all__ = ["VectorOpLayout", "VectorResultLayout", "VectorExecutionUnit", "ELEMENT_SIZES",
           "ChunkSteps", "chunk_steps", "is_last_chunk", "chunk_part", "chunk_registers",
           "element_starts", "active_bytes", "predicate_test", "extend", "saturate",
           "partitioned_add", "per_size"]

#: log2 of the element sizes in bytes.
ELEMENT_SIZES = (0, 1, 2, 3)


def VectorOpLayout(config: EngineConfig) -> data.StructLayout:
    """The ``op`` payload: the decoded instruction and its register operands (module
    documentation)."""
    maxb = max_bytes(config)
    row = row_layout(config)
    return data.StructLayout({
        "decoded": DecodedLayout, "first": row, "second": row, "third": row,
        "governing": maxb, "pn": maxb, "pm": maxb, "rn": 64, "rm": 64, "rdn": 64,
        "svl_mask": maxb, "svl_log2": range(16), "fpcr": 32})


def VectorResultLayout(config: EngineConfig) -> data.StructLayout:
    """The ``result`` payload: ``vector`` and the bytes of it to write (``vector_lanes``, zero
    when the instruction writes no Z register), ``predicate`` and the bits of it to write
    (``predicate_lanes``), ``scalar``, ``nzcv``, and the FPSR cumulative exception bits the
    instruction raised (``fpsr_flags``, FPSR bits 7-0, for the CPU to OR into FPSR)."""
    maxb = max_bytes(config)
    return data.StructLayout({
        "vector": row_layout(config), "vector_lanes": maxb, "predicate": maxb,
        "predicate_lanes": maxb, "scalar": 64, "nzcv": 4, "fpsr_flags": 8})


class VectorExecutionUnit(ConfigComponent):
    """The ports every execution unit (and the vector unit as a whole) has: ``op``, an
    ``In(stream.Signature(VectorOpLayout))``, and ``result``, an
    ``Out(stream.Signature(VectorResultLayout))`` with one transfer per ``op`` transfer, in
    order. A subclass lists the operations it performs in ``OPS``.

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    """

    #: The operations the unit performs (:class:`zatile.hw.decoder.Op` members).
    OPS: tuple = ()

    def __init__(self, config: EngineConfig):
        super().__init__(config, {
            "op": In(stream.Signature(VectorOpLayout(config))),
            "result": Out(stream.Signature(VectorResultLayout(config))),
        })


def element_starts(log2: int, maxb: int) -> Const:
    """One bit per byte, set at the first byte of each element of ``2^log2`` bytes."""
    return Cat(Const(b % (1 << log2) == 0) for b in range(maxb))


def active_bytes(predicate: Value, log2: int, maxb: int) -> Value:
    """One bit per byte: the predicate bit of the byte's element (elements of ``2^log2``
    bytes; an element is active when the bit at its first byte is set)."""
    return Cat(predicate[b & ~((1 << log2) - 1)] for b in range(maxb))


def predicate_test(mask: Value, result: Value) -> Value:
    """PredTest over the bits set in ``mask``: N the first is set in ``result``, Z none is,
    C the last is not, V 0 (as ``Cat(V, C, Z, N)``)."""
    width = len(mask)
    before = [Const(0)]             # some mask bit below position e
    for e in range(1, width):
        before.append(before[-1] | mask[e - 1])
    after = [Const(0)] * width      # some mask bit above position e
    for e in range(width - 2, -1, -1):
        after[e] = after[e + 1] | mask[e + 1]
    first = Cat(*(result[e] & mask[e] & ~before[e] for e in range(width))).any()
    last = Cat(*(result[e] & mask[e] & ~after[e] for e in range(width))).any()
    return Cat(Const(0, 1), ~last, ~(result & mask).any(), first)


def extend(value: Value, signed_: Value | bool, width: int) -> Value:
    """``value`` sign- (when ``signed_``) or zero-extended to ``width`` bits, as signed."""
    top = value[-1] & signed_ if not isinstance(signed_, bool) else (value[-1] if signed_ else 0)
    return Cat(value, Value.cast(top).replicate(width - len(value))).as_signed()


def saturate(value: Value, bits: int, signed_: bool) -> Value:
    """``SatQ`` of a signed ``value`` to ``bits`` bits."""
    low = -(1 << (bits - 1)) if signed_ else 0
    high = (1 << (bits - 1)) - 1 if signed_ else (1 << bits) - 1
    return Mux(value < low, Const(low, bits + 1)[:bits],
               Mux(value > high, Const(high, bits + 1)[:bits], value[:bits]))


@dataclass(frozen=True)
class ChunkSteps:
    """The sequencing :func:`chunk_steps` gives a unit: ``chunk``, the index of the chunk of
    the result it makes this cycle; ``step``, high when it makes one; ``last``, high on the last
    chunk inside the effective SVL."""

    chunk: Signal
    step: Signal
    last: Signal


def chunk_steps(m: Module, unit: VectorExecutionUnit, chunk_bytes: int) -> ChunkSteps:
    """Sequencing of an execution ``unit`` that makes its result ``chunk_bytes`` bytes per cycle
    from an op held on its stream (valid, payload stable) until ``op.ready``.

    A chunk is made whenever the op is valid and the result registers are free or being taken;
    ``op.ready`` rises with the last chunk inside the SVL (``svl_mask``) and ``result.valid`` the
    cycle after, until the result is taken. An instruction therefore takes ``SVL / 8 /
    chunk_bytes`` cycles, plus one for the result; with one chunk per vector, the result
    leaves the cycle after the op.
    """
    chunks = len(unit.op.payload.svl_mask) // chunk_bytes
    chunk = Signal(range(max(chunks, 2)), name="chunk")
    step, last = Signal(name="chunk_step"), Signal(name="last_chunk")
    m.d.comb += [step.eq(unit.op.valid & (~unit.result.valid | unit.result.ready)),
                 last.eq(is_last_chunk(unit.op.payload.svl_mask, chunk, chunk_bytes)),
                 unit.op.ready.eq(step & last)]
    with m.If(step):
        m.d.sync += chunk.eq(Mux(last, 0, chunk + 1))
    with m.If(unit.result.ready):
        m.d.sync += unit.result.valid.eq(0)
    with m.If(step & last):
        m.d.sync += unit.result.valid.eq(1)
    return ChunkSteps(chunk, step, last)


def is_last_chunk(svl_mask: Value, chunk: Value, chunk_bytes: int) -> Value:
    """Whether chunk ``chunk`` (of ``chunk_bytes`` bytes) is the last inside the SVL whose
    bytes ``svl_mask`` marks."""
    inside = Cat(svl_mask[k] for k in range(0, len(svl_mask), chunk_bytes))
    return ~Cat(inside, Const(0, 1)).bit_select(chunk + 1, 1)


def chunk_part(value, chunk: Value, chunks: int) -> Value:
    """The part of a whole-register ``value`` (a Z or P value, or one bit per byte) in chunk
    ``chunk`` of ``chunks``."""
    value = Value.cast(value)
    return value.word_select(chunk, len(value) // chunks)


def chunk_registers(m: Module, steps: ChunkSteps, chunks: int, **values: Value) -> dict:
    """Registers that gather a result chunk by chunk: ``values`` maps a name to the part of it
    the unit makes this cycle (chunk ``steps.chunk`` of ``chunks``; a value as wide as one
    part), which loads on each step. Returns each whole register, ``chunks`` times as wide, by
    name."""
    gathered = {}
    for name, value in values.items():
        parts = [Signal(len(value), name=f"{name}_{k}") for k in range(chunks)]
        for k, part in enumerate(parts):
            with m.If(steps.step & (steps.chunk == k)):
                m.d.sync += part.eq(value)
        gathered[name] = Cat(*parts)
    return gathered


def partitioned_add(m: Module, name: str, x: Value, y: Value, starts: Value,
                    carry_in: Value) -> tuple[Value, Value]:
    """``x + y + carry_in`` of each element of ``x`` and ``y`` (as wide as each other, whole
    bytes), the carries kept inside the elements: the shared adder of the units that serve every
    element size with one datapath.

    One adder of ``9/8`` the operands' width: below each byte a spacer bit. Inside an element the
    spacer's operand bits are 1 and 0, passing the carry of the byte below on; at the first byte
    of an element (a bit of ``starts``, one per byte) both are that byte's bit of ``carry_in``
    (one bit per byte, or one bit for every element), so the element starts with that carry and
    the spacer's sum bit is the carry out of the element below.

    Returns
    -------
    sums : Value
        The sums modulo each element's size.
    carries : Value
        One bit per byte, the carry out of the element at its last byte (meaningless at others).
    """
    count = len(x) // 8
    carry_in = Value.cast(carry_in)
    if len(carry_in) == 1:
        carry_in = carry_in.replicate(count)
    spacers_x = Signal(count, name=f"{name}_spacers_x")
    spacers_y = Signal(count, name=f"{name}_spacers_y")
    total = Signal(9 * count + 1, name=f"{name}_total")
    sums, carries = Signal(len(x), name=name), Signal(count, name=f"{name}_carries")
    m.d.comb += [
        spacers_x.eq(~starts | carry_in), spacers_y.eq(starts & carry_in),
        total.eq(Cat(Cat(spacers_x[k], x[8 * k:8 * k + 8]) for k in range(count))
                 + Cat(Cat(spacers_y[k], y[8 * k:8 * k + 8]) for k in range(count))),
        sums.eq(Cat(total[9 * k + 1:9 * k + 9] for k in range(count))),
        carries.eq(Cat(total[9 * k + 9] for k in range(count))),
    ]
    return sums, carries


def per_size(m: Module, esize_log2: Value, name: str, width: int, value_of,
             sizes=ELEMENT_SIZES) -> Signal:
    """A signal of ``width`` bits that is ``value_of(log2)`` for the element size
    ``2^esize_log2`` bytes, one of ``sizes`` (log2 of the sizes in bytes; 0 for another)."""
    value = Signal(width, name=name)
    with m.Switch(esize_log2):
        for log2 in sizes:
            with m.Case(log2):
                m.d.comb += value.eq(value_of(log2))
    return value
