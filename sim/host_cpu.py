"""The host CPU: Unicorn runs the scalar A64, FP and Advanced SIMD code; the engine runs SME.

:class:`HostCpu` is an AArch64 CPU for compiled programs. Unicorn (QEMU's translator, Cortex-A72
model: honest ID registers, no SVE, no SME) executes everything it knows; every word it cannot
execute arrives as an undefined-instruction exception (``UC_HOOK_INTR`` intno 1, PC at the
word) and, when the instruction table decodes it (SME, streaming SVE, SMSTART/SMSTOP, MRS/MSR
SVCR), goes to the engine through the :class:`~zatile.sw.arch.engine.Engine` interface, so any
backend can sit behind the same program. ``SVC #0`` (intno 2) goes to the syscall handler.

Architectural coupling with the engine (docs/isa.md, "PSTATE and SVCR"):

* **Operands and results**: the engine gets the X registers the word reads
  (:func:`~zatile.sw.arch.isa.read_operands`) and its scalar result is written back
  (:func:`~zatile.sw.arch.isa.write_result`); NZCV from WHILELT/PTRUES and friends becomes the
  CPU's NZCV; the FPSR exception bits an engine instruction raised are ORed into the CPU's
  FPSR, which the CPU owns.
* **FPCR** written by ``MSR FPCR`` reaches the engine before its next instruction. This CPU
  keeps the value (:attr:`HostCpu.fpcr`) and answers ``MRS FPCR`` with it, because the A72
  drops FZ16, which an SME CPU implements.
* **V = low 128 bits of Z.** At PSTATE.SM=0 the V registers are the CPU's (the engine has no
  non-streaming SVE, so it cannot see Z). At SM=1 Z is the engine's; the CPU may still run the
  SIMD&FP instructions that are legal in streaming mode (scalar FP, FP loads/stores, FMOV).
  Before the first such instruction after an engine instruction, V0-V31 are read from the
  engine; the V registers such instructions write (:func:`simd_written_registers`) are written
  to the engine's Z, upper bits zero, before the next engine instruction; the other Z registers
  keep their upper bits. The transfers are the engine's own ``STR Z``/``LDR Z`` issued
  at EL1 against a scratch buffer only EL1 reaches (:class:`GuestMemory`).
* **SM changes** (SMSTART/SMSTOP, MSR SVCR, :meth:`HostCpu.end_streaming_mode`) zero the V
  registers and set FPSR to ``0x0800009F`` (ResetSVEState).
* **No FEAT_SME_FA64**: at SM=1 an Advanced SIMD instruction (vector, scalar, structure
  load/store) raises SIGILL. How: while SM=1, and only then, a ``UC_HOOK_CODE`` covers all of
  memory and classifies each instruction word (cached per address); it is added on SM 0→1 and
  removed on SM 1→0, with Unicorn's translation cache flushed each time so that translated
  blocks pick it up or drop it. Cost: nothing at SM=0; at SM=1 one Python call per host
  instruction (about 1-2 µs) plus a retranslation of the hot code after each mode change.
* **FEAT_FP16 and FEAT_BF16** come with FEAT_SME, and Unicorn's A72 lacks them: their scalar
  instructions (``fmov h0, #-2.5``, ``fadd h0, h1, h2``, ``bfcvt h0, s0``: what clang emits for
  ``_Float16`` and ``__bf16`` code) are performed by this CPU with the exact FP reference
  (:mod:`zatile.sim.host_fp`: FPCR rounding, FZ16/FZ, DN, FPSR flags). Their Advanced SIMD
  instructions are not, and raise SIGILL.
* **System registers**: TPIDR2_EL0 is a register of this CPU; ``MRS`` of ID_AA64PFR0/PFR1/
  ZFR0/SMFR0 answers what Linux shows on an SME-only CPU (SVE absent, SME present, SMFR0 from
  the engine); other EL1 registers are undefined at EL0 (Unicorn itself runs at EL1).

Guest memory is Unicorn's; only what the process mapped through :meth:`HostCpu.map` is
reachable, by the CPU and by the engine's loads and stores alike. A bad access by either stops
the CPU with a :class:`Stop` of SIGSEGV, never a host exception.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Callable

import numpy as np
from unicorn import (UC_ARCH_ARM64, UC_HOOK_BLOCK, UC_HOOK_CODE, UC_HOOK_INSN, UC_HOOK_INTR,
                     UC_HOOK_MEM_INVALID, UC_HOOK_MEM_READ, UC_HOOK_MEM_WRITE, UC_MEM_WRITE,
                     UC_MEM_WRITE_PROT, UC_MEM_WRITE_UNMAPPED, UC_MODE_ARM, UC_PROT_EXEC,
                     UC_PROT_READ, UC_PROT_WRITE, Uc, UcError)
from unicorn import arm64_const as a64

from zatile.sim.footprint import FootprintProbe, Span
from zatile.sim.host_fp import host_instruction
from zatile.sim.model.core import admission
from zatile.sim.state import Memory, MemoryFault
from zatile.sw.arch.asm import assemble_line
from zatile.sw.arch.constants import FPSR_RESET_ON_SM_CHANGE, MASK64, SVCR_SM, SVCR_ZA
from zatile.sw.arch.engine import Engine, Status
from zatile.sw.arch.isa import (Form, Trait, decode, destination_of, operand_values,
                                read_operands, write_result)

__all__ = ["PROT_READ", "PROT_WRITE", "PROT_EXEC", "SCRATCH_BASE", "GuestMemory", "StopKind",
           "Stop", "HostCpu", "simd_class", "simd_written_registers", "SimdClass"]

PROT_READ, PROT_WRITE, PROT_EXEC = 1, 2, 4
_UC_PROT = {PROT_READ: UC_PROT_READ, PROT_WRITE: UC_PROT_WRITE, PROT_EXEC: UC_PROT_EXEC}

#: The CPU's private scratch buffer for V<->Z transfers: above every user address, reachable
#: by the engine only while the CPU issues at EL1.
SCRATCH_BASE = 0xFFFF_0000_0000_0000
_SCRATCH_SIZE = 256      # one Z register at the largest SVL

_PAGE = 0x1000

# Linux's view of the ID registers on an SME-only CPU: PFR0 EL0/EL1 AArch64, FP and AdvSIMD
# present, SVE (bits 35:32) absent; PFR1 SME (bits 27:24) = 1; ZFR0 = 0 (no SVE).
_ID_AA64PFR0 = 0x0000_0000_0000_0011
_ID_AA64PFR1 = 0x0000_0000_0100_0000
_ID_AA64ZFR0 = 0

_X_REGISTERS = tuple([a64.UC_ARM64_REG_X0 + n for n in range(29)]
                     + [a64.UC_ARM64_REG_X29, a64.UC_ARM64_REG_X30])
_V_REGISTERS = tuple(a64.UC_ARM64_REG_V0 + n for n in range(32))
#: The FPCR bits of an SME CPU without FEAT_AFP or FP trapping: AHP, DN, FZ, RMode, FZ16.
_FPCR_IMPLEMENTED = 0x07C8_0000

_STR_Z = tuple(assemble_line(f"str z{n}, [x0]") for n in range(32))
_LDR_Z = tuple(assemble_line(f"ldr z{n}, [x0]") for n in range(32))
_SMSTART_SM, _SMSTOP_SM = assemble_line("smstart sm"), assemble_line("smstop sm")
_SMSTART_ZA, _SMSTOP_ZA = assemble_line("smstart za"), assemble_line("smstop za")
_STR_ZA, _LDR_ZA = assemble_line("str za[w12, 0], [x0]"), assemble_line("ldr za[w12, 0], [x0]")


@dataclass(frozen=True)
class _EngineForm:
    """What the CPU needs to know of an instruction of the table: its PSTATE class, whether it
    writes SVCR or memory, and whether it may be streamed (:meth:`Engine.stream`: it returns
    nothing but FPSR bits, no general register, NZCV or SVCR) and then accesses memory."""

    form: Form
    writes_svcr: bool
    stores: bool
    streamable: bool
    accesses_memory: bool


@lru_cache(maxsize=8192)
def _engine_form(word: int) -> _EngineForm | None:
    """The :class:`_EngineForm` of an instruction of the table, None for any other word."""
    decoded = decode(word)
    if decoded is None:
        return None
    traits = decoded.form.traits
    writes_svcr = Trait.SVCR_WRITE in traits
    return _EngineForm(decoded.form, writes_svcr, Trait.STORE in traits,
                       destination_of(word) is None and Trait.SETS_FLAGS not in traits
                       and not writes_svcr, bool(traits & {Trait.LOAD, Trait.STORE}))


def _hull(bounds: tuple[int, int] | None, span: tuple[int, int]) -> tuple[int, int]:
    """The smallest range holding ``bounds`` (if any) and ``span``."""
    return span if bounds is None else (min(bounds[0], span[0]), max(bounds[1], span[1]))


class SimdClass(Enum):
    """What an instruction word is to the streaming-mode rules."""

    #: Not a SIMD&FP instruction.
    NONE = 0
    #: Legal in streaming mode and touches V registers (scalar FP, FP loads/stores, FMOV).
    LEGAL = 1
    #: Advanced SIMD: illegal in streaming mode without FEAT_SME_FA64.
    ILLEGAL = 2


def simd_class(word: int) -> SimdClass:
    """Classify an A64 word by its encoding group (Arm ARM C4.1, top-level decode).

    Data processing -- SIMD&FP (``op0[27:25] = 111``): bit 28 = 0 is Advanced SIMD vector or
    cryptographic, bit 28 = 1 with bit 30 = 1 is Advanced SIMD scalar -- illegal; bit 28 = 1
    with bit 30 = 0 is scalar floating point -- legal. Loads and stores with V = 1: the
    Advanced SIMD structure forms (``0x0011 00x``/``0x0011 01x``) are illegal, every other
    SIMD&FP register load/store is legal.
    """
    if (word >> 25) & 0b111 == 0b111:
        if not word & (1 << 28) or word & (1 << 30):
            return SimdClass.ILLEGAL
        return SimdClass.LEGAL
    if (word >> 25) & 0b101 == 0b100 and word & (1 << 26):
        if word & 0xBE00_0000 == 0x0C00_0000:
            return SimdClass.ILLEGAL
        return SimdClass.LEGAL
    return SimdClass.NONE


def simd_written_registers(word: int) -> tuple[int, ...]:
    """The V registers a SIMD&FP instruction legal in streaming mode writes (Arm ARM C4.1).

    Scalar floating point writes ``Rd`` except the compares (FCMP, FCCMP: NZCV only) and the
    conversions to a general register (FCVT* to integer or fixed point, FMOV Xd/Wd, FJCVTZS);
    a SIMD&FP load writes ``Rt`` (and ``Rt2`` for a pair); a store writes none.
    """
    rd = word & 0x1F
    if (word >> 25) & 0b111 == 0b111:
        if word & (1 << 24):                                   # 3-source
            return (rd,)
        if not word & (1 << 21):                               # fixed-point conversions
            return () if (word >> 16) & 0b111 in (0, 1) else (rd,)
        if (word >> 10) & 0b111111 == 0:                       # integer conversions
            return () if (word >> 16) & 0b111 in (0, 1, 4, 5, 6) else (rd,)
        if (word >> 10) & 0b1111 == 0b1000 or (word >> 10) & 0b11 == 0b01:   # FCMP, FCCMP
            return ()
        return (rd,)
    group = (word >> 27) & 0b111
    if group == 0b101:                                         # pairs
        return (rd, (word >> 10) & 0x1F) if word & (1 << 22) else ()
    if group == 0b011:                                         # literal loads
        return (rd,)
    return (rd,) if word & (1 << 22) else ()                   # single register


class GuestMemory(Memory):
    """The engine's memory port on a :class:`HostCpu`: the guest's own mappings (Unicorn's
    memory, with their permissions) and, at EL1 only, the CPU's scratch buffer."""

    def __init__(self, uc: Uc):
        super().__init__()
        self._uc = uc
        self._mappings: list[tuple[int, int, int]] = []     # (start, end, prot), sorted
        self._scratch = np.zeros(_SCRATCH_SIZE, np.uint8)
        self.privileged = False

    def _add(self, start: int, end: int, prot: int) -> None:
        if end <= start:
            return
        self._remove(start, end)
        self._mappings.append((start, end, prot))
        self._mappings.sort()

    def _remove(self, start: int, end: int) -> None:
        kept = []
        for low, high, prot in self._mappings:
            if high <= start or low >= end:
                kept.append((low, high, prot))
                continue
            if low < start:
                kept.append((low, start, prot))
            if high > end:
                kept.append((end, high, prot))
        self._mappings = sorted(kept)

    @property
    def mappings(self) -> tuple[tuple[int, int, int], ...]:
        """The mapped ranges: (start, end, PROT_* bits), in address order."""
        return tuple(self._mappings)

    def mapped(self, start: int, end: int) -> bool:
        """Whether any byte of ``[start, end)`` is mapped."""
        return any(low < end and start < high for low, high, _ in self._mappings)

    def ranges(self) -> list[tuple[int, int, bool]]:
        """(base, size, readable) of each mapping, in address order (never the scratch)."""
        return [(start, end - start, bool(prot & PROT_READ))
                for start, end, prot in self._mappings]

    @property
    def mapped_bytes(self) -> int:
        """The bytes of all mappings together (whether touched or not)."""
        return sum(end - start for start, end, _ in self._mappings)

    def covered(self, start: int, end: int) -> bool:
        """Whether every byte of ``[start, end)`` is mapped (with any protection)."""
        cursor = start
        for low, high, _ in self._mappings:
            if high <= cursor:
                continue
            if low > cursor:
                return False
            cursor = high
            if cursor >= end:
                return True
        return cursor >= end

    def _check(self, address: int, length: int, write: bool) -> None:
        if self.privileged and address >= SCRATCH_BASE:
            if address + length > SCRATCH_BASE + _SCRATCH_SIZE:
                raise MemoryFault(address, write)
            return
        needed = PROT_WRITE if write else PROT_READ
        cursor, end = address, address + length
        for low, high, prot in self._mappings:
            if high <= cursor:
                continue
            if low > cursor or not prot & needed:
                break
            cursor = high
            if cursor >= end:
                return
        raise MemoryFault(cursor, write)

    def check(self, address: int, length: int, write: bool = False) -> None:
        if length:
            self._check(address & MASK64, length, write)

    def read(self, address: int, length: int) -> np.ndarray:
        if length == 0:
            return np.zeros(0, np.uint8)
        self._check(address, length, False)
        if address >= SCRATCH_BASE:
            offset = address - SCRATCH_BASE
            return self._scratch[offset:offset + length].copy()
        return np.frombuffer(bytes(self._uc.mem_read(address, length)), np.uint8).copy()

    def write(self, address: int, payload) -> None:
        data = payload if isinstance(payload, np.ndarray) \
            else np.frombuffer(bytes(payload), np.uint8)
        if not data.size:
            return
        self._check(address, data.size, True)
        if address >= SCRATCH_BASE:
            offset = address - SCRATCH_BASE
            self._scratch[offset:offset + data.size] = data
            return
        self._uc.mem_write(address, data.astype(np.uint8, copy=False).tobytes())


