"""The kernel model: processes and threads time-sharing one SME engine (Linux ≥ 6.16 ABI).

:class:`Kernel` is the CPU side of a single-CPU arm64 system whose SME unit is an
:class:`~sw.driver.Engine`. Threads run :class:`~sw.abi.program.Executable` programs; engine
instructions go to the engine with the thread's operand values, everything else (system
calls, traps, signals, ptrace, scheduling) is done here, with the semantics of
``arch/arm64/kernel/{fpsimd,signal,ptrace,process,syscall}.c`` as summarised in docs/abi.md.

Where a thread's SME state lives
--------------------------------
The engine holds the registers of at most one thread, ``holder``; the others' state is in
their :class:`~sw.abi.task.FpState` and kernel-heap buffers. The policy is Linux's: *eager
save, lazy restore*.

* **Switch out** (and whenever the kernel needs the saved state: signal delivery, sigreturn,
  fork, VL change, core dump): if the outgoing thread is live on the engine, its state is
  stored **by the engine's own instructions** issued at EL1 — ``MRS SVCR``; with SM=1
  ``STR Z0-Z31`` and ``STR P0-P15`` into ``sve_state``; with ZA=1 one ``STR ZA[Wv, 0]`` per
  row into ``sme_state`` — plus FPSR/FPCR through the control registers. Then SME access is
  disabled (``Engine.sme_enabled = False``).
* **Switch in** does nothing to the engine. The thread's first engine instruction traps with
  SMTC 0 (the engine's SME-disable trap). The trap handler — ``do_sme_acc`` — allocates the
  buffers on a thread's very first use, and otherwise *restores*: SMCR.LEN, ``SMSTART``/
  ``SMSTOP`` of SM and ZA as needed (each transition zeroes what it covers), ``LDR Z``/``LDR P``
  when SM=1, ``LDR ZA`` rows when ZA=1, FPSR/FPCR; then it enables SME and the instruction is
  re-executed. If the engine still holds exactly this thread's state (no other thread used
  it and the kernel changed nothing since the save: ``fpsimd_last_state``), the restore is
  skipped and only the enable is done.

Why: a thread that does not touch SME during its slice costs no engine instructions, a
thread switching back to itself costs no restore, and the trap is the hardware's own
mechanism, so it needs nothing from the engine beyond its architectural interface. Isolation
holds because the engine is disabled whenever the current thread is not its holder, every
restore overwrites all state the thread can reach (Z/P when SM=1, all ZA rows when ZA=1) and
turns off what it cannot (an SM or ZA 0→1 transition by the thread zeroes the storage), the
engine keeps no general-register state between instructions (a contract of
:meth:`~sw.driver.Engine.issue`), and the save areas are in kernel memory that EL0 engine
accesses cannot reach (:class:`~sw.abi.mm.SystemBus`).

V registers (FPSIMD) are CPU state held in ``FpState.vregs``; in streaming mode they are the
low 128 bits of Z, held by the engine. Every PSTATE.SM change zeroes them.

System calls
------------
Each system call is a method named after it, taking the calling thread and then the raw
argument registers (pointers into the caller's memory), and returning what the raw system
call returns (a negative errno on failure). Programs reach them through ``SVC`` with X8 = the
arm64 number; calling a method from Python makes that thread enter the kernel at its current
PC, as if it had executed ``SVC`` there (it becomes the current thread).

Modelled subset: one CPU; no sigaltstack (frames always go on the thread's stack; sigreturn
still validates ``uc_stack`` as ``do_sigaltstack`` would); PTRACE_ATTACH stops the tracee at
once (no SIGSTOP/waitpid handshake), and only ATTACH, DETACH, GETREGSET and SETREGSET exist;
clone() flags beyond VM/FS/FILES/SIGHAND/THREAD/SYSVSEM/SETTLS/exit signal are -EINVAL;
kill() takes pid > 0 only (no process groups); no non-streaming SVE, SME2, FPMR, POE or GCS.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from functools import lru_cache

from zatile.sim.state import Memory, MemoryFault
from zatile.sw.abi import constants as c
from zatile.sw.abi.coredump import CoreNote, CoreSegment, elf_core
from zatile.sw.abi.cpufeatures import SmeVectorLengths, cpuinfo_features, hwcap2_from_id
from zatile.sw.abi.fpsimd import FpsimdOps
from zatile.sw.abi.layouts import (
    RT_SIGFRAME_MCONTEXT_OFFSET, RT_SIGFRAME_UC_OFFSET, SIZEOF_RT_SIGFRAME, ElfPrpsinfo,
    ElfPrstatus, FpsimdContext, Iovec, KernelSigaction, SigContext, SiginfoFault, SiginfoKill,
    SveContext, Timespec, Tpidr2Context, UContext, ZaContext, round_up, sve_sig_context_size,
    sve_sig_regs_size, sve_vq_from_vl, za_sig_context_size, za_sig_regs_size,
)
from zatile.sw.abi.mm import (
    DATA_BASE, KERNEL_BASE, STACK_TOP, TEXT_BASE, VDSO_BASE, AddressSpace, KernelHeap, SystemBus,
)
from zatile.sw.abi.program import Brk, Call, Executable, Mov, Mrs, Msr, Ret, Svc, Symbol, Syscall
from zatile.sw.abi.regsets import RegsetView, valid_user_regs
from zatile.sw.abi.sigframe import (
    TASK_SIZE, FrameTooLarge, InvalidFrame, SignalContext, frame_writes, minimum_signal_stack_size,
    parse_user_sigframe, sigframe_layout,
)
from zatile.sw.abi.task import (
    CpuContext, FpState, FpType, PendingSignal, Process, SignalHandlers, Thread, ThreadState,
)
from zatile.sw.arch.asm import assemble_line
from zatile.sw.arch.config import EngineConfig
from zatile.sim.engine import ModelEngine
from zatile.sw.arch.constants import MASK64
from zatile.sw.arch.engine import Engine, Status
from zatile.sw.arch.isa import Trait, decode, operand_values, read_operands, write_result

__all__ = ["Kernel", "KernelStats", "UserContext", "IllegalInstruction", "EngineProtocolError",
           "SYSCTL_SME_DEFAULT_VL"]

SYSCTL_SME_DEFAULT_VL = "/proc/sys/abi/sme_default_vector_length"
#: Signals whose default action dumps core / is ignored / stops the process.
_CORE_SIGNALS = frozenset({c.SIGQUIT, c.SIGILL, c.SIGTRAP, c.SIGABRT, c.SIGBUS, c.SIGFPE,
                           c.SIGSEGV, c.SIGXCPU, c.SIGXFSZ, c.SIGSYS})
_IGNORED_SIGNALS = frozenset({c.SIGCHLD, c.SIGCONT, c.SIGURG, c.SIGWINCH})
_STOP_SIGNALS = frozenset({c.SIGSTOP, c.SIGTSTP, c.SIGTTIN, c.SIGTTOU})
_UNBLOCKABLE = (1 << (c.SIGKILL - 1)) | (1 << (c.SIGSTOP - 1))
#: clone() flags the model implements; the rest (VFORK, *_SETTID, ...) return -EINVAL.
_CLONE_SUPPORTED = (c.CSIGNAL | c.CLONE_VM | c.CLONE_FS | c.CLONE_FILES | c.CLONE_SIGHAND
                    | c.CLONE_THREAD | c.CLONE_SYSVSEM | c.CLONE_SETTLS)
_PSR_TCO_BIT = 1 << 25
_SS_ONSTACK, _SS_AUTODISARM, _MINSIGSTKSZ = 1, 1 << 31, 2048
_EBADF, _EACCES, _ENAMETOOLONG = 9, 13, 36

# The engine instructions of the save/restore sequences.
_MRS_SVCR = assemble_line("mrs x0, svcr")
_SMSTART_SM, _SMSTOP_SM = assemble_line("smstart sm"), assemble_line("smstop sm")
_SMSTART_ZA, _SMSTOP_ZA = assemble_line("smstart za"), assemble_line("smstop za")
_STR_ZA, _LDR_ZA = assemble_line("str za[w12, 0], [x0]"), assemble_line("ldr za[w12, 0], [x0]")
_STR_Z = tuple(assemble_line(f"str z{n}, [x0]") for n in range(32))
_LDR_Z = tuple(assemble_line(f"ldr z{n}, [x0]") for n in range(32))
_STR_P = tuple(assemble_line(f"str p{n}, [x0]") for n in range(16))
_LDR_P = tuple(assemble_line(f"ldr p{n}, [x0]") for n in range(16))


@lru_cache(maxsize=4096)
def _has_trait(word: int, trait: Trait) -> bool:
    decoded = decode(word)
    return decoded is not None and trait in decoded.form.traits


class IllegalInstruction(Exception):
    """User code did something the CPU rejects (Advanced SIMD in streaming mode): SIGILL."""


class EngineProtocolError(RuntimeError):
    """An instruction the kernel issued to the engine did not complete: a kernel bug."""


@dataclass
class KernelStats:
    """Counters of the engine work the kernel does (for the context-switch cost figures)."""

    context_switches: int = 0
    syscalls: int = 0
    first_use_traps: int = 0
    restores: int = 0
    restores_skipped: int = 0
    saves: int = 0
    save_instructions: int = 0
    restore_instructions: int = 0
    signals_delivered: int = 0


class UserContext:
    """What user code (a :class:`~sw.abi.program.Call` step) sees: its registers and memory.

    Everything here is something an EL0 instruction could do; ``syscall`` is ``SVC``.
    """

    def __init__(self, kernel: "Kernel", thread: Thread):
        self._kernel = kernel
        self._thread = thread

    @property
    def x(self) -> list[int]:
        """X0-X30 (assignable)."""
        return self._thread.cpu.x

    @property
    def sp(self) -> int:
        return self._thread.cpu.sp

    @sp.setter
    def sp(self, value: int) -> None:
        self._thread.cpu.sp = value & MASK64

    @property
    def pc(self) -> int:
        return self._thread.cpu.pc

    @pc.setter
    def pc(self, value: int) -> None:
        self._thread.cpu.pc = value & MASK64

    @property
    def tid(self) -> int:
        return self._thread.tid

    @property
    def pid(self) -> int:
        return self._thread.process.pid

    @property
    def tpidr2(self) -> int:
        return self._thread.cpu.tpidr2

    @tpidr2.setter
    def tpidr2(self, value: int) -> None:
        self._thread.cpu.tpidr2 = value & MASK64

    @property
    def tpidr(self) -> int:
        return self._thread.cpu.tpidr

    @tpidr.setter
    def tpidr(self, value: int) -> None:
        self._thread.cpu.tpidr = value & MASK64

    @property
    def fpsr(self) -> int:
        return self._kernel._read_fp_status(self._thread, "fpsr")

    @fpsr.setter
    def fpsr(self, value: int) -> None:
        self._kernel._write_fp_status(self._thread, "fpsr", value)

    @property
    def fpcr(self) -> int:
        return self._kernel._read_fp_status(self._thread, "fpcr")

    @fpcr.setter
    def fpcr(self, value: int) -> None:
        self._kernel._write_fp_status(self._thread, "fpcr", value)

    @property
    def vregs(self) -> bytes:
        """V0-V31 (16 bytes each); Advanced SIMD, so illegal in streaming mode (no FA64)."""
        self._require_non_streaming()
        return bytes(self._thread.fp.vregs)

    @vregs.setter
    def vregs(self, value: bytes) -> None:
        self._require_non_streaming()
        if len(value) != 512:
            raise ValueError(f"V0-V31 are 512 bytes, not {len(value)}")
        self._thread.fp.vregs[:] = value

    def _require_non_streaming(self) -> None:
        if self._thread.fp.svcr & c.SVCR_SM_MASK:
            raise IllegalInstruction("Advanced SIMD access in streaming mode")

    def read(self, address: int, length: int) -> bytes:
        """Load bytes from the process's memory (a fault becomes SIGSEGV)."""
        return bytes(self._thread.process.mm.memory.read(address, length))

    def write(self, address: int, data: bytes) -> None:
        """Store bytes to the process's memory (a fault becomes SIGSEGV)."""
        self._thread.process.mm.memory.write(address, data)

    def symbol(self, name: str) -> int:
        """The address of a function of the running executable (``"data"``: its data)."""
        return self._thread.process.mm.symbols[name]

    def syscall(self, number: int, *args: int) -> int:
        """``SVC #0`` with X8 = ``number`` and X0.. = ``args``; returns X0 (signed)."""
        thread = self._thread
        thread.cpu.x[8] = number
        for index, value in enumerate(args):
            thread.cpu.x[index] = value & MASK64
        self._kernel._svc(thread)
        result = thread.cpu.x[0]
        return result - (1 << 64) if result >> 63 else result


