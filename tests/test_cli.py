"""The zatile command line: a thin layer with one-line errors."""

import json
import os

import numpy as np
import pytest

from zatile.sim.state import ArchState
from zatile.sw.cli import main


def test_demo_checks_against_numpy(capsys):
    assert main(["demo"]) == 0
    assert "matches numpy" in capsys.readouterr().out


def test_asm_disasm_round_trip(tmp_path, capsys):
    source = tmp_path / "p.s"
    source.write_text("smstart\nzero {za}\nld1w {za1h.s[w13, 2]}, p3/z, [x0, x1, lsl #2]\n")
    assert main(["asm", str(source), "-o", str(tmp_path / "p.bin")]) == 0
    assert main(["disasm", str(tmp_path / "p.bin")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-3:] == ["   0:\td503477f \tsmstart", "   4:\tc00800ff \tzero\t{za}",
                        "   8:\te0812c06 \tld1w\t{za1h.s[w13, 2]}, p3/z, [x0, x1, lsl #2]"]


def test_run_reports_traps_and_writes_state(tmp_path, capsys):
    source = tmp_path / "p.s"
    source.write_text("zero {za}\nsmstart za\nrdsvl x3, #2\n")
    assert main(["run", str(source), "--svl", "256", "--state-out", str(tmp_path / "o.npz"),
                 "--show", "za0.s"]) == 0
    out = capsys.readouterr().out
    assert "#0 zero {za}: sme_trap (SMTC 3)" in out
    final = ArchState.load(tmp_path / "o.npz")
    assert final.svcr == 2 and int(final.x[3]) == 64
    assert "za0.s (8x8" in out


def test_bad_arguments_give_one_line(tmp_path, capsys):
    assert main(["run", str(tmp_path / "missing.s"), "--svl", "256"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("zatile: error: cannot read") and "\n" not in err
    bad = tmp_path / "bad.s"
    bad.write_text("smstart\nfrobnicate\n")
    assert main(["run", str(bad), "--svl", "128"]) == 2
    assert "line 2" in capsys.readouterr().err


def test_compare_names_the_first_difference(qemu, tmp_path, capsys, monkeypatch):
    source = tmp_path / "p.s"
    source.write_text("smstart\nptrue p0.s\nmov z1.s, #7\nmov za0h.s[w12, 1], p0/m, z1.s\n")
    state = ArchState(svl=128)
    state.save(tmp_path / "s.npz")
    arguments = ["compare", str(source), "--svl", "128", "--state-in", str(tmp_path / "s.npz")]
    assert main(arguments) == 0
    assert "agree" in capsys.readouterr().out
    # A real difference, planted in QEMU's final ZA: one byte of za0h.s slice 1 (ZA row 4).
    from zatile.sw import backends
    real = backends.run_program

    def planted(backend, *args, **kwargs):
        run = real(backend, *args, **kwargs)
        if backend == "qemu":
            run.final.za[4, 8] ^= 1
        return run

    monkeypatch.setattr(backends, "run_program", planted)
    assert main(arguments) == 1
    assert "model != qemu: za0h.s slice 1 element 2 (za row 4 byte 8): 0x07 != 0x06" \
        in capsys.readouterr().out


def _mistakes(tmp_path):
    """Each user mistake, as the arguments that make it."""
    program = tmp_path / "p.s"
    program.write_text("smstart\n")
    binary = tmp_path / "p.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    return {
        "missing source": ["asm", str(tmp_path / "missing.s")],
        "binary given as assembly": ["run", str(binary), "--svl", "128"],
        "output into a missing folder": ["asm", str(program), "-o", str(tmp_path / "no" / "p.bin")],
        "output onto a folder": ["asm", str(program), "-o", str(tmp_path)],
        "state-out into a missing folder": ["run", str(program), "--svl", "128", "--state-out",
                                            str(tmp_path / "no" / "s.npz")],
        "negative program count": ["campaign", "--programs", "-1"],
        "zero length": ["campaign", "--length", "0"],
        "non-number seed": ["campaign", "--seed", "x"],
        "SVL not a power of two": ["run", str(program), "--svl", "384"],
        "unknown backend": ["compare", str(program), "--svl", "128", "--backends", "model,gpu"],
    }


def test_every_user_mistake_gives_one_error_line_and_status_2(tmp_path, capsys):
    for name, argv in _mistakes(tmp_path).items():
        try:
            status = main(argv)
        except SystemExit as exit_:          # argparse's own errors exit from inside main
            status = exit_.code
        err = capsys.readouterr().err
        assert status == 2, name
        assert err.startswith("zatile: error: ") and err.count("\n") == 1, (name, err)


def test_no_command_prints_the_commands_and_version_prints_the_version(capsys):
    assert main([]) == 2
    assert "asm" in capsys.readouterr().err
    try:
        main(["--version"])
    except SystemExit as exit_:
        assert exit_.code == 0
    assert capsys.readouterr().out.startswith("zatile ")


def test_run_takes_the_bin_asm_writes_and_prints_typed_views(tmp_path, capsys):
    source = tmp_path / "p.s"
    source.write_text("ptrue p0.s\nmov z1.s, p0/m, za1h.s[w12, 0]\nrdsvl x3, #1\n"
                      "mrs x4, svcr\n")
    state = ArchState(svl=128, svcr=3)
    state.za[1] = np.frombuffer(np.full(4, 0.5, np.float32).tobytes(), np.uint8)
    state.save(tmp_path / "s.npz")
    assert main(["asm", str(source), "-o", str(tmp_path / "p.bin")]) == 0
    capsys.readouterr()
    assert main(["run", str(tmp_path / "p.bin"), "--svl", "128", "--state-in",
                 str(tmp_path / "s.npz"), "--show", "za1.s:f32",
                 "--show", "za1.s:bf16", "--show", "za1.s:hex", "--show", "za1.s:u8",
                 "--regs", "x3,z1,p0"]) == 0
    out = capsys.readouterr().out
    assert "4 instructions on model" in out
    assert "scalar results: x3=0x10 (16), x4=0x3 (3)" in out
    # 0x3f000000 is fp32 0.5; as bf16 pairs it is (0, 0.5); its bytes, lowest first, 0 0 0 63.
    assert "za1.s:f32 (4x4, f32 view):\n0.5 0.5 0.5 0.5\n  0   0   0   0" in out
    assert "za1.s:bf16 (4x8, bf16 view):\n  0 0.5   0 0.5" in out
    assert "za1.s:hex (4x4, hex view):\n3f000000 3f000000" in out
    assert "za1.s:u8 (4x16, u8 view):\n 0  0  0 63  0" in out
    assert "  x3 = 0x0000000000000010 (16)" in out and "  p0 = 1111" in out
    assert "  z1 = " + "0000003f" * 4 in out


def test_run_json_and_the_state_file_is_exactly_the_named_one(tmp_path, capsys):
    source = tmp_path / "p.s"
    source.write_text("zero {za}\nsmstart\nrdsvl x5, #1\n")
    assert main(["run", str(source), "--svl", "128", "--json", "--state-out",
                 str(tmp_path / "final")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["trapped"] == [{"index": 0, "text": "zero {za}", "status": "sme_trap",
                                  "smtc": 3, "fault_address": None}]
    assert report["written"] == {"x5": 16} and report["state_out"] == str(tmp_path / "final")
    assert ArchState.load(tmp_path / "final").x[5] == 16


def test_quiet_sets_the_environment_for_the_libraries(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("ZATILE_QUIET", raising=False)
    source = tmp_path / "p.s"
    source.write_text("smstart\n")
    assert main(["--quiet", "run", str(source), "--svl", "128"]) == 0
    assert os.environ["ZATILE_QUIET"] == "1"
    monkeypatch.delenv("ZATILE_QUIET")
    assert main(["run", "--quiet", str(source), "--svl", "128"]) == 0
    assert os.environ["ZATILE_QUIET"] == "1"


class _FakeReport:
    ok = False

    def summary(self):
        return "campaign summary"

    def to_json_dict(self):
        return {"programs": 4, "mismatches": ["m"]}


def test_campaign_passes_progress_and_save_failures_and_prints_json(tmp_path, monkeypatch,
                                                                     capsys):
    """The CLI side of the campaign contract (zatile.sw.campaign.run_campaign)."""
    calls = []

    def fake_run_campaign(programs, svls, length, seed, backends, *, progress=None,
                          save_failures=None, client=None, chunk_size=None):
        calls.append((programs, svls, length, seed, backends, save_failures, client, chunk_size))
        for done in range(1, programs * len(svls) + 1):
            progress(done, programs * len(svls), 1)
        return _FakeReport()

    monkeypatch.setattr("zatile.sw.campaign.run_campaign", fake_run_campaign)
    folder = tmp_path / "failures"
    assert main(["campaign", "--programs", "2", "--svl", "128,256", "--length", "5", "--seed",
                 "9", "--backends", "model,rtl", "--save-failures", str(folder), "--json",
                 "--workers", "0", "--chunk", "3"]) == 1
    assert calls == [(2, [128, 256], 5, 9, ["model", "rtl"], folder, None, 3)]
    assert folder.is_dir()
    assert json.loads(capsys.readouterr().out) == {"programs": 4, "mismatches": ["m"]}


def test_compare_json_is_the_comparison_with_the_program(tmp_path, monkeypatch, capsys):
    """The CLI side of the comparison contract (Comparison.to_json_dict)."""
    class FakeComparison:
        agree = False
        difference = "za1h.s slice 3 element 2"
        outcomes = {}

        def to_json_dict(self):
            return {"difference": self.difference, "divergences": []}

    monkeypatch.setattr("zatile.sw.backends.compare", lambda *args: FakeComparison())
    source = tmp_path / "p.s"
    source.write_text("smstart\n")
    assert main(["compare", str(source), "--svl", "128", "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {
        "program": str(source), "svl": 128, "backends": ["model", "qemu"], "agree": False,
        "difference": "za1h.s slice 3 element 2", "divergences": []}


def test_bench_prints_the_model_rate_and_the_same_figures_as_json(capsys):
    assert main(["bench", "--svl", "128,256", "--workloads", "ldst", "--instructions", "64"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "model at SVL 128:" and lines[2] == "model at SVL 256:"
    assert lines[1].split()[0] == "ldst" and lines[1].endswith(" instructions/s")
    assert main(["bench", "--svl", "128", "--instructions", "64", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["backend"] == "model" and set(report["results"]["128"]) == {"mopa", "ldst"}
    mopa = report["results"]["128"]["mopa"]
    assert mopa["instructions"] == 64 and mopa["svl"] == 128
    assert mopa["instructions_per_second"] == pytest.approx(64 / mopa["seconds"])
