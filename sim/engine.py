"""The reference model behind the :class:`~zatile.sw.arch.engine.Engine` interface."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from zatile.sim.model import ReferenceModel
from zatile.sim.state import ArchState, Memory
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.constants import MASK64, SVCR_ZA
from zatile.sw.arch.engine import Engine, Result
from zatile.sw.arch.isa import sources_of

__all__ = ["ModelEngine"]


class ModelEngine(Engine):
    """The reference model as an engine, in-process.

    Parameters
    ----------
    config : EngineConfig
        What the engine implements.
    memory : Memory, optional
        What the memory port is connected to (the kernel model passes its
        :class:`~sw.abi.mm.SystemBus`); a fresh empty memory by default.

    Notes
    -----
    The engine comes out of reset with SME access disabled and SMCR.LEN selecting the
    smallest supported SVL; whoever drives it enables it. The ZA contexts not selected are
    parked here (their ZA array and PSTATE.ZA); the model's state holds the selected one.
    """

    def __init__(self, config: EngineConfig, memory: Memory | None = None):
        super().__init__(config)
        state = ArchState(svl=config.min_svl, memory=memory if memory is not None else Memory())
        self._model = ReferenceModel(config, state, sme_enabled=False)
        self._smcr_len = config.min_svl // 128 - 1
        #: Per context not selected: its ZA (None: zero at the current SVL) and PSTATE.ZA.
        self._parked: list[tuple[np.ndarray | None, bool]] = [(None, False)] * config.za_contexts

    def issue(self, word: int, operands: Sequence[int] = ()) -> Result:
        sources = sources_of(word)
        if len(operands) != len(sources):
            raise ValueError(f"instruction 0x{word:08x} reads {len(sources)} register(s), "
                             f"not {len(operands)}")
        state = self._model.state
        for register, value in zip(sources, operands):
            if register.is_zero:
                continue
            if register.is_sp:
                state.sp = value & MASK64
            else:
                state.x[register.number] = value & MASK64
        try:
            return self._model.execute(word)
        finally:
            # The model's register file only carries this one instruction's operands.
            state.x[:] = 0
            state.sp = 0

    @property
    def sme_enabled(self) -> bool:
        return self._model.sme_enabled

    @sme_enabled.setter
    def sme_enabled(self, enabled: bool) -> None:
        self._model.sme_enabled = bool(enabled)

    @property
    def smcr_len(self) -> int:
        return self._smcr_len

    @smcr_len.setter
    def smcr_len(self, length: int) -> None:
        svl = self._config.effective_svl_for_len(length)
        self._smcr_len = length
        if svl != self.svl:                 # every context's ZA is zeroed, PSTATE.ZA kept
            self._parked = [(None, za_on) for _, za_on in self._parked]
        self._model.set_svl(svl)

    def _select_za_context(self, context: int) -> None:
        state = self._model.state
        self._parked[self._za_context] = (state.za, bool(state.svcr & SVCR_ZA))
        za, za_on = self._parked[context]
        state.za = np.zeros_like(state.za) if za is None else za
        state.svcr = state.svcr & ~SVCR_ZA | (SVCR_ZA if za_on else 0)
        self._parked[context] = (None, False)

    @property
    def svl(self) -> int:
        return self._model.state.svl

    @property
    def fpcr(self) -> int:
        return self._model.state.fpcr

    @fpcr.setter
    def fpcr(self, value: int) -> None:
        self._model.state.fpcr = value & 0xFFFFFFFF

    @property
    def fpsr(self) -> int:
        return self._model.state.fpsr

    @fpsr.setter
    def fpsr(self, value: int) -> None:
        self._model.state.fpsr = value & 0xFFFFFFFF

    @property
    def svcr(self) -> int:
        return self._model.state.svcr

    def read_memory(self, address: int, length: int) -> bytes:
        return bytes(self._model.state.memory.read(address, length))

    def write_memory(self, address: int, data: bytes) -> None:
        self._model.state.memory.write(address, data)
