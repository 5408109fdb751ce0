"""Differential tests of the kernel model against QEMU 10 linux-user.

Small freestanding programs (binutils, ``-march=armv9-a+sme``) run under
``qemu-aarch64 -cpu max,sme-default-vector-length=N`` and the same scenario runs on the
kernel model over an engine supporting every SVL QEMU's ``max`` CPU does (128..2048 bits).

Compared only where QEMU implements the kernel's behaviour:

* ``prctl(PR_SME_SET_VL/GET_VL)`` results for flagless calls, including the rounding, and the
  PSTATE.ZA drop on a real VL change. Known QEMU divergences, not compared: flag bits are
  rejected with EINVAL (docs/divergences.md, "QEMU linux-user"), and a request of 0 returns 16 instead of EINVAL.
* The signal-frame records at SVL 128/256/512: fpsimd, sve and za — magic, size, header
  fields, payload, order, and the extra_context spill. Known divergences: QEMU 10.0 writes no
  TPIDR2 record (so absolute offsets after the SVE record differ by 16 bytes), and its CPU
  has non-streaming SVE, so with PSTATE.SM=0 its SVE record carries SVE state where an
  SME-only system writes a header-only record with VL 0; that record is not compared then.
  When records spill, QEMU reserves an 8-byte terminator after the extra_context, so its
  ``datap`` is extra_context + 40 and not 16-byte aligned; Linux reserves TERMINATOR_SIZE
  (16) and its own ``parse_user_sigframe`` rejects a misaligned ``datap``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from zatile.sim.tools import find_tool
from zatile.sw.abi import constants as c
from zatile.sw.abi.kernel import SYSCTL_SME_DEFAULT_VL, Kernel
from zatile.sw.abi.layouts import ExtraContext, SveContext, ZaContext
from zatile.sw.abi.program import Brk, Call, Executable, Mov, Msr, Syscall
from zatile.sw.abi.sigframe import ContextRecord, frame_records
from zatile.sw.arch.config import EngineConfig
from test_abi_common import (
    DATA_BASE, FrameCapture, exit_, install_handler, load_z_p, load_za, pattern,
    run_to_completion, start, z_p_bytes,
)

QEMU_CONFIG = EngineConfig(max_svl=2048)
TPIDR2_VALUE = 0x1234_5678_9ABC
FRAME_DUMP_BYTES = 0x3000
#: QEMU 10.0 reserves ``sizeof(struct target_aarch64_ctx)`` for the terminator after an
#: extra_context; Linux reserves TERMINATOR_SIZE.
QEMU_TERMINATOR_BYTES = 8


def run_freestanding(source: str, work: Path, default_vl: int, data: bytes = b"") -> bytes:
    """Assemble, link and run ``source`` under QEMU; returns its standard output."""
    (work / "data.bin").write_bytes(data or b"\0")
    (work / "prog.s").write_text(source)
    subprocess.run([find_tool("as"), "-march=armv9-a+sme", "-I", str(work),
                    str(work / "prog.s"), "-o", str(work / "prog.o")], check=True,
                   capture_output=True, text=True)
    subprocess.run([find_tool("ld"), str(work / "prog.o"), "-o", str(work / "prog")],
                   check=True, capture_output=True, text=True)
    run = subprocess.run([find_tool("qemu"), "-cpu",
                          f"max,sme-default-vector-length={default_vl}", str(work / "prog")],
                         capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr.decode()
    return run.stdout


def model_kernel(default_vl: int) -> Kernel:
    kernel = Kernel(QEMU_CONFIG)
    assert kernel.write_file(SYSCTL_SME_DEFAULT_VL, str(default_vl).encode()) > 0
    return kernel


# ------------------------------------------------------------------------------- prctl
#: Flagless PR_SME_SET_VL requests (0 excluded: QEMU returns 16 where the kernel says EINVAL).
REQUESTS = (16, 32, 48, 64, 80, 128, 144, 256, 272, 512, 1024, 4096, 8192, 17, 24, 100, 8208,
            32, 32)


def prctl_source(requests) -> str:
    lines = [".text", ".global _start", "_start:", "adr x20, buf"]

    def syscall_result(*setup):
        lines.extend(setup)
        lines.extend(["mov x2, #0", "mov x3, #0", "mov x4, #0", "mov x8, #167", "svc #0",
                      "str x0, [x20], #8"])

    for request in requests:
        syscall_result("mov x0, #63", f"ldr x1, ={request}")
        syscall_result("mov x0, #64", "mov x1, #0")
    # ZA is kept by a same-VL set and dropped by a real change.
    lines += ["smstart za", "mov x0, #63", "mov x1, #32"] + \
        ["mov x2, #0", "mov x3, #0", "mov x4, #0", "mov x8, #167", "svc #0",
         "mrs x0, svcr", "str x0, [x20], #8", "mov x0, #63", "mov x1, #64", "mov x8, #167",
         "svc #0", "mrs x0, svcr", "str x0, [x20], #8"]
    count = 2 * len(requests) + 2
    lines += ["mov x0, #1", "adr x1, buf", f"mov x2, #{8 * count}", "mov x8, #64", "svc #0",
              "mov x0, #0", "mov x8, #93", "svc #0", ".ltorg", ".data", ".balign 16",
              f"buf: .space {8 * count}"]
    return "\n".join(lines) + "\n"


def prctl_model(default_vl: int, requests) -> list[int]:
    results = []

    def record(context):
        value = context.x[0]
        results.append(value - (1 << 64) if value >> 63 else value)

    steps = []
    for request in requests:
        steps += [Syscall(c.NR_PRCTL, (c.PR_SME_SET_VL, request, 0, 0, 0)), Call(record),
                  Syscall(c.NR_PRCTL, (c.PR_SME_GET_VL, 0, 0, 0, 0)), Call(record)]
    steps += ["smstart za", Syscall(c.NR_PRCTL, (c.PR_SME_SET_VL, 32, 0, 0, 0)), "mrs x0, svcr",
              Call(record), Syscall(c.NR_PRCTL, (c.PR_SME_SET_VL, 64, 0, 0, 0)),
              "mrs x0, svcr", Call(record)]
    kernel = model_kernel(default_vl)
    process = start(kernel, Executable({"main": [*steps, exit_(0)]}))
    run_to_completion(kernel)
    assert process.exit_code == 0
    return results


@pytest.mark.tools
@pytest.mark.parametrize("default_vl", [16, 32, 64])
def test_prctl_sme_vl_matches_qemu(qemu, tmp_path, default_vl):
    output = run_freestanding(prctl_source(REQUESTS), tmp_path, default_vl)
    qemu_results = [int.from_bytes(output[i:i + 8], "little", signed=True)
                    for i in range(0, len(output), 8)]
    assert prctl_model(default_vl, REQUESTS) == qemu_results
    assert qemu_results[-2:] == [c.SVCR_ZA_MASK, 0]


# ------------------------------------------------------------------------ signal frames
SCENARIOS = {"sm_za": ("smstart", True, True), "za": ("smstart za", False, True),
             "sm": ("smstart sm", True, False)}


def frame_source(svl_bytes: int, enable: str, streaming: bool, za: bool) -> str:
    lines = [".text", ".global _start", "_start:", "sub sp, sp, #0x40000",
             "adr x1, act", "adr x2, handler", "str x2, [x1]", "mov x0, #5", "mov x2, #0",
             "mov x3, #8", "mov x8, #134", "svc #0", f"ldr x3, ={TPIDR2_VALUE}",
             "msr tpidr2_el0, x3", enable]
    if za:
        lines += ["adr x0, data", "mov w12, #0", "1:", "ldr za[w12, 0], [x0]",
                  f"add x0, x0, #{svl_bytes}", "add w12, w12, #1", f"cmp w12, #{svl_bytes}",
                  "b.ne 1b"]
    if streaming:
        lines += ["adr x0, data", f"ldr x1, ={0x10000}", "add x0, x0, x1"]
        lines += [f"ldr z{n}, [x0, #{n}, mul vl]" for n in range(32)]
        lines += [f"ldr x1, ={32 * svl_bytes}", "add x0, x0, x1"]
        lines += [f"ldr p{n}, [x0, #{n}, mul vl]" for n in range(16)]
    lines += ["brk #0", "mov x0, #1", "mov x8, #93", "svc #0",
              "handler:", "mov x19, x1", "adr x1, addr", "str x19, [x1]", "mov x0, #1",
              "mov x2, #8", "mov x8, #64", "svc #0", "mov x0, #1", "mov x1, x19",
              f"ldr x2, ={FRAME_DUMP_BYTES}", "mov x8, #64", "svc #0", "mov x0, #0",
              "mov x8, #93", "svc #0", ".ltorg", ".data", ".balign 16",
              "act: .quad 0, 4, 0, 0", "addr: .quad 0", ".balign 16",
              'data: .incbin "data.bin"']
    return "\n".join(lines) + "\n"


def scenario_data(svl_bytes: int) -> bytes:
    data = bytearray(0x10000 + z_p_bytes(svl_bytes))
    data[:svl_bytes * svl_bytes] = pattern(svl_bytes * svl_bytes, svl_bytes)
    data[0x10000:] = pattern(z_p_bytes(svl_bytes), svl_bytes + 1)
    return bytes(data)


def model_frame(svl_bytes: int, enable: str, streaming: bool, za: bool) -> tuple[int, bytes]:
    capture = FrameCapture()
    steps = [install_handler(c.SIGTRAP), Mov(3, TPIDR2_VALUE), Msr("TPIDR2_EL0", 3), enable]
    if za:
        steps += load_za(DATA_BASE, svl_bytes)
    if streaming:
        steps += load_z_p(DATA_BASE + 0x10000, svl_bytes)
    kernel = model_kernel(svl_bytes)
    process = start(kernel, Executable({"main": [*steps, Brk(), exit_(0)],
                                        "handler": capture.steps()},
                                       data=scenario_data(svl_bytes), data_size=0x20000))
    run_to_completion(kernel)
    assert process.exit_code == 0
    return capture.frames[-1]


def by_magic(records: list[ContextRecord]) -> dict[int, ContextRecord]:
    return {record.magic: record for record in records}


@pytest.mark.tools
@pytest.mark.parametrize("svl", [128, 256, 512])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_signal_records_match_qemu(qemu, tmp_path, svl, scenario):
    svl_bytes = svl // 8
    enable, streaming, za = SCENARIOS[scenario]
    output = run_freestanding(frame_source(svl_bytes, enable, streaming, za), tmp_path,
                              svl_bytes, scenario_data(svl_bytes))
    qemu_address, qemu_frame = int.from_bytes(output[:8], "little"), output[8:]
    model_address, model_frame_bytes = model_frame(svl_bytes, enable, streaming, za)
    theirs = frame_records(qemu_frame, qemu_address)
    ours = frame_records(model_frame_bytes, model_address)
    compared = [c.FPSIMD_MAGIC, c.SVE_MAGIC, c.TPIDR2_MAGIC, c.ZA_MAGIC]
    qemu_has_tpidr2 = any(record.magic == c.TPIDR2_MAGIC for record in theirs)
    if not qemu_has_tpidr2:
        compared.remove(c.TPIDR2_MAGIC)
    assert [r.magic for r in theirs if r.magic in compared] == \
        [r.magic for r in ours if r.magic in compared]
    theirs_by, ours_by = by_magic(theirs), by_magic(ours)
    assert theirs_by[c.FPSIMD_MAGIC].data == ours_by[c.FPSIMD_MAGIC].data
    assert theirs_by[c.FPSIMD_MAGIC].offset == ours_by[c.FPSIMD_MAGIC].offset == 592
    assert theirs_by[c.ZA_MAGIC].data == ours_by[c.ZA_MAGIC].data
    assert ZaContext.unpack(ours_by[c.ZA_MAGIC].data).vl == svl_bytes
    if streaming:
        assert theirs_by[c.SVE_MAGIC].data == ours_by[c.SVE_MAGIC].data
        assert theirs_by[c.SVE_MAGIC].offset == ours_by[c.SVE_MAGIC].offset
        assert SveContext.unpack(ours_by[c.SVE_MAGIC].data).flags == c.SVE_SIG_FLAG_SM
    else:
        assert SveContext.unpack(ours_by[c.SVE_MAGIC].data) == SveContext(size=16, vl=0)
    if qemu_has_tpidr2:
        assert theirs_by[c.TPIDR2_MAGIC].data == ours_by[c.TPIDR2_MAGIC].data
        assert [(r.magic, r.offset, r.size) for r in theirs] == \
            [(r.magic, r.offset, r.size) for r in ours]
    # Both spill to an extra area exactly when the records overflow __reserved; the extra
    # area then starts right after the extra_context's terminator (8 bytes in QEMU, 16 in
    # Linux).
    for records, address, terminator in ((theirs, qemu_address, QEMU_TERMINATOR_BYTES),
                                         (ours, model_address, c.TERMINATOR_SIZE)):
        extra = by_magic(records).get(c.EXTRA_MAGIC)
        spilled = extra is not None
        expected_spill = svl_bytes == 64 and za
        assert spilled == expected_spill
        if spilled:
            datap = ExtraContext.unpack(extra.data).datap - address
            assert datap == extra.offset + c.EXTRA_CONTEXT_SIZE + terminator
