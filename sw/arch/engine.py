"""The synchronous engine interface: what an SME engine is to the CPU that drives it.

An SME engine, as a CPU sees it, is an **issue port** and a handful of **control registers**:

* :meth:`Engine.issue` takes one instruction word plus the values of the general-purpose
  registers it reads (:func:`~zatile.sw.arch.isa.read_operands`) and returns a :class:`Result`;
  a scalar result (RDSVL, MRS SVCR, ADDSVL ...) comes back in ``Result.scalar`` for the CPU to
  write to its own register (:func:`~zatile.sw.arch.isa.write_result`). The engine never sees
  the CPU's register file, so nothing of one thread's X registers can reach another's through
  it.
* Control registers: :attr:`Engine.sme_enabled` (CPACR_EL1.SMEN: when False every engine
  instruction traps with SMTC 0 and changes nothing), :attr:`Engine.smcr_len` (SMCR_EL1.LEN)
  and the effective :attr:`Engine.svl` it selects, :attr:`Engine.fpcr` / :attr:`Engine.fpsr`,
  a read-only :attr:`Engine.svcr`, and :attr:`Engine.id_aa64smfr0`.
* :attr:`Engine.za_context` selects one of the ``config.za_contexts`` physical ZA contexts
  (a ZA array with its own PSTATE.ZA; PSTATE.SM, Z, P, FPSR and FPCR are shared): the kernel's
  virtual ZA contexts (docs/abi.md, "Virtual ZA contexts") keep several threads' ZA resident.
* :meth:`Engine.read_memory` / :meth:`Engine.write_memory` go through the same memory port
  as the engine's loads and stores.
* **Run-ahead** (docs/architecture.md, "The host runs ahead"): an engine whose
  :attr:`Engine.streams` is True overlaps instructions it is given with :meth:`Engine.stream`
  (the CPU does not wait for their results) and :meth:`Engine.drain` waits for them. The CPU streams only an
  instruction it has shown will end OK (legal now, its memory mapped) and that returns nothing
  but FPSR bits; every other instruction goes through :meth:`Engine.issue`, which completes the
  streamed ones first (results are in program order).

The backends implement it: the reference model in-process (:class:`zatile.sim.engine.ModelEngine`)
and the Verilog under cocotb (:class:`zatile.tb.engine.RtlEngine`); the kernel model and every
other CPU use only this interface, so they run unchanged on either.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import Enum
from typing import Sequence

from zatile.sw.arch.config import EngineConfig

__all__ = ["Status", "Result", "Engine", "StreamError"]


class Status(Enum):
    """How an instruction ended (the engine's result status; the RTL encodes it in this order)."""

    OK = "ok"
    #: UNDEFINED: outside the table, a feature the configuration lacks, or SVE at SM=0.
    UNDEF = "undef"
    #: An SME trap (ESR_ELx.EC=0x1D); :attr:`Result.smtc` says which.
    SME_TRAP = "sme_trap"
    #: A data abort: an active element touched unmapped memory.
    FAULT = "fault"


@dataclass(frozen=True)
class Result:
    """The outcome of one instruction.

    Attributes
    ----------
    status : Status
    smtc : int or None
        SME trap code (:class:`~zatile.sw.arch.constants.Smtc`) for :attr:`Status.SME_TRAP`.
    fault_address : int or None
        First faulting byte for :attr:`Status.FAULT`.
    scalar : int or None
        The 64-bit value written to a general register (MRS SVCR, RDSVL, RDVL, CNTx, ADDSVL,
        ADDSPL), also when the destination is XZR and the value is discarded.
    form : str or None
        Name of the decoded form (:data:`~zatile.sw.arch.isa.FORMS_BY_NAME`), None for UNDEF.
    nzcv : int or None
        The new PSTATE.NZCV (bit 3 N, 2 Z, 1 C, 0 V) of an instruction that sets the flags
        (``Trait.SETS_FLAGS``), for the CPU to write; None for any other.
    fpsr_flags : int or None
        The cumulative FPSR exception bits (:class:`~zatile.sw.arch.constants.FpsrFlag`) a
        floating-point instruction (``Trait.FP_FLAGS``) raised, 0 when it raised none, for the
        CPU to OR into FPSR; None for an instruction that raises no floating-point exception.
    """

    status: Status
    smtc: int | None = None
    fault_address: int | None = None
    scalar: int | None = None
    form: str | None = None
    nzcv: int | None = None
    fpsr_flags: int | None = None


class StreamError(RuntimeError):
    """A streamed instruction did not end OK: the engine broke the promise the CPU relied on
    (a simulator or engine bug, never a guest program's doing)."""


class Engine(ABC):
    """One SME engine behind its issue port.

    Parameters
    ----------
    config : EngineConfig
        What the engine implements.
    """

    def __init__(self, config: EngineConfig):
        self._config = config
        self._streamed_fpsr = 0
        self._za_context = 0

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
            The values of the registers it reads, in :func:`~zatile.sw.arch.isa.scalar_sources` order.

        Raises
        ------
        ValueError
            If the number of operands does not match the instruction.
        """

    @property
    def streams(self) -> bool:
        """Whether :meth:`stream` overlaps instructions (False: it is :meth:`issue`, and a CPU
        gains nothing by proving an instruction streamable)."""
        return False

    def stream(self, word: int, operands: Sequence[int] = ()) -> None:
        """Issue an instruction without waiting for its result.

        The caller promises that it ends OK and writes no general register, NZCV or SVCR; the
        FPSR bits it raises are returned by the next :meth:`drain`.

        Raises
        ------
        StreamError
            If the instruction did not end OK (here, or from :meth:`drain` on an engine that
            overlaps).
        """
        result = self.issue(word, operands)
        if result.status is not Status.OK:
            raise StreamError(f"streamed instruction 0x{word:08x} ended {result.status.value}")
        self._streamed_fpsr |= result.fpsr_flags or 0

    def drain(self) -> int:
        """Wait for every streamed instruction; return the FPSR exception bits they raised
        (ORed; 0 for none) and forget them.

        Raises
        ------
        StreamError
            If a streamed instruction did not end OK.
        """
        flags, self._streamed_fpsr = self._streamed_fpsr, 0
        return flags

    @property
    def cycles(self) -> int | None:
        """Clock cycles the engine has run so far, or None for an engine without a clock (the
        model): what the kernel's statistics measure its own instructions in."""
        return None

    @property
    def za_context(self) -> int:
        """The physical ZA context instructions act on, 0 to ``config.za_contexts`` - 1 (0 out
        of reset).

        Each context is a ZA array and its PSTATE.ZA (the ZA bit of :attr:`svcr`); the others
        keep theirs unchanged while one is selected. A change of the effective SVL zeroes every
        context's ZA and keeps their PSTATE.ZA. Select only with nothing streamed.

        Raises
        ------
        ValueError
            If the context does not exist.
        """
        return self._za_context

    @za_context.setter
    def za_context(self, context: int) -> None:
        if not isinstance(context, int) or not 0 <= context < self._config.za_contexts:
            raise ValueError(f"ZA context {context!r} does not exist (the engine has "
                             f"{self._config.za_contexts})")
        if context != self._za_context:
            self._select_za_context(context)
            self._za_context = context

    @abstractmethod
    def _select_za_context(self, context: int) -> None:
        """Make ``context`` (another existing one) the one instructions act on."""

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
