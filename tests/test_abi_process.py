"""Process lifecycle, system calls and configuration: fork/clone/execve, TPIDR2, the syscall
ABI, prctl and the default-VL sysctl (the fp/vec-syscfg, abi/tpidr2, abi/syscall-abi and
fp/za-fork kselftests), SME first-use traps, HWCAPs, core dumps and the context-switch cost.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess

import pytest

from zatile.sim.tools import tools_required
from zatile.sw.abi import constants as c
from zatile.sw.abi import libc
from zatile.sw.abi.cpufeatures import SME_HWCAP_RULES, hwcap2_from_id
from zatile.sw.abi.kernel import SYSCTL_SME_DEFAULT_VL, Kernel, UserContext
from zatile.sw.abi.layouts import Elf64Ehdr, Elf64Nhdr, Elf64Phdr, round_up, za_pt_size
from zatile.sw.abi.mm import KERNEL_BASE
from zatile.sw.abi.program import Call, Executable, Mov, Mrs, Msr, Syscall
from zatile.sw.arch.config import EngineConfig
from test_abi_common import (
    DATA_BASE, SVLS, exit_, load_za, new_kernel, pattern, physical_za_contexts, run_to_completion,
    set_vl, start, store_za,
)

#: Every test here runs with 1, 2 and 4 physical ZA contexts.
pytestmark = pytest.mark.usefixtures("physical_za_contexts")


def report(key: str):
    """A step that writes X9 as '<key>=<value>' on stdout (as a test program would printf)."""
    def body(context):
        text = f"{key}={context.x[9]}\n".encode()
        with libc.stack_buffer(context, len(text)) as buffer:
            context.write(buffer, text)
            assert context.syscall(c.NR_WRITE, 1, buffer, len(text)) == len(text)
    return Call(body)


def reports(process) -> dict[str, int]:
    pairs = [line.split("=") for line in process.stdout.decode().split()]
    return {key: int(value) for key, value in pairs}


def fork_step():
    return Syscall(c.NR_CLONE, (c.SIGCHLD, 0, 0, 0, 0))


def branch_on_fork() -> Call:
    """Continue in function ``child`` or ``parent`` depending on fork's result in X0."""
    def body(context):
        context.pc = context.symbol("child" if context.x[0] == 0 else "parent")
    return Call(body)


# ------------------------------------------------------------------------------ za-fork
def test_za_fork():
    """ZA on with row 0 word = 42: after fork both see SVCR == ZA and the 42."""
    row = (42).to_bytes(4, "little") + bytes(12)
    check = ["mrs x9, svcr", report("svcr"), Mov(12, 0), Mov(0, DATA_BASE + 0x100),
             "str za[w12, 0], [x0]",
             Call(lambda ctx: ctx.x.__setitem__(9, int.from_bytes(ctx.read(DATA_BASE + 0x100, 4),
                                                                  "little"))),
             report("za0")]
    program = Executable({
        "main": [set_vl(16), "smstart za", Mov(12, 0), Mov(0, DATA_BASE), "ldr za[w12, 0], [x0]",
                 fork_step(), branch_on_fork()],
        "parent": [*check, exit_(0)], "child": [*check, exit_(0)]}, data=row, data_size=0x1000)
    kernel = new_kernel()
    parent = start(kernel, program)
    run_to_completion(kernel)
    children = [p for p in kernel.processes.values() if p.parent_pid == parent.pid]
    assert len(children) == 1
    for process in (parent, children[0]):
        assert process.exit_code == 0
        assert reports(process) == {"svcr": c.SVCR_ZA_MASK, "za0": 42}
    assert kernel.heap.blocks_in_use == 0


# ------------------------------------------------------------------------------- tpidr2
def tpidr2_program(main: list, **functions) -> Executable:
    return Executable({"main": main, **functions}, data_size=0x1000)


def read_tpidr2(key: str) -> list:
    return [Mrs(9, "TPIDR2_EL0"), report(key)]


def write_tpidr2(value: int) -> list:
    return [Mov(1, value), Msr("TPIDR2_EL0", 1)]


def run_single(program: Executable, kernel: Kernel | None = None):
    kernel = kernel or new_kernel()
    process = start(kernel, program)
    run_to_completion(kernel)
    assert process.exit_code == 0, process.exit_signal
    return process, kernel


def test_tpidr2_default_value():
    process, _ = run_single(tpidr2_program([*read_tpidr2("t"), exit_(0)]))
    assert reports(process) == {"t": 0}


def test_tpidr2_write_read():
    process, _ = run_single(tpidr2_program([*write_tpidr2(0xFEED), *read_tpidr2("t"), exit_(0)]))
    assert reports(process) == {"t": 0xFEED}


def test_tpidr2_write_sleep_read():
    kernel = new_kernel()
    sleep = Call(lambda ctx: ctx.syscall(c.NR_SCHED_YIELD))
    other = start(kernel, tpidr2_program([*write_tpidr2(0xBAD), sleep, exit_(0)]), "/bin/other")
    process = start(kernel, tpidr2_program([*write_tpidr2(0xF00D), sleep, sleep,
                                            *read_tpidr2("t"), exit_(0)]))
    run_to_completion(kernel, quantum=1)
    assert other.exit_code == 0 and reports(process) == {"t": 0xF00D}
    assert kernel.stats.context_switches >= 4


