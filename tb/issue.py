"""The engine's instruction port: issue driver, result monitor, and the CPU's scalar registers.

The engine never holds general registers (hw.engine): the host resolves every general-register
operand an instruction reads (in :func:`sw.isa.scalar_sources` order) into ``src0..src2`` and
writes ``result.scalar`` back to :func:`sw.isa.scalar_destination`. :class:`ScalarFile` is that
host side; :class:`IssueDriver` and :class:`ResultMonitor` move whole instructions and results
across the two stream ports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from sim.state import FPSR_RESET_ON_SM_CHANGE
from sw.isa import ScalarRegister, decode, scalar_destination, scalar_sources
from tb.pauses import PauseGenerator
from tb.stream import StreamSink, StreamSource

__all__ = ["ISSUE_FIELDS", "RESULT_FIELDS", "STATUS_NAMES", "RtlResult", "ScalarFile",
           "IssueDriver", "ResultMonitor", "sources_for"]

MASK64 = (1 << 64) - 1

#: ``issue`` payload (hw.engine.IssueLayout), LSB first.
ISSUE_FIELDS = {"word": 32, "src0": 64, "src1": 64, "src2": 64}
#: ``result`` payload (hw.engine.ResultLayout), LSB first.
RESULT_FIELDS = {"status": 2, "smtc": 3, "scalar": 64, "fault_address": 64, "fpsr_reset": 1}
#: ``result.status`` encoding: names match ``sim.model.Status`` member names.
STATUS_NAMES = ("OK", "UNDEF", "SME_TRAP", "FAULT")


@dataclass(frozen=True)
class RtlResult:
    """One ``result`` transfer, decoded."""

    status: str
    smtc: int
    scalar: int
    fault_address: int
    fpsr_reset: bool

    @classmethod
    def from_payload(cls, payload: Mapping[str, int]) -> "RtlResult":
        return cls(STATUS_NAMES[payload["status"]], payload["smtc"], payload["scalar"],
                   payload["fault_address"], bool(payload["fpsr_reset"]))

    def describe(self) -> str:
        if self.status == "SME_TRAP":
            return f"SME_TRAP (SMTC {self.smtc})"
        if self.status == "FAULT":
            return f"FAULT at 0x{self.fault_address:x}"
        return self.status


def _operand(register: ScalarRegister, x: np.ndarray, sp: int) -> int:
    if register.is_zero:
        return 0
    value = sp if register.is_sp else int(x[register.number])
    return value & ((1 << register.width) - 1)


def sources_for(word: int, values: Mapping[str, int]) -> tuple[int, int, int]:
    """``src0..src2`` of ``word`` from values given per operand field (``{"rn": addr}``)."""
    decoded = decode(word)
    sources = [0, 0, 0]
    for slot, register in enumerate(scalar_sources(decoded) if decoded else ()):
        sources[slot] = values.get(register.field, 0) & ((1 << register.width) - 1)
    return tuple(sources)


class ScalarFile:
    """The CPU side of the issue port: X0-X30, SP and FPSR.

    Parameters
    ----------
    x : array-like of 31 ints
    sp, fpsr : int
    """

    def __init__(self, x, sp: int, fpsr: int):
        self.x = np.array(x, np.uint64).copy()
        self.sp = int(sp)
        self.fpsr = int(fpsr)

    def sources(self, word: int) -> tuple[int, int, int]:
        """``src0..src2`` for ``word`` (zeros for a word outside the subset)."""
        decoded = decode(word)
        sources = [0, 0, 0]
        for slot, register in enumerate(scalar_sources(decoded) if decoded else ()):
            sources[slot] = _operand(register, self.x, self.sp)
        return tuple(sources)

    def reads(self, word: int) -> set[str]:
        """Names (``x5``, ``sp``) of the registers ``word`` reads (for issue hazards)."""
        decoded = decode(word)
        return {self._name(r) for r in (scalar_sources(decoded) if decoded else ())
                if not r.is_zero}

    def writes(self, word: int) -> str | None:
        """Name of the register ``word`` writes, if any."""
        decoded = decode(word)
        register = scalar_destination(decoded) if decoded else None
        return None if register is None or register.is_zero else self._name(register)

    @staticmethod
    def _name(register: ScalarRegister) -> str:
        return "sp" if register.is_sp else f"x{register.number}"

    def retire(self, word: int, result: RtlResult) -> None:
        """Apply a result: scalar write-back and the FPSR reset of an SM change."""
        if result.status != "OK":
            return
        decoded = decode(word)
        register = scalar_destination(decoded) if decoded else None
        if register is not None and not register.is_zero:
            if register.is_sp:
                self.sp = result.scalar & MASK64
            else:
                self.x[register.number] = np.uint64(result.scalar & MASK64)
        if result.fpsr_reset:
            self.fpsr = FPSR_RESET_ON_SM_CHANGE


class IssueDriver:
    """Drives ``issue``: one instruction word with its resolved operands per transfer."""

    def __init__(self, dut, clock, pauses: PauseGenerator | None = None):
        self.source = StreamSource(dut, clock, "issue", ISSUE_FIELDS, pauses)

    def issue_nowait(self, word: int, sources: tuple[int, int, int],
                     on_accept: Callable[[], None] | None = None) -> None:
        src0, src1, src2 = sources
        self.source.send_nowait({"word": word, "src0": src0, "src1": src1, "src2": src2},
                                on_accept)

    async def wait_idle(self) -> None:
        await self.source.wait_idle()

    @property
    def issued(self) -> int:
        return self.source.transfers


class ResultMonitor:
    """Accepts ``result`` transfers and hands each :class:`RtlResult` to the callbacks."""

    def __init__(self, dut, clock, pauses: PauseGenerator | None = None):
        self.callbacks: list[Callable[[RtlResult], None]] = []
        self.sink = StreamSink(dut, clock, "result", RESULT_FIELDS, self._received, pauses)

    def _received(self, payload: Mapping[str, int]) -> None:
        result = RtlResult.from_payload(payload)
        for callback in self.callbacks:
            callback(result)

    @property
    def received(self) -> int:
        return self.sink.transfers