class StopKind(Enum):
    """Why :meth:`HostCpu.run` returned."""

    #: The syscall handler asked to stop (exit, exit_group): :attr:`Stop.status`.
    EXIT = "exit"
    #: A synchronous signal the CPU raised: :attr:`Stop.signal`, :attr:`Stop.address`.
    SIGNAL = "signal"
    #: The instruction budget ran out.
    BUDGET = "budget"
    #: An ``SVC #0`` of a CPU told to stop at system calls (:meth:`HostCpu.stop_at_syscalls`);
    #: the PC is past it.
    SYSCALL = "syscall"


@dataclass(frozen=True)
class Stop:
    kind: StopKind
    status: int = 0
    signal: int = 0
    #: The faulting data address (SIGSEGV) or the instruction's address (SIGILL, SIGTRAP).
    address: int = 0
    detail: str = ""
    #: Whether a SIGSEGV came from a store (False for loads and instruction fetches).
    write: bool = False


SIGILL, SIGTRAP, SIGBUS, SIGSEGV = 4, 5, 7, 11


class _Registers:
    """X0-X30 and SP of the Unicorn CPU as :class:`~zatile.sw.arch.isa.GeneralRegisters`."""

    class _X:
        def __init__(self, uc: Uc):
            self._uc = uc

        def __getitem__(self, number: int) -> int:
            return self._uc.reg_read(_X_REGISTERS[number])

        def __setitem__(self, number: int, value: int) -> None:
            self._uc.reg_write(_X_REGISTERS[number], value & MASK64)

        def __len__(self) -> int:
            return 31

    def __init__(self, uc: Uc):
        self._uc = uc
        self.x = self._X(uc)

    @property
    def sp(self) -> int:
        return self._uc.reg_read(a64.UC_ARM64_REG_SP)

    @sp.setter
    def sp(self, value: int) -> None:
        self._uc.reg_write(a64.UC_ARM64_REG_SP, value & MASK64)


