"""The general-register operands of an instruction, and the CPU's side of issuing it.

The engine holds no general registers: the CPU reads the registers an instruction names
(:func:`scalar_sources`, in template order) and sends their values with the word; a scalar
result comes back and the CPU writes it to :func:`scalar_destination`. :func:`read_operands` and
:func:`write_result` are that CPU side, the one implementation every CPU of zatile uses (the
straight-line CPU, the kernel model's threads, the testbench's scalar file, the host CPU).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import MutableSequence, Protocol

from zatile.sw.arch.constants import MASK64
from zatile.sw.arch.isa.forms import Decoded
from zatile.sw.arch.isa.syntax import register_operands
from zatile.sw.arch.isa.table import decode

__all__ = ["ScalarRegister", "GeneralRegisters", "scalar_sources", "scalar_destination",
           "sources_of", "destination_of", "operand_values", "read_operands", "write_result"]


@dataclass(frozen=True)
class ScalarRegister:
    """A general-purpose register operand of a decoded instruction.

    Attributes
    ----------
    field : str
        The field that names it (``rn``, ``rm``, ``rs``, ...).
    number : int
        Register number 0-31 (slice selectors are already offset: ``w12`` is 12).
    is_sp : bool
        Number 31 means the stack pointer here.
    is_zero : bool
        Number 31 means the zero register here.
    width : int
        64 for X operands, 32 for W operands.
    """

    field: str
    number: int
    is_sp: bool
    is_zero: bool
    width: int

    @property
    def name(self) -> str:
        """``sp``, ``xzr`` or ``x<n>`` (the 64-bit register behind a W view)."""
        if self.is_sp:
            return "sp"
        return "xzr" if self.is_zero else f"x{self.number}"


def _scalar_registers(decoded: Decoded) -> list[ScalarRegister]:
    """The general-register operands, each field once (CLASTA names ``Rdn`` twice)."""
    registers, seen = [], set()
    for operand in register_operands(decoded.form):
        if operand.field in seen:
            continue
        seen.add(operand.field)
        kind = operand.kind
        number = decoded.fields[operand.field] + (12 if kind == "w12" else 0)
        registers.append(ScalarRegister(
            operand.field, number, is_sp=number == 31 and kind in ("xsp", "wsp"),
            is_zero=number == 31 and kind not in ("xsp", "wsp", "w12"),
            width=32 if kind in ("w", "wsp", "w12") else 64))
    return registers


def scalar_sources(decoded: Decoded) -> tuple[ScalarRegister, ...]:
    """The general registers an instruction reads, in operand order (derived from the table).

    The destination is one of them when the form reads it too (``params["reads_destination"]``:
    INCD Xdn, CLASTB Wdn, ...).
    """
    destination = decoded.form.destination
    if decoded.form.params.get("reads_destination"):
        return tuple(_scalar_registers(decoded))
    return tuple(r for r in _scalar_registers(decoded) if r.field != destination)


def scalar_destination(decoded: Decoded) -> ScalarRegister | None:
    """The general register an instruction writes, if any."""
    destination = decoded.form.destination
    if destination is None:
        return None
    return next(r for r in _scalar_registers(decoded) if r.field == destination)


@lru_cache(maxsize=4096)
def _access(word: int) -> tuple[tuple[ScalarRegister, ...], ScalarRegister | None]:
    decoded = decode(word)
    if decoded is None:
        return (), None
    return scalar_sources(decoded), scalar_destination(decoded)


class GeneralRegisters(Protocol):
    """What a CPU exposes for issuing: X0-X30 and SP."""

    x: MutableSequence[int]
    sp: int


def operand_values(word: int, values: dict[str, int]) -> tuple[int, ...]:
    """The operand values of ``word`` from values given per operand field (``{"rn": addr}``).

    Fields not given read as zero; W operands are truncated to 32 bits.
    """
    return tuple(values.get(register.field, 0) & ((1 << register.width) - 1)
                 for register in _access(word)[0])


def read_operands(word: int, registers: GeneralRegisters) -> tuple[int, ...]:
    """The values of the general registers ``word`` reads, in :func:`scalar_sources` order.

    W operands are the low 32 bits; the zero register reads 0. A word outside the table reads
    nothing (the engine will report it UNDEF).
    """
    values = []
    for register in _access(word)[0]:
        if register.is_zero:
            value = 0
        elif register.is_sp:
            value = registers.sp
        else:
            value = int(registers.x[register.number])
        values.append(value & ((1 << register.width) - 1))
    return tuple(values)


def write_result(word: int, scalar: int | None, registers: GeneralRegisters) -> None:
    """Write an instruction's scalar result to its destination register, if it has one.

    A destination of XZR discards the value; call this only for an instruction that completed.
    """
    destination = _access(word)[1]
    if destination is None or destination.is_zero or scalar is None:
        return
    if destination.is_sp:
        registers.sp = scalar & MASK64
    else:
        registers.x[destination.number] = scalar & MASK64


def destination_of(word: int) -> ScalarRegister | None:
    """The general register ``word`` writes with its scalar result, if any."""
    return _access(word)[1]


def sources_of(word: int) -> tuple[ScalarRegister, ...]:
    """The general registers ``word`` reads (empty for a word outside the table)."""
    return _access(word)[0]
