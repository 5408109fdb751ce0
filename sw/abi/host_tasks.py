"""Compiled programs as processes of the kernel model: threads that run on a host CPU.

An ELF process of the :class:`~zatile.sw.abi.kernel.Kernel` has one
:class:`~zatile.sim.host_cpu.HostCpu` — Unicorn's memory and registers — kept in its
:class:`HostAddressSpace`, with the :class:`~zatile.sw.abi.elf_process.ElfProcess` that loaded
the image and serves its memory and file system calls. The process's threads take turns on that
CPU. One slice of a thread (:meth:`HostTasksMixin._run_host`):

1. *kernel exit*: the thread's saved registers (``CpuContext``: X, SP, PC, NZCV, TPIDR,
   TPIDR2; ``FpState``: V0-V31 when PSTATE.SM=0, FPSR, FPCR) go into the CPU;
2. the CPU runs until a system call, a fault or ``host_quantum`` host instructions;
3. *kernel entry*: the registers come back into the thread's ``CpuContext``/``FpState`` (V
   registers written in streaming mode are first pushed into the engine's Z, which the
   kernel's save sequence then stores);
4. the kernel handles the reason: a system call, a signal for a fault, or preemption when the
   quantum ran out (the next thread is scheduled; the engine's contents stay until another
   thread needs it — the kernel's eager-save, lazy-restore policy).

Everything between entry and exit — system calls, signal frames on the thread's real stack and
``rt_sigreturn``, clone, fork, futexes, wait4, scheduling, SME state switching — is the kernel
model's, on the same ``CpuContext``/``FpState`` its step programs use; so real handlers run on
the CPU with the frames the kernel wrote, and every rule the kernel implements holds for them.

Engine instructions do not stop the CPU: it issues them to a :class:`ThreadEngine`, the engine
as the current thread sees it — the kernel's engine, with the SME-disabled trap taken to the
kernel's ``do_sme_acc`` (lazy restore of the thread's state) and SVCR writes tracked, exactly as
the kernel's own instruction stepper does.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import BinaryIO, Sequence

from zatile.sim.host_cpu import (PROT_EXEC, PROT_READ, SIGILL, SIGSEGV, SIGTRAP, HostCpu, Stop,
                                 StopKind)
from zatile.sim.state import MemoryFault
from zatile.sw.abi import constants as c
from zatile.sw.abi.elf_process import GUEST_MEMORY_LIMIT, ElfImage, ElfProcess
from zatile.sw.abi.engine_context import _has_trait
from zatile.sw.abi.layouts import SiginfoFault
from zatile.sw.abi.mm import AddressSpace
from zatile.sw.abi.task import CpuContext, FpState, Process, Thread
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.engine import Result, Status
from zatile.sw.arch.isa import Trait

__all__ = ["HostAddressSpace", "HostTasksMixin", "ThreadEngine", "SIGRETURN_PAGE",
           "DEFAULT_HOST_QUANTUM"]

#: A thread's default time slice, in host instructions.
DEFAULT_HOST_QUANTUM = 100_000

#: Where an ELF process's signal trampoline (``MOV X8, #139; SVC #0``) is mapped, for handlers
#: installed without SA_RESTORER: between the stack's top and the call-return page.
SIGRETURN_PAGE = 0x0000_7FFF_FFFF_8000
_TRAMPOLINE = struct.pack("<II", 0xD280_0008 | c.NR_RT_SIGRETURN << 5,    # movz x8, #139
                          0xD400_0001)                                # svc #0
_PAGE = 0x1000

#: The kernel's system calls that an ELF process's
#: :class:`~zatile.sw.abi.elf_process.ElfProcess` serves instead: ``write`` reaches its file
#: descriptors (the kernel's own captures a step program's output).
_PROCESS_CALLS = frozenset({c.NR_WRITE})


class _ProcessOutput(io.RawIOBase):
    """fd 1 and 2 of an ELF image a step program exec'd: appended to its ``Process.stdout``."""

    def __init__(self, process: Process):
        super().__init__()
        self._process = process

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self._process.stdout.extend(data)
        return len(data)


