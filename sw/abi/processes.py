"""Processes and threads: program loading, fork/clone, execve, exit, and what threads and
processes wait on — futexes and wait4 (docs/abi.md, "fork and clone" and "execve").

A thread that sleeps in a system call has :attr:`~zatile.sw.abi.task.Thread.waiting` set and is
not scheduled until woken: by FUTEX_WAKE (its FUTEX_WAIT then returns 0), by a child's exit
(its wait4 is then executed again: the PC was moved back to the ``SVC``), or by a signal it can
take (a futex wait returns -EINTR, wait4 is restarted after the handler). A timed futex wait
ends with -ETIMEDOUT when no thread is left to run (no clock is modelled).
"""

from __future__ import annotations

from typing import Sequence

from zatile.sw.abi import constants as c
from zatile.sw.abi.layouts import round_up
from zatile.sw.abi.mm import DATA_BASE, STACK_TOP, TEXT_BASE, VDSO_BASE, AddressSpace
from zatile.sw.abi.program import Executable, Mov, Svc, Symbol, Syscall
from zatile.sw.abi.task import (
    CpuContext, FpState, ParkedZa, Process, SignalHandlers, Thread, ThreadState,
)

__all__ = ["ProcessesMixin"]

#: clone() flags the model implements; the rest (VFORK, PARENT, ...) return -EINVAL.
_CLONE_SUPPORTED = (c.CSIGNAL | c.CLONE_VM | c.CLONE_FS | c.CLONE_FILES | c.CLONE_SIGHAND
                    | c.CLONE_THREAD | c.CLONE_SYSVSEM | c.CLONE_SETTLS | c.CLONE_PARENT_SETTID
                    | c.CLONE_CHILD_SETTID | c.CLONE_CHILD_CLEARTID | c.CLONE_DETACHED)
_FUTEX_COMMAND = ~(c.FUTEX_PRIVATE_FLAG | c.FUTEX_CLOCK_REALTIME)
#: The most bytes of argument and environment strings (with their pointers) execve takes: a
#: quarter of Linux's default 8 MiB stack limit.
_ARGUMENT_BYTES = 2 << 20
#: The wait status of a stopped tracee: WIFSTOPPED with WSTOPSIG = SIGSTOP.
_STOPPED_BY_SIGSTOP = (c.SIGSTOP << 8 | 0x7F).to_bytes(4, "little")


