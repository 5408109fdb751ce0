"""Byte layouts of the kernel ABI, each declared once and used for both packing and parsing.

Every C structure the model writes to or reads from memory is a frozen dataclass deriving
from :class:`CStruct`: its ``FORMAT`` is a :mod:`struct` format (little-endian, explicit
padding) whose non-padding items are the dataclass fields in order. Offsets are derived from
the format, so ``ZaContext.offsetof("vl")`` is the byte offset the C compiler would give.
The size macros of the uapi headers (``SVE_SIG_*``, ``ZA_SIG_*``, ``SVE_PT_*``, ``ZA_PT_*``)
are functions named after them (docs/abi.md, "Signal records" and "ptrace headers").
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, fields
from typing import ClassVar

from zatile.sw.abi.constants import (
    EXTRA_MAGIC, ESR_MAGIC, FPSIMD_MAGIC, SVE_MAGIC, SVE_PT_REGS_MASK, SVE_PT_REGS_SVE,
    SVE_VQ_BYTES, SVE_VL_MAX, SVE_VL_MIN, TPIDR2_MAGIC, ZA_MAGIC,
)
from zatile.sw.arch.constants import MASK64

__all__ = [
    "CStruct", "ContextHeader", "FpsimdContext", "EsrContext", "ExtraContext", "SveContext",
    "Tpidr2Context", "ZaContext", "SigContext", "UContext", "FrameRecord", "SiginfoKill",
    "SiginfoFault", "UserFpsimdState", "UserSveHeader", "UserZaHeader", "UserPtRegs",
    "Tpidr2Block", "KernelSigaction", "Iovec", "Timespec", "Elf64Ehdr", "Elf64Phdr",
    "Elf64Nhdr", "ElfPrstatus", "ElfPrpsinfo",
    "RT_SIGFRAME_UC_OFFSET", "RT_SIGFRAME_MCONTEXT_OFFSET", "RT_SIGFRAME_RESERVED_OFFSET",
    "SIGCONTEXT_RESERVED_SIZE", "SIZEOF_RT_SIGFRAME", "SIGINFO_SIZE",
    "round_up", "sve_vl_valid", "sve_vq_from_vl", "sve_vl_from_vq",
    "sve_sig_zreg_offset", "sve_sig_preg_offset", "sve_sig_ffr_offset", "sve_sig_regs_size",
    "sve_sig_context_size", "za_sig_regs_size", "za_sig_context_size",
    "ZA_SIG_REGS_OFFSET", "SVE_SIG_REGS_OFFSET", "ZA_PT_ZA_OFFSET", "za_pt_size",
    "SVE_PT_REGS_OFFSET", "SVE_PT_FPSIMD_SIZE", "sve_pt_sve_ffr_offset",
    "sve_pt_sve_fpsr_offset", "sve_pt_size",
]

_ITEM = re.compile(r"(\d*)([xcbB?hHiIlLqQsp])")


def _items(format_: str) -> list[tuple[str, int, bool]]:
    """(item format, offset, is padding) of every item of a ``<``-prefixed struct format."""
    items, offset = [], 0
    for count, code in _ITEM.findall(format_[1:]):
        item = f"{count}{code}"
        size = struct.calcsize("<" + item)
        items.append((item, offset, code == "x"))
        offset += size
    return items


class CStruct:
    """Base of the layout dataclasses: ``FORMAT`` names the bytes, the fields name the values.

    A field whose format item has a repeat count (``31Q``) holds a tuple; an ``Ns`` item holds
    ``bytes``. Padding items (``x``) have no field; they pack as zero bytes.
    """

    FORMAT: ClassVar[str]
    SIZE: ClassVar[int]
    _STRUCT: ClassVar[struct.Struct]
    _OFFSETS: ClassVar[dict[str, tuple[int, str]]]

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._STRUCT = struct.Struct(cls.FORMAT)
        cls.SIZE = cls._STRUCT.size

    @classmethod
    def _field_items(cls) -> dict[str, tuple[int, str]]:
        if "_OFFSETS" not in cls.__dict__:
            values = [(item, offset) for item, offset, padding in _items(cls.FORMAT) if not padding]
            names = [f.name for f in fields(cls)]
            if len(names) != len(values):
                raise TypeError(f"{cls.__name__}: {len(names)} fields for {len(values)} items")
            cls._OFFSETS = {name: (offset, item) for name, (item, offset) in zip(names, values)}
        return cls._OFFSETS

    @classmethod
    def offsetof(cls, name: str) -> int:
        """Byte offset of field ``name``."""
        return cls._field_items()[name][0]

    @classmethod
    def pack_field(cls, name: str, value) -> bytes:
        """The bytes of one field (for writing single fields, as the kernel's ``__put_user``)."""
        item = cls._field_items()[name][1]
        return struct.pack("<" + item, *(value if _is_array(item) else (value,)))

    @classmethod
    def unpack_field(cls, name: str, data: bytes):
        """One field's value from its own bytes."""
        item = cls._field_items()[name][1]
        values = struct.unpack("<" + item, data)
        return values if _is_array(item) else values[0]

    def pack(self) -> bytes:
        """The structure's bytes."""
        values = []
        for name, (_, item) in self._field_items().items():
            value = getattr(self, name)
            values.extend(value if _is_array(item) else (value,))
        return self._STRUCT.pack(*values)

    @classmethod
    def unpack(cls, data, offset: int = 0):
        """The structure stored at ``offset`` of ``data``."""
        flat = list(cls._STRUCT.unpack_from(bytes(data[offset:offset + cls.SIZE])))
        values, position = {}, 0
        for name, (_, item) in cls._field_items().items():
            if _is_array(item):
                count = int(item[:-1])
                values[name] = tuple(flat[position:position + count])
                position += count
            else:
                values[name] = flat[position]
                position += 1
        return cls(**values)


def _is_array(item: str) -> bool:
    return item[-1] != "s" and item[:-1] not in ("", "1")


# --------------------------------------------------- signal records (docs/abi.md, "Signal records")
@dataclass(frozen=True, kw_only=True)
class ContextHeader(CStruct):
    """``struct _aarch64_ctx``: the head of every signal-frame record."""

    FORMAT = "<II"
    magic: int
    size: int


@dataclass(frozen=True, kw_only=True)
class FpsimdContext(CStruct):
    """``struct fpsimd_context`` (528 bytes); ``vregs`` is V0-V31, 16 bytes each."""

    FORMAT = "<IIII512s"
    magic: int = FPSIMD_MAGIC
    size: int = 528
    fpsr: int
    fpcr: int
    vregs: bytes


@dataclass(frozen=True, kw_only=True)
class EsrContext(CStruct):
    """``struct esr_context``."""

    FORMAT = "<IIQ"
    magic: int = ESR_MAGIC
    size: int = 16
    esr: int = 0


@dataclass(frozen=True, kw_only=True)
class ExtraContext(CStruct):
    """``struct extra_context``: where the records that did not fit in ``__reserved`` went."""

    FORMAT = "<IIQI12x"
    magic: int = EXTRA_MAGIC
    size: int = 32
    datap: int = 0
    extra_size: int = 0


@dataclass(frozen=True, kw_only=True)
class SveContext(CStruct):
    """``struct sve_context`` (header of the SVE record; the payload follows at offset 16)."""

    FORMAT = "<IIHH4x"
    magic: int = SVE_MAGIC
    size: int = 16
    vl: int = 0
    flags: int = 0


@dataclass(frozen=True, kw_only=True)
class Tpidr2Context(CStruct):
    """``struct tpidr2_context``."""

    FORMAT = "<IIQ"
    magic: int = TPIDR2_MAGIC
    size: int = 16
    tpidr2: int = 0


@dataclass(frozen=True, kw_only=True)
class ZaContext(CStruct):
    """``struct za_context`` (header of the ZA record; ZA rows follow at offset 16)."""

    FORMAT = "<IIH6x"
    magic: int = ZA_MAGIC
    size: int = 16
    vl: int = 0


@dataclass(frozen=True, kw_only=True)
class SigContext(CStruct):
    """``struct sigcontext`` up to ``__reserved`` (which starts at offset 288)."""

    FORMAT = "<Q31QQQQ8x"
    fault_address: int
    regs: tuple
    sp: int
    pc: int
    pstate: int


@dataclass(frozen=True, kw_only=True)
class UContext(CStruct):
    """``struct ucontext`` up to ``uc_mcontext`` (offset 176), with ``uc_stack`` inlined."""

    FORMAT = "<QQQi4xQQ128x"
    uc_flags: int
    uc_link: int
    ss_sp: int
    ss_flags: int
    ss_size: int
    uc_sigmask: int


@dataclass(frozen=True, kw_only=True)
class FrameRecord(CStruct):
    """``struct frame_record``: the AAPCS64 frame record the kernel pushes above the frame."""

    FORMAT = "<QQ"
    fp: int
    lr: int


@dataclass(frozen=True, kw_only=True)
class SiginfoKill(CStruct):
    """``siginfo_t`` of a signal sent by ``kill``/``tgkill`` (``_kill`` union member)."""

    FORMAT = "<iii4xiI104x"
    si_signo: int
    si_errno: int
    si_code: int
    si_pid: int
    si_uid: int


@dataclass(frozen=True, kw_only=True)
class SiginfoFault(CStruct):
    """``siginfo_t`` of a synchronous fault (``_sigfault`` union member)."""

    FORMAT = "<iii4xQ104x"
    si_signo: int
    si_errno: int
    si_code: int
    si_addr: int


SIGINFO_SIZE = 128
#: Offsets inside ``struct rt_sigframe { siginfo info; ucontext uc; }``.
RT_SIGFRAME_UC_OFFSET = SIGINFO_SIZE
RT_SIGFRAME_MCONTEXT_OFFSET = RT_SIGFRAME_UC_OFFSET + UContext.SIZE
RT_SIGFRAME_RESERVED_OFFSET = RT_SIGFRAME_MCONTEXT_OFFSET + SigContext.SIZE
SIGCONTEXT_RESERVED_SIZE = 4096
SIZEOF_RT_SIGFRAME = RT_SIGFRAME_RESERVED_OFFSET + SIGCONTEXT_RESERVED_SIZE


# ---------------------------------- ptrace and user (docs/abi.md, "ptrace headers", "TPIDR2 block")
@dataclass(frozen=True, kw_only=True)
class UserFpsimdState(CStruct):
    """``struct user_fpsimd_state``: the NT_PRFPREG payload (528 bytes)."""

    FORMAT = "<512sII8x"
    vregs: bytes
    fpsr: int
    fpcr: int


@dataclass(frozen=True, kw_only=True)
class UserSveHeader(CStruct):
    """``struct user_sve_header`` (NT_ARM_SVE / NT_ARM_SSVE)."""

    FORMAT = "<IIHHH2x"
    size: int
    max_size: int
    vl: int
    max_vl: int
    flags: int


@dataclass(frozen=True, kw_only=True)
class UserZaHeader(CStruct):
    """``struct user_za_header`` (NT_ARM_ZA)."""

    FORMAT = "<IIHHH2x"
    size: int
    max_size: int
    vl: int
    max_vl: int
    flags: int


@dataclass(frozen=True, kw_only=True)
class UserPtRegs(CStruct):
    """``struct user_pt_regs``: the NT_PRSTATUS register payload."""

    FORMAT = "<31QQQQ"
    regs: tuple
    sp: int
    pc: int
    pstate: int


@dataclass(frozen=True, kw_only=True)
class Tpidr2Block(CStruct):
    """The AAPCS64 TPIDR2 block (lazy-save descriptor) TPIDR2_EL0 points to."""

    FORMAT = "<QH6x"
    za_save_buffer: int
    num_za_save_slices: int


@dataclass(frozen=True, kw_only=True)
class KernelSigaction(CStruct):
    """arm64 ``struct sigaction`` as ``rt_sigaction`` reads and writes it."""

    FORMAT = "<QQQQ"
    handler: int
    flags: int
    restorer: int
    mask: int


@dataclass(frozen=True, kw_only=True)
class Iovec(CStruct):
    """``struct iovec`` (PTRACE_GETREGSET / PTRACE_SETREGSET)."""

    FORMAT = "<QQ"
    base: int
    length: int


@dataclass(frozen=True, kw_only=True)
class StackT(CStruct):
    """``stack_t`` (sigaltstack; ``uc_stack`` of a ucontext)."""

    FORMAT = "<Qi4xQ"
    ss_sp: int
    ss_flags: int
    ss_size: int


@dataclass(frozen=True, kw_only=True)
class Timespec(CStruct):
    """``struct timespec`` (nanosleep)."""

    FORMAT = "<qq"
    tv_sec: int
    tv_nsec: int


# --------------------------------------------------------------------- ELF core structures
@dataclass(frozen=True, kw_only=True)
class Elf64Ehdr(CStruct):
    """``Elf64_Ehdr``."""

    FORMAT = "<16sHHIQQQIHHHHHH"
    e_ident: bytes
    e_type: int
    e_machine: int
    e_version: int
    e_entry: int
    e_phoff: int
    e_shoff: int
    e_flags: int
    e_ehsize: int
    e_phentsize: int
    e_phnum: int
    e_shentsize: int
    e_shnum: int
    e_shstrndx: int


@dataclass(frozen=True, kw_only=True)
class Elf64Phdr(CStruct):
    """``Elf64_Phdr``."""

    FORMAT = "<IIQQQQQQ"
    p_type: int
    p_flags: int
    p_offset: int
    p_vaddr: int
    p_paddr: int
    p_filesz: int
    p_memsz: int
    p_align: int


@dataclass(frozen=True, kw_only=True)
class Elf64Nhdr(CStruct):
    """``Elf64_Nhdr``; the name and descriptor follow, each padded to 4 bytes."""

    FORMAT = "<III"
    n_namesz: int
    n_descsz: int
    n_type: int


@dataclass(frozen=True, kw_only=True)
class ElfPrstatus(CStruct):
    """arm64 ``struct elf_prstatus`` (392 bytes), times left zero."""

    FORMAT = "<iiih2xQQiiii64x31QQQQi4x"
    si_signo: int
    si_code: int
    si_errno: int
    pr_cursig: int
    pr_sigpend: int
    pr_sighold: int
    pr_pid: int
    pr_ppid: int
    pr_pgrp: int
    pr_sid: int
    regs: tuple
    sp: int
    pc: int
    pstate: int
    pr_fpvalid: int


@dataclass(frozen=True, kw_only=True)
class ElfPrpsinfo(CStruct):
    """arm64 ``struct elf_prpsinfo`` (136 bytes)."""

    FORMAT = "<BBBb4xQIIiiii16s80s"
    pr_state: int
    pr_sname: int
    pr_zomb: int
    pr_nice: int
    pr_flag: int
    pr_uid: int
    pr_gid: int
    pr_pid: int
    pr_ppid: int
    pr_pgrp: int
    pr_sid: int
    pr_fname: bytes
    pr_psargs: bytes


# -------------------------------------------------------- size macros (docs/abi.md, "Worked sizes")
def round_up(value: int, alignment: int) -> int:
    """``round_up(value, alignment)`` for a power-of-two alignment."""
    return (value + alignment - 1) & ~(alignment - 1)


def sve_vl_valid(vl: int) -> bool:
    """``sve_vl_valid``: a multiple of 16 bytes between 16 and 8192."""
    return vl % SVE_VQ_BYTES == 0 and SVE_VL_MIN <= vl <= SVE_VL_MAX


def sve_vq_from_vl(vl: int) -> int:
    return vl // SVE_VQ_BYTES


def sve_vl_from_vq(vq: int) -> int:
    return vq * SVE_VQ_BYTES


SVE_SIG_REGS_OFFSET = 16


def sve_sig_zreg_offset(vq: int, n: int) -> int:
    return SVE_SIG_REGS_OFFSET + 16 * vq * n


def sve_sig_preg_offset(vq: int, n: int) -> int:
    return SVE_SIG_REGS_OFFSET + 512 * vq + 2 * vq * n


def sve_sig_ffr_offset(vq: int) -> int:
    return SVE_SIG_REGS_OFFSET + 544 * vq


def sve_sig_regs_size(vq: int) -> int:
    return 546 * vq


def sve_sig_context_size(vq: int) -> int:
    return SVE_SIG_REGS_OFFSET + sve_sig_regs_size(vq)


ZA_SIG_REGS_OFFSET = 16


def za_sig_regs_size(vq: int) -> int:
    return (vq * SVE_VQ_BYTES) ** 2


def za_sig_context_size(vq: int) -> int:
    return ZA_SIG_REGS_OFFSET + za_sig_regs_size(vq)


ZA_PT_ZA_OFFSET = 16


def za_pt_size(vq: int) -> int:
    return ZA_PT_ZA_OFFSET + (vq * SVE_VQ_BYTES) ** 2


SVE_PT_REGS_OFFSET = 16
SVE_PT_FPSIMD_SIZE = UserFpsimdState.SIZE


def sve_pt_sve_ffr_offset(vq: int) -> int:
    return SVE_PT_REGS_OFFSET + 544 * vq


def sve_pt_sve_fpsr_offset(vq: int) -> int:
    return round_up(sve_pt_sve_ffr_offset(vq) + 2 * vq, SVE_VQ_BYTES)


def sve_pt_size(vq: int, flags: int) -> int:
    """``SVE_PT_SIZE(vq, flags)``: header plus SVE-format or FPSIMD-format payload."""
    if flags & SVE_PT_REGS_MASK == SVE_PT_REGS_SVE:
        fpcr_end = sve_pt_sve_fpsr_offset(vq) + 8
        return SVE_PT_REGS_OFFSET + round_up(fpcr_end - SVE_PT_REGS_OFFSET, SVE_VQ_BYTES)
    return SVE_PT_REGS_OFFSET + SVE_PT_FPSIMD_SIZE


def signed_long(value: int) -> int:
    """A syscall argument register read as a C ``int``/``long`` (two's complement)."""
    value &= MASK64
    return value - (1 << 64) if value >> 63 else value
