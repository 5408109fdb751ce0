"""Signal delivery and rt_sigreturn: the arm64 signal kselftests and every sigreturn check.

Tests named ``test_<kselftest>`` follow tools/testing/selftests/arm64/signal/testcases
(docs/abi.md, "Selftest acceptance list"). A frame is captured the way the kselftest framework does it: a BRK raises
SIGTRAP synchronously (so PSTATE.SM survives, unlike a system call), the handler copies its
frame and skips the BRK. Fake sigreturns copy a captured frame, corrupt it, place it on the
stack and call rt_sigreturn; the kernel must answer with SIGSEGV.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zatile.sw.abi import constants as c
from zatile.sw.abi import libc
from zatile.sw.abi.layouts import (
    RT_SIGFRAME_MCONTEXT_OFFSET, RT_SIGFRAME_RESERVED_OFFSET, SIGCONTEXT_RESERVED_SIZE,
    ContextHeader, EsrContext, ExtraContext, FpsimdContext, SigContext, SveContext, UContext,
    ZaContext, round_up, sve_sig_context_size, za_sig_context_size,
)
from zatile.sw.abi.mm import STACK_TOP
from zatile.sw.abi.program import Brk, Call, Executable, Mov, Mrs, Msr, Ret, Syscall
from zatile.sw.abi.sigframe import frame_records
from test_abi_common import (
    DATA_BASE, SVLS, FrameCapture, exit_, install_handler, load_z_p, load_za, new_kernel, pattern,
    physical_za_contexts, run_to_completion, set_vl, start, store_z_p, store_za, z_p_bytes,
)

#: Every test here runs with 1, 2 and 4 physical ZA contexts.
pytestmark = pytest.mark.usefixtures("physical_za_contexts")

ZA_DATA = DATA_BASE
ZA_CHECK = DATA_BASE + 0x10000
Z_DATA = DATA_BASE + 0x20000
Z_CHECK = DATA_BASE + 0x28000


def run_and_capture(svl: int, setup: list, *, after: list = (), max_svl: int | None = None,
            data: bytes = b"", handler_extra: list | None = None):
    """Run setup, BRK, then ``after``; returns (process, capture)."""
    kernel = new_kernel(max_svl)
    frames = FrameCapture()
    program = Executable({
        "main": [set_vl(svl // 8), install_handler(c.SIGTRAP), *setup, Brk(), *after, exit_(0)],
        "handler": frames.steps(handler_extra)}, data=data, data_size=0x30000)
    process = start(kernel, program)
    run_to_completion(kernel)
    assert process.exit_code == 0, f"process ended with signal {process.exit_signal}"
    return process, frames, kernel


# ----------------------------------------------------------------------- record content
@pytest.mark.parametrize("svl", SVLS)
def test_za_regs(svl):
    svl_b = svl // 8
    rows = pattern(svl_b * svl_b, svl)
    process, capture, _ = capture_za(svl, rows)
    record = capture.record(c.ZA_MAGIC)
    assert ZaContext.unpack(record.data).vl == svl_b
    assert record.size == round_up(za_sig_context_size(svl_b // 16), 16)
    assert record.data[16:16 + svl_b * svl_b] == rows
    # ZA survived the handler (which ran with ZA off) and the sigreturn.
    assert bytes(process.mm.memory.read(ZA_CHECK, svl_b * svl_b)) == rows


def capture_za(svl: int, rows: bytes):
    svl_b = svl // 8
    return run_and_capture(svl, ["smstart za", *load_za(ZA_DATA, svl_b)],
                   after=store_za(ZA_CHECK, svl_b), data=rows)


@pytest.mark.parametrize("svl", SVLS)
def test_za_no_regs(svl):
    _, capture, _ = run_and_capture(svl, [])
    record = capture.record(c.ZA_MAGIC)
    assert ZaContext.unpack(record.data).vl == svl // 8
    assert record.size == 16


@pytest.mark.parametrize("svl", SVLS)
def test_ssve_regs(svl):
    svl_b = svl // 8
    registers = pattern(z_p_bytes(svl_b), svl + 1)
    process, capture, _ = run_and_capture(svl, ["smstart sm", *load_z_p(Z_DATA, svl_b)],
                                  after=store_z_p(Z_CHECK, svl_b), data=bytes(0x20000) + registers)
    record = capture.record(c.SVE_MAGIC)
    header = SveContext.unpack(record.data)
    vq = svl_b // 16
    assert header.vl == svl_b and header.flags & c.SVE_SIG_FLAG_SM
    assert record.size == round_up(sve_sig_context_size(vq), 16)
    payload = record.data[16:16 + 546 * vq]
    assert payload[:z_p_bytes(svl_b)] == registers
    assert payload[z_p_bytes(svl_b):] == bytes(svl_b // 8), "FFR reads as zero without FA64"
    fpsimd = FpsimdContext.unpack(capture.record(c.FPSIMD_MAGIC).data)
    assert fpsimd.vregs == b"".join(registers[n * svl_b:n * svl_b + 16] for n in range(32))
    assert fpsimd.fpsr == c.FPSR_AFTER_SMSTOP, "SMSTART SM reset FPSR"
    # Streaming mode and the registers came back after the handler.
    assert bytes(process.mm.memory.read(Z_CHECK, z_p_bytes(svl_b))) == registers


@pytest.mark.parametrize("svl", SVLS)
def test_ssve_za_regs(svl):
    _, capture, _ = run_and_capture(svl, ["smstart"])
    sve = SveContext.unpack(capture.record(c.SVE_MAGIC).data)
    assert sve.vl == svl // 8 and sve.flags & c.SVE_SIG_FLAG_SM
    za = capture.record(c.ZA_MAGIC)
    assert ZaContext.unpack(za.data).vl == svl // 8
    assert za.data[16:] == bytes(len(za.data) - 16), "ZA was just enabled: all zero"


@pytest.mark.parametrize("svl", SVLS)
def test_sme_vl(svl):
    got = {}

    def get_vl(context):
        got["vl"] = libc.prctl(context, c.PR_SME_GET_VL)

    _, capture, _ = run_and_capture(svl, [Call(get_vl)])
    assert ZaContext.unpack(capture.record(c.ZA_MAGIC).data).vl == \
        got["vl"] & c.PR_SME_VL_LEN_MASK


def test_tpidr2_siginfo():
    _, capture, kernel = run_and_capture(256, [Mov(3, 0x1234_5678_9ABC_DEF0), Msr("TPIDR2_EL0", 3)])
    assert kernel.hwcap2 & c.HWCAP2_SME
    record = capture.record(c.TPIDR2_MAGIC)
    assert record is not None and record.size == 16
    assert int.from_bytes(record.data[8:16], "little") == 0x1234_5678_9ABC_DEF0
    assert capture.entry[-1]["tpidr2"] == 0, "handlers start with TPIDR2_EL0 = 0"


def test_tpidr2_restore():
    seen = {}
    _, _, _ = run_and_capture(256, [Mov(3, 0xABCD), Msr("TPIDR2_EL0", 3)],
                      after=[Mrs(4, "TPIDR2_EL0"), Call(lambda ctx: seen.update(x4=ctx.x[4]))],
                      handler_extra=[Mov(5, 0x5555), Msr("TPIDR2_EL0", 5)])
    assert seen["x4"] == 0xABCD


@pytest.mark.parametrize("svl", SVLS)
def test_signal_handler_entry_state(svl):
    """sme.rst: handlers run with PSTATE.SM=0, PSTATE.ZA=0, TPIDR2_EL0=0."""
    seen = {}
    handler_extra = ["mrs x9, svcr", Call(lambda ctx: seen.update(svcr=ctx.x[9]))]
    run_and_capture(svl, ["smstart", Mov(3, 7), Msr("TPIDR2_EL0", 3)], handler_extra=handler_extra)
    assert seen["svcr"] == 0


def test_fpsimd_state_is_restored_by_sigreturn():
    """fp-stress's fpsimd-test, deterministically: V0-V31, FPSR and FPCR saved in the frame
    come back after a handler that changed them all (and entered streaming mode, which
    zeroes V and resets FPSR)."""
    vregs, clobber = pattern(512, 41), pattern(512, 42)
    seen = {}

    def set_registers(context, values, fpsr, fpcr):
        context.vregs, context.fpsr, context.fpcr = values, fpsr, fpcr

    handler_extra = [Call(lambda ctx: set_registers(ctx, clobber, 0x8, 0x0040_0000)),
                     "smstart sm"]
    after = [Call(lambda ctx: seen.update(v=ctx.vregs, fpsr=ctx.fpsr, fpcr=ctx.fpcr))]
    _, capture, _ = run_and_capture(
        256, [Call(lambda ctx: set_registers(ctx, vregs, 0x11, 0x0300_0000))], after=after,
        handler_extra=handler_extra)
    fpsimd = FpsimdContext.unpack(capture.record(c.FPSIMD_MAGIC).data)
    assert (fpsimd.vregs, fpsimd.fpsr, fpsimd.fpcr) == (vregs, 0x11, 0x0300_0000)
    assert seen == {"v": vregs, "fpsr": 0x11, "fpcr": 0x0300_0000}


# ------------------------------------------------------------------------------ traps
def expect_sigill(steps: list) -> None:
    kernel = new_kernel()
    process = start(kernel, Executable({"main": [*steps, exit_(0)]}))
    run_to_completion(kernel)
    assert process.exit_signal == c.SIGILL
    assert process.core_dump is not None


def test_sme_trap_no_sm():
    expect_sigill(["smstart za", "addha za0.s, p0/m, p0/m, z0.s"])


def test_sme_trap_za():
    expect_sigill(["zero {za}"])


def test_streaming_sve_instruction_outside_streaming_mode_is_sigill():
    """The engine has no non-streaming SVE: an SVE-subset instruction with SM=0 is UNDEF."""
    expect_sigill(["smstart za", "ptrue p0.s"])


def fault_siginfo(context) -> dict[str, int]:
    """si_signo, si_code and si_addr of the siginfo_t a SA_SIGINFO handler got in x1, read at
    the offsets of the arm64 ``_sigfault`` layout (0, 8, 16)."""
    info = context.read(context.x[1], 24)
    return {"signo": int.from_bytes(info[0:4], "little"),
            "code": int.from_bytes(info[8:12], "little", signed=True),
            "addr": int.from_bytes(info[16:24], "little")}


def test_sme_trap_non_streaming():
    """kselftest: SMSTART SM + ``cnt v0.16b`` => SIGILL (the engine has no FA64).

    Advanced SIMD is CPU-side in the model: a step touching V0-V31 is such an instruction,
    and in streaming mode the CPU rejects it (SIGILL, ILL_ILLOPC, at that instruction).
    """
    kernel = new_kernel()
    assert not kernel.hwcap2 & c.HWCAP2_SME_FA64
    seen = {}

    def record(context):
        seen.update(fault_siginfo(context))
        context.syscall(c.NR_EXIT_GROUP, 0)

    def advanced_simd(context):
        context.vregs = bytes(512)

    program = Executable({"main": [install_handler(c.SIGILL), "smstart sm",
                                   Call(advanced_simd), exit_(1)],
                          "handler": [Call(record)]})
    process = start(kernel, program)
    run_to_completion(kernel)
    assert process.exit_code == 0
    assert seen == {"signo": c.SIGILL, "code": c.ILL_ILLOPC,
                    "addr": process.mm.symbols["main"] + 8}
    # Outside streaming mode the same instruction executes.
    non_streaming = start(kernel, Executable({"main": [Call(advanced_simd), exit_(0)]}),
                          "/bin/non-streaming")
    run_to_completion(kernel)
    assert non_streaming.exit_code == 0


def test_sigill_siginfo_names_the_instruction():
    kernel = new_kernel()
    seen = {}

    def record(context):
        seen.update(fault_siginfo(context))
        context.syscall(c.NR_EXIT_GROUP, 0)

    program = Executable({"main": [install_handler(c.SIGILL), "zero {za}", exit_(1)],
                          "handler": [Call(record)]})
    process = start(kernel, program)
    run_to_completion(kernel)
    assert process.exit_code == 0
    assert seen == {"signo": c.SIGILL, "code": c.ILL_ILLOPC,
                    "addr": process.mm.symbols["main"] + 4}


# ----------------------------------------------------------------------- fake sigreturn
def fake_sigreturn(mutate, *, svl: int = 256, setup: tuple = ("smstart za",),
                   misalign: int = 0, max_svl: int | None = None, accepted: tuple = ()):
    """Capture a frame, let ``mutate(frame_bytes, frame_address) -> bytes`` corrupt a copy,
    place it on the stack and call rt_sigreturn. Returns the process."""
    kernel = new_kernel(max_svl)
    capture = FrameCapture()

    def place(context):
        frame, data = capture.frames[-1]
        records = frame_records(data, frame)
        end = max(record.offset + record.size for record in records) + 16
        image = bytearray(data[:end])
        pc = RT_SIGFRAME_MCONTEXT_OFFSET + SigContext.offsetof("pc")
        image[pc:pc + 8] = context.symbol("accepted").to_bytes(8, "little")
        new_frame = (frame - 2 * round_up(len(image), 16) - 0x1000) & ~15
        for record in records:
            if record.magic == c.EXTRA_MAGIC:
                datap = ExtraContext.unpack(image, record.offset).datap - frame + new_frame
                image[record.offset + 8:record.offset + 16] = datap.to_bytes(8, "little")
        image = mutate(image, new_frame)
        context.write(new_frame + misalign, bytes(image))
        context.sp = new_frame + misalign

    program = Executable({
        "main": [set_vl(svl // 8), install_handler(c.SIGTRAP), *setup, Brk(), Call(place),
                 Syscall(c.NR_RT_SIGRETURN), exit_(2)],
        "handler": capture.steps(),
        "accepted": [*accepted, exit_(0)]}, data_size=0x1000)
    process = start(kernel, program)
    run_to_completion(kernel)
    assert kernel.heap.blocks_in_use == 0, "a dead process left kernel buffers behind"
    return process


def records_of(image: bytearray, frame: int):
    return {record.magic: record for record in frame_records(bytes(image), frame)}


def terminator_offset(image: bytearray, frame: int) -> int:
    last = frame_records(bytes(image), frame)[-1]
    return last.offset + last.size


def put(image: bytearray, offset: int, data: bytes) -> bytearray:
    image[offset:offset + len(data)] = data
    return image


def test_sigreturn_of_an_unmodified_frame_is_accepted():
    assert fake_sigreturn(lambda image, frame: image).exit_code == 0


def test_fake_sigreturn_bad_magic():
    def mutate(image, frame):
        end = terminator_offset(image, frame)
        return put(image, end, ContextHeader(magic=0xDEADBEEF, size=16).pack() + bytes(8)
                   + ContextHeader(magic=0, size=0).pack())
    assert fake_sigreturn(mutate).exit_signal == c.SIGSEGV


@pytest.mark.parametrize("record_size", [FpsimdContext.SIZE + 16, 8, 4, 0x10000])
def test_fake_sigreturn_bad_size(record_size):
    def mutate(image, frame):
        fpsimd = records_of(image, frame)[c.FPSIMD_MAGIC]
        return put(image, fpsimd.offset + 4, record_size.to_bytes(4, "little"))
    assert fake_sigreturn(mutate).exit_signal == c.SIGSEGV


@pytest.mark.parametrize("overrun", [False, True])
def test_fake_sigreturn_bad_size_esr_filling_reserved(overrun):
    """The kselftest's own construction: an esr_context appended at the terminator is fine
    with its true size (16) and a terminator after it; grown, 16-aligned, to end exactly at
    the end of ``__reserved`` it leaves no room for the next header => SIGSEGV."""
    def mutate(image, frame):
        end = terminator_offset(image, frame)
        size = RT_SIGFRAME_RESERVED_OFFSET + SIGCONTEXT_RESERVED_SIZE - end if overrun else 16
        put(image, end, ContextHeader(magic=c.ESR_MAGIC, size=size).pack() + bytes(8))
        return put(image, end + size, ContextHeader(magic=0, size=0).pack())
    process = fake_sigreturn(mutate)
    if overrun:
        assert process.exit_signal == c.SIGSEGV
    else:
        assert process.exit_code == 0


def test_fake_sigreturn_bad_size_for_magic0():
    def mutate(image, frame):
        return put(image, terminator_offset(image, frame) + 4, (16).to_bytes(4, "little"))
    assert fake_sigreturn(mutate).exit_signal == c.SIGSEGV


@pytest.mark.parametrize("magic", [c.FPSIMD_MAGIC, c.ZA_MAGIC, c.SVE_MAGIC, c.TPIDR2_MAGIC])
def test_fake_sigreturn_duplicated_fpsimd(magic):
    """Duplicated records are rejected; the kselftest duplicates FPSIMD, here every kind."""
    def mutate(image, frame):
        original = records_of(image, frame)[magic]
        return put(image, terminator_offset(image, frame),
                   original.data + ContextHeader(magic=0, size=0).pack())
    assert fake_sigreturn(mutate).exit_signal == c.SIGSEGV


@pytest.mark.parametrize("misalign", [1, 3, 8])
def test_fake_sigreturn_misaligned_sp(misalign):
    assert fake_sigreturn(lambda image, frame: image, misalign=misalign).exit_signal == c.SIGSEGV


def test_fake_sigreturn_missing_fpsimd():
    def mutate(image, frame):
        fpsimd = records_of(image, frame)[c.FPSIMD_MAGIC]
        return put(image, fpsimd.offset, c.ESR_MAGIC.to_bytes(4, "little"))
    assert fake_sigreturn(mutate).exit_signal == c.SIGSEGV


@pytest.mark.parametrize("magic, setup", [
    (c.SVE_MAGIC, ()), (c.SVE_MAGIC, ("smstart sm",)), (c.ZA_MAGIC, ()),
    (c.ZA_MAGIC, ("smstart za",)),
], ids=["sve_header_only", "sve_streaming", "za_header_only", "za_payload"])
def test_fake_sigreturn_sme_change_vl(magic, setup):
    """FAKE_SIGRETURN_SSVE_CHANGE: a VL different from the task's is never accepted.

    The kselftest's own case is ``sve_header_only``: the header-only SVE record of a task
    outside streaming mode, its VL set to the maximum SME VL. The others apply the same rule
    to the streaming SVE record and to the ZA record, with and without payload.
    """
    max_sme_vl = 64

    def mutate(image, frame):
        found = records_of(image, frame)[magic]
        assert (found.size == 16) == (not setup), "payload present iff the state is on"
        assert int.from_bytes(found.data[8:10], "little") != max_sme_vl
        return put(image, found.offset + 8, max_sme_vl.to_bytes(2, "little"))
    assert fake_sigreturn(mutate, svl=256, setup=setup).exit_signal == c.SIGSEGV


@pytest.mark.parametrize("magic", [c.ZT_MAGIC, c.FPMR_MAGIC, c.POE_MAGIC, c.GCS_MAGIC])
def test_fake_sigreturn_record_for_an_absent_feature(magic):
    """ZT needs SME2; FPMR, POE, GCS records need their features: all rejected."""
    def mutate(image, frame):
        return put(image, terminator_offset(image, frame),
                   ContextHeader(magic=magic, size=80).pack() + bytes(72)
                   + ContextHeader(magic=0, size=0).pack())
    assert fake_sigreturn(mutate).exit_signal == c.SIGSEGV


@pytest.mark.parametrize("case", [
    "streaming_without_payload", "streaming_short_payload", "za_short_payload",
    "za_header_smaller_than_16", "tpidr2_size", "fpsimd_size_with_sve",
])
def test_fake_sigreturn_record_size_rules(case):
    """restore_sve_fpsimd_context / restore_za_context / restore_tpidr2_context size checks."""
    def mutate(image, frame):
        records = records_of(image, frame)
        if case == "streaming_without_payload":
            return _shrink(image, frame, c.SVE_MAGIC, 16)
        if case == "streaming_short_payload":
            return _shrink(image, frame, c.SVE_MAGIC, 32)
        if case == "za_short_payload":
            return _shrink(image, frame, c.ZA_MAGIC, 32)
        if case == "za_header_smaller_than_16":
            za = records[c.ZA_MAGIC]
            return put(image, za.offset + 4, (8).to_bytes(4, "little"))
        if case == "tpidr2_size":
            return _shrink(image, frame, c.TPIDR2_MAGIC, 32, grow=True)
        fpsimd = records[c.FPSIMD_MAGIC]
        return put(image, fpsimd.offset + 4, (FpsimdContext.SIZE + 16).to_bytes(4, "little"))
    assert fake_sigreturn(mutate, setup=("smstart",)).exit_signal == c.SIGSEGV


@pytest.mark.parametrize("magic, setup, context_size", [
    (c.ZA_MAGIC, ("smstart za",), za_sig_context_size),
    (c.SVE_MAGIC, ("smstart sm",), sve_sig_context_size),
], ids=["za_context", "sve_context"])
def test_fake_sigreturn_payload_sizes_at_the_exact_boundary(magic, setup, context_size):
    """A ZA or streaming-SVE record of exactly its VL's size restores; one 16-byte quantum less
    is rejected (a check that forgot the 16-byte header would accept it)."""
    exact = round_up(context_size(256 // 128), 16)
    accepted = fake_sigreturn(lambda image, frame: _shrink(image, frame, magic, exact),
                              setup=setup)
    assert accepted.exit_code == 0
    short = fake_sigreturn(lambda image, frame: _shrink(image, frame, magic, exact - 16),
                           setup=setup)
    assert short.exit_signal == c.SIGSEGV


def _shrink(image: bytearray, frame: int, magic: int, new_size: int, grow: bool = False):
    """Rewrite the frame with one record resized (the rest moved up, in place, no extra)."""
    records = frame_records(bytes(image), frame)
    assert not any(r.magic == c.EXTRA_MAGIC for r in records)
    offset = records[0].offset
    out = bytearray(image[:offset])
    for record in records:
        data = record.data
        if record.magic == magic:
            data = (data + bytes(max(0, new_size - len(data))))[:new_size]
            data = data[:4] + new_size.to_bytes(4, "little") + data[8:]
        out += data
    out += ContextHeader(magic=0, size=0).pack()
    return out + bytes(max(0, len(image) - len(out)))


@pytest.mark.parametrize("case", ["datap_misaligned", "datap_elsewhere", "size_misaligned",
                                  "size_too_large", "no_terminator", "second_extra",
                                  "extra_too_small"])
def test_fake_sigreturn_extra_context_rules(case):
    """parse_user_sigframe's extra_context checks on a frame whose ZA record spilled over."""
    def mutate(image, frame):
        extra = records_of(image, frame)[c.EXTRA_MAGIC]
        head = extra.offset
        if case == "datap_misaligned":
            datap = ExtraContext.unpack(image, head).datap
            return put(image, head + 8, (datap + 8).to_bytes(8, "little"))
        if case == "datap_elsewhere":
            datap = ExtraContext.unpack(image, head).datap
            return put(image, head + 8, (datap + 16).to_bytes(8, "little"))
        if case == "size_misaligned":
            size = ExtraContext.unpack(image, head).extra_size
            return put(image, head + 16, (size + 8).to_bytes(4, "little"))
        if case == "size_too_large":
            return put(image, head + 16, (c.SIGFRAME_MAXSZ).to_bytes(4, "little"))
        if case == "no_terminator":
            return put(image, head + 32, ContextHeader(magic=c.ESR_MAGIC, size=16).pack())
        if case == "extra_too_small":
            return put(image, head + 4, (16).to_bytes(4, "little"))
        # A second extra_context inside the extra area, where the ZA record starts.
        datap = ExtraContext.unpack(image, head).datap
        return put(image, datap - frame, image[head:head + 32])
    process = fake_sigreturn(mutate, svl=512, setup=("smstart",))
    assert process.exit_signal == c.SIGSEGV


