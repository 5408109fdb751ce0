"""An engine that runs streamed instructions as late as it may: the run-ahead checker.

:class:`DeferredEngine` is the reference model behind the run-ahead interface
(:meth:`~zatile.sw.arch.engine.Engine.stream`): a streamed instruction is only queued, and the
queue runs when the CPU drains it or issues an instruction it waits for. Any ordering the host
CPU gets wrong — a load of memory an engine store has not written yet, a store over memory an
engine load has not read yet, FPSR read before the streamed exception bits are in — shows as a
wrong value, where an engine that finished early would hide it.
"""

from __future__ import annotations

from typing import Sequence

from zatile.sim.engine import ModelEngine
from zatile.sw.arch.engine import Result


class DeferredEngine(ModelEngine):
    """:class:`~zatile.sim.engine.ModelEngine` whose streamed instructions wait in a queue."""

    def __init__(self, config, memory=None):
        super().__init__(config, memory)
        self.queued: list[tuple[int, tuple[int, ...]]] = []
        self.most_queued = 0

    @property
    def streams(self) -> bool:
        return True

    def stream(self, word: int, operands: Sequence[int] = ()) -> None:
        self.queued.append((word, tuple(operands)))
        self.most_queued = max(self.most_queued, len(self.queued))

    def _run_queued(self) -> None:
        queued, self.queued = self.queued, []
        for word, operands in queued:
            super().stream(word, operands)

    def drain(self) -> int:
        self._run_queued()
        return super().drain()

    def issue(self, word: int, operands: Sequence[int] = ()) -> Result:
        self._run_queued()
        return super().issue(word, operands)
