"""Where an engine instruction will touch memory, before it runs: what lets a CPU run ahead.

A CPU that streams an instruction to the engine without waiting for its result (docs/
architecture.md, "The host runs ahead") must know that it cannot fault, as a real core knows by
translating the instruction's addresses before it sends it to the matrix unit.
:class:`FootprintProbe` finds the bytes an instruction may access by executing it on the
reference model with **every predicate element active** and a memory that records each access
and never faults: the addressing rules are the model's own, and predication only removes
elements, so the spans found cover every access the real instruction can make. Addresses never
depend on Z or ZA contents (the streaming subset has no gathers or scatters).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from zatile.sim.model import ReferenceModel
from zatile.sim.state import ArchState, Memory
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.constants import MASK64, SVCR_SM, SVCR_ZA
from zatile.sw.arch.engine import Status
from zatile.sw.arch.isa import sources_of

__all__ = ["FootprintProbe", "Span"]

#: One access: (first byte, length in bytes, whether it writes).
Span = tuple[int, int, bool]


class _RecordingMemory(Memory):
    """Every address range the model checks (it checks each access before it makes it);
    reads return zeros; nothing faults."""

    def __init__(self):
        super().__init__()
        self.spans: list[Span] = []

    def check(self, address: int, length: int, write: bool = False) -> None:
        if length:
            self.spans.append((address & MASK64, length, write))

    def read(self, address: int, length: int) -> np.ndarray:
        return np.zeros(length, np.uint8)          # the model checks every read first

    def write(self, address: int, payload) -> None:
        pass                                       # ... and every write


class FootprintProbe:
    """The memory an instruction of the table may access, found on a private reference model.

    Parameters
    ----------
    config : EngineConfig
        The engine's configuration (the probe runs at any of its SVLs).
    """

    def __init__(self, config: EngineConfig):
        self._memory = _RecordingMemory()
        state = ArchState(svl=config.min_svl, memory=self._memory)
        self._model = ReferenceModel(config, state)

    def spans(self, word: int, operands: Sequence[int], svl: int) -> list[Span]:
        """The accesses ``word`` makes with general-register ``operands`` (in
        :func:`~zatile.sw.arch.isa.scalar_sources` order) at ``svl`` bits, with every element
        active: empty for an instruction that does not access memory.

        Raises
        ------
        ValueError
            If ``word`` is outside the table or the configuration, or ``svl`` is not one of its
            SVLs.
        """
        model, state = self._model, self._model.state
        if state.svl != svl:
            model.set_svl(svl)
        state.svcr = SVCR_SM | SVCR_ZA
        state.p[...] = 0xFF
        for register, value in zip(sources_of(word), operands):
            if register.is_sp:
                state.sp = value & MASK64
            elif not register.is_zero:
                state.x[register.number] = value & MASK64
        self._memory.spans = []
        result = model.execute(word)
        if result.status is not Status.OK:
            raise ValueError(f"0x{word:08x} does not execute on this configuration "
                             f"({result.status.value})")
        return self._memory.spans