def test_sigreturn_accepts_extra_context_frames():
    assert fake_sigreturn(lambda image, frame: image, svl=512,
                          setup=("smstart",)).exit_code == 0


def test_fpsimd_only_sigreturn_clears_streaming_mode():
    """≥6.16: a header-only non-streaming SVE record restores FPSIMD state and clears SM."""
    seen = {}

    def mutate(image, frame):
        sve = records_of(image, frame)[c.SVE_MAGIC]
        put(image, sve.offset + 8, bytes(4))
        return _shrink(image, frame, c.SVE_MAGIC, 16)

    process = fake_sigreturn(mutate, setup=("smstart",), accepted=(
        "mrs x9, svcr", Call(lambda ctx: seen.update(svcr=ctx.x[9]))))
    assert process.exit_code == 0
    assert seen["svcr"] == c.SVCR_ZA_MASK


# --------------------------------------------------------------------------- layouts
@pytest.mark.parametrize("svl, state, extra", [
    (128, "smstart", False), (256, "smstart", False), (512, "smstart za", True),
    (512, "smstart", True), (512, "smstart sm", False), (1024, "smstart sm", True),
    (2048, "smstart", True),
])
def test_frame_layout_and_extra_context(svl, state, extra):
    """Records in kernel order; past __reserved they move behind an extra_context."""
    _, capture, _ = run_and_capture(svl, [state], max_svl=max(svl, 512))
    records = capture.records()
    magics = [record.magic for record in records]
    expected = [c.FPSIMD_MAGIC, c.SVE_MAGIC, c.TPIDR2_MAGIC, c.ZA_MAGIC]
    if extra:
        assert c.EXTRA_MAGIC in magics
        magics.remove(c.EXTRA_MAGIC)
    else:
        assert c.EXTRA_MAGIC not in magics
    assert magics == expected


