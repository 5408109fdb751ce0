"""Pause generators: how many idle cycles a bus agent inserts before each handshake.

Every driver and responder in :mod:`tb` takes one of these (an infinite iterator of
non-negative integers) per handshake it owns. Before offering a transfer (a source raising
``valid``) or accepting one (a sink raising ``ready``) the agent draws the next number and holds
the signal low for that many clock cycles; zero means "immediately, back to back". Random
idle on ``valid`` and random backpressure on ``ready`` therefore come from the same object.
"""

from __future__ import annotations

import itertools
import random
from typing import Iterator

__all__ = ["PauseGenerator", "no_pauses", "random_pauses", "bursty_pauses", "pauses_by_name",
           "per_cycle", "PAUSE_STYLES"]

PauseGenerator = Iterator[int]

#: Names accepted by :func:`pauses_by_name` (test parameters and environment variables use them).
PAUSE_STYLES = ("none", "light", "heavy", "bursty")


def no_pauses() -> PauseGenerator:
    """Never idle: every handshake is offered or accepted at once."""
    return itertools.repeat(0)


def random_pauses(rng: random.Random, probability: float = 0.25,
                  longest: int = 3) -> PauseGenerator:
    """With ``probability`` pause 1..``longest`` cycles before a handshake, otherwise none.

    Raises
    ------
    ValueError
        If ``probability`` is outside [0, 1] or ``longest`` is below 1.
    """
    if not 0.0 <= probability <= 1.0:
        raise ValueError(f"pause probability must be between 0 and 1, not {probability!r}")
    if longest < 1:
        raise ValueError(f"longest pause must be at least 1 cycle, not {longest!r}")
    while True:
        yield rng.randint(1, longest) if rng.random() < probability else 0


def bursty_pauses(rng: random.Random, burst: int = 8, gap: int = 12) -> PauseGenerator:
    """Runs of up to ``burst`` back-to-back handshakes separated by stalls of up to ``gap``.

    Long stalls in the middle of a multi-beat transfer are what find FIFO and counter bugs that
    short random pauses miss.
    """
    while True:
        for _ in range(rng.randint(1, burst)):
            yield 0
        yield rng.randint(1, gap)


def pauses_by_name(style: str, rng: random.Random) -> PauseGenerator:
    """The generator a style name (one of :data:`PAUSE_STYLES`) stands for.

    Raises
    ------
    ValueError
        For an unknown style name.
    """
    if style == "none":
        return no_pauses()
    if style == "light":
        return random_pauses(rng, 0.2, 2)
    if style == "heavy":
        return random_pauses(rng, 0.6, 5)
    if style == "bursty":
        return bursty_pauses(rng)
    raise ValueError(f"unknown pause style {style!r}; choose from {', '.join(PAUSE_STYLES)}")


def per_cycle(pauses: PauseGenerator) -> Iterator[bool]:
    """``pauses`` as the per-cycle flags cocotbext-axi channels take (``set_pause_generator``):
    for each number drawn, that many paused cycles, then one cycle free to hand shake."""
    for idle in pauses:
        yield from itertools.repeat(True, idle)
        yield False
