"""Functional coverage of the engine: which behaviours the regression actually exercised.

Every bin is declared up front from the instruction table and the configuration (so the report
can say "hit / total", and a bin that cannot be reached in the configuration is not declared).
Groups:

``outcome``     form x {ok, undef, sme_trap<smtc>, fault}. A form's name fixes its operation,
                element size and direction; the reachable outcomes follow from its PSTATE class,
                whether it touches memory, and whether the configuration has its feature.
``predicate``   predicated form x predicate operand x pattern class (all_true, all_false,
                sparse, first_only, last_only), for instructions that executed: the governing
                ``pg``; outer products and ADDHA/ADDVA have a row (``pn``) and a column (``pm``)
                predicate, predicate operations ``pg``, ``pn`` and ``pm``.
``slice``       tile-slice operation x {in_range, wrapped, huge}: the slice selector
                ``Ws + off`` inside the tile, wrapped modulo its dimension, and Ws >= 2^31.
``zero_mask``   ZERO masks by class (empty, one .d tile, an .s tile, an .h tile, all, other).
``svcr``        SVCR before -> after for every SMSTART/SMSTOP/MSR that executed.
``pstate``      PSTATE class of the form x SVCR at issue (SME enabled), and with SME disabled.
``memory``      load fault, store fault, store fault after partial writes, forced bus errors.
``undefined``   words outside the instruction table (reserved encodings, near misses of every
                form, random words), which must be UNDEF.
``overlap``     what the decoupled engine overlaps (docs/architecture.md, "Decoupled
                execution"), seen from its ports by :class:`OverlapTracker`: a vector load
                entering while an outer product that reads its destination is in flight, an
                outer product entering while a load of one of its sources is, a tile-slice
                store (or STR ZA) entering while an outer product into that tile is, a fault
                while an outer product is in flight, the issue port refusing an offered
                instruction (a full queue), and the memory port with ``mem_outstanding`` beats
                unanswered.

:meth:`Coverage.to_json` / :meth:`Coverage.merge` carry counts between the simulator process and
pytest; :meth:`Coverage.report` prints the summary.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.isa import Decoded, Form, Requires, Trait, decode, ops_with
from zatile.tb.implemented import RTL_FORMS

__all__ = ["PREDICATE_CLASSES", "MEMORY_OPS", "STORE_OPS", "SLICE_OPS", "OVERLAP_EVENTS", "Sample",
           "Coverage", "OverlapTracker", "predicate_class", "predicate_granule"]

PREDICATE_CLASSES = ("all_true", "all_false", "sparse", "first_only", "last_only")
MEMORY_OPS = frozenset(ops_with(Trait.LOAD, Trait.STORE))
STORE_OPS = frozenset(ops_with(Trait.STORE))
SLICE_OPS = ops_with(Trait.ZA_SLICE)
ZERO_MASK_CLASSES = ("empty", "one_d", "s_tile", "h_tile", "all", "other")
MEMORY_EVENTS = ("load_fault", "store_fault", "store_partial_write", "forced_error_load",
                 "forced_error_store")
OVERLAP_EVENTS = ("load_behind_mopa_same_z", "mopa_behind_load", "slice_store_behind_mopa",
                  "fault_with_mopa_in_flight", "issue_stalled", "memory_saturated",
                  "paired_issue", "paired_results")
#: Loads of the load queue (``hw.engine.DECOUPLED_LOADS``, by the table's operation names).
DECOUPLED_LOAD_OPS = frozenset(("ld1_contiguous", "ldnt1_contiguous", "ld1_signed",
                                "ld1_replicate", "ld1rq", "ldr_register"))
OUTER_PRODUCT_OPS = frozenset(ops_with(Trait.OUTER_PRODUCT))
#: Cycles an outer product's ZA writes follow its result (the floating-point array's latency).
ARRAY_LATENCY = 4

_SVCR_WRITERS = ops_with(Trait.SVCR_WRITE)


def predicate_granule(form: Form) -> int:
    """Bytes per predicate element the form tests (its source element size)."""
    return int(form.params.get("esize", 1)) // int(form.params.get("ways", 1))


def predicate_class(predicate: np.ndarray, granule: int, svl_bytes: int) -> str:
    """Pattern class of a predicate (uint8 array, bit b = byte b) at ``granule`` bytes."""
    bits = np.unpackbits(np.asarray(predicate, np.uint8), bitorder="little")[:svl_bytes]
    active = bits[::granule].astype(bool)
    count = int(active.sum())
    if count == active.size:
        return "all_true"
    if count == 0:
        return "all_false"
    if count == 1 and active[0]:
        return "first_only"
    if count == 1 and active[-1]:
        return "last_only"
    return "sparse"


def _reachable_classes(elements: int) -> tuple[str, ...]:
    classes = ["all_true", "all_false"]
    if elements >= 2:
        classes += ["first_only", "last_only"]
    if elements >= 3:
        classes.append("sparse")
    return tuple(classes)


def _predicates_of(form: Form) -> tuple[str, ...]:
    """The predicate operands the scoreboard samples: ``Pg``, and ``Pn``/``Pm`` of an outer
    product (row, column) or a predicate operation."""
    names = {f.name for f in form.fields}
    return tuple(name for name in ("pg", "pn", "pm") if name in names)


def _outcomes(form: Form, config: EngineConfig) -> tuple[str, ...]:
    if not config.has(form.feature):
        return ("undef",)
    outcomes = ["ok", "sme_trap0"]
    if form.requires is Requires.ZA:
        outcomes.append("sme_trap3")
    elif form.requires is Requires.SM_ZA:
        outcomes += ["sme_trap2", "sme_trap3"]
    elif form.requires is Requires.STREAMING:
        outcomes.append("undef")
    if form.op in MEMORY_OPS:
        outcomes.append("fault")
    return tuple(outcomes)


def _zero_mask_class(mask: int) -> str:
    if mask == 0:
        return "empty"
    if mask == 0xFF:
        return "all"
    if bin(mask).count("1") == 1:
        return "one_d"
    if mask in (0x11 << k for k in range(4)):
        return "s_tile"
    if mask in (0x55, 0xAA):
        return "h_tile"
    return "other"


@dataclass
class Sample:
    """What the scoreboard knows about one checked instruction."""

    decoded: Decoded | None
    status: str                      # sim.model.Status member name
    smtc: int | None
    svcr_before: int
    svcr_after: int
    sme_enabled: bool
    svl: int
    predicates: dict[str, np.ndarray] = field(default_factory=dict)
    slice_selector: int | None = None  # UInt(Ws) of a slice-selecting form
    partial_writes: int = 0
    forced_errors: int = 0


class Coverage:
    """Declared bins and their hit counts.

    Parameters
    ----------
    config : EngineConfig
        The configuration under test (features decide which outcomes exist).
    svls : iterable of int
        Effective SVLs the regression runs at (element counts decide which predicate classes
        exist).
    """

    def __init__(self, config: EngineConfig, svls):
        self.bins: dict[str, dict[str, int]] = {g: {} for g in
                                                ("outcome", "predicate", "slice", "zero_mask",
                                                 "svcr", "pstate", "memory", "undefined",
                                                 "overlap")}
        largest = max(svls) // 8
        for form in RTL_FORMS:
            for outcome in _outcomes(form, config):
                self.bins["outcome"][f"{form.name}:{outcome}"] = 0
            if not config.has(form.feature):
                continue
            for predicate in _predicates_of(form):
                for cls in _reachable_classes(largest // predicate_granule(form)):
                    self.bins["predicate"][f"{form.name}:{predicate}:{cls}"] = 0
        for op in SLICE_OPS:
            for where in ("in_range", "wrapped", "huge"):
                self.bins["slice"][f"{op}:{where}"] = 0
        for cls in ZERO_MASK_CLASSES:
            self.bins["zero_mask"][cls] = 0
        for before in range(4):
            for after in range(4):
                self.bins["svcr"][f"{before}->{after}"] = 0
        for requires in Requires:
            for svcr in range(4):
                self.bins["pstate"][f"{requires.value}:svcr{svcr}"] = 0
            self.bins["pstate"][f"{requires.value}:sme_disabled"] = 0
        for event in MEMORY_EVENTS:
            self.bins["memory"][event] = 0
        self.bins["undefined"]["unallocated"] = 0
        # A transfer of a one-lane engine carries one instruction and one result.
        paired = ("paired_issue", "paired_results") if config.issue_lanes == 1 else ()
        for event in OVERLAP_EVENTS:
            if event not in paired:
                self.bins["overlap"][event] = 0
        self.unexpected: dict[str, int] = {}

    def _hit(self, group: str, name: str) -> None:
        bins = self.bins[group]
        if name in bins:
            bins[name] += 1
        else:
            key = f"{group}:{name}"
            self.unexpected[key] = self.unexpected.get(key, 0) + 1

    def hit_overlap(self, event: str) -> None:
        """Count one overlap event (:class:`OverlapTracker`)."""
        self._hit("overlap", event)

    def sample(self, sample: Sample) -> None:
        """Count one checked instruction."""
        decoded = sample.decoded
        if decoded is None:
            self._hit("undefined", "unallocated" if sample.status == "UNDEF"
                      else f"unallocated_{sample.status.lower()}")
            return
        form = decoded.form
        outcome = {"OK": "ok", "UNDEF": "undef", "FAULT": "fault"}.get(sample.status)
        if outcome is None:
            outcome = f"sme_trap{sample.smtc}"
        self._hit("outcome", f"{form.name}:{outcome}")
        self._hit("pstate", f"{form.requires.value}:"
                  + (f"svcr{sample.svcr_before}" if sample.sme_enabled else "sme_disabled"))
        if sample.status == "FAULT" and form.op in STORE_OPS:
            self._hit("memory", "store_fault")
            if sample.partial_writes:
                self._hit("memory", "store_partial_write")
        elif sample.status == "FAULT":
            self._hit("memory", "load_fault")
        if sample.forced_errors:
            self._hit("memory", "forced_error_store" if form.op in STORE_OPS
                      else "forced_error_load")
        if sample.status != "OK":
            return
        svl_bytes = sample.svl // 8
        for name, predicate in sample.predicates.items():
            cls = predicate_class(predicate, predicate_granule(form), svl_bytes)
            self._hit("predicate", f"{form.name}:{name}:{cls}")
        if form.op in SLICE_OPS and sample.slice_selector is not None:
            dim = svl_bytes if form.op in ("ldr_za", "str_za") else \
                svl_bytes // form.params["esize"]
            offset = decoded.fields.get("off", 0)
            where = "huge" if sample.slice_selector >= 1 << 31 else \
                "wrapped" if sample.slice_selector + offset >= dim else "in_range"
            self._hit("slice", f"{form.op}:{where}")
        if form.op == "zero_za":
            self._hit("zero_mask", _zero_mask_class(decoded.fields["mask"]))
        if form.op in _SVCR_WRITERS:
            self._hit("svcr", f"{sample.svcr_before}->{sample.svcr_after}")


    # ------------------------------------------------------------------ persistence
    def to_json(self) -> dict:
        return {"bins": self.bins, "unexpected": self.unexpected}

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json()))

    def merge(self, other: dict) -> None:
        """Add the counts of another run's :meth:`to_json` (bins it declares that we do not are
        kept as unexpected so nothing is silently dropped)."""
        for group, bins in other["bins"].items():
            for name, count in bins.items():
                if name in self.bins.get(group, {}):
                    self.bins[group][name] += count
        for key, count in other.get("unexpected", {}).items():
            self.unexpected[key] = self.unexpected.get(key, 0) + count

    def merge_file(self, path: str | Path) -> None:
        self.merge(json.loads(Path(path).read_text()))

    # ------------------------------------------------------------------ reporting
    def totals(self) -> tuple[int, int]:
        """(bins hit, bins declared) over every group."""
        hit = sum(1 for bins in self.bins.values() for count in bins.values() if count)
        return hit, sum(len(bins) for bins in self.bins.values())

    def unhit(self) -> list[str]:
        """Every declared bin not hit, as ``group/bin`` (e.g. ``outcome/ST1D_ZA_V:fault``)."""
        return [f"{group}/{name}" for group, bins in self.bins.items()
                for name, count in bins.items() if not count]

    def report(self, missing: int = 12) -> str:
        """A per-group summary naming up to ``missing`` unhit bins per group."""
        hit, total = self.totals()
        lines = [f"functional coverage: {hit}/{total} bins hit ({100 * hit / max(total, 1):.1f}%)"]
        for group, bins in self.bins.items():
            group_hit = sum(1 for count in bins.values() if count)
            lines.append(f"  {group:<10} {group_hit:>4}/{len(bins):<4}")
            unhit = [name for name, count in bins.items() if not count]
            if unhit:
                shown = ", ".join(unhit[:missing])
                more = f" (+{len(unhit) - missing} more)" if len(unhit) > missing else ""
                lines.append(f"      not hit: {shown}{more}")
        if self.unexpected:
            lines.append("  hits outside the declared bins: " + ", ".join(
                f"{k} x{v}" for k, v in sorted(self.unexpected.items())))
        return "\n".join(lines)


# --------------------------------------------------------------------------- overlap
@dataclass
class _InFlight:
    decoded: Decoded | None
    result_cycle: float | None = None


class OverlapTracker:
    """The ``overlap`` events of one engine, from the instructions entering it and their results.

    An instruction is in flight from the cycle the issue port takes it until its result; an
    outer product also for :data:`ARRAY_LATENCY` cycles after it (its ZA writes are still to
    come).

    Parameters
    ----------
    hit : callable
        Called with the name of each event (one of :data:`OVERLAP_EVENTS`).
    """

    def __init__(self, hit):
        self._hit = hit
        self._flight: list[_InFlight] = []
        self._waiting: list[_InFlight] = []       # in flight without a result, oldest first

    def _in_flight(self, cycle: float) -> list[Decoded]:
        self._flight = [entry for entry in self._flight if entry.result_cycle is None or (
            entry.decoded is not None and entry.decoded.form.op in OUTER_PRODUCT_OPS
            and cycle - entry.result_cycle < ARRAY_LATENCY)]
        return [entry.decoded for entry in self._flight if entry.decoded is not None]

    def accepted(self, word: int, cycle: float) -> None:
        """The issue port took ``word`` at ``cycle``."""
        decoded = decode(word)
        others = self._in_flight(cycle)
        entry = _InFlight(decoded)
        self._flight.append(entry)
        self._waiting.append(entry)
        if decoded is None:
            return
        op = decoded.form.op
        fields = decoded.fields
        if op in DECOUPLED_LOAD_OPS and "zt" in fields:
            if any(other.form.op in OUTER_PRODUCT_OPS
                   and fields["zt"] in (other.fields.get("zn"), other.fields.get("zm"))
                   for other in others):
                self._hit("load_behind_mopa_same_z")
        elif op in OUTER_PRODUCT_OPS:
            sources = {fields.get("zn"), fields.get("zm")} - {None}
            if any(other.form.op in DECOUPLED_LOAD_OPS and other.fields.get("zt") in sources
                   for other in others):
                self._hit("mopa_behind_load")
        elif op in ("st1_tile", "str_za"):
            if any(other.form.op in OUTER_PRODUCT_OPS and (
                    op == "str_za" or (other.form.params["esize"] == decoded.form.params["esize"]
                                       and other.fields["zada"] == fields["tile"]))
                   for other in others):
                self._hit("slice_store_behind_mopa")

    def result(self, status: str, cycle: float) -> None:
        """The oldest instruction without a result got one (``status``) at ``cycle``."""
        entry = self._waiting.pop(0)
        entry.result_cycle = cycle
        if status == "FAULT" and any(other.form.op in OUTER_PRODUCT_OPS
                                     for other in self._in_flight(cycle)):
            self._hit("fault_with_mopa_in_flight")

    def issue_stalled(self) -> None:
        """The issue port held ``ready`` low while an instruction was offered."""
        self._hit("issue_stalled")

    def memory_saturated(self) -> None:
        """The memory port had ``mem_outstanding`` beats unanswered."""
        self._hit("memory_saturated")

    def paired_issue(self) -> None:
        """One issue transfer carried more than one instruction."""
        self._hit("paired_issue")

    def paired_results(self) -> None:
        """One result transfer carried more than one result."""
        self._hit("paired_results")