def test_nested_signals_restore_each_level():
    """A signal arriving in a handler nests a second frame; both sigreturns restore."""
    svl_b = 32
    rows = pattern(svl_b * svl_b, 7)
    seen = {}
    inner, outer = FrameCapture(), FrameCapture()

    def raise_inner(context):
        libc.raise_signal(context, c.SIGUSR1)

    program = Executable({
        "main": [set_vl(svl_b), install_handler(c.SIGTRAP, "outer"),
                 install_handler(c.SIGUSR1, "inner"), "smstart za", *load_za(ZA_DATA, svl_b),
                 Brk(), *store_za(ZA_CHECK, svl_b), exit_(0)],
        "outer": [Call(outer.steps()[0].function), "smstart za", "zero {za}", Call(raise_inner),
                  "mrs x9, svcr", Call(lambda ctx: seen.update(svcr=ctx.x[9])),
                  Syscall(c.NR_RT_SIGRETURN)],
        "inner": inner.steps()}, data=rows, data_size=0x20000)
    kernel = new_kernel()
    process = start(kernel, program)
    run_to_completion(kernel)
    assert process.exit_code == 0
    # The inner frame saw the outer handler's ZA (enabled and zeroed).
    za = inner.record(c.ZA_MAGIC)
    assert za.size > 16 and za.data[16:] == bytes(len(za.data) - 16)
    assert seen["svcr"] == c.SVCR_ZA_MASK
    assert bytes(process.mm.memory.read(ZA_CHECK, len(rows))) == rows


