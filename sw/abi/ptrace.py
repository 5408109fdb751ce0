"""``ptrace``: ATTACH, DETACH, GETREGSET and SETREGSET over the regsets of
:mod:`zatile.sw.abi.regsets` (docs/abi.md, "ptrace regsets").

The tracee stops at the attach; its tracer's wait4 reports that stop once, as SIGSTOP
(``WIFSTOPPED``), as a Linux tracer waiting after PTRACE_ATTACH expects.
"""

from __future__ import annotations


from zatile.sw.abi import constants as c
from zatile.sw.abi.layouts import Iovec, signed_long
from zatile.sw.abi.task import Thread, ThreadState

__all__ = ["PtraceMixin"]


class PtraceMixin:
    """The ``ptrace`` system call.

    A mixin of :class:`~zatile.sw.abi.kernel.Kernel`: it uses the kernel's threads, engine and
    save areas directly.
    """

    def ptrace(self, thread: Thread, request: int, pid: int, addr: int = 0, data: int = 0) -> int:
        """PTRACE_ATTACH (the tracee stops at once), PTRACE_DETACH, PTRACE_{GET,SET}REGSET."""
        self._syscall_entry(thread)
        target = self.threads.get(signed_long(pid))
        if target is None or target.state is not ThreadState.RUNNABLE:
            return -c.ESRCH
        if request == c.PTRACE_ATTACH:
            if target.process is thread.process or target.tracer is not None:
                return -c.EPERM
            target.tracer = thread
            target.stop_reported = False
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

