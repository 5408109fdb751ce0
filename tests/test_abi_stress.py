"""Randomized stress of the kernel model: many threads time-sharing one engine (fp-stress).

Workers are the fp-stress children that apply here: ``za`` (za-test: ZA with PSTATE.ZA only),
``ssve`` (ZA and, in streaming mode, Z/P) and ``fpsimd`` (fpsimd-test: V0-V31, FPSR, FPCR).
They load their own patterns and check them again and again — with SVCR and RDSVL, as
za-test does — while the scheduler preempts at random points, other workers send them signals
(whose handlers use SME themselves, clobbering V, Z, P, ZA and FPSR), they fork (children
check the inherited state), a tracer reads and rewrites their registers through ptrace, and a
spy keeps enabling SME and checks it only ever sees zeros. Every check compares against the
worker's own pattern, so any state leaking between threads or lost in a save/restore fails
the test; at the end every kernel buffer must be free and the engine disabled.
"""

from __future__ import annotations

import random

import pytest

from zatile.sw.abi import constants as c
from zatile.sw.abi import libc
from zatile.sw.abi.kernel import Kernel
from zatile.sw.abi.layouts import (
    KernelSigaction, UserFpsimdState, UserSveHeader, UserZaHeader, sve_pt_size,
)
from zatile.sw.abi.program import Call, Executable, Mov, Msr, Ret, Syscall
from test_abi_common import (
    DATA_BASE, exit_, load_z_p, load_za, new_kernel, pattern, physical_za_contexts, set_vl,
    store_z_p, store_za, z_p_bytes,
)

#: Every test here runs with 1, 2 and 4 physical ZA contexts.
pytestmark = pytest.mark.usefixtures("physical_za_contexts")

ZA_IN, ZP_IN, ZA_OUT, ZP_OUT = DATA_BASE, DATA_BASE + 0x4000, DATA_BASE + 0x8000, \
    DATA_BASE + 0xC000
GARBAGE, SIGACTION = DATA_BASE + 0x10000, DATA_BASE + 0x14000
DATA_SIZE = 0x15000


#: FPSR/FPCR values of the fpsimd workers (cumulative IOC|IXC; DN|FZ).
WORKER_FPSR, WORKER_FPCR = 0x11, 0x0300_0000


