"""Differential campaign: random programs, model against QEMU 10, zero unexplained mismatches."""

import random

import pytest

from zatile.sw.backends import compare
from zatile.sw.campaign import campaign_program, run_campaign


@pytest.mark.parametrize("svl", [128, 256, 512])
def test_bounded_campaign_against_qemu(qemu, svl):
    report = run_campaign(programs=100, svls=[svl], length=30, seed=2026,
                          backends=["model", "qemu"])
    print(report.summary())
    assert report.programs == 100
    assert report.ok, report.summary()


def _programs_faulting_past_the_region(seed: int, count: int) -> list:
    """The first ``count`` programs of campaign ``seed`` at SVL 2048 (40 instructions) whose model
    run faults past the data region. They are looked for with the model, because which programs
    they are changes whenever the generator's operations do."""
    from zatile.sw.backends import run_program

    found = []
    for index in range(1000):
        program = campaign_program(seed, 2048, index, 40)
        run = run_program("model", program.text, program.initial)
        if any(o.status == "fault" and o.fault_address >= 0x410000 for o in run.outcomes):
            found.append(program)
            if len(found) == count:
                return found
    raise AssertionError(f"campaign {seed} has fewer than {count} such programs in 1000")


@pytest.mark.parametrize("seed", [4242, 77])
def test_svl_2048_accesses_past_the_region_fault_in_qemu_too(qemu, seed):
    """``zatile campaign --programs 300 --svl 2048 --length 40 --seed 4242`` (and seed 77) once
    reported ``ldr z9, [sp, #135, mul vl]: model fault at 0x410700 != qemu ok``: the access
    landed in the QEMU harness's executable, mapped right after the data region."""
    for program in _programs_faulting_past_the_region(seed, 3):
        comparison = compare(program.text, program.initial, ["model", "qemu"])
        assert comparison.agree, comparison.difference
        assert comparison.explained == ()
        assert any(o.status == "fault" and o.fault_address >= 0x410000
                   for o in comparison.outcomes["model"].outcomes)


@pytest.mark.parametrize("svl", [128, 2048])
def test_generated_regions_are_whole_pages_so_qemu_maps_nothing_more(svl):
    """qemu-page-granular-memory cannot arise in a generated program: its one region starts on
    a page and is a whole number of pages, so every address outside it is outside every page
    QEMU maps for it (the harness keeps its own executable 1 MiB away)."""
    from zatile.sim.divergences import QEMU_PAGE_SIZE, qemu_maps

    for index in range(5):
        regions = campaign_program(1, svl, index, 5).initial.memory.regions
        for base, data in regions.items():
            assert base % QEMU_PAGE_SIZE == 0 and data.size % QEMU_PAGE_SIZE == 0
            assert qemu_maps(base + data.size - 1, regions)
            assert not qemu_maps(base + data.size, regions) and not qemu_maps(base - 1, regions)


@pytest.mark.soak
@pytest.mark.parametrize("svl", [128, 256, 512, 1024, 2048])
def test_long_campaign_against_qemu(qemu, svl):
    report = run_campaign(programs=1000, svls=[svl], length=60, seed=7, backends=["model", "qemu"])
    assert report.ok, report.summary()


def test_a_failing_program_is_saved_with_a_replay_command(tmp_path, monkeypatch, qemu):
    """A planted mismatch on program 1 is reported, counted by ``progress`` and saved so that its
    replay command reruns exactly that program from its state."""
    import subprocess
    import sys

    from zatile.sw import backends, campaign

    def compare_with_a_planted_mismatch(text, initial, names, config, runs=None):
        result = backends.compare(text, initial, names, config, runs=runs)
        planted = "planted" if calls.append(text) or len(calls) == 2 else None
        return backends.Comparison(result.outcomes, planted, result.model_as_qemu)

    calls, ticks = [], []
    monkeypatch.setattr(campaign, "compare", compare_with_a_planted_mismatch)
    report = campaign.run_campaign(3, [128], 10, 5, ["model", "qemu"],
                                   progress=lambda *counts: ticks.append(counts),
                                   save_failures=tmp_path)
    assert ticks == [(1, 3, 0), (2, 3, 1), (3, 3, 1)]
    assert report.mismatches == ["seed=5 svl=128 program=1: planted"]
    folder = tmp_path / "seed5-svl128-p1"
    assert report.saved == [str(folder)] and report.to_json_dict()["saved"] == [str(folder)]
    assert (folder / "program.s").read_text() == calls[1]
    replay = (folder / "replay.sh").read_text()
    assert "zatile compare program.s --svl 128 --state-in state.npz --backends model,qemu" in replay
    rerun = subprocess.run([sys.executable, "-m", "zatile", "compare", "program.s", "--svl", "128",
                            "--state-in", "state.npz", "--backends", "model,qemu"],
                           cwd=folder, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert "agree" in rerun.stdout


def test_the_generator_draws_every_operation_of_the_table():
    """Every operation has a weight, so every form reaches the differential campaign (forms of
    one operation are drawn uniformly); 300 programs at SVL 128 hit each operation."""
    from zatile.sim.progen import OP_WEIGHTS, generate_program
    from zatile.sw.arch.asm import assemble
    from zatile.sw.arch.isa import OPS, decode
    assert {op for op, weight in OP_WEIGHTS.items() if weight > 0} == set(OPS)
    rng, seen = random.Random(3), set()
    for _ in range(300):
        seen |= {decode(word).form.op
                 for word in assemble(generate_program(rng, 128, 40).text)}
    assert seen == set(OPS), sorted(set(OPS) - seen)


@pytest.mark.parametrize("weights, message", [
    ({}, "no operation has a positive weight"),
    ({"perm_movprfx": 1}, "only MOVPRFX pairs cannot have an odd length \\(7\\)")])
def test_the_generator_refuses_weights_it_cannot_fill_a_program_with(weights, message):
    from zatile.sim.progen import OP_WEIGHTS, generate_program
    with pytest.raises(ValueError, match=message):
        generate_program(random.Random(1), 128, 7,
                         weights={**dict.fromkeys(OP_WEIGHTS, 0), **weights})


@pytest.mark.parametrize("seed", range(6))
def test_a_program_of_movprfx_pairs_fills_an_even_length(seed):
    """Also from initial states without streaming mode, which only streaming-SVE operations
    could never leave (the generator starts such programs in streaming mode)."""
    from zatile.sim.progen import OP_WEIGHTS, generate_program
    from zatile.sw.arch.asm import assemble
    from zatile.sw.arch.isa import decode
    program = generate_program(random.Random(seed), 128, 8,
                               weights={**dict.fromkeys(OP_WEIGHTS, 0), "perm_movprfx": 1})
    ops = [decode(word).form.op for word in assemble(program.text)]
    assert len(ops) == 8 and ops[::2] == ["perm_movprfx"] * 4
    assert program.initial.sm
