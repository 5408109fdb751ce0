"""Campaigns on a Dask cluster: a real LocalCluster of 2 worker processes on this machine.

The report must not depend on how the work is spread (workers, chunks, completion order, a
worker killed in the middle), and no program may be lost: one whose task kills every worker
that runs it is reported as a crash, with its replay files.
"""

import json
import os
import time

import pytest

from zatile.sw import campaign, cluster
from zatile.sw.campaign import Chunk, campaign_chunks, default_chunk_size, run_campaign
from zatile.sw.cli import main

distributed = pytest.importorskip("distributed", reason="zatile[cluster] is not installed")

#: The campaign of these tests: small, and meeting a known QEMU divergence (so the merged
#: divergence counts and explanations are compared too).
CAMPAIGN = {"programs": 12, "svls": [128, 256], "length": 16, "seed": 1,
            "backends": ["model", "qemu"]}


def _results(report) -> dict:
    """The report without ``distribution`` (how the work was spread)."""
    data = report.to_json_dict()
    data.pop("distribution")
    return data


@pytest.fixture(scope="module")
def here(qemu_module):
    """The campaign run in this process, program after program: the reference."""
    return _results(run_campaign(**CAMPAIGN))


@pytest.fixture(scope="module")
def qemu_module():
    from conftest import need_tool   # local: the fixture helper, module-scoped here

    need_tool("as"), need_tool("ld"), need_tool("qemu")


@pytest.fixture
def client():
    with cluster.campaign_client(workers=2) as running:
        yield running


def test_chunks_cover_every_program_once():
    chunks = campaign_chunks(7, [128, 512], 3)
    assert chunks == [Chunk(128, 0, 3), Chunk(128, 3, 6), Chunk(128, 6, 7),
                      Chunk(512, 0, 3), Chunk(512, 3, 6), Chunk(512, 6, 7)]
    assert [len(c) for c in chunks] == [3, 3, 1] * 2
    assert Chunk(128, 4, 9).name(5) == "seed=5 svl=128 program=4..8"
    assert default_chunk_size(1000, 2) == campaign.MAX_CHUNK
    assert default_chunk_size(24, 2) == 3 and default_chunk_size(3, 16) == 1
    assert default_chunk_size(80, 0) == 1 and default_chunk_size(80, 0, rtl=True) == 50
    assert default_chunk_size(7, 0, rtl=True) == 7 and default_chunk_size(30, 2, rtl=True) == 15
    with pytest.raises(ValueError, match="at least 1 program, not 0"):
        campaign_chunks(3, [128], 0)


def test_the_report_is_the_same_with_any_spread(here, client):
    assert here["mismatches"] == [] and here["divergences"], here
    for size in (1, 5, None):
        report = run_campaign(**CAMPAIGN, client=client, chunk_size=size)
        assert _results(report) == here, size
        assert report.distribution.workers == 2
    assert report.distribution.chunks == 8 and report.distribution.chunk_size == 3


def test_verdicts_merge_in_program_order_not_in_completion_order(client):
    """Planted mismatches, with the first programs' chunks finishing last: the mismatches are
    listed in program order, as in this process."""
    from tests.campaign_tasks import late_and_mismatching

    expected = run_campaign(**CAMPAIGN, task=late_and_mismatching)
    assert [m.split(": ")[0] for m in expected.mismatches] == [
        f"seed=1 svl={svl} program={index}" for svl in (128, 256) for index in (1, 4, 7, 10)]
    for size in (1, 2):
        report = run_campaign(**CAMPAIGN, client=client, chunk_size=size,
                              task=late_and_mismatching)
        assert _results(report) == _results(expected), size


def test_a_worker_killed_in_the_middle_loses_nothing(here, client):
    """The worker running a task is killed after the first chunk finished; the nanny restarts
    it and the scheduler runs its task elsewhere."""
    pids = client.run(os.getpid)
    killed = []

    def kill_a_busy_worker(done, total, mismatches):
        if killed:
            return
        for _ in range(200):
            busy = [address for address, keys in client.processing().items() if keys]
            if busy:
                os.kill(pids[busy[0]], 9)
                killed.append(pids[busy[0]])
                return
            time.sleep(0.01)

    report = run_campaign(**CAMPAIGN, client=client, chunk_size=2,
                          progress=kill_a_busy_worker)
    assert killed and killed[0] not in client.run(os.getpid).values()
    assert _results(report) == here


def test_a_program_that_kills_every_worker_is_a_crash_with_replay_files(here, client,
                                                                        tmp_path):
    from tests.campaign_tasks import DEADLY_PROGRAM, kills_its_worker

    report = run_campaign(**CAMPAIGN, client=client, chunk_size=4, task=kills_its_worker,
                          save_failures=tmp_path)
    deadly = [f"seed=1 svl={svl} program={DEADLY_PROGRAM}" for svl in CAMPAIGN["svls"]]
    assert [crash.split(": ")[0] for crash in report.crashes] == deadly
    assert all("KilledWorker" in crash for crash in report.crashes)
    assert not report.ok and "2 crashed" in report.summary().splitlines()[0]
    # Every program of the deadly chunks (and of any chunk that waited beside one on the
    # dying workers long enough) ran again, alone.
    assert report.distribution.resubmitted >= 8 and report.distribution.resubmitted % 4 == 0
    assert report.programs == 24 and report.mismatches == here["mismatches"]
    folders = sorted(p.name for p in tmp_path.iterdir())
    assert folders == [f"seed1-svl{svl}-p{DEADLY_PROGRAM}" for svl in CAMPAIGN["svls"]]
    assert (tmp_path / folders[0] / "replay.sh").exists()