class Worker:
    """One stressed thread: its patterns, its program, and the checks it runs on itself.

    ``kind`` is ``"fpsimd"``, ``"za"`` or ``"ssve"`` (see the module docstring).
    """

    def __init__(self, rng: random.Random, index: int, vl: int, kind: str,
                 rounds: int, peers: list["Worker"]):
        self.index, self.vl, self.kind = index, vl, kind
        self.streaming = kind == "ssve"
        self.svcr = {"fpsimd": 0, "za": c.SVCR_ZA_MASK,
                     "ssve": c.SVCR_SM_MASK | c.SVCR_ZA_MASK}[kind]
        self.za = pattern(vl * vl, 1000 + index)
        self.registers = pattern(z_p_bytes(vl), 2000 + index)
        self.vregs = pattern(512, 4000 + index)
        self.loaded_tids: set[int] = set()
        self.main_steps = 0
        self.checks = 0
        self.rng, self.rounds, self.peers = rng, rounds, peers

    def check_state(self, label: str) -> list:
        """Steps checking everything this worker owns (za-test also checks SVCR and RDSVL)."""
        if self.kind == "fpsimd":
            def compare_fpsimd(context):
                got = (context.vregs, context.fpsr, context.fpcr)
                assert got == (self.vregs, WORKER_FPSR, WORKER_FPCR), \
                    f"worker {self.index} ({label}): V/FPSR/FPCR corrupted"
                self.checks += 1
            return [Call(compare_fpsimd)]

        def compare(context):
            assert (context.x[9], context.x[10]) == (self.svcr, self.vl), \
                f"worker {self.index} ({label}): SVCR or RDSVL changed"
            got = context.read(ZA_OUT, len(self.za))
            assert got == self.za, f"worker {self.index} ({label}): ZA corrupted"
            self.checks += 1
        return ["mrs x9, svcr", "rdsvl x10, #1", *store_za(ZA_OUT, self.vl), Call(compare)]

    def check_z_p(self) -> list:
        def compare(context):
            got = context.read(ZP_OUT, len(self.registers))
            assert got == self.registers, f"worker {self.index}: Z/P corrupted"
            self.checks += 1
        return [*store_z_p(ZP_OUT, self.vl), Call(compare)]

    def _signal_someone(self, context) -> None:
        target = self.rng.choice(self.peers)
        for tid in sorted(target.loaded_tids):
            libc.kill(context, tid, c.SIGUSR1)

    def _setup(self) -> list:
        if self.kind == "fpsimd":
            return [set_vl(self.vl), Call(lambda ctx: setattr(ctx, "vregs", self.vregs)),
                    Mov(1, WORKER_FPSR), Msr("FPSR", 1), Mov(1, WORKER_FPCR), Msr("FPCR", 1)]
        setup = [set_vl(self.vl), "smstart" if self.streaming else "smstart za",
                 *load_za(ZA_IN, self.vl)]
        if self.streaming:
            setup += load_z_p(ZP_IN, self.vl)
        return setup

    def executable(self) -> Executable:
        setup = [*self._setup(), Call(lambda ctx: self.loaded_tids.add(ctx.tid))]
        body = []
        for _ in range(self.rounds):
            body += self.check_state("main")
            if self.streaming:
                # No system calls here: they would end streaming mode. Preemption and
                # asynchronous signals still hit this section.
                body += [*self.check_z_p(), "rdsvl x9, #1"]
                continue
            action = self.rng.choice(["yield", "getpid", "signal", "fork", "busy"])
            if action == "yield":
                body.append(Syscall(c.NR_SCHED_YIELD))
            elif action == "getpid":
                body.append(Syscall(c.NR_GETPID))
            elif action == "signal":
                body.append(Call(self._signal_someone))
            elif action == "fork":
                body += [Syscall(c.NR_CLONE, (c.SIGCHLD, 0, 0, 0, 0)),
                         Call(lambda ctx: setattr(ctx, "pc", ctx.symbol("child"))
                              if ctx.x[0] == 0 else None)]
            else:
                body += ["rdsvl x9, #1"] * self.rng.randint(1, 8)
        main = [*setup, *body, exit_(0)]
        self.main_steps = len(main)
        handler = ["smstart", "mov z0.b, #-1", *load_za(GARBAGE, self.vl), "zero {za}",
                   "smstop za"]
        data = bytearray(DATA_SIZE)
        data[0:len(self.za)] = self.za
        data[0x4000:0x4000 + len(self.registers)] = self.registers
        data[0x10000:0x10000 + len(self.za)] = pattern(len(self.za), 3000 + self.index)
        return Executable({"main": main, "handler": [*handler, Ret()],
                           "child": [*self.check_state("forked child"), exit_(0)]},
                          data=bytes(data))


def spy_executable(vl: int, rounds: int, results: list) -> Executable:
    """Enables SME afresh every round: must see nothing but zeros."""
    def compare(context):
        za = context.read(ZA_OUT, vl * vl)
        registers = context.read(ZP_OUT, z_p_bytes(vl))
        assert za == bytes(len(za)) and registers == bytes(len(registers)), \
            "spy saw another thread's state"
        results.append(True)
    body = []
    for _ in range(rounds):
        body += ["smstart", *store_z_p(ZP_OUT, vl), *store_za(ZA_OUT, vl), Call(compare),
                 "smstop", Syscall(c.NR_SCHED_YIELD)]
    return Executable({"main": [set_vl(vl), *body, exit_(0)]}, data_size=DATA_SIZE)


