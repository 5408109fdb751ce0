"""The comparators catch what they compare: a planted difference is named at its place.

:func:`zatile.sim.compare.first_difference` is planted with one differing byte or field in every
place it looks; :mod:`zatile.sw.backends` pairs backends so that a QEMU quirk applies to the
model-versus-QEMU pair only.
"""

from __future__ import annotations

import numpy as np
import pytest

from zatile.sim.compare import describe_outcome, first_difference
from zatile.sim.run import InstructionOutcome, RunOutcome
from zatile.sim.state import ArchState, Memory
from zatile.sw.backends import _pair_difference, _pairs, _side


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
    "fpsr": "fpsr: 0x0 != 0x1000000", "sp": "sp: 0x0 != 0x10", "x": "x7: 0x0 != 0x5",
    "z": "z3 byte 9: 0x00 != 0xab", "p": "p2 byte 1: 0x00 != 0x04",
    "za": "za row 13 byte 30: 0x00 != 0x11", "ffr": "ffr byte 2: 0x00 != 0x80",
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


def test_an_instruction_outcome_difference_is_named_before_the_state():
    ok = InstructionOutcome(0, "ld1w {za0h.s[w12, 0]}, p0/z, [x0]", "ok")
    fault = InstructionOutcome(0, ok.text, "fault", fault_address=0x400040)
    left, right = _state(), _state()
    _plant(right, "z")
    assert _pair_difference("model", _run("model", left, ok), "rtl", _run("rtl", right, fault)) \
        == f"instruction 0 '{ok.text}': model ok != rtl fault at 0x400040"
    assert _pair_difference("model", _run("model", left, ok), "rtl", _run("rtl", right, ok)) \
        == "model != rtl: z3 byte 9: 0x00 != 0xab"


def test_against_qemu_only_the_signal_counts():
    trap = InstructionOutcome(0, "zero {za}", "sme_trap", smtc=3)
    sigill = InstructionOutcome(0, "zero {za}", "SIGILL")
    assert describe_outcome(trap) == "sme_trap (SMTC 3)"
    assert _pair_difference("model", _run("model", _state(), trap),
                            "qemu", _run("qemu", _state(), sigill)) is None
    undef = InstructionOutcome(0, "zero {za}", "undef")
    assert _pair_difference("model", _run("model", _state(), trap),
                            "rtl", _run("rtl", _state(), undef)) is not None


def test_each_pair_sees_only_its_own_divergences():
    faithful, quirked = _run("model", _state()), _run("model+qemu-quirks", _state())
    outcomes = {"model": faithful, "qemu": _run("qemu", _state()), "rtl": _run("rtl", _state())}
    assert _side("model", "qemu", outcomes, quirked) is quirked
    assert _side("model", "rtl", outcomes, quirked) is faithful
    assert _side("qemu", "model", outcomes, quirked) is outcomes["qemu"]
    assert _pairs(["model", "qemu", "rtl"]) == [("model", "qemu"), ("model", "rtl")]
    assert _pairs(["qemu", "rtl", "model"]) == [("model", "rtl"), ("qemu", "model")]
    assert _pairs(["qemu", "rtl"]) == [("qemu", "rtl")]
