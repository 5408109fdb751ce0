"""Every known way QEMU differs from the reference model, as data, and how comparisons cope.

:data:`DIVERGENCES` is the one list. Each :class:`Divergence` names where the fact is recorded
(docs/divergences.md), which QEMU versions show it, and how a model-versus-QEMU comparison handles it
(:class:`Handling`):

* ``MODELLED``: the comparison applies QEMU's behaviour to the model's result
  (:func:`modelled_quirks`, e.g. :func:`qemu_vertical_ld1_za`), so a mismatch still means a bug;
* ``AVOIDED``: generated programs and initial states keep clear of it;
* ``NOT_COMPARED``: the affected state is left out of the comparison;
* ``VERSION_GATED``: absent from the oracle QEMU (:data:`QEMU_ORACLE_VERSION`); an affected QEMU
  must not be used to check the instructions involved.

:func:`triggered` says which divergences one instruction can trigger from a given state (the
state *before* it executes), so a campaign can count them and a comparison can treat them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Callable, Mapping

import numpy as np

from zatile.sim.model import active_elements, tile_elements
from zatile.sim.state import ArchState
from zatile.sw.arch.constants import SVCR_ZA
from zatile.sw.arch.engine import Result, Status
from zatile.sw.arch.isa import Decoded, Requires, decode

__all__ = [
    "QEMU_ORACLE_VERSION",
    "Handling",
    "Divergence",
    "DIVERGENCES",
    "DIVERGENCES_BY_ID",
    "INT32_MOPA",
    "VERTICAL_LD1_STALE_TAIL",
    "NON_STREAMING_SVE",
    "ZA_UNKNOWN_AFTER_DISABLE",
    "PAGE_GRANULAR_MEMORY",
    "FPCR_AFP_EBF16",
    "UQXTN_D_SIGNED",
    "FAULTING_STORE_PARTIAL_WRITE",
    "QEMU_HELPER_MIN_VECTOR_BYTES",
    "qemu_uqxtn_d_zeroed",
    "Quirk",
    "triggered",
    "modelled_quirks",
    "quirks_among",
    "qemu_vertical_ld1_written",
    "qemu_vertical_ld1_za",
    "QEMU_PAGE_SIZE",
    "QEMU_FPCR_KEPT",
    "QEMU_FPSR_KEPT",
    "AFP_EBF16_FPCR_BITS",
    "qemu_maps",
    "outcome_divergence",
    "state_divergence",
]

Version = tuple[int, ...]

#: The QEMU the comparisons use as the semantic oracle (docs/divergences.md, "QEMU versions").
QEMU_ORACLE_VERSION: Version = (10, 0, 2)

#: First QEMU with SME (-cpu max); inferred from commit dates, UNVERIFIED (docs/divergences.md, "QEMU versions").
_FIRST_SME_QEMU: Version = (7, 1)


class Handling(Enum):
    """How a model-versus-QEMU comparison deals with a divergence."""

    MODELLED = "modelled"
    AVOIDED = "avoided"
    NOT_COMPARED = "not_compared"
    VERSION_GATED = "version_gated"


@dataclass(frozen=True)
class Divergence:
    """One known difference between QEMU and the Arm ARM (hence the model).

    Attributes
    ----------
    id : str
        Stable identifier (reports and campaign counters use it).
    description : str
        What QEMU does differently.
    reference : str
        Where it is recorded and verified.
    affected : tuple of (first, fixed) version pairs
        QEMU versions showing it: ``first <= v < fixed``; ``fixed`` None means not fixed in any
        version known here.
    handling : Handling
    how : str
        What the comparison does about it, concretely.
    """

    id: str
    description: str
    reference: str
    affected: tuple[tuple[Version, Version | None], ...]
    handling: Handling
    how: str

    def affects(self, qemu_version: Version) -> bool:
        """Whether QEMU ``qemu_version`` (a tuple such as (10, 0, 2)) shows this divergence."""
        version = tuple(qemu_version)
        return any(first <= version and (fixed is None or version < fixed)
                   for first, fixed in self.affected)

    @property
    def qemu_versions(self) -> str:
        """The affected versions as text, e.g. ``7.1 <= QEMU < 8.2.3``."""
        def text(version: Version) -> str:
            return ".".join(map(str, version))
        return "; ".join(f"{text(first)} <= QEMU" + (f" < {text(fixed)}" if fixed else
                                                       " (no fixed release known)")
                         for first, fixed in self.affected)


INT32_MOPA = Divergence(
    id="qemu-int32-mopa",
    description=(
        "32-bit integer outer products (SMOPA/SMOPS/UMOPA/UMOPS/SUMOPA/SUMOPS/USMOPA/USMOPS "
        "into .S tiles) are computed wrongly: do_imopa works on 64-bit chunks, so ZA[2r][2c+1] "
        "gets dot4(Zn element 2r+1, Zm element 2c+1) and odd rows are never written. The .D "
        "forms, ADDHA and ADDVA are correct. Fixed upstream by 'target/arm: Fix 32-bit SMOPA' "
        "(d572bcb2, gitlab #2083) in 9.0 and backported to 8.2.3; not in any 7.2.x; not present "
        "in QEMU 10."),
    reference='docs/divergences.md, "qemu-int32-mopa"',
    affected=((_FIRST_SME_QEMU, (8, 2, 3)),),
    handling=Handling.VERSION_GATED,
    how=("Absent from the oracle QEMU 10. Against an affected QEMU (e.g. Debian bookworm's "
         "7.2.22) .S integer MOPA results must not be compared: leave int_mopa .S out of the "
         "program or compare against a model of the bug."),
)

VERTICAL_LD1_STALE_TAIL = Divergence(
    id="qemu-vertical-ld1-stale-tail",
    description=(
        "Vertical LD1B/H/W/D/Q into a tile slice does not zero the inactive elements after the "
        "last active one: they keep their old ZA contents instead of becoming 0 (sme_ld1 zeroes "
        "only up to the last active element). When the access crosses a 4 KiB page, inactive "
        "elements in the gaps around the page boundary can stay stale too, while trailing ones "
        "up to the end of the last active element's 64-byte predicate chunk are zeroed. "
        "Horizontal loads and all-false predicates are correct."),
    reference=('docs/divergences.md, "qemu-vertical-ld1-stale-tail"; '
               "QEMU target/arm/tcg/sme_helper.c sme_ld1"),
    affected=((_FIRST_SME_QEMU, None),),
    handling=Handling.MODELLED,
    how=("Modelled: for an LD1 that executes, the comparison replaces the model's ZA with "
         "qemu_vertical_ld1_za() (the elements QEMU does not write, qemu_vertical_ld1_written(), "
         "restored from the state before the load), so any remaining difference is a real one."),
)

NON_STREAMING_SVE = Divergence(
    id="qemu-non-streaming-sve",
    description=(
        "QEMU -cpu max implements non-streaming SVE (and FEAT_SME_FA64), while the engine is an "
        "SME-only implementation: the streaming-SVE subset of the table (PTRUE, PFALSE, WHILE, "
        "DUP, CNTx, RDVL, SVE LDR/STR, contiguous LD1/ST1) executes in QEMU at PSTATE.SM=0, at "
        "QEMU's non-streaming vector length, but is UNDEFINED in the model."),
    reference=('docs/divergences.md, "qemu-non-streaming-sve"; '
               "zatile.sw.arch.isa.Requires.STREAMING"),
    affected=((_FIRST_SME_QEMU, None),),
    handling=Handling.AVOIDED,
    how=("Avoided: sim.progen issues streaming-SVE instructions only while SM=1 "
         "(streaming_sve_only_when_sm=True). Recognised when it occurs anyway (model UNDEF, "
         "QEMU ok, e.g. CNTD at SM=0): reported as this divergence and the rest of that run is "
         "not compared; it cannot be modelled because the non-streaming vector length is not "
         "part of the engine."),
)

ZA_UNKNOWN_AFTER_DISABLE = Divergence(
    id="za-unknown-after-disable",
    description=(
        "After PSTATE.ZA 1->0 (SMSTOP, SMSTOP ZA, MSR SVCR with bit 1 clear) the ZA contents "
        "are architecturally UNKNOWN. The model leaves them as they were; QEMU keeps them too "
        "(it zeroes only on 0->1), but neither is an architectural value, and ZA=0 makes them "
        "unreadable."),
    reference='docs/isa.md, "PSTATE and SVCR"',
    affected=((_FIRST_SME_QEMU, None),),
    handling=Handling.NOT_COMPARED,
    how=("Not compared: ZA is compared only when PSTATE.ZA=1 at the end of both runs "
         "(RunOutcome.za_valid); a later 0->1 zeroes ZA in both, so nothing leaks."),
)

PAGE_GRANULAR_MEMORY = Divergence(
    id="qemu-page-granular-memory",
    description=(
        "The QEMU harness maps memory in whole 4 KiB pages, so an access outside a region but "
        "inside one of its pages succeeds in QEMU (reads zero or a neighbour's bytes) where the "
        "model faults."),
    reference='docs/divergences.md, "qemu-page-granular-memory"; sim/qemu.py module notes',
    affected=((_FIRST_SME_QEMU, None),),
    handling=Handling.AVOIDED,
    how=("Avoided in generated programs: their region is page-aligned and a whole number of "
         "pages, and the harness keeps 1 MiB of unmapped space around its own executable. "
         "Recognised elsewhere: an instruction the model faults on at an address inside a "
         "page QEMU maps, while QEMU completes it, is reported as this divergence and the rest "
         "of that run is not compared."),
)

FPCR_AFP_EBF16 = Divergence(
    id="qemu-fpcr-afp-ebf16",
    description=(
        "QEMU 10 implements FEAT_AFP and FEAT_EBF16: FPCR.FIZ/AH/NEP [2:0] and FPCR.EBF [13] are "
        "writable and change FMOPS negation of NaNs and BFMOPA rounding. The engine has neither "
        "feature (the bits are RES0 and ignored by the model). QEMU also keeps only FPCR bits "
        "0x07FF2007 and FPSR bits 0xF800009F."),
    reference=('docs/divergences.md, "qemu-fpcr-afp-ebf16"; '
               "sim/qemu.py module notes"),
    affected=(((8, 0), None),),
    handling=Handling.AVOIDED,
    how=("Avoided: initial FPCR values of generated programs set only RMode, FZ, FZ16 and DN; "
         "no instruction of the subset writes FPCR. Recognised when an initial state sets "
         "FIZ/AH/NEP/EBF or a bit QEMU does not keep: a state difference of the "
         "model-versus-QEMU pair is then reported as this divergence."),
)

UQXTN_D_SIGNED = Divergence(
    id="qemu-uqxtn-d-signed",
    description=(
        "UQXTNB/UQXTNT Zd.S, Zn.D saturate a source element of 2^63 or more to 0 instead of "
        "0xFFFFFFFF when QEMU runs its out-of-line helper (vectors of 256 bytes, SVL 2048, on "
        "an x86-64 host with AVX2; smaller vectors are expanded inline and are right): the "
        "helper's saturation takes the unsigned 64-bit element as a signed value."),
    reference=('docs/divergences.md, "qemu-uqxtn-d-signed"; '
               "QEMU target/arm/tcg/sve_helper.c sve2_uqxtnb_d/sve2_uqxtnt_d"),
    affected=((_FIRST_SME_QEMU, None),),
    handling=Handling.MODELLED,
    how=("Modelled: for UQXTNB/UQXTNT .S at a vector length QEMU hands to its helper "
         "(QEMU_HELPER_MIN_VECTOR_BYTES), the comparison zeroes the result elements whose "
         "source element has bit 63 set (qemu_uqxtn_d_zeroed), so any remaining difference "
         "is a real one."),
)

FAULTING_STORE_PARTIAL_WRITE = Divergence(
    id="qemu-faulting-store-partial-write",
    description=(
        "Some stores that run from a mapped page into an unmapped one (ST2/ST3/ST4, STR Z, "
        "contiguous ST1/STNT1 at large vector lengths) write the active elements wholly on the "
        "mapped page before QEMU raises SIGSEGV; the model's faulting store writes nothing."),
    reference='docs/divergences.md, "qemu-faulting-store-partial-write"',
    affected=((_FIRST_SME_QEMU, None),),
    handling=Handling.AVOIDED,
    how=("Avoided: only a store straddling the end of a region shows it; the stores of "
         "generated programs cannot reach the end of the data region (bases in its first half, "
         "short offsets, STR Z offsets of at most +95 vector lengths) and fault only below its "
         "start, writing nothing in QEMU either."),
)

#: Every known divergence.
DIVERGENCES: tuple[Divergence, ...] = (INT32_MOPA, VERTICAL_LD1_STALE_TAIL, NON_STREAMING_SVE,
                                       ZA_UNKNOWN_AFTER_DISABLE, PAGE_GRANULAR_MEMORY,
                                       FPCR_AFP_EBF16, UQXTN_D_SIGNED,
                                       FAULTING_STORE_PARTIAL_WRITE)
DIVERGENCES_BY_ID: Mapping[str, Divergence] = {d.id: d for d in DIVERGENCES}


# --------------------------------------------------------------------------- triggers
def _sm_za_executes(state: ArchState) -> bool:
    return state.sm and state.za_enabled


def _vertical_ld1_has_stale_elements(decoded: Decoded, state: ArchState) -> bool:
    written = qemu_vertical_ld1_written(_tile_ld1_address(decoded, state),
                                        decoded.form.params["esize"],
                                        active_elements(state.p[decoded["pg"]],
                                                        decoded.form.params["esize"]))
    return not bool(written.all())


def _disables_za(decoded: Decoded, state: ArchState) -> bool:
    if not state.za_enabled:
        return False
    op, params = decoded.form.op, decoded.form.params
    if op == "msr_svcr_imm":
        return bool(params["set_za"]) and not params["start"]
    if op == "msr_svcr":
        register = decoded["rt"]
        value = 0 if register == 31 else int(state.x[register])
        return not value & SVCR_ZA
    return False


def triggered(decoded: Decoded | None, state: ArchState, *,
              qemu_version: Version = QEMU_ORACLE_VERSION) -> list[str]:
    """Ids of the divergences ``decoded`` can trigger when executed from ``state``.

    ``state`` is the architectural state *before* the instruction. Divergences the given QEMU
    version does not have are left out. SME is assumed enabled, as it is under linux-user.
    """
    if decoded is None:
        return []
    form = decoded.form
    found = []
    if form.requires is Requires.STREAMING and not state.sm:
        found.append(NON_STREAMING_SVE)
    elif form.requires is Requires.SM_ZA and _sm_za_executes(state):
        if form.op == "ld1_tile" and form.params["vertical"] \
                and _vertical_ld1_has_stale_elements(decoded, state):
            found.append(VERTICAL_LD1_STALE_TAIL)
        elif form.op == "int_mopa" and form.params["esize"] == 4:
            found.append(INT32_MOPA)
    elif form.op == "int_uqxtn" and qemu_uqxtn_d_zeroed(decoded, state).any():
        found.append(UQXTN_D_SIGNED)
    elif form.requires is Requires.ACCESS and _disables_za(decoded, state):
        found.append(ZA_UNKNOWN_AFTER_DISABLE)
    return [d.id for d in found if d.affects(qemu_version)]


# --------------------------------------------------------------------------- modelled quirks
#: Guest page size of qemu-aarch64 (linux-user) on a 4 KiB-page host.
QEMU_PAGE_SIZE = 4096


def _tile_ld1_address(decoded: Decoded, state: ArchState) -> int:
    """Address of element 0 of a tile LD1: Xn|SP + Xm * esize (Rm=31 is XZR)."""
    rn, rm = decoded["rn"], decoded["rm"]
    base = state.sp if rn == 31 else int(state.x[rn])
    index = 0 if rm == 31 else int(state.x[rm])
    return (base + index * decoded.form.params["esize"]) & ((1 << 64) - 1)


def qemu_vertical_ld1_written(address: int, esize: int, active: np.ndarray,
                              page_size: int = QEMU_PAGE_SIZE) -> np.ndarray:
    """bool[dim]: the slice elements QEMU's vertical LD1 writes (loads or zeroes).

    The others keep their old ZA values. This follows ``sme_ld1`` in QEMU's
    target/arm/tcg/sme_helper.c with ``sve_cont_ldst_elements`` (RAM path, linux-user):

    * no active element: the whole slice is zeroed (correct);
    * everything before the first active element is zeroed;
    * all active elements on one page: elements first..last active are written, the ones
      after the last active element are not;
    * crossing a page boundary: on the first page, first active..last whole element; a
      misaligned element straddling the boundary only if active; on the second page, from its
      first active element up to the end of the 64-byte predicate chunk holding the last active
      element. Inactive elements in the gaps keep their old values.
    """
    dim = active.size
    written = np.zeros(dim, bool)
    indices = np.flatnonzero(active)
    if indices.size == 0:
        written[:] = True
        return written
    first, last = int(indices[0]), int(indices[-1])
    written[:first] = True
    page_split = page_size - (address % page_size)
    if (last + 1) * esize <= page_split:
        written[first:last + 1] = True
        return written
    element_split = page_split // esize
    written[first:element_split] = True            # last whole element of the first page
    next_element = element_split
    if page_split % esize:                         # an element straddles the boundary
        if active[element_split]:
            written[element_split] = True
            if element_split == last:
                return written
        next_element = element_split + 1
    first_second_page = int(indices[indices >= next_element][0])
    end_byte = (last * esize // 64 + 1) * 64       # the inner loop runs to a 64-byte chunk end
    written[first_second_page:min(end_byte // esize, dim)] = True
    return written


def qemu_vertical_ld1_za(decoded: Decoded, before: ArchState, after: ArchState,
                         page_size: int = QEMU_PAGE_SIZE) -> np.ndarray:
    """ZA as QEMU leaves it after a vertical tile LD1 that the model executed.

    Parameters
    ----------
    decoded : Decoded
        A vertical ``ld1_tile`` form.
    before, after : ArchState
        The state before the load and the model's state after it (status OK).
    page_size : int
        QEMU's guest page size.

    Returns
    -------
    numpy.ndarray
        A copy of ``after.za`` in which the slice elements QEMU does not write
        (:func:`qemu_vertical_ld1_written`, e.g. the inactive ones after the last active
        element) hold their values from ``before.za``.
    """
    form = decoded.form
    if form.op != "ld1_tile" or not form.params["vertical"]:
        raise ValueError(f"{form.name} is not a vertical tile LD1")
    esize = form.params["esize"]
    za = after.za.copy()
    active = active_elements(before.p[decoded["pg"]], esize)
    stale = ~qemu_vertical_ld1_written(_tile_ld1_address(decoded, before), esize, active,
                                       page_size)
    if not stale.any():
        return za
    dim = before.svl_bytes // esize
    column = ((int(before.x[12 + decoded["rs"]]) & 0xFFFF_FFFF)
              + decoded.fields.get("off", 0)) % dim
    tile = decoded.fields.get("tile", 0)
    tile_elements(za, esize, tile)[stale, column] = \
        tile_elements(before.za, esize, tile)[stale, column]
    return za


#: The vector length in bytes from which QEMU runs the out-of-line helper of an SVE2 narrowing
#: instruction rather than expanding it inline (4 host vectors of 32 bytes with AVX2; measured
#: on the oracle machine, tests/test_sve_int.py).
QEMU_HELPER_MIN_VECTOR_BYTES = 256


def qemu_uqxtn_d_zeroed(decoded: Decoded, state: ArchState) -> np.ndarray:
    """bool[SVL_B / 8]: the .D source elements of UQXTNB/UQXTNT Zd.S whose result QEMU writes
    as 0 (bit 63 set, helper path) when executed from ``state``; all False otherwise."""
    source = state.z[decoded["zn"]].view(np.uint64)
    if decoded.form.params["esize"] != 4 or state.svl_bytes < QEMU_HELPER_MIN_VECTOR_BYTES:
        return np.zeros(source.size, bool)
    return source >= np.uint64(1 << 63)


def _apply_uqxtn_d(word: int, before: ArchState, after: ArchState, result: Result) -> None:
    if result.status is Status.OK:
        decoded = decode(word)
        zeroed = qemu_uqxtn_d_zeroed(decoded, before)
        after.z[decoded["zd"]].view(np.uint32).reshape(-1, 2)[
            zeroed, int(decoded.form.params["top"])] = 0


# --------------------------------------------------------------------------- recognition
#: FPCR and FPSR bits QEMU 10 keeps on MSR (measured; tests/test_qemu.py); the others read as 0.
QEMU_FPCR_KEPT = 0x07FF2007
QEMU_FPSR_KEPT = 0xF800009F
#: FPCR.FIZ, AH, NEP [2:0] (FEAT_AFP) and EBF [13] (FEAT_EBF16): QEMU 10 acts on them, the
#: engine does not have the features.
AFP_EBF16_FPCR_BITS = 0x2007


def qemu_maps(address: int, regions: Mapping[int, np.ndarray],
              page_size: int = QEMU_PAGE_SIZE) -> bool:
    """Whether the QEMU harness maps ``address``: it maps every page a region touches."""
    page = address // page_size
    return any(base // page_size <= page <= (base + data.size - 1) // page_size
               for base, data in regions.items() if data.size)


def outcome_divergence(triggered_ids, model_status: str, model_fault_address: int | None,
                       qemu_signal: str | None, regions: Mapping[int, np.ndarray]) -> str | None:
    """The id of the known divergence that explains an instruction the model and QEMU end
    differently, or None when none does (a real mismatch).

    Parameters
    ----------
    triggered_ids : collection of str
        What :func:`triggered` said for the instruction, from the state before it.
    model_status : str
        The model's outcome (``ok``, ``undef``, ``sme_trap``, ``fault``).
    model_fault_address : int or None
        The model's fault address for ``fault``.
    qemu_signal : str or None
        The signal QEMU reported (None when the instruction completed).
    regions : mapping of int to numpy.ndarray
        The memory regions of the run (their pages are what QEMU maps).
    """
    if qemu_signal is not None:
        return None
    if model_status == "undef" and NON_STREAMING_SVE.id in triggered_ids:
        return NON_STREAMING_SVE.id
    if model_status == "fault" and qemu_maps(model_fault_address, regions):
        return PAGE_GRANULAR_MEMORY.id
    return None


def state_divergence(initial: ArchState) -> str | None:
    """The id of the known divergence that makes QEMU's final state from ``initial`` differ
    from the model's whatever the program: FPCR bits of FEAT_AFP/EBF16 (QEMU acts on them) or
    FPCR/FPSR bits QEMU does not keep. None when ``initial`` has none of them."""
    if initial.fpcr & (AFP_EBF16_FPCR_BITS | ~QEMU_FPCR_KEPT) or initial.fpsr & ~QEMU_FPSR_KEPT:
        return FPCR_AFP_EBF16.id
    return None


@dataclass(frozen=True)
class Quirk:
    """A modelled divergence: ``apply(word, before, after, result)`` turns the model's
    ``after`` state into what QEMU produces (it does nothing unless ``result`` is OK)."""

    id: str
    apply: Callable[[int, ArchState, ArchState, Result], None]


def _apply_vertical_ld1(word: int, before: ArchState, after: ArchState, result: Result) -> None:
    if result.status is Status.OK:
        after.za[...] = qemu_vertical_ld1_za(decode(word), before, after)


_QUIRKS: dict[str, Quirk] = {
    VERTICAL_LD1_STALE_TAIL.id: Quirk(VERTICAL_LD1_STALE_TAIL.id, _apply_vertical_ld1),
    UQXTN_D_SIGNED.id: Quirk(UQXTN_D_SIGNED.id, _apply_uqxtn_d),
}


def modelled_quirks(word: int, state: ArchState, *,
                    qemu_version: Version = QEMU_ORACLE_VERSION) -> list[Quirk]:
    """The modelled divergences instruction ``word`` triggers from ``state`` (before it runs)."""
    return quirks_among(triggered(decode(word), state, qemu_version=qemu_version))


def quirks_among(ids) -> list[Quirk]:
    """The modelled divergences among ``ids`` (as :func:`triggered` returns them)."""
    return [_QUIRKS[i] for i in ids if i in _QUIRKS]
