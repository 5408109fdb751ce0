"""Shared building blocks of the kernel-ABI tests (no tests here).

Programs are built from engine assembly and CPU steps; data lives in the executable's data
segment at ``DATA_BASE``. ``validate_frame`` applies the checks of the kselftest signal
framework (``testcases.c``) to every frame a test captures.
"""

from __future__ import annotations

import numpy as np
import pytest

from zatile.sw.abi import constants as c
from zatile.sw.abi import libc
from zatile.sw.abi.kernel import Kernel
from zatile.sw.abi.layouts import (
    RT_SIGFRAME_MCONTEXT_OFFSET, ContextHeader, SigContext, SveContext, round_up,
    sve_sig_context_size, sve_vl_valid, sve_vq_from_vl, za_sig_context_size,
)
from zatile.sw.abi.mm import DATA_BASE, STACK_TOP
from zatile.sw.abi.program import Call, Executable, Mov, Ret, Syscall
from zatile.sw.abi.sigframe import ContextRecord, frame_records
from zatile.sw.arch.config import EngineConfig
from zatile.sim.engine import ModelEngine

__all__ = ["SVLS", "DATA_BASE", "use_engine", "physical_za_contexts", "new_kernel",
           "run_to_completion", "pattern", "load_za", "store_za", "load_z_p", "store_z_p",
           "z_p_bytes", "set_vl", "install_handler", "exit_", "FrameCapture", "validate_frame",
           "start"]

#: SVLs (bits) of the default test engine.
SVLS = (128, 256, 512)


#: The engine behind every kernel ``new_kernel`` makes: the reference model in-process, or
#: whatever :func:`use_engine` installed (the RTL harness, tb/abi.py, installs the RTL engine).
_engine_class = ModelEngine
#: The largest SVL of the engine ``new_kernel`` makes when the test does not name one.
_default_max_svl = 512
#: The physical ZA contexts of the engines ``new_kernel`` makes.
_za_contexts = 1


def use_engine(engine_class, default_max_svl: int = 512, za_contexts: int = 1) -> None:
    """Make ``new_kernel`` build its kernels on ``engine_class(config, memory)``, with
    ``default_max_svl`` when the test does not name the engine's largest SVL, and
    ``za_contexts`` physical ZA contexts."""
    global _engine_class, _default_max_svl, _za_contexts
    _engine_class, _default_max_svl, _za_contexts = engine_class, default_max_svl, za_contexts


@pytest.fixture(params=[1, 2, 4], ids=lambda count: f"za_contexts={count}")
def physical_za_contexts(request):
    """Run a test with kernels on engines of 1, 2 and 4 physical ZA contexts (the kernel keeps
    threads' ZA resident in them: every ABI rule must hold with each)."""
    global _za_contexts
    saved, _za_contexts = _za_contexts, request.param
    yield request.param
    _za_contexts = saved


def new_kernel(max_svl: int | None = None, za_contexts: int | None = None, **kwargs) -> Kernel:
    """A kernel on the installed engine, with ``za_contexts`` physical ZA contexts (default:
    those of :func:`use_engine` or :func:`physical_za_contexts`)."""
    config = EngineConfig(max_svl=max_svl or _default_max_svl,
                          za_contexts=za_contexts or _za_contexts)
    return Kernel(config, engine_class=_engine_class, **kwargs)


def run_to_completion(kernel: Kernel, max_steps: int = 200_000, **kwargs) -> None:
    """Run until no thread is runnable; fail if the step budget ran out first."""
    kernel.run(max_steps=max_steps, **kwargs)
    assert not any(thread.runnable for thread in kernel.threads.values()), "step budget exhausted"


def pattern(length: int, seed: int) -> bytes:
    """Deterministic non-zero test bytes."""
    data = np.random.default_rng(seed).integers(1, 256, length, dtype=np.uint8)
    return data.tobytes()


def load_za(address: int, svl_bytes: int) -> list:
    """Steps loading every ZA row from ``address`` (row r at address + r*SVL_B)."""
    steps = []
    for row in range(svl_bytes):
        steps += [Mov(12, row), Mov(0, address + row * svl_bytes), "ldr za[w12, 0], [x0]"]
    return steps


def store_za(address: int, svl_bytes: int) -> list:
    steps = []
    for row in range(svl_bytes):
        steps += [Mov(12, row), Mov(0, address + row * svl_bytes), "str za[w12, 0], [x0]"]
    return steps


