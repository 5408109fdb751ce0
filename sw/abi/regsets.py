"""The arm64 user regset view of an SME-only system (``arch/arm64/kernel/ptrace.c``, ≥ 6.16).

Each :class:`Regset` has the ``.n`` × ``.size`` geometry of the kernel's table (docs/abi.md, "Regset geometry")
and a getter/setter pair operating on a thread's saved state through
:class:`~sw.abi.fpsimd.FpsimdOps`. Getters return the bytes the kernel's ``regset_get`` would
produce (the ``membuf`` is ``min(iov_len, n*size)`` bytes; a getter that writes less produces
less), or a negative errno. Setters receive the ``count`` bytes copied in and return 0 or a
negative errno. The same getters fill the core-dump notes.

Present: NT_PRSTATUS, NT_PRFPREG, NT_ARM_TLS, NT_ARM_SVE (no SVE: reads fail, a VL-0 FPSIMD
write leaves streaming mode), NT_ARM_SSVE, NT_ARM_ZA. Absent (-EINVAL from ``ptrace``):
NT_ARM_ZT (SME2), NT_ARM_FPMR, NT_ARM_POE, NT_ARM_GCS (features the engine does not have).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from zatile.sw.abi import constants as c
from zatile.sw.abi.cpufeatures import SmeVectorLengths
from zatile.sw.abi.fpsimd import FpsimdOps
from zatile.sw.abi.layouts import (
    SVE_PT_REGS_OFFSET, UserFpsimdState, UserPtRegs, UserSveHeader, UserZaHeader,
    ZA_PT_ZA_OFFSET, round_up, sve_pt_size, sve_pt_sve_ffr_offset, sve_pt_sve_fpsr_offset,
    sve_vq_from_vl, za_pt_size,
)
from zatile.sw.abi.task import FpType, Thread

__all__ = ["Regset", "RegsetView", "valid_user_regs"]


def valid_user_regs(pstate: int) -> tuple[bool, int]:
    """``valid_native_regs``: (valid, sanitised PSTATE) for a 64-bit EL0 register set."""
    pstate &= ~c.SPSR_EL1_AARCH64_RES0_BITS & ((1 << 64) - 1)
    if (pstate & c.PSR_MODE_MASK == c.PSR_MODE_EL0T and not pstate & c.PSR_MODE32_BIT
            and not pstate & (c.PSR_D_BIT | c.PSR_A_BIT | c.PSR_I_BIT | c.PSR_F_BIT)):
        return True, pstate
    return False, pstate & (c.PSR_N_BIT | c.PSR_Z_BIT | c.PSR_C_BIT | c.PSR_V_BIT)


def _copyin(target: bytearray, data: bytes, start: int, end: int) -> None:
    """``user_regset_copyin``: regset bytes [start, end) come from ``data`` where supplied."""
    supplied = data[start:end]
    target[:len(supplied)] = supplied


@dataclass(frozen=True)
class Regset:
    """One ``struct user_regset``."""

    note_type: int
    n: int
    size: int
    get: Callable[[Thread], bytes | int]
    set: Callable[[Thread, bytes], int]
    #: Owner name of its core-dump note.
    core_name: str

    @property
    def max_bytes(self) -> int:
        return self.n * self.size


class RegsetView:
    """``user_aarch64_view`` for one kernel.

    Parameters
    ----------
    ops : FpsimdOps
        FP/SME state operations (buffers, views, vector-length changes).
    preserve : callable
        ``preserve(thread)``: make the saved state current without forgetting the engine copy.
    """

    def __init__(self, ops: FpsimdOps, preserve: Callable[[Thread], None]):
        self.ops = ops
        self.preserve = preserve
        self.lengths: SmeVectorLengths = ops.lengths
        sve_regset_bytes = sve_pt_size(c.ARCH_SVE_VQ_MAX, c.SVE_PT_REGS_SVE)
        self.regsets: tuple[Regset, ...] = (
            Regset(c.NT_PRSTATUS, UserPtRegs.SIZE // 8, 8, self._gpr_get, self._gpr_set, "CORE"),
            Regset(c.NT_PRFPREG, UserFpsimdState.SIZE // 4, 4, self._fpr_get, self._fpr_set,
                   "CORE"),
            Regset(c.NT_ARM_TLS, 2, 8, self._tls_get, self._tls_set, "LINUX"),
            Regset(c.NT_ARM_SVE, round_up(sve_regset_bytes, 16) // 16, 16, self._sve_get,
                   self._sve_set, "LINUX"),
            Regset(c.NT_ARM_SSVE, round_up(sve_pt_size(c.SME_VQ_MAX, c.SVE_PT_REGS_SVE), 16) // 16,
                   16, self._ssve_get, self._ssve_set, "LINUX"),
            Regset(c.NT_ARM_ZA, round_up(za_pt_size(c.SME_VQ_MAX), 16) // 16, 16, self._za_get,
                   self._za_set, "LINUX"),
        )
        self._by_type = {regset.note_type: regset for regset in self.regsets}

    def find(self, note_type: int) -> Regset | None:
        """``find_regset``."""
        return self._by_type.get(note_type)

    # ------------------------------------------------------------------ GPR / FPR / TLS
    @staticmethod
    def _gpr_get(thread: Thread) -> bytes:
        cpu = thread.cpu
        return UserPtRegs(regs=tuple(cpu.x), sp=cpu.sp, pc=cpu.pc, pstate=cpu.pstate).pack()

    def _gpr_set(self, thread: Thread, data: bytes) -> int:
        regs = bytearray(self._gpr_get(thread))
        _copyin(regs, data, 0, len(regs))
        new = UserPtRegs.unpack(regs)
        valid, pstate = valid_user_regs(new.pstate)
        if not valid:
            return -c.EINVAL
        thread.cpu.x[:] = list(new.regs)
        thread.cpu.sp, thread.cpu.pc, thread.cpu.pstate = new.sp, new.pc, pstate
        return 0

    def _fpr_state(self, thread: Thread) -> bytes:
        fp = thread.fp
        self.ops.sync_from_effective_state(fp)
        return UserFpsimdState(vregs=bytes(fp.vregs), fpsr=fp.fpsr, fpcr=fp.fpcr).pack()

    def _fpr_get(self, thread: Thread) -> bytes:
        self.preserve(thread)
        return self._fpr_state(thread)

    def _fpr_write(self, thread: Thread, data: bytes, start: int) -> None:
        """``__fpr_set``: V/FPSR/FPCR from ``data[start:]``, unsupplied bytes unchanged."""
        state = bytearray(self._fpr_state(thread))
        _copyin(state, data[start:], 0, len(state))
        new = UserFpsimdState.unpack(state)
        fp = thread.fp
        fp.vregs[:] = new.vregs
        fp.fpsr, fp.fpcr = new.fpsr, new.fpcr

    def _fpr_set(self, thread: Thread, data: bytes) -> int:
        self.ops.flush(thread)
        self._fpr_write(thread, data, 0)
        self.ops.sync_to_effective_state_zeropad(thread.fp)
        return 0

    def _tls_get(self, thread: Thread) -> bytes:
        return thread.cpu.tpidr.to_bytes(8, "little") + thread.cpu.tpidr2.to_bytes(8, "little")

    def _tls_set(self, thread: Thread, data: bytes) -> int:
        tls = bytearray(self._tls_get(thread))
        _copyin(tls, data, 0, 16)
        thread.cpu.tpidr = int.from_bytes(tls[:8], "little")
        thread.cpu.tpidr2 = int.from_bytes(tls[8:], "little")
        return 0

    # -------------------------------------------------------------------- SVE / SSVE
    @staticmethod
    def _sve_get(thread: Thread) -> int:
        return -c.EINVAL

    def _sve_set(self, thread: Thread, data: bytes) -> int:
        return self._sve_set_common(thread, data, streaming=False)

    def _ssve_get(self, thread: Thread) -> bytes:
        """``sve_get_common(ARM64_VEC_SME)``; an inactive mode reads as a 16-byte header."""
        self.preserve(thread)
        fp = thread.fp
        active = bool(fp.svcr & c.SVCR_SM_MASK)
        flags = c.SVE_PT_REGS_SVE if active and fp.fp_type is FpType.SVE else c.SVE_PT_REGS_FPSIMD
        if fp.sme_vl_inherit:
            flags |= c.SVE_PT_VL_INHERIT
        vq = sve_vq_from_vl(fp.sme_vl)
        size = sve_pt_size(vq, flags) if active else UserSveHeader.SIZE
        header = UserSveHeader(size=size, vl=fp.sme_vl, max_vl=self.lengths.max_vl, flags=flags,
                               max_size=sve_pt_size(sve_vq_from_vl(self.lengths.max_vl),
                                                    c.SVE_PT_REGS_SVE)).pack()
        if not active:
            return header
        if flags & c.SVE_PT_REGS_MASK == c.SVE_PT_REGS_FPSIMD:
            return header + self._fpr_state(thread)
        registers_end = sve_pt_sve_ffr_offset(vq) + 2 * vq
        fpsr_offset = sve_pt_sve_fpsr_offset(vq)
        payload = (self.ops.read_kernel(fp.sve_state, registers_end - SVE_PT_REGS_OFFSET)
                   + bytes(fpsr_offset - registers_end)
                   + fp.fpsr.to_bytes(4, "little") + fp.fpcr.to_bytes(4, "little"))
        return header + payload + bytes(size - UserSveHeader.SIZE - len(payload))

    def _ssve_set(self, thread: Thread, data: bytes) -> int:
        return self._sve_set_common(thread, data, streaming=True)

    def _sve_set_common(self, thread: Thread, data: bytes, streaming: bool) -> int:
        """``sve_set_common``: NT_ARM_SSVE enters streaming mode, NT_ARM_SVE leaves it."""
        ops, fp = self.ops, thread.fp
        ops.flush(thread)
        if len(data) < UserSveHeader.SIZE:
            return -c.EINVAL
        header = UserSveHeader.unpack(data)
        fpsimd = header.flags & c.SVE_PT_REGS_MASK == c.SVE_PT_REGS_FPSIMD
        if fpsimd and streaming:
            return -c.EINVAL
        if header.vl:
            if not streaming:
                return -c.EINVAL
            error = ops.vec_set_vector_length(thread, header.vl,
                                              (header.flags & ~c.SVE_PT_REGS_MASK) << 16)
            if error:
                return error
        elif streaming or header.flags != 0:
            # VL 0 is only meaningful on an SME-only system, to leave streaming mode
            # through NT_ARM_SVE with FPSIMD-format data.
            return -c.EINVAL
        if streaming and not ops.sme_alloc(fp, flush=False):
            return -c.ENOMEM
        if not fpsimd and not ops.sve_alloc(fp, flush=True):
            return -c.ENOMEM
        vq = sve_vq_from_vl(fp.sme_vl) if streaming else 0
        if streaming:
            fp.svcr |= c.SVCR_SM_MASK
            fp.tif_sme = True
        else:
            fp.svcr &= ~c.SVCR_SM_MASK
        fp.vregs[:] = bytes(512)
        fp.fpsr = fp.fpcr = 0
        if fpsimd:
            fp.fp_type = FpType.FPSIMD
            self._fpr_write(thread, data, SVE_PT_REGS_OFFSET)
            return 0
        fp.fp_type = FpType.SVE
        if len(data) > UserSveHeader.SIZE and vq != sve_vq_from_vl(header.vl):
            return -c.EIO
        registers_end = sve_pt_sve_ffr_offset(vq) + 2 * vq
        registers = data[SVE_PT_REGS_OFFSET:registers_end]
        ops.write_kernel(fp.sve_state, registers)
        fpsr_offset = sve_pt_sve_fpsr_offset(vq)
        status = bytearray(fp.fpsr.to_bytes(4, "little") + fp.fpcr.to_bytes(4, "little"))
        _copyin(status, data[fpsr_offset:], 0, 8)
        fp.fpsr = int.from_bytes(status[:4], "little")
        fp.fpcr = int.from_bytes(status[4:], "little")
        return 0

    # -------------------------------------------------------------------------- ZA
    def _za_get(self, thread: Thread) -> bytes:
        self.preserve(thread)
        fp = thread.fp
        vq = sve_vq_from_vl(fp.sme_vl)
        enabled = bool(fp.svcr & c.SVCR_ZA_MASK)
        header = UserZaHeader(size=za_pt_size(vq) if enabled else ZA_PT_ZA_OFFSET,
                              max_size=za_pt_size(vq), vl=fp.sme_vl, max_vl=self.lengths.max_vl,
                              flags=c.ZA_PT_VL_INHERIT if fp.sme_vl_inherit else 0).pack()
        if not enabled:
            return header
        return header + self.ops.read_kernel(fp.sme_state, za_pt_size(vq) - ZA_PT_ZA_OFFSET)

    def _za_set(self, thread: Thread, data: bytes) -> int:
        ops, fp = self.ops, thread.fp
        ops.flush(thread)
        if len(data) < UserZaHeader.SIZE:
            return -c.EINVAL
        header = UserZaHeader.unpack(data)
        try:
            error = ops.vec_set_vector_length(thread, header.vl, header.flags << 16)
            if error:
                return error
            vq = sve_vq_from_vl(fp.sme_vl)
            if fp.sve_state is None and not ops.sve_alloc(fp, flush=False):
                return -c.ENOMEM
            if not ops.sme_alloc(fp, flush=not fp.svcr & c.SVCR_ZA_MASK):
                return -c.ENOMEM
            payload = data[UserZaHeader.SIZE:]
            if not payload:
                fp.svcr &= ~c.SVCR_ZA_MASK
                return 0
            if vq != sve_vq_from_vl(header.vl):
                return -c.EIO
            ops.write_kernel(fp.sme_state, payload[:za_pt_size(vq) - ZA_PT_ZA_OFFSET])
            fp.tif_sme = True
            fp.svcr |= c.SVCR_ZA_MASK
            return 0
        finally:
            ops.flush(thread)