class ThreadEngine:
    """The engine as the kernel's current thread sees it: what a :class:`HostCpu` of an ELF
    process issues to.

    Parameters
    ----------
    kernel : Kernel
    """

    def __init__(self, kernel):
        self._kernel = kernel

    def issue(self, word: int, operands) -> Result:
        """Issue ``word``; the SME-disabled trap restores the thread's state (``do_sme_acc``)
        and the instruction is issued again, as the CPU's exception return would."""
        kernel = self._kernel
        thread = kernel.current
        result = kernel.engine.issue(word, operands)
        if result.status is Status.SME_TRAP \
                and result.smtc == c.ESR_ELX_SME_ISS_SMTC_SME_DISABLED:
            if not kernel._do_sme_acc(thread):
                return result          # killed: no memory for its SME state
            result = kernel.engine.issue(word, operands)
        if result.status is Status.OK and _has_trait(word, Trait.SVCR_WRITE):
            kernel._track_svcr(thread)
        return result

    @property
    def config(self) -> EngineConfig:
        return self._kernel.engine.config

    @property
    def streams(self) -> bool:
        return self._kernel.engine.streams

    @property
    def sme_enabled(self) -> bool:
        """Whether the thread's instructions reach the engine without the SME-disabled trap
        (its state is live in the engine)."""
        return self._kernel.engine.sme_enabled

    def stream(self, word: int, operands) -> None:
        """Stream ``word`` (the CPU has shown it ends OK: SME is enabled, so the thread's state
        is the engine's)."""
        self._kernel.engine.stream(word, operands)

    def drain(self) -> int:
        return self._kernel.engine.drain()

    @property
    def svcr(self) -> int:
        """The thread's SVCR (the engine's while it holds the thread's state)."""
        kernel = self._kernel
        thread = kernel.current
        return kernel.engine.svcr if kernel._live and kernel._holder is thread \
            else thread.fp.svcr

    @property
    def fpcr(self) -> int:
        return self._kernel._read_fp_status(self._kernel.current, "fpcr")

    @fpcr.setter
    def fpcr(self, value: int) -> None:
        self._kernel._write_fp_status(self._kernel.current, "fpcr", value)

    @property
    def svl(self) -> int:
        """The thread's streaming vector length in bits."""
        return 8 * self._kernel.current.fp.sme_vl

    @property
    def id_aa64smfr0(self) -> int:
        return self._kernel.engine.id_aa64smfr0


@dataclass
class HostAddressSpace(AddressSpace):
    """The ``mm`` of an ELF process: Unicorn's memory (``memory`` is the CPU's
    :class:`~zatile.sim.host_cpu.GuestMemory`), the CPU its threads run on, and the
    :class:`~zatile.sw.abi.elf_process.ElfProcess` serving its memory and file calls."""

    cpu: HostCpu | None = None
    elf: ElfProcess | None = None
    #: Why the CPU last stopped (a fatal signal's cause, for reports).
    last_stop: Stop | None = None

    def duplicate(self) -> "HostAddressSpace":
        """fork's copy: a new CPU with every mapping copied (same protections), and a copy of
        the process's brk, mmap cursor and open files."""
        old = self.cpu
        cpu = HostCpu(lambda memory: old.engine, count_instructions=old.counting)
        cpu.syscall = old.syscall
        cpu.copy_memory_from(old)
        return HostAddressSpace(memory=cpu.memory, symbols=dict(self.symbols), cpu=cpu,
                                elf=self.elf.forked(cpu))