def test_tpidr2_write_fork_read():
    program = tpidr2_program(
        [*write_tpidr2(0x1111), fork_step(), branch_on_fork()],
        parent=[Syscall(c.NR_SCHED_YIELD), *read_tpidr2("parent"), exit_(0)],
        child=[*read_tpidr2("inherited"), *write_tpidr2(0x2222), *read_tpidr2("own"), exit_(0)])
    kernel = new_kernel()
    parent = start(kernel, program)
    run_to_completion(kernel, quantum=2)
    child = next(p for p in kernel.processes.values() if p.parent_pid == parent.pid)
    assert reports(parent) == {"parent": 0x1111}
    assert reports(child) == {"inherited": 0x1111, "own": 0x2222}


def test_tpidr2_write_clone_read():
    """≥6.16: clone(CLONE_VM) gives the child TPIDR2 = 0; the parent keeps its value."""
    flags = c.CLONE_VM | c.CLONE_FS | c.CLONE_FILES | c.CLONE_SIGHAND | c.CLONE_THREAD | \
        c.CLONE_SYSVSEM
    stack = DATA_BASE + 0x1000
    program = tpidr2_program(
        [*write_tpidr2(0x3333), Syscall(c.NR_CLONE, (flags, stack, 0, 0, 0)),
         branch_on_fork()],
        parent=[Syscall(c.NR_SCHED_YIELD), *read_tpidr2("parent"), Syscall(c.NR_EXIT, (0,))],
        child=[*read_tpidr2("child"), Syscall(c.NR_EXIT, (0,))])
    kernel = new_kernel()
    process = start(kernel, program)
    run_to_completion(kernel, quantum=2)
    assert process.exit_code == 0
    assert reports(process) == {"parent": 0x3333, "child": 0}
    assert len(process.threads) == 2


def test_clone_vm_thread_has_za_off_and_the_parent_keeps_its_za():
    flags = c.CLONE_VM | c.CLONE_SIGHAND | c.CLONE_THREAD
    rows = pattern(16 * 16, 5)
    program = Executable({
        "main": [set_vl(16), "smstart za", *load_za(DATA_BASE, 16),
                 Syscall(c.NR_CLONE, (flags, DATA_BASE + 0x3000, 0, 0, 0)), branch_on_fork()],
        "parent": [Syscall(c.NR_SCHED_YIELD), "mrs x9, svcr", report("parent_svcr"),
                   *store_za(DATA_BASE + 0x1000, 16), Syscall(c.NR_EXIT, (0,))],
        "child": ["mrs x9, svcr", report("child_svcr"), "smstart za",
                  *load_za(DATA_BASE + 0x800, 16), Syscall(c.NR_EXIT, (0,))]},
        data=rows, data_size=0x4000)
    process, _ = run_single(program)
    assert reports(process) == {"parent_svcr": c.SVCR_ZA_MASK, "child_svcr": 0}
    assert bytes(process.mm.memory.read(DATA_BASE + 0x1000, len(rows))) == rows


def test_clone_flag_rules():
    kernel = new_kernel()
    process = start(kernel, tpidr2_program([exit_(0)]))
    thread = process.threads[0]
    assert kernel.clone(thread, c.CLONE_SIGHAND) == -c.EINVAL, "CLONE_SIGHAND needs CLONE_VM"
    assert kernel.clone(thread, c.CLONE_VM | c.CLONE_THREAD) == -c.EINVAL
    assert kernel.clone(thread, c.CLONE_VFORK | c.SIGCHLD) == -c.EINVAL, "not modelled"
    thread.cpu.tpidr2 = 0x5A5A_0000
    child = kernel.clone(thread, c.SIGCHLD | c.CLONE_SETTLS, 0, 0, 0x7777)
    assert kernel.threads[child].cpu.tpidr == 0x7777 and kernel.threads[child].cpu.x[0] == 0
    # Linux >= 6.16: CLONE_SETTLS sets only TPIDR_EL0; a fork child keeps TPIDR2_EL0 (QEMU 10
    # zeroes it: tests/test_real_programs.py::test_qemu_tpidr2_divergences).
    assert kernel.threads[child].cpu.tpidr2 == 0x5A5A_0000


# ---------------------------------------------------------------------------- syscall-abi
@pytest.mark.parametrize("svl", SVLS)
@pytest.mark.parametrize("svcr", [c.SVCR_SM_MASK | c.SVCR_ZA_MASK, c.SVCR_SM_MASK,
                                  c.SVCR_ZA_MASK, 0])