class _FpRegisters:
    """:class:`zatile.sim.host_fp.FpRegisters` on a :class:`HostCpu`'s registers (in streaming
    mode the code hook has already brought V up to date and marked the written ones)."""

    def __init__(self, cpu: "HostCpu"):
        self._cpu = cpu
        self._uc = cpu.uc

    def v(self, number: int) -> int:
        return self._uc.reg_read(_V_REGISTERS[number])

    def set_v(self, number: int, value: int) -> None:
        self._uc.reg_write(_V_REGISTERS[number], value)

    def x(self, number: int) -> int:
        return self._cpu.registers.x[number]

    def set_x(self, number: int, value: int) -> None:
        self._cpu.registers.x[number] = value

    @property
    def fpcr(self) -> int:
        return self._cpu.fpcr

    @property
    def fpsr(self) -> int:
        return self._cpu.fpsr

    @fpsr.setter
    def fpsr(self, value: int) -> None:
        self._cpu.fpsr = value

    @property
    def nzcv(self) -> int:
        return self._cpu.nzcv

    @nzcv.setter
    def nzcv(self, value: int) -> None:
        self._cpu.nzcv = value


@dataclass
class HostCpuStats:
    """Counters of one CPU: engine instructions by PSTATE class (``Requires``), V transfers, and
    the wall time spent waiting for the engine."""

    engine_instructions: int = 0
    engine_by_class: dict | None = None
    host_instructions: int = 0
    v_pulls: int = 0
    v_pushes: int = 0
    mode_changes: int = 0
    engine_seconds: float = 0.0
    #: Engine instructions streamed (issued without waiting for their results).
    engine_streamed: int = 0
    #: Times the CPU waited for streamed instructions (before an instruction with a result, a
    #: system call, FPSR, a stop, or a host access to memory they may still be using).
    engine_drains: int = 0

    def __post_init__(self) -> None:
        if self.engine_by_class is None:
            self.engine_by_class = {}


