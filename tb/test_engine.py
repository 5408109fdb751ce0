"""cocotb tests of the ZA tile engine against the reference model.

Run by pytest through :mod:`tb.runner` (``tests/test_tb_engine.py``); the settings arrive as JSON
in ``ZATILE_TB``:

``config``        the EngineConfig the Verilog was built from (:func:`tb.runner.config_to_json`)
``svl``           effective SVL to run at (SMCR.LEN selects it)
``seed``          seed of every program and pause generator
``programs``, ``length``   size of ``random_programs``
``check_every``   compare ZA/Z/P through the debug port after every lock-step instruction
``scale``         fraction of each directed group's programs to run (smoke runs use < 1)
``output``        directory for ``<test>.coverage.json`` and ``<test>.stats.json``
``soc``           the toplevel is the SoC wrapper ``zatile_soc``: run through its AXI ports
                  (:class:`tb.soc.SocBench`) instead of the engine's own

One cocotb test per directed group of :data:`tb.programs.DIRECTED` (``directed_<group>``) and
``random_programs``. Every instruction is predicted by the model when issued and checked when its
result returns (:mod:`tb.scoreboard`); lock-step programs compare memory after every instruction
and, with ``check_every``, all of ZA/Z/P; streaming programs compare at drain points and at the
end.

Through the SoC wrapper every program's memory is first mapped in whole beats
(:func:`tb.memory.memory_in_whole_beats`: AXI reads carry no byte enables, so the bus reads whole
beats and the reference model must see the same memory), and three things of the engine's own
ports are out of reach (:mod:`tb.soc`): forced bus errors hit read beats only (cocotbext-axi
hands a write beat's enabled runs to the memory one at a time, so an error forced on one run
could not undo the runs before it), the bytes of a read beat the engine did not enable are
memory rather than noise, and the overlap events of the functional coverage are not observed.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from pathlib import Path

import cocotb
from cocotb.utils import get_sim_time

from zatile.sim.state import Memory
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.engine import Status
from zatile.sw.arch.isa import FORMS, FORMS_BY_NAME
from zatile.tb.coverage import Coverage, OverlapTracker
from zatile.tb.engine import CLOCK_NS, EngineBench, smcr_len_for
from zatile.tb.issue import RtlResult, ScalarFile
from zatile.tb.memory import memory_in_whole_beats
from zatile.tb.programs import DIRECTED, Program, initial_state, instance, random_programs
from zatile.tb.scoreboard import Scoreboard


def settings() -> dict:
    return json.loads(os.environ.get("ZATILE_TB", "{}"))


class Session:
    """One cocotb test: the bench, the coverage it collects and what it measured."""

    def __init__(self, dut, name: str):
        self.settings = settings()
        self.config = EngineConfig.from_json_dict(self.settings["config"])
        self.svl = int(self.settings.get("svl", self.config.max_svl))
        self.seed = int(self.settings.get("seed", 1))
        self.name = name
        self.rng = random.Random(f"{self.seed}:{self.svl}:{name}")
        self.soc = bool(self.settings.get("soc", False))
        if self.soc:
            from zatile.tb.soc import SocBench  # local: only SoC runs need cocotbext-axi
            bench_class = SocBench
        else:
            bench_class = EngineBench
        self.bench = bench_class(dut, self.config, seed=self.rng.getrandbits(32))
        self.coverage = Coverage(self.config, [self.svl])
        if not self.soc:
            self.bench.overlap = OverlapTracker(self.coverage.hit_overlap)
        self.stats = Counter()
        self.started = time.monotonic()

    def bus_memory(self, memory: Memory) -> Memory:
        """``memory`` as the bench's bus maps it: in whole beats through the SoC (module notes),
        unchanged on the engine's own port."""
        if not self.soc:
            return memory
        return memory_in_whole_beats(memory, self.config.mem_data_width // 8)

    async def run(self, program: Program) -> None:
        program.initial.memory = self.bus_memory(program.initial.memory)
        await run_program(self, program)

    def finish(self) -> None:
        output = self.settings.get("output")
        wall = time.monotonic() - self.started
        cycles = get_sim_time("ns") / CLOCK_NS
        self.stats.update(wall_seconds=wall, cycles=cycles)
        self.bench.dut._log.info(
            f"{self.name}: {self.stats['programs']} programs, {self.stats['instructions']} "
            f"instructions checked, {int(cycles)} cycles in {wall:.1f} s "
            f"({cycles / max(wall, 1e-9):.0f} cycles/s)")
        if output:
            directory = Path(output)
            directory.mkdir(parents=True, exist_ok=True)
            self.coverage.save(directory / f"{self.name}.coverage.json")
            (directory / f"{self.name}.stats.json").write_text(json.dumps(dict(self.stats)))


async def run_program(session: Session, program: Program) -> None:
    """Load, run and check one program on a freshly reset engine."""
    bench, config = session.bench, session.config
    initial = program.initial
    check_every = program.check_every and program.lockstep \
        and bool(session.settings.get("check_every", False))
    bench.set_pauses(program.pauses)
    await bench.reset(smcr_len=smcr_len_for(initial.svl), sme_enable=True, fpcr=initial.fpcr,
                      memory=initial.memory.copy())
    await bench.load_state(initial)
    perf_before = await bench.read_perf()
    abandoned_before = bench.bus.abandoned
    if not program.sme_enabled:
        bench.set_inputs(sme_enable=False)
    bench.bus.forced_error_rate = program.forced_error_rate
    scoreboard = Scoreboard(config, initial, bench.bus, sme_enabled=program.sme_enabled,
                            coverage=session.coverage, name=program.name)
    host = ScalarFile(initial.x, initial.sp, initial.fpsr, initial.nzcv)
    lockstep = program.lockstep or program.forced_error_rate > 0
    pending_writes: Counter = Counter()

    def retire(word: int, destination: str | None):
        def on_result(result: RtlResult) -> None:
            scoreboard.check(result)
            host.retire(word, result)
            if destination is not None:
                pending_writes[destination] -= 1
        return on_result

    for word in program.words:
        if pending_writes and host.reads(word) & {r for r, n in pending_writes.items() if n}:
            await bench.drain()               # a CPU would stall on the register dependency
        expectation = scoreboard.predict(word)
        # A faulting store runs alone (partial-write accounting needs it); a faulting load
        # streams with the rest (its neighbours overlap it in the decoupled engine).
        faulting = expectation.result.status is Status.FAULT and expectation.is_store
        if faulting:
            await bench.drain()
        destination = host.writes(word)
        if destination is not None:
            pending_writes[destination] += 1
        bench.issue_nowait(word, host.sources(word), retire(word, destination))
        if lockstep or faulting:
            await bench.drain()
            scoreboard.compare_memory()
            if check_every:
                scoreboard.compare_state(await bench.snapshot())
    await bench.drain()
    scoreboard.compare_memory()
    scoreboard.compare_state(await bench.snapshot(), after=f"end of {program.name}")
    state = scoreboard.model.state
    for register in range(31):
        if int(host.x[register]) != int(state.x[register]):
            raise AssertionError(f"program {program.name}: x{register} = "
                                 f"0x{int(host.x[register]):x} after write-back, model "
                                 f"0x{int(state.x[register]):x}")
    if (host.sp, host.fpsr) != (state.sp, state.fpsr):
        raise AssertionError(f"program {program.name}: SP/FPSR 0x{host.sp:x}/0x{host.fpsr:x}, "
                             f"model 0x{state.sp:x}/0x{state.fpsr:x}")
    await check_perf(bench, perf_before, scoreboard, program.name)
    session.stats.update(programs=1, instructions=scoreboard.checked,
                         partial_store_bytes=scoreboard.partial_store_bytes,
                         abandoned_beats=bench.bus.abandoned - abandoned_before)


async def check_perf(bench: EngineBench, before: dict, scoreboard: Scoreboard,
                     name: str) -> None:
    """The performance counters over the program: every instruction counted in its class, the
    exact number of multiply-accumulates, and busy cycles within cycles."""
    after = await bench.read_perf()
    delta = {counter: after[counter] - before[counter] for counter in after}
    if delta["busy_cycles"] > delta["cycles"]:
        raise AssertionError(f"program {name}: perf busy_cycles {delta['busy_cycles']} > cycles "
                             f"{delta['cycles']}")
    for counter in ("retired", "retired_mopa", "retired_ldst", "retired_other", "traps",
                    "macs"):
        if delta[counter] != scoreboard.expected_perf[counter]:
            raise AssertionError(f"program {name}: perf {counter} counted {delta[counter]}, "
                                 f"expected {scoreboard.expected_perf[counter]}")


def _scaled(programs: list[Program], scale: float) -> list[Program]:
    if scale >= 1:
        return programs
    keep = max(1, round(len(programs) * scale))
    step = len(programs) / keep
    return [programs[int(i * step)] for i in range(keep)]


def _directed_test(group: str):
    async def test(dut) -> None:
        session = Session(dut, f"directed_{group}")
        programs = DIRECTED[group](session.config, session.svl, session.rng)
        for program in _scaled(programs, float(session.settings.get("scale", 1.0))):
            await session.run(program)
        session.finish()

    test.__name__ = test.__qualname__ = f"directed_{group}"
    test.__doc__ = DIRECTED[group].__doc__
    return cocotb.test()(test)


for _group in DIRECTED:
    globals()[f"directed_{_group}"] = _directed_test(_group)


@cocotb.test()
async def random_streams(dut) -> None:
    """Random programs (sim.progen) in lock step and streaming, every pause style."""
    session = Session(dut, "random_streams")
    count = int(session.settings.get("programs", 8))
    length = int(session.settings.get("length", 60))
    for program in random_programs(session.config, session.svl, session.rng, count,
                                   length):
        await session.run(program)
    session.finish()


#: Instructions of the ZA-context walk: they change ZA, PSTATE.ZA and scalars, never Z, P, SM or
#: memory, the state the contexts share.
_CONTEXT_WALK = ("int_mopa", "add_vector_to_tile", "zero_za", "ld1_tile", "mova_to_tile",
                 "ldr_za", "mrs_svcr")


def _configured_contexts() -> int:
    fields = settings().get("config")
    return EngineConfig.from_json_dict(fields).za_contexts if fields else 1


@cocotb.test(skip=_configured_contexts() < 2)
async def za_contexts(dut) -> None:
    """Every ZA context keeps its own ZA array and PSTATE.ZA across switches, while Z, P and
    PSTATE.SM are shared: a walk of random ZA instructions (and SMSTART/SMSTOP ZA) over random
    context switches, each context checked against its own reference model."""
    session = Session(dut, "za_contexts")
    bench, config, svl, rng = session.bench, session.config, session.svl, session.rng
    contexts = config.za_contexts
    states = [initial_state(rng, svl, 3) for _ in range(contexts)]
    states[0].memory = session.bus_memory(states[0].memory)
    for state in states[1:]:                  # what the contexts share
        state.z, state.p, state.x, state.memory = (states[0].z, states[0].p, states[0].x,
                                                   states[0].memory)
    await bench.reset(smcr_len=smcr_len_for(svl), memory=states[0].memory.copy())
    for context, state in enumerate(states):
        bench.set_inputs(za_context=context)
        await bench.load_state(state)
    scoreboards = [Scoreboard(config, state, bench.bus, coverage=session.coverage,
                              name=f"context {context}") for context, state in enumerate(states)]
    host = ScalarFile(states[0].x, states[0].sp, states[0].fpsr, states[0].nzcv)
    pool = [form for form in FORMS if form.op in _CONTEXT_WALK and config.has(form.feature)]
    pool += [FORMS_BY_NAME["SMSTART_ZA"], FORMS_BY_NAME["SMSTOP_ZA"]]
    context = contexts - 1
    for step in range(150):
        if rng.random() < 0.3:
            context = rng.randrange(contexts)
            bench.set_inputs(za_context=context)
            scoreboards[context].compare_state(await bench.snapshot(),
                                               after=f"switching to context {context}")
        word = instance(rng.choice(pool), rng)
        scoreboard = scoreboards[context]
        scoreboard.predict(word)
        result = await bench.execute(word, host.sources(word))
        scoreboard.check(result)
        host.retire(word, result)
        scoreboard.compare_state(await bench.snapshot(), after=f"step {step}")
    for context, scoreboard in enumerate(scoreboards):
        bench.set_inputs(za_context=context)
        scoreboard.compare_state(await bench.snapshot(), after="the walk")
    session.stats.update(programs=1, instructions=sum(s.checked for s in scoreboards))
    session.finish()
