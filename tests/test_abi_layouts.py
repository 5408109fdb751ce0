"""Constants, byte layouts and size formulas of the SME ABI (docs/abi.md, "Constants", "Signal records", "ptrace headers", "prctl")."""

from __future__ import annotations

import pytest

from zatile.sw.abi import constants as c
from zatile.sw.abi.cpufeatures import SmeVectorLengths
from zatile.sw.abi.layouts import (
    RT_SIGFRAME_RESERVED_OFFSET, SIZEOF_RT_SIGFRAME, ContextHeader, ElfPrpsinfo, ElfPrstatus,
    EsrContext, ExtraContext, FpsimdContext, KernelSigaction, SigContext, SveContext,
    Tpidr2Block, Tpidr2Context, UContext, UserFpsimdState, UserPtRegs, UserSveHeader,
    UserZaHeader, ZaContext, sve_pt_size, sve_sig_context_size, sve_sig_ffr_offset,
    sve_sig_preg_offset, sve_sig_zreg_offset, sve_vl_valid, za_pt_size, za_sig_context_size,
)
from zatile.sw.abi.sigframe import (
    FrameTooLarge, SignalContext, frame_writes, minimum_signal_stack_size, sigframe_layout,
)


def test_magics_and_flags():
    assert (c.FPSIMD_MAGIC, c.ESR_MAGIC, c.EXTRA_MAGIC, c.SVE_MAGIC) == \
        (0x46508001, 0x45535201, 0x45585401, 0x53564501)
    assert (c.TPIDR2_MAGIC, c.ZA_MAGIC, c.ZT_MAGIC) == (0x54504902, 0x54366345, 0x5A544E01)
    assert c.TPIDR2_MAGIC.to_bytes(4, "big")[:3] == b"TPI"
    assert (c.PR_SME_SET_VL, c.PR_SME_GET_VL, c.PR_SME_VL_INHERIT, c.PR_SME_SET_VL_ONEXEC) == \
        (63, 64, 0x20000, 0x40000)
    assert (c.SVE_PT_VL_INHERIT, c.SVE_PT_VL_ONEXEC, c.ZA_PT_VL_INHERIT) == (2, 4, 2)
    assert (c.NT_ARM_SSVE, c.NT_ARM_ZA, c.NT_ARM_ZT, c.NT_ARM_TLS) == (0x40B, 0x40C, 0x40D, 0x401)
    assert c.HWCAP2_SME == 0x800000 and c.HWCAP2_SME2 == 1 << 37
    assert c.SPSR_EL1_AARCH64_RES0_BITS == 0xFFFF_FFFF_0CDF_E020


@pytest.mark.parametrize("layout, size", [
    (ContextHeader, 8), (FpsimdContext, 528), (EsrContext, 16), (ExtraContext, 32),
    (SveContext, 16), (Tpidr2Context, 16), (ZaContext, 16), (SigContext, 288),
    (UContext, 176), (UserFpsimdState, 528), (UserSveHeader, 16), (UserZaHeader, 16),
    (UserPtRegs, 272), (Tpidr2Block, 16), (KernelSigaction, 32), (ElfPrstatus, 392),
    (ElfPrpsinfo, 136),
])
def test_structure_sizes(layout, size):
    assert layout.SIZE == size


def test_structure_offsets():
    assert FpsimdContext.offsetof("vregs") == 16 and FpsimdContext.offsetof("fpcr") == 12
    assert ExtraContext.offsetof("datap") == 8 and ExtraContext.offsetof("extra_size") == 16
    assert SigContext.offsetof("sp") == 256 and SigContext.offsetof("pstate") == 272
    assert UContext.offsetof("uc_sigmask") == 40
    assert UserFpsimdState.offsetof("fpsr") == 512
    assert UserZaHeader.offsetof("flags") == 12
    assert Tpidr2Block.offsetof("num_za_save_slices") == 8
    assert (RT_SIGFRAME_RESERVED_OFFSET, SIZEOF_RT_SIGFRAME) == (592, 4688)


def test_pack_and_unpack_are_inverse_and_reserved_bytes_are_zero():
    record = ZaContext(size=272, vl=16)
    data = record.pack()
    assert data == (c.ZA_MAGIC.to_bytes(4, "little") + (272).to_bytes(4, "little")
                    + (16).to_bytes(2, "little") + bytes(6))
    assert ZaContext.unpack(b"xx" + data, 2) == record
    block = Tpidr2Block(za_save_buffer=0x1000, num_za_save_slices=16)
    assert Tpidr2Block.unpack(block.pack()) == block
    regs = UserPtRegs(regs=tuple(range(31)), sp=1, pc=2, pstate=3)
    assert UserPtRegs.unpack(regs.pack()) == regs