@pytest.mark.parametrize("number", [c.NR_GETPID, c.NR_SCHED_YIELD])
def test_syscall_abi(number, svcr, svl):
    """x9-x30 preserved; V preserved without SM and zero (with FPSR reset) after SM; SM
    cleared; PSTATE.ZA and ZA's contents unchanged. (Z/P/FFR beyond V are not visible once
    SM=0 on an engine without non-streaming SVE.)"""
    svl_b = svl // 8
    rows = pattern(svl_b * svl_b, svl)
    vregs = pattern(512, svl + 1)
    seen = {}
    setup = [set_vl(svl_b), Call(lambda ctx: setattr(ctx, "vregs", vregs))]
    setup += [Mov(n, 0x1000 + n) for n in range(9, 31)]
    if svcr & c.SVCR_ZA_MASK:
        setup += ["smstart za", *load_za(DATA_BASE, svl_b)]
        setup += [Mov(n, 0x1000 + n) for n in (0, 12)]
    if svcr & c.SVCR_SM_MASK:
        setup.append("smstart sm")

    def record(context):
        seen.update(x=list(context.x[9:31]), v=context.vregs, fpsr=context.fpsr)

    after = [Syscall(number), Call(record), "mrs x9, svcr",
             Call(lambda ctx: seen.update(svcr=ctx.x[9]))]
    if svcr & c.SVCR_ZA_MASK:
        after += store_za(DATA_BASE + 0x10000, svl_b)
    process, _ = run_single(Executable({"main": [*setup, *after, exit_(0)]}, data=rows,
                                       data_size=0x20000))
    assert seen["x"] == [0x1000 + n for n in range(9, 31)]
    assert seen["svcr"] == svcr & c.SVCR_ZA_MASK
    if svcr & c.SVCR_SM_MASK:
        assert seen["v"] == bytes(512) and seen["fpsr"] == c.FPSR_AFTER_SMSTOP
    else:
        assert seen["v"] == vregs
    if svcr & c.SVCR_ZA_MASK:
        assert bytes(process.mm.memory.read(DATA_BASE + 0x10000, len(rows))) == rows


# --------------------------------------------------------------------------- vec-syscfg
SPARSE = EngineConfig(max_svl=1024, supported_svls=(256, 1024))


def rdsvl_program() -> Executable:
    """kselftest rdvl-sme: print RDSVL."""
    return Executable({"main": ["rdsvl x9, #1", report("vl"), exit_(0)]})


def child_vl(kernel: Kernel, parent_steps: list) -> tuple[dict, int]:
    """Run ``parent_steps``, then fork and exec rdsvl in the child: (parent reports, child VL)."""
    kernel.install("/bin/rdvl-sme", rdsvl_program())

    def exec_child(context):
        if context.x[0] == 0:
            assert libc.execve(context, "/bin/rdvl-sme") == 0

    parent = start(kernel, Executable({"main": [*parent_steps, fork_step(), Call(exec_child),
                                                exit_(0)]}))
    run_to_completion(kernel)
    child = next(p for p in kernel.processes.values() if p.parent_pid == parent.pid)
    return reports(parent), reports(child)["vl"]


def prctl_step(key: str, option: int, arg: int = 0) -> list:
    def body(context):
        context.x[9] = libc.prctl(context, option, arg) & 0xFFFF_FFFF
    return [Call(body), report(key)]


@pytest.mark.parametrize("config", [EngineConfig(max_svl=512), SPARSE])
def test_vec_syscfg_proc_read_default(config):
    kernel = Kernel(config)
    default = int(kernel.read_file(SYSCTL_SME_DEFAULT_VL))
    assert default == kernel.lengths.find_supported(32)
    process, _ = run_single(rdsvl_program(), kernel)
    assert reports(process) == {"vl": default}


@pytest.mark.parametrize("config, written, expected", [
    (EngineConfig(max_svl=512), b"16", 16), (SPARSE, b"16\n", 32),
    (EngineConfig(max_svl=512), b"-1", 64), (SPARSE, b"-1\n", 128),
    (SPARSE, b"96", 32), (SPARSE, b" 0x80 \n", 128), (SPARSE, b"8192", 128),
])
def test_vec_syscfg_proc_write_min_max(config, written, expected):
    """proc_write_min / proc_write_max, plus rounding of other values."""
    kernel = Kernel(config)
    assert kernel.write_file(SYSCTL_SME_DEFAULT_VL, written) == len(written)
    assert kernel.read_file(SYSCTL_SME_DEFAULT_VL) == f"{expected}\n".encode()
    process, _ = run_single(rdsvl_program(), kernel)
    assert reports(process) == {"vl": expected}


def test_vec_syscfg_proc_write_min():
    test_vec_syscfg_proc_write_min_max(SPARSE, b"16", 32)


def test_vec_syscfg_proc_write_max():
    test_vec_syscfg_proc_write_min_max(SPARSE, b"-1", 128)


@pytest.mark.parametrize("written", [b"0", b"17", b"100", b"8208", b"-2", b"abc", b"32x", b""])
def test_vec_syscfg_proc_write_invalid(written):
    kernel = new_kernel()
    assert kernel.write_file(SYSCTL_SME_DEFAULT_VL, written) == -c.EINVAL
    assert kernel.read_file(SYSCTL_SME_DEFAULT_VL) == b"32\n"


def test_vec_syscfg_prctl_get():
    process, _ = run_single(Executable({"main": [*prctl_step("get", c.PR_SME_GET_VL),
                                                 "rdsvl x9, #1", report("vl"), exit_(0)]}))
    values = reports(process)
    assert values["get"] & c.PR_SME_VL_LEN_MASK == values["vl"] == 32
    assert not values["get"] & c.PR_SME_VL_INHERIT


