"""The kernel model: processes and threads time-sharing one SME engine (Linux ≥ 6.16 ABI).

:class:`Kernel` is the CPU side of a single-CPU arm64 system whose SME unit is an
:class:`~sw.driver.Engine`. Threads run :class:`~sw.abi.program.Executable` programs (Python
steps) or compiled static ELF programs on a host CPU (:mod:`~zatile.sw.abi.host_tasks`);
engine instructions go to the engine with the thread's operand values, everything else (system
calls, traps, signals, ptrace, scheduling) is done here, with the semantics of
``arch/arm64/kernel/{fpsimd,signal,ptrace,process,syscall}.c`` as summarised in docs/abi.md.

Where each job lives
--------------------
:class:`Kernel` is the scheduler, the instruction stepper, system-call dispatch and the simple
system calls; the rest of its work is in mixins it combines, one module per subsystem as in
``arch/arm64/kernel/``: :mod:`~zatile.sw.abi.engine_context` (saving and restoring threads' SME
state on the engine, the SME trap, syscall entry), :mod:`~zatile.sw.abi.signals` (generation,
delivery, sigreturn), :mod:`~zatile.sw.abi.processes` (spawn, clone/fork, execve, exit),
:mod:`~zatile.sw.abi.ptrace`, :mod:`~zatile.sw.abi.procfs` (sysctl, cpuinfo, auxv) and
:mod:`~zatile.sw.abi.coredump`. They are mixins rather than collaborator objects because, like
Linux's subsystems sharing ``task_struct``, each needs the same kernel state (threads, engine,
save areas, the current thread) and calls the others' operations; passing that state around
would add a layer without separating anything.

Where a thread's SME state lives
--------------------------------
The engine holds the Z/P registers of at most one thread, ``holder``, and the ZA of as many
virtual ZA contexts as it has physical ones (:mod:`~zatile.sw.abi.za_contexts`); the rest is
in the threads' :class:`~sw.abi.task.FpState` and kernel-heap buffers. The policy is Linux's
*eager save, lazy restore* for SVCR, Z/P and FPSR/FPCR, and *lazy save* for ZA.

* **Switch out** (and whenever the kernel needs the saved state: signal delivery, sigreturn,
  fork, VL change, core dump): if the outgoing thread is live on the engine, its state is
  stored **by the engine's own instructions** issued at EL1 — ``MRS SVCR``; with SM=1
  ``STR Z0-Z31`` and ``STR P0-P15`` into ``sve_state`` — plus FPSR/FPCR through the control
  registers. Then SME access is disabled (``Engine.sme_enabled = False``). ZA stays in its
  physical context; it is stored (one ``STR ZA[Wv, 0]`` per row into ``sme_state``) when that
  context is needed for another thread's, or when the kernel needs the saved state.
* **Switch in** does nothing to the engine. The thread's first engine instruction traps with
  SMTC 0 (the engine's SME-disable trap). The trap handler — ``do_sme_acc`` — allocates the
  buffers on a thread's very first use, and otherwise *restores*: SMCR.LEN, ``SMSTART``/
  ``SMSTOP`` of SM as needed (a transition zeroes Z/P), ``LDR Z``/``LDR P`` when SM=1,
  FPSR/FPCR; then it selects the physical ZA context holding the thread's ZA, or loads it into
  another (``SMSTART``/``SMSTOP`` ZA, ``LDR ZA`` rows when ZA=1; the choice is in
  :mod:`~zatile.sw.abi.za_contexts`); then it
  enables SME and the instruction is re-executed. If the engine still holds exactly this
  thread's Z/P (no other thread used it and the kernel changed nothing since the save:
  ``fpsimd_last_state``), their restore is skipped.

Why: a thread that does not touch SME during its slice costs no engine instructions, a
thread switching back to itself costs no restore, a thread whose ZA stayed resident costs no
ZA traffic, and the trap is the hardware's own mechanism, so it needs nothing from the engine
beyond its architectural interface (and the ZA context selector). Isolation holds because the
engine is disabled whenever the current thread is not its holder, every restore overwrites
all state the thread can reach (Z/P when SM=1, all ZA rows of a context it loads with ZA=1, a
physical context holding nothing else of the thread's is never selected for it) and turns off
what it cannot (an SM or ZA 0→1 transition by the thread zeroes the storage), the
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

Modelled subset: one CPU; PTRACE_ATTACH stops the tracee at
once (no SIGSTOP/waitpid handshake), and only ATTACH, DETACH, GETREGSET and SETREGSET exist;
clone() flags beyond VM/FS/FILES/SIGHAND/THREAD/SYSVSEM/SETTLS/PARENT_SETTID/CHILD_SETTID/
CHILD_CLEARTID/exit signal are -EINVAL; futexes are WAIT/WAKE/REQUEUE/CMP_REQUEUE with
timeouts that expire only when nothing else can run;
kill() takes pid > 0 only (no process groups); no non-streaming SVE, SME2, FPMR, POE or GCS.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from zatile.sim.state import Memory, MemoryFault
from zatile.sw.abi import constants as c
from zatile.sw.abi.coredump import CoreDumpsMixin
from zatile.sw.abi.cpufeatures import SmeVectorLengths, hwcap2_from_id
from zatile.sw.abi.engine_context import EngineContextMixin, EngineProtocolError, IllegalInstruction
from zatile.sw.abi.elf_process import ElfImage
from zatile.sw.abi.fpsimd import FpsimdOps
from zatile.sw.abi.host_tasks import DEFAULT_HOST_QUANTUM, HostAddressSpace, HostTasksMixin
from zatile.sw.abi.layouts import SiginfoFault, Timespec
from zatile.sw.abi.mm import KERNEL_BASE, KernelHeap, SystemBus
from zatile.sw.abi.processes import ProcessesMixin
from zatile.sw.abi.procfs import SYSCTL_SME_DEFAULT_VL, ProcfsMixin
from zatile.sw.abi.program import Brk, Call, Executable, Mov, Mrs, Msr, Ret, Svc, Syscall
from zatile.sw.abi.ptrace import PtraceMixin
from zatile.sw.abi.regsets import RegsetView
from zatile.sw.abi.sigframe import TASK_SIZE, minimum_signal_stack_size
from zatile.sw.abi.signals import SignalsMixin
from zatile.sw.abi.task import Process, Thread, ThreadState
from zatile.sw.abi.za_contexts import ZaContextsMixin
from zatile.sw.arch.config import EngineConfig
from zatile.sim.engine import ModelEngine
from zatile.sw.arch.constants import MASK64
from zatile.sw.arch.engine import Engine

__all__ = ["Kernel", "KernelStats", "UserContext", "IllegalInstruction", "EngineProtocolError",
           "SYSCTL_SME_DEFAULT_VL"]

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
    #: Host-CPU threads stopped because their quantum of host instructions ran out.
    preemptions: int = 0
    #: Bytes of ZA the kernel stored from the engine and loaded into it.
    za_bytes_saved: int = 0
    za_bytes_restored: int = 0
    #: Virtual ZA contexts loaded into a physical one, and stored out of one to make room (or
    #: because the kernel needed the save area: signals, fork, VL changes).
    za_loads: int = 0
    za_evictions: int = 0
    #: Binds and selections that found the virtual context resident (no ZA moved).
    za_resident_hits: int = 0
    #: ``PR_ZATILE_ZA_SELECT`` calls that changed the selection.
    za_selects: int = 0
    #: Engine clock cycles the kernel's own instructions took (saves, restores, ZA loads and
    #: stores), on an engine with a clock (:attr:`~zatile.sw.arch.engine.Engine.cycles`).
    kernel_engine_cycles: int = 0


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
    def nzcv(self) -> int:
        """PSTATE.NZCV as ``MRS NZCV`` shows it, shifted down to bits 3-0 (N, Z, C, V)."""
        return self._thread.cpu.pstate >> 28 & 0xF

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


class Kernel(EngineContextMixin, ZaContextsMixin, SignalsMixin, ProcessesMixin, ProcfsMixin,
             PtraceMixin, CoreDumpsMixin, HostTasksMixin):
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
    host_quantum : int
        The time slice of a thread of an ELF process, in host instructions
        (:mod:`~zatile.sw.abi.host_tasks`).
    """

    def __init__(self, config: EngineConfig, *, engine_class: type[Engine] = ModelEngine,
                 heap_size: int = 8 << 20, stack_size: int = 256 << 10,
                 host_quantum: int = DEFAULT_HOST_QUANTUM):
        if host_quantum < 1:
            raise ValueError(f"host_quantum must be at least 1 instruction, not {host_quantum!r}")
        self.host_quantum = host_quantum
        self._rng: random.Random | None = None
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
        #: Executables by path: step programs (:meth:`install`) and ELF images (:meth:`spawn_elf`).
        self.filesystem: dict[str, Executable | ElfImage] = {}
        self.processes: dict[int, Process] = {}
        self.threads: dict[int, Thread] = {}
        self.current: Thread | None = None
        self._holder: Thread | None = None
        self._live = False
        self._init_za_contexts()
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
            c.NR_SIGALTSTACK: (self.sigaltstack, 2),
            c.NR_GETPID: (self.getpid, 0), c.NR_GETTID: (self.gettid, 0),
            c.NR_CLONE: (self.clone, 5), c.NR_EXECVE: (self.execve, 3),
            c.NR_FUTEX: (self.futex, 6), c.NR_WAIT4: (self.wait4, 4),
            c.NR_SET_TID_ADDRESS: (self.set_tid_address, 1), c.NR_GETPPID: (self.getppid, 0),
            c.NR_SCHED_GETAFFINITY: (self.sched_getaffinity, 3),
        }


    # ========================================================================= scheduler
    def run(self, *, max_steps: int = 1_000_000, quantum: int = 64,
            rng: random.Random | None = None) -> int:
        """Run runnable threads until none is left or ``max_steps`` steps have executed.

        Each time slice is ``quantum`` steps, or a random 1..``quantum`` with ``rng`` (which
        also picks the next thread at random): preemption then happens at random points. A
        step of a thread of an ELF process runs its host CPU until it enters the kernel, for
        at most ``host_quantum`` host instructions (a random 1..``host_quantum`` with ``rng``),
        after which it is preempted. Returns the number of steps executed.
        """
        self._rng = rng
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
        self._interrupt_sleepers()
        runnable = [thread for thread in self.threads.values() if thread.runnable]
        if not runnable:
            timed = [thread for thread in self.threads.values()
                     if thread.waiting is not None and thread.waiting[0] == "futex"
                     and thread.waiting[3]]
            for thread in timed:           # nothing else can happen: their time is up
                thread.waiting = None
                thread.cpu.x[0] = -c.ETIMEDOUT & MASK64
            runnable = timed
        if not runnable:
            return None
        if rng is not None:
            chosen = rng.choice(runnable)
        else:
            later = [thread for thread in runnable if thread.tid > self._last_picked]
            chosen = later[0] if later else runnable[0]
        self._last_picked = chosen.tid
        return chosen

    def _interrupt_sleepers(self) -> None:
        """A sleeping thread with a signal it can take wakes up: a futex wait returns -EINTR,
        wait4 is called again (after the handler)."""
        for thread in self.threads.values():
            if thread.waiting is None:
                continue
            pending = thread.pending + thread.process.shared_pending
            if any(signal.forced or not thread.blocked & (1 << (signal.signo - 1))
                   for signal in pending):
                if thread.waiting[0] == "futex":
                    thread.cpu.x[0] = -c.EINTR & MASK64
                thread.waiting = None

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


    # ============================================================================ steps
    def _step(self, thread: Thread) -> None:
        self._deliver_signals(thread)
        if not thread.runnable:
            return
        if isinstance(thread.process.mm, HostAddressSpace):
            self._run_host(thread)
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

    def sched_getaffinity(self, thread: Thread, tid: int, size: int, mask: int) -> int:
        """The CPUs ``tid`` (0: the caller) may run on: the one CPU, as an 8-byte mask."""
        self._syscall_entry(thread)
        target = self.threads.get(tid) if tid else thread
        if target is None or target.state is not ThreadState.RUNNABLE:
            return -c.ESRCH
        if size < 8 or size & 7:
            return -c.EINVAL
        return 8 if self._write_user(thread, mask, (1).to_bytes(8, "little")) else -c.EFAULT

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
            return -c.EBADF
        data = self._read_user(thread, buffer, count)
        if data is None:
            return -c.EFAULT
        thread.process.stdout.extend(data)
        return count


    # ------------------------------------------------------------------------- prctl
    def prctl(self, thread: Thread, option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0,
              arg5: int = 0) -> int:
        """PR_SME_SET_VL / PR_SME_GET_VL (docs/abi.md, "prctl"), and zatile's virtual ZA
        contexts (``PR_ZATILE_ZA_*``, docs/abi.md "Virtual ZA contexts"); PR_SVE_* are -EINVAL
        (no SVE)."""
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
        if option in (c.PR_ZATILE_ZA_OPEN, c.PR_ZATILE_ZA_SELECT, c.PR_ZATILE_ZA_CLOSE):
            return self._za_prctl(thread, option, arg2, arg3, arg4, arg5)
        return -c.EINVAL

    # ----------------------------------------------------------------------- signals


    # ------------------------------------------------------------------ fork and exec


    # ------------------------------------------------------------------------ ptrace

    # ---------------------------------------------------------------------- core dumps