def test_frame_setup_failure_is_fatal_sigsegv():
    """No room for the frame (SP at the bottom of the stack): force_sigsegv kills."""
    def drop_stack(context):
        context.sp = STACK_TOP - 256 * 1024 + 64
    program = Executable({"main": [install_handler(c.SIGTRAP), Call(drop_stack), Brk(),
                                   exit_(0)],
                          "handler": [exit_(3)]})
    kernel = new_kernel()
    process = start(kernel, program)
    run_to_completion(kernel)
    assert process.exit_signal == c.SIGSEGV


# --------------------------------------------------------------------------- fuzzing
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 1600), st.binary(min_size=1, max_size=8)),
                min_size=1, max_size=6))
def test_fuzzed_sigreturn_frames_end_in_success_or_sigsegv(corruptions):
    """Any corruption of a real frame: sigreturn succeeds or SIGSEGV; never a Python error."""
    def mutate(image, frame):
        for offset, data in corruptions:
            start = 592 + offset
            image[start:start + len(data)] = data
        return image
    process = fake_sigreturn(mutate, svl=128, setup=("smstart",))
    assert process.exit_code == 0 or process.exit_signal == c.SIGSEGV


# ------------------------------------------------------------------- faults, masks, actions
def test_esr_record_after_a_data_abort():
    """A data abort records ESR and FAR; the frame then carries an esr_context (and, as in
    Linux, keeps carrying it for later signals until another fault replaces it)."""
    frames = FrameCapture(skip_brk=False)
    seen = []

    def skip_faulting_store(context):
        frame = context.sp
        pc_address = frame + RT_SIGFRAME_MCONTEXT_OFFSET + SigContext.offsetof("pc")
        pc = int.from_bytes(context.read(pc_address, 8), "little")
        context.write(pc_address, (pc + 4).to_bytes(8, "little"))
        info = fault_siginfo(context)
        seen.append((info["code"], info["addr"]))

    program = Executable({
        "main": [install_handler(c.SIGSEGV, "segv"), install_handler(c.SIGUSR1, "usr1"),
                 "smstart za", Mov(12, 0), Mov(0, 0x10), "str za[w12, 0], [x0]",
                 Call(lambda ctx: libc.raise_signal(ctx, c.SIGUSR1)), "rdsvl x9, #1", exit_(0)],
        "segv": [*frames.steps()[:-1], Call(skip_faulting_store), Ret()],
        "usr1": frames.steps()})
    kernel = new_kernel()
    process = start(kernel, program)
    run_to_completion(kernel)
    assert process.exit_code == 0
    assert seen == [(c.SEGV_MAPERR, 0x10)]
    for index in (0, 1):
        esr = frames.record(c.ESR_MAGIC, index)
        assert esr is not None
        value = EsrContext.unpack(esr.data).esr
        assert value >> c.ESR_ELX_EC_SHIFT == c.ESR_ELX_EC_DABT_LOW and value & c.ESR_ELX_WNR
        fault_address = frames.frames[index][1][RT_SIGFRAME_MCONTEXT_OFFSET:][:8]
        assert int.from_bytes(fault_address, "little") == 0x10
    assert [r.magic for r in frames.records(0)][:2] == [c.FPSIMD_MAGIC, c.ESR_MAGIC]