def test_vec_syscfg_prctl_set_same():
    """Setting the VL RDSVL reports leaves it unchanged."""
    def set_current(context):
        context.x[9] = libc.prctl(context, c.PR_SME_SET_VL, context.x[9]) & 0xFFFF_FFFF
    process, _ = run_single(Executable({"main": [
        "rdsvl x9, #1", report("before"), Call(set_current), report("set"), "rdsvl x9, #1",
        report("after"), exit_(0)]}))
    assert reports(process) == {"before": 32, "set": 32, "after": 32}


def test_vec_syscfg_prctl_set():
    steps = []
    for vl in (32, 128):
        steps += [*prctl_step(f"set{vl}", c.PR_SME_SET_VL, vl), "rdsvl x9, #1",
                  report(f"vl{vl}"), *prctl_step(f"get{vl}", c.PR_SME_GET_VL)]
    process, _ = run_single(Executable({"main": [*steps, exit_(0)]}), Kernel(SPARSE))
    assert reports(process) == {"set32": 32, "vl32": 32, "get32": 32,
                                "set128": 128, "vl128": 128, "get128": 128}


def test_vec_syscfg_prctl_set_no_child():
    parent, child = child_vl(Kernel(SPARSE), prctl_step("set", c.PR_SME_SET_VL, 128))
    assert parent == {"set": 128} and child == 32


def test_vec_syscfg_prctl_set_for_child():
    parent, child = child_vl(Kernel(SPARSE), [
        *prctl_step("set", c.PR_SME_SET_VL, 128 | c.PR_SME_VL_INHERIT),
        *prctl_step("get", c.PR_SME_GET_VL)])
    assert parent == {"set": 128 | c.PR_SME_VL_INHERIT, "get": 128 | c.PR_SME_VL_INHERIT}
    assert child == 128


def test_vec_syscfg_prctl_set_onexec():
    parent, child = child_vl(Kernel(SPARSE), [
        *prctl_step("set", c.PR_SME_SET_VL, 128 | c.PR_SME_SET_VL_ONEXEC), "rdsvl x9, #1",
        report("vl")])
    assert parent == {"set": 128, "vl": 32}, "ONEXEC: own VL unchanged, status reports the new"
    assert child == 128


@pytest.mark.parametrize("config", [EngineConfig(max_svl=2048), SPARSE,
                                    EngineConfig(max_svl=512, supported_svls=(512,))])
def test_vec_syscfg_prctl_set_all_vqs(config):
    """Every VQ 1..512: below the minimum => minimum, above the maximum => maximum, else
    rounded down; and RDSVL right after each prctl() reports the VL it returned."""
    kernel = Kernel(config)
    lengths = kernel.lengths
    seen = []
    steps = []
    for vq in range(1, 513):
        steps += [Syscall(c.NR_PRCTL, (c.PR_SME_SET_VL, 16 * vq, 0, 0, 0)), "rdsvl x9, #1",
                  Call(lambda ctx, vq=vq: seen.append((vq, ctx.x[0], ctx.x[9])))]
    process, _ = run_single(Executable({"main": [*steps, exit_(0)]}), kernel)
    assert len(seen) == 512
    for vq, result, rdsvl in seen:
        vl = 16 * vq
        expected = lengths.min_vl if vl < lengths.min_vl else lengths.max_vl \
            if vl > lengths.max_vl else max(s for s in lengths.supported if s <= vl)
        assert (result, rdsvl) == (expected, expected), f"VQ {vq}"
    assert process.threads[0].fp.sme_vl == lengths.max_vl


def test_rdsvl_agrees_with_every_prctl_result():
    steps = []
    for vl in (16, 48, 100 * 16, 512):
        steps += [*prctl_step(f"set{vl}", c.PR_SME_SET_VL, vl), "rdsvl x9, #1", report(f"vl{vl}")]
    process, _ = run_single(Executable({"main": [*steps, exit_(0)]}), Kernel(SPARSE))
    values = reports(process)
    for vl in (16, 48, 1600, 512):
        assert values[f"set{vl}"] == values[f"vl{vl}"]


@pytest.mark.parametrize("option, arg", [
    (c.PR_SME_SET_VL, 0), (c.PR_SME_SET_VL, 17), (c.PR_SME_SET_VL, 32 | (1 << 16)),
    (c.PR_SME_SET_VL, 32 | (1 << 40)), (c.PR_SME_SET_VL, (1 << 64) - 1),
    (c.PR_SVE_SET_VL, 32), (c.PR_SVE_GET_VL, 0), (12345, 0),
])
def test_prctl_errors(option, arg):
    kernel = new_kernel()
    thread = start(kernel, Executable({"main": [exit_(0)]})).threads[0]
    assert kernel.prctl(thread, option, arg) == -c.EINVAL


def test_prctl_vl_change_drops_za_and_keeps_v(vl=64):
    vregs = pattern(512, 11)
    seen = {}
    program = Executable({"main": [
        set_vl(16), Call(lambda ctx: setattr(ctx, "vregs", vregs)), "smstart za",
        *prctl_step("set", c.PR_SME_SET_VL, vl), "mrs x9, svcr",
        Call(lambda ctx: seen.update(svcr=ctx.x[9], v=ctx.vregs)), exit_(0)]})
    process, kernel = run_single(program)
    assert reports(process)["set"] == vl
    assert seen == {"svcr": 0, "v": vregs}


