"""A tiny C library for user code of the kernel model: system-call wrappers with structs.

Each function runs as user code on a :class:`~sw.abi.kernel.UserContext` (inside a
:class:`~sw.abi.program.Call` step, or on a thread the caller drives directly) and uses only
what such code can: its registers, its memory and ``SVC``. Arguments that the kernel reads
through pointers (``struct sigaction``, ``struct iovec``, regset buffers, path names) are
placed in a temporary area below the stack pointer, as compiled C would place locals.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from zatile.sw.abi import constants as c
from zatile.sw.abi.kernel import UserContext
from zatile.sw.abi.layouts import Iovec, KernelSigaction, round_up

__all__ = ["stack_buffer", "sigaction", "sigprocmask", "kill", "raise_signal", "ptrace",
           "getregset", "setregset", "execve", "prctl", "za_open", "za_select", "za_close"]


@contextmanager
def stack_buffer(context: UserContext, size: int) -> Iterator[int]:
    """Reserve ``size`` bytes below SP (16-byte aligned) for the duration of the block."""
    saved = context.sp
    context.sp = (saved - round_up(size, 16)) & ~15
    try:
        yield context.sp
    finally:
        context.sp = saved


def sigaction(context: UserContext, signo: int, handler: int | str,
              flags: int = c.SA_SIGINFO, mask: int = 0) -> int:
    """``sigaction(signo, {handler, flags, mask})``; ``handler`` may name a function."""
    address = context.symbol(handler) if isinstance(handler, str) else handler
    action = KernelSigaction(handler=address, flags=flags, restorer=0, mask=mask)
    with stack_buffer(context, KernelSigaction.SIZE) as buffer:
        context.write(buffer, action.pack())
        return context.syscall(c.NR_RT_SIGACTION, signo, buffer, 0, 8)


def sigprocmask(context: UserContext, how: int, mask: int) -> tuple[int, int]:
    """``sigprocmask(how, &mask, &old)``: (result, old mask)."""
    with stack_buffer(context, 16) as buffer:
        context.write(buffer, mask.to_bytes(8, "little"))
        result = context.syscall(c.NR_RT_SIGPROCMASK, how, buffer, buffer + 8, 8)
        return result, int.from_bytes(context.read(buffer + 8, 8), "little")


def kill(context: UserContext, pid: int, signo: int) -> int:
    return context.syscall(c.NR_KILL, pid, signo)


def raise_signal(context: UserContext, signo: int) -> int:
    """``raise``: a signal to the calling thread (``tgkill(getpid(), gettid(), signo)``)."""
    return context.syscall(c.NR_TGKILL, context.pid, context.tid, signo)


def prctl(context: UserContext, option: int, arg2: int = 0) -> int:
    return context.syscall(c.NR_PRCTL, option, arg2, 0, 0, 0)


def ptrace(context: UserContext, request: int, pid: int, addr: int = 0, data: int = 0) -> int:
    return context.syscall(c.NR_PTRACE, request, pid, addr, data)


def getregset(context: UserContext, pid: int, note_type: int,
              length: int) -> tuple[int, bytes, int]:
    """PTRACE_GETREGSET into a ``length``-byte buffer.

    Returns (result, the whole buffer, the iov_len the kernel wrote back). The buffer is
    filled with 0xA5 beforehand, so bytes the kernel did not write are visible as such.
    """
    with stack_buffer(context, length + Iovec.SIZE) as buffer:
        iov = buffer + length
        context.write(buffer, b"\xa5" * length)
        context.write(iov, Iovec(base=buffer, length=length).pack())
        result = ptrace(context, c.PTRACE_GETREGSET, pid, note_type, iov)
        written = Iovec.unpack(context.read(iov, Iovec.SIZE)).length
        return result, context.read(buffer, length), written


def setregset(context: UserContext, pid: int, note_type: int, data: bytes) -> tuple[int, int]:
    """PTRACE_SETREGSET from ``data``: (result, the iov_len the kernel wrote back)."""
    with stack_buffer(context, len(data) + Iovec.SIZE) as buffer:
        iov = buffer + len(data)
        context.write(buffer, data)
        context.write(iov, Iovec(base=buffer, length=len(data)).pack())
        result = ptrace(context, c.PTRACE_SETREGSET, pid, note_type, iov)
        return result, Iovec.unpack(context.read(iov, Iovec.SIZE)).length


def execve(context: UserContext, path: str) -> int:
    """``execve(path, NULL, NULL)``: only returns on failure."""
    encoded = path.encode() + b"\0"
    saved = context.sp
    context.sp = buffer = (saved - round_up(len(encoded), 16)) & ~15
    context.write(buffer, encoded)
    result = context.syscall(c.NR_EXECVE, buffer, 0, 0)
    if result:
        # Still the old image: give the stack space back. (On success SP is the new image's.)
        context.sp = saved
    return result


# ------------------------------------------------- virtual ZA contexts (zatile_za.h's API)
def za_open(context: UserContext) -> int:
    """``zatile_za_open()``: a new private ZA context of the thread (its selector, >= 1), or a
    negative errno (docs/abi.md, "Virtual ZA contexts")."""
    return context.syscall(c.NR_PRCTL, c.PR_ZATILE_ZA_OPEN, 0, 0, 0, 0)


def za_select(context: UserContext, selector: int) -> int:
    """``zatile_za_select(selector)``: the previously selected selector, or a negative errno."""
    return context.syscall(c.NR_PRCTL, c.PR_ZATILE_ZA_SELECT, selector, 0, 0, 0)


def za_close(context: UserContext, selector: int) -> int:
    """``zatile_za_close(selector)``: 0, or a negative errno."""
    return context.syscall(c.NR_PRCTL, c.PR_ZATILE_ZA_CLOSE, selector, 0, 0, 0)

