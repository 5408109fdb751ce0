"""Every user mistake, on every subcommand, gives one ``zatile: error:`` line and exit status 2.

A battery of bad inputs (wrong types, missing and unwritable paths, folders, empty, garbage and
binary files, out-of-range numbers) is driven through ``main()`` in-process, the argument space
by hypothesis; a closed pipe and a few end-to-end cases run the installed entry point.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zatile.sim.state import ArchState, Memory
from zatile.sw import cli
from zatile.sw.arch.config import EngineConfig
from zatile.sw.cli import main
from zatile.sw.cli.hardware import _config
from tests.conftest import need_tool


def _files(folder: Path) -> dict[str, Path]:
    """Every kind of bad input file, and a good program."""
    files = {"program": folder / "p.s", "empty": folder / "empty.s", "binary": folder / "bin.s",
             "odd": folder / "odd.bin", "undecodable": folder / "junk.bin",
             "npy": folder / "za.npy", "garbage_npz": folder / "garbage.npz",
             "empty_npz": folder / "empty.npz", "bad_svcr": folder / "svcr.npz",
             "bad_fpcr": folder / "fpcr.npz", "page_zero": folder / "zero.npz",
             "top": folder / "top.npz", "objects": folder / "objects.npz"}
    files["program"].write_text("smstart\nzero {za}\n")
    files["empty"].write_text("")
    files["binary"].write_bytes(bytes(range(256)) * 4)
    files["odd"].write_bytes(b"\x00" * 6)
    files["undecodable"].write_bytes(b"\xff\xff\xff\xff")
    np.save(files["npy"], np.zeros(4, np.uint8))
    files["garbage_npz"].write_bytes(b"\x80\x04garbage that numpy would try to unpickle")
    files["empty_npz"].write_bytes(b"")
    np.savez(files["bad_svcr"], svcr=np.array(7))
    np.savez(files["bad_fpcr"], fpcr=np.array(2**40, np.uint64))
    ArchState(svl=128, memory=Memory({0: np.zeros(64, np.uint8)})).save(files["page_zero"])
    ArchState(svl=128, memory=Memory({(1 << 64) - 4096: np.zeros(64, np.uint8)})).save(
        files["top"])
    np.savez(files["objects"], x=np.array([None], dtype=object))
    return files


def _mistakes(folder: Path) -> dict[str, list[str]]:
    f = {name: str(path) for name, path in _files(folder).items()}
    missing, no_folder = str(folder / "missing.s"), str(folder / "no" / "out")
    program = f["program"]
    run = ["run", program, "--svl", "128"]
    return {
        # asm / disasm
        "asm missing source": ["asm", missing],
        "asm binary source": ["asm", f["binary"]],
        "asm folder as source": ["asm", str(folder)],
        "asm output in a missing folder": ["asm", program, "-o", no_folder],
        "asm output onto a folder": ["asm", program, "-o", str(folder)],
        "asm bad statement": ["asm", f["program"] + ".bad"],
        "disasm missing": ["disasm", missing],
        "disasm odd length": ["disasm", f["odd"]],
        "disasm folder": ["disasm", str(folder)],
        # run
        "run binary given as assembly": ["run", f["binary"], "--svl", "128"],
        "run .bin of an odd length": ["run", f["odd"], "--svl", "128"],
        "run .bin with a word outside the subset": ["run", f["undecodable"], "--svl", "128"],
        "run no svl": ["run", program],
        "run svl not a number": ["run", program, "--svl", "wide"],
        "run svl out of range": ["run", program, "--svl", "4096"],
        "run unknown backend": [*run, "--backend", "gpu"],
        "run state-in .npy": [*run, "--state-in", f["npy"]],
        "run state-in empty": [*run, "--state-in", f["empty_npz"]],
        "run state-in garbage": [*run, "--state-in", f["garbage_npz"]],
        "run state-in object arrays": [*run, "--state-in", f["objects"]],
        "run state-in missing": [*run, "--state-in", missing],
        "run state-in folder": [*run, "--state-in", str(folder)],
        "run state-in svcr 7": [*run, "--state-in", f["bad_svcr"]],
        "run state-in fpcr reserved bits": [*run, "--state-in", f["bad_fpcr"]],
        "run region at page zero": [*run, "--state-in", f["page_zero"]],
        "run region near 2^64 on qemu": [*run, "--backend", "qemu", "--state-in", f["top"]],
        "run state-out in a missing folder": [*run, "--state-out", no_folder],
        "run state-out onto a folder": [*run, "--state-out", str(folder)],
        "run show not a tile": [*run, "--show", "za9"],
        "run show tile out of range": [*run, "--show", "za4.s"],
        "run show unknown view": [*run, "--show", "za0.s:f8"],
        "run regs unknown": [*run, "--regs", "x31"],
        "run waves without rtl": [*run, "--waves", str(folder / "w.fst")],
        "run waves in a missing folder": [*run, "--backend", "rtl", "--waves", no_folder],
        # compare
        "compare one backend": ["compare", program, "--svl", "128", "--backends", "model"],
        "compare a backend twice": ["compare", program, "--svl", "128", "--backends",
                                    "model,model"],
        "compare unknown backend": ["compare", program, "--svl", "128", "--backends", "model,gpu"],
        "compare empty file of garbage state": ["compare", program, "--svl", "128",
                                                "--state-in", f["garbage_npz"]],
        "compare missing program": ["compare", missing, "--svl", "128"],
        # campaign
        "campaign negative programs": ["campaign", "--programs", "-1"],
        "campaign zero length": ["campaign", "--length", "0"],
        "campaign seed not a number": ["campaign", "--seed", "x"],
        "campaign no svl": ["campaign", "--svl", ","],
        "campaign save-failures onto a file": ["campaign", "--save-failures", program],
        "campaign save-failures in a missing folder": ["campaign", "--save-failures", no_folder],
        # bench
        "bench unknown workload": ["bench", "--svl", "128", "--workloads", "nope"],
        "bench unknown rtl workload": ["bench", "--backend", "rtl", "--workloads", "mopa"],
        "bench zero instructions": ["bench", "--instructions", "0"],
        "bench unknown backend": ["bench", "--backend", "qemu"],
        "bench no workloads": ["bench", "--workloads", ","],
        "bench an area option on the model": ["bench", "--svl", "128", "--lanes", "1"],
        "bench an area option for gemm": ["bench", "gemm", "--backend", "rtl", "--svl", "128",
                                          "--queue-depth", "4"],
        "bench too many lanes": ["bench", "--backend", "rtl", "--svl", "128", "--lanes", "8"],
        "bench a workload without its feature": ["bench", "--backend", "rtl", "--svl", "128",
                                                 "--features", "I8I32", "--workloads",
                                                 "gemm_fp32"],
        # demo / verilog
        "demo unknown backend": ["demo", "--backend", "fpga"],
        "verilog no svl": ["verilog", "-o", str(folder / "v")],
        "verilog output is a file": ["verilog", "--svl", "128", "-o", program],
        "verilog output in a missing folder": ["verilog", "--svl", "128", "-o", no_folder],
        "verilog negative contexts": ["verilog", "--svl", "128", "--za-contexts", "-1", "-o",
                                      str(folder / "v")],
        "verilog zero memory width": ["verilog", "--svl", "128", "--mem-width", "0", "-o",
                                      str(folder / "v")],
        # fpga (each refused before any synthesis)
        "fpga unknown device": ["fpga", "--svl", "128", "--device", "XC7A35T", "-o",
                                str(folder / "f")],
        "fpga unknown design": ["fpga", "--svl", "128", "--design", "gpu", "-o",
                                str(folder / "f")],
        "fpga zero frequency": ["fpga", "--svl", "128", "--frequency", "0", "-o",
                                str(folder / "f")],
        "fpga unknown feature": ["fpga", "--svl", "128", "--features", "I8I33", "-o",
                                 str(folder / "f")],
        "fpga output is a file": ["fpga", "--svl", "128", "-o", program],
        "fpga lanes not a power of two": ["fpga", "--svl", "128", "--lanes", "3", "-o",
                                          str(folder / "f")],
        "verilog more lanes than rows": ["verilog", "--svl", "128", "--lanes", "8", "-o",
                                         str(folder / "v")],
        "fpga vector bits below a chunk": ["fpga", "--svl", "128", "--vector-bits", "32", "-o",
                                           str(folder / "f")],
        "verilog vector bits above the SVL": ["verilog", "--svl", "128", "--vector-bits", "256",
                                              "-o", str(folder / "v")],
        "fpga queue depth not a power of two": ["fpga", "--svl", "128", "--queue-depth", "6",
                                                "-o", str(folder / "f")],
        "verilog three issue lanes": ["verilog", "--svl", "128", "--issue-lanes", "3", "-o",
                                      str(folder / "v")],
        # no command
        "unknown command": ["frobnicate"],
        "unknown option": ["run", program, "--svl", "128", "--colour"],
    }


def _status(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exit_:          # argparse's own errors exit from inside main
        return exit_.code


def _assert_one_error_line(capsys, status: int, what) -> str:
    captured = capsys.readouterr()
    assert status == 2, (what, captured)
    assert captured.err.startswith("zatile: error: ") and captured.err.count("\n") == 1, \
        (what, captured.err)
    assert "Traceback" not in captured.err + captured.out, what
    return captured.err


def test_every_mistake_on_every_subcommand(tmp_path, capsys):
    (tmp_path / "p.s.bad").write_text("smstart ; frobnicate\n")
    for name, argv in _mistakes(tmp_path).items():
        _assert_one_error_line(capsys, _status(argv), name)
    assert not (tmp_path / "no").exists() and not (tmp_path / "v").exists()


@pytest.mark.parametrize("argv, words", [
    (["run", "{binary}", "--svl", "128"], "not a text file"),
    (["run", "{program}", "--svl", "128", "--state-in", "{npy}"], "single .npy array"),
    (["run", "{program}", "--svl", "128", "--state-in", "{empty_npz}"], "the file is empty"),
    (["run", "{program}", "--svl", "128", "--state-in", "{garbage_npz}"], "not a zip file"),
    (["run", "{program}", "--svl", "128", "--state-in", "{bad_svcr}"], "'svcr' = 0x7"),
    (["run", "{program}", "--svl", "128", "--state-in", "{bad_fpcr}"], "'fpcr' = 0x10000000000"),
    (["run", "{program}", "--svl", "128", "--state-in", "{page_zero}"],
     "memory region at 0x0 (64 bytes) is outside the user address space"),
    (["run", "{undecodable}", "--svl", "128"], "word 0xffffffff at offset 0x0"),
    (["campaign", "--programs", "-1"], "must not be negative, not -1"),
    (["campaign", "--length", "0"], "must be at least 1, not 0"),
])
def test_the_error_line_names_the_mistake(tmp_path, capsys, argv, words):
    files = {name: str(path) for name, path in _files(tmp_path).items()}
    error = _assert_one_error_line(capsys, _status([a.format(**files) for a in argv]), argv)
    assert words in error and "pickle" not in error


def test_a_bin_word_outside_the_subset_is_named_as_binutils_names_it(tmp_path, capsys):
    need_tool("objdump")
    program = tmp_path / "fadda.bin"
    program.write_bytes((0x65982420).to_bytes(4, "little"))       # fadda s0, p1, s0, z1.s
    error = _assert_one_error_line(capsys, _status(["run", str(program), "--svl", "128"]), "bin")
    assert "word 0x65982420 at offset 0x0 ('fadda s0, p1, s0, z1.s') is not an instruction" \
        in error


def test_verilog_refuses_to_overwrite_without_force(tmp_path, capsys):
    (tmp_path / "zatile_engine.json").write_text("{}")
    error = _assert_one_error_line(capsys, _status(["verilog", "--svl", "128", "-o",
                                                    str(tmp_path)]), "overwrite")
    assert "zatile_engine.json' exists; pass --force" in error
    assert (tmp_path / "zatile_engine.json").read_text() == "{}"


def test_fpga_refuses_to_overwrite_a_report_without_force(tmp_path, capsys):
    (tmp_path / "zatile_fpga.json").write_text("{}")
    error = _assert_one_error_line(capsys, _status(["fpga", "--svl", "128", "-o",
                                                    str(tmp_path)]), "overwrite")
    assert "zatile_fpga.json' exists; pass --force" in error
    assert (tmp_path / "zatile_fpga.json").read_text() == "{}"


_WORDS = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                 max_size=12)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(["asm", "disasm", "run", "compare", "campaign", "bench", "demo",
                                "verilog"]),
       options=st.lists(st.tuples(st.sampled_from(
           ["--svl", "--programs", "--length", "--seed", "--backends", "--backend", "--show",
            "--regs", "--state-in", "--state-out", "-o", "--mem-width", "--za-contexts",
            "--features", "--supported-svls", "--save-failures", "--waves", "--workloads",
            "--instructions"]), _WORDS),
           max_size=3),
       positional=st.lists(_WORDS, max_size=2))
def test_no_argument_list_gives_a_traceback(tmp_path_factory, capsys, command, options,
                                            positional):
    """Random option values: either the command refuses them in one line with status 2, or
    it runs (quick commands only: nothing here names a readable program)."""
    folder = tmp_path_factory.mktemp("args")
    argv = [command, *(str(folder / p) if p and "/" not in p else p for p in positional)]
    for option, value in options:
        argv += [option, value]
    if command in ("campaign", "demo") and not any(o == "--programs" for o, _ in options):
        argv += ["--programs", "-1"]           # never start a real campaign
    if command == "campaign":
        argv += ["--workers", "0"]             # nor a cluster
    if command == "bench":
        argv += ["--instructions", "0"]        # never start a real measurement
    status = _status(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    if status == 2:
        assert captured.err.startswith("zatile: error: ") and captured.err.count("\n") == 1, \
            (argv, captured.err)
    else:
        assert command == "demo" or status in (0, 1), (argv, status, captured)


def _zatile(*arguments: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zatile", *arguments], capture_output=True,
                          text=True, timeout=300, **kwargs)


def test_end_to_end_errors_and_usage(tmp_path):
    files = _files(tmp_path)
    for arguments in (["run", str(files["binary"]), "--svl", "128"],
                      ["run", str(files["program"]), "--svl", "128", "--state-in",
                       str(files["garbage_npz"])],
                      ["campaign", "--programs", "-1"]):
        process = _zatile(*arguments)
        assert process.returncode == 2 and process.stdout == ""
        assert process.stderr.startswith("zatile: error: ") and process.stderr.count("\n") == 1
    alone = _zatile()
    assert alone.returncode == 2 and "campaign" in alone.stderr and "verilog" in alone.stderr
    version = _zatile("--version")
    assert version.returncode == 0 and version.stdout.startswith("zatile 0.")


def test_a_closed_pipe_on_a_long_listing_ends_quietly(tmp_path):
    binary = tmp_path / "big.bin"
    binary.write_bytes(bytes(4) * 200_000)
    process = subprocess.Popen([sys.executable, "-m", "zatile", "disasm", str(binary)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.readline()
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) != 0 and stderr == ""


def test_help_has_a_line_per_option_and_an_example_per_command(capsys):
    commands = next(action for action in cli._parser()._actions
                    if isinstance(action, argparse._SubParsersAction))
    assert set(commands.choices) >= {"asm", "disasm", "run", "compare", "campaign", "demo",
                                     "verilog"}
    for name, parser in commands.choices.items():
        for action in parser._actions:
            assert action.help, (name, action.option_strings or action.dest)
        assert _status([name, "--help"]) == 0
        assert f"example:\n  zatile {name} " in capsys.readouterr().out, name


def test_json_run_is_machine_readable(tmp_path, capsys):
    program = tmp_path / "p.s"
    program.write_text("smstart\nrdsvl x3, #1\nmrs x4, svcr\nzero {za}\n")
    assert main(["run", str(program), "--svl", "256", "--json", "--regs", "x3,p0",
                 "--show", "za0.s:u32"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["written"] == {"x3": 32, "x4": 3} and report["registers"]["x3"] == 32
    assert report["tiles"]["za0.s:u32"] == [[0] * 8] * 8 and report["trapped"] == []


def test_the_area_options_make_the_configuration():
    """--lanes, --vector-bits, --queue-depth and --issue-lanes reach the EngineConfig a build
    uses."""
    args = cli._parser().parse_args(["fpga", "--svl", "256", "--lanes", "1", "--vector-bits", "64",
                                     "--queue-depth", "4", "--issue-lanes", "1", "-o", "unused"])
    config = _config(args)
    assert (config.array_rows, config.vector_bits_per_cycle, config.queue_depth,
            config.issue_lanes) == (1, 64, 4, 1)
    default = _config(cli._parser().parse_args(["verilog", "--svl", "256", "-o", "unused"]))
    assert (default.array_rows, default.vector_bits_per_cycle, default.queue_depth,
            default.issue_lanes) == (8, 256, 16, 2)


def test_bench_runs_the_rtl_workloads_its_options_configure(monkeypatch, capsys):
    """--features, --lanes, --vector-bits and --queue-depth build the engine ``zatile bench``
    measures; the default workloads leave out those whose features it has not, and each
    workload's figure is printed."""
    from zatile.sw import bench  # local: only this test replaces the RTL run

    runs = []
    raw = {"cycles": 400, "busy_cycles": 40, "retired_mopa": 10, "instructions": 20,
           "memory_requests": 5, "wall_seconds": 2.0}

    def run(config, workloads):
        runs.append((config, workloads))
        return {name: {**raw, **bench._derived(name, raw)} for name in workloads}

    monkeypatch.setattr(bench, "bench_rtl", run)
    assert main(["bench", "--backend", "rtl", "--svl", "128", "--features", "I8I32,F32F32",
                     "--lanes", "1", "--vector-bits", "64", "--queue-depth", "4"]) == 0
    [(config, workloads)] = runs
    assert config == EngineConfig(max_svl=128, features=frozenset({"I8I32", "F32F32"}),
                                  array_rows=1, vector_bits_per_cycle=64, queue_depth=4)
    assert {"gemm_fp32", "gemm_int8", "mopa_rotating_int", "mixed"} <= set(workloads)
    assert "gemm_bf16" not in workloads
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "rtl at SVL 128:" and len(lines) == 1 + len(workloads)
    assert "  gemm_int8              0.250 outer products/cycle (10 in 40 busy cycles)" in lines
    assert "  vector_int             0.500 instructions/cycle (20 in 40 busy cycles)" in lines
