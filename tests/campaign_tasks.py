"""Campaign tasks with planted failures, for the workers of tests/test_campaign_cluster.py (a
module of their own: workers import a task by its module and name)."""

import os

from zatile.sw.campaign import Chunk, run_chunk

#: The program whose task kills the worker running it.
DEADLY_PROGRAM = 3


def kills_its_worker(seed: int, chunk: Chunk, *arguments):
    """:func:`~zatile.sw.campaign.run_chunk`, except that a chunk holding
    :data:`DEADLY_PROGRAM` ends its worker's process at once, as a simulator that takes its
    process down would."""
    if chunk.start <= DEADLY_PROGRAM < chunk.stop:
        os._exit(70)
    return run_chunk(seed, chunk, *arguments)


def cannot_import(seed: int, chunk: Chunk, *arguments):
    """A task whose worker lacks something every task needs."""
    raise ModuleNotFoundError("No module named 'zatile' (planted)")