class HostCpu:
    """An AArch64 CPU on Unicorn with an SME engine behind its undefined-instruction trap.

    Parameters
    ----------
    engine_factory : callable
        Called once with the CPU's :class:`GuestMemory` (the engine's memory port) and returns
        the :class:`~zatile.sw.arch.engine.Engine`; the caller configures its SVL and enables it.
    syscall : callable, optional
        ``syscall(cpu)`` after an ``SVC #0`` (PC already past it); reads X8 and X0-X5 and
        writes X0 itself, or calls :meth:`stop`.
    count_instructions : bool
        Count host instructions (a Python call per translated block executed: slower).
    """

    def __init__(self, engine_factory: Callable[[Memory], Engine],
                 syscall: Callable[["HostCpu"], None] | None = None,
                 count_instructions: bool = False):
        self.uc = Uc(UC_ARCH_ARM64, UC_MODE_ARM)
        self.uc.ctl_set_cpu_model(a64.UC_CPU_ARM64_A72)
        self.memory = GuestMemory(self.uc)
        self.engine = engine_factory(self.memory)
        self.syscall = syscall
        #: Whether host instructions are counted.
        self.counting = count_instructions
        self.registers = _Registers(self.uc)
        self._fp_registers = _FpRegisters(self)
        self.stats = HostCpuStats()
        #: TPIDR2_EL0: a register of this CPU (Unicorn's A72 has none).
        self.tpidr2 = 0
        self._stop: Stop | None = None
        #: FPCR as the program sees it (Unicorn's copy lacks FZ16).
        self.fpcr = 0
        self._fpcr_sent: int | None = None
        self._v_stale = False          # the engine's Z holds newer low bits than the CPU's V
        self._v_dirty: set[int] = set()    # V registers the CPU wrote at SM=1 since the last push
        self._streaming_hook = None
        self._simd_classes: dict[int, tuple[SimdClass, tuple[int, ...]]] = {}
        self._pending_fault: tuple[int, bool] | None = None
        # Run-ahead (docs/architecture.md, "The host runs ahead"): instructions streamed and
        # not yet drained, the bounds of the bytes they may still access and of those they may
        # write ((low, high) or None), and the hook that watches the CPU's own accesses while
        # any may (installed on the first, removed when run() ends).
        self._streamed = 0
        self._touched: tuple[int, int] | None = None
        self._written: tuple[int, int] | None = None
        self._probe: FootprintProbe | None = None
        self._access_hook = None
        self.uc.hook_add(UC_HOOK_INTR, self._on_interrupt)
        self.uc.hook_add(UC_HOOK_INSN, self._on_system_register, None, 1, 0, a64.UC_ARM64_INS_MRS)
        self.uc.hook_add(UC_HOOK_INSN, self._on_system_register, None, 1, 0, a64.UC_ARM64_INS_MSR)
        self.uc.hook_add(UC_HOOK_MEM_INVALID, self._on_bad_access)
        if count_instructions:
            self.uc.hook_add(UC_HOOK_BLOCK, self._on_block)

    # ------------------------------------------------------------------ memory
    def map(self, address: int, size: int, prot: int) -> None:
        """Map ``size`` zero bytes at page-aligned ``address`` with ``PROT_*`` bits."""
        self.uc.mem_map(address, size, self._uc_prot(prot))
        self.memory._add(address, address + size, prot)

    def unmap(self, address: int, size: int) -> None:
        for low, high, _ in list(self.memory._mappings):
            start, end = max(low, address), min(high, address + size)
            if start < end:
                self.uc.mem_unmap(start, end - start)
        self.memory._remove(address, address + size)

    def protect(self, address: int, size: int, prot: int) -> None:
        self.uc.mem_protect(address, size, self._uc_prot(prot))
        self.memory._add(address, address + size, prot)

    def copy_memory_from(self, other: "HostCpu") -> None:
        """Map everything ``other`` maps, with the same protections and contents (fork)."""
        for start, end, prot in other.memory.mappings:
            self.map(start, end - start, prot)
            self.uc.mem_write(start, bytes(other.uc.mem_read(start, end - start)))

    @staticmethod
    def _uc_prot(prot: int) -> int:
        return sum(flag for bit, flag in _UC_PROT.items() if prot & bit)

    def read_memory(self, address: int, length: int) -> bytes:
        """Guest bytes (raises :class:`~zatile.sim.state.MemoryFault` outside its mappings)."""
        self.memory.check(address, length)
        return bytes(self.uc.mem_read(address, length))

    def write_memory(self, address: int, data: bytes) -> None:
        """Write guest bytes, bypassing write protection (as the kernel loading a program)."""
        self.memory.check(address, len(data))
        self.uc.mem_write(address, bytes(data))

    # ------------------------------------------------------------------ registers
    def x(self, number: int) -> int:
        return self.uc.reg_read(_X_REGISTERS[number])

    def set_x(self, number: int, value: int) -> None:
        self.uc.reg_write(_X_REGISTERS[number], value & MASK64)

    @property
    def pc(self) -> int:
        return self.uc.reg_read(a64.UC_ARM64_REG_PC)

    @pc.setter
    def pc(self, value: int) -> None:
        self.uc.reg_write(a64.UC_ARM64_REG_PC, value)

    @property
    def sp(self) -> int:
        return self.uc.reg_read(a64.UC_ARM64_REG_SP)

    @sp.setter
    def sp(self, value: int) -> None:
        self.uc.reg_write(a64.UC_ARM64_REG_SP, value)

    @property
    def tpidr(self) -> int:
        return self.uc.reg_read(a64.UC_ARM64_REG_TPIDR_EL0)

    @tpidr.setter
    def tpidr(self, value: int) -> None:
        self.uc.reg_write(a64.UC_ARM64_REG_TPIDR_EL0, value & MASK64)

    @property
    def streaming(self) -> bool:
        return bool(self.engine.svcr & SVCR_SM)

    def v(self, number: int) -> int:
        """V<number> as the program sees it (the engine's Z low bits at SM=1)."""
        self._pull_v()
        return self.uc.reg_read(_V_REGISTERS[number])

    def set_v(self, number: int, value: int) -> None:
        """Write V<number> as an instruction of the program would (at SM=1: Z<number> gets
        ``value`` with its upper bits zero before the next engine instruction)."""
        if self.streaming:
            self._pull_v()
            self._v_dirty.add(number)
        self.uc.reg_write(_V_REGISTERS[number], value & ((1 << 128) - 1))

    @property
    def vregs(self) -> bytes:
        """V0-V31 as held by Unicorn (16 bytes each): the program's at SM=0."""
        return b"".join(self.uc.reg_read(register).to_bytes(16, "little")
                        for register in _V_REGISTERS)

    @vregs.setter
    def vregs(self, value: bytes) -> None:
        for number, register in enumerate(_V_REGISTERS):
            self.uc.reg_write(register, int.from_bytes(value[16 * number:16 * number + 16],
                                                       "little"))

    @property
    def fpsr(self) -> int:
        return self.uc.reg_read(a64.UC_ARM64_REG_FPSR)

    @fpsr.setter
    def fpsr(self, value: int) -> None:
        self.uc.reg_write(a64.UC_ARM64_REG_FPSR, value)

    @property
    def nzcv(self) -> int:
        """PSTATE.NZCV in bits 3-0."""
        return self.uc.reg_read(a64.UC_ARM64_REG_NZCV) >> 28 & 0xF

    @nzcv.setter
    def nzcv(self, value: int) -> None:
        self.uc.reg_write(a64.UC_ARM64_REG_NZCV, (value & 0xF) << 28)

    # ------------------------------------------------------------------ an OS around it
    def stop_at_syscalls(self) -> None:
        """Make every ``SVC #0`` end :meth:`run` with a :class:`StopKind.SYSCALL` stop, for an
        operating system that handles system calls between runs (the kernel model)."""
        self.syscall = lambda cpu: cpu.stop(Stop(StopKind.SYSCALL))

    def enter_kernel(self) -> None:
        """Before an operating system reads or saves the thread's state: V registers the
        program wrote at SM=1 go to the engine's Z (so the engine holds all of Z)."""
        if self._v_dirty:
            self._push_v()

    def leave_kernel(self, fpcr: int) -> None:
        """After an operating system changed the thread's state (registers, PSTATE.SM, the
        engine's contents, FPCR): at SM=1 V is read from Z again before its next use; FPCR
        is ``fpcr``; the streaming-mode instruction check follows SM."""
        self._v_dirty.clear()
        self._v_stale = self.streaming
        self.fpcr = fpcr & _FPCR_IMPLEMENTED
        self.uc.reg_write(a64.UC_ARM64_REG_FPCR, self.fpcr)
        self._fpcr_sent = None
        self._check_streaming_instructions(self.streaming)

    def read_za(self) -> bytes:
        """ZA's array vectors 0 .. SVL_B-1, in order (PSTATE.ZA must be 1)."""
        return b"".join(self._za_vector(row, None) for row in range(self.engine.svl // 8))

    def write_za(self, data: bytes) -> None:
        """Replace ZA's contents with ``data`` (SVL_B × SVL_B bytes; PSTATE.ZA must be 1).

        Raises
        ------
        ValueError
            If ``data`` is not SVL_B × SVL_B bytes.
        """
        vector = self.engine.svl // 8
        if len(data) != vector * vector:
            raise ValueError(f"ZA holds {vector * vector} bytes at SVL {self.engine.svl}, not "
                             f"{len(data)}")
        for row in range(vector):
            self._za_vector(row, data[row * vector:(row + 1) * vector])

    def _za_vector(self, row: int, data: bytes | None) -> bytes:
        """Read (``data`` None) or write one array vector of ZA through the EL1 scratch buffer."""
        if not self.engine.svcr & SVCR_ZA:
            raise RuntimeError("PSTATE.ZA is 0: ZA has no contents (start_za() first)")
        scratch = self.memory._scratch
        if data is not None:
            scratch[:len(data)] = np.frombuffer(data, np.uint8)
            self._kissue(_LDR_ZA, rv=row, rn=SCRATCH_BASE)
            return data
        self._kissue(_STR_ZA, rv=row, rn=SCRATCH_BASE)
        return scratch[:self.engine.svl // 8].tobytes()

    # ------------------------------------------------------------------ running
    def run(self, entry: int | None = None, budget: int = 0) -> Stop:
        """Run from ``entry`` (or the current PC) until :meth:`stop`, a signal or ``budget``
        host instructions (0: no budget)."""
        self._stop = None
        pc = self.pc if entry is None else entry
        while self._stop is None:
            try:
                self.uc.emu_start(pc, -1 & MASK64, 0, budget)
            except UcError as error:
                if self._stop is None:
                    self._stop = self._memory_stop(error)
            if self._stop is None:
                if budget:
                    self._end_run_ahead()
                    return Stop(StopKind.BUDGET)
                pc = self.pc            # emu_stop without a reason: carry on
        self._end_run_ahead()
        return self._stop

    def stop(self, stop: Stop) -> None:
        """End :meth:`run` with ``stop`` (for the syscall handler and the hooks).

        The first reason wins: Unicorn may run the rest of a translated block after a stop
        requested from an instruction hook, and nothing it does then may count.
        """
        if self._stop is None:
            self._stop = stop
        self.uc.emu_stop()

    def _memory_stop(self, error: UcError) -> Stop:
        if self._pending_fault is not None:
            address, write = self._pending_fault
            self._pending_fault = None
            return Stop(StopKind.SIGNAL, signal=SIGSEGV, address=address, detail=str(error),
                        write=write)
        return Stop(StopKind.SIGNAL, signal=SIGSEGV, address=self.pc, detail=str(error))

    def _on_bad_access(self, uc, access, address, size, value, data) -> bool:
        self._pending_fault = (address, access in (UC_MEM_WRITE_UNMAPPED, UC_MEM_WRITE_PROT))
        return False

    def _on_block(self, uc, address, size, data) -> None:
        self.stats.host_instructions += size // 4

    def _signal(self, signal: int, address: int, detail: str = "") -> None:
        self.stop(Stop(StopKind.SIGNAL, signal=signal, address=address, detail=detail))

    def _on_interrupt(self, uc, intno: int, data) -> None:
        if self._stop is not None:
            self.uc.emu_stop()
            return
        try:
            if intno == 2:
                self._settle()
                if self.syscall is None:
                    self._signal(SIGSEGV, self.pc - 4, "svc with no syscall handler")
                else:
                    self.syscall(self)
            elif intno == 1:
                pc = self.pc
                (word,) = struct.unpack("<I", uc.mem_read(pc, 4))
                performed = host_instruction(word)
                if performed is not None:
                    performed(self._fp_registers)
                    self.pc = pc + 4
                else:
                    self._engine_instruction(pc, word)
            elif intno == 7:
                self._signal(SIGTRAP, self.pc, "brk")
            else:
                self._signal(SIGILL, self.pc, f"exception {intno}")
        except Exception:
            self.uc.emu_stop()
            raise

    # ------------------------------------------------------------------ the engine
    def _kissue(self, word: int, **operands: int):
        """Issue at EL1 on the CPU's own behalf (V<->Z transfers, ending streaming mode)."""
        self._settle()
        self.memory.privileged = True
        try:
            result = self.engine.issue(word, operand_values(word, operands))
        finally:
            self.memory.privileged = False
        if result.status is not Status.OK:
            raise RuntimeError(f"host CPU instruction 0x{word:08x} ended {result.status}")
        return result

    def _pull_v(self) -> None:
        """V0-V31 <- low 128 bits of the engine's Z0-Z31 (SM=1, after engine instructions)."""
        if not self._v_stale:
            return
        self._v_stale = False
        self.stats.v_pulls += 1
        for n in range(32):
            self._kissue(_STR_Z[n], rn=SCRATCH_BASE)
            low = int.from_bytes(self.memory._scratch[:16].tobytes(), "little")
            self.uc.reg_write(_V_REGISTERS[n], low)

    def _push_v(self) -> None:
        """Zn <- Vn with the upper bits zero, for each V register the CPU wrote at SM=1 (a write
        of a V register zeroes the rest of its Z register; the others keep theirs)."""
        if not self._v_dirty:
            return
        written, self._v_dirty = sorted(self._v_dirty), set()
        self.stats.v_pushes += 1
        scratch = self.memory._scratch
        scratch[:] = 0
        for n in written:
            scratch[:16] = np.frombuffer(self.uc.reg_read(_V_REGISTERS[n]).to_bytes(16, "little"),
                                         np.uint8)
            self._kissue(_LDR_Z[n], rn=SCRATCH_BASE)

    def _engine_instruction(self, pc: int, word: int) -> None:
        form = _engine_form(word)
        if form is None:
            self._signal(SIGILL, pc, f"undefined instruction 0x{word:08x}")
            return
        kind, writes_svcr, stores = form.form.requires.value, form.writes_svcr, form.stores
        engine = self.engine
        if self._v_dirty:
            self._push_v()
        fpcr = self.fpcr if self._fpcr_sent is None else None
        if fpcr is not None:
            self._settle()                 # FPCR governs the instructions after the write only
            engine.fpcr = fpcr
            self._fpcr_sent = fpcr
        operands = read_operands(word, self.registers)
        stats = self.stats
        stats.engine_instructions += 1
        stats.engine_by_class[kind] = stats.engine_by_class.get(kind, 0) + 1
        started = time.perf_counter()
        if engine.streams and form.streamable and self._stream(word, form, operands):
            stats.engine_seconds += time.perf_counter() - started
            self.pc = pc + 4
            return
        self._settle()
        before = engine.svcr
        result = engine.issue(word, operands)
        stats.engine_seconds += time.perf_counter() - started
        if result.status is Status.OK:
            write_result(word, result.scalar, self.registers)
            if result.nzcv is not None:
                self.uc.reg_write(a64.UC_ARM64_REG_NZCV, result.nzcv << 28)
            if result.fpsr_flags:
                self.uc.reg_write(a64.UC_ARM64_REG_FPSR,
                                  self.uc.reg_read(a64.UC_ARM64_REG_FPSR) | result.fpsr_flags)
            if writes_svcr and (engine.svcr ^ before) & SVCR_SM:
                self._sm_changed()
            elif engine.svcr & SVCR_SM:
                self._v_stale = True
            self.pc = pc + 4
        elif result.status is Status.FAULT:
            self.stop(Stop(StopKind.SIGNAL, signal=SIGSEGV, address=result.fault_address,
                           detail=f"engine access at 0x{pc:x}", write=stores))
        else:
            self._signal(SIGILL, pc, f"engine {result.status.value} (smtc {result.smtc}) "
                                     f"at 0x{pc:x}")

    def _stream(self, word: int, form: _EngineForm, operands) -> bool:
        """Stream ``word`` to the engine if it will end OK and returns nothing but FPSR bits:
        legal in the engine's configuration and present PSTATE, and every byte it may access
        (:class:`~zatile.sim.footprint.FootprintProbe`) mapped with the permission it needs, as
        a core's address translation would show before it sends the instruction on. Returns
        whether it was streamed; an instruction that may fault or trap is issued and waited
        for instead, so its exception stays precise."""
        engine = self.engine
        svcr = engine.svcr
        if admission(engine.config, form.form, engine.sme_enabled, svcr) is not None:
            return False
        if form.accesses_memory:
            if self._probe is None:
                self._probe = FootprintProbe(engine.config)
            spans = self._probe.spans(word, operands, engine.svl)
            try:
                for address, length, write in spans:
                    self.memory.check(address, length, write)
            except MemoryFault:
                return False
            self._watch(spans)
        engine.stream(word, operands)
        self._streamed += 1
        self.stats.engine_streamed += 1
        if svcr & SVCR_SM:
            self._v_stale = True
        return True

    def _watch(self, spans: list[Span]) -> None:
        """Remember memory a streamed instruction may still access (as bounds: a host access
        between the spans of several instructions waits without need, never the reverse), and
        watch the CPU's own loads and stores meanwhile (:meth:`_on_host_access`)."""
        for address, length, write in spans:
            span = (address, address + length)
            self._touched = _hull(self._touched, span)
            if write:
                self._written = _hull(self._written, span)
        if self._access_hook is None:
            self._access_hook = self.uc.hook_add(UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE,
                                                 self._on_host_access)
            self.uc.ctl_flush_tb()         # code translated before must check accesses too

    def _on_host_access(self, uc, access, address, size, value, data) -> None:
        """A load or store of the host's program: if it touches memory a streamed instruction
        may still access (a load of what an engine store writes, a store to what the engine
        reads or writes), wait for the streamed instructions first, so the two are ordered as
        in the program."""
        bounds = self._touched if access == UC_MEM_WRITE else self._written
        if bounds is not None and bounds[0] < address + size and address < bounds[1]:
            self._settle()

    def _settle(self) -> None:
        """Wait for every streamed instruction; OR the FPSR bits they raised into FPSR."""
        if not self._streamed:
            return
        self._streamed = 0
        self._touched = self._written = None
        self.stats.engine_drains += 1
        flags = self.engine.drain()
        if flags:
            self.uc.reg_write(a64.UC_ARM64_REG_FPSR,
                              self.uc.reg_read(a64.UC_ARM64_REG_FPSR) | flags)

    def _end_run_ahead(self) -> None:
        """At the end of :meth:`run`: drain the engine and stop watching the CPU's accesses
        (whatever comes next — a system call's work, a signal, another thread — sees every
        streamed instruction done)."""
        self._settle()
        if self._access_hook is not None:
            self.uc.hook_del(self._access_hook)
            self._access_hook = None

    def _sm_changed(self) -> None:
        """ResetSVEState: V (the low bits of Z) zero, FPSR reset; the streaming check follows SM."""
        self.stats.mode_changes += 1
        for register in _V_REGISTERS:
            self.uc.reg_write(register, 0)
        self.uc.reg_write(a64.UC_ARM64_REG_FPSR, FPSR_RESET_ON_SM_CHANGE)
        self._v_stale = False
        self._v_dirty.clear()
        self._check_streaming_instructions(self.streaming)

    def _check_streaming_instructions(self, on: bool) -> None:
        """Add or remove the code hook that makes Advanced SIMD illegal at SM=1."""
        if on and self._streaming_hook is None:
            self._streaming_hook = self.uc.hook_add(UC_HOOK_CODE, self._on_streaming_instruction)
            self.uc.ctl_flush_tb()
        elif not on and self._streaming_hook is not None:
            self.uc.hook_del(self._streaming_hook)
            self._streaming_hook = None
            self.uc.ctl_flush_tb()

    def end_streaming_mode(self) -> None:
        """SMSTOP SM as the kernel does on syscall entry (ZA kept)."""
        if self.streaming:
            self._kissue(_SMSTOP_SM)
            self._sm_changed()

    def start_streaming_mode(self) -> None:
        """SMSTART SM on the CPU's own behalf (a caller entering a streaming function)."""
        if not self.streaming:
            self._kissue(_SMSTART_SM)
            self._sm_changed()

    def start_za(self) -> None:
        """SMSTART ZA on the CPU's own behalf (a caller enabling ZA: its contents zero)."""
        if not self.engine.svcr & SVCR_ZA:
            self._kissue(_SMSTART_ZA)

    def exit_za(self) -> None:
        """SMSTOP ZA on the CPU's own behalf (the kernel discarding ZA)."""
        if self.engine.svcr & SVCR_ZA:
            self._kissue(_SMSTOP_ZA)

    def _on_streaming_instruction(self, uc, address: int, size: int, data) -> None:
        if self._stop is not None:
            self.uc.emu_stop()
            return
        known = self._simd_classes.get(address)
        if known is None:
            (word,) = struct.unpack("<I", uc.mem_read(address, 4))
            kind = simd_class(word)
            known = self._simd_classes[address] = (
                kind, simd_written_registers(word) if kind is SimdClass.LEGAL else ())
        kind, written = known
        if kind is SimdClass.NONE:
            return
        if kind is SimdClass.ILLEGAL:
            self._signal(SIGILL, address, "Advanced SIMD instruction in streaming mode")
            return
        self._pull_v()
        self._v_dirty.update(written)

    # ------------------------------------------------------------------ system registers
    def _on_system_register(self, uc, reg: int, cp, data) -> int:
        if self._stop is not None:
            self.uc.emu_stop()
            return 1
        op0, op1, crn, crm, op2 = cp.op0, cp.op1, cp.crn, cp.crm, cp.op2
        is_read = (uc.mem_read(self.pc, 4)[2] & 0x20) != 0      # L bit (21) of MRS/MSR
        if op0 == 3 and op1 == 3 and crn == 13 and crm == 0 and op2 == 5:     # TPIDR2_EL0
            if is_read:
                if reg != a64.UC_ARM64_REG_XZR:
                    uc.reg_write(reg, self.tpidr2)
            else:
                self.tpidr2 = cp.val & MASK64
            self.pc += 4
            return 1
        if op0 == 3 and op1 == 3 and crn == 4 and crm == 4 and op2 == 1:     # FPSR
            self._settle()                 # streamed instructions' exception bits first
            return 0
        if op0 == 3 and op1 == 3 and crn == 4 and crm == 4 and op2 == 0:     # FPCR
            # Kept here: the A72 drops FZ16 (it has no FEAT_FP16), an SME CPU implements it.
            if is_read:
                if reg != a64.UC_ARM64_REG_XZR:
                    uc.reg_write(reg, self.fpcr)
                self.pc += 4
                return 1
            self.fpcr = cp.val & _FPCR_IMPLEMENTED
            self._fpcr_sent = None
            return 0
        if op0 == 3 and op1 == 0 and crn == 0:
            if not is_read:
                self._signal(SIGILL, self.pc, "MSR to an ID register")
                return 1
            value = {(4, 0): _ID_AA64PFR0, (4, 1): _ID_AA64PFR1, (4, 4): _ID_AA64ZFR0,
                     (4, 5): self.engine.id_aa64smfr0}.get((crm, op2))
            if value is None:
                return 0
            if reg != a64.UC_ARM64_REG_XZR:
                uc.reg_write(reg, value)
            self.pc += 4
            return 1
        if op1 in (0, 4, 5, 6, 7) and op0 == 3:
            # EL1 and higher registers: Unicorn runs at EL1, a Linux process at EL0.
            self._signal(SIGILL, self.pc, "EL1 system register access at EL0")
            return 1
        return 0
