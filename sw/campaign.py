"""Random differential campaigns: many generated programs, several SVLs, several backends.

A campaign runs here, program after program, or as tasks on a Dask cluster (``client``): chunks
of programs that workers run in any order and whose verdicts are merged in program order, so the
report is the same with one worker or a hundred (README, "Campaigns on a cluster").
"""

from __future__ import annotations

import random
import shlex
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from zatile.sw import backends as registry
from zatile.sw.backends import compare
from zatile.sim.progen import GeneratedProgram, generate_program
from zatile.sw.arch.config import EngineConfig

__all__ = ["CampaignReport", "CampaignError", "Chunk", "Distribution", "ProgramVerdict",
           "campaign_program", "campaign_chunks", "check_campaign", "check_program",
           "default_chunk_size", "run_chunk", "run_campaign"]


@dataclass
class Distribution:
    """How a campaign's work was spread: nothing here changes its results."""

    #: Dask workers when the campaign started (0: run in this process).
    workers: int = 0
    chunks: int = 0
    chunk_size: int = 0
    #: Programs sent again, one per task, because the worker running their chunk died.
    resubmitted: int = 0
    seconds: float = 0.0

    def to_json_dict(self) -> dict:
        return {"workers": self.workers, "chunks": self.chunks, "chunk_size": self.chunk_size,
                "resubmitted": self.resubmitted, "seconds": round(self.seconds, 3)}


@dataclass
class CampaignReport:
    """What a campaign ran and found.

    ``mismatches`` holds real differences only; a difference that a known divergence explains
    goes to ``explained`` and counts under its id in ``divergences``; ``crashes`` holds the
    programs no comparison could be made of (a backend failed on them). Everything but
    ``distribution`` is the same however the campaign's work was spread.
    """

    backends: list[str]
    programs: int = 0
    instructions: int = 0
    trapped: int = 0
    mismatches: list[str] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)
    explained: list[str] = field(default_factory=list)
    divergences: Counter = field(default_factory=Counter)
    per_svl: Counter = field(default_factory=Counter)
    #: Folders of the saved failing programs (``save_failures``).
    saved: list[str] = field(default_factory=list)
    distribution: Distribution | None = None

    @property
    def ok(self) -> bool:
        """True when no program showed a real mismatch or crashed a backend."""
        return not self.mismatches and not self.crashes

    def summary(self) -> str:
        """The report as text: counts, divergences recognised, the first 20 mismatches."""
        lines = [f"campaign {','.join(self.backends)}: {self.programs} programs "
                 f"({', '.join(f'SVL {s}: {n}' for s, n in sorted(self.per_svl.items()))}), "
                 f"{self.instructions} instructions, {self.trapped} trapped, "
                 f"{len(self.mismatches)} mismatches"
                 + (f", {len(self.crashes)} crashed" if self.crashes else "")]
        if self.divergences:
            lines.append("known QEMU divergences recognised: " + ", ".join(
                f"{name} x{count}" for name, count in sorted(self.divergences.items())))
        lines.extend(f"  DIVERGENCE {e}" for e in self.explained[:20])
        lines.extend(f"  MISMATCH {m}" for m in self.mismatches[:20])
        lines.extend(f"  CRASH {c}" for c in self.crashes[:20])
        return "\n".join(lines)

    def to_json_dict(self) -> dict:
        """The report as JSON-ready data."""
        return {"backends": self.backends, "programs": self.programs,
                "instructions": self.instructions, "trapped": self.trapped,
                "per_svl": {str(svl): n for svl, n in sorted(self.per_svl.items())},
                "mismatches": self.mismatches, "crashes": self.crashes,
                "explained": self.explained,
                "divergences": dict(sorted(self.divergences.items())), "saved": self.saved,
                "ok": self.ok,
                "distribution": (self.distribution.to_json_dict()
                                 if self.distribution is not None else None)}


