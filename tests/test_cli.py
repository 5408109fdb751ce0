"""The zatile command line: a thin layer with one-line errors."""

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


def test_compare_names_the_first_difference(qemu, tmp_path, capsys):
    source = tmp_path / "p.s"
    source.write_text("smstart\nptrue p0.s\nmov z1.s, #7\nmov za0h.s[w12, 1], p0/m, z1.s\n")
    state = ArchState(svl=128)
    state.save(tmp_path / "s.npz")
    assert main(["compare", str(source), "--svl", "128", "--state-in",
                 str(tmp_path / "s.npz")]) == 0
    assert "agree" in capsys.readouterr().out
