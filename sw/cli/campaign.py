"""``zatile campaign``: a random differential campaign across backends.
"""

from __future__ import annotations

from zatile.sw.cli.common import backend_list, count, positive_count, svl_list

__all__ = ["register"]


def _cmd_campaign(args) -> int:
    from zatile.sw.campaign import run_campaign  # local: keeps `zatile --help` fast

    report = run_campaign(programs=args.programs, svls=args.svl, length=args.length,
                          seed=args.seed, backends=args.backends)
    print(report.summary())
    return 0 if report.ok else 1


def register(commands) -> None:
    """Add the subcommand to ``commands`` (an argparse subparsers object)."""
    campaign = commands.add_parser("campaign", help="random differential campaign")
    campaign.add_argument("--programs", type=count, default=100, help="programs per SVL")
    campaign.add_argument("--svl", type=svl_list, default=[128, 256, 512])
    campaign.add_argument("--length", type=positive_count, default=40,
                          help="instructions per program")
    campaign.add_argument("--seed", type=count, default=1)
    campaign.add_argument("--backends", type=backend_list, default=["model", "qemu"])
    campaign.set_defaults(run=_cmd_campaign)
