"""The host CPU (sim/host_cpu.py) on hand-assembled code: engine hand-off, V/Z coherence,
streaming-mode SIGILL, system registers, faults. Words are given as numbers so that no
assembler is needed; the SME/SVE ones come from zatile's own assembler."""

from __future__ import annotations

import struct

import pytest
from unicorn import arm64_const as a64

from zatile.sim.engine import ModelEngine
from zatile.sim.host_cpu import (PROT_EXEC, PROT_READ, PROT_WRITE, SIGILL, SIGSEGV, HostCpu,
                                 Stop, StopKind, simd_written_registers)
from zatile.sw.arch.asm import assemble_line
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.constants import FPSR_RESET_ON_SM_CHANGE

CODE, DATA = 0x10000, 0x20000
FMOV_S0_1 = 0x1E2E1000          # fmov s0, #1.0
FMOV_W1_S2 = 0x1E260041         # fmov w1, s2
ADD_V0_4S = 0x4EA08400          # add v0.4s, v0.4s, v0.4s
SVC = 0xD4000001                # svc #0
MRS_X2_PFR1 = 0xD5380422        # mrs x2, id_aa64pfr1_el1
MRS_X3_SMFR0 = 0xD53804A3       # mrs x3, id_aa64smfr0_el1
MSR_TPIDR2_X4 = 0xD51BD0A4      # msr tpidr2_el0, x4
MRS_X5_TPIDR2 = 0xD53BD0A5      # mrs x5, tpidr2_el0
MRS_X6_SCTLR = 0xD5381006       # mrs x6, sctlr_el1


def make_cpu(words, svl=256, engine_class=ModelEngine):
    def exit_on_svc(cpu):
        cpu.stop(Stop(StopKind.EXIT, status=cpu.x(0)))

    config = EngineConfig(max_svl=svl)
    cpu = HostCpu(lambda memory: engine_class(config, memory), exit_on_svc)
    cpu.engine.smcr_len = svl // 128 - 1
    cpu.engine.sme_enabled = True
    cpu.map(CODE, 0x1000, PROT_READ | PROT_EXEC)
    cpu.map(DATA, 0x1000, PROT_READ | PROT_WRITE)
    words = [assemble_line(w) if isinstance(w, str) else w for w in words] + [SVC]
    cpu.write_memory(CODE, struct.pack(f"<{len(words)}I", *words))
    cpu.pc = CODE
    return cpu


def test_v_written_by_the_cpu_in_streaming_mode_reaches_z_with_the_upper_bits_zero():
    cpu = make_cpu(["smstart sm", "fmov z1.s, #2.0", FMOV_S0_1, "mov z1.d, z0.d",
                    "str z1, [x0]", "smstop sm"])
    cpu.set_x(0, DATA)
    assert cpu.run().kind is StopKind.EXIT
    stored = cpu.read_memory(DATA, 32)
    assert stored == struct.pack("<f", 1.0) + bytes(28)
    assert cpu.stats.v_pushes == 1


def test_reading_v_in_streaming_mode_keeps_z_and_writing_v_zeroes_only_its_own_z():
    fmov_w1_s1, fmov_s2_1 = 0x1E260021, 0x1E2E1002        # fmov w1, s1; fmov s2, #1.0
    cpu = make_cpu(["smstart sm", "index z1.s, #0, #1", "index z2.s, #5, #1", fmov_w1_s1,
                    fmov_s2_1, "str z1, [x0]", "str z2, [x3]"], svl=512)
    cpu.set_x(0, DATA)
    cpu.set_x(3, DATA + 0x100)
    assert cpu.run().kind is StopKind.EXIT
    assert cpu.x(1) == 0
    assert cpu.read_memory(DATA, 64) == struct.pack("<16I", *range(16))
    assert cpu.read_memory(DATA + 0x100, 64) == struct.pack("<f", 1.0) + bytes(60)


