"""``zatile campaign``: a random differential campaign across backends, on the cores of this
machine (an embedded Dask cluster) or on an existing Dask cluster (README, "Campaigns on a
cluster").
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from zatile.sw.cli.common import (
    CliError, add_command, backend_list, count, positive_count, print_json, svl_list,
)

__all__ = ["register"]


def _failures_folder(text: str) -> Path:
    """``--save-failures``: a folder to create (or an existing one); its parent must exist."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"'{text}' is a file, not a folder")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"cannot create '{text}': folder '{path.parent}' does "
                                         f"not exist")
    return path


def _progress_bar(total_programs: int):
    """A tqdm bar on stderr (programs done, their rate, mismatches so far) and the
    ``progress(done, total, mismatches)`` callback that moves it; the bar is disabled under
    ``ZATILE_QUIET=1``."""
    from tqdm import tqdm  # local: keeps `zatile --help` fast

    bar = tqdm(total=total_programs, unit="program", file=sys.stderr, leave=False,
               disable=_quiet())

    def progress(done: int, total: int, mismatches: int) -> None:
        bar.total = total
        bar.set_postfix(mismatches=mismatches, refresh=False)
        bar.update(done - bar.n)

    return bar, progress


def _quiet() -> bool:
    return os.environ.get("ZATILE_QUIET", "") not in ("", "0")


def _cluster(args):
    """The client the campaign runs on (a context manager), from ``--workers`` and
    ``--scheduler``: with neither and no Dask installed, the campaign runs in this process."""
    from zatile.sw import cluster  # local: keeps `zatile --help` fast

    if args.workers is None and args.scheduler is None and not cluster.dask_available():
        if not _quiet():
            print("campaign: running in this process (dask.distributed is not installed; "
                  "pip install 'zatile[cluster]' to use every core)", file=sys.stderr)
        return cluster.campaign_client(workers=0)
    return cluster.campaign_client(args.workers, args.scheduler)


def _spread(report) -> str:
    """How the work was spread, and the campaign's rate (not part of its result)."""
    spread = report.distribution
    rate = report.programs / spread.seconds if spread.seconds else 0.0
    timing = f"{spread.seconds:.1f} s ({rate:.2f} programs/s)"
    if not spread.workers:
        return f"ran in this process: {timing}"
    return (f"ran on {spread.workers} workers: {spread.chunks} tasks of up to "
            f"{spread.chunk_size} programs, {spread.resubmitted} programs resubmitted, {timing}")


def _cmd_campaign(args) -> int:
    from zatile.sw.campaign import (  # local: keeps `zatile --help` fast
        CampaignError, check_campaign, run_campaign,
    )
    from zatile.sw.cluster import ClusterError  # local: keeps `zatile --help` fast

    if args.save_failures:
        try:
            args.save_failures.mkdir(exist_ok=True)
        except OSError as error:
            raise CliError(f"cannot create '{args.save_failures}': {error.strerror}") from None
    try:
        check_campaign(args.programs, args.svl, args.length, args.backends)
    except ValueError as error:           # before a cluster is started for nothing
        raise CliError(str(error)) from None
    try:
        with _cluster(args) as client:
            bar, progress = _progress_bar(args.programs * len(args.svl))
            with bar:
                report = run_campaign(args.programs, args.svl, args.length, args.seed,
                                      args.backends, progress=progress,
                                      save_failures=args.save_failures, client=client,
                                      chunk_size=args.chunk)
    except (ValueError, ClusterError, CampaignError) as error:
        raise CliError(str(error)) from None    # argument checks and the cluster, one line
    if args.json:
        print_json(report.to_json_dict())
    else:
        print(report.summary())
        print(_spread(report))
        if args.save_failures and not report.ok:
            print(f"failing programs (program.s, state.npz, replay.sh) -> {args.save_failures}")
    return 0 if report.ok else 1


def register(commands) -> None:
    """Add the subcommand to ``commands`` (an argparse subparsers object)."""
    campaign = add_command(
        commands, "campaign", "random differential campaign",
        "zatile campaign --programs 100 --svl 128,256 --backends model,qemu "
        "--save-failures failures/")
    campaign.add_argument("--programs", type=count, default=100,
                          help="programs per SVL (default 100)")
    campaign.add_argument("--svl", type=svl_list, default=[128, 256, 512], metavar="BITS,...",
                          help="SVLs to run each program at (default 128,256,512)")
    campaign.add_argument("--length", type=positive_count, default=40,
                          help="instructions per program (default 40)")
    campaign.add_argument("--seed", type=count, default=1,
                          help="seed; a program is reproducible from (seed, SVL, index)")
    campaign.add_argument("--backends", type=backend_list, default=["model", "qemu"],
                          metavar="A,B[,...]", help="backends to compare (default model,qemu)")
    campaign.add_argument("--save-failures", type=_failures_folder, metavar="DIR",
                          help="write each failing program there with its snapshot and the "
                               "command that replays it")
    campaign.add_argument("--workers", type=count, metavar="N",
                          help="worker processes of the embedded Dask cluster (default: the "
                               "machine's cores; 0 runs in this process)")
    campaign.add_argument("--scheduler", metavar="ADDRESS",
                          help="run on an existing Dask cluster: its scheduler address "
                               "(tcp://host:8786) or scheduler file")
    campaign.add_argument("--chunk", type=positive_count, metavar="N",
                          help="programs per task (default: about four tasks per worker, one "
                               "with the RTL, at most 50)")
    campaign.add_argument("--json", action="store_true",
                          help="print the report as JSON (the merged result of every task)")
    campaign.set_defaults(run=_cmd_campaign)
