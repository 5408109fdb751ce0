"""``zatile campaign``: a random differential campaign across backends.
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
    """A tqdm bar on stderr and the ``progress(done, total)`` callback that moves it; the bar is
    disabled under ``ZATILE_QUIET=1``."""
    from tqdm import tqdm  # local: keeps `zatile --help` fast

    bar = tqdm(total=total_programs, unit="program", file=sys.stderr, leave=False,
               disable=os.environ.get("ZATILE_QUIET", "") not in ("", "0"))

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    return bar, progress


def _cmd_campaign(args) -> int:
    from zatile.sw.campaign import run_campaign  # local: keeps `zatile --help` fast

    if args.save_failures:
        try:
            args.save_failures.mkdir(exist_ok=True)
        except OSError as error:
            raise CliError(f"cannot create '{args.save_failures}': {error.strerror}") from None
    bar, progress = _progress_bar(args.programs * len(args.svl))
    try:
        with bar:
            report = run_campaign(args.programs, args.svl, args.length, args.seed, args.backends,
                                  progress=progress, save_failures=args.save_failures)
    except ValueError as error:           # the campaign's own argument checks, in user terms
        raise CliError(str(error)) from None
    if args.json:
        print_json(report.to_json_dict())
    else:
        print(report.summary())
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
    campaign.add_argument("--json", action="store_true", help="print the report as JSON")
    campaign.set_defaults(run=_cmd_campaign)