def test_written_registers_of_legal_simd_and_fp_instructions():
    assert simd_written_registers(0x1E222820) == (0,)      # fadd s0, s1, s2
    assert simd_written_registers(0x1E260041) == ()        # fmov w1, s2
    assert simd_written_registers(0x9E670001) == (1,)      # fmov d1, x0
    assert simd_written_registers(0x1E202020) == ()        # fcmp s1, s0
    assert simd_written_registers(0x9E780020) == ()        # fcvtzs x0, d1
    assert simd_written_registers(0x3DC00003) == (3,)      # ldr q3, [x0]
    assert simd_written_registers(0x3D800003) == ()        # str q3, [x0]
    assert simd_written_registers(0x6D4017E4) == (4, 5)    # ldp d4, d5, [sp]
    assert simd_written_registers(0x1F420C20) == (0,)      # fmadd d0, d1, d2, d3


def test_z_written_by_the_engine_is_read_as_v_and_sm_changes_reset_v_and_fpsr():
    cpu = make_cpu(["smstart sm", "fmov z2.s, #2.0", FMOV_W1_S2])
    assert cpu.run().kind is StopKind.EXIT
    assert cpu.x(1) == 0x40000000 and cpu.stats.v_pulls == 1
    assert cpu.streaming
    cpu.end_streaming_mode()
    assert not cpu.streaming and cpu.v(2) == 0
    assert cpu.uc.reg_read(a64.UC_ARM64_REG_FPSR) \
        == FPSR_RESET_ON_SM_CHANGE


def test_advanced_simd_is_sigill_only_in_streaming_mode():
    cpu = make_cpu([ADD_V0_4S, "smstart sm", ADD_V0_4S])
    stop = cpu.run()
    assert (stop.kind, stop.signal, stop.address) == (StopKind.SIGNAL, SIGILL, CODE + 8)


def test_scalar_results_flags_and_system_registers():
    cpu = make_cpu(["smstart sm", "rdsvl x7, #1", "whilelt p0.s, xzr, x9", MRS_X2_PFR1,
                    MRS_X3_SMFR0, MSR_TPIDR2_X4, MRS_X5_TPIDR2, "smstop sm"])
    cpu.set_x(4, 0x1234_5678)
    cpu.set_x(9, 0)                   # no active element: Z=1, C=1 (NONE, !LAST)
    assert cpu.run().kind is StopKind.EXIT
    assert cpu.x(7) == 32
    assert cpu.uc.reg_read(a64.UC_ARM64_REG_NZCV) >> 28 == 0b0110
    assert (cpu.x(2) >> 24) & 0xF == 1                # SME
    assert cpu.x(3) == cpu.engine.id_aa64smfr0
    assert cpu.x(5) == 0x1234_5678 == cpu.tpidr2


def test_fpsr_exceptions_of_engine_instructions_are_ored_into_the_cpus_fpsr():
    msr_fpsr_xzr, mrs_x9_fpsr, mrs_x10_fpsr = 0xD51B443F, 0xD53B4429, 0xD53B442A
    cpu = make_cpu(["smstart sm", mrs_x9_fpsr, msr_fpsr_xzr, "ptrue p0.s", "fmov z1.s, #1.0",
                    "fmov z3.s, #3.0", "fdiv z1.s, p0/m, z1.s, z3.s", mrs_x10_fpsr])
    assert cpu.run().kind is StopKind.EXIT
    assert cpu.x(9) == FPSR_RESET_ON_SM_CHANGE               # SMSTART reset it
    assert cpu.x(10) == 0x10                                 # IXC from 1/3, nothing else


BFCVT_H1_S2 = 0x1E634041         # bfcvt h1, s2 (FEAT_BF16, missing from Unicorn's A72)
FMOV_S2_W3 = 0x1E270062          # fmov s2, w3
FMOV_W4_S1 = 0x1E260024          # fmov w4, s1
MSR_FPCR_X5 = 0xD51B4405         # msr fpcr, x5
MRS_X10_FPSR = 0xD53B442A        # mrs x10, fpsr
MSR_FPSR_XZR = 0xD51B443F        # msr fpsr, xzr