@pytest.mark.parametrize("vq, za, sve_signal, sve_ptrace", [
    (1, 272, 562, 592), (2, 1040, 1108, 1136), (4, 4112, 2200, 2224), (8, 16400, 4384, 4400),
    (16, 65552, 8752, 8768),
])
def test_worked_sizes(vq, za, sve_signal, sve_ptrace):
    """docs/abi.md, "Worked sizes"."""
    assert za_sig_context_size(vq) == za_pt_size(vq) == za
    assert sve_sig_context_size(vq) == sve_signal
    assert sve_pt_size(vq, c.SVE_PT_REGS_SVE) == sve_ptrace
    assert sve_pt_size(vq, c.SVE_PT_REGS_FPSIMD) == 544


def test_sve_register_offsets():
    assert sve_sig_zreg_offset(2, 3) == 16 + 32 * 3
    assert sve_sig_preg_offset(2, 1) == 16 + 1024 + 4
    assert sve_sig_ffr_offset(2) == 16 + 1088


@pytest.mark.parametrize("vl, valid", [(0, False), (16, True), (17, False), (8192, True),
                                       (8208, False), (48, True)])
def test_sve_vl_valid(vl, valid):
    assert sve_vl_valid(vl) is valid


@pytest.mark.parametrize("supported, requests", [
    ((16, 32, 64), {16: 16, 48: 32, 100 * 16: 64, 0: 16, 17: 16, 8192: 64}),
    ((32, 128), {16: 32, 64: 32, 112: 32, 128: 128, 4096: 128}),
    ((64,), {16: 64, 64: 64, 256: 64}),
])
def test_find_supported_vector_length(supported, requests):
    lengths = SmeVectorLengths(supported)
    for request, expected in requests.items():
        assert lengths.find_supported(request) == expected


@pytest.mark.parametrize("supported, default", [((16, 32, 64), 32), ((16,), 16),
                                                ((64, 128), 64), ((16, 64), 16)])
def test_boot_default_vector_length(supported, default):
    """find_supported_vector_length(SME, 32): 32 if supported, else the largest below, else min."""
    assert SmeVectorLengths(supported).boot_default == default


def test_layout_order_and_extra_context():
    layout = sigframe_layout(with_esr=True, sve_vq=4, za_vq=4)
    assert (layout.fpsimd, layout.esr, layout.sve, layout.tpidr2) == (592, 1120, 1136, 3344)
    assert layout.extra == 3360 and layout.za == 3360 + 32 + 16
    assert layout.end == layout.za + 4112 and layout.size == layout.end + 16
    small = sigframe_layout(with_esr=False, sve_vq=0, za_vq=0)
    assert small.extra is None and small.frame_size == SIZEOF_RT_SIGFRAME


def test_a_frame_never_exceeds_sigframe_maxsz():
    assert sigframe_layout(with_esr=True, sve_vq=16, za_vq=16).size < c.SIGFRAME_MAXSZ
    with pytest.raises(FrameTooLarge):
        sigframe_layout(with_esr=False, sve_vq=0, za_vq=32)


def test_minimum_signal_stack_size():
    layout = sigframe_layout(with_esr=True, sve_vq=16, za_vq=16)
    assert minimum_signal_stack_size(256) == layout.frame_size + 16 + 16


def test_frame_writes_touch_only_the_fields_the_kernel_writes():
    """Padding, __unused, record tails and (without SA_SIGINFO) siginfo keep old stack bytes."""
    layout = sigframe_layout(with_esr=False, sve_vq=1, za_vq=0)
    frame, next_frame = 0x10000, 0x10000 + layout.frame_size
    context = SignalContext(regs=tuple(range(31)), sp=0x20000, pc=0x400000, pstate=0,
                            fault_address=0, sigmask=0, fpsr=0, fpcr=0, vregs=bytes(512),
                            esr=None, sve_vl=16, sve_flags=c.SVE_SIG_FLAG_SM,
                            sve_payload=bytes(546), tpidr2=0, za_vl=16, za_payload=b"",
                            siginfo=None)
    memory = bytearray(b"\xaa" * (layout.frame_size + 16))
    for address, data in frame_writes(layout, frame, next_frame, context):
        memory[address - frame:address - frame + len(data)] = data
    untouched = {offset for offset, byte in enumerate(memory) if byte == 0xAA}
    assert set(range(0, 128)) <= untouched, "siginfo is only written with SA_SIGINFO"
    assert set(range(128 + 48, 128 + 176)) <= untouched, "uc.__unused"
    assert {128 + 28, 128 + 29, 128 + 30, 128 + 31} <= untouched, "stack_t padding"
    sve_tail = range(layout.sve + 16 + 546, layout.sve + 576)
    assert set(sve_tail) <= untouched, "SVE record rounding"
    assert set(range(layout.end + 16, layout.frame_size)) <= untouched
