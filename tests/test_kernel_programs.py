"""Compiled programs as processes of the kernel model (sw/abi/host_tasks.py): preemption.

``tests/test_real_programs.py`` runs the signal, thread and fork programs against QEMU with the
default time slice. Here the slices are short and random (``Kernel.run(rng=...)``), so threads
and processes are preempted at arbitrary host instructions, in the middle of the C library's
locks and of their SME work, and the kernel's lazy ZA switching is exercised hundreds of times:

* the programs still print exactly what Linux (and QEMU) print, every kernel save area is
  freed at the end, and the figures show the switching happened;
* the programs' own checks catch a kernel that restores ZA wrongly (a planted bug: the restore
  sequence skips one row of ZA) — the check is shown to catch;
* ``zatile exec --quantum`` and ``--stats`` report the kernel's figures.
"""

from __future__ import annotations

import io
import json
import random

import pytest

from tests.test_real_programs import FORK_OUTPUT, THREADS_OUTPUT, build
from zatile.sw.abi import engine_context
from zatile.sw.abi.elf_process import load_elf_image
from zatile.sw.abi.kernel import Kernel
from zatile.sw.arch.config import EngineConfig
from zatile.sw.cli import main


def run_preempted(name: str, svl: int, quantum: int, seed: int):
    """(process, stdout, kernel) after running ``name`` with random slices of 1..quantum host
    instructions and a random choice of the next thread."""
    program = build(name)
    kernel = Kernel(EngineConfig(max_svl=svl), host_quantum=quantum)
    kernel.sme_default_vl = svl // 8
    stdout = io.BytesIO()
    process = kernel.spawn_elf(load_elf_image(program), [str(program)], stdout=stdout,
                               stderr=io.BytesIO())
    rng = random.Random(seed)
    while kernel.run(max_steps=1 << 40, quantum=8, rng=rng):
        pass
    return process, stdout.getvalue(), kernel


@pytest.mark.parametrize("name, output", [("threads_za", THREADS_OUTPUT),
                                          ("fork_za", FORK_OUTPUT)])
@pytest.mark.parametrize("svl", [128, 512])
def test_programs_survive_random_preemption(name, output, svl):
    process, stdout, kernel = run_preempted(name, svl, quantum=3000, seed=svl)
    assert (process.exit_code, stdout) == (0, output)
    stats = kernel.stats
    assert stats.preemptions > 100 and stats.context_switches > 100, stats
    assert stats.za_bytes_saved >= 2 * (svl // 8) ** 2, stats
    assert stats.za_bytes_restored >= 2 * (svl // 8) ** 2, stats
    assert kernel.heap.blocks_in_use == 0          # every thread's save areas were freed


def test_a_wrong_za_restore_is_caught_by_the_programs(monkeypatch):
    """Plant a kernel bug: the lazy restore skips the LDR of ZA's first array vector (row 0 of
    ZA0.S, which the programs fill), leaving the previous holder's row there. The threads then
    see each other's row, and the program says so."""
    kissue = engine_context.EngineContextMixin._kissue
    skipped = []

    def skip_last_row(self, word, **operands):
        if word == engine_context._LDR_ZA and operands["rv"] == 0:
            skipped.append(self.current.tid)
            return None
        return kissue(self, word, **operands)

    monkeypatch.setattr(engine_context.EngineContextMixin, "_kissue", skip_last_row)
    _, stdout, _ = run_preempted("threads_za", 128, quantum=3000, seed=1)
    assert skipped, "the restore sequence never ran"
    assert b"ZA lost" in stdout


def test_exec_quantum_and_kernel_stats(tmp_path, capfd):
    figures = tmp_path / "stats.json"
    assert main(["exec", str(build("fork_za")), "--svl", "256", "--quantum", "2000", "--stats",
                 "--stats-json", str(figures)]) == 0
    captured = capfd.readouterr()
    assert captured.out == FORK_OUTPUT.decode()
    assert "context switches" in captured.err and "bytes of ZA saved" in captured.err
    stats = json.loads(figures.read_text())
    assert stats["preemptions"] > 10 and stats["context_switches"] > 10
    assert stats["za_bytes_saved"] > 0 and stats["signals_delivered"] == 0


def test_exec_rejects_a_bad_quantum(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["exec", str(build("hello")), "--quantum", "0"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == "zatile: error: argument --quantum: must be at least 1, " \
                                      "not 0\n"