class Kernel:
    """A single-CPU arm64 Linux (≥ 6.16) as far as SME is concerned, driving one engine.

    Parameters
    ----------
    config : EngineConfig
        The engine's configuration (supported SVLs, features).
    engine_class : type of Engine
        The backend; constructed as ``engine_class(config, bus)``.
    heap_size : int
        Bytes of kernel heap for the per-thread SME save areas (exhaustion gives -ENOMEM).
    stack_size : int
        Bytes of stack mapped for each new program image.
    """

    def __init__(self, config: EngineConfig, *, engine_class: type[Engine] = ModelEngine,
                 heap_size: int = 8 << 20, stack_size: int = 256 << 10):
        self.config = config
        self.kernel_memory = Memory()
        self.heap = KernelHeap(self.kernel_memory, KERNEL_BASE, heap_size)
        self.bus = SystemBus(self.kernel_memory)
        self.engine = engine_class(config, self.bus)
        self.lengths = SmeVectorLengths.from_config(config)
        self.sme_default_vl = self.lengths.boot_default
        self.hwcap2 = hwcap2_from_id(self.engine.id_aa64smfr0)
        self.minsigstksz = minimum_signal_stack_size(self.lengths.max_vl)
        self.stack_size = stack_size
        self.ops = FpsimdOps(self.heap, self.kernel_memory, self.lengths, self._flush)
        self.regsets = RegsetView(self.ops, self._preserve)
        self.stats = KernelStats()
        self.filesystem: dict[str, Executable] = {}
        self.processes: dict[int, Process] = {}
        self.threads: dict[int, Thread] = {}
        self.current: Thread | None = None
        self._holder: Thread | None = None
        self._live = False
        self._next_id = 1
        self._last_picked = 0
        self._syscalls = {
            c.NR_WRITE: (self.write, 3), c.NR_EXIT: (self.exit, 1),
            c.NR_EXIT_GROUP: (self.exit_group, 1), c.NR_NANOSLEEP: (self.nanosleep, 2),
            c.NR_PTRACE: (self.ptrace, 4), c.NR_SCHED_YIELD: (self.sched_yield, 0),
            c.NR_KILL: (self.kill, 2), c.NR_TKILL: (self.tkill, 2),
            c.NR_TGKILL: (self.tgkill, 3), c.NR_RT_SIGACTION: (self.rt_sigaction, 4),
            c.NR_RT_SIGPROCMASK: (self.rt_sigprocmask, 4),
            c.NR_RT_SIGRETURN: (self.rt_sigreturn, 0), c.NR_PRCTL: (self.prctl, 5),
            c.NR_GETPID: (self.getpid, 0), c.NR_GETTID: (self.gettid, 0),
            c.NR_CLONE: (self.clone, 5), c.NR_EXECVE: (self.execve, 3),
        }

    # ================================================================== programs and files
    def install(self, path: str, executable: Executable) -> None:
        """Put an executable in the (in-memory) file system."""
        self.filesystem[path] = executable

    def spawn(self, path: str) -> Process:
        """Start ``path`` as a new process, as if forked from an idle init and exec'd.

        Raises
        ------
        FileNotFoundError
            If nothing is installed at ``path``.
        """
        if path not in self.filesystem:
            raise FileNotFoundError(path)
        thread = self._new_thread(None, CpuContext(), FpState(sme_vl=self.sme_default_vl))
        self._exec(thread, path)
        return thread.process

    def _new_thread(self, process: Process | None, cpu: CpuContext, fp: FpState) -> Thread:
        tid = self._next_id
        self._next_id += 1
        if process is None:
            process = Process(pid=tid, parent_pid=0, mm=AddressSpace(), handlers=SignalHandlers(),
                              name="")
            self.processes[tid] = process
        thread = Thread(tid=tid, process=process, cpu=cpu, fp=fp)
        process.threads.append(thread)
        self.threads[tid] = thread
        return thread

    def _load(self, executable: Executable) -> AddressSpace:
        mm = AddressSpace()
        mm.symbols["__kernel_rt_sigreturn"] = VDSO_BASE
        mm.symbols["data"] = DATA_BASE
        address = TEXT_BASE
        for name, steps in executable.steps.items():
            mm.symbols[name] = address
            # A gap after each function: running off its end faults on the fetch.
            address += round_up(4 * len(steps) + 4, 0x1000)
        for name, steps in executable.steps.items():
            for index, step in enumerate(steps):
                mm.text[mm.symbols[name] + 4 * index] = self._resolve(step, mm.symbols)
        mm.text[VDSO_BASE] = Mov(8, c.NR_RT_SIGRETURN)
        mm.text[VDSO_BASE + 4] = Svc()
        if executable.data_size:
            mm.memory.map(DATA_BASE, executable.data + bytes(executable.data_size
                                                             - len(executable.data)))
        mm.memory.map(STACK_TOP - self.stack_size, bytes(self.stack_size))
        return mm

    @staticmethod
    def _resolve(step, symbols: dict[str, int]):
        def value(operand):
            if isinstance(operand, Symbol):
                if operand.name not in symbols:
                    raise ValueError(f"undefined symbol {operand.name!r}")
                return symbols[operand.name] + operand.offset
            return operand
        if isinstance(step, Mov):
            return Mov(step.register, value(step.value))
        if isinstance(step, Syscall):
            return Syscall(step.number, tuple(value(arg) for arg in step.args))
        return step

    def read_file(self, path: str) -> bytes | int:
        """Read a /proc file: the contents, or a negative errno."""
        if path == SYSCTL_SME_DEFAULT_VL:
            return f"{self.sme_default_vl}\n".encode()
        if path == "/proc/cpuinfo":
            return f"processor\t: 0\n{cpuinfo_features(self.hwcap2)}\n\n".encode()
        parts = path.split("/")
        if len(parts) == 4 and parts[:2] == ["", "proc"] and parts[3] == "auxv" \
                and parts[2].isdigit() and int(parts[2]) in self.processes:
            return self._auxv_bytes(self.processes[int(parts[2])])
        return -c.ENOENT

    def write_file(self, path: str, data: bytes) -> int:
        """Write a /proc file: bytes consumed, or a negative errno.

        The SME default-VL sysctl parses like ``proc_dointvec``; ``-1`` means the maximum;
        an invalid VL is -EINVAL, a valid one is rounded as PR_SME_SET_VL would (§5).
        """
        if path == "/proc/cpuinfo" or (path.startswith("/proc/") and path.endswith("/auxv")):
            return -_EACCES
        if path != SYSCTL_SME_DEFAULT_VL:
            return -c.ENOENT
        vl = _parse_proc_int(bytes(data).decode("ascii", "replace"))
        if vl is None:
            return -c.EINVAL
        if vl == -1:
            vl = self.lengths.max_vl
        if vl % 16 or not 16 <= vl <= c.SVE_VL_MAX:
            return -c.EINVAL
        self.sme_default_vl = self.lengths.find_supported(vl)
        return len(data)

    def _auxv(self) -> tuple[tuple[int, int], ...]:
        return ((c.AT_HWCAP2, self.hwcap2), (c.AT_MINSIGSTKSZ, self.minsigstksz))

    @staticmethod
    def _auxv_bytes(process: Process) -> bytes:
        pairs = list(process.auxv) + [(c.AT_NULL, 0)]
        return b"".join(key.to_bytes(8, "little") + value.to_bytes(8, "little")
                        for key, value in pairs)

    # ========================================================================= scheduler
    def run(self, *, max_steps: int = 1_000_000, quantum: int = 64,
            rng: random.Random | None = None) -> int:
        """Run runnable threads until none is left or ``max_steps`` steps have executed.

        Each time slice is ``quantum`` steps, or a random 1..``quantum`` with ``rng`` (which
        also picks the next thread at random): preemption then happens at random points.
        Returns the number of steps executed.
        """
        steps = 0
        while steps < max_steps:
            thread = self._pick(rng)
            if thread is None:
                break
            self._switch_to(thread)
            budget = rng.randint(1, quantum) if rng else quantum
            while budget and thread.runnable and steps < max_steps:
                self._step(thread)
                steps += 1
                budget -= 1
                if thread.yield_requested:
                    break
            thread.yield_requested = False
        return steps

    def _pick(self, rng: random.Random | None) -> Thread | None:
        runnable = [thread for thread in self.threads.values() if thread.runnable]
        if not runnable:
            return None
        if rng is not None:
            chosen = rng.choice(runnable)
        else:
            later = [thread for thread in runnable if thread.tid > self._last_picked]
            chosen = later[0] if later else runnable[0]
        self._last_picked = chosen.tid
        return chosen

    def _switch_to(self, thread: Thread) -> None:
        if self.current is thread:
            return
        if self._live:
            self._engine_save(self.current)
            self._live = False
            self.engine.sme_enabled = False
        self.bus.user_memory = thread.process.mm.memory
        self.current = thread
        self.stats.context_switches += 1

    # ============================================================ engine save and restore
    def _kissue(self, word: int, **operands: int):
        """Issue an instruction at EL1 on the kernel's behalf."""
        values = operand_values(word, operands)
        with self.bus.kernel_mode():
            result = self.engine.issue(word, values)
        if result.status is not Status.OK:
            raise EngineProtocolError(f"kernel instruction 0x{word:08x} ended {result.status}")
        return result

    def _engine_save(self, thread: Thread) -> None:
        """Store the engine's copy of ``thread``'s state into its save areas (engine stays on)."""
        fp = thread.fp
        svl_bytes = fp.sme_vl
        count = 1
        fp.svcr = self._kissue(_MRS_SVCR).scalar
        if fp.svcr & c.SVCR_SM_MASK:
            for n in range(32):
                self._kissue(_STR_Z[n], rn=fp.sve_state + n * svl_bytes)
            predicates = fp.sve_state + 32 * svl_bytes
            for n in range(16):
                self._kissue(_STR_P[n], rn=predicates + n * (svl_bytes // 8))
            # FFR is not accessible in streaming mode without FA64: it is saved as zero.
            self.ops.write_kernel(predicates + 16 * (svl_bytes // 8), bytes(svl_bytes // 8))
            fp.fp_type = FpType.SVE
            count += 48
        else:
            fp.fp_type = FpType.FPSIMD
        if fp.svcr & c.SVCR_ZA_MASK:
            for row in range(svl_bytes):
                self._kissue(_STR_ZA, rv=row, rn=fp.sme_state + row * svl_bytes)
            count += svl_bytes
        fp.fpsr, fp.fpcr = self.engine.fpsr, self.engine.fpcr
        self.stats.saves += 1
        self.stats.save_instructions += count

    def _engine_restore(self, thread: Thread) -> None:
        """Load ``thread``'s saved state into the engine (SME access already enabled)."""
        fp = thread.fp
        svl_bytes = fp.sme_vl
        self.engine.smcr_len = sve_vq_from_vl(svl_bytes) - 1
        if self.engine.svl != 8 * svl_bytes:
            raise EngineProtocolError(f"engine selected SVL {self.engine.svl} for a "
                                      f"{svl_bytes}-byte vector length")
        count = 0
        differing = self.engine.svcr ^ fp.svcr
        if differing & c.SVCR_SM_MASK:
            self._kissue(_SMSTART_SM if fp.svcr & c.SVCR_SM_MASK else _SMSTOP_SM)
            count += 1
        if differing & c.SVCR_ZA_MASK:
            self._kissue(_SMSTART_ZA if fp.svcr & c.SVCR_ZA_MASK else _SMSTOP_ZA)
            count += 1
        if fp.svcr & c.SVCR_SM_MASK:
            for n in range(32):
                self._kissue(_LDR_Z[n], rn=fp.sve_state + n * svl_bytes)
            predicates = fp.sve_state + 32 * svl_bytes
            for n in range(16):
                self._kissue(_LDR_P[n], rn=predicates + n * (svl_bytes // 8))
            count += 48
        if fp.svcr & c.SVCR_ZA_MASK:
            for row in range(svl_bytes):
                self._kissue(_LDR_ZA, rv=row, rn=fp.sme_state + row * svl_bytes)
            count += svl_bytes
        self.stats.restores += 1
        self.stats.restore_instructions += count

    def _make_live(self, thread: Thread) -> None:
        """Give ``thread`` (the current thread) the engine, restoring unless it already holds it."""
        self.engine.sme_enabled = True
        if self._holder is thread:
            self.stats.restores_skipped += 1
        else:
            self._engine_restore(thread)
            self._holder = thread
        self.engine.fpsr, self.engine.fpcr = thread.fp.fpsr, thread.fp.fpcr
        self._live = True

    def _preserve(self, thread: Thread) -> None:
        """``fpsimd_preserve_current_state``: make the saved state current, keep it live."""
        if self._live and self._holder is thread:
            self._engine_save(thread)

    def _flush(self, thread: Thread) -> None:
        """Save ``thread``'s live state and forget the engine's copy (it is about to change)."""
        if self._live and self._holder is thread:
            self._engine_save(thread)
            self._live = False
            self.engine.sme_enabled = False
        if self._holder is thread:
            self._holder = None

    def _track_svcr(self, thread: Thread) -> None:
        """After an SVCR write by ``thread``: a PSTATE.SM change zeroed Z, hence V."""
        svcr = self.engine.svcr
        if (svcr ^ thread.fp.svcr) & c.SVCR_SM_MASK:
            thread.fp.vregs[:] = bytes(512)
        thread.fp.svcr = svcr

    def _read_fp_status(self, thread: Thread, name: str) -> int:
        if self._live and self._holder is thread:
            return getattr(self.engine, name)
        return getattr(thread.fp, name)

    def _write_fp_status(self, thread: Thread, name: str, value: int) -> None:
        value &= 0xFFFFFFFF
        if self._live and self._holder is thread:
            setattr(self.engine, name, value)
        else:
            setattr(thread.fp, name, value)

    # ============================================================================ steps
    def _step(self, thread: Thread) -> None:
        self._deliver_signals(thread)
        if not thread.runnable:
            return
        cpu = thread.cpu
        step = thread.process.mm.text.get(cpu.pc)
        if step is None:
            self._data_abort(thread, cpu.pc, write=False, fetch=True)
        elif isinstance(step, int):
            self._execute_engine_instruction(thread, step)
        elif isinstance(step, Mov):
            cpu.x[step.register] = step.value & MASK64
            cpu.pc += 4
        elif isinstance(step, Syscall):
            cpu.x[8] = step.number
            for index, value in enumerate(step.args):
                cpu.x[index] = value & MASK64
            cpu.pc += 4
            self._svc(thread)
        elif isinstance(step, Svc):
            cpu.pc += 4
            self._svc(thread)
        elif isinstance(step, Msr):
            self._msr(thread, step.system_register, cpu.x[step.register])
            cpu.pc += 4
        elif isinstance(step, Mrs):
            cpu.x[step.register] = self._mrs(thread, step.system_register)
            cpu.pc += 4
        elif isinstance(step, Ret):
            cpu.pc = cpu.x[30]
        elif isinstance(step, Brk):
            # brk_handler -> arm64_force_sig_fault: no fault record, PC not advanced.
            self._force_sig(thread, c.SIGTRAP, SiginfoFault(
                si_signo=c.SIGTRAP, si_errno=0, si_code=c.TRAP_BRKPT, si_addr=cpu.pc).pack())
        elif isinstance(step, Call):
            cpu.pc += 4
            try:
                step.function(UserContext(self, thread))
            except MemoryFault as fault:
                self._data_abort(thread, fault.address, fault.write)
            except IllegalInstruction:
                self._force_signal_inject(thread, c.SIGILL, c.ILL_ILLOPC, cpu.pc - 4)

    def _msr(self, thread: Thread, name: str, value: int) -> None:
        if name == "TPIDR_EL0":
            thread.cpu.tpidr = value
        elif name == "TPIDR2_EL0":
            thread.cpu.tpidr2 = value
        else:
            self._write_fp_status(thread, name.lower(), value)

    def _mrs(self, thread: Thread, name: str) -> int:
        if name == "TPIDR_EL0":
            return thread.cpu.tpidr
        if name == "TPIDR2_EL0":
            return thread.cpu.tpidr2
        return self._read_fp_status(thread, name.lower())

    def _execute_engine_instruction(self, thread: Thread, word: int) -> None:
        cpu = thread.cpu
        operands = read_operands(word, cpu)
        result = self.engine.issue(word, operands)
        if result.status is Status.SME_TRAP and result.smtc == c.ESR_ELX_SME_ISS_SMTC_SME_DISABLED:
            if not self._do_sme_acc(thread):
                return
            result = self.engine.issue(word, operands)
        if result.status is Status.OK:
            write_result(word, result.scalar, cpu)
            if _has_trait(word, Trait.SVCR_WRITE):
                self._track_svcr(thread)
            cpu.pc += 4
        elif result.status is Status.FAULT:
            self._data_abort(thread, result.fault_address, _has_trait(word, Trait.STORE))
        else:
            # UNDEF, or an SME trap other than "SME disabled" (SMTC 1-4): do_sme_acc / undef.
            self._force_signal_inject(thread, c.SIGILL, c.ILL_ILLOPC, cpu.pc)

    def _do_sme_acc(self, thread: Thread) -> bool:
        """The SMTC 0 trap: first use allocates and enables SME; later ones restore lazily."""
        fp = thread.fp
        if not fp.tif_sme:
            if not (self.ops.sve_alloc(fp, flush=False) and self.ops.sme_alloc(fp, flush=True)):
                self._kill_process(thread.process, c.SIGKILL, None)
                return False
            fp.tif_sme = True
            self.stats.first_use_traps += 1
        self._make_live(thread)
        return True

    # =========================================================================== faults
    def _data_abort(self, thread: Thread, address: int, write: bool, fetch: bool = False) -> None:
        """A translation fault at EL0: ESR recorded, SIGSEGV with si_addr = address."""
        ec = 0x20 if fetch else c.ESR_ELX_EC_DABT_LOW
        esr = (ec << c.ESR_ELX_EC_SHIFT) | c.ESR_ELX_IL | c.ESR_ELX_FSC_FAULT_L0
        if write:
            esr |= c.ESR_ELX_WNR
        thread.fault_address, thread.fault_code = address, esr
        code = c.SEGV_ACCERR if address >= KERNEL_BASE else c.SEGV_MAPERR
        self._force_sig(thread, c.SIGSEGV, SiginfoFault(si_signo=c.SIGSEGV, si_errno=0,
                                                         si_code=code, si_addr=address).pack())

    def _force_signal_inject(self, thread: Thread, signo: int, code: int, address: int) -> None:
        """``force_signal_inject`` via ``arm64_notify_die`` (clears the fault record)."""
        thread.fault_address = thread.fault_code = 0
        self._force_sig(thread, signo, SiginfoFault(si_signo=signo, si_errno=0, si_code=code,
                                                    si_addr=address & MASK64).pack())

    def _force_sig(self, thread: Thread, signo: int, info: bytes) -> None:
        """``force_sig_info``: a blocked or ignored handler is reset to SIG_DFL and unblocked."""
        handlers = thread.process.handlers
        action = handlers.action(signo)
        bit = 1 << (signo - 1)
        if thread.blocked & bit or action.handler == c.SIG_IGN:
            handlers.actions[signo] = replace(action, handler=c.SIG_DFL)
            thread.blocked &= ~bit
        thread.pending.append(PendingSignal(signo, info, forced=True))

    # ========================================================================= signals
    def _queue(self, queue: list[PendingSignal], signo: int, info: bytes) -> None:
        if signo < 32 and any(pending.signo == signo for pending in queue):
            return
        queue.append(PendingSignal(signo, info))

    def _ignored(self, process: Process, signo: int) -> bool:
        handler = process.handlers.action(signo).handler
        return handler == c.SIG_IGN or (handler == c.SIG_DFL and signo in _IGNORED_SIGNALS)

    def _generate(self, process: Process, thread: Thread | None, signo: int, info: bytes) -> None:
        """Send ``signo`` to a process (``thread`` None) or to one of its threads."""
        if signo == c.SIGKILL:
            self._kill_process(process, c.SIGKILL, None)
            return
        if signo == c.SIGCONT:
            process.job_stopped = False
        # sig_ignored: an ignored signal is dropped unless the target blocks it.
        target = thread or next(t for t in process.threads if t.state is ThreadState.RUNNABLE)
        if self._ignored(process, signo) and not target.blocked & (1 << (signo - 1)):
            return
        self._queue(thread.pending if thread else process.shared_pending, signo, info)

    def _dequeue(self, thread: Thread) -> PendingSignal | None:
        """Synchronous (forced) signals first, then the lowest unblocked one, private first."""
        forced = [pending for pending in thread.pending if pending.forced]
        if forced:
            thread.pending.remove(forced[0])
            return forced[0]
        for queue in (thread.pending, thread.process.shared_pending):
            deliverable = [pending for pending in queue
                           if not thread.blocked & (1 << (pending.signo - 1))]
            if deliverable:
                chosen = min(deliverable, key=lambda pending: pending.signo)
                queue.remove(chosen)
                return chosen
        return None

    def _deliver_signals(self, thread: Thread) -> None:
        """``do_signal`` on every return to user: deliver all deliverable signals (nesting)."""
        while thread.runnable:
            pending = self._dequeue(thread)
            if pending is None:
                return
            signo = pending.signo
            handlers = thread.process.handlers
            action = handlers.action(signo)
            if action.handler == c.SIG_IGN:
                continue
            if action.handler == c.SIG_DFL:
                if signo in _IGNORED_SIGNALS:
                    continue
                if signo in _STOP_SIGNALS:
                    thread.process.job_stopped = True
                    return
                self._kill_process(thread.process, signo,
                                   thread if signo in _CORE_SIGNALS else None, pending.info)
                return
            if action.flags & c.SA_RESETHAND:
                handlers.actions[signo] = replace(action, handler=c.SIG_DFL)
            if not self._setup_rt_frame(thread, pending, action):
                self._force_sigsegv(thread, signo)
                continue
            thread.blocked |= action.mask & ~_UNBLOCKABLE
            if not action.flags & c.SA_NODEFER:
                thread.blocked |= 1 << (signo - 1)
            self.stats.signals_delivered += 1

    def _force_sigsegv(self, thread: Thread, failed_signo: int) -> None:
        """A frame could not be set up: SIGSEGV, fatal if SIGSEGV itself was being delivered."""
        if failed_signo == c.SIGSEGV:
            thread.process.handlers.actions[c.SIGSEGV] = KernelSigaction(
                handler=c.SIG_DFL, flags=0, restorer=0, mask=0)
        self._force_sig(thread, c.SIGSEGV, SiginfoKill(si_signo=c.SIGSEGV, si_errno=0,
                                                       si_code=c.SI_KERNEL, si_pid=0,
                                                       si_uid=0).pack())

    def _signal_context(self, thread: Thread, siginfo: bytes | None) -> SignalContext:
        """What a signal delivered to ``thread`` now would save (its saved state must be current)."""
        fp, cpu = thread.fp, thread.cpu
        self.ops.sync_from_effective_state(fp)
        vq = sve_vq_from_vl(fp.sme_vl)
        streaming = bool(fp.svcr & c.SVCR_SM_MASK)
        za_on = bool(fp.svcr & c.SVCR_ZA_MASK)
        return SignalContext(
            regs=tuple(cpu.x), sp=cpu.sp, pc=cpu.pc, pstate=cpu.pstate,
            fault_address=thread.fault_address, sigmask=thread.blocked, fpsr=fp.fpsr,
            fpcr=fp.fpcr, vregs=bytes(fp.vregs),
            esr=thread.fault_code if thread.fault_code else None,
            sve_vl=fp.sme_vl if streaming else 0,
            sve_flags=c.SVE_SIG_FLAG_SM if streaming else 0,
            sve_payload=self.ops.read_kernel(fp.sve_state, sve_sig_regs_size(vq))
            if streaming else b"",
            tpidr2=cpu.tpidr2, za_vl=fp.sme_vl,
            za_payload=self.ops.read_kernel(fp.sme_state, za_sig_regs_size(vq)) if za_on else b"",
            siginfo=siginfo)

    def _setup_rt_frame(self, thread: Thread, pending: PendingSignal,
                        action: KernelSigaction) -> bool:
        self._flush(thread)
        fp, cpu = thread.fp, thread.cpu
        vq = sve_vq_from_vl(fp.sme_vl)
        try:
            layout = sigframe_layout(with_esr=bool(thread.fault_code),
                                     sve_vq=vq if fp.svcr & c.SVCR_SM_MASK else 0,
                                     za_vq=vq if fp.svcr & c.SVCR_ZA_MASK else 0)
        except FrameTooLarge:
            return False
        sp_top = cpu.sp
        next_frame = (sp_top - 16) & ~15
        frame = next_frame - layout.frame_size
        if frame < 0 or sp_top > TASK_SIZE:
            return False
        context = self._signal_context(thread, pending.info
                                      if action.flags & c.SA_SIGINFO else None)
        memory = thread.process.mm.memory
        try:
            for address, data in frame_writes(layout, frame, next_frame, context):
                memory.write(address, data)
        except MemoryFault:
            return False
        cpu.x[0] = pending.signo
        if action.flags & c.SA_SIGINFO:
            cpu.x[1] = frame
            cpu.x[2] = frame + RT_SIGFRAME_UC_OFFSET
        cpu.sp = frame
        cpu.x[29] = next_frame
        cpu.x[30] = (action.restorer if action.flags & c.SA_RESTORER
                     else thread.process.mm.symbols["__kernel_rt_sigreturn"])
        cpu.pc = action.handler
        cpu.pstate &= ~_PSR_TCO_BIT
        # Handlers run with PSTATE.SM=0, PSTATE.ZA=0 and TPIDR2_EL0=0 (§10.1).
        self.ops.task_smstop_sm(fp)
        fp.svcr &= ~c.SVCR_ZA_MASK
        cpu.tpidr2 = 0
        return True

    def _kill_process(self, process: Process, signo: int, dumper: Thread | None,
                      info: bytes | None = None) -> None:
        """A fatal signal: dump core if ``dumper`` is given, then every thread exits."""
        if not process.alive:
            return
        if dumper is not None:
            process.core_dump = self.core_dump(process, dumper, signo, info or bytes(128))
        for thread in process.threads:
            self._exit_thread(thread)
        process.exit_signal = signo

    def _exit_thread(self, thread: Thread) -> None:
        if thread.state is ThreadState.EXITED:
            return
        if self._holder is thread:
            self._holder = None
            if self._live:
                self._live = False
                self.engine.sme_enabled = False
        self.ops.free_buffers(thread.fp)
        thread.state = ThreadState.EXITED
        thread.tracer = None
        for tracee in self.threads.values():
            if tracee.tracer is thread:
                tracee.tracer = None

    # ============================================================================ syscalls
    def _svc(self, thread: Thread) -> None:
        """The SVC exception: dispatch X8 with X0-X5, write the result to X0."""
        number = thread.cpu.x[8]
        handler, arity = self._syscalls.get(number, (None, 0))
        if handler is None:
            self._syscall_entry(thread)
            result = -c.ENOSYS
        else:
            result = handler(thread, *thread.cpu.x[:arity])
        if thread.state is ThreadState.RUNNABLE:
            thread.cpu.x[0] = result & MASK64

    def _syscall_entry(self, thread: Thread) -> None:
        """Kernel entry (§7): streaming mode ends (Z/P/V zero, FPSR reset); ZA is kept."""
        if thread.state is not ThreadState.RUNNABLE:
            raise ValueError(f"thread {thread.tid} has exited and cannot make system calls")
        self._switch_to(thread)
        self.stats.syscalls += 1
        if self._live and self._holder is thread:
            if thread.fp.svcr & c.SVCR_SM_MASK:
                self._kissue(_SMSTOP_SM)
                self._track_svcr(thread)
        elif thread.fp.svcr & c.SVCR_SM_MASK:
            self._flush(thread)
            self.ops.task_smstop_sm(thread.fp)

    def _read_user(self, thread: Thread, address: int, length: int) -> bytes | None:
        """``copy_from_user``: None on a fault."""
        if address + length > TASK_SIZE:
            return None
        try:
            return bytes(thread.process.mm.memory.read(address, length))
        except MemoryFault:
            return None

    def _write_user(self, thread: Thread, address: int, data: bytes) -> bool:
        """``copy_to_user``: False on a fault."""
        if address + len(data) > TASK_SIZE:
            return False
        try:
            thread.process.mm.memory.write(address, data)
            return True
        except MemoryFault:
            return False

    def getpid(self, thread: Thread) -> int:
        self._syscall_entry(thread)
        return thread.process.pid

    def gettid(self, thread: Thread) -> int:
        self._syscall_entry(thread)
        return thread.tid

    def sched_yield(self, thread: Thread) -> int:
        self._syscall_entry(thread)
        thread.yield_requested = True
        return 0

    def nanosleep(self, thread: Thread, request: int, remaining: int = 0) -> int:
        """Sleeping gives the CPU away for the rest of the slice (no clock is modelled)."""
        self._syscall_entry(thread)
        data = self._read_user(thread, request, Timespec.SIZE)
        if data is None:
            return -c.EFAULT
        timespec = Timespec.unpack(data)
        if timespec.tv_sec < 0 or not 0 <= timespec.tv_nsec < 1_000_000_000:
            return -c.EINVAL
        thread.yield_requested = True
        return 0

    def write(self, thread: Thread, fd: int, buffer: int, count: int) -> int:
        """Standard output and error are captured in ``Process.stdout``."""
        self._syscall_entry(thread)
        if fd not in (1, 2):
            return -_EBADF
        data = self._read_user(thread, buffer, count)
        if data is None:
            return -c.EFAULT
        thread.process.stdout.extend(data)
        return count

    def exit(self, thread: Thread, status: int) -> int:
        self._syscall_entry(thread)
        self._exit_thread(thread)
        if not thread.process.alive:
            thread.process.exit_code = status & 0xFF
        return 0

    def exit_group(self, thread: Thread, status: int) -> int:
        self._syscall_entry(thread)
        for member in thread.process.threads:
            self._exit_thread(member)
        thread.process.exit_code = status & 0xFF
        return 0

    # ------------------------------------------------------------------------- prctl
    def prctl(self, thread: Thread, option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0,
              arg5: int = 0) -> int:
        """PR_SME_SET_VL / PR_SME_GET_VL (§4); PR_SVE_* are -EINVAL (no SVE)."""
        self._syscall_entry(thread)
        fp = thread.fp
        if option == c.PR_SME_SET_VL:
            vl = arg2 & c.PR_SME_VL_LEN_MASK
            flags = arg2 & ~vl & MASK64
            error = self.ops.vec_set_vector_length(thread, vl, flags)
            if error:
                return error
            status = fp.sme_vl_onexec if flags & c.PR_SME_SET_VL_ONEXEC else fp.sme_vl
            return status | (c.PR_SME_VL_INHERIT if fp.sme_vl_inherit else 0)
        if option == c.PR_SME_GET_VL:
            return fp.sme_vl | (c.PR_SME_VL_INHERIT if fp.sme_vl_inherit else 0)
        return -c.EINVAL

    # ----------------------------------------------------------------------- signals
    def kill(self, thread: Thread, pid: int, signo: int) -> int:
        """``kill(pid, sig)`` for pid > 0 (process groups are not modelled: -ESRCH)."""
        self._syscall_entry(thread)
        pid = _signed(pid)
        if not 0 <= signo <= c.NSIG:
            return -c.EINVAL
        process = self.processes.get(pid) if pid > 0 else None
        if process is None or not process.alive:
            return -c.ESRCH
        if signo:
            self._generate(process, None, signo, SiginfoKill(
                si_signo=signo, si_errno=0, si_code=c.SI_USER, si_pid=thread.process.pid,
                si_uid=0).pack())
        return 0

    def tkill(self, thread: Thread, tid: int, signo: int) -> int:
        return self._thread_kill(thread, None, _signed(tid), signo)

    def tgkill(self, thread: Thread, tgid: int, tid: int, signo: int) -> int:
        tgid = _signed(tgid)
        if tgid <= 0:
            self._syscall_entry(thread)
            return -c.EINVAL
        return self._thread_kill(thread, tgid, _signed(tid), signo)

    def _thread_kill(self, thread: Thread, tgid: int | None, tid: int, signo: int) -> int:
        self._syscall_entry(thread)
        if tid <= 0 or not 0 <= signo <= c.NSIG:
            return -c.EINVAL
        target = self.threads.get(tid)
        if (target is None or target.state is not ThreadState.RUNNABLE
                or (tgid is not None and target.process.pid != tgid)):
            return -c.ESRCH
        if signo:
            self._generate(target.process, target, signo, SiginfoKill(
                si_signo=signo, si_errno=0, si_code=c.SI_TKILL, si_pid=thread.process.pid,
                si_uid=0).pack())
        return 0

    def rt_sigaction(self, thread: Thread, signo: int, act: int, oldact: int,
                     sigsetsize: int = 8) -> int:
        self._syscall_entry(thread)
        if sigsetsize != 8:
            return -c.EINVAL
        new = None
        if act:
            data = self._read_user(thread, act, KernelSigaction.SIZE)
            if data is None:
                return -c.EFAULT
            new = KernelSigaction.unpack(data)
        if not 1 <= signo <= c.NSIG or (new is not None and signo in (c.SIGKILL, c.SIGSTOP)):
            return -c.EINVAL
        handlers = thread.process.handlers
        old = handlers.action(signo)
        if new is not None:
            handlers.actions[signo] = replace(new, mask=new.mask & ~_UNBLOCKABLE)
            if self._ignored(thread.process, signo):
                for queue in [thread.process.shared_pending] + [
                        t.pending for t in thread.process.threads]:
                    queue[:] = [pending for pending in queue if pending.signo != signo]
        if oldact and not self._write_user(thread, oldact, old.pack()):
            return -c.EFAULT
        return 0

    def rt_sigprocmask(self, thread: Thread, how: int, new_set: int, old_set: int,
                       sigsetsize: int = 8) -> int:
        self._syscall_entry(thread)
        if sigsetsize != 8:
            return -c.EINVAL
        old = thread.blocked
        if new_set:
            data = self._read_user(thread, new_set, 8)
            if data is None:
                return -c.EFAULT
            mask = int.from_bytes(data, "little") & ~_UNBLOCKABLE
            if how == c.SIG_BLOCK:
                thread.blocked |= mask
            elif how == c.SIG_UNBLOCK:
                thread.blocked &= ~mask
            elif how == c.SIG_SETMASK:
                thread.blocked = mask
            else:
                return -c.EINVAL
        if old_set and not self._write_user(thread, old_set, old.to_bytes(8, "little")):
            return -c.EFAULT
        return 0

    def rt_sigreturn(self, thread: Thread) -> int:
        """Restore the frame at SP with every check of ``restore_sigframe``; SIGSEGV on failure."""
        self._syscall_entry(thread)
        cpu = thread.cpu
        frame = cpu.sp
        try:
            if frame & 15 or frame + SIZEOF_RT_SIGFRAME > TASK_SIZE:
                raise InvalidFrame("misaligned or out-of-range frame")
            self._restore_sigframe(thread, frame)
        except (InvalidFrame, MemoryFault):
            # arm64_notify_segfault(regs->sp): the SP as far as the restore got.
            address = cpu.sp
            mapped = any(base <= address < base + data.size
                         for base, data in thread.process.mm.memory.regions.items())
            self._force_signal_inject(thread, c.SIGSEGV,
                                      c.SEGV_ACCERR if mapped else c.SEGV_MAPERR, address)
            return 0
        return cpu.x[0]

    def _restore_sigframe(self, thread: Thread, frame: int) -> None:
        memory = thread.process.mm.memory

        def read(address: int, length: int) -> bytes:
            if address + length > TASK_SIZE:
                raise MemoryFault(address, False)
            return bytes(memory.read(address, length))

        cpu, fp, ops = thread.cpu, thread.fp, self.ops
        uc, mc = frame + RT_SIGFRAME_UC_OFFSET, frame + RT_SIGFRAME_MCONTEXT_OFFSET
        sigmask = UContext.unpack_field("uc_sigmask",
                                        read(uc + UContext.offsetof("uc_sigmask"), 8))
        thread.blocked = sigmask & ~_UNBLOCKABLE
        sigcontext = SigContext.unpack(read(mc, SigContext.SIZE))
        cpu.x[:] = list(sigcontext.regs)
        cpu.sp, cpu.pc = sigcontext.sp, sigcontext.pc
        self._flush(thread)
        valid, cpu.pstate = valid_user_regs(sigcontext.pstate)
        if not valid:
            raise InvalidFrame("invalid PSTATE")
        user = parse_user_sigframe(read, frame)
        if user.fpsimd is None:
            raise InvalidFrame("no fpsimd_context")

        def fpsimd_record() -> FpsimdContext:
            if user.fpsimd_size != FpsimdContext.SIZE:
                raise InvalidFrame(f"fpsimd_context of {user.fpsimd_size} bytes")
            return FpsimdContext.unpack(read(user.fpsimd, FpsimdContext.SIZE))

        def restore_fpsimd() -> None:
            record = fpsimd_record()
            fp.svcr &= ~c.SVCR_SM_MASK
            fp.fp_type = FpType.FPSIMD
            ops.update_current_state(fp, record.vregs, record.fpsr, record.fpcr)

        if user.sve is None:
            restore_fpsimd()
        else:
            if user.sve_size < SveContext.SIZE:
                raise InvalidFrame("sve_context smaller than its header")
            header = SveContext.unpack(read(user.sve, SveContext.SIZE))
            streaming = bool(header.flags & c.SVE_SIG_FLAG_SM)
            vl = fp.sme_vl if streaming else 0
            if header.vl != vl:
                raise InvalidFrame(f"sve_context VL {header.vl} is not the task's {vl}")
            if not streaming and user.sve_size == SveContext.SIZE:
                restore_fpsimd()
            else:
                vq = sve_vq_from_vl(vl)
                if user.sve_size < sve_sig_context_size(vq):
                    raise InvalidFrame("sve_context too small for its VL")
                if not ops.sve_alloc(fp, flush=True):
                    raise InvalidFrame("out of memory for sve_state")
                ops.write_kernel(fp.sve_state, read(user.sve + SveContext.SIZE,
                                                    sve_sig_regs_size(vq)))
                if streaming:
                    fp.svcr |= c.SVCR_SM_MASK
                fp.fp_type = FpType.SVE
                record = fpsimd_record()
                ops.update_current_state(fp, record.vregs, record.fpsr, record.fpcr)
        if user.tpidr2 is not None:
            if user.tpidr2_size != Tpidr2Context.SIZE:
                raise InvalidFrame(f"tpidr2_context of {user.tpidr2_size} bytes")
            cpu.tpidr2 = Tpidr2Context.unpack(read(user.tpidr2, Tpidr2Context.SIZE)).tpidr2
        if user.za is not None:
            self._restore_za_context(thread, user.za, user.za_size, read)
        uc_stack = UContext.unpack(read(uc, UContext.SIZE))
        if uc_stack.ss_flags & ~(c.SS_DISABLE | _SS_ONSTACK | _SS_AUTODISARM):
            raise InvalidFrame("invalid uc_stack flags")
        if not uc_stack.ss_flags & c.SS_DISABLE and uc_stack.ss_size < _MINSIGSTKSZ:
            raise InvalidFrame("uc_stack smaller than MINSIGSTKSZ")

    def _restore_za_context(self, thread: Thread, address: int, size: int, read) -> None:
        fp, ops = thread.fp, self.ops
        if size < ZaContext.SIZE:
            raise InvalidFrame("za_context smaller than its header")
        header = ZaContext.unpack(read(address, ZaContext.SIZE))
        if header.vl != fp.sme_vl:
            raise InvalidFrame(f"za_context VL {header.vl} is not the task's {fp.sme_vl}")
        if size == ZaContext.SIZE:
            fp.svcr &= ~c.SVCR_ZA_MASK
            return
        vq = sve_vq_from_vl(header.vl)
        if size < za_sig_context_size(vq):
            raise InvalidFrame("za_context too small for its VL")
        if not ops.sve_alloc(fp, flush=False):
            raise InvalidFrame("out of memory for sve_state")
        if not ops.sme_alloc(fp, flush=True):
            fp.svcr &= ~c.SVCR_ZA_MASK
            fp.tif_sme = False
            raise InvalidFrame("out of memory for sme_state")
        ops.write_kernel(fp.sme_state, read(address + ZaContext.SIZE, za_sig_regs_size(vq)))
        fp.tif_sme = True
        fp.svcr |= c.SVCR_ZA_MASK

    # ------------------------------------------------------------------ fork and exec
    def fork(self, thread: Thread) -> int:
        """``fork()`` = ``clone(SIGCHLD)`` on arm64."""
        return self.clone(thread, c.SIGCHLD, 0, 0, 0, 0)

    def clone(self, thread: Thread, flags: int, newsp: int = 0, parent_tid: int = 0,
              tls: int = 0, child_tid: int = 0) -> int:
        """``clone`` with the ≥ 6.16 SME rules (§9.1): the child never starts in streaming
        mode; without CLONE_VM it inherits TPIDR2 and (if on) ZA, with CLONE_VM both are 0."""
        self._syscall_entry(thread)
        if flags & ~_CLONE_SUPPORTED:
            return -c.EINVAL
        if (flags & c.CLONE_SIGHAND and not flags & c.CLONE_VM) or \
                (flags & c.CLONE_THREAD and not flags & c.CLONE_SIGHAND):
            return -c.EINVAL
        parent = thread.fp
        self._flush(thread)
        self.ops.sync_from_effective_state(parent)
        child_fp = FpState(sme_vl=parent.sme_vl, vregs=bytearray(parent.vregs),
                           fpsr=parent.fpsr, fpcr=parent.fpcr, svcr=parent.svcr,
                           sme_vl_onexec=parent.sme_vl_onexec,
                           sme_vl_inherit=parent.sme_vl_inherit)
        self.ops.task_smstop_sm(child_fp)
        child_fp.svcr &= ~c.SVCR_ZA_MASK
        cpu = thread.cpu
        child_cpu = CpuContext(x=list(cpu.x), sp=newsp or cpu.sp, pc=cpu.pc, pstate=cpu.pstate,
                               tpidr=tls if flags & c.CLONE_SETTLS else cpu.tpidr)
        child_cpu.x[0] = 0
        if not flags & c.CLONE_VM:
            child_cpu.tpidr2 = cpu.tpidr2
            if parent.svcr & c.SVCR_ZA_MASK:
                child_fp.sve_state = self.heap.alloc(self.ops.sve_state_size(parent))
                child_fp.sme_state = self.heap.alloc(self.ops.sme_state_size(parent))
                if child_fp.sve_state is None or child_fp.sme_state is None:
                    self.ops.free_buffers(child_fp)
                    return -c.ENOMEM
                self.ops.write_kernel(child_fp.sme_state, self.ops.read_kernel(
                    parent.sme_state, self.ops.sme_state_size(parent)))
                child_fp.tif_sme = True
                child_fp.svcr |= c.SVCR_ZA_MASK
        if flags & c.CLONE_THREAD:
            child = self._new_thread(thread.process, child_cpu, child_fp)
        else:
            child = self._new_thread(None, child_cpu, child_fp)
            process = child.process
            process.parent_pid = thread.process.pid
            process.name = thread.process.name
            process.auxv = thread.process.auxv
            process.mm = thread.process.mm if flags & c.CLONE_VM else thread.process.mm.duplicate()
            process.handlers = (thread.process.handlers if flags & c.CLONE_SIGHAND
                                else SignalHandlers(dict(thread.process.handlers.actions)))
        child.blocked = thread.blocked
        return child.tid

    def execve(self, thread: Thread, pathname: int, argv: int = 0, envp: int = 0) -> int:
        """``execve``: the path is a NUL-terminated string in the caller's memory."""
        self._syscall_entry(thread)
        path = bytearray()
        while True:
            byte = self._read_user(thread, pathname + len(path), 1)
            if byte is None:
                return -c.EFAULT
            if byte == b"\0":
                break
            path.extend(byte)
            if len(path) >= 4096:
                return -_ENAMETOOLONG
        name = path.decode("utf-8", "replace")
        if name not in self.filesystem:
            return -c.ENOENT
        self._exec(thread, name)
        return 0

    def _exec(self, thread: Thread, path: str) -> None:
        """The point of no return of ``execve`` (§9.2): new image, SME state reset."""
        process = thread.process
        for member in process.threads:
            if member is not thread:
                self._exit_thread(member)
        process.threads[:] = [thread]
        process.mm = self._load(self.filesystem[path])
        if self.current is thread:
            self.bus.user_memory = process.mm.memory
        process.handlers = SignalHandlers({signo: action for signo, action
                                           in process.handlers.actions.items()
                                           if action.handler == c.SIG_IGN})
        process.name = path.rsplit("/", 1)[-1]
        process.auxv = self._auxv()
        fp = thread.fp
        self._flush(thread)
        self.ops.free_buffers(fp)
        vl = fp.sme_vl_onexec or self.sme_default_vl
        thread.fp = FpState(sme_vl=self.lengths.find_supported(vl),
                            sme_vl_inherit=fp.sme_vl_inherit,
                            sme_vl_onexec=fp.sme_vl_onexec if fp.sme_vl_inherit else 0)
        thread.cpu = CpuContext(sp=STACK_TOP, pc=process.mm.symbols["main"])
        thread.fault_address = thread.fault_code = 0

    # ------------------------------------------------------------------------ ptrace
    def ptrace(self, thread: Thread, request: int, pid: int, addr: int = 0, data: int = 0) -> int:
        """PTRACE_ATTACH (the tracee stops at once), PTRACE_DETACH, PTRACE_{GET,SET}REGSET."""
        self._syscall_entry(thread)
        target = self.threads.get(_signed(pid))
        if target is None or target.state is not ThreadState.RUNNABLE:
            return -c.ESRCH
        if request == c.PTRACE_ATTACH:
            if target.process is thread.process or target.tracer is not None:
                return -c.EPERM
            target.tracer = thread
            return 0
        if target.tracer is not thread:
            return -c.ESRCH
        if request == c.PTRACE_DETACH:
            target.tracer = None
            return 0
        if request not in (c.PTRACE_GETREGSET, c.PTRACE_SETREGSET):
            return -c.EIO
        raw = self._read_user(thread, data, Iovec.SIZE)
        if raw is None:
            return -c.EFAULT
        iov = Iovec.unpack(raw)
        regset = self.regsets.find(addr)
        if regset is None or iov.length % regset.size:
            return -c.EINVAL
        length = min(iov.length, regset.max_bytes)
        if request == c.PTRACE_GETREGSET:
            produced = regset.get(target)
            if isinstance(produced, int):
                return produced
            if not self._write_user(thread, iov.base, produced[:length]):
                return -c.EFAULT
        else:
            payload = self._read_user(thread, iov.base, length)
            if payload is None:
                return -c.EFAULT
            error = regset.set(target, payload)
            if error:
                return error
        if not self._write_user(thread, data + Iovec.offsetof("length"),
                                Iovec.pack_field("length", length)):
            return -c.EFAULT
        return 0

    # ---------------------------------------------------------------------- core dumps
    def core_dump(self, process: Process, dumper: Thread, signo: int, siginfo: bytes) -> bytes:
        """The ELF core file of ``process`` killed by ``signo`` in ``dumper`` (§12)."""
        others = [t for t in reversed(process.threads)
                  if t is not dumper and t.state is ThreadState.RUNNABLE]
        notes = []
        for index, thread in enumerate([dumper] + others):
            self._preserve(thread)
            cpu = thread.cpu
            pending = 0
            for queued in thread.pending:
                pending |= 1 << (queued.signo - 1)
            notes.append(CoreNote("CORE", c.NT_PRSTATUS, ElfPrstatus(
                si_signo=signo, si_code=0, si_errno=0, pr_cursig=signo, pr_sigpend=pending,
                pr_sighold=thread.blocked, pr_pid=thread.tid, pr_ppid=process.parent_pid,
                pr_pgrp=process.pid, pr_sid=process.pid, regs=tuple(cpu.x), sp=cpu.sp,
                pc=cpu.pc, pstate=cpu.pstate, pr_fpvalid=1).pack()))
            if index == 0:
                notes.append(CoreNote("CORE", c.NT_PRPSINFO, ElfPrpsinfo(
                    pr_state=0, pr_sname=ord("R"), pr_zomb=0, pr_nice=0, pr_flag=0, pr_uid=0,
                    pr_gid=0, pr_pid=process.pid, pr_ppid=process.parent_pid,
                    pr_pgrp=process.pid, pr_sid=process.pid,
                    pr_fname=process.name.encode()[:15], pr_psargs=process.name.encode()[:79])
                    .pack()))
                notes.append(CoreNote("CORE", c.NT_SIGINFO, siginfo))
                notes.append(CoreNote("CORE", c.NT_AUXV, self._auxv_bytes(process)))
                # No file-backed mappings: a zero count and the page size.
                notes.append(CoreNote("CORE", c.NT_FILE, (0).to_bytes(8, "little")
                                      + (4096).to_bytes(8, "little")))
            for regset in self.regsets.regsets[1:]:
                produced = regset.get(thread)
                if isinstance(produced, bytes):
                    notes.append(CoreNote(regset.core_name, regset.note_type,
                                          produced[:regset.max_bytes]))
        segments = [CoreSegment(base, bytes(data))
                    for base, data in process.mm.memory.regions.items()]
        return elf_core(notes, segments)


def _parse_proc_int(text: str) -> int | None:
    """One integer as ``proc_dointvec`` reads it (base 0, optional '-', whitespace around)."""
    stripped = text.strip()
    negative = stripped.startswith("-")
    digits = stripped[1:] if negative else stripped
    try:
        if digits[:2].lower() == "0x":
            value = int(digits[2:], 16)
        elif len(digits) > 1 and digits.startswith("0"):
            value = int(digits[1:], 8)
        else:
            value = int(digits, 10)
    except ValueError:
        return None
    if not digits[-1:].isalnum() or "_" in digits or digits[:1] in "+-":
        return None
    value = -value if negative else value
    return value if -(1 << 31) <= value < 1 << 31 else None


def _signed(value: int) -> int:
    """A syscall argument register read as a C ``int``/``long`` (two's complement)."""
    value &= MASK64
    return value - (1 << 64) if value >> 63 else value
