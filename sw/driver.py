"""The synchronous engine interface the CPU side (the kernel model) drives.

An SME engine, as a CPU sees it, is an **issue port** and a handful of **control registers**:

* :meth:`Engine.issue` takes one instruction word plus the values of the general-purpose
  registers it reads (the CPU decodes far enough to know which, :func:`scalar_operands`) and
  returns a :class:`~sim.model.Result`; a scalar result (RDSVL, MRS SVCR, ADDSVL ...) comes back
  in ``Result.scalar`` for the CPU to write to its own register (:func:`scalar_destination_of`).
  The engine never sees the CPU's register file, so nothing of one thread's X registers can
  reach another's through it.
* Control registers: :attr:`Engine.sme_enabled` (CPACR_EL1.SMEN: when False every engine
  instruction traps with SMTC 0 and changes nothing), :attr:`Engine.smcr_len` (SMCR_EL1.LEN)
  and the effective :attr:`Engine.svl` it selects, :attr:`Engine.fpcr` / :attr:`Engine.fpsr`,
  a read-only :attr:`Engine.svcr`, and :attr:`Engine.id_aa64smfr0`.
* :meth:`Engine.read_memory` / :meth:`Engine.write_memory` go through the same memory port
  as the engine's loads and stores.

Backends: :class:`ModelEngine` runs the reference model in-process. A backend for the RTL
engine under cocotb implements the same methods; the kernel model (:mod:`sw.abi`) uses only
this interface, so it runs unchanged on either.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import lru_cache
from typing import Sequence

from sim.model import ReferenceModel, Result, Status
from sim.state import ArchState, Memory
from sw.config import EngineConfig
from sw.isa import ScalarRegister, decode, scalar_destination, scalar_sources

__all__ = ["Engine", "ModelEngine", "Result", "Status", "scalar_operands",
           "scalar_destination_of"]

MASK64 = (1 << 64) - 1


@lru_cache(maxsize=4096)
def _scalar_access(word: int) -> tuple[tuple[ScalarRegister, ...], ScalarRegister | None]:
    decoded = decode(word)
    if decoded is None:
        return (), None
    return scalar_sources(decoded), scalar_destination(decoded)


def scalar_operands(word: int, x: Sequence[int], sp: int) -> tuple[int, ...]:
    """The operand values ``word`` reads, taken from a CPU's X0-X30 and SP.

    W operands are the low 32 bits; the zero register reads 0. A word outside the
    instruction table reads nothing (the engine will report it UNDEF).
    """
    values = []
    for register in _scalar_access(word)[0]:
        if register.is_zero:
            value = 0
        elif register.is_sp:
            value = sp
        else:
            value = int(x[register.number])
        values.append(value & ((1 << register.width) - 1))
    return tuple(values)


def scalar_destination_of(word: int) -> ScalarRegister | None:
    """The general register ``word`` writes with ``Result.scalar``, if any."""
    return _scalar_access(word)[1]


class Engine(ABC):
    """One SME engine behind its issue port.

    Parameters
    ----------
    config : EngineConfig
        What the engine implements.
    """

    def __init__(self, config: EngineConfig):
        self._config = config

    @property
    def config(self) -> EngineConfig:
        return self._config

    @property
    def id_aa64smfr0(self) -> int:
        """ID_AA64SMFR0_EL1 as the engine reports it."""
        return self._config.id_aa64smfr0

    @abstractmethod
    def issue(self, word: int, operands: Sequence[int] = ()) -> Result:
        """Execute one instruction.

        The operand values are used for this instruction only: a backend keeps no general
        register state from one issue to the next, so nothing of one thread's registers can
        reach another thread's instructions.

        Parameters
        ----------
        word : int
            The 32-bit instruction.
        operands : sequence of int
            The values of the registers it reads, in :func:`sw.isa.scalar_sources` order.

        Raises
        ------
        ValueError
            If the number of operands does not match the instruction.
        """

    @property
    @abstractmethod
    def sme_enabled(self) -> bool:
        """CPACR_EL1.SMEN for EL0: False makes every instruction trap with SMTC 0."""

    @sme_enabled.setter
    @abstractmethod
    def sme_enabled(self, enabled: bool) -> None: ...

    @property
    @abstractmethod
    def smcr_len(self) -> int:
        """SMCR_EL1.LEN: requests an SVL of (LEN+1)*128 bits."""

    @smcr_len.setter
    @abstractmethod
    def smcr_len(self, length: int) -> None: ...

    @property
    @abstractmethod
    def svl(self) -> int:
        """The effective streaming vector length in bits selected by :attr:`smcr_len`."""

    @property
    @abstractmethod
    def fpcr(self) -> int: ...

    @fpcr.setter
    @abstractmethod
    def fpcr(self, value: int) -> None: ...

    @property
    @abstractmethod
    def fpsr(self) -> int: ...

    @fpsr.setter
    @abstractmethod
    def fpsr(self, value: int) -> None: ...

    @property
    @abstractmethod
    def svcr(self) -> int:
        """SVCR (bit 0 SM, bit 1 ZA); changed only by the engine's own instructions."""

    @abstractmethod
    def read_memory(self, address: int, length: int) -> bytes:
        """Read through the engine's memory port (raises ``MemoryFault``)."""

    @abstractmethod
    def write_memory(self, address: int, data: bytes) -> None:
        """Write through the engine's memory port (raises ``MemoryFault``)."""