def load_z_p(address: int, svl_bytes: int) -> list:
    """Steps loading Z0-Z31 then P0-P15 from the signal-frame register layout at ``address``."""
    steps = []
    for n in range(32):
        steps += [Mov(0, address + n * svl_bytes), f"ldr z{n}, [x0]"]
    for n in range(16):
        steps += [Mov(0, address + 32 * svl_bytes + n * (svl_bytes // 8)), f"ldr p{n}, [x0]"]
    return steps


def store_z_p(address: int, svl_bytes: int) -> list:
    steps = []
    for n in range(32):
        steps += [Mov(0, address + n * svl_bytes), f"str z{n}, [x0]"]
    for n in range(16):
        steps += [Mov(0, address + 32 * svl_bytes + n * (svl_bytes // 8)), f"str p{n}, [x0]"]
    return steps


def z_p_bytes(svl_bytes: int) -> int:
    """Bytes of Z0-Z31 plus P0-P15 (the FFR is not accessible in streaming mode)."""
    return 32 * svl_bytes + 16 * (svl_bytes // 8)


def set_vl(vl: int) -> Call:
    """A step that sets the SME VL with prctl and checks the kernel chose exactly it."""
    def body(context):
        result = libc.prctl(context, c.PR_SME_SET_VL, vl)
        assert result == vl, f"PR_SME_SET_VL({vl}) returned {result}"
    return Call(body)


def install_handler(signo: int, handler: str = "handler", flags: int = c.SA_SIGINFO) -> Call:
    def body(context):
        assert libc.sigaction(context, signo, handler, flags) == 0
    return Call(body)


def exit_(status: int = 0) -> Syscall:
    return Syscall(c.NR_EXIT_GROUP, (status,))


class FrameCapture:
    """A signal handler that copies its frame and returns, skipping a BRK if it hit one."""

    def __init__(self, skip_brk: bool = True):
        self.frames: list[tuple[int, bytes]] = []
        self.entry: list[dict] = []
        self.skip_brk = skip_brk

    def steps(self, extra: list | None = None) -> list:
        return [Call(self._capture), *(extra or []), Ret()]

    def _capture(self, context) -> None:
        frame = context.sp
        data = context.read(frame, STACK_TOP - frame)
        self.frames.append((frame, data))
        self.entry.append({"x0": context.x[0], "x1": context.x[1], "x2": context.x[2],
                           "tpidr2": context.tpidr2, "sp": frame})
        if self.skip_brk and context.x[0] == c.SIGTRAP:
            pc_address = frame + RT_SIGFRAME_MCONTEXT_OFFSET + SigContext.offsetof("pc")
            pc = int.from_bytes(context.read(pc_address, 8), "little")
            context.write(pc_address, (pc + 4).to_bytes(8, "little"))

    def records(self, index: int = -1) -> list[ContextRecord]:
        frame, data = self.frames[index]
        records = frame_records(data, frame)
        validate_frame(records, data, frame)
        return records

    def record(self, magic: int, index: int = -1) -> ContextRecord | None:
        found = [record for record in self.records(index) if record.magic == magic]
        return found[0] if found else None


def validate_frame(records: list[ContextRecord], frame: bytes, frame_address: int) -> None:
    """The kselftest ``validate_reserved`` checks, applied to one frame.

    One deliberate difference: ``validate_sve_context`` also requires a valid VL in a
    header-only SVE record, but on an SME-only system (this one) the kernel writes VL 0 there
    (no SVE vector length exists); that record must have VL 0 and no flags instead.
    """
    counts: dict[int, int] = {}
    for record in records:
        assert record.offset % 16 == 0, f"record 0x{record.magic:x} misaligned"
        counts[record.magic] = counts.get(record.magic, 0) + 1
        if record.magic == c.FPSIMD_MAGIC:
            assert record.size == 528
        elif record.magic in (c.ESR_MAGIC, c.TPIDR2_MAGIC):
            assert record.size == 16
        elif record.magic == c.SVE_MAGIC:
            sve = SveContext.unpack(record.data)
            if sve.flags & c.SVE_SIG_FLAG_SM:
                assert sve_vl_valid(sve.vl)
                assert record.size == round_up(sve_sig_context_size(sve_vq_from_vl(sve.vl)), 16)
            else:
                assert (sve.vl, sve.flags, record.size) == (0, 0, 16), \
                    "non-streaming SVE record of an SME-only system"
        elif record.magic == c.ZA_MAGIC:
            vl = int.from_bytes(record.data[8:10], "little")
            assert sve_vl_valid(vl)
            assert record.size in (16, round_up(za_sig_context_size(sve_vq_from_vl(vl)), 16))
        elif record.magic == c.EXTRA_MAGIC:
            assert record.size == 32
            datap = int.from_bytes(record.data[8:16], "little")
            size = int.from_bytes(record.data[16:20], "little")
            terminator = record.offset + 32
            assert frame[terminator:terminator + 8] == bytes(8)
            assert datap % 16 == 0 and size % 16 == 0
            assert datap == frame_address + terminator + 16
        else:
            raise AssertionError(f"unexpected record 0x{record.magic:x}")
    last = records[-1]
    terminator = ContextHeader.unpack(frame, last.offset + last.size)
    assert (terminator.magic, terminator.size) == (0, 0), "bad size for terminator"
    assert counts.get(c.FPSIMD_MAGIC) == 1
    for magic in (c.SVE_MAGIC, c.ZA_MAGIC, c.ZT_MAGIC, c.EXTRA_MAGIC):
        assert counts.get(magic, 0) <= 1
    assert c.ZT_MAGIC not in counts


def start(kernel: Kernel, program: Executable, path: str = "/bin/test"):
    """Install and spawn ``program``; returns its process."""
    kernel.install(path, program)
    return kernel.spawn(path)

