"""The comparators catch what they compare: a planted difference is named at its place.

:func:`zatile.sim.compare.first_difference` is planted with one differing byte or field in every
place it looks; :mod:`zatile.sw.backends` pairs backends so that a QEMU quirk applies to the
model-versus-QEMU pair only.
"""

from __future__ import annotations

import numpy as np
import pytest

from zatile.sim.compare import describe_outcome, first_difference, za_location
from zatile.sim.model import tile_elements
from zatile.sim.run import InstructionOutcome, RunOutcome
from zatile.sim.state import ArchState, Memory
from zatile.sw import backends
from zatile.sw.backends import _pair_difference, _pairs, _side
from zatile.sw.campaign import run_campaign
from zatile.sw.cli import main


def _state() -> ArchState:
    state = ArchState(svl=256, svcr=3)
    state.memory = Memory({0x400000: np.zeros(64, np.uint8)})
    return state


def _plant(state: ArchState, place: str) -> None:
    if place == "svcr":
        state.svcr = 1
    elif place in ("fpcr", "fpsr"):
        setattr(state, place, 1 << 24)
    elif place == "sp":
        state.sp = 0x10
    elif place == "nzcv":
        state.nzcv = 0b0110
    elif place == "x":
        state.x[7] = 5
    elif place == "z":
        state.z[3, 9] = 0xAB
    elif place == "p":
        state.p[2, 1] = 0x04
    elif place == "za":
        state.za[13, 30] = 0x11
    elif place == "ffr":
        state.ffr[2] = 0x80
    elif place == "memory":
        state.memory.regions[0x400000][17] = 0x5A


PLACES = {
    "svcr": "svcr: 0x3 != 0x1", "fpcr": "fpcr: 0x0 != 0x1000000",
    "fpsr": "fpsr: 0x0 != 0x1000000", "nzcv": "nzcv: 0x0 != 0x6", "sp": "sp: 0x0 != 0x10",
    "x": "x7: 0x0 != 0x5",
    "z": "z3 byte 9: 0x00 != 0xab", "p": "p2 byte 1: 0x00 != 0x04",
    "za": "za1h.s slice 3 element 7 (za row 13 byte 30): 0x00 != 0x11", "ffr": "ffr byte 2: 0x00 != 0x80",
    "memory": "memory 0x400011: 0x00 != 0x5a",
}


@pytest.mark.parametrize("place", PLACES)
def test_a_planted_difference_is_named_at_its_place(place):
    left, right = _state(), _state()
    assert first_difference(left, right) is None
    _plant(right, place)
    assert first_difference(left, right) == PLACES[place]


def test_za_is_left_out_only_when_asked():
    left, right = _state(), _state()
    _plant(right, "za")
    assert first_difference(left, right, compare_za=False) is None


def _run(backend: str, state: ArchState, *outcomes: InstructionOutcome) -> RunOutcome:
    return RunOutcome(backend, state, list(outcomes))


def test_za_coordinates_name_the_32_bit_tile_element():
    za = np.zeros((32, 32), np.uint8)
    tile_elements(za, 4, 1)[3, 7] = 0xFF
    rows, columns = np.nonzero(za)
    assert {za_location(int(r), int(c)).split(" (")[0] for r, c in zip(rows, columns)} == \
        {"za1h.s slice 3 element 7"}


def _difference(left_name, left, right_name, right, initial=None):
    verdict = _pair_difference(left_name, left, right_name, right, initial or _state())
    assert verdict.explained is None
    return verdict.difference


def test_an_instruction_outcome_difference_is_named_before_the_state():
    ok = InstructionOutcome(0, "ld1w {za0h.s[w12, 0]}, p0/z, [x0]", "ok")
    fault = InstructionOutcome(0, ok.text, "fault", fault_address=0x400040)
    left, right = _state(), _state()
    _plant(right, "z")
    assert _difference("model", _run("model", left, ok), "rtl", _run("rtl", right, fault)) \
        == f"instruction 0 '{ok.text}': model ok != rtl fault at 0x400040"
    assert _difference("model", _run("model", left, ok), "rtl", _run("rtl", right, ok)) \
        == "model != rtl: z3 byte 9: 0x00 != 0xab"


@pytest.mark.parametrize("planted, expected", [
    (InstructionOutcome(0, "zero {za}", "undef"), "model sme_trap (SMTC 3) != rtl undef"),
    (InstructionOutcome(0, "zero {za}", "sme_trap", smtc=2),
     "model sme_trap (SMTC 3) != rtl sme_trap (SMTC 2)"),
    (InstructionOutcome(0, "zero {za}", "fault", fault_address=0x400040),
     "model sme_trap (SMTC 3) != rtl fault at 0x400040"),
])
def test_status_and_trap_code_differences_are_named(planted, expected):
    trap = InstructionOutcome(0, "zero {za}", "sme_trap", smtc=3)
    assert _difference("model", _run("model", _state(), trap), "rtl",
                       _run("rtl", _state(), planted)) == f"instruction 0 'zero {{za}}': {expected}"


