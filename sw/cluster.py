"""The Dask cluster a campaign runs on: one embedded in this process, or one already running.

``dask.distributed`` is an optional dependency (``pip install 'zatile[cluster]'``). Without it,
and when no cluster is asked for, a campaign runs in this process as it always did. The README
("Campaigns on a cluster") says how to start workers on a Slurm or LSF farm with
``dask-jobqueue``.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import Iterator

__all__ = ["ClusterError", "dask_available", "default_workers", "campaign_client"]

#: How long to wait for an existing scheduler to answer.
CONNECT_SECONDS = 20


class ClusterError(RuntimeError):
    """No cluster could be had: Dask is missing, or the scheduler did not answer."""


def dask_available() -> bool:
    """Whether ``dask.distributed`` can be imported."""
    try:
        import distributed  # noqa: F401  local: an optional dependency, only probed
    except ImportError:
        return False
    return True


def default_workers() -> int:
    """Worker processes of the embedded cluster by default: one per core this process may
    use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


@contextlib.contextmanager
def campaign_client(workers: int | None = None,
                    scheduler: str | None = None) -> Iterator[object | None]:
    """A ``dask.distributed.Client`` for a campaign, closed (with its cluster) on exit.

    Parameters
    ----------
    workers : int, optional
        Worker processes of an embedded ``LocalCluster`` (one thread each: the model and the
        simulators hold the GIL); 0 yields ``None``, the campaign then runs in this process.
        Default :func:`default_workers`.
    scheduler : str, optional
        An existing cluster instead: a scheduler address (``tcp://host:8786``) or the path of a
        scheduler file (``dask scheduler --scheduler-file``, as batch jobs write them).

    Raises
    ------
    ValueError
        For both ``workers`` and ``scheduler``, or a negative ``workers``.
    ClusterError
        When ``dask.distributed`` is not installed or the scheduler does not answer.
    """
    if workers is not None and scheduler is not None:
        raise ValueError("give a number of workers for an embedded cluster or the scheduler "
                         "of an existing one, not both")
    if workers is not None and workers < 0:
        raise ValueError(f"the number of workers must be 0 or more, not {workers}")
    if workers == 0:
        yield None
        return
    try:
        from distributed import Client, LocalCluster  # local: an optional dependency
    except ImportError:
        raise ClusterError("running on a Dask cluster needs dask.distributed: "
                           "pip install 'zatile[cluster]'") from None
    if scheduler is not None:
        target = ({"scheduler_file": scheduler} if Path(scheduler).is_file()
                  else {"address": scheduler})
        try:
            client = Client(**target, timeout=CONNECT_SECONDS)
        except (OSError, TimeoutError, ValueError) as error:
            raise ClusterError(f"cannot reach the Dask scheduler at '{scheduler}': "
                               f"{error}") from None
        with client:
            yield client
        return
    # The scheduler's HTTP server on a free port: several campaigns may run on one machine.
    with LocalCluster(n_workers=workers or default_workers(), threads_per_worker=1,
                      processes=True, dashboard_address=":0",
                      silence_logs=logging.CRITICAL) as cluster, Client(cluster) as client:
        yield client
