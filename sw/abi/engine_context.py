"""Engine-context switching: saving a thread's SME state from the engine and restoring it.

The policy (eager save, lazy restore through the SME-disable trap) is described in
:mod:`zatile.sw.abi.kernel`; this mixin is its mechanism: the engine instructions the kernel
issues at EL1, the SVCR/FPSR/FPCR bookkeeping, and ``do_sme_acc``.
"""

from __future__ import annotations

from functools import lru_cache

from zatile.sw.abi import constants as c
from zatile.sw.abi.layouts import sve_vq_from_vl
from zatile.sw.abi.task import FpType, Thread, ThreadState
from zatile.sw.arch.asm import assemble_line, disassemble
from zatile.sw.arch.engine import Status, StreamError
from zatile.sw.arch.isa import Trait, decode, operand_values, read_operands, write_result

__all__ = ["EngineContextMixin", "IllegalInstruction", "EngineProtocolError"]


# The engine instructions of the save/restore sequences.
_MRS_SVCR = assemble_line("mrs x0, svcr")
_SMSTART_SM, _SMSTOP_SM = assemble_line("smstart sm"), assemble_line("smstop sm")
_STR_Z = tuple(assemble_line(f"str z{n}, [x0]") for n in range(32))
_LDR_Z = tuple(assemble_line(f"ldr z{n}, [x0]") for n in range(32))
_STR_P = tuple(assemble_line(f"str p{n}, [x0]") for n in range(16))
_LDR_P = tuple(assemble_line(f"ldr p{n}, [x0]") for n in range(16))


