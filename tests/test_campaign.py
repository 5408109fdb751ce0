"""Differential campaign: random programs, model against QEMU 10, zero unexplained mismatches."""

import pytest

from zatile.sw.campaign import run_campaign


@pytest.mark.parametrize("svl", [128, 256, 512])
def test_bounded_campaign_against_qemu(qemu, svl):
    report = run_campaign(programs=100, svls=[svl], length=30, seed=2026,
                          backends=["model", "qemu"])
    print(report.summary())
    assert report.programs == 100
    assert report.ok, report.summary()


@pytest.mark.soak
@pytest.mark.parametrize("svl", [128, 256, 512, 1024, 2048])
def test_long_campaign_against_qemu(qemu, svl):
    report = run_campaign(programs=1000, svls=[svl], length=60, seed=7, backends=["model", "qemu"])
    assert report.ok, report.summary()