def test_a_crashing_backend_is_reported_not_lost(monkeypatch, tmp_path):
    """A backend that raises (here a planted simulator failure on program 1) makes that
    program a crash; the campaign goes on."""
    from zatile.tb.runner import SimulationFailed

    real = campaign.compare

    def simulator_dies_on_program_1(text, initial, names, config, runs=None):
        if text == campaign.campaign_program(5, 128, 1, 6, names).text:
            raise SimulationFailed("the simulator exited with status -11\nlog: sim.log")
        return real(text, initial, names, config, runs=runs)

    monkeypatch.setattr(campaign, "compare", simulator_dies_on_program_1)
    report = run_campaign(3, [128], 6, 5, ["model", "model"], save_failures=tmp_path)
    assert report.crashes == ["seed=5 svl=128 program=1: SimulationFailed: the simulator "
                              "exited with status -11"]
    assert report.programs == 3 and not report.ok and report.mismatches == []
    assert "  CRASH seed=5 svl=128 program=1" in report.summary()
    assert report.saved == [str(tmp_path / "seed5-svl128-p1")]


def test_a_broken_worker_stops_the_campaign_with_one_clear_error(client):
    from tests.campaign_tasks import cannot_import

    with pytest.raises(campaign.CampaignError,
                       match=r"\(seed=1 svl=\d+ program=\d+\.\.\d+\) failed on its worker: "
                             r"ModuleNotFoundError: No module named 'zatile' \(planted\)"):
        run_campaign(**CAMPAIGN, client=client, chunk_size=6, task=cannot_import)


def test_cli_on_an_existing_cluster_by_address_and_by_scheduler_file(here, tmp_path, capsys):
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as running:
        scheduler_file = tmp_path / "scheduler.json"
        scheduler_file.write_text(json.dumps({"address": running.scheduler_address}))
        for scheduler in (running.scheduler_address, str(scheduler_file)):
            arguments = ["campaign", "--programs", "12", "--svl", "128,256", "--length", "16",
                         "--seed", "1", "--scheduler", scheduler, "--chunk", "4", "--json"]
            assert main(arguments) == 0
            printed = json.loads(capsys.readouterr().out)
            spread = printed.pop("distribution")
            assert spread.pop("seconds") > 0
            assert spread == {"workers": 2, "chunks": 6, "chunk_size": 4, "resubmitted": 0}
            assert printed == here
        assert main(arguments[:-1]) == 0           # as text: the summary, then the spread
        printed = capsys.readouterr().out.splitlines()
        assert printed[0].startswith("campaign model,qemu: 24 programs (SVL 128: 12, SVL 256: "
                                     "12), 384 instructions")
        assert printed[-1].startswith("ran on 2 workers: 6 tasks of up to 4 programs, "
                                      "0 programs resubmitted, ")


@pytest.mark.parametrize("arguments, message", [
    (["--workers", "2", "--scheduler", "tcp://127.0.0.1:9"], "an existing one, not both"),
    (["--workers", "-1"], "must not be negative, not -1"),
    (["--chunk", "0"], "must be at least 1, not 0"),
    (["--scheduler", "tcp://127.0.0.1:9"], "cannot reach the Dask scheduler at "
                                            "'tcp://127.0.0.1:9'"),
])
def test_cli_cluster_options_are_checked_in_one_line(arguments, message, monkeypatch, capsys):
    monkeypatch.setattr(cluster, "CONNECT_SECONDS", 2)
    try:
        status = main(["campaign", "--programs", "1", "--svl", "128", *arguments])
    except SystemExit as exit_:          # argparse's own errors exit from inside main
        status = exit_.code
    assert status == 2
    error = capsys.readouterr().err
    assert error.startswith("zatile: error: ") and error.count("\n") == 1 and message in error


def test_an_rtl_campaign_on_workers_matches_one_in_this_process(client):
    """Model against the Verilated engine on 2 workers, from the shared build cache (a lock
    makes the workers wait for one build when it is not there yet)."""
    arguments = {"programs": 4, "svls": [128], "length": 12, "seed": 4,
                 "backends": ["model", "rtl"]}
    on_workers = run_campaign(**arguments, client=client, chunk_size=1)
    assert on_workers.ok and on_workers.programs == 4 and on_workers.instructions == 48
    assert _results(on_workers) == _results(run_campaign(**arguments))


def test_a_failing_rtl_batch_is_run_again_program_by_program(monkeypatch, tmp_path):
    """A chunk's RTL programs share one simulation; when it fails, each runs alone, so only the
    program that makes the simulator fail is a crash (the model stands in for the RTL here)."""
    from zatile.sw import backends
    from zatile.tb.runner import SimulationFailed

    real = backends.run_program
    deadly = campaign.campaign_program(2, 128, 1, 8, ["model", "rtl"]).text
    batches = []

    def one_at_a_time(backend, source, initial, config=None, *, qemu_quirks=False):
        if backend == "rtl" and source == deadly:
            raise SimulationFailed("the simulator died")
        return real("model" if backend == "rtl" else backend, source, initial, config,
                    qemu_quirks=qemu_quirks)

    def batch(backend, programs, config):
        batches.append(len(programs))
        raise SimulationFailed("the simulator died")

    monkeypatch.setattr(backends, "run_program", one_at_a_time)
    monkeypatch.setattr(backends, "run_programs", batch)
    report = run_campaign(4, [128], 8, 2, ["model", "rtl"], save_failures=tmp_path)
    assert batches == [4]
    assert report.crashes == ["seed=2 svl=128 program=1: SimulationFailed: the simulator died"]
    assert report.programs == 4 and report.mismatches == []
    assert report.saved == [str(tmp_path / "seed2-svl128-p1")]