def campaign_program(seed: int, svl: int, index: int, length: int,
                     backends: list[str] = ()) -> GeneratedProgram:
    """Program ``index`` of a campaign with ``seed`` at ``svl`` on ``backends``: a function of
    these only. With the RTL among the backends, only operations the RTL performs are drawn
    (:mod:`zatile.tb.implemented`)."""
    weights = None
    if "rtl" in backends:
        from zatile.tb.implemented import rtl_weights  # local: keeps `zatile --help` fast
        weights = rtl_weights()
    return generate_program(random.Random(f"{seed}:{svl}:{index}"), svl, length,
                            weights=weights)


def _save_failure(folder: Path, program: GeneratedProgram, svl: int,
                  backends: list[str]) -> None:
    """Write ``program.s``, ``state.npz`` and ``replay.sh`` (the ``zatile compare`` command
    that reproduces the mismatch) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "program.s").write_text(program.text)
    program.initial.save(folder / "state.npz")
    command = ["zatile", "compare", "program.s", "--svl", str(svl), "--state-in", "state.npz",
               "--backends", ",".join(backends)]
    (folder / "replay.sh").write_text(f'#!/bin/sh\ncd "$(dirname "$0")" && '
                                      f'exec {shlex.join(command)}\n')
    (folder / "replay.sh").chmod(0o755)


@dataclass(frozen=True)
class Chunk:
    """One task of a campaign: programs ``start`` to ``stop - 1`` at ``svl``."""

    svl: int
    start: int
    stop: int

    def __len__(self) -> int:
        return self.stop - self.start

    def name(self, seed: int) -> str:
        """The chunk's programs, as a mismatch names one (``seed=1 svl=128 program=3``)."""
        last = f"..{self.stop - 1}" if len(self) > 1 else ""
        return f"seed={seed} svl={self.svl} program={self.start}{last}"


@dataclass(frozen=True)
class ProgramVerdict:
    """What one program of a campaign gave, small enough for a worker to send back cheaply.

    ``mismatch`` is the first real difference; ``crash`` says why no comparison was made (a
    backend raised, for example a simulation that failed, or the process running the program
    died).
    """

    svl: int
    index: int
    instructions: int = 0
    trapped: int = 0
    divergences: tuple[str, ...] = ()
    explained: tuple[str, ...] = ()
    mismatch: str | None = None
    crash: str | None = None

    @property
    def failed(self) -> bool:
        """A real mismatch or a crash."""
        return self.mismatch is not None or self.crash is not None


def check_program(program: GeneratedProgram, svl: int, index: int, backends: list[str],
                  config: EngineConfig, runs: dict | None = None) -> ProgramVerdict:
    """Compare program ``index`` at ``svl`` on ``backends`` (``runs``: backends' runs of it
    already made); an exception of a backend is the program's ``crash`` (its first line), so
    the program is reported, never lost."""
    try:
        result = compare(program.text, program.initial, backends, config, runs=runs)
    except Exception as error:              # whatever a backend raised: this program crashed it
        lines = str(error).strip().splitlines()
        return ProgramVerdict(svl, index,
                              crash=f"{type(error).__name__}: {lines[0] if lines else ''}")
    reference = result.outcomes[backends[0]]
    return ProgramVerdict(svl, index, len(reference.outcomes), len(reference.trapped),
                          tuple(result.divergences), tuple(result.explained), result.difference)


def run_chunk(seed: int, chunk: Chunk, length: int, backends: list[str],
              max_svl: int) -> list[ProgramVerdict]:
    """The task a worker runs: every program of ``chunk``, in order (a campaign's engine is
    ``EngineConfig(max_svl=max_svl)``).

    With the RTL among the backends, the chunk's programs run on it in one simulation
    (:func:`~zatile.sw.backends.run_programs`: a simulator's start is most of a short
    program's time); if that simulation fails, each program runs on its own again, so the one
    that makes it fail is the crash.
    """
    config = EngineConfig(max_svl=max_svl)
    programs = [campaign_program(seed, chunk.svl, index, length, backends)
                for index in range(chunk.start, chunk.stop)]
    runs = [None] * len(programs)
    if "rtl" in backends and len(programs) > 1:
        try:
            batch = registry.run_programs("rtl", [(p.text, p.initial) for p in programs],
                                          config)
        except Exception:                   # found again, program by program, below
            batch = None
        if batch is not None:
            runs = [{"rtl": run} for run in batch]
    return [check_program(program, chunk.svl, index, backends, config, run)
            for index, program, run in zip(range(chunk.start, chunk.stop), programs, runs)]


