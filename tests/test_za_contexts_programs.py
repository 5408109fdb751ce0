"""Virtual ZA contexts (docs/abi.md, "Virtual ZA contexts") used by compiled programs: two
separately compiled libraries that keep private state in ZA across their own calls
(``tests/programs/za_lib_sum.c``, ``za_lib_dot.c``), each in a context of its own, called
alternately by ``tests/programs/za_libs.c`` from one thread and from four at once, on engines
with 1, 2 and 4 physical ZA contexts; and the same libraries built without the contexts
(``-DZA_LIB_NO_CONTEXTS``), which corrupt each other and leave PSTATE.ZA on.

The libraries are compiled alone with ``zatile cc -c`` and linked with the main program as
objects.
"""

from __future__ import annotations

import functools
import io
import json
from pathlib import Path

import pytest

from tests.test_real_programs import PROGRAMS, build_object, build_sources, run_oracle
from tests.test_tb_engine import VARIANT
from zatile.sw.abi.rtl_exec import run_program_rtl
from zatile.sw.abi.runner import run_program
from zatile.sw.arch.config import EngineConfig
from zatile.sw.cli import main

ROUNDS = 24
#: Library calls per round: one add (or reset) and one read of each library.
CALLS = 4 * ROUNDS


@functools.cache
def za_libs(contexts: bool = True) -> Path:
    """``za_libs`` linked with the two libraries, each compiled alone into an object: with
    their virtual ZA contexts, or with ``-DZA_LIB_NO_CONTEXTS``."""
    options = ("-O2",) if contexts else ("-O2", "-DZA_LIB_NO_CONTEXTS")
    libraries = [build_object(PROGRAMS / f"za_lib_{name}.c", options,
                              headers=[PROGRAMS / "za_lib_context.h",
                                       PROGRAMS / f"za_lib_{name}.h"])
                 for name in ("sum", "dot")]
    return build_sources("za_libs" if contexts else "za_libs-no-contexts",
                         [PROGRAMS / "za_libs.c", *libraries],
                         headers=[PROGRAMS / name
                                  for name in ("sme_state.h", "za_lib_sum.h", "za_lib_dot.h")])


def run(program: Path, *arguments: str, svl: int = 128, za_contexts: int = 1):
    """(exit status, stdout, stderr) of ``program`` on the reference model with an engine of
    ``za_contexts`` physical ZA contexts."""
    stdout, stderr = io.BytesIO(), io.BytesIO()
    result = run_program(program, [str(program), *arguments], svl=svl, stdout=stdout,
                         stderr=stderr, za_contexts=za_contexts)
    return result.status, stdout.getvalue().decode(), stderr.getvalue().decode()


def participants(mode: str) -> list[str]:
    """The names the program reports for: the 3 threads and main, or main alone."""
    return [*(f"thread {n}" for n in range(3)), "main"] if mode == "threads" else ["main"]


def libraries_output(mode: str) -> str:
    """What ``za_libs [threads]`` prints when both libraries keep their state."""
    return "".join(f"{who}: sum library over {ROUNDS} rounds: ok\n"
                   f"{who}: dot library over {ROUNDS} rounds: ok\n"
                   f"{who}: SVCR.ZA after the {CALLS} library calls: 0 after every one\n"
                   for who in participants(mode)) + "za_libs: ok\n"


@pytest.mark.parametrize("svl", [128, 512])
@pytest.mark.parametrize("mode", ["", "threads"], ids=["main", "threads"])
@pytest.mark.parametrize("za_contexts", [1, 2, 4])
def test_libraries_keep_their_za_state_in_their_own_contexts(za_contexts, mode, svl):
    """Each library's state survives the other's calls (and, with threads, every other
    thread's contexts), whether the kernel keeps the contexts resident or swaps them through
    fewer physical ones; the caller's PSTATE.ZA is 0 after every call."""
    arguments = (mode,) if mode else ()
    status, output, errors = run(za_libs(), *arguments, svl=svl, za_contexts=za_contexts)
    assert (status, output) == (0, libraries_output(mode)), errors


#: The RTL engines the libraries run on, and how: the default SVL 128 build (one ZA context)
#: and SVL 128 with four, from four threads; the regression's variant (two contexts, a 64-bit
#: bus, SVL 256) from main alone (its narrow bus makes every ZA row eight beats).
RTL_RUNS = [(EngineConfig(max_svl=128), "threads"), (VARIANT, ""),
            (EngineConfig(max_svl=128, za_contexts=4), "threads")]


@pytest.mark.parametrize("config, mode", RTL_RUNS,
                         ids=[f"za_contexts={config.za_contexts}" for config, _ in RTL_RUNS])
