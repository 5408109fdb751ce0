"""The arm64 ``rt_sigframe``: layout, the writes that build it, and the parser of sigreturn.

Linux ≥ 6.16 on an SME-only system (no SVE, no SME2, no FPMR/POE/GCS) — docs/abi.md, "Signal frames" and "sigreturn".

* :func:`sigframe_layout` is ``setup_sigframe_layout``: record offsets in allocation order
  (fpsimd, esr, sve, tpidr2, za, end), moving this and all later records to an extra area
  behind an ``extra_context`` once one does not fit in ``__reserved``.
* :func:`frame_writes` is ``setup_rt_frame`` + ``setup_sigframe``: the list of (address, bytes)
  stores the kernel makes, field by field and in its order. Bytes the kernel does not write
  (padding, unused ``siginfo`` without SA_SIGINFO, record tails) keep what the stack held.
* :func:`parse_user_sigframe` is the kernel function of that name: every record check of
  ``rt_sigreturn`` in order, raising :class:`InvalidFrame` (-EINVAL) on the first violation;
  faulting reads raise ``MemoryFault`` (-EFAULT). Both end in SIGSEGV.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from zatile.sw.abi import constants as c
from zatile.sw.abi.layouts import (
    RT_SIGFRAME_MCONTEXT_OFFSET, RT_SIGFRAME_RESERVED_OFFSET, RT_SIGFRAME_UC_OFFSET,
    SIGCONTEXT_RESERVED_SIZE, SIZEOF_RT_SIGFRAME, ContextHeader, EsrContext, ExtraContext,
    FpsimdContext, FrameRecord, SigContext, SveContext, Tpidr2Context, UContext, ZaContext,
    round_up, sve_sig_context_size, za_sig_context_size,
)

__all__ = ["ContextRecord", "frame_records", "TASK_SIZE", "SigframeLayout", "FrameTooLarge", "sigframe_layout",
           "minimum_signal_stack_size", "SignalContext", "frame_writes", "InvalidFrame",
           "UserContexts", "parse_user_sigframe"]

#: Size of the user address space (48-bit VAs): ``access_ok`` rejects anything beyond.
TASK_SIZE = 1 << 48


class FrameTooLarge(Exception):
    """The records do not fit even with an extra area (``-ENOMEM`` from the layout)."""


@dataclass(frozen=True)
class SigframeLayout:
    """Offsets (from the frame start) of every record of one signal frame."""

    fpsimd: int
    esr: int | None
    sve: int
    sve_size: int
    tpidr2: int
    za: int
    za_size: int
    extra: int | None
    end: int
    #: ``user->size``: the offset just past the last allocation.
    size: int

    @property
    def frame_size(self) -> int:
        """``sigframe_size``: what ``get_sigframe`` subtracts from the stack pointer."""
        return round_up(max(self.size, SIZEOF_RT_SIGFRAME), 16)


class _UserLayout:
    """``struct rt_sigframe_user_layout`` and ``__sigframe_alloc``."""

    def __init__(self) -> None:
        self.size = RT_SIGFRAME_RESERVED_OFFSET
        self.limit = (self.size + SIGCONTEXT_RESERVED_SIZE - c.TERMINATOR_SIZE
                      - c.EXTRA_CONTEXT_SIZE)
        self.extra_offset: int | None = None

    def alloc(self, size: int, extend: bool = True) -> int:
        padded = round_up(size, 16)
        if padded > self.limit - self.size and self.extra_offset is None and extend:
            self.limit += c.EXTRA_CONTEXT_SIZE
            self.extra_offset = self.alloc(ExtraContext.SIZE, extend=False)
            self.size += c.TERMINATOR_SIZE
            self.limit = c.SIGFRAME_MAXSZ - c.TERMINATOR_SIZE
        if padded > self.limit - self.size:
            raise FrameTooLarge(f"a {size}-byte record does not fit in the signal frame")
        offset = self.size
        self.size += padded
        return offset

    def alloc_end(self) -> int:
        self.limit += c.TERMINATOR_SIZE
        offset = self.alloc(ContextHeader.SIZE)
        self.limit = self.size
        return offset


def sigframe_layout(*, with_esr: bool, sve_vq: int, za_vq: int) -> SigframeLayout:
    """``setup_sigframe_layout`` for an SME-only system.

    Parameters
    ----------
    with_esr : bool
        ``thread.fault_code`` is set (the signal follows a data abort).
    sve_vq : int
        VQ of the SVE record payload: the SME VQ in streaming mode, else 0 (header only).
    za_vq : int
        VQ of the ZA payload: the SME VQ when PSTATE.ZA=1, else 0 (header only).

    Raises
    ------
    FrameTooLarge
        If even ``SIGFRAME_MAXSZ`` cannot hold the records.
    """
    user = _UserLayout()
    fpsimd = user.alloc(FpsimdContext.SIZE)
    esr = user.alloc(EsrContext.SIZE) if with_esr else None
    sve_size = sve_sig_context_size(sve_vq)
    sve = user.alloc(sve_size)
    tpidr2 = user.alloc(Tpidr2Context.SIZE)
    za_size = za_sig_context_size(za_vq)
    za = user.alloc(za_size)
    end = user.alloc_end()
    return SigframeLayout(fpsimd, esr, sve, sve_size, tpidr2, za, za_size, user.extra_offset,
                          end, user.size)


def minimum_signal_stack_size(max_sme_vl: int) -> int:
    """``signal_minsigstksz`` (AT_MINSIGSTKSZ): the ``add_all`` layout plus record and slack."""
    vq = max_sme_vl // 16
    layout = sigframe_layout(with_esr=True, sve_vq=vq, za_vq=vq)
    return layout.frame_size + round_up(FrameRecord.SIZE, 16) + 16


@dataclass(frozen=True)
class SignalContext:
    """Everything ``setup_rt_frame`` copies out for one delivery."""

    regs: tuple[int, ...]
    sp: int
    pc: int
    pstate: int
    fault_address: int
    sigmask: int
    fpsr: int
    fpcr: int
    vregs: bytes
    #: ``thread.fault_code`` when an ESR record is present, else None.
    esr: int | None
    sve_vl: int
    sve_flags: int
    #: Z/P/FFR (``SVE_SIG_REGS_SIZE(vq)`` bytes) in streaming mode, else empty.
    sve_payload: bytes
    tpidr2: int
    za_vl: int
    #: ZA rows when PSTATE.ZA=1, else empty.
    za_payload: bytes
    #: The 128 ``siginfo`` bytes (SA_SIGINFO only), else None.
    siginfo: bytes | None
    #: ``uc_stack`` as ``__save_altstack`` writes it: the thread's alternate stack (base,
    #: flags as last set, size).
    altstack: tuple[int, int, int] = (0, c.SS_DISABLE, 0)


def _field(base: int, layout, name: str, value) -> tuple[int, bytes]:
    return base + layout.offsetof(name), layout.pack_field(name, value)


def frame_writes(layout: SigframeLayout, frame: int, next_frame: int,
                 context: SignalContext) -> list[tuple[int, bytes]]:
    """The stores that build the frame at ``frame`` (frame record at ``next_frame``)."""
    uc = frame + RT_SIGFRAME_UC_OFFSET
    mc = frame + RT_SIGFRAME_MCONTEXT_OFFSET
    writes = [
        _field(uc, UContext, "uc_flags", 0),
        _field(uc, UContext, "uc_link", 0),
        _field(uc, UContext, "ss_sp", context.altstack[0]),
        _field(uc, UContext, "ss_flags", context.altstack[1]),
        _field(uc, UContext, "ss_size", context.altstack[2]),
        _field(next_frame, FrameRecord, "fp", context.regs[29]),
        _field(next_frame, FrameRecord, "lr", context.regs[30]),
        _field(mc, SigContext, "regs", context.regs),
        _field(mc, SigContext, "sp", context.sp),
        _field(mc, SigContext, "pc", context.pc),
        _field(mc, SigContext, "pstate", context.pstate),
        _field(mc, SigContext, "fault_address", context.fault_address),
        _field(uc, UContext, "uc_sigmask", context.sigmask),
        (frame + layout.fpsimd, FpsimdContext(fpsr=context.fpsr, fpcr=context.fpcr,
                                              vregs=context.vregs).pack()),
    ]
    if layout.esr is not None:
        writes.append((frame + layout.esr, EsrContext(esr=context.esr).pack()))
    writes.append((frame + layout.sve, SveContext(size=round_up(layout.sve_size, 16),
                                                  vl=context.sve_vl,
                                                  flags=context.sve_flags).pack()))
    if context.sve_payload:
        writes.append((frame + layout.sve + SveContext.SIZE, context.sve_payload))
    writes.append((frame + layout.tpidr2, Tpidr2Context(tpidr2=context.tpidr2).pack()))
    writes.append((frame + layout.za, ZaContext(size=round_up(layout.za_size, 16),
                                                vl=context.za_vl).pack()))
    if context.za_payload:
        writes.append((frame + layout.za + ZaContext.SIZE, context.za_payload))
    if layout.extra is not None:
        extra = frame + layout.extra
        terminator = extra + c.EXTRA_CONTEXT_SIZE
        datap = terminator + c.TERMINATOR_SIZE
        writes.append((extra, ExtraContext(datap=datap,
                                           extra_size=frame + round_up(layout.size, 16) - datap)
                       .pack()[:ExtraContext.offsetof("extra_size") + 4]))
        writes.append((terminator, ContextHeader(magic=0, size=0).pack()))
    writes.append((frame + layout.end, ContextHeader(magic=0, size=0).pack()))
    if context.siginfo is not None:
        writes.append((frame, context.siginfo))
    return writes


class InvalidFrame(Exception):
    """A signal frame ``rt_sigreturn`` rejects with -EINVAL; the message names the check."""


@dataclass
class UserContexts:
    """``struct user_ctxs``: where parsing found each record (addresses) and its size."""

    fpsimd: int | None = None
    fpsimd_size: int = 0
    sve: int | None = None
    sve_size: int = 0
    tpidr2: int | None = None
    tpidr2_size: int = 0
    za: int | None = None
    za_size: int = 0


def _u32(read: Callable[[int, int], bytes], address: int) -> int:
    return int.from_bytes(read(address, 4), "little")


def _u64(read: Callable[[int, int], bytes], address: int) -> int:
    return int.from_bytes(read(address, 8), "little")


def parse_user_sigframe(read: Callable[[int, int], bytes], frame: int) -> UserContexts:
    """``parse_user_sigframe``: walk the records of the frame at ``frame``.

    Parameters
    ----------
    read : callable
        ``read(address, length) -> bytes`` from the thread's memory; raises ``MemoryFault``.
    frame : int
        The frame address (the SP at sigreturn).

    Raises
    ------
    InvalidFrame
        On the first check that fails, in the kernel's order.
    MemoryFault
        If a record cannot be read.
    """
    user = UserContexts()
    base = frame + RT_SIGFRAME_RESERVED_OFFSET
    offset, limit = 0, SIGCONTEXT_RESERVED_SIZE
    have_extra_context = False
    if base % 16:
        raise InvalidFrame("__reserved is not 16-byte aligned")
    while True:
        if limit - offset < ContextHeader.SIZE:
            raise InvalidFrame("no room for a record header")
        if offset % 16:
            raise InvalidFrame(f"record at offset {offset} is not 16-byte aligned")
        head = base + offset
        magic, size = _u32(read, head), _u32(read, head + 4)
        if limit - offset < size:
            raise InvalidFrame(f"record 0x{magic:08x} of {size} bytes overruns its area")
        if magic == 0:
            if size:
                raise InvalidFrame(f"terminator with size {size}")
            return user
        if magic == c.EXTRA_MAGIC:
            if have_extra_context:
                raise InvalidFrame("a second extra_context")
            if size < ExtraContext.SIZE:
                raise InvalidFrame(f"extra_context of {size} bytes")
            extra_datap = _u64(read, head + ExtraContext.offsetof("datap"))
            extra_size = _u32(read, head + ExtraContext.offsetof("extra_size"))
            if limit - offset - size < c.TERMINATOR_SIZE:
                raise InvalidFrame("no room for the terminator after extra_context")
            end = head + size
            if _u32(read, end) or _u32(read, end + 4):
                raise InvalidFrame("extra_context is not followed by a terminator")
            have_extra_context = True
            if extra_datap % 16:
                raise InvalidFrame("extra_context datap is not 16-byte aligned")
            if extra_size % 16:
                raise InvalidFrame("extra_context size is not a multiple of 16")
            if extra_datap != end + c.TERMINATOR_SIZE:
                raise InvalidFrame("extra_context datap does not follow its terminator")
            if extra_size > frame + c.SIGFRAME_MAXSZ - extra_datap:
                raise InvalidFrame(f"extra area of {extra_size} bytes is unreasonably large")
            if extra_datap + extra_size > TASK_SIZE:
                raise InvalidFrame("extra area is not in user space")
            base, offset, limit = extra_datap, 0, extra_size
            continue
        if magic == c.FPSIMD_MAGIC:
            if user.fpsimd is not None:
                raise InvalidFrame("duplicated fpsimd_context")
            user.fpsimd, user.fpsimd_size = head, size
        elif magic == c.ESR_MAGIC:
            pass
        elif magic == c.SVE_MAGIC:
            if user.sve is not None:
                raise InvalidFrame("duplicated sve_context")
            user.sve, user.sve_size = head, size
        elif magic == c.TPIDR2_MAGIC:
            if user.tpidr2 is not None:
                raise InvalidFrame("duplicated tpidr2_context")
            user.tpidr2, user.tpidr2_size = head, size
        elif magic == c.ZA_MAGIC:
            if user.za is not None:
                raise InvalidFrame("duplicated za_context")
            user.za, user.za_size = head, size
        else:
            # ZT (SME2), FPMR, POE and GCS records need features the system lacks.
            raise InvalidFrame(f"unknown or unsupported record magic 0x{magic:08x}")
        if size < ContextHeader.SIZE:
            raise InvalidFrame(f"record 0x{magic:08x} has size {size}")
        if limit - offset < size:
            raise InvalidFrame(f"record 0x{magic:08x} overruns its area")
        offset += size


@dataclass(frozen=True)
class ContextRecord:
    """One record of a signal frame as user space walks it."""

    magic: int
    size: int
    #: Offset of the record from the frame start.
    offset: int
    #: The record's bytes (header included).
    data: bytes


def frame_records(frame: bytes, frame_address: int) -> list[ContextRecord]:
    """The records of a frame (terminators excluded), following ``extra_context`` like
    user space does (``datap`` is an address; ``frame`` must extend that far).

    Raises
    ------
    ValueError
        If a header runs past ``frame`` or a record size is not a multiple of 16.
    """
    records, offset = [], RT_SIGFRAME_RESERVED_OFFSET
    while True:
        if offset + ContextHeader.SIZE > len(frame):
            raise ValueError(f"record header at offset {offset} is outside the frame")
        head = ContextHeader.unpack(frame, offset)
        if head.magic == 0:
            return records
        if head.size < ContextHeader.SIZE or head.size % 16 or offset + head.size > len(frame):
            raise ValueError(f"record 0x{head.magic:08x} at {offset} has size {head.size}")
        records.append(ContextRecord(head.magic, head.size, offset,
                                     bytes(frame[offset:offset + head.size])))
        if head.magic == c.EXTRA_MAGIC:
            offset = ExtraContext.unpack(frame, offset).datap - frame_address
        else:
            offset += head.size