def test_prctl_set_same_vl_keeps_za():
    rows = pattern(32 * 32, 2)
    program = Executable({"main": [
        set_vl(32), "smstart za", *load_za(DATA_BASE, 32), set_vl(32), "mrs x9, svcr",
        report("svcr"), *store_za(DATA_BASE + 0x1000, 32), exit_(0)]}, data=rows,
        data_size=0x2000)
    process, _ = run_single(program)
    assert reports(process) == {"svcr": c.SVCR_ZA_MASK}
    assert bytes(process.mm.memory.read(DATA_BASE + 0x1000, len(rows))) == rows


# --------------------------------------------------------------------------------- execve
def test_execve_resets_sme_state_and_tls(vl=64):
    """(``vl``: the VL set before the execve; the new image has the default, 32.)"""
    kernel = new_kernel()
    kernel.install("/bin/after", Executable({"main": [
        "mrs x9, svcr", report("svcr"), Mrs(9, "TPIDR2_EL0"), report("tpidr2"),
        Mrs(9, "TPIDR_EL0"), report("tpidr"), "rdsvl x9, #1", report("vl"), exit_(0)]}))
    process = start(kernel, Executable({"main": [
        set_vl(vl), "smstart", *write_tpidr2(5), Mov(1, 6), Msr("TPIDR_EL0", 1),
        Call(lambda ctx: libc.execve(ctx, "/bin/after")), exit_(9)]}))
    run_to_completion(kernel)
    assert process.exit_code == 0
    assert reports(process) == {"svcr": 0, "tpidr2": 0, "tpidr": 0, "vl": 32}
    assert process.name == "after" and kernel.heap.blocks_in_use == 0


def test_execve_errors():
    kernel = new_kernel()
    process = start(kernel, Executable({"main": [exit_(0)]}))
    context = UserContext(kernel, process.threads[0])
    assert libc.execve(context, "/bin/missing") == -c.ENOENT
    assert kernel.execve(process.threads[0], 0x10) == -c.EFAULT


# ------------------------------------------------------------------------- first use, bus
def test_first_sme_use_is_transparent():
    process, kernel = run_single(Executable({"main": [
        Syscall(c.NR_GETPID), "rdsvl x9, #1", report("vl"), "smstart za", "zero {za}",
        exit_(0)]}))
    assert reports(process) == {"vl": 32}
    assert kernel.stats.first_use_traps == 1 and kernel.stats.restores == 1


def test_user_instructions_cannot_reach_kernel_memory():
    kernel = new_kernel()
    program = Executable({"main": [
        "smstart za", Mov(12, 0), Mov(0, KERNEL_BASE), "str za[w12, 0], [x0]", exit_(0)]})
    process = start(kernel, program)
    run_to_completion(kernel)
    assert process.exit_signal == c.SIGSEGV


# ---------------------------------------------------------------------- HWCAPs, cpuinfo
def test_hwcaps_and_cpuinfo_follow_the_id_register():
    features = frozenset({"I8I32", "F32F32"})
    kernel = Kernel(EngineConfig(max_svl=256, features=features))
    assert kernel.hwcap2 == c.HWCAP2_SME | c.HWCAP2_SME_I8I32 | c.HWCAP2_SME_F32F32
    assert b"Features\t: sme smei8i32 smef32f32\n" in kernel.read_file("/proc/cpuinfo")
    full = hwcap2_from_id(EngineConfig().id_aa64smfr0)
    assert full == c.HWCAP2_SME | c.HWCAP2_SME_I16I64 | c.HWCAP2_SME_F64F64 | \
        c.HWCAP2_SME_I8I32 | c.HWCAP2_SME_F16F32 | c.HWCAP2_SME_B16F32 | c.HWCAP2_SME_F32F32
    assert hwcap2_from_id((1 << 63) | (2 << 56)) & (c.HWCAP2_SME_FA64 | c.HWCAP2_SME2
                                                    | c.HWCAP2_SME2P1) == \
        c.HWCAP2_SME_FA64 | c.HWCAP2_SME2 | c.HWCAP2_SME2P1
    process = start(kernel, Executable({"main": [exit_(0)]}))
    auxv = kernel.read_file(f"/proc/{process.pid}/auxv")
    pairs = dict(struct.iter_unpack("<QQ", auxv))
    assert pairs[c.AT_HWCAP2] == kernel.hwcap2 and pairs[c.AT_NULL] == 0
    assert pairs[c.AT_MINSIGSTKSZ] == kernel.minsigstksz
    assert kernel.write_file("/proc/cpuinfo", b"x") < 0
    assert kernel.read_file("/proc/nothing") == -c.ENOENT


# ---------------------------------------------------------------------------- core dumps
def find_readelf() -> str:
    path = shutil.which("aarch64-linux-gnu-readelf") or shutil.which("readelf")
    if path is None:
        message = "readelf not found; install binutils-aarch64-linux-gnu"
        if tools_required():
            pytest.fail(f"{message} (ZATILE_REQUIRE_TOOLS=1)")
        pytest.skip(message)
    return path