def test_a_fault_address_difference_is_named():
    text = "ldr z0, [x0]"
    mine = InstructionOutcome(0, text, "fault", fault_address=0x400040)
    theirs = InstructionOutcome(0, text, "fault", fault_address=0x400041)
    assert _difference("model", _run("model", _state(), mine), "rtl",
                       _run("rtl", _state(), theirs)) \
        == f"instruction 0 '{text}': model fault at 0x400040 != rtl fault at 0x400041"


def test_against_qemu_only_the_signal_counts():
    trap = InstructionOutcome(0, "zero {za}", "sme_trap", smtc=3)
    sigill = InstructionOutcome(0, "zero {za}", "SIGILL")
    assert describe_outcome(trap) == "sme_trap (SMTC 3)"
    assert _difference("model", _run("model", _state(), trap),
                       "qemu", _run("qemu", _state(), sigill)) is None
    undef = InstructionOutcome(0, "zero {za}", "undef")
    assert _difference("model", _run("model", _state(), trap),
                       "rtl", _run("rtl", _state(), undef)) is not None
    ok = InstructionOutcome(0, "zero {za}", "ok")
    assert _difference("model", _run("model", _state(), trap),
                       "qemu", _run("qemu", _state(), ok)) \
        == "instruction 0 'zero {za}': model sme_trap (SMTC 3) != qemu ok"


def test_each_pair_sees_only_its_own_divergences():
    faithful, quirked = _run("model", _state()), _run("model+qemu-quirks", _state())
    outcomes = {"model": faithful, "qemu": _run("qemu", _state()), "rtl": _run("rtl", _state())}
    assert _side("model", "qemu", outcomes, quirked) is quirked
    assert _side("model", "rtl", outcomes, quirked) is faithful
    assert _side("qemu", "model", outcomes, quirked) is outcomes["qemu"]
    assert _pairs(["model", "qemu", "rtl"]) == [("model", "qemu"), ("model", "rtl")]
    assert _pairs(["qemu", "rtl", "model"]) == [("model", "rtl"), ("qemu", "model")]
    # QEMU never faces a backend other than the model, which joins the comparison if needed
    assert _pairs(["qemu", "rtl"]) == [("model", "rtl"), ("qemu", "model")]
    assert _pairs(["rtl", "qemu"]) == [("model", "qemu"), ("rtl", "model")]
    assert _pairs(["rtl", "qemu", "model"]) == [("model", "qemu"), ("rtl", "model")]
    assert _pairs(["model", "rtl"]) == [("model", "rtl")]


# ------------------------------------------------- through backends.compare, campaign and CLI
#: A program that leaves something in every place a comparison looks: ZA, Z, P, X (a scalar
#: result), memory, and a trapping instruction.
PROGRAM = """smstart
ptrue p1.s
rdsvl x21, #1
ld1w {za0h.s[w12, 0]}, p1/z, [x0]
st1w {za0h.s[w12, 0]}, p1, [x0, x8, lsl #2]
ldr z2, [x0]
"""


def _initial() -> ArchState:
    state = ArchState(svl=256)
    state.memory = Memory({0x400000: np.arange(4096, dtype=np.uint32).view(np.uint8)[:4096]
                           .copy()})
    state.x[0], state.x[8] = 0x400000, 16
    return state


#: place -> (how to plant it in a run's outcome, the location the report must name)
PLANTED = {
    "za": (lambda run: run.final.za.__setitem__((13, 9), 0x77),
           "za1h.s slice 3 element 2 (za row 13 byte 9)"),
    "z": (lambda run: run.final.z.__setitem__((2, 5), 0x77), "z2 byte 5"),
    "p": (lambda run: run.final.p.__setitem__((1, 3), 0x77), "p1 byte 3"),
    "x (scalar result)": (lambda run: run.final.x.__setitem__(21, 7), "x21: 0x20 != 0x7"),
    "memory": (lambda run: run.final.memory.regions[0x400000].__setitem__(70, 0x77),
               "memory 0x400046"),
    "svcr": (lambda run: setattr(run.final, "svcr", 1), "svcr: 0x3 != 0x1"),
    "fpsr": (lambda run: setattr(run.final, "fpsr", 0x8), "fpsr: 0x800009f != 0x8"),
    "fpcr": (lambda run: setattr(run.final, "fpcr", 0x400000), "fpcr: 0x0 != 0x400000"),
    "nzcv": (lambda run: setattr(run.final, "nzcv", 0b1001), "nzcv: 0x"),
    "status": (lambda run: run.outcomes.__setitem__(2, InstructionOutcome(2, "rdsvl x21, #1",
                                                                          "undef")),
               "instruction 2 'rdsvl x21, #1': model ok != rtl undef"),
    "fault address": (lambda run: run.outcomes.__setitem__(
        5, InstructionOutcome(5, "ldr z2, [x0]", "fault", fault_address=0x400000)),
        "instruction 5 'ldr z2, [x0]': model ok != rtl fault at 0x400000"),
}