class HostTasksMixin:
    """ELF processes and their threads on host CPUs (see the module docstring).

    A mixin of :class:`~zatile.sw.abi.kernel.Kernel`: it uses the kernel's scheduler, system
    calls, signals and engine directly.
    """

    def spawn_elf(self, image: ElfImage, argv: Sequence[str], envp: Sequence[str] = (), *,
                  stdout: BinaryIO | None = None, stderr: BinaryIO | None = None,
                  count_instructions: bool = False) -> Process:
        """Start a static ELF program as a new process, as if forked from an idle init and
        exec'd with the system's default SME vector length. The image is installed at its
        path, so the process (and its children) can execve it again.

        Parameters
        ----------
        image : ElfImage
            From :func:`~zatile.sw.abi.elf_process.load_elf_image`.
        argv, envp : sequence of str
        stdout, stderr : binary file objects
            Where its fd 1 and fd 2 go (kept across execve).
        count_instructions : bool
            Count host instructions (slower).
        """
        thread = self._new_thread(None, CpuContext(), FpState(sme_vl=self.sme_default_vl))
        self.filesystem[image.path] = image
        process = thread.process
        process.mm = self._elf_address_space(image, argv, envp, stdout, stderr,
                                             count_instructions)
        process.name = image.path.rsplit("/", 1)[-1]
        process.auxv = process.mm.elf.initial_auxv
        thread.cpu = CpuContext(sp=process.mm.cpu.sp, pc=process.mm.cpu.pc)
        return process

    def _elf_address_space(self, image: ElfImage, argv: Sequence[str], envp: Sequence[str],
                           stdout: BinaryIO | None, stderr: BinaryIO | None,
                           count_instructions: bool) -> HostAddressSpace:
        """A new CPU with ``image`` loaded, its initial stack and the signal trampoline."""
        cpu = HostCpu(lambda memory: ThreadEngine(self), count_instructions=count_instructions)
        cpu.stop_at_syscalls()
        elf = ElfProcess(image, argv, envp, svl=8 * self.lengths.max_vl, stdout=stdout,
                         stderr=stderr, cpu=cpu, files=self,
                         memory_in_use=self._guest_memory_in_use)
        cpu.map(SIGRETURN_PAGE, _PAGE, PROT_READ | PROT_EXEC)
        cpu.write_memory(SIGRETURN_PAGE, _TRAMPOLINE)
        return HostAddressSpace(
            memory=cpu.memory,
            symbols={**image.symbols, "__kernel_rt_sigreturn": SIGRETURN_PAGE}, cpu=cpu,
            elf=elf)

    def _load_elf(self, image: ElfImage, argv: Sequence[str], envp: Sequence[str],
                  process: Process) -> HostAddressSpace:
        """execve's new address space for an ELF image: fd 1 and 2 stay where they went (for a
        step program, its ``Process.stdout``)."""
        old = process.mm
        if isinstance(old, HostAddressSpace):
            return self._elf_address_space(image, argv, envp, old.elf.stdout, old.elf.stderr,
                                           old.cpu.counting)
        output = _ProcessOutput(process)
        return self._elf_address_space(image, argv, envp, output, output, False)

    def _guest_memory_in_use(self) -> int:
        """The bytes mapped by every live ELF process (an address space counts once)."""
        spaces = {id(process.mm): process.mm for process in self.processes.values()
                  if process.alive and isinstance(process.mm, HostAddressSpace)}
        return sum(mm.memory.mapped_bytes for mm in spaces.values())

    def _room_to_copy(self, mm: AddressSpace) -> bool:
        """Whether fork may copy ``mm`` within :data:`GUEST_MEMORY_LIMIT`."""
        return not isinstance(mm, HostAddressSpace) \
            or mm.memory.mapped_bytes <= GUEST_MEMORY_LIMIT - self._guest_memory_in_use()

    # ------------------------------------------------------------------ one slice
    def _run_host(self, thread: Thread) -> None:
        """Run ``thread`` on its process's CPU until the kernel is entered, and handle why."""
        mm = thread.process.mm
        cpu = mm.cpu
        self.bus.user_memory = mm.memory
        self._leave_to_host(thread, cpu)
        budget = self._rng.randint(1, self.host_quantum) if self._rng else self.host_quantum
        stop = mm.last_stop = cpu.run(budget=budget)
        if not thread.runnable:
            return                     # killed during the slice (no memory for SME state)
        self._enter_from_host(thread, cpu)
        if stop.kind is StopKind.SYSCALL:
            self._host_syscall(thread)
        elif stop.kind is StopKind.BUDGET:
            thread.yield_requested = True
            self.stats.preemptions += 1
        elif stop.signal == SIGSEGV:
            self._data_abort(thread, stop.address, stop.write)
        elif stop.signal == SIGTRAP:
            self._force_sig(thread, c.SIGTRAP, SiginfoFault(
                si_signo=c.SIGTRAP, si_errno=0, si_code=c.TRAP_BRKPT, si_addr=stop.address).pack())
        else:
            self._force_signal_inject(thread, SIGILL, c.ILL_ILLOPC, stop.address)

    def _leave_to_host(self, thread: Thread, cpu: HostCpu) -> None:
        """Kernel exit: the thread's saved registers into the CPU."""
        context, fp = thread.cpu, thread.fp
        for number, value in enumerate(context.x):
            cpu.set_x(number, value)
        cpu.sp, cpu.pc, cpu.tpidr = context.sp, context.pc, context.tpidr
        cpu.tpidr2 = context.tpidr2
        cpu.nzcv = context.pstate >> 28
        if not cpu.engine.svcr & c.SVCR_SM_MASK:
            cpu.vregs = bytes(fp.vregs)
        cpu.fpsr = self._read_fp_status(thread, "fpsr")
        cpu.leave_kernel(self._read_fp_status(thread, "fpcr"))

    def _enter_from_host(self, thread: Thread, cpu: HostCpu) -> None:
        """Kernel entry: the CPU's registers into the thread's saved state."""
        cpu.enter_kernel()
        context, fp = thread.cpu, thread.fp
        context.x[:] = [cpu.x(number) for number in range(31)]
        context.sp, context.pc, context.tpidr = cpu.sp, cpu.pc, cpu.tpidr
        context.tpidr2 = cpu.tpidr2
        context.pstate = context.pstate & ~(0xF << 28) | cpu.nzcv << 28
        if not cpu.engine.svcr & c.SVCR_SM_MASK:
            fp.vregs[:] = cpu.vregs
        self._write_fp_status(thread, "fpsr", cpu.fpsr)
        self._write_fp_status(thread, "fpcr", cpu.fpcr)

    def _host_syscall(self, thread: Thread) -> None:
        """``SVC #0`` of an ELF thread: the kernel's own calls (its system-call table), or its
        process's (memory, files, identity, time)."""
        number = thread.cpu.x[8]
        if number in self._syscalls and number not in _PROCESS_CALLS:
            self._svc(thread)
            return
        self._syscall_entry(thread)
        elf = thread.process.mm.elf
        handler = elf.handler(number)
        if handler is None:
            result = elf.unimplemented(number)
        else:
            try:
                result = handler(*thread.cpu.x[:6])
            except MemoryFault:
                result = -c.EFAULT
        thread.cpu.x[0] = result & ((1 << 64) - 1)