class ProcessesMixin:
    """Program images, threads and processes: spawn, clone/fork, execve, exit.

    A mixin of :class:`~zatile.sw.abi.kernel.Kernel`: it uses the kernel's threads, engine and
    save areas directly.
    """

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
        thread.waiting = None
        if thread.clear_child_tid and thread.process.alive:
            # mm_release: a thread that leaves others behind zeroes its TID word and wakes
            # one waiter on it (pthread_join).
            if self._write_user(thread, thread.clear_child_tid, bytes(4)):
                self._futex_wake(id(thread.process.mm), thread.clear_child_tid, 1)
        if self._holder is thread:
            self._holder = None
            if self._live:
                self._live = False
                self.engine.sme_enabled = False
        self._za_forget(thread)
        self.ops.free_buffers(thread.fp)
        thread.state = ThreadState.EXITED
        thread.tracer = None
        for tracee in self.threads.values():
            if tracee.tracer is thread:
                tracee.tracer = None
        if not thread.process.alive:
            self._wake(("child", thread.process.parent_pid), len(self.threads))

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

    def _copy_za_contexts(self, parent: FpState, child: FpState) -> bool:
        """A forked child's copy of the parent's ZA: the selected context's (when on) and every
        virtual ZA context's (docs/abi.md, "Virtual ZA contexts"). False: no memory."""
        ops, size = self.ops, self.ops.sme_state_size(parent)
        child.sve_state = self.heap.alloc(ops.sve_state_size(parent))
        child.sme_state = self.heap.alloc(size)
        if child.sve_state is None or child.sme_state is None:
            ops.free_buffers(child)
            return False
        child.tif_sme = True
        child.svcr |= parent.svcr & c.SVCR_ZA_MASK
        child.za_selector, child.za_next_selector = parent.za_selector, parent.za_next_selector
        ops.write_kernel(child.sme_state, ops.read_kernel(parent.sme_state, size))
        for selector, parked in parent.za_parked.items():
            state = self.heap.alloc(size)
            if state is None:
                ops.free_buffers(child)
                return False
            ops.write_kernel(state, ops.read_kernel(parked.state, size))
            child.za_parked[selector] = ParkedZa(state, parked.za)
        return True

    def fork(self, thread: Thread) -> int:
        """``fork()`` = ``clone(SIGCHLD)`` on arm64."""
        return self.clone(thread, c.SIGCHLD, 0, 0, 0, 0)

    def clone(self, thread: Thread, flags: int, newsp: int = 0, parent_tid: int = 0,
              tls: int = 0, child_tid: int = 0) -> int:
        """``clone`` with the ≥ 6.16 SME rules (docs/abi.md, "fork and clone"): the child never
        starts in streaming mode; without CLONE_VM it inherits TPIDR2 and (if on) ZA, with
        CLONE_VM both are 0."""
        self._syscall_entry(thread)
        if flags & ~_CLONE_SUPPORTED:
            return -c.EINVAL
        if (flags & c.CLONE_SIGHAND and not flags & c.CLONE_VM) or \
                (flags & c.CLONE_THREAD and not flags & c.CLONE_SIGHAND):
            return -c.EINVAL
        if not flags & c.CLONE_VM and not self._room_to_copy(thread.process.mm):
            return -c.ENOMEM
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
            if (parent.svcr & c.SVCR_ZA_MASK or parent.za_parked) \
                    and not self._copy_za_contexts(parent, child_fp):
                return -c.ENOMEM
        if flags & c.CLONE_PARENT_SETTID and parent_tid \
                and not self._write_user(thread, parent_tid, self._next_id.to_bytes(4, "little")):
            self.ops.free_buffers(child_fp)
            return -c.EFAULT
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
        if not flags & c.CLONE_VM:             # a thread gets no alternate stack
            child.sas_ss_sp, child.sas_ss_size = thread.sas_ss_sp, thread.sas_ss_size
            child.sas_ss_flags = thread.sas_ss_flags
        if flags & c.CLONE_CHILD_SETTID and child_tid:
            self._write_user(child, child_tid, child.tid.to_bytes(4, "little"))
        if flags & c.CLONE_CHILD_CLEARTID:
            child.clear_child_tid = child_tid
        return child.tid

    def set_tid_address(self, thread: Thread, address: int) -> int:
        """Where the thread's TID word is cleared at exit; returns the TID."""
        self._syscall_entry(thread)
        thread.clear_child_tid = address
        return thread.tid

    def getppid(self, thread: Thread) -> int:
        self._syscall_entry(thread)
        return thread.process.parent_pid

    def wait4(self, thread: Thread, pid: int, status: int = 0, options: int = 0,
              rusage: int = 0) -> int:
        """Collect an exited child (``pid`` -1 or 0: any; > 0: that one): its PID, with its
        wait status at ``status`` (or a traced child's attach stop, reported once); 0 with
        WNOHANG while none has exited; -ECHILD without children. Otherwise the thread sleeps
        until a child exits and then calls again."""
        self._syscall_entry(thread)
        wanted = pid - (1 << 32) if pid >> 31 & 1 else pid & 0xFFFF_FFFF
        children = [process for process in self.processes.values()
                    if process.parent_pid == thread.process.pid and not process.reaped
                    and (wanted in (-1, 0) or process.pid == wanted)]
        if not children:
            return -c.ECHILD
        for child in children:
            stopped = next((member for member in child.threads if member.tracer is not None
                            and member.tracer.process is thread.process
                            and not member.stop_reported), None)
            if stopped is not None:                 # the ptrace attach stop, once
                if status and not self._write_user(thread, status, _STOPPED_BY_SIGSTOP):
                    return -c.EFAULT
                stopped.stop_reported = True
                return child.pid
            if child.wait_status is not None:
                if status and not self._write_user(thread, status,
                                                   child.wait_status.to_bytes(4, "little")):
                    return -c.EFAULT
                child.reaped = True
                return child.pid
        if options & c.WNOHANG:
            return 0
        thread.waiting = ("child", thread.process.pid)
        thread.cpu.pc -= 4                 # called again when a child exits
        return pid

    def futex(self, thread: Thread, address: int, operation: int, value: int,
              timeout: int = 0, address2: int = 0, value3: int = 0) -> int:
        """FUTEX_WAIT, FUTEX_WAKE, FUTEX_REQUEUE and FUTEX_CMP_REQUEUE, private or shared
        alike (one address space per key); other operations are -ENOSYS."""
        self._syscall_entry(thread)
        command = operation & _FUTEX_COMMAND
        mm = id(thread.process.mm)
        if command == c.FUTEX_WAKE:
            return self._futex_wake(mm, address, value & 0x7FFF_FFFF)
        if command not in (c.FUTEX_WAIT, c.FUTEX_REQUEUE, c.FUTEX_CMP_REQUEUE):
            return -c.ENOSYS
        if address & 3:
            return -c.EINVAL
        word = self._read_user(thread, address, 4)
        if word is None:
            return -c.EFAULT
        current = int.from_bytes(word, "little")
        if command == c.FUTEX_WAIT:
            if current != value & 0xFFFF_FFFF:
                return -c.EAGAIN
            thread.waiting = ("futex", mm, address, bool(timeout))
            return 0
        if command == c.FUTEX_CMP_REQUEUE and current != value3 & 0xFFFF_FFFF:
            return -c.EAGAIN
        woken = self._futex_wake(mm, address, value & 0x7FFF_FFFF)
        moved = 0
        for waiter in self.threads.values():
            if moved >= timeout & 0x7FFF_FFFF:     # val2 travels in the timeout argument
                break
            if waiter.waiting is not None and waiter.waiting[:3] == ("futex", mm, address):
                waiter.waiting = ("futex", mm, address2, waiter.waiting[3])
                moved += 1
        return woken + (moved if command == c.FUTEX_CMP_REQUEUE else 0)

    def _futex_wake(self, mm: int, address: int, count: int) -> int:
        """Wake up to ``count`` threads waiting on ``address`` of the address space whose
        ``id`` is ``mm``."""
        woken = 0
        for waiter in self.threads.values():
            if woken >= count:
                break
            if waiter.waiting is not None and waiter.waiting[:3] == ("futex", mm, address):
                waiter.waiting = None
                woken += 1
        return woken

    def _wake(self, key: tuple, count: int) -> None:
        """Wake up to ``count`` threads sleeping on exactly ``key``."""
        for waiter in self.threads.values():
            if count and waiter.waiting == key:
                waiter.waiting = None
                count -= 1

    def execve(self, thread: Thread, pathname: int, argv: int = 0, envp: int = 0) -> int:
        """``execve``: the path, and the NULL-terminated arrays ``argv`` and ``envp`` (for an
        ELF image), are in the caller's memory."""
        self._syscall_entry(thread)
        name = self._read_string(thread, pathname)
        if isinstance(name, int):
            return name
        if name not in self.filesystem:
            return -c.ENOENT
        arguments = self._read_strings(thread, argv), self._read_strings(thread, envp)
        for strings in arguments:
            if isinstance(strings, int):
                return strings
        self._exec(thread, name, *arguments)
        return 0

    def _read_string(self, thread: Thread, address: int) -> str | int:
        """A NUL-terminated string of the caller's, or -EFAULT / -ENAMETOOLONG."""
        text = bytearray()
        while True:
            byte = self._read_user(thread, address + len(text), 1)
            if byte is None:
                return -c.EFAULT
            if byte == b"\0":
                return text.decode("utf-8", "surrogateescape")
            text.extend(byte)
            if len(text) >= 4096:
                return -c.ENAMETOOLONG

    def _read_strings(self, thread: Thread, array: int) -> list[str] | int:
        """The strings of a NULL-terminated array of pointers (none for a NULL array)."""
        strings: list[str] = []
        total = 0
        while array:
            pointer = self._read_user(thread, array + 8 * len(strings), 8)
            if pointer is None:
                return -c.EFAULT
            if not int.from_bytes(pointer, "little"):
                return strings
            text = self._read_string(thread, int.from_bytes(pointer, "little"))
            if isinstance(text, int):
                return text
            strings.append(text)
            total += len(text) + 9
            if total > _ARGUMENT_BYTES:
                return -c.E2BIG
        return strings

    def _exec(self, thread: Thread, path: str, argv: Sequence[str] = (),
              envp: Sequence[str] = ()) -> None:
        """The point of no return of ``execve``: new image, SME state reset (docs/abi.md, "execve")."""
        process = thread.process
        for member in process.threads:
            if member is not thread:
                self._exit_thread(member)
        process.threads[:] = [thread]
        image = self.filesystem[path]
        process.mm = self._load(image) if isinstance(image, Executable) \
            else self._load_elf(image, argv, envp, process)
        if self.current is thread:
            self.bus.user_memory = process.mm.memory
        process.handlers = SignalHandlers({signo: action for signo, action
                                           in process.handlers.actions.items()
                                           if action.handler == c.SIG_IGN})
        process.name = path.rsplit("/", 1)[-1]
        process.auxv = self._auxv() if isinstance(image, Executable) \
            else process.mm.elf.initial_auxv
        fp = thread.fp
        self._za_forget(thread)             # its ZA is discarded: nothing to store
        self._flush(thread)
        self.ops.free_buffers(fp)
        vl = fp.sme_vl_onexec or self.sme_default_vl
        thread.fp = FpState(sme_vl=self.lengths.find_supported(vl),
                            sme_vl_inherit=fp.sme_vl_inherit,
                            sme_vl_onexec=fp.sme_vl_onexec if fp.sme_vl_inherit else 0)
        thread.cpu = CpuContext(sp=STACK_TOP, pc=process.mm.symbols["main"]) \
            if isinstance(image, Executable) else CpuContext(sp=process.mm.cpu.sp,
                                                             pc=process.mm.cpu.pc)
        thread.clear_child_tid = 0
        thread.sas_ss_sp = thread.sas_ss_size = 0      # begin_new_exec: the flags stay
        thread.fault_address = thread.fault_code = 0