def test_libraries_keep_their_za_state_on_the_rtl(config, mode):
    """The libraries on the engine's Verilog: right with 1, 2 and 4 physical contexts, the
    kernel loading contexts into them through its own instructions."""
    program = za_libs()
    stdout, stderr = io.BytesIO(), io.BytesIO()
    arguments = [mode] if mode else []
    result = run_program_rtl(program, [str(program), *arguments], config=config, stdout=stdout,
                             stderr=stderr, pauses="light", seed=config.za_contexts)
    assert (result.status, stdout.getvalue().decode()) == (0, libraries_output(mode)), \
        stderr.getvalue().decode()
    assert result.za_loads > 0 and result.kernel_engine_cycles > 0
    print(f"{config.za_contexts} physical ZA contexts: {result.za_loads} loads, "
          f"{result.za_evictions} evictions, {result.za_resident_hits} found resident, "
          f"{result.za_bytes_saved + result.za_bytes_restored} bytes of ZA moved, "
          f"{result.kernel_engine_cycles} engine cycles in the kernel's instructions")


@pytest.mark.parametrize("mode", ["", "threads"], ids=["main", "threads"])
@pytest.mark.parametrize("za_contexts", [1, 4])
def test_without_contexts_the_libraries_corrupt_each_other(za_contexts, mode):
    """Built with -DZA_LIB_NO_CONTEXTS the libraries share the thread's one ZA (ZA0.S slice 0
    holds both the sum and the accumulator's row 0): both states are wrong from the first round,
    and every call returns with PSTATE.ZA on. Physical contexts alone do not help: they hold
    threads' and selected contexts' ZA, not one per library."""
    arguments = (mode,) if mode else ()
    status, output, errors = run(za_libs(contexts=False), *arguments, za_contexts=za_contexts)
    lines = output.splitlines()
    assert status == 1, errors
    assert lines[-1] == f"za_libs: {3 * len(participants(mode))} check(s) failed"
    for who in participants(mode):
        assert f"{who}: sum library over {ROUNDS} rounds: differs from round 0: got" \
            in output
        assert f"{who}: dot library over {ROUNDS} rounds: differs from round 0: got" \
            in output
        assert f"{who}: SVCR.ZA after the {CALLS} library calls: 1 after {CALLS} of them" \
            in lines


def test_without_contexts_the_corruption_is_the_one_qemu_shows():
    """The build without contexts uses no zatile extension: its output, corrupted values
    included, is QEMU's."""
    program = za_libs(contexts=False)
    status, output, _ = run(program)
    assert run_oracle(program, svl=128) == (status, output.encode())


def test_qemu_has_no_virtual_za_contexts():
    """QEMU (like Linux) answers the zatile prctl options with EINVAL: the first library call
    aborts."""
    assert run_oracle(za_libs(), svl=128) == (134, b"")


API_CHECKS = [
    "select 0 while 0 is selected: 0",
    "open twice: two selectors >= 1",
    "open with a non-zero argument: EINVAL",
    "select the first: 0 was selected; ZA off in it",
    "select the second from the first: the first was selected; ZA off",
    "select 0: the second was; its ZA off",
    "select the first again: its ZA on and kept",
    "select the second again: its ZA on and kept",
    "close the selected one: EBUSY",
    "close 0: EINVAL",
    "close a selector never opened: EINVAL",
    "select a selector never opened: EINVAL",
    "select -1: EINVAL",
    "select 0 and close both: 0",
    "select or close a closed one: EINVAL",
    "open 64, then the 65th: ENOSPC; close them all",
    "another thread: 0 selected, main's selector EINVAL, own ones",
    "main's ZA off throughout",
]


@pytest.mark.parametrize("za_contexts", [1, 4])
def test_context_calls_answer_and_fail_as_specified(za_contexts):
    """``za_libs api``: the selectors, the previous selector each selection returns, a
    PSTATE.ZA and a ZA per context, the errors, the limit of open contexts, and contexts
    private to their thread."""
    status, output, errors = run(za_libs(), "api", za_contexts=za_contexts)
    expected = "".join(f"{check:<58} ok\n" for check in API_CHECKS) + "za_libs: ok\n"
    assert (status, output) == (0, expected), errors


def test_exec_with_physical_za_contexts_reports_what_the_kernel_moved(tmp_path, capfd):
    """``zatile exec --za-contexts N --stats``: the same output, and with four contexts for
    four threads with ZA no ZA byte moves once each thread's ZA is in its own."""
    program = build_sources("threads_za", [PROGRAMS / "threads_za.c"],
                            headers=[PROGRAMS / "sme_state.h"])
    moved = {}
    for contexts in (1, 4):
        figures = tmp_path / f"stats{contexts}.json"
        assert main(["exec", str(program), "--svl", "512", "--za-contexts", str(contexts),
                     "--stats", "--stats-json", str(figures)]) == 0
        captured = capfd.readouterr()
        assert captured.out.endswith("turns, in order\n"), captured.out
        assert f"{contexts} physical ZA context(s): " in captured.err
        stats = json.loads(figures.read_text())
        assert stats["za_contexts"] == contexts and stats["za_loads"] > 0
        moved[contexts] = stats["za_bytes_saved"] + stats["za_bytes_restored"]
    assert moved[4] == 0 < moved[1]


@pytest.mark.parametrize("value, message", [("0", "must be at least 1, not 0"),
                                            ("17", "an engine has at most 16 ZA contexts, not 17")])
def test_exec_rejects_a_bad_number_of_za_contexts(capsys, value, message):
    with pytest.raises(SystemExit) as exit_:
        main(["exec", "a.out", "--za-contexts", value])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == f"zatile: error: argument --za-contexts: {message}\n"