def test_blocked_signals_wait_and_the_frame_saves_the_mask():
    frames = FrameCapture()
    usr2 = 1 << (c.SIGUSR2 - 1)

    def block_and_raise(context):
        assert libc.sigprocmask(context, c.SIG_BLOCK, usr2) == (0, 0)
        assert libc.raise_signal(context, c.SIGUSR2) == 0

    def unblock(context):
        assert libc.sigprocmask(context, c.SIG_SETMASK, 0) == (0, usr2)

    program = Executable({
        "main": [install_handler(c.SIGUSR2), Call(block_and_raise),
                 Call(lambda ctx: seen.update(before=len(frames.frames))), Call(unblock),
                 Call(lambda ctx: seen.update(after=len(frames.frames))), exit_(0)],
        "handler": frames.steps()})
    seen = {}
    kernel = new_kernel()
    process = start(kernel, program)
    run_to_completion(kernel)
    assert process.exit_code == 0 and seen == {"before": 0, "after": 1}
    frame, data = frames.frames[0]
    sigmask = UContext.unpack(data, 128).uc_sigmask
    assert sigmask == 0, "the mask in force when the signal arrived (unblocked by then)"


def test_sa_resethand_and_ignored_signals():
    kernel = new_kernel()
    frames = FrameCapture()
    program = Executable({
        "main": [install_handler(c.SIGUSR1, flags=c.SA_SIGINFO | c.SA_RESETHAND),
                 Call(lambda ctx: libc.sigaction(ctx, c.SIGUSR2, c.SIG_IGN, 0)),
                 Call(lambda ctx: libc.raise_signal(ctx, c.SIGUSR2)),
                 Call(lambda ctx: libc.raise_signal(ctx, c.SIGUSR1)),
                 Call(lambda ctx: libc.raise_signal(ctx, c.SIGUSR1)), exit_(0)],
        "handler": frames.steps()})
    process = start(kernel, program)
    run_to_completion(kernel)
    assert len(frames.frames) == 1
    assert process.exit_signal == c.SIGUSR1 and process.core_dump is None
