"""Campaign tasks with planted failures, for the workers of tests/test_campaign_cluster.py (a
module of their own: workers import a task by its module and name)."""

import dataclasses
import os
import time

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


def late_and_mismatching(seed: int, chunk: Chunk, *arguments):
    """:func:`~zatile.sw.campaign.run_chunk` with a planted mismatch on every third program,
    and the chunks of the first programs finishing last (so that a report merged in completion
    order would show it)."""
    verdicts = run_chunk(seed, chunk, *arguments)
    time.sleep(0.4 if chunk.start < 4 else 0.0)
    return [dataclasses.replace(verdict, mismatch=f"planted on {verdict.index}")
            if verdict.index % 3 == 1 else verdict for verdict in verdicts]