def parse_notes(core: bytes) -> list[tuple[str, int, bytes]]:
    header = Elf64Ehdr.unpack(core)
    assert core[:4] == b"\x7fELF" and header.e_type == c.ET_CORE
    assert header.e_machine == c.EM_AARCH64
    note = Elf64Phdr.unpack(core, header.e_phoff)
    assert note.p_type == c.PT_NOTE
    notes, offset, end = [], note.p_offset, note.p_offset + note.p_filesz
    while offset < end:
        nhdr = Elf64Nhdr.unpack(core, offset)
        offset += Elf64Nhdr.SIZE
        name = core[offset:offset + nhdr.n_namesz - 1].decode()
        offset += round_up(nhdr.n_namesz, 4)
        notes.append((name, nhdr.n_type, core[offset:offset + nhdr.n_descsz]))
        offset += round_up(nhdr.n_descsz, 4)
    return notes


def crashing_two_thread_process():
    """Thread 1 with ZA on (known rows) and TPIDR2 set; thread 2 faults, dumping core."""
    rows = pattern(32 * 32, 21)
    flags = c.CLONE_VM | c.CLONE_SIGHAND | c.CLONE_THREAD
    program = Executable({
        "main": [set_vl(32), Syscall(c.NR_CLONE, (flags, DATA_BASE + 0x3000, 0, 0, 0)),
                 branch_on_fork()],
        "parent": ["smstart za", *load_za(DATA_BASE, 32), *write_tpidr2(0xAB),
                   *[Syscall(c.NR_SCHED_YIELD)] * 20, exit_(0)],
        "child": [*[Syscall(c.NR_SCHED_YIELD)] * 40, "smstart za",
                  Mov(12, 0), Mov(0, 0x10), "str za[w12, 0], [x0]", exit_(0)]},
        data=rows, data_size=0x4000)
    kernel = new_kernel()
    process = start(kernel, program)
    run_to_completion(kernel, quantum=4)
    return process, rows


def test_core_dump_notes():
    process, rows = crashing_two_thread_process()
    assert process.exit_signal == c.SIGSEGV and process.wait_status == c.SIGSEGV | 0x80
    notes = parse_notes(process.core_dump)
    kinds = [(name, kind) for name, kind, _ in notes]
    per_thread = [("CORE", c.NT_PRFPREG), ("LINUX", c.NT_ARM_TLS), ("LINUX", c.NT_ARM_SSVE),
                  ("LINUX", c.NT_ARM_ZA)]
    assert kinds == [("CORE", c.NT_PRSTATUS), ("CORE", c.NT_PRPSINFO), ("CORE", c.NT_SIGINFO),
                     ("CORE", c.NT_AUXV), ("CORE", c.NT_FILE), *per_thread,
                     ("CORE", c.NT_PRSTATUS), *per_thread]
    prstatus = [desc for _, kind, desc in notes if kind == c.NT_PRSTATUS]
    assert all(len(desc) == 392 for desc in prstatus)
    faulting_tid = struct.unpack_from("<i", prstatus[0], 32)[0]
    assert faulting_tid == process.threads[1].tid
    za_notes = [desc for _, kind, desc in notes if kind == c.NT_ARM_ZA]
    tls_notes = [desc for _, kind, desc in notes if kind == c.NT_ARM_TLS]
    # The faulting thread had just enabled ZA (all zero); the other holds the rows.
    assert len(za_notes[0]) == za_pt_size(2) and za_notes[0][16:] == bytes(32 * 32)
    assert len(za_notes[1]) == za_pt_size(2) and za_notes[1][16:] == rows
    assert struct.unpack("<QQ", tls_notes[1]) == (0, 0xAB)
    ssve = [desc for _, kind, desc in notes if kind == c.NT_ARM_SSVE]
    assert all(len(desc) == 16 for desc in ssve), "inactive streaming mode: header only"
    siginfo = [desc for _, kind, desc in notes if kind == c.NT_SIGINFO][0]
    assert struct.unpack_from("<iii4xQ", siginfo) == (c.SIGSEGV, 0, c.SEGV_MAPERR, 0x10)


#: How readelf names each note type (binutils 2.40 predates the SSVE/ZA names).
READELF_NAMES = {
    c.NT_PRSTATUS: ("NT_PRSTATUS",), c.NT_PRFPREG: ("NT_PRFPREG", "NT_FPREGSET"),
    c.NT_PRPSINFO: ("NT_PRPSINFO",), c.NT_SIGINFO: ("NT_SIGINFO",), c.NT_AUXV: ("NT_AUXV",),
    c.NT_FILE: ("NT_FILE",), c.NT_ARM_TLS: ("NT_ARM_TLS",),
    c.NT_ARM_SSVE: ("NT_ARM_SSVE", "Unknown note type: (0x0000040b)"),
    c.NT_ARM_ZA: ("NT_ARM_ZA", "Unknown note type: (0x0000040c)"),
}
_READELF_NOTE = re.compile(r"^\s+(CORE|LINUX)\s+0x([0-9a-f]+)\s+(.*)$", re.MULTILINE)