def campaign_chunks(programs: int, svls: list[int], size: int) -> list[Chunk]:
    """The campaign's programs in chunks of ``size`` (the last of each SVL may be shorter)."""
    if size < 1:
        raise ValueError(f"a chunk holds at least 1 program, not {size}")
    return [Chunk(svl, start, min(start + size, programs))
            for svl in svls for start in range(0, programs, size)]


#: The largest default chunk (programs per task).
MAX_CHUNK = 50


def default_chunk_size(total: int, workers: int, rtl: bool = False) -> int:
    """Programs per task, at most :data:`MAX_CHUNK`: about four tasks per worker, so that a slow
    task does not leave the others idle at the end (a task's overhead is milliseconds), except
    with the RTL (``rtl``), where a chunk is one simulation whose start (about 1.8 s) costs as
    much as a dozen programs: one task per worker then. In this process (``workers`` 0) chunks
    only matter to the RTL."""
    if workers == 0:
        return max(1, min(MAX_CHUNK, total)) if rtl else 1
    tasks_per_worker = 1 if rtl else 4
    return max(1, min(MAX_CHUNK, -(-total // (tasks_per_worker * workers))))



def check_campaign(programs: int, svls: list[int], length: int, backends: list[str]) -> None:
    """Raise ValueError, in user terms, for a campaign that cannot run: a negative program
    count, a length below 1, no SVL or fewer than two backends."""
    if programs < 0:
        raise ValueError(f"the number of programs must be 0 or more, not {programs}")
    if length < 1:
        raise ValueError(f"the program length must be at least 1 instruction, not {length}")
    if not svls:
        raise ValueError("a campaign needs at least one SVL")
    if len(backends) < 2:
        raise ValueError(f"a campaign compares at least two backends, not {list(backends)!r}")


def run_campaign(programs: int, svls: list[int], length: int, seed: int,
                 backends: list[str], *,
                 progress: Callable[[int, int, int], None] | None = None,
                 save_failures: Path | None = None, client=None,
                 chunk_size: int | None = None, task: Callable = run_chunk) -> CampaignReport:
    """Run ``programs`` random programs per SVL on ``backends`` and collect mismatches.

    Each program is reproducible from ``(seed, svl, index)``; a mismatch names them. The report
    is the same however the work is spread: with ``client`` (a ``dask.distributed.Client``) the
    programs run as tasks of ``chunk_size`` programs on its workers, in any order, and the
    verdicts are merged in program order; without one they run here, in order.

    Parameters
    ----------
    progress : callable, optional
        Called as ``progress(done, total, mismatches)`` (programs done, programs in all, real
        mismatches and crashes so far) as programs finish (a chunk at a time with a client).
    save_failures : pathlib.Path, optional
        Each failing or crashing program is written to
        ``save_failures / f"seed{seed}-svl{svl}-p{index}"`` (see :func:`_save_failure`), here,
        by the caller's process: workers need no shared folder.
    client : dask.distributed.Client, optional
    chunk_size : int, optional
        Programs per task (default :func:`default_chunk_size`).
    task : callable
        What a task runs, :func:`run_chunk` (tests plant failing workers through it).

    Raises
    ------
    ValueError
        For a campaign :func:`check_campaign` refuses, or a chunk size below 1.
    CampaignError
        When a task fails other than by its programs (a worker that cannot import zatile).
    """
    check_campaign(programs, svls, length, backends)
    started = time.monotonic()
    total = programs * len(svls)
    workers = len(client.nthreads()) if client is not None else 0
    size = chunk_size if chunk_size is not None else default_chunk_size(total, workers,
                                                                        "rtl" in backends)
    chunks = campaign_chunks(programs, svls, size)
    report = CampaignReport(backends=list(backends))
    report.distribution = Distribution(workers, len(chunks), size)
    verdicts: dict[tuple[int, int], ProgramVerdict] = {}
    failing = 0

    def collect(chunk_verdicts: list[ProgramVerdict]) -> None:
        nonlocal failing
        for verdict in chunk_verdicts:
            verdicts[verdict.svl, verdict.index] = verdict
            failing += verdict.failed
        if progress is not None:
            progress(len(verdicts), total, failing)

    arguments = (length, list(backends), max(svls))
    if client is None:
        for chunk in chunks:
            collect(task(seed, chunk, *arguments))
    else:
        _run_on_cluster(client, task, seed, chunks, arguments, collect, report.distribution)
    for svl in svls:
        for index in range(programs):
            verdict = verdicts[svl, index]
            _record(report, verdict, seed)
            if verdict.failed and save_failures is not None:
                folder = Path(save_failures) / f"seed{seed}-svl{svl}-p{index}"
                _save_failure(folder, campaign_program(seed, svl, index, length, backends),
                              svl, backends)
                report.saved.append(str(folder))
    report.distribution.seconds = time.monotonic() - started
    return report


class CampaignError(RuntimeError):
    """A campaign task failed for a reason that is not one of its programs."""


def _run_on_cluster(client, task: Callable, seed: int, chunks: list[Chunk], arguments: tuple,
                    collect: Callable, distribution: Distribution) -> None:
    """Run ``chunks`` as tasks on ``client``'s workers, collecting each chunk's verdicts as it
    finishes.

    A worker that dies takes its task with it; the scheduler runs the task again elsewhere and
    gives up (``KilledWorker``) when several workers died while it was theirs, which also
    happens to a task that merely waited on a worker beside a deadly one. The programs of such
    a chunk are therefore run again at the end, a program per task and one task at a time (the
    cluster running nothing else), and only a program whose lone task still kills its workers
    is reported as that program's crash.
    """
    from distributed import KilledWorker, as_completed  # local: an optional dependency

    def result(future, chunk: Chunk):
        try:
            return future.result()
        except KilledWorker:
            raise
        except Exception as error:           # the task itself is broken, not a program
            raise CampaignError(f"a campaign task ({chunk.name(seed)}) failed on its worker: "
                                f"{type(error).__name__}: {error}") from error
        finally:
            future.release()

    def submit(chunk: Chunk):
        return client.submit(task, seed, chunk, *arguments, pure=False,
                             key=f"zatile-campaign-{uuid.uuid4().hex}")

    pending = {submit(chunk): chunk for chunk in chunks}
    quarantined: list[Chunk] = []
    try:
        for future in as_completed(list(pending)):
            chunk = pending.pop(future)
            try:
                collect(result(future, chunk))
            except KilledWorker:
                quarantined.extend(Chunk(chunk.svl, index, index + 1)
                                   for index in range(chunk.start, chunk.stop))
    finally:
        for future in pending:
            future.cancel()
    distribution.resubmitted = len(quarantined)
    for single in quarantined:
        try:
            collect(result(submit(single), single))
        except KilledWorker as error:
            collect([ProgramVerdict(single.svl, single.start,
                                    crash=f"KilledWorker: {_first_sentence(error)}")])


def _first_sentence(error: Exception) -> str:
    text = str(error).strip()
    return text.split(". ")[0] if text else type(error).__name__


def _record(report: CampaignReport, verdict: ProgramVerdict, seed: int) -> None:
    """Count one program's verdict into ``report``."""
    name = f"seed={seed} svl={verdict.svl} program={verdict.index}"
    report.programs += 1
    report.per_svl[verdict.svl] += 1
    report.instructions += verdict.instructions
    report.trapped += verdict.trapped
    report.divergences.update(verdict.divergences)
    report.explained.extend(f"{name}: {text}" for text in verdict.explained)
    if verdict.mismatch is not None:
        report.mismatches.append(f"{name}: {verdict.mismatch}")
    if verdict.crash is not None:
        report.crashes.append(f"{name}: {verdict.crash}")