@pytest.fixture
def planted_rtl(monkeypatch):
    """Make the "rtl" backend the model's own run with one planted difference; returns the
    function that chooses the place (None: plant nothing)."""
    chosen = {"place": None}
    real = backends.run_program

    def run_program(backend, source, initial, config=None, *, qemu_quirks=False):
        if backend != "rtl":
            return real(backend, source, initial, config, qemu_quirks=qemu_quirks)
        run = real("model", source, initial, config)
        run.backend = "rtl"
        if chosen["place"]:
            PLANTED[chosen["place"]][0](run)
        return run

    def run_programs(backend, programs, config):
        return [run_program(backend, source, initial, config) for source, initial in programs]

    monkeypatch.setattr(backends, "run_program", run_program)
    monkeypatch.setattr(backends, "run_programs", run_programs)   # a campaign's RTL batches
    return lambda place: chosen.__setitem__("place", place)


@pytest.mark.parametrize("place", PLANTED)
def test_compare_names_a_planted_difference(planted_rtl, place):
    planted_rtl(None)
    assert backends.compare(PROGRAM, _initial(), ["model", "rtl"]).agree
    planted_rtl(place)
    comparison = backends.compare(PROGRAM, _initial(), ["model", "rtl"])
    assert not comparison.agree
    assert PLANTED[place][1] in comparison.difference
    assert comparison.to_json_dict()["difference"] == comparison.difference
    assert comparison.to_json_dict()["pairs"] == [["model", "rtl"]]


@pytest.mark.parametrize("place", ["za", "x (scalar result)", "status"])
def test_campaign_and_cli_report_a_planted_difference(planted_rtl, place, capsys, tmp_path):
    planted_rtl(place)
    report = run_campaign(programs=2, svls=[128], length=8, seed=4, backends=["model", "rtl"])
    assert len(report.mismatches) == 2 and not report.ok
    assert report.mismatches[0].startswith("seed=4 svl=128 program=0: ")
    campaign = ["campaign", "--programs", "2", "--svl", "128", "--length", "8", "--seed", "4",
                "--backends", "model,rtl", "--workers", "0"]    # the planted RTL is this process's
    assert main(campaign) == 1
    assert "MISMATCH seed=4 svl=128 program=0: " in capsys.readouterr().out
    program = tmp_path / "p.s"
    program.write_text(PROGRAM)
    state = tmp_path / "s.npz"
    _initial().save(state)
    assert main(["compare", str(program), "--svl", "256", "--state-in", str(state),
                 "--backends", "model,rtl"]) == 1
    assert PLANTED[place][1] in capsys.readouterr().out
    planted_rtl(None)
    assert main(["compare", str(program), "--svl", "256", "--state-in", str(state),
                 "--backends", "model,rtl"]) == 0
    assert main(campaign) == 0


def test_campaign_saves_a_failing_program_to_replay(planted_rtl, tmp_path):
    planted_rtl("za")
    progress = []
    report = run_campaign(programs=2, svls=[128], length=5, seed=1, backends=["model", "rtl"],
                          progress=lambda *counts: progress.append(counts),
                          save_failures=tmp_path)
    assert progress == [(2, 2, 2)]          # one chunk: the RTL runs both in one simulation
    folder = tmp_path / "seed1-svl128-p1"
    assert sorted(p.name for p in folder.iterdir()) == ["program.s", "replay.sh", "state.npz"]
    assert "zatile compare program.s --svl 128 --state-in state.npz --backends model,rtl" \
        in (folder / "replay.sh").read_text()
    assert ArchState.load(folder / "state.npz").svl == 128
    assert report.saved == [str(tmp_path / "seed1-svl128-p0"), str(folder)]
    assert report.to_json_dict()["mismatches"] == report.mismatches
    assert report.to_json_dict()["saved"] == report.saved


@pytest.mark.parametrize("arguments, message", [
    ({"programs": -1}, "number of programs must be 0 or more, not -1"),
    ({"length": 0}, "program length must be at least 1 instruction, not 0"),
    ({"svls": []}, "at least one SVL"),
    ({"backends": ["model"]}, r"at least two backends, not \['model'\]"),
])
def test_campaign_arguments_are_checked_in_user_terms(arguments, message):
    kwargs = {"programs": 1, "svls": [128], "length": 1, "seed": 1,
              "backends": ["model", "rtl"], **arguments}
    with pytest.raises(ValueError, match=message):
        run_campaign(**kwargs)