@pytest.mark.tools
def test_core_dump_is_readable_by_readelf(tmp_path):
    """``readelf -n`` lists every note, with our owners and sizes, in our order."""
    readelf = find_readelf()
    process, _ = crashing_two_thread_process()
    path = tmp_path / "core"
    path.write_bytes(process.core_dump)
    listing = subprocess.run([readelf, "-h", "-l", "-n", str(path)], capture_output=True,
                             text=True, check=True).stdout
    assert "CORE (Core file)" in listing and "AArch64" in listing and "LOAD" in listing
    listed = _READELF_NOTE.findall(listing)
    ours = parse_notes(process.core_dump)
    assert len(listed) == len(ours) == 14
    for (owner, size, description), (name, note_type, desc) in zip(listed, ours):
        assert owner == name and int(size, 16) == len(desc)
        assert description.startswith(READELF_NAMES[note_type]), description


# ------------------------------------------------------------------ context-switch cost
def switch_cost(svl: int, svcrs: tuple[int, int], busy_steps: int) -> dict:
    """Two threads alternating every instruction (quantum 1), each with its SVCR set up."""
    kernel = new_kernel()
    enable = {0: "rdsvl x9, #1", 1: "smstart sm", 2: "smstart za", 3: "smstart"}
    for index, svcr in enumerate(svcrs):
        start(kernel, Executable({"main": [set_vl(svl // 8), enable[svcr],
                                           *["rdsvl x9, #1"] * busy_steps, exit_(0)]}),
              f"/bin/worker{index}")
    run_to_completion(kernel, quantum=1)
    return vars(kernel.stats)


def steady_state_cost(svl: int, svcrs: tuple[int, int]) -> tuple[float, float]:
    """Engine instructions per save and per restore, from the difference of two run lengths."""
    short, long = switch_cost(svl, svcrs, 10), switch_cost(svl, svcrs, 30)
    saves = long["saves"] - short["saves"]
    restores = long["restores"] - short["restores"]
    return ((long["save_instructions"] - short["save_instructions"]) / saves,
            (long["restore_instructions"] - short["restore_instructions"]) / restores)


@pytest.mark.parametrize("svl", [128, 512])
@pytest.mark.parametrize("svcr", [0, c.SVCR_ZA_MASK, c.SVCR_SM_MASK | c.SVCR_ZA_MASK])
def test_context_switch_cost(svl, svcr, physical_za_contexts):
    """Per switch: save = MRS SVCR + (SM: 32 STR Z + 16 STR P) + (ZA: one STR ZA per row);
    restore = the mirror-image loads (no SMSTART/SMSTOP: both threads have the same SVCR).
    With two physical ZA contexts or more, both threads' ZA stays resident: no ZA row moves."""
    svl_b = svl // 8
    za_rows = svl_b * bool(svcr & c.SVCR_ZA_MASK) if physical_za_contexts == 1 else 0
    data = 48 * bool(svcr & c.SVCR_SM_MASK) + za_rows
    assert steady_state_cost(svl, (svcr, svcr)) == (1 + data, data)


def test_context_switch_cost_with_different_modes(physical_za_contexts):
    """Against a thread with SME off, each restore also toggles SM and, when the threads share
    one physical ZA context, ZA (SMSTOP ZA, or SMSTART ZA and the rows)."""
    save, restore = steady_state_cost(128, (c.SVCR_SM_MASK | c.SVCR_ZA_MASK, 0))
    if physical_za_contexts == 1:
        assert (save, restore) == ((1 + (1 + 48 + 16)) / 2, (2 + (2 + 48 + 16)) / 2)
    else:
        assert (save, restore) == ((1 + (1 + 48)) / 2, (1 + (1 + 48)) / 2)


# --------------------------------------------------------------------------------- hwcap
FEATURE_PROBES = {
    "I8I32": (c.HWCAP2_SME_I8I32, "smopa za0.s, p0/m, p0/m, z0.b, z1.b"),
    "I16I64": (c.HWCAP2_SME_I16I64, "smopa za0.d, p0/m, p0/m, z0.h, z1.h"),
    "F32F32": (c.HWCAP2_SME_F32F32, "fmopa za0.s, p0/m, p0/m, z0.s, z1.s"),
    "F64F64": (c.HWCAP2_SME_F64F64, "fmopa za0.d, p0/m, p0/m, z0.d, z1.d"),
    "F16F32": (c.HWCAP2_SME_F16F32, "fmopa za0.s, p0/m, p0/m, z0.h, z1.h"),
    "B16F32": (c.HWCAP2_SME_B16F32, "bfmopa za0.s, p0/m, p0/m, z0.h, z1.h"),
}
#: hwcap.c's SME2 probe, one of its "reliable" ones (SIGILL guaranteed without SME2):
#: SMSTART ZA; ZERO {ZT0}; SMSTOP.
SME2_PROBE = ["smstart za", 0xC0480001, "smstop"]


@pytest.mark.parametrize("present", [frozenset(), frozenset({"I8I32", "F64F64"}),
                                     frozenset(FEATURE_PROBES)])
def test_hwcap(present):
    """kselftest abi/hwcap for SME: each feature HWCAP is set iff its instruction executes
    (SIGILL otherwise); the SME2 probe raises SIGILL (the engine has no SME2); cpuinfo lists
    exactly the features whose HWCAP is set."""
    kernel = Kernel(EngineConfig(max_svl=256, features=present))
    assert kernel.hwcap2 & c.HWCAP2_SME
    for feature, (hwcap, instruction) in FEATURE_PROBES.items():
        process = start(kernel, Executable({"main": ["smstart", instruction, exit_(0)]}),
                        f"/bin/{feature}")
        run_to_completion(kernel)
        executes = process.exit_code == 0
        assert executes == bool(kernel.hwcap2 & hwcap) == (feature in present), feature
        if not executes:
            assert process.exit_signal == c.SIGILL
    assert not kernel.hwcap2 & c.HWCAP2_SME2
    process = start(kernel, Executable({"main": [*SME2_PROBE, exit_(0)]}), "/bin/sme2")
    run_to_completion(kernel)
    assert process.exit_signal == c.SIGILL
    # cpuinfo_match: a feature name is in the Features line iff its HWCAP is set.
    features = kernel.read_file("/proc/cpuinfo").decode()
    for name, hwcap in [("sme", c.HWCAP2_SME)] + [(rule.name, rule.hwcap)
                                                   for rule in SME_HWCAP_RULES]:
        listed = f" {name} " in features or f" {name}\n" in features
        assert listed == bool(kernel.hwcap2 & hwcap), name


# --------------------------------------------------------------------------- job control
def test_sigstop_stops_the_process_until_sigcont():
    kernel = new_kernel()
    process = start(kernel, Executable({"main": [
        "smstart za", Call(lambda ctx: libc.raise_signal(ctx, c.SIGSTOP)), "mrs x9, svcr",
        report("svcr"), exit_(0)]}))
    kernel.run()
    assert process.alive and process.job_stopped and not process.stdout
    helper = start(kernel, Executable({"main": [exit_(0)]}), "/bin/helper")
    assert kernel.kill(helper.threads[0], process.pid, c.SIGCONT) == 0
    run_to_completion(kernel)
    assert reports(process) == {"svcr": c.SVCR_ZA_MASK}


def test_kill_errors():
    kernel = new_kernel()
    thread = start(kernel, Executable({"main": [exit_(0)]})).threads[0]
    assert kernel.kill(thread, 999, c.SIGUSR1) == -c.ESRCH
    assert kernel.kill(thread, thread.process.pid, 65) == -c.EINVAL
    assert kernel.kill(thread, thread.process.pid, 0) == 0
    assert kernel.tgkill(thread, thread.process.pid + 1, thread.tid, c.SIGUSR1) == -c.ESRCH
    assert kernel.tgkill(thread, 0, thread.tid, c.SIGUSR1) == -c.EINVAL
    assert kernel.getpid(thread) == kernel.gettid(thread) == thread.process.pid
    assert kernel.rt_sigaction(thread, c.SIGKILL, 0x10, 0) == -c.EFAULT


# ------------------------------------------------------------------------ out of memory
def test_out_of_memory_paths():
    """≥6.16: a VL change or fork that cannot allocate fails with -ENOMEM and changes
    nothing; a first SME use that cannot allocate is SIGKILL."""
    rows = pattern(16 * 16, 8)
    kernel = new_kernel(heap_size=1024)
    program = Executable({"main": [
        set_vl(16), "smstart za", *load_za(DATA_BASE, 16),
        Syscall(c.NR_PRCTL, (c.PR_SME_SET_VL, 64, 0, 0, 0)), Mov(9, 0), Call(
            lambda ctx: ctx.x.__setitem__(9, ctx.x[0] & 0xFFFF_FFFF)), report("prctl"),
        fork_step(), Call(lambda ctx: ctx.x.__setitem__(9, ctx.x[0] & 0xFFFF_FFFF)),
        report("fork"), "rdsvl x9, #1", report("vl"), "mrs x9, svcr", report("svcr"),
        *store_za(DATA_BASE + 0x1000, 16), exit_(0)]}, data=rows, data_size=0x2000)
    process, _ = run_single(program, kernel)
    enomem = -c.ENOMEM & 0xFFFF_FFFF
    assert reports(process) == {"prctl": enomem, "fork": enomem, "vl": 16,
                                "svcr": c.SVCR_ZA_MASK}
    assert bytes(process.mm.memory.read(DATA_BASE + 0x1000, len(rows))) == rows
    assert kernel.write_file(SYSCTL_SME_DEFAULT_VL, b"64") == 2
    greedy = start(kernel, Executable({"main": ["smstart za", exit_(0)]}), "/bin/greedy")
    run_to_completion(kernel)
    assert greedy.exit_signal == c.SIGKILL and kernel.heap.blocks_in_use == 0


def test_an_engine_instruction_that_sets_flags_sets_the_threads_nzcv():
    """WHILELO writes PSTATE.NZCV of the thread that issued it (the engine reports the flags,
    the CPU holds them)."""
    seen = []
    probe = Call(lambda ctx: seen.append(ctx.nzcv))
    process, _ = run_single(Executable({"main": [
        Mov(1, 3), "smstart sm", probe, "whilelo p0.s, xzr, x1", probe,
        "whilelo p0.s, x1, x1", probe, "ptrue p1.s", probe, exit_(0)]}, data_size=0x1000))
    # Three of four .s elements active: N=1, Z=0, C=1; none active: N=0, Z=1, C=1; PTRUE keeps.
    assert seen == [0b0000, 0b1010, 0b0110, 0b0110]
