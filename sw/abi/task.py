"""Tasks of the kernel model: the per-thread state Linux keeps, and processes.

:class:`FpState` mirrors the FP/SIMD/SME fields of arm64's ``thread_struct`` (docs/abi.md, "Per-thread state"):
``uw.fpsimd_state`` (V0-V31, FPSR, FPCR), ``svcr``, ``fp_type``, the SME vector length with its
pending ``vl_onexec`` and ``TIF_SME_VL_INHERIT``, ``TIF_SME``, and the two save areas
``sve_state`` (Z/P/FFR in the signal-frame layout, at the SME vector length since the engine
has no non-streaming SVE) and ``sme_state`` (ZA rows), which are kernel-heap addresses; and the
thread's virtual ZA contexts (a zatile extension, docs/abi.md "Virtual ZA contexts"): the
selected one's ZA and SVCR.ZA are ``sme_state`` and ``svcr``, the others are
:class:`ParkedZa` records.

Whether those fields or the engine hold a thread's live state is the kernel's business
(:mod:`sw.abi.kernel`); this module only holds data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from zatile.sw.abi import constants as c
from zatile.sw.abi.layouts import KernelSigaction
from zatile.sw.abi.mm import AddressSpace

__all__ = ["FpType", "ParkedZa", "FpState", "CpuContext", "ThreadState", "Thread", "Process",
           "SignalHandlers", "PendingSignal"]


class FpType(Enum):
    """``thread.fp_type``: which view of the vector registers the saved state holds."""

    #: V0-V31 in ``fpsimd_state`` are authoritative.
    FPSIMD = "fpsimd"
    #: Z/P in ``sve_state`` are authoritative (streaming mode); V is the low 128 bits of Z.
    SVE = "sve"


@dataclass
class ParkedZa:
    """A virtual ZA context of a thread that is not its selected one."""

    #: Kernel-heap address of its ZA save area (``sme_state_size`` bytes).
    state: int
    #: Its SVCR.ZA.
    za: bool = False


@dataclass
class FpState:
    """The FP/SIMD/SME part of ``thread_struct``."""

    sme_vl: int
    vregs: bytearray = field(default_factory=lambda: bytearray(512))
    fpsr: int = 0
    fpcr: int = 0
    fp_type: FpType = FpType.FPSIMD
    svcr: int = 0
    sme_vl_onexec: int = 0
    sme_vl_inherit: bool = False
    tif_sme: bool = False
    sve_state: int | None = None
    sme_state: int | None = None
    #: The selected virtual ZA context (0: the thread's own), the others by selector, and the
    #: selector the next ``PR_ZATILE_ZA_OPEN`` returns (selectors are never reused).
    za_selector: int = 0
    za_parked: dict[int, ParkedZa] = field(default_factory=dict)
    za_next_selector: int = 1


@dataclass
class CpuContext:
    """The general-purpose state of a thread (``pt_regs`` plus the TLS registers)."""

    x: list[int] = field(default_factory=lambda: [0] * 31)
    sp: int = 0
    pc: int = 0
    pstate: int = 0
    tpidr: int = 0
    tpidr2: int = 0


class ThreadState(Enum):
    """Whether a thread still exists (stopping is ``Thread.tracer`` / ``Process.job_stopped``)."""

    RUNNABLE = "runnable"
    EXITED = "exited"


@dataclass(frozen=True)
class PendingSignal:
    """A queued signal and the ``siginfo`` bytes it will be delivered with."""

    signo: int
    info: bytes
    #: Sent by the kernel for a fault (``force_sig``): a blocked or ignored handler is reset.
    forced: bool = False


@dataclass
class SignalHandlers:
    """``sighand_struct``: the actions of a process (shared by CLONE_SIGHAND)."""

    actions: dict[int, KernelSigaction] = field(default_factory=dict)

    def action(self, signo: int) -> KernelSigaction:
        return self.actions.get(signo, KernelSigaction(handler=0, flags=0, restorer=0, mask=0))


@dataclass(eq=False)
class Thread:
    """One thread: CPU context, FP/SME state, signal state, ptrace state."""

    tid: int
    process: "Process"
    cpu: CpuContext
    fp: FpState
    state: ThreadState = ThreadState.RUNNABLE
    blocked: int = 0
    pending: list[PendingSignal] = field(default_factory=list)
    #: ``thread.fault_address`` / ``thread.fault_code`` (ESR) of the last fault.
    fault_address: int = 0
    fault_code: int = 0
    #: The thread that PTRACE_ATTACHed to this one, if any (the tracee is then stopped).
    tracer: "Thread | None" = None
    #: Its tracer has seen the attach stop through wait4.
    stop_reported: bool = False
    #: Set by sched_yield/nanosleep: give up the rest of the time slice.
    yield_requested: bool = False
    #: What the thread sleeps on in a system call (None: it does not): ``("futex", id(mm),
    #: address, timed)`` or ``("child", pid)`` for wait4.
    waiting: tuple | None = None
    #: ``clear_child_tid`` (CLONE_CHILD_CLEARTID, set_tid_address): zeroed and futex-woken
    #: when the thread exits.
    clear_child_tid: int = 0
    #: The alternate signal stack (sigaltstack): base, size, and the flags last set
    #: (SS_DISABLE when there is none).
    sas_ss_sp: int = 0
    sas_ss_size: int = 0
    sas_ss_flags: int = c.SS_DISABLE

    @property
    def runnable(self) -> bool:
        """Alive, not sleeping, not stopped by a tracer, not stopped by SIGSTOP."""
        return (self.state is ThreadState.RUNNABLE and self.tracer is None
                and self.waiting is None and not self.process.job_stopped)


@dataclass(eq=False)
class Process:
    """A thread group and what it shares: address space, signal actions, output."""

    pid: int
    parent_pid: int
    mm: AddressSpace
    handlers: SignalHandlers
    name: str
    threads: list[Thread] = field(default_factory=list)
    shared_pending: list[PendingSignal] = field(default_factory=list)
    #: Stopped by SIGSTOP (and friends) until SIGCONT.
    job_stopped: bool = False
    #: Everything written to file descriptors 1 and 2.
    stdout: bytearray = field(default_factory=bytearray)
    #: ``exit_group`` status, or None while running or when killed by a signal.
    exit_code: int | None = None
    #: The signal that killed the process, if one did.
    exit_signal: int | None = None
    #: The ELF core file written when the signal's default action dumps core.
    core_dump: bytes | None = None
    #: The auxiliary vector given at exec: (AT_* key, value) pairs, AT_NULL excluded.
    auxv: tuple[tuple[int, int], ...] = ()
    #: Its parent has collected its status with wait4.
    reaped: bool = False

    @property
    def alive(self) -> bool:
        return any(thread.state is ThreadState.RUNNABLE for thread in self.threads)

    @property
    def wait_status(self) -> int | None:
        """The status ``wait4`` would report (None while the process runs)."""
        if self.alive:
            return None
        if self.exit_signal is not None:
            return self.exit_signal | (0x80 if self.core_dump is not None else 0)
        return (self.exit_code or 0) << 8
