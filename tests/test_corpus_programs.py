"""The ACLE corpus (tests/corpus/*.c) run as programs, on the model, on QEMU and on the RTL engine.

``tests/corpus_driver/driver.c`` calls every function the corpus exports on small deterministic
inputs and prints one line per function, ``name: <FNV-1a 64 of every byte the call touched>``.
It is linked with the whole corpus at -O0 to -O3 (``-Wall -Wextra -Werror``) and cached like the
programs of tests/test_real_programs.py.

* At every level and at SVL 128, 256 and 512 the model prints exactly the lines QEMU prints,
  with exit status 0 (an undefined instruction would end the program with SIGILL), one line per
  function the corpus defines, so a function added to the corpus and not driven fails by name.
* The RTL engine prints the model's lines at -O2, SVL 128 (about 20 s of simulation); -O0
  (about a minute) and the other levels and SVLs run under ``-m soak``.
* The comparison catches a difference: ``driver perturb NAME`` changes NAME's inputs, and only
  NAME's line changes.

The lines are compared between backends at one SVL: the shapes of ZA tiles and packed operands,
and the order of FP reductions, make some of them depend on the vector length.
"""

from __future__ import annotations

import functools
import io
import re
from pathlib import Path

import pytest

from tests.test_real_programs import build_sources, run_model, run_oracle
from zatile.sw.abi.elf_process import load_elf_image
from zatile.sw.abi.rtl_exec import run_program_rtl

DRIVER = Path(__file__).with_name("corpus_driver") / "driver.c"
CORPUS = sorted(Path(__file__).with_name("corpus").glob("*.c"))
LEVELS = ("-O0", "-O1", "-O2", "-O3")
SVLS = (128, 256, 512)
WARNINGS = ("-Wall", "-Wextra", "-Werror")
#: What the RTL runs by default; every other (level, SVL) pair is a soak case.
RTL_DEFAULT = ("-O2", 128)

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_DIRECTIVE = re.compile(r"^\s*#[^\n]*", re.MULTILINE)
_ATTRIBUTE = re.compile(r'__arm_\w+(?:\("[^"]*"\))?')
_CALLED_NAME = re.compile(r"(\w+)\s*\(")


def corpus_functions() -> set[str]:
    """The names of the functions the corpus defines with external linkage: the name before the
    parameter list of every top-level definition that is not ``static`` (ACLE keyword attributes
    such as ``__arm_new("za")`` left out)."""
    names = set()
    for source in CORPUS:
        text = _DIRECTIVE.sub("", _COMMENT.sub("", source.read_text()))
        depth, start = 0, 0
        for index, char in enumerate(text):
            if char == "{":
                if depth == 0:
                    header = _ATTRIBUTE.sub("", text[start:index]).strip()
                    definition = _CALLED_NAME.search(header)
                    if definition and not header.startswith("static"):
                        names.add(definition.group(1))
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    start = index + 1
            elif char == ";" and depth == 0:
                start = index + 1
    return names


def build(level: str) -> Path:
    """The driver linked with the whole corpus at ``level`` (cached)."""
    return build_sources(f"corpus{level}", [DRIVER, *CORPUS], [level, *WARNINGS])


@functools.cache
def model_run(level: str, svl: int):
    """(exit status, stdout, stderr, result) of the driver at ``level`` on the model."""
    return run_model(build(level), svl=svl)


def hashes(stdout: bytes) -> dict[str, str]:
    """The driver's ``name: hash`` lines as a mapping (a repeated name fails)."""
    pairs = [line.split(": ") for line in stdout.decode().splitlines()]
    names = [name for name, _ in pairs]
    assert len(set(names)) == len(names), f"a function printed twice: {names}"
    return dict(pairs)


def driver_entries() -> list[str]:
    """The functions the driver runs, in its order (its ``ENTRY(name)`` table)."""
    return re.findall(r"(?<!define )ENTRY\((\w+)\)", DRIVER.read_text())


def describe(run) -> str:
    """How a run ended, for a failure message: the function it was running, the stop (an
    undefined instruction names its word and PC) and its stderr."""
    status, stdout, stderr, result = run
    finished = len(hashes(stdout))
    entries = driver_entries()
    running = entries[finished] if finished < len(entries) else "none (all finished)"
    stop = result.stop
    ending = f"{stop.kind.value} {stop.signal}, {stop.detail} at {stop.address:#x}" if stop else ""
    return (f"exit status {status} in {running}; {ending}; "
            f"stderr: {stderr.decode(errors='replace')!r}")


def test_the_driver_has_an_entry_for_every_corpus_function():
    entries = driver_entries()
    assert len(entries) == len(set(entries))
    assert len(corpus_functions()) >= 45
    assert sorted(corpus_functions() - set(entries)) == [], "corpus functions not driven"
    assert sorted(set(entries) - corpus_functions()) == [], "driven, but not in the corpus"


@pytest.mark.parametrize("svl", SVLS)
@pytest.mark.parametrize("level", LEVELS)
def test_model_runs_every_corpus_function_as_qemu_does(level, svl):
    run = model_run(level, svl)
    status, stdout, _, result = run
    assert (status, result.signal) == (0, None), describe(run)
    driven = set(hashes(stdout))
    assert sorted(corpus_functions() - driven) == [], "corpus functions the driver did not run"
    assert sorted(driven - corpus_functions()) == [], "lines for functions not in the corpus"
    assert driven <= set(load_elf_image(build(level)).symbols)
    oracle_status, oracle_stdout = run_oracle(build(level), svl=svl)
    assert oracle_status == 0
    assert hashes(stdout) == hashes(oracle_stdout)     # pytest names the lines that differ


def check_rtl(level: str, svl: int) -> None:
    """The driver at ``level`` runs to the end on the RTL engine (random stalls on every
    handshake) and prints what the model prints."""
    program = build(level)
    stdout, stderr = io.BytesIO(), io.BytesIO()
    result = run_program_rtl(program, [str(program)], svl=svl, stdout=stdout, stderr=stderr,
                             pauses="light", seed=svl)
    rtl = (result.status, stdout.getvalue(), stderr.getvalue(), result)
    assert (result.status, result.signal) == (0, None), describe(rtl)
    model = model_run(level, svl)
    assert model[0] == 0, describe(model)
    assert hashes(rtl[1]) == hashes(model[1])


def test_rtl_prints_what_the_model_prints():
    check_rtl(*RTL_DEFAULT)


@pytest.mark.soak
@pytest.mark.parametrize("svl", SVLS)
@pytest.mark.parametrize("level", LEVELS)
def test_rtl_prints_what_the_model_prints_at_every_level_and_svl(level, svl):
    if (level, svl) == RTL_DEFAULT:
        pytest.skip("run by test_rtl_prints_what_the_model_prints")
    check_rtl(level, svl)


@pytest.mark.parametrize("name", ["gemm_f32_2x2", "tile_checkpoint", "requantize_fixed_point"])
def test_a_changed_input_changes_that_function_line_only(name):
    reference = model_run("-O2", 128)
    assert reference[0] == 0, describe(reference)
    perturbed = run_model(build("-O2"), "perturb", name, svl=128)
    assert perturbed[0] == 0, describe(perturbed)
    before, after = hashes(reference[1]), hashes(perturbed[1])
    assert before.keys() == after.keys()
    assert {function for function in before if before[function] != after[function]} == {name}