#: The campaign shape of the quirk-leak tests.
QUIRK_CAMPAIGN = {"programs": 3, "svls": [128, 256], "length": 20}


def seed_meeting_the_quirk() -> int:
    """The first seed whose model/QEMU/RTL campaign meets QEMU's vertical-LD1 quirk, found with
    the model standing in for the RTL (the generator draws what the RTL performs, which grows,
    so the seed is searched for, not written down)."""
    real = backends.run_program

    def model_as_rtl(backend, source, initial, config=None, *, qemu_quirks=False):
        return real("model" if backend == "rtl" else backend, source, initial, config,
                    qemu_quirks=qemu_quirks)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(backends, "run_program", model_as_rtl)
        for seed in range(1, 40):
            report = run_campaign(**QUIRK_CAMPAIGN, seed=seed,
                                  backends=["model", "qemu", "rtl"])
            if report.divergences["qemu-vertical-ld1-stale-tail"]:
                return seed
    pytest.fail("no campaign seed in 1..39 meets the vertical-LD1 quirk")


def test_a_qemu_quirk_never_reaches_the_model_rtl_pair(planted_rtl, qemu):
    """Campaign seed 7 once reported ``model != rtl: za row 11 byte 24``: the model run with
    QEMU's vertical-LD1 quirk was reused against the RTL. Here the "rtl" is the faithful model,
    so any mismatch would be the quirk leaking, in a campaign whose programs meet the quirk."""
    seed = seed_meeting_the_quirk()
    planted_rtl(None)
    report = run_campaign(**QUIRK_CAMPAIGN, seed=seed, backends=["model", "qemu", "rtl"])
    assert report.mismatches == []
    assert report.divergences["qemu-vertical-ld1-stale-tail"] >= 1


# ------------------------------------------------------------ known divergences, recognised
def _fiz_state() -> ArchState:
    state = ArchState(svl=128, svcr=3, fpcr=1)          # FPCR.FIZ: QEMU flushes the inputs
    state.z[1].view(np.uint32)[:] = 1                   # a denormal
    state.z[2].view(np.uint32)[:] = 0x3F800000
    return state


def _past_end_state() -> ArchState:
    state = ArchState(svl=128, svcr=1, memory=Memory({0x400000: np.ones(100, np.uint8)}))
    state.x[1] = 0x400000
    return state


@pytest.mark.parametrize("program, initial, divergence, shown", [
    ("cntd x3\nrdsvl x4, #1\n", ArchState(svl=128), "qemu-non-streaming-sve",
     "instruction 0 'cntd x3': model undef != qemu ok"),
    ("ptrue p0.s\nfmopa za0.s, p0/m, p0/m, z1.s, z2.s\n", _fiz_state(), "qemu-fpcr-afp-ebf16",
     "model != qemu: za0h.s slice 0 element 0 (za row 0 byte 0)"),
    ("ptrue p0.s\n", ArchState(svl=128, svcr=3, fpcr=0x100), "qemu-fpcr-afp-ebf16",
     "model != qemu: fpcr: 0x100 != 0x0"),              # IOE: architectural, QEMU drops it
    ("ldr z1, [x1, #7, mul vl]\n", _past_end_state(), "qemu-page-granular-memory",
     "instruction 0 'ldr z1, [x1, #7, mul vl]': model fault at 0x400070 != qemu ok"),
])
def test_a_known_divergence_is_reported_by_its_id_never_as_a_mismatch(
        qemu, program, initial, divergence, shown, tmp_path, capsys):
    comparison = backends.compare(program, initial, ["model", "qemu"])
    assert comparison.agree, comparison.difference
    assert comparison.divergences == [divergence]
    assert len(comparison.explained) == 1
    assert comparison.to_json_dict()["explained"] == list(comparison.explained)
    assert comparison.explained[0].startswith(f"{shown}") and divergence in \
        comparison.explained[0]
    source, state = tmp_path / "p.s", tmp_path / "s.npz"
    source.write_text(program)
    initial.save(state)
    assert main(["compare", str(source), "--svl", "128", "--state-in", str(state),
                 "--backends", "model,qemu"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"{source}: model, qemu agree at SVL 128"
    assert printed[1:] == [f"  explained by a known divergence: {comparison.explained[0]}"]


def test_a_real_difference_after_a_known_divergence_of_another_pair_is_still_reported(
        planted_rtl, qemu):
    planted_rtl("x (scalar result)")
    comparison = backends.compare("cntd x3\nsmstart\nrdsvl x21, #1\n", ArchState(svl=256),
                                  ["model", "qemu", "rtl"])
    assert comparison.explained and "qemu-non-streaming-sve" in comparison.explained[0]
    assert comparison.difference == "model != rtl: x21: 0x20 != 0x7"