@pytest.mark.parametrize("single, fpcr, bf16, fpsr", [
    (0x3F80_8001, 0, 0x3F81, 0x10),            # above the halfway point: up, inexact
    (0x3F80_8000, 0, 0x3F80, 0x10),            # halfway: to even
    (0x3F81_8000, 0, 0x3F82, 0x10),            # halfway: to even, upwards
    (0x3F80_FFFF, 3 << 22, 0x3F80, 0x10),      # FPCR.RMode towards zero
    (0xBF80_0001, 2 << 22, 0xBF81, 0x10),      # towards minus infinity
    (0x4040_0000, 0, 0x4040, 0),               # exact: no flag
    (0x7F80_0001, 0, 0x7FC0, 0x01),            # signalling NaN: quietened, invalid
    (0x7F80_0001, 1 << 25, 0x7FC0, 0x01),      # FPCR.DN: the default NaN
    (0x0000_0001, 1 << 24, 0x0000, 0x80),      # FPCR.FZ: a denormal input flushed, IDC
])
@pytest.mark.parametrize("streaming", [False, True])
def test_bfcvt_is_performed_by_the_host_cpu(single, fpcr, bf16, fpsr, streaming):
    words = [MSR_FPCR_X5, FMOV_S2_W3, MSR_FPSR_XZR, BFCVT_H1_S2, MRS_X10_FPSR, FMOV_W4_S1]
    if streaming:
        words = ["smstart sm", *words, "str z1, [x0]"]
    cpu = make_cpu(words)
    cpu.set_x(0, DATA)
    cpu.set_x(3, single)
    cpu.set_x(5, fpcr)
    assert cpu.run().kind is StopKind.EXIT
    assert (cpu.x(4), cpu.x(10)) == (bf16, fpsr)
    if streaming:                              # the engine's Z1: Hd with the upper bits zero
        assert cpu.read_memory(DATA, 32) == bf16.to_bytes(2, "little") + bytes(30)


def test_fp16_scalar_in_streaming_mode_reaches_z_and_fz16_is_kept():
    fadd_h1_h2_h3, fmov_h2_w3, fmov_h3_w4 = 0x1EE32841, 0x1EE70062, 0x1EE70083
    mrs_x9_fpcr = 0xD53B4409                                  # mrs x9, fpcr
    cpu = make_cpu([MSR_FPCR_X5, "smstart sm", fmov_h2_w3, fmov_h3_w4, MSR_FPSR_XZR,
                    fadd_h1_h2_h3, MRS_X10_FPSR, mrs_x9_fpcr, "str z1, [x0]"])
    cpu.set_x(0, DATA)
    cpu.set_x(3, 0x3C00)                                      # 1.0
    cpu.set_x(4, 0x0001)                                      # a denormal: flushed by FZ16
    cpu.set_x(5, 1 << 19)                                     # FPCR.FZ16
    assert cpu.run().kind is StopKind.EXIT
    assert cpu.x(9) == 1 << 19 and cpu.fpcr == 1 << 19        # the A72 alone would drop it
    assert cpu.x(10) == 0                                     # exact: 1.0 + 0, no flag
    assert cpu.read_memory(DATA, 32) == (0x3C00).to_bytes(2, "little") + bytes(30)


@pytest.mark.parametrize("words, signal", [
    ([MRS_X6_SCTLR], SIGILL),                         # EL1 register at EL0
    ([0x00000000], SIGILL),                           # udf #0: not an engine word either
    (["smstart sm", "ptrue p0.s", "st1w {z0.s}, p0, [x0]"], SIGSEGV),   # engine store, unmapped
    ([0xF900001F], SIGSEGV),                          # str xzr, [x0]: host store, unmapped
])
def test_faults_stop_the_cpu_with_a_signal(words, signal):
    cpu = make_cpu(words)
    cpu.set_x(0, 0x40_0000)
    stop = cpu.run()
    assert (stop.kind, stop.signal) == (StopKind.SIGNAL, signal), stop
