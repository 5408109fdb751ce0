"""The engine's instruction port: issue driver, result monitor, and the CPU's scalar registers.

The engine never holds general registers (:mod:`zatile.hw.engine`): the host resolves every
general-register operand an instruction reads (:func:`zatile.sw.arch.isa.read_operands`) into
``src0..src2`` and writes ``result.scalar`` back (:func:`zatile.sw.arch.isa.write_result`). :class:`ScalarFile` is that
host side; :class:`IssueDriver` and :class:`ResultMonitor` move whole instructions and results
across the two stream ports.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from zatile.hw.engine import IssueLayout, IssuePortLayout, ResultLayout, ResultPortLayout
from zatile.hw.state_control import Status
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.constants import FPSR_RESET_ON_SM_CHANGE
from zatile.sw.arch.isa import destination_of, read_operands, sources_of, write_result
from zatile.tb.pauses import PauseGenerator
from zatile.tb.stream import (StreamSink, StreamSource, layout_fields, pack_fields,
                             unpack_fields)

__all__ = ["ISSUE_FIELDS", "RESULT_FIELDS", "SOURCE_SLOTS", "STATUS_NAMES",
           "RtlResult", "ScalarFile", "IssueDriver", "ResultMonitor", "pad_sources",
           "issue_payload", "results_of"]

#: One instruction of the ``issue`` payload (:data:`zatile.hw.engine.IssueLayout`), LSB first.
ISSUE_FIELDS = layout_fields(IssueLayout)
#: One result of the ``result`` payload (:data:`zatile.hw.engine.ResultLayout`), LSB first.
RESULT_FIELDS = layout_fields(ResultLayout)
#: Operand slots of the issue port (``src0``, ``src1``, ...).
SOURCE_SLOTS = tuple(name for name in ISSUE_FIELDS if name.startswith("src"))
#: ``result.status`` encoding: the member names of :class:`zatile.sw.arch.engine.Status`.
STATUS_NAMES = tuple(member.name for member in Status)


@dataclass(frozen=True)
class RtlResult:
    """One ``result`` transfer, decoded."""

    status: str
    smtc: int
    scalar: int
    fault_address: int
    fpsr_reset: bool
    nzcv: int = 0
    sets_flags: bool = False
    fpsr_flags: int = 0

    @classmethod
    def from_payload(cls, payload: Mapping[str, int]) -> "RtlResult":
        return cls(STATUS_NAMES[payload["status"]], payload["smtc"], payload["scalar"],
                   payload["fault_address"], bool(payload["fpsr_reset"]), payload["nzcv"],
                   bool(payload["sets_flags"]), payload["fpsr_flags"])

    def describe(self) -> str:
        if self.status == "SME_TRAP":
            return f"SME_TRAP (SMTC {self.smtc})"
        if self.status == "FAULT":
            return f"FAULT at 0x{self.fault_address:x}"
        return self.status


def pad_sources(values: tuple[int, ...]) -> tuple[int, ...]:
    """Operand values in issue-slot order, the unused slots zero."""
    if len(values) > len(SOURCE_SLOTS):
        raise ValueError(f"{len(values)} operands for {len(SOURCE_SLOTS)} issue slots")
    return tuple(values) + (0,) * (len(SOURCE_SLOTS) - len(values))


class ScalarFile:
    """The CPU side of the issue port: X0-X30, SP, FPSR and NZCV.

    Parameters
    ----------
    x : array-like of 31 ints
    sp, fpsr, nzcv : int
    """

    def __init__(self, x, sp: int, fpsr: int, nzcv: int = 0):
        self.x = np.array(x, np.uint64).copy()
        self.sp = int(sp)
        self.fpsr = int(fpsr)
        self.nzcv = int(nzcv)

    def sources(self, word: int) -> tuple[int, ...]:
        """``src0..src2`` for ``word`` (zeros for unused slots and a word outside the subset)."""
        return pad_sources(read_operands(word, self))

    def reads(self, word: int) -> set[str]:
        """Names (``x5``, ``sp``) of the registers ``word`` reads (for issue hazards)."""
        return {register.name for register in sources_of(word) if not register.is_zero}

    def writes(self, word: int) -> str | None:
        """Name of the register ``word`` writes, if any."""
        register = destination_of(word)
        return None if register is None or register.is_zero else register.name

    def retire(self, word: int, result: RtlResult) -> None:
        """Apply a result: scalar write-back, the FPSR reset of an SM change, the cumulative
        FP exceptions raised, new flags."""
        if result.status != "OK":
            return
        write_result(word, result.scalar, self)
        if result.fpsr_reset:
            self.fpsr = FPSR_RESET_ON_SM_CHANGE
        self.fpsr |= result.fpsr_flags
        if result.sets_flags:
            self.nzcv = result.nzcv


def issue_payload(instructions: list[Mapping[str, int]]) -> dict[str, int]:
    """One ``issue`` transfer (fields of :func:`IssuePortLayout`) carrying ``instructions``
    (fields of :data:`ISSUE_FIELDS`), in lane order."""
    lanes = sum(pack_fields(ISSUE_FIELDS, values) << (lane * IssueLayout.size)
                for lane, values in enumerate(instructions))
    return {"lanes": lanes, "count": len(instructions)}


class _LanePacking:
    """How :class:`IssueDriver` gathers instructions into one ``issue`` transfer: as many as
    are queued, up to the port's ``lanes``, except that with probability ``single_rate`` a
    transfer carries one (so that single transfers are tested however fast the host runs)."""

    def __init__(self, rng: random.Random, single_rate: float, lanes: int):
        self.rng = rng
        self.single_rate = single_rate
        self.lanes = lanes

    def most(self) -> int:
        return 1 if self.rng.random() < self.single_rate else self.lanes

    @staticmethod
    def payload(instructions: list[Mapping[str, int]]) -> dict[str, int]:
        return issue_payload(instructions)


class IssueDriver:
    """Drives ``issue``: up to ``config.issue_lanes`` instruction words with their resolved
    operands per transfer, in program order.

    Parameters
    ----------
    dut, clock
        The toplevel and its clock.
    config : EngineConfig
        The engine's configuration: its issue lanes.
    pauses : PauseGenerator, optional
        Idle cycles before each transfer.
    rng : random.Random, optional
        Decides which transfers carry a single instruction though more are queued.
    single_rate : float
        How often (0 to 1) a transfer carries one instruction when more are queued.
    """

    def __init__(self, dut, clock, config: EngineConfig, pauses: PauseGenerator | None = None,
                 rng: random.Random | None = None, single_rate: float = 0.0):
        self.packing = _LanePacking(rng or random.Random(0), single_rate, config.issue_lanes)
        self.source = StreamSource(dut, clock, "issue", layout_fields(IssuePortLayout(config)),
                                   pauses, gather=self.packing)

    def issue_nowait(self, word: int, sources: tuple[int, ...],
                     on_accept: Callable[[], None] | None = None) -> None:
        self.source.send_nowait({"word": word, **dict(zip(SOURCE_SLOTS, pad_sources(sources)))},
                                on_accept)

    async def wait_idle(self) -> None:
        await self.source.wait_idle()

    @property
    def issued(self) -> int:
        """Instructions the engine has taken."""
        return self.source.items

    @property
    def transfers(self) -> int:
        return self.source.transfers


def results_of(payload: Mapping[str, int], lanes: int) -> list[RtlResult]:
    """The results one ``result`` transfer of a port of ``lanes`` lanes carries (fields of
    :func:`ResultPortLayout`).

    Raises
    ------
    ValueError
        For a transfer that carries no result or more than ``lanes``.
    """
    count = payload["count"]
    if not 1 <= count <= lanes:
        raise ValueError(f"carries {count} results (1 to {lanes} expected)")
    return [RtlResult.from_payload(unpack_fields(
        RESULT_FIELDS, payload["lanes"] >> (lane * ResultLayout.size))) for lane in range(count)]


class ResultMonitor:
    """Accepts ``result`` transfers and hands each :class:`RtlResult` in them, in order, to the
    callbacks.

    Parameters
    ----------
    dut, clock
        The toplevel and its clock.
    config : EngineConfig
        The engine's configuration: its issue lanes.
    pauses : PauseGenerator, optional
        Cycles the monitor is not ready before each transfer.

    Raises
    ------
    AssertionError
        From the sink task, for a transfer that carries no result or more than the lanes.
    """

    def __init__(self, dut, clock, config: EngineConfig, pauses: PauseGenerator | None = None):
        self.callbacks: list[Callable[[RtlResult], None]] = []
        self.results = 0
        self.lanes = config.issue_lanes
        self.sink = StreamSink(dut, clock, "result", layout_fields(ResultPortLayout(config)),
                               self._received, pauses)

    def _received(self, payload: Mapping[str, int]) -> None:
        try:
            results = results_of(payload, self.lanes)
        except ValueError as error:
            raise AssertionError(f"result transfer {self.sink.transfers}: {error}") from None
        for result in results:
            self.results += 1
            for callback in self.callbacks:
                callback(result)

    @property
    def received(self) -> int:
        """Results taken."""
        return self.results
