"""The software side of FP/SME state management (``arch/arm64/kernel/fpsimd.c``, Linux ≥ 6.16).

:class:`FpsimdOps` manipulates a thread's *saved* state (:class:`~sw.abi.task.FpState` plus its
kernel-heap buffers): buffer allocation, the FPSIMD/streaming-SVE views, ``task_smstop_sm``,
and vector-length changes. Every operation that changes a thread's saved state first calls the
kernel's ``flush`` hook, which makes the saved state authoritative (storing the engine's copy
through the engine if the thread is live there) and forgets any copy the engine still holds —
the model's ``fpsimd_save_and_flush_current_state`` / ``fpsimd_flush_task_state``.
"""

from __future__ import annotations

from typing import Callable

from zatile.sim.state import Memory
from zatile.sw.abi import constants as c
from zatile.sw.abi.cpufeatures import SmeVectorLengths
from zatile.sw.abi.layouts import (
    SVE_SIG_REGS_OFFSET, sve_sig_regs_size, sve_sig_zreg_offset, sve_vq_from_vl,
    za_sig_regs_size,
)
from zatile.sw.abi.mm import KernelHeap
from zatile.sw.abi.task import FpState, FpType, Thread

__all__ = ["FpsimdOps"]


class FpsimdOps:
    """FP/SME state operations of one kernel.

    Parameters
    ----------
    heap : KernelHeap
        Where ``sve_state`` / ``sme_state`` are allocated.
    kernel_memory : Memory
        The memory the heap lives in.
    lengths : SmeVectorLengths
        The supported SME vector lengths.
    flush : callable
        ``flush(thread)``: make ``thread``'s saved state authoritative before it is changed.
    """

    def __init__(self, heap: KernelHeap, kernel_memory: Memory, lengths: SmeVectorLengths,
                 flush: Callable[[Thread], None]):
        self.heap = heap
        self.kernel_memory = kernel_memory
        self.lengths = lengths
        self.flush = flush

    # ------------------------------------------------------------------ buffers
    @staticmethod
    def sve_state_size(fp: FpState) -> int:
        """``sve_state_size``: Z/P/FFR at max(SVE VL = 0, SME VL)."""
        return sve_sig_regs_size(sve_vq_from_vl(fp.sme_vl))

    @staticmethod
    def sme_state_size(fp: FpState) -> int:
        """``sme_state_size``: ZA (no ZT0: the engine has no SME2)."""
        return za_sig_regs_size(sve_vq_from_vl(fp.sme_vl))

    def sve_alloc(self, fp: FpState, flush: bool) -> bool:
        """``sve_alloc``: allocate (zeroed) if absent, else zero it if ``flush``. False: ENOMEM."""
        if fp.sve_state is not None:
            if flush:
                self._zero(fp.sve_state, self.sve_state_size(fp))
            return True
        fp.sve_state = self.heap.alloc(self.sve_state_size(fp))
        return fp.sve_state is not None

    def sme_alloc(self, fp: FpState, flush: bool) -> bool:
        """``sme_alloc``: allocate (zeroed) if absent, else zero it if ``flush``. False: ENOMEM."""
        if fp.sme_state is not None:
            if flush:
                self._zero(fp.sme_state, self.sme_state_size(fp))
            return True
        fp.sme_state = self.heap.alloc(self.sme_state_size(fp))
        return fp.sme_state is not None

    def free_buffers(self, fp: FpState) -> None:
        """Release both save areas and the parked virtual ZA contexts' (which are closed)."""
        for name in ("sve_state", "sme_state"):
            address = getattr(fp, name)
            if address is not None:
                self.heap.free(address)
                setattr(fp, name, None)
        for parked in fp.za_parked.values():
            self.heap.free(parked.state)
        fp.za_parked.clear()

    def _alloc_all(self, sizes: list[int]) -> list[int] | None:
        """One zeroed buffer per size, or None (and nothing allocated) if one does not fit."""
        buffers = []
        for size in sizes:
            address = self.heap.alloc(size)
            if address is None:
                for allocated in buffers:
                    self.heap.free(allocated)
                return None
            buffers.append(address)
        return buffers

    def _zero(self, address: int, length: int) -> None:
        self.kernel_memory.write(address, bytes(length))

    def read_kernel(self, address: int, length: int) -> bytes:
        return bytes(self.kernel_memory.read(address, length))

    def write_kernel(self, address: int, data: bytes) -> None:
        self.kernel_memory.write(address, data)

    # -------------------------------------------------------------- register views
    @staticmethod
    def current_vq(fp: FpState) -> int:
        """``vq(thread_get_cur_vl)``: the SME VQ in streaming mode, else the SVE VQ (0)."""
        return sve_vq_from_vl(fp.sme_vl) if fp.svcr & c.SVCR_SM_MASK else 0

    def sync_from_effective_state(self, fp: FpState) -> None:
        """``fpsimd_sync_from_effective_state``: V0-V31 from the low 128 bits of Z."""
        vq = self.current_vq(fp)
        if fp.fp_type is not FpType.SVE or vq == 0:
            return
        for n in range(32):
            address = fp.sve_state + sve_sig_zreg_offset(vq, n) - SVE_SIG_REGS_OFFSET
            fp.vregs[16 * n:16 * n + 16] = self.read_kernel(address, 16)

    def fpsimd_to_sve(self, fp: FpState) -> None:
        """``fpsimd_to_sve``: V0-V31 into the low 128 bits of Z (the rest unchanged)."""
        vq = self.current_vq(fp)
        if fp.fp_type is not FpType.SVE or vq == 0:
            return
        for n in range(32):
            address = fp.sve_state + sve_sig_zreg_offset(vq, n) - SVE_SIG_REGS_OFFSET
            self.write_kernel(address, bytes(fp.vregs[16 * n:16 * n + 16]))

    def sync_to_effective_state_zeropad(self, fp: FpState) -> None:
        """``fpsimd_sync_to_effective_state_zeropad``: Z from V with zero padding, P/FFR zero."""
        vq = self.current_vq(fp)
        if fp.fp_type is not FpType.SVE or vq == 0:
            return
        self._zero(fp.sve_state, sve_sig_regs_size(vq))
        self.fpsimd_to_sve(fp)

    def update_current_state(self, fp: FpState, vregs: bytes, fpsr: int, fpcr: int) -> None:
        """``fpsimd_update_current_state``: new V/FPSR/FPCR, merged into Z when SVE."""
        fp.vregs[:] = vregs
        fp.fpsr, fp.fpcr = fpsr, fpcr
        self.fpsimd_to_sve(fp)

    @staticmethod
    def task_smstop_sm(fp: FpState) -> None:
        """``task_smstop_sm``: leave streaming mode as SMSTOP would (V zero, FPSR reset)."""
        if not fp.svcr & c.SVCR_SM_MASK:
            return
        fp.vregs[:] = bytes(512)
        fp.fpsr = c.FPSR_AFTER_SMSTOP
        fp.svcr &= ~c.SVCR_SM_MASK
        fp.fp_type = FpType.FPSIMD

    # ---------------------------------------------------------------- vector length
    def vec_set_vector_length(self, thread: Thread, vl: int, flags: int) -> int:
        """``vec_set_vector_length(task, ARM64_VEC_SME, vl, flags)``: 0 or a negative errno."""
        onexec = bool(flags & c.PR_SME_SET_VL_ONEXEC)
        inherit = bool(flags & c.PR_SME_VL_INHERIT)
        vl = self.lengths.requested(vl, flags)
        if vl < 0:
            return vl
        fp = thread.fp
        if not onexec and vl != fp.sme_vl:
            if self.change_live_vector_length(thread, vl):
                return -c.ENOMEM
        fp.sme_vl_onexec = vl if onexec or inherit else 0
        fp.sme_vl_inherit = inherit
        return 0

    def change_live_vector_length(self, thread: Thread, vl: int) -> int:
        """``change_live_vector_length`` for SME: ZA dropped, SM and V preserved.

        The ZA of every virtual ZA context of the thread is dropped too (each gets a zeroed
        save area of the new size).
        See docs/abi.md, "Live vector-length changes".
        """
        fp = thread.fp
        new_vq = sve_vq_from_vl(vl)
        buffers = self._alloc_all([sve_sig_regs_size(new_vq)]
                                  + [za_sig_regs_size(new_vq)] * (1 + len(fp.za_parked)))
        if buffers is None:
            return -c.ENOMEM
        sve_state, sme_state, *parked_states = buffers
        self.flush(thread)
        for parked, state in zip(fp.za_parked.values(), parked_states):
            self.heap.free(parked.state)
            parked.state, parked.za = state, False
        self.sync_from_effective_state(fp)
        fp.sme_vl = vl
        if fp.sve_state is not None:
            self.heap.free(fp.sve_state)
        fp.sve_state = sve_state
        self.sync_to_effective_state_zeropad(fp)
        fp.svcr &= ~c.SVCR_ZA_MASK
        if fp.sme_state is not None:
            self.heap.free(fp.sme_state)
        fp.sme_state = sme_state
        return 0