def tracer_executable(kernel: Kernel, workers: list[Worker], rng: random.Random, rounds: int,
                      results: list) -> Executable:
    """Attaches to random workers, checks their registers in ptrace, writes them back."""
    def trace(context):
        worker = rng.choice(workers)
        if not worker.loaded_tids:
            return
        tid = rng.choice(sorted(worker.loaded_tids))
        if libc.ptrace(context, c.PTRACE_ATTACH, tid) != 0:
            return
        thread = kernel.threads[tid]
        main = thread.process.mm.symbols["main"]
        result, data, _ = libc.getregset(context, tid, c.NT_PRSTATUS, 34 * 8)
        pc = int.from_bytes(data[32 * 8:33 * 8], "little")
        if result == 0 and main <= pc < main + 4 * worker.main_steps:
            result, za, _ = libc.getregset(context, tid, c.NT_ARM_ZA, 16 + worker.vl ** 2)
            header = UserZaHeader.unpack(za)
            if worker.kind == "fpsimd":
                assert result == 0 and header.size == 16, "ZA is off"
                result, fpsimd, _ = libc.getregset(context, tid, c.NT_PRFPREG,
                                                   UserFpsimdState.SIZE)
                assert result == 0 and UserFpsimdState.unpack(fpsimd) == UserFpsimdState(
                    vregs=worker.vregs, fpsr=WORKER_FPSR, fpcr=WORKER_FPCR)
                assert libc.setregset(context, tid, c.NT_PRFPREG, fpsimd)[0] == 0
            else:
                assert result == 0 and header.size == 16 + worker.vl ** 2
                assert za[16:header.size] == worker.za, "ptrace read another state"
                assert libc.setregset(context, tid, c.NT_ARM_ZA, za[:header.size])[0] == 0
            if worker.streaming:
                result, ssve, _ = libc.getregset(
                    context, tid, c.NT_ARM_SSVE, sve_pt_size(worker.vl // 16, c.SVE_PT_REGS_SVE))
                header = UserSveHeader.unpack(ssve)
                assert result == 0 and header.flags & c.SVE_PT_REGS_MASK == c.SVE_PT_REGS_SVE
                assert ssve[16:16 + z_p_bytes(worker.vl)] == worker.registers
                assert libc.setregset(context, tid, c.NT_ARM_SSVE, ssve[:header.size])[0] == 0
            results.append(tid)
        assert libc.ptrace(context, c.PTRACE_DETACH, tid) == 0
    body = []
    for _ in range(rounds):
        body += [Call(trace), Syscall(c.NR_SCHED_YIELD)]
    return Executable({"main": [*body, exit_(0)]}, data_size=0x1000)


def stress(seed: int, workers: int, rounds: int, vls: tuple[int, ...],
           max_svl: int | None = None, quantum: int = 40, max_steps: int = 2_000_000) -> dict:
    rng = random.Random(seed)
    kernel = new_kernel(max_svl)
    pool: list[Worker] = []
    for index in range(workers):
        kind = ("ssve", "za", "fpsimd", "za")[index % 4]
        pool.append(Worker(rng, index, rng.choice(vls), kind, rounds=rounds, peers=pool))
    processes = []
    for worker in pool:
        process = _start(kernel, worker.executable(), f"/bin/worker{worker.index}")
        action = KernelSigaction(handler=process.mm.symbols["handler"], flags=c.SA_SIGINFO,
                                 restorer=0, mask=0)
        process.mm.memory.write(SIGACTION, action.pack())
        assert kernel.rt_sigaction(process.threads[0], c.SIGUSR1, SIGACTION, 0, 8) == 0
        processes.append(process)
    spy_results, trace_results = [], []
    processes.append(_start(kernel, spy_executable(vls[0], rounds, spy_results), "/bin/spy"))
    processes.append(_start(kernel, tracer_executable(kernel, pool, rng, rounds, trace_results),
                            "/bin/tracer"))
    kernel.run(max_steps=max_steps, quantum=quantum, rng=rng)
    assert not any(thread.runnable for thread in kernel.threads.values()), "did not finish"
    for process in kernel.processes.values():
        assert process.exit_code == 0, f"{process.name} killed by {process.exit_signal}"
    assert kernel.heap.blocks_in_use == 0, "kernel buffers leaked"
    assert not kernel.engine.sme_enabled
    return {"checks": sum(worker.checks for worker in pool), "spy": len(spy_results),
            "traced": len(trace_results), "signals": kernel.stats.signals_delivered,
            "switches": kernel.stats.context_switches, "processes": len(kernel.processes)}


def _start(kernel: Kernel, executable: Executable, path: str):
    kernel.install(path, executable)
    return kernel.spawn(path)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_stress_every_thread_keeps_its_state(seed):
    summary = stress(seed, workers=6, rounds=6, vls=(16, 32))
    assert summary["checks"] > 50 and summary["spy"] == 6 and summary["signals"] > 0
    assert summary["switches"] > 100


def test_stress_at_one_vector_length(seed=4):
    """The stress with every worker at SVL 128, so that it runs on an engine built for SVL 128
    alone (the RTL selection with four physical ZA contexts)."""
    summary = stress(seed, workers=6, rounds=4, vls=(16,), max_svl=128)
    assert summary["checks"] > 30 and summary["spy"] == 4 and summary["switches"] > 50


@pytest.mark.soak
@pytest.mark.parametrize("seed", range(10, 30))
def test_stress_soak(seed):
    summary = stress(seed, workers=12, rounds=20, vls=(16, 32, 64, 128), max_svl=1024,
                     quantum=80, max_steps=20_000_000)
    assert summary["traced"] > 0 and summary["signals"] > 0