def _z_p_transfers(z_words: tuple[int, ...], p_words: tuple[int, ...], address: int,
                   svl_bytes: int) -> list[tuple[int, dict[str, int]]]:
    """The STR or LDR of Z0-Z31 then P0-P15 for a save area at ``address`` (the signal-frame
    register layout), as :meth:`EngineContextMixin._kstream` steps."""
    predicates = address + 32 * svl_bytes
    return ([(word, {"rn": address + n * svl_bytes}) for n, word in enumerate(z_words)]
            + [(word, {"rn": predicates + n * (svl_bytes // 8)}) for n, word in enumerate(p_words)])


@lru_cache(maxsize=4096)
def _has_trait(word: int, trait: Trait) -> bool:
    decoded = decode(word)
    return decoded is not None and trait in decoded.form.traits


class IllegalInstruction(Exception):
    """User code did something the CPU rejects (Advanced SIMD in streaming mode): SIGILL."""


class EngineProtocolError(RuntimeError):
    """An instruction the kernel issued to the engine did not complete: a kernel bug."""


class EngineContextMixin:
    """Moving threads' SME state between the engine and their save areas.

    A mixin of :class:`~zatile.sw.abi.kernel.Kernel`: it uses the kernel's threads, engine and
    save areas directly.
    """

    def _kissue(self, word: int, **operands: int):
        """Issue an instruction at EL1 on the kernel's behalf."""
        values = operand_values(word, operands)
        started = self.engine.cycles
        with self.bus.kernel_mode():
            result = self.engine.issue(word, values)
        if started is not None:
            self.stats.kernel_engine_cycles += self.engine.cycles - started
        if result.status is not Status.OK:
            raise EngineProtocolError(f"kernel instruction '{disassemble(word)}' (0x{word:08x}) "
                                      f"ended {result.status.value}"
                                      + (f" (SMTC {result.smtc})" if result.smtc is not None
                                         else ""))
        return result

    def _kstream(self, steps: list[tuple[int, dict[str, int]]]) -> None:
        """Issue a sequence of loads or stores at EL1 without waiting for each (the engine
        overlaps them: docs/architecture.md, "The host runs ahead"), then wait for all. Only for
        instructions that cannot fail: register transfers to and from kernel memory."""
        started = self.engine.cycles
        with self.bus.kernel_mode():
            try:
                for word, operands in steps:
                    self.engine.stream(word, operand_values(word, operands))
                self.engine.drain()
            except StreamError as error:
                raise EngineProtocolError(f"kernel instructions failed: {error}") from None
        if started is not None:
            self.stats.kernel_engine_cycles += self.engine.cycles - started

    def _engine_save(self, thread: Thread) -> None:
        """Store the engine's copy of ``thread``'s SVCR, Z/P and FPSR/FPCR into its save areas
        (the engine stays on; ZA stays resident: :mod:`~zatile.sw.abi.za_contexts`)."""
        fp = thread.fp
        svl_bytes = fp.sme_vl
        count = 1
        fp.svcr = self._kissue(_MRS_SVCR).scalar
        if fp.svcr & c.SVCR_SM_MASK:
            self._kstream(_z_p_transfers(_STR_Z, _STR_P, fp.sve_state, svl_bytes))
            predicates = fp.sve_state + 32 * svl_bytes
            # FFR is not accessible in streaming mode without FA64: it is saved as zero.
            self.ops.write_kernel(predicates + 16 * (svl_bytes // 8), bytes(svl_bytes // 8))
            fp.fp_type = FpType.SVE
            count += 48
        else:
            fp.fp_type = FpType.FPSIMD
        fp.fpsr, fp.fpcr = self.engine.fpsr, self.engine.fpcr
        self.stats.saves += 1
        self.stats.save_instructions += count

    def _engine_restore(self, thread: Thread) -> None:
        """Load ``thread``'s saved SVL, PSTATE.SM and Z/P into the engine (SME access already
        enabled; ZA is bound by the caller)."""
        fp = thread.fp
        svl_bytes = fp.sme_vl
        if self.engine.svl != 8 * svl_bytes:
            self._za_evict_all()            # a change of SVL zeroes every physical context
        self.engine.smcr_len = sve_vq_from_vl(svl_bytes) - 1
        if self.engine.svl != 8 * svl_bytes:
            raise EngineProtocolError(f"engine selected SVL {self.engine.svl} for a "
                                      f"{svl_bytes}-byte vector length")
        count = 0
        differing = self.engine.svcr ^ fp.svcr
        if differing & c.SVCR_SM_MASK:
            self._kissue(_SMSTART_SM if fp.svcr & c.SVCR_SM_MASK else _SMSTOP_SM)
            count += 1
        if fp.svcr & c.SVCR_SM_MASK:
            self._kstream(_z_p_transfers(_LDR_Z, _LDR_P, fp.sve_state, svl_bytes))
            count += 48
        self.stats.restores += 1
        self.stats.restore_instructions += count

    def _make_live(self, thread: Thread) -> None:
        """Give ``thread`` (the current thread) the engine, restoring unless it already holds it."""
        self.engine.sme_enabled = True
        if self._holder is thread:
            self.stats.restores_skipped += 1
        else:
            self._engine_restore(thread)
            self._holder = thread
        self._za_bind(thread)
        self.engine.fpsr, self.engine.fpcr = thread.fp.fpsr, thread.fp.fpcr
        self._live = True

    def _preserve(self, thread: Thread) -> None:
        """``fpsimd_preserve_current_state``: make the saved state current, keep it live (and
        its ZA resident)."""
        if self._live and self._holder is thread:
            self._engine_save(thread)
        self._za_writeback(thread)

    def _flush(self, thread: Thread) -> None:
        """Save ``thread``'s live state and forget the engine's copy (it is about to change):
        its virtual ZA contexts are stored and leave the engine too."""
        if self._live and self._holder is thread:
            self._engine_save(thread)
            self._live = False
            self.engine.sme_enabled = False
        if self._holder is thread:
            self._holder = None
        self._za_evict_thread(thread)

    def _track_svcr(self, thread: Thread) -> None:
        """After an SVCR write by ``thread``: a PSTATE.SM change zeroed Z, hence V."""
        svcr = self.engine.svcr
        if (svcr ^ thread.fp.svcr) & c.SVCR_SM_MASK:
            thread.fp.vregs[:] = bytes(512)
        thread.fp.svcr = svcr

    def _read_fp_status(self, thread: Thread, name: str) -> int:
        if self._live and self._holder is thread:
            return getattr(self.engine, name)
        return getattr(thread.fp, name)

    def _write_fp_status(self, thread: Thread, name: str, value: int) -> None:
        value &= 0xFFFFFFFF
        if self._live and self._holder is thread:
            setattr(self.engine, name, value)
        else:
            setattr(thread.fp, name, value)

    def _msr(self, thread: Thread, name: str, value: int) -> None:
        if name == "TPIDR_EL0":
            thread.cpu.tpidr = value
        elif name == "TPIDR2_EL0":
            thread.cpu.tpidr2 = value
        else:
            self._write_fp_status(thread, name.lower(), value)

    def _mrs(self, thread: Thread, name: str) -> int:
        if name == "TPIDR_EL0":
            return thread.cpu.tpidr
        if name == "TPIDR2_EL0":
            return thread.cpu.tpidr2
        return self._read_fp_status(thread, name.lower())

    def _execute_engine_instruction(self, thread: Thread, word: int) -> None:
        cpu = thread.cpu
        operands = read_operands(word, cpu)
        result = self.engine.issue(word, operands)
        if result.status is Status.SME_TRAP and result.smtc == c.ESR_ELX_SME_ISS_SMTC_SME_DISABLED:
            if not self._do_sme_acc(thread):
                return
            result = self.engine.issue(word, operands)
        if result.status is Status.OK:
            write_result(word, result.scalar, cpu)
            if result.nzcv is not None:          # PSTATE.NZCV is bits 31:28
                cpu.pstate = cpu.pstate & ~(0xF << 28) | result.nzcv << 28
            if result.fpsr_flags:                # FPSR is the engine's while it is live
                self.engine.fpsr |= result.fpsr_flags
            if _has_trait(word, Trait.SVCR_WRITE):
                self._track_svcr(thread)
            cpu.pc += 4
        elif result.status is Status.FAULT:
            self._data_abort(thread, result.fault_address, _has_trait(word, Trait.STORE))
        else:
            # UNDEF, or an SME trap other than "SME disabled" (SMTC 1-4): do_sme_acc / undef.
            self._force_signal_inject(thread, c.SIGILL, c.ILL_ILLOPC, cpu.pc)

    def _do_sme_acc(self, thread: Thread) -> bool:
        """The SMTC 0 trap: first use allocates and enables SME; later ones restore lazily."""
        fp = thread.fp
        if not fp.tif_sme:
            if not (self.ops.sve_alloc(fp, flush=False) and self.ops.sme_alloc(fp, flush=True)):
                self._kill_process(thread.process, c.SIGKILL, None)
                return False
            fp.tif_sme = True
            self.stats.first_use_traps += 1
        self._make_live(thread)
        return True

    def _syscall_entry(self, thread: Thread) -> None:
        """Kernel entry: streaming mode ends (Z/P/V zero, FPSR reset); ZA is kept.

        See docs/abi.md, "System calls".
        """
        if thread.state is not ThreadState.RUNNABLE:
            raise ValueError(f"thread {thread.tid} has exited and cannot make system calls")
        self._switch_to(thread)
        self.stats.syscalls += 1
        if self._live and self._holder is thread:
            if thread.fp.svcr & c.SVCR_SM_MASK:
                self._kissue(_SMSTOP_SM)
                self._track_svcr(thread)
        elif thread.fp.svcr & c.SVCR_SM_MASK:
            self._flush(thread)
            self.ops.task_smstop_sm(thread.fp)
