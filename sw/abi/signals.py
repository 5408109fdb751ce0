"""Signals: generation, delivery with the SME signal frame, and ``rt_sigreturn``.

The rules are those of docs/abi.md, "Signal frames" and "sigreturn"; the frame layout itself is
:mod:`zatile.sw.abi.sigframe`.
"""

from __future__ import annotations

from dataclasses import replace

from zatile.sim.state import MemoryFault
from zatile.sw.abi import constants as c
from zatile.sw.abi.layouts import (
    RT_SIGFRAME_MCONTEXT_OFFSET, RT_SIGFRAME_UC_OFFSET, SIZEOF_RT_SIGFRAME, FpsimdContext,
    KernelSigaction, SigContext, SiginfoFault, SiginfoKill, StackT, SveContext, Tpidr2Context,
    UContext,
    ZaContext, sve_sig_context_size, signed_long, sve_sig_regs_size, sve_vq_from_vl,
    za_sig_context_size, za_sig_regs_size,
)
from zatile.sw.abi.mm import KERNEL_BASE
from zatile.sw.abi.regsets import valid_user_regs
from zatile.sw.abi.sigframe import (
    TASK_SIZE, FrameTooLarge, InvalidFrame, SignalContext, frame_writes, parse_user_sigframe,
    sigframe_layout,
)
from zatile.sw.abi.task import FpType, PendingSignal, Process, Thread, ThreadState
from zatile.sw.arch.constants import MASK64

__all__ = ["SignalsMixin"]

#: Signals whose default action dumps core / is ignored / stops the process.
_CORE_SIGNALS = frozenset({c.SIGQUIT, c.SIGILL, c.SIGTRAP, c.SIGABRT, c.SIGBUS, c.SIGFPE,
                           c.SIGSEGV, c.SIGXCPU, c.SIGXFSZ, c.SIGSYS})
_IGNORED_SIGNALS = frozenset({c.SIGCHLD, c.SIGCONT, c.SIGURG, c.SIGWINCH})
_STOP_SIGNALS = frozenset({c.SIGSTOP, c.SIGTSTP, c.SIGTTIN, c.SIGTTOU})
_UNBLOCKABLE = (1 << (c.SIGKILL - 1)) | (1 << (c.SIGSTOP - 1))
_PSR_TCO_BIT = 1 << 25


def _int32(flags: int) -> int:
    """``ss_flags`` (kept unsigned, as the kernel's ``unsigned sas_ss_flags``) as the C int of
    ``stack_t``."""
    return flags - (1 << 32) if flags >> 31 & 1 else flags


class SignalsMixin:
    """Signal generation and delivery, signal frames and ``rt_sigreturn``.

    A mixin of :class:`~zatile.sw.abi.kernel.Kernel`: it uses the kernel's threads, engine and
    save areas directly.
    """

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
            if thread.sas_ss_flags & c.SS_AUTODISARM:          # signal_delivered
                self._reset_altstack(thread)
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
            siginfo=siginfo,
            altstack=(thread.sas_ss_sp, _int32(thread.sas_ss_flags), thread.sas_ss_size))

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
        sp_top = self._sigsp(thread, action, cpu.sp)
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
        # Handlers run with SM=0, ZA=0 and TPIDR2_EL0=0 (docs/abi.md, "Signal frames").
        self.ops.task_smstop_sm(fp)
        fp.svcr &= ~c.SVCR_ZA_MASK
        cpu.tpidr2 = 0
        return True

    # ------------------------------------------------------------- the alternate stack
    def sigaltstack(self, thread: Thread, new: int, old: int) -> int:
        """Set (``new``) and/or get (``old``) the thread's alternate signal stack
        (``stack_t``): -EPERM while running on it, -EINVAL for a bad mode, -ENOMEM below
        :data:`~zatile.sw.abi.constants.MINSIGSTKSZ` (docs/abi.md, "Signal frames")."""
        self._syscall_entry(thread)
        request = None
        if new:
            raw = self._read_user(thread, new, StackT.SIZE)
            if raw is None:
                return -c.EFAULT
            request = StackT.unpack(raw)
        sp = thread.cpu.sp
        previous = StackT(ss_sp=thread.sas_ss_sp, ss_size=thread.sas_ss_size,
                          ss_flags=_int32(self._sas_ss_flags(thread, sp)
                                          | thread.sas_ss_flags & c.SS_AUTODISARM))
        error = self._do_sigaltstack(thread, request, sp) if request is not None else 0
        if not error and old and not self._write_user(thread, old, previous.pack()):
            return -c.EFAULT
        return error

    def _do_sigaltstack(self, thread: Thread, request: StackT, sp: int) -> int:
        mode = request.ss_flags & ~c.SS_AUTODISARM & 0xFFFF_FFFF
        if self._on_sig_stack(thread, sp):
            return -c.EPERM
        if mode not in (c.SS_DISABLE, c.SS_ONSTACK, 0):
            return -c.EINVAL
        base, size = request.ss_sp, request.ss_size
        if mode == c.SS_DISABLE:
            base = size = 0
        elif size < c.MINSIGSTKSZ:
            return -c.ENOMEM
        thread.sas_ss_sp, thread.sas_ss_size = base, size
        thread.sas_ss_flags = request.ss_flags & 0xFFFF_FFFF
        return 0

    @staticmethod
    def _reset_altstack(thread: Thread) -> None:
        """``sas_ss_reset``: no alternate stack."""
        thread.sas_ss_sp = thread.sas_ss_size = 0
        thread.sas_ss_flags = c.SS_DISABLE

    @staticmethod
    def _on_sig_stack(thread: Thread, sp: int) -> bool:
        if thread.sas_ss_flags & c.SS_AUTODISARM:
            return False        # by construction not on it (the handler disarmed it)
        return sp > thread.sas_ss_sp and sp - thread.sas_ss_sp <= thread.sas_ss_size

    def _sas_ss_flags(self, thread: Thread, sp: int) -> int:
        if not thread.sas_ss_size:
            return c.SS_DISABLE
        return c.SS_ONSTACK if self._on_sig_stack(thread, sp) else 0

    def _sigsp(self, thread: Thread, action: KernelSigaction, sp: int) -> int:
        """Where a frame goes: the top of the alternate stack for an SA_ONSTACK handler when
        one is set up and not in use, else below ``sp``."""
        if action.flags & c.SA_ONSTACK and not self._sas_ss_flags(thread, sp):
            return thread.sas_ss_sp + thread.sas_ss_size
        return sp

    def kill(self, thread: Thread, pid: int, signo: int) -> int:
        """``kill(pid, sig)`` for pid > 0 (process groups are not modelled: -ESRCH)."""
        self._syscall_entry(thread)
        pid = signed_long(pid)
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
        return self._thread_kill(thread, None, signed_long(tid), signo)

    def tgkill(self, thread: Thread, tgid: int, tid: int, signo: int) -> int:
        tgid = signed_long(tgid)
        if tgid <= 0:
            self._syscall_entry(thread)
            return -c.EINVAL
        return self._thread_kill(thread, tgid, signed_long(tid), signo)

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
            mapped = any(base <= address < base + size
                         for base, size, _ in thread.process.mm.memory.ranges())
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
        # restore_altstack: uc_stack as sigaltstack would take it at the restored SP; only a
        # fault reading it fails the sigreturn, its other errors are ignored.
        uc_stack = UContext.unpack(read(uc, UContext.SIZE))
        self._do_sigaltstack(thread, StackT(ss_sp=uc_stack.ss_sp, ss_flags=uc_stack.ss_flags,
                                            ss_size=uc_stack.ss_size), cpu.sp)

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