class ModelEngine(Engine):
    """The reference model as an engine, in-process.

    Parameters
    ----------
    config : EngineConfig
        What the engine implements.
    memory : Memory, optional
        What the memory port is connected to (the kernel model passes its
        :class:`~sw.abi.mm.SystemBus`); a fresh empty memory by default.

    Notes
    -----
    The engine comes out of reset with SME access disabled and SMCR.LEN selecting the
    smallest supported SVL; whoever drives it enables it.
    """

    def __init__(self, config: EngineConfig, memory: Memory | None = None):
        super().__init__(config)
        state = ArchState(svl=config.min_svl, memory=memory if memory is not None else Memory())
        self._model = ReferenceModel(config, state, sme_enabled=False)
        self._smcr_len = config.min_svl // 128 - 1

    def issue(self, word: int, operands: Sequence[int] = ()) -> Result:
        sources = _scalar_access(word)[0]
        if len(operands) != len(sources):
            raise ValueError(f"instruction 0x{word:08x} reads {len(sources)} register(s), "
                             f"not {len(operands)}")
        state = self._model.state
        for register, value in zip(sources, operands):
            if register.is_zero:
                continue
            if register.is_sp:
                state.sp = value & MASK64
            else:
                state.x[register.number] = value & MASK64
        try:
            return self._model.execute(word)
        finally:
            # The model's register file only carries this one instruction's operands.
            state.x[:] = 0
            state.sp = 0

    @property
    def sme_enabled(self) -> bool:
        return self._model.sme_enabled

    @sme_enabled.setter
    def sme_enabled(self, enabled: bool) -> None:
        self._model.sme_enabled = bool(enabled)

    @property
    def smcr_len(self) -> int:
        return self._smcr_len

    @smcr_len.setter
    def smcr_len(self, length: int) -> None:
        svl = self._config.effective_svl_for_len(length)
        self._smcr_len = length
        self._model.set_svl(svl)

    @property
    def svl(self) -> int:
        return self._model.state.svl

    @property
    def fpcr(self) -> int:
        return self._model.state.fpcr

    @fpcr.setter
    def fpcr(self, value: int) -> None:
        self._model.state.fpcr = value & 0xFFFFFFFF

    @property
    def fpsr(self) -> int:
        return self._model.state.fpsr

    @fpsr.setter
    def fpsr(self, value: int) -> None:
        self._model.state.fpsr = value & 0xFFFFFFFF

    @property
    def svcr(self) -> int:
        return self._model.state.svcr

    def read_memory(self, address: int, length: int) -> bytes:
        return bytes(self._model.state.memory.read(address, length))

    def write_memory(self, address: int, data: bytes) -> None:
        self._model.state.memory.write(address, data)
