"""User programs for the kernel model: executables made of engine instructions and CPU steps.

A thread's program is a sequence of *steps*, each occupying 4 bytes of text so that a PC is a
real address (it is saved in signal frames, core dumps and ptrace registers):

* an ``int`` is an engine instruction word, and a ``str`` is engine assembly (assembled once,
  when the :class:`Executable` is built); the CPU issues it to the engine;
* :class:`Mov`, :class:`Msr`, :class:`Mrs`, :class:`Svc`, :class:`Syscall`, :class:`Ret`,
  :class:`Brk` are the few CPU instructions the ABI needs (register moves, TPIDR/TPIDR2/FPCR/
  FPSR access, system calls, return through X30, a breakpoint: a synchronous SIGTRAP that,
  unlike a system call, leaves PSTATE.SM alone);
* :class:`Call` runs Python as the thread's own user code (the analogue of C code between the
  instructions): it sees only what user code sees, through :class:`~sw.abi.kernel.UserContext`.

Executables are laid out at load time: function ``f`` at a text address, ``Symbol("f")``
operands resolved to it, the data segment at :data:`~sw.abi.mm.DATA_BASE`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping, Sequence, Union

from zatile.sw.arch.asm import assemble_line

__all__ = ["Symbol", "Mov", "Msr", "Mrs", "Svc", "Syscall", "Ret", "Brk", "Call", "Step",
           "Executable", "SYSTEM_REGISTERS"]

#: CPU system registers a program may move to and from X registers.
SYSTEM_REGISTERS = ("TPIDR_EL0", "TPIDR2_EL0", "FPCR", "FPSR")


@dataclass(frozen=True)
class Symbol:
    """The address of a function of the executable (or of ``"data"``), plus an offset."""

    name: str
    offset: int = 0


Value = Union[int, Symbol]


@dataclass(frozen=True)
class Mov:
    """``MOV Xd, #value`` (any 64-bit value or a symbol address)."""

    register: int
    value: Value

    def __post_init__(self) -> None:
        if not 0 <= self.register <= 30:
            raise ValueError(f"Mov needs a register X0-X30, not {self.register!r}")


@dataclass(frozen=True)
class Msr:
    """``MSR <sysreg>, Xt``."""

    system_register: str
    register: int

    def __post_init__(self) -> None:
        if self.system_register not in SYSTEM_REGISTERS:
            raise ValueError(f"unknown system register {self.system_register!r}; "
                             f"known: {', '.join(SYSTEM_REGISTERS)}")


@dataclass(frozen=True)
class Mrs:
    """``MRS Xt, <sysreg>``."""

    register: int
    system_register: str

    def __post_init__(self) -> None:
        if self.system_register not in SYSTEM_REGISTERS:
            raise ValueError(f"unknown system register {self.system_register!r}; "
                             f"known: {', '.join(SYSTEM_REGISTERS)}")


@dataclass(frozen=True)
class Svc:
    """``SVC #0``: the system call numbered X8 with arguments X0-X5; the result lands in X0."""


@dataclass(frozen=True)
class Syscall:
    """``MOV X8, #number; MOV X0.., #args; SVC #0`` as one step (X8 and X0-X5 are written)."""

    number: int
    args: tuple[Value, ...] = ()

    def __post_init__(self) -> None:
        if len(self.args) > 6:
            raise ValueError(f"a system call takes at most 6 arguments, not {len(self.args)}")


@dataclass(frozen=True)
class Ret:
    """``RET``: branch to X30."""


@dataclass(frozen=True)
class Brk:
    """``BRK #imm``: SIGTRAP (TRAP_BRKPT) with the PC still at this instruction."""

    immediate: int = 0


@dataclass(frozen=True)
class Call:
    """User code written in Python: ``function(context)`` with a :class:`UserContext`.

    The PC already points at the next step when ``function`` runs; it may redirect it.
    """

    function: Callable[..., object]


Step = Union[int, str, Mov, Msr, Mrs, Svc, Syscall, Ret, Brk, Call]
_STEP_TYPES = (int, Mov, Msr, Mrs, Svc, Syscall, Ret, Brk, Call)


def _assembled(step: Step) -> Step:
    if isinstance(step, str):
        return assemble_line(step)
    if isinstance(step, bool) or not isinstance(step, _STEP_TYPES):
        raise TypeError(f"not a program step: {step!r}")
    if isinstance(step, int) and not 0 <= step <= 0xFFFFFFFF:
        raise ValueError(f"instruction word must be 32-bit, not {step!r}")
    return step


@dataclass(frozen=True)
class Executable:
    """A program file: named functions (``main`` is the entry point) and a data segment.

    Parameters
    ----------
    functions : mapping of str to sequence of Step
        Code; assembly text is assembled here (raising ``AsmError`` for a bad line).
    data : bytes
        Initial contents of the data segment.
    data_size : int
        Size of the data segment (at least ``len(data)``; the rest is zero).
    """

    functions: Mapping[str, Sequence[Step]]
    data: bytes = b""
    data_size: int = 0
    _steps: Mapping[str, tuple[Step, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if "main" not in self.functions:
            raise ValueError(f"an executable needs a 'main' function, has {sorted(self.functions)}")
        if "data" in self.functions:
            raise ValueError("'data' names the data segment and cannot be a function")
        steps = {name: tuple(_assembled(step) for step in body)
                 for name, body in self.functions.items()}
        object.__setattr__(self, "_steps", MappingProxyType(steps))
        object.__setattr__(self, "data_size", max(self.data_size, len(self.data)))

    @property
    def steps(self) -> Mapping[str, tuple[Step, ...]]:
        """Each function's steps, assembly already turned into words."""
        return self._steps
