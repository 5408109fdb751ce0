"""ptrace regsets: NT_ARM_ZA, NT_ARM_SSVE, NT_ARM_SVE, NT_ARM_TLS, NT_PRFPREG (docs/abi.md, "ptrace regsets").

The tracer is a process of its own driven from the test through ``UserContext`` and the libc
wrappers (iovecs and buffers on its stack, as a C debugger would have them). The tracee runs
until a checkpoint, is attached there (it stops at once), inspected and modified, detached,
and then stores its registers so the test can see what the modifications did.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zatile.sw.abi import constants as c
from zatile.sw.abi import libc
from zatile.sw.abi.kernel import UserContext
from zatile.sw.abi.layouts import (
    UserFpsimdState, UserSveHeader, UserZaHeader, sve_pt_size, sve_pt_sve_fpsr_offset,
    za_pt_size,
)
from zatile.sw.abi.program import Call, Executable, Mov, Mrs, Msr
from test_abi_common import (
    DATA_BASE, exit_, load_z_p, load_za, new_kernel, pattern, physical_za_contexts,
    run_to_completion, set_vl, start, store_z_p, store_za, z_p_bytes,
)

#: Every test here runs with 1, 2 and 4 physical ZA contexts.
pytestmark = pytest.mark.usefixtures("physical_za_contexts")

ZA_IN, ZP_IN = DATA_BASE, DATA_BASE + 0x10000
ZA_OUT, ZP_OUT = DATA_BASE + 0x20000, DATA_BASE + 0x30000
REGSET_ZA_BYTES = za_pt_size(16)
REGSET_SSVE_BYTES = sve_pt_size(16, c.SVE_PT_REGS_SVE)


class Session:
    """A kernel with a tracer process and a tracee stopped at its ``checkpoint`` function."""

    def __init__(self, tracee_main: list, after: list, *, data: bytes = b"", max_svl=None):
        self.kernel = new_kernel(max_svl)
        self.observed: dict = {}
        self.tracee = start(self.kernel, Executable(
            {"main": [*tracee_main, Call(self._checkpoint), *after, exit_(0)]},
            data=data, data_size=0x40000), "/bin/tracee")
        self.tid = self.tracee.threads[0].tid
        self._reached = False
        while not self._reached:
            assert self.kernel.run(max_steps=1), "tracee ended before its checkpoint"
        tracer_process = start(self.kernel, Executable({"main": [exit_(0)]}), "/bin/tracer")
        self.tracer = UserContext(self.kernel, tracer_process.threads[0])
        assert libc.ptrace(self.tracer, c.PTRACE_ATTACH, self.tid) == 0

    def _checkpoint(self, context) -> None:
        self._reached = True

    def get(self, note: int, length: int):
        return libc.getregset(self.tracer, self.tid, note, length)

    def set(self, note: int, data: bytes):
        return libc.setregset(self.tracer, self.tid, note, data)

    def finish(self) -> None:
        """Detach and run everything to its end; every kernel buffer must be free again."""
        assert libc.ptrace(self.tracer, c.PTRACE_DETACH, self.tid) == 0
        run_to_completion(self.kernel)
        assert self.tracee.exit_code == 0, f"tracee killed by {self.tracee.exit_signal}"
        assert self.kernel.heap.blocks_in_use == 0

    def memory(self, address: int, length: int) -> bytes:
        return bytes(self.tracee.mm.memory.read(address, length))


def za_header(vl: int, size: int = 16, flags: int = 0) -> bytes:
    return UserZaHeader(size=size, max_size=0, vl=vl, max_vl=0, flags=flags).pack()


def sve_header(vl: int, flags: int, size: int = 16) -> bytes:
    return UserSveHeader(size=size, max_size=0, vl=vl, max_vl=0, flags=flags).pack()


def idle_session(**kwargs) -> Session:
    return Session([], [], **kwargs)


# ------------------------------------------------------------------------------ za-ptrace
def test_za_ptrace():
    """kselftest za-ptrace, in its order, for every VQ 1..512: a header-only write of the VL;
    the VL read back is the one prctl() chooses for that request in the tracer; for a VL
    prctl() accepts as is, a header-only write reads back as disabled ZA and a full payload
    reads back unchanged."""
    session = idle_session()
    max_vl = session.kernel.lengths.max_vl
    with_data = []
    for vq in range(1, 513):
        vl = 16 * vq
        prctl_vl = libc.prctl(session.tracer, c.PR_SME_SET_VL, vl)
        assert session.set(c.NT_ARM_ZA, za_header(vl))[0] == 0, f"VL {vl}"
        result, data, _ = session.get(c.NT_ARM_ZA, REGSET_ZA_BYTES)
        header = UserZaHeader.unpack(data)
        assert result == 0 and header.vl == prctl_vl, f"VL {vl}"
        if prctl_vl != vl:
            continue
        with_data.append(vl)
        assert session.set(c.NT_ARM_ZA, za_header(vl))[0] == 0
        header = UserZaHeader.unpack(session.get(c.NT_ARM_ZA, REGSET_ZA_BYTES)[1])
        assert header.size == 16, f"Disabled ZA for VL {vl}"
        rows = pattern(vl * vl, vl)
        assert session.set(c.NT_ARM_ZA, za_header(vl, za_pt_size(vq)) + rows)[0] == 0
        result, data, _ = session.get(c.NT_ARM_ZA, REGSET_ZA_BYTES)
        header = UserZaHeader.unpack(data)
        assert (header.vl, header.size, header.max_size, header.max_vl) == \
            (vl, za_pt_size(vq), za_pt_size(vq), max_vl)
        assert data[16:16 + vl * vl] == rows, f"Data match for VL {vl}"
    assert with_data == list(session.kernel.lengths.supported)


def test_za_write_is_seen_by_the_tracee():
    svl_b = 32
    rows = pattern(svl_b * svl_b, 3)
    session = Session([set_vl(svl_b)], ["mrs x9, svcr", *store_za(ZA_OUT, svl_b),
                                        Call(lambda ctx: session.observed.update(svcr=ctx.x[9]))])
    assert session.set(c.NT_ARM_ZA, za_header(svl_b, za_pt_size(2)) + rows)[0] == 0
    session.finish()
    assert session.observed["svcr"] == c.SVCR_ZA_MASK
    assert session.memory(ZA_OUT, len(rows)) == rows


def test_za_regset_errors():
    session = Session([set_vl(32), "smstart za"], [])
    assert session.get(c.NT_ARM_ZA, 17)[0] == -c.EINVAL, "iov_len not a multiple of 16"
    assert session.set(c.NT_ARM_ZA, b"")[0] == -c.EINVAL, "no header"
    assert session.set(c.NT_ARM_ZA, za_header(0))[0] == -c.EINVAL, "invalid VL"
    assert session.set(c.NT_ARM_ZA, za_header(32, flags=1))[0] == -c.EINVAL, "unknown flag"
    # 48 rounds down to 32: data laid out for 48 cannot be used.
    assert session.set(c.NT_ARM_ZA, za_header(48) + bytes(48 * 48))[0] == -c.EIO
    # ONEXEC with another VL and a payload: the data would be read at the current VL.
    assert session.set(c.NT_ARM_ZA, za_header(64, flags=c.ZA_PT_VL_ONEXEC)
                       + bytes(64 * 64))[0] == -c.EIO
    assert session.get(c.NT_ARM_ZT, 64)[0] == -c.EINVAL, "no SME2"
    assert session.get(c.NT_ARM_FPMR, 8)[0] == -c.EINVAL
    assert session.get(c.NT_ARM_SVE, 16)[0] == -c.EINVAL, "no SVE"


@pytest.mark.parametrize("short", [0, 16], ids=["exact", "one_quantum_short"])
def test_za_write_payload_at_the_exact_boundary(short):
    """A ZA payload of exactly ZA_PT_SIZE(vq) - 16 bytes fills every row; one 16-byte quantum
    less is copied as far as it goes (user_regset_copyin) and the rest of ZA stays zero."""
    session = idle_session()
    vl, vq = 32, 2
    rows = pattern(vl * vl, 5)
    payload = rows[:len(rows) - short]
    assert session.set(c.NT_ARM_ZA, za_header(vl, za_pt_size(vq)) + payload)[0] == 0
    result, data, _ = session.get(c.NT_ARM_ZA, REGSET_ZA_BYTES)
    assert result == 0 and UserZaHeader.unpack(data).size == za_pt_size(vq)
    assert data[16:za_pt_size(vq)] == payload + bytes(short)
    assert session.set(c.NT_ARM_ZA, za_header(vl) + bytes(1))[0] == -c.EINVAL, \
        "an iov length that is not a multiple of 16"


@pytest.mark.parametrize("end", ["before_fpsr", "with_fpsr"])
def test_ssve_write_payload_ending_at_the_fpsr_boundary(end):
    """FPSR/FPCR of an SVE-format write come from SVE_PT_SVE_FPSR_OFFSET(vq): a payload that
    ends just before it leaves them zero; 16 bytes more sets them."""
    session = idle_session()
    vl, vq = 32, 2
    fpsr_offset = sve_pt_sve_fpsr_offset(vq)
    data = bytearray(fpsr_offset + 16)
    data[:16] = sve_header(vl, c.SVE_PT_REGS_SVE, sve_pt_size(vq, c.SVE_PT_REGS_SVE))
    data[fpsr_offset:fpsr_offset + 8] = (0x1F).to_bytes(4, "little") + \
        (0x0300_0000).to_bytes(4, "little")
    if end == "before_fpsr":
        data = data[:fpsr_offset]
    assert session.set(c.NT_ARM_SSVE, bytes(data))[0] == 0
    fpsimd = UserFpsimdState.unpack(session.get(c.NT_PRFPREG, 528)[1])
    assert (fpsimd.fpsr, fpsimd.fpcr) == ((0, 0) if end == "before_fpsr" else (0x1F, 0x0300_0000))


def test_regset_io_is_clamped_and_the_length_written_back():
    session = Session([set_vl(16), "smstart za"], [])
    result, data, written = session.get(c.NT_ARM_ZA, REGSET_ZA_BYTES + 64)
    assert result == 0 and written == REGSET_ZA_BYTES
    header = UserZaHeader.unpack(data)
    assert header.size == za_pt_size(1)
    assert data[za_pt_size(1):] == b"\xa5" * (len(data) - za_pt_size(1)), \
        "bytes past what the getter produced are left alone"
    result, data, written = session.get(c.NT_ARM_ZA, 32)
    assert result == 0 and written == 32 and UserZaHeader.unpack(data).size == za_pt_size(1)


def test_inherit_and_onexec_flags_through_za_header():
    session = idle_session()
    assert session.set(c.NT_ARM_ZA, za_header(32, flags=c.ZA_PT_VL_INHERIT))[0] == 0
    assert UserZaHeader.unpack(session.get(c.NT_ARM_ZA, 16)[1]).flags == c.ZA_PT_VL_INHERIT
    assert session.set(c.NT_ARM_ZA, za_header(64, flags=c.ZA_PT_VL_ONEXEC))[0] == 0
    header = UserZaHeader.unpack(session.get(c.NT_ARM_ZA, 16)[1])
    assert header.vl == 32 and header.flags == 0, "ONEXEC is never reported"
    assert session.tracee.threads[0].fp.sme_vl_onexec == 64


# ------------------------------------------------------------------------- sve-ptrace (SSVE)
@pytest.mark.parametrize("vl", [16, 32, 64])
def test_ssve_ptrace_round_trip(vl):
    """kselftest sve-ptrace for "Streaming SVE": SVE-format data in, same data out."""
    session = idle_session()
    vq = vl // 16
    registers = pattern(z_p_bytes(vl), vl) + bytes(vl // 8)
    fpsr_offset = sve_pt_sve_fpsr_offset(vq)
    payload = bytearray(sve_pt_size(vq, c.SVE_PT_REGS_SVE) - 16)
    payload[:len(registers)] = registers
    payload[fpsr_offset - 16:fpsr_offset - 8] = (0x1F).to_bytes(4, "little") + \
        (0x0300_0000).to_bytes(4, "little")
    header = sve_header(vl, c.SVE_PT_REGS_SVE, sve_pt_size(vq, c.SVE_PT_REGS_SVE))
    assert session.set(c.NT_ARM_SSVE, header + payload)[0] == 0
    result, data, _ = session.get(c.NT_ARM_SSVE, REGSET_SSVE_BYTES)
    got = UserSveHeader.unpack(data)
    assert result == 0 and got.vl == vl and got.flags == c.SVE_PT_REGS_SVE
    assert got.size == sve_pt_size(vq, c.SVE_PT_REGS_SVE)
    max_vl = session.kernel.config.max_svl // 8
    assert got.max_size == sve_pt_size(max_vl // 16, c.SVE_PT_REGS_SVE) and got.max_vl == max_vl
    assert data[16:got.size] == bytes(payload)
    # The SVE-format write is readable through NT_PRFPREG: V is the low 128 bits of Z.
    fpsimd = UserFpsimdState.unpack(session.get(c.NT_PRFPREG, 528)[1])
    assert fpsimd.vregs == b"".join(registers[n * vl:n * vl + 16] for n in range(32))
    assert (fpsimd.fpsr, fpsimd.fpcr) == (0x1F, 0x0300_0000)


def test_ssve_inherit_flag_round_trip_and_fpsimd_format_rejected():
    session = idle_session()
    flags = c.SVE_PT_REGS_SVE | c.SVE_PT_VL_INHERIT
    assert session.set(c.NT_ARM_SSVE, sve_header(32, flags))[0] == 0
    got = UserSveHeader.unpack(session.get(c.NT_ARM_SSVE, 16)[1])
    assert got.flags == flags and got.vl == 32
    assert session.set(c.NT_ARM_SSVE, sve_header(32, c.SVE_PT_REGS_SVE))[0] == 0
    assert UserSveHeader.unpack(session.get(c.NT_ARM_SSVE, 16)[1]).flags == c.SVE_PT_REGS_SVE
    assert session.set(c.NT_ARM_SSVE, sve_header(32, c.SVE_PT_REGS_FPSIMD)
                       + bytes(528))[0] == -c.EINVAL, "≥6.16: streaming state needs SVE format"


#: sve-ptrace sweeps the VQs the architecture allows plus one, to see the clamping.
SVE_PTRACE_TEST_VQ_MAX = 17


def test_sve_ptrace_ssve_set_get_vl():
    """kselftest sve-ptrace ``ptrace_set_get_vl`` for "Streaming SVE": a header-only write of
    each VL (SVE format: ≥6.16 refuses FPSIMD format for streaming state) sets the VL that
    prctl() chooses for that request in the tracer, and enters streaming mode with every
    register zero (no register content was provided)."""
    session = idle_session()
    for vq in range(1, SVE_PTRACE_TEST_VQ_MAX + 1):
        vl = 16 * vq
        prctl_vl = libc.prctl(session.tracer, c.PR_SME_SET_VL, vl)
        assert session.set(c.NT_ARM_SSVE, sve_header(vl, c.SVE_PT_REGS_SVE))[0] == 0, f"VL {vl}"
        result, data, _ = session.get(c.NT_ARM_SSVE, REGSET_SSVE_BYTES)
        header = UserSveHeader.unpack(data)
        size = sve_pt_size(prctl_vl // 16, c.SVE_PT_REGS_SVE)
        assert result == 0 and (header.vl, header.flags, header.size) == \
            (prctl_vl, c.SVE_PT_REGS_SVE, size), f"VL {vl}"
        assert data[16:size] == bytes(size - 16), f"VL {vl}: registers not zeroed"


@pytest.mark.parametrize("vl", [16, 32, 64])
def test_sve_ptrace_ssve_set_fpsimd_get_sve_data(vl):
    """kselftest sve-ptrace ``ptrace_set_fpsimd_get_sve_data`` for "Streaming SVE": after
    an SVE-format write (streaming mode, nonzero registers), an NT_PRFPREG write reads back
    through NT_ARM_SSVE in SVE format: V in the low 128 bits of each Z, the rest of Z and
    all of P zero, FPSR/FPCR as written."""
    session = idle_session()
    vq = vl // 16
    size = sve_pt_size(vq, c.SVE_PT_REGS_SVE)
    registers = pattern(z_p_bytes(vl), vl)
    payload = registers + bytes(size - 16 - len(registers))
    assert session.set(c.NT_ARM_SSVE, sve_header(vl, c.SVE_PT_REGS_SVE, size) + payload)[0] == 0
    vregs = pattern(512, vl + 1)
    fpsimd = UserFpsimdState(vregs=vregs, fpsr=0x8000_0010, fpcr=0x0200_0000).pack()
    assert session.set(c.NT_PRFPREG, fpsimd)[0] == 0
    result, data, _ = session.get(c.NT_ARM_SSVE, REGSET_SSVE_BYTES)
    header = UserSveHeader.unpack(data)
    assert result == 0 and (header.vl, header.flags, header.size) == \
        (vl, c.SVE_PT_REGS_SVE, size)
    expected_z = b"".join(vregs[16 * n:16 * n + 16] + bytes(vl - 16) for n in range(32))
    assert data[16:16 + len(registers)] == expected_z + bytes(16 * (vl // 8))
    fpsr_offset = sve_pt_sve_fpsr_offset(vq)
    assert data[fpsr_offset:fpsr_offset + 8] == (0x8000_0010).to_bytes(4, "little") + \
        (0x0200_0000).to_bytes(4, "little")


def test_inactive_ssve_reads_as_a_header_only():
    session = idle_session()
    result, data, _ = session.get(c.NT_ARM_SSVE, REGSET_SSVE_BYTES)
    header = UserSveHeader.unpack(data)
    assert result == 0 and header.size == 16 and header.flags == c.SVE_PT_REGS_FPSIMD
    assert data[16:] == b"\xa5" * (len(data) - 16)


def test_sve_regset_on_an_sme_only_system():
    """NT_ARM_SVE: no reads; a VL-0 FPSIMD write (and nothing else) leaves streaming mode."""
    session = Session([set_vl(32), "smstart sm"], ["mrs x9, svcr",
                      Call(lambda ctx: session.observed.update(svcr=ctx.x[9],
                                                               v=ctx.vregs))])
    vregs = pattern(512, 9)
    assert session.set(c.NT_ARM_SVE, sve_header(32, c.SVE_PT_REGS_FPSIMD))[0] == -c.EINVAL
    assert session.set(c.NT_ARM_SVE, sve_header(0, c.SVE_PT_REGS_SVE))[0] == -c.EINVAL
    assert session.set(c.NT_ARM_SVE, sve_header(0, c.SVE_PT_VL_INHERIT))[0] == -c.EINVAL
    fpsimd = UserFpsimdState(vregs=vregs, fpsr=0x10, fpcr=0).pack()
    assert session.set(c.NT_ARM_SVE, sve_header(0, c.SVE_PT_REGS_FPSIMD) + fpsimd)[0] == 0
    session.finish()
    assert session.observed == {"svcr": 0, "v": vregs}


# -------------------------------------------------------------------------- TLS and FPR
def test_tls_regset():
    session = Session([Mov(1, 0x1111), Msr("TPIDR_EL0", 1), Mov(2, 0x2222),
                       Msr("TPIDR2_EL0", 2)],
                      [Mrs(3, "TPIDR_EL0"), Mrs(4, "TPIDR2_EL0"),
                       Call(lambda ctx: session.observed.update(tls=(ctx.x[3], ctx.x[4])))])
    result, data, written = session.get(c.NT_ARM_TLS, 16)
    assert result == 0 and written == 16
    assert data == (0x1111).to_bytes(8, "little") + (0x2222).to_bytes(8, "little")
    assert session.get(c.NT_ARM_TLS, 12)[0] == -c.EINVAL
    assert session.set(c.NT_ARM_TLS, (0x3333).to_bytes(8, "little")) == (0, 8)
    assert session.get(c.NT_ARM_TLS, 16)[1][8:] == (0x2222).to_bytes(8, "little")
    assert session.set(c.NT_ARM_TLS, (0x4444).to_bytes(8, "little")
                       + (0x5555).to_bytes(8, "little"))[0] == 0
    session.finish()
    assert session.observed["tls"] == (0x4444, 0x5555)


def test_prfpreg_partial_write_keeps_the_rest():
    vregs = pattern(512, 4)
    session = Session([Call(lambda ctx: setattr(ctx, "vregs", vregs))], [])
    assert session.get(c.NT_PRFPREG, 6)[0] == -c.EINVAL
    assert session.set(c.NT_PRFPREG, b"\x01" * 16)[0] == 0
    state = UserFpsimdState.unpack(session.get(c.NT_PRFPREG, 528)[1])
    assert state.vregs == b"\x01" * 16 + vregs[16:]


# ------------------------------------------------------------------------- fp-ptrace matrix
WRITES = ("none", "fpsimd", "ssve", "sve_exit", "za", "za_off", "za_vl_change",
          "ssve_vl_change")


def expected_outcome(svcr_in: int, write: str, vl: int) -> tuple[int, int]:
    """(SVCR, SME VL) after ``write`` (fp-ptrace's rules for an SME-only system, ≥6.16)."""
    sm, za = c.SVCR_SM_MASK, c.SVCR_ZA_MASK
    other = 32 if vl != 32 else 16
    return {
        "none": (svcr_in, vl), "fpsimd": (svcr_in, vl), "ssve": (svcr_in | sm, vl),
        "sve_exit": (svcr_in & ~sm, vl), "za": (svcr_in | za, vl), "za_off": (svcr_in & ~za, vl),
        "za_vl_change": (svcr_in & ~za, other), "ssve_vl_change": ((svcr_in | sm) & ~za, other),
    }[write]


@pytest.mark.parametrize("vl", [16, 64])
@pytest.mark.parametrize("svcr_in", [0, 1, 2, 3])
@pytest.mark.parametrize("write", WRITES)
def test_fp_ptrace(svcr_in, write, vl):
    """kselftest fp-ptrace entries that exist without SVE/SME2/FPMR: initial reads match what
    the tracee loaded; after one write the tracee's registers are what docs/abi.md, "ptrace
    regsets" says."""
    sm_in, za_in = bool(svcr_in & 1), bool(svcr_in & 2)
    svcr_out, vl_out = expected_outcome(svcr_in, write, vl)
    sm_out, za_out = bool(svcr_out & 1), bool(svcr_out & 2)
    za_rows, registers, vregs = pattern(vl * vl, vl), pattern(z_p_bytes(vl), vl + 1), \
        pattern(512, vl + 2)
    setup = [set_vl(vl)]
    if sm_in:
        setup += ["smstart sm", *load_z_p(ZP_IN, vl)]
    else:
        setup.append(Call(lambda ctx: setattr(ctx, "vregs", vregs)))
    if za_in:
        setup += ["smstart za", *load_za(ZA_IN, vl)]
    setup += [Mov(1, 0x0300_0000), Msr("FPCR", 1), Mov(1, 0x11), Msr("FPSR", 1)]
    after = ["mrs x9, svcr", "rdsvl x10, #1"]
    if sm_out:
        after += store_z_p(ZP_OUT, vl_out)
    if za_out:
        after += store_za(ZA_OUT, vl_out)
    after += [Mrs(11, "FPSR"), Mrs(12, "FPCR"), Call(lambda ctx: session.observed.update(
        svcr=ctx.x[9], vl=ctx.x[10], fpsr=ctx.x[11], fpcr=ctx.x[12],
        v=None if sm_out else ctx.vregs))]
    data = bytearray(0x20000)
    data[:len(za_rows)] = za_rows
    data[0x10000:0x10000 + len(registers)] = registers
    session = Session(setup, after, data=bytes(data))

    # Initial reads.
    za_result, za_data, _ = session.get(c.NT_ARM_ZA, REGSET_ZA_BYTES)
    za_header_read = UserZaHeader.unpack(za_data)
    assert za_result == 0 and za_header_read.vl == vl
    assert za_header_read.size == (za_pt_size(vl // 16) if za_in else 16)
    if za_in:
        assert za_data[16:16 + vl * vl] == za_rows
    effective_v = b"".join(registers[n * vl:n * vl + 16] for n in range(32)) if sm_in else vregs
    fpsimd = UserFpsimdState.unpack(session.get(c.NT_PRFPREG, 528)[1])
    assert (fpsimd.vregs, fpsimd.fpsr, fpsimd.fpcr) == (effective_v, 0x11, 0x0300_0000)
    ssve = session.get(c.NT_ARM_SSVE, REGSET_SSVE_BYTES)[1]
    ssve_header = UserSveHeader.unpack(ssve)
    if sm_in:
        assert ssve_header.flags & c.SVE_PT_REGS_MASK == c.SVE_PT_REGS_SVE
        assert ssve[16:16 + len(registers)] == registers
        fpsr_offset = sve_pt_sve_fpsr_offset(vl // 16)
        assert ssve[fpsr_offset:fpsr_offset + 8] == (0x11).to_bytes(4, "little") + \
            (0x0300_0000).to_bytes(4, "little")
    else:
        assert ssve_header.size == 16

    # One write.
    new_v, new_za = pattern(512, 99), pattern(vl_out * vl_out, 98)
    new_registers = pattern(z_p_bytes(vl_out), 97)
    new_fpsr, new_fpcr = 0x8, 0x0040_0000
    if write == "fpsimd":
        state = UserFpsimdState(vregs=new_v, fpsr=new_fpsr, fpcr=new_fpcr).pack()
        assert session.set(c.NT_PRFPREG, state)[0] == 0
    elif write in ("ssve", "ssve_vl_change"):
        vq = vl_out // 16
        payload = bytearray(sve_pt_size(vq, c.SVE_PT_REGS_SVE) - 16)
        payload[:len(new_registers)] = new_registers
        offset = sve_pt_sve_fpsr_offset(vq) - 16
        payload[offset:offset + 8] = new_fpsr.to_bytes(4, "little") + new_fpcr.to_bytes(4, "little")
        header = sve_header(vl_out, c.SVE_PT_REGS_SVE, sve_pt_size(vq, c.SVE_PT_REGS_SVE))
        assert session.set(c.NT_ARM_SSVE, header + payload)[0] == 0
    elif write == "sve_exit":
        state = UserFpsimdState(vregs=new_v, fpsr=new_fpsr, fpcr=new_fpcr).pack()
        assert session.set(c.NT_ARM_SVE, sve_header(0, c.SVE_PT_REGS_FPSIMD) + state)[0] == 0
    elif write == "za":
        assert session.set(c.NT_ARM_ZA, za_header(vl, za_pt_size(vl // 16)) + new_za)[0] == 0
    elif write in ("za_off", "za_vl_change"):
        assert session.set(c.NT_ARM_ZA, za_header(vl_out))[0] == 0
    session.finish()

    seen = session.observed
    assert seen["svcr"] == svcr_out and seen["vl"] == vl_out
    # Expected V / Z / P.
    if write == "fpsimd":
        expected_v, expected_z = new_v, None
        if sm_out:
            expected_z = b"".join(new_v[16 * n:16 * n + 16] + bytes(vl - 16) for n in range(32)) \
                + bytes(16 * (vl // 8))
    elif write in ("ssve", "ssve_vl_change"):
        expected_z = new_registers
        expected_v = None
    elif write == "sve_exit":
        expected_v, expected_z = new_v, None
    elif write == "za_vl_change":
        # A real SME VL change: V kept, the rest of Z and all of P zero, SM unchanged.
        expected_v = effective_v
        expected_z = b"".join(effective_v[16 * n:16 * n + 16] + bytes(vl_out - 16)
                              for n in range(32)) + bytes(16 * (vl_out // 8)) if sm_out else None
    else:
        expected_v = effective_v
        expected_z = registers if sm_out else None
    if sm_out:
        assert session.memory(ZP_OUT, z_p_bytes(vl_out)) == expected_z
    else:
        assert seen["v"] == expected_v
    if za_out:
        expected_za = new_za if write == "za" else za_rows
        assert session.memory(ZA_OUT, vl_out * vl_out) == expected_za
    if write in ("fpsimd", "ssve", "ssve_vl_change", "sve_exit"):
        assert (seen["fpsr"], seen["fpcr"]) == (new_fpsr, new_fpcr)
    else:
        assert (seen["fpsr"], seen["fpcr"]) == (0x11, 0x0300_0000)


# ------------------------------------------------------------------------ ptrace rules
def test_ptrace_needs_an_attached_stopped_tracee():
    session = idle_session()
    other = start(session.kernel, Executable({"main": [exit_(0)]}), "/bin/other")
    assert libc.ptrace(session.tracer, c.PTRACE_ATTACH, session.tid) == -c.EPERM
    assert libc.getregset(session.tracer, other.pid, c.NT_ARM_ZA, 16)[0] == -c.ESRCH
    assert libc.ptrace(session.tracer, c.PTRACE_ATTACH, session.tracer.tid) == -c.EPERM
    assert libc.ptrace(session.tracer, c.PTRACE_ATTACH, 999) == -c.ESRCH


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(note=st.sampled_from([c.NT_ARM_ZA, c.NT_ARM_SSVE, c.NT_ARM_SVE, c.NT_PRFPREG,
                             c.NT_ARM_TLS, c.NT_ARM_ZT]),
       vl=st.one_of(st.sampled_from([0, 16, 32, 48, 64, 128, 256, 8192]),
                    st.integers(0, 0xFFFF)),
       flags=st.integers(0, 0xFFFF), size=st.integers(0, 0xFFFF_FFFF),
       payload=st.binary(max_size=4200), svcr=st.sampled_from([0, 1, 2, 3]))
def test_fuzzed_ptrace_payloads_return_zero_or_an_errno(note, vl, flags, size, payload, svcr):
    setup = [set_vl(32)] + (["smstart sm"] if svcr & 1 else []) + \
        (["smstart za"] if svcr & 2 else [])
    session = Session(setup, ["mrs x9, svcr", "rdsvl x10, #1"])
    header = UserSveHeader(size=size, max_size=0, vl=vl, max_vl=0, flags=flags).pack()
    result, _ = session.set(note, header + payload)
    assert result == 0 or result in (-c.EINVAL, -c.EIO, -c.ENOMEM)
    for regset in (c.NT_ARM_ZA, c.NT_ARM_SSVE, c.NT_PRFPREG, c.NT_ARM_TLS):
        assert session.get(regset, 4096 * 17)[0] in (0, -c.EINVAL)
    session.finish()
