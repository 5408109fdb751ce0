"""The architectural reference model of the zatile engine, bit-exact to the Arm ARM.

Everything else (the RTL scoreboard, the QEMU comparison, the kernel-ABI model) checks against
this model. It executes one instruction word at a time on an :class:`~sim.state.ArchState`:

1. :func:`sw.isa.decode` turns the word into a form and its field values (a word outside the
   table is UNDEFINED). Nothing here looks at instruction bits; handlers read ``decoded.fields``
   and ``form.params`` only.
2. The checks run in the architectural order (sme-isa.md §1.5): a form whose optional feature the
   configuration lacks is UNDEFINED; with SME access disabled every instruction traps with SMTC 0;
   then the form's :class:`~sw.isa.Requires` decides (ZA=0 traps with SMTC 3; a ZA-array
   instruction at SM=0 traps with SMTC 2 before ZA is looked at; a streaming-SVE instruction at
   SM=0 is UNDEFINED, because the engine implements no non-streaming SVE).
3. :data:`OP_HANDLERS` maps the form's semantic operation (one of :data:`sw.isa.OPS`) to the
   method that performs it. Memory accesses are checked before anything is written, so a trap,
   an UNDEF or a fault leaves every register and every byte of memory as it was.

Every handler works on whole vectors and tiles with numpy; the floating-point arithmetic of the
outer products is :mod:`sim.fp`.

The ZA mapping (sme-isa.md §1.3) is in two small public functions, :func:`tile_elements` and
:func:`active_elements`, so that :mod:`sim.divergences` describes QEMU's behaviour in the same
terms.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from types import MappingProxyType
from typing import Callable, Iterable, Mapping

import numpy as np

from sim import fp
from sim.state import FPSR_RESET_ON_SM_CHANGE, ArchState, MemoryFault
from sw.config import EngineConfig
from sw.isa import Decoded, Requires, decode

__all__ = [
    "Status",
    "Result",
    "ReferenceModel",
    "OP_HANDLERS",
    "SMTC_SME_DISABLED",
    "SMTC_ILLEGAL_IN_STREAMING",
    "SMTC_NEEDS_STREAMING",
    "SMTC_ZA_INACTIVE",
    "tile_elements",
    "active_elements",
    "predicate_count",
]

MASK64 = (1 << 64) - 1
_ADDRESS_SPACE = 1 << 64

#: SME trap codes, ESR_ELx.ISS[2:0] of an EC=0x1D exception (sme-isa.md §1.5).
SMTC_SME_DISABLED = 0
SMTC_ILLEGAL_IN_STREAMING = 1
SMTC_NEEDS_STREAMING = 2
SMTC_ZA_INACTIVE = 3

# Little-endian unsigned element types by size in bytes (ZA and Z bytes are little-endian).
_UNSIGNED = {1: np.dtype("<u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8")}
_SIGNED = {1: np.dtype("<i1"), 2: np.dtype("<i2"), 4: np.dtype("<i4"), 8: np.dtype("<i8")}
_SIGN_BIT = {2: np.uint16(0x8000), 4: np.uint32(0x8000_0000), 8: np.uint64(1 << 63)}


class Status(Enum):
    """How an instruction ended."""

    OK = "ok"
    #: UNDEFINED: outside the table, a feature the configuration lacks, or SVE at SM=0.
    UNDEF = "undef"
    #: An SME trap (ESR_ELx.EC=0x1D); :attr:`Result.smtc` says which.
    SME_TRAP = "sme_trap"
    #: A data abort: an active element touched unmapped memory.
    FAULT = "fault"


@dataclass(frozen=True)
class Result:
    """The outcome of one instruction.

    Attributes
    ----------
    status : Status
    smtc : int or None
        SME trap code for :attr:`Status.SME_TRAP` (0 disabled, 1 illegal in streaming mode,
        2 needs streaming mode, 3 ZA inactive).
    fault_address : int or None
        First faulting byte for :attr:`Status.FAULT`.
    scalar : int or None
        The 64-bit value written to a general register (MRS SVCR, RDSVL, RDVL, CNTx, ADDSVL,
        ADDSPL), also when the destination is XZR and the value is discarded.
    form : str or None
        Name of the decoded form (:data:`sw.isa.FORMS_BY_NAME`), None for UNDEF.
    """

    status: Status
    smtc: int | None = None
    fault_address: int | None = None
    scalar: int | None = None
    form: str | None = None


class _Fault(Exception):
    """An access of an active element to unmapped memory (raised before any state changes)."""

    def __init__(self, address: int):
        super().__init__(f"fault at 0x{address:016x}")
        self.address = address


# --------------------------------------------------------------------------- mapping helpers
def tile_elements(za: np.ndarray, esize: int, tile: int) -> np.ndarray:
    """Tile ``ZA<tile>`` of ``esize``-byte elements as a writable uint8[dim, dim, esize] view.

    Element (r, c) is bytes [c·esize, (c+1)·esize) of the array vector ZA[tile + r·esize]
    (sme-isa.md §1.3): ``view[i]`` is horizontal slice i, ``view[:, j]`` vertical slice j.
    """
    svl_bytes = za.shape[0]
    dim = svl_bytes // esize
    view = za.reshape(dim, esize, svl_bytes)[:, tile, :].reshape(dim, dim, esize)
    return view


def _tile_typed(za: np.ndarray, esize: int, tile: int) -> np.ndarray:
    """Tile ``ZA<tile>`` as a writable [dim, dim] view of little-endian unsigned elements."""
    svl_bytes = za.shape[0]
    dim = svl_bytes // esize
    return za.reshape(dim, esize, svl_bytes)[:, tile, :].view(_UNSIGNED[esize])


def active_elements(predicate: np.ndarray, esize: int) -> np.ndarray:
    """bool[SVL_B / esize]: ``ActivePredicateElement`` of every element of ``esize`` bytes.

    ``predicate`` is the uint8[SVL_B/8] register; element e tests predicate bit e·esize.
    """
    return np.unpackbits(predicate, bitorder="little").view(np.bool_)[::esize]


def predicate_count(pattern: int, elements: int) -> int:
    """``DecodePredCount``: how many elements a PTRUE/CNTx pattern selects out of ``elements``."""
    if pattern == 0:                                    # POW2
        return 1 << (elements.bit_length() - 1)
    if 1 <= pattern <= 8:                               # VL1-VL8
        return pattern if pattern <= elements else 0
    if 9 <= pattern <= 13:                              # VL16-VL256
        count = 16 << (pattern - 9)
        return count if count <= elements else 0
    if pattern == 29:                                   # MUL4
        return elements - elements % 4
    if pattern == 30:                                   # MUL3
        return elements - elements % 3
    if pattern == 31:                                   # ALL
        return elements
    return 0                                            # unallocated #uimm5


def _predicate_with_first(count: int, esize: int, svl_bytes: int) -> np.ndarray:
    """A P register value whose first ``count`` elements of ``esize`` bytes are active."""
    bits = np.zeros(svl_bytes, np.uint8)
    bits[0:count * esize:esize] = 1
    return np.packbits(bits, bitorder="little")


def _runs(indices: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) of each run of consecutive values in sorted ``indices``."""
    first, last = int(indices[0]), int(indices[-1])
    if last - first + 1 == indices.size:
        return [(first, last)]
    breaks = np.flatnonzero(np.diff(indices) != 1)
    starts = np.concatenate(([indices[0]], indices[breaks + 1]))
    ends = np.concatenate((indices[breaks], [indices[-1]]))
    return list(zip(starts.tolist(), ends.tolist()))


@lru_cache(maxsize=1 << 14)
def _decode(word: int) -> Decoded | None:
    return decode(word)


# --------------------------------------------------------------------------- the model
class ReferenceModel:
    """Executes instructions of the table on an architectural state.

    Parameters
    ----------
    config : EngineConfig
        What the engine implements (features, supported SVLs).
    state : ArchState, optional
        The state to run on (used in place). Defaults to a zero state at ``config.max_svl``.
    sme_enabled : bool
        Control input (CPACR_EL1.SMEN and the higher-level enables): when False every
        instruction of the table traps with SMTC 0 and changes nothing.

    Attributes
    ----------
    state : ArchState
    sme_enabled : bool

    Raises
    ------
    ValueError
        If ``state.svl`` is not one of ``config.supported_svls``.
    """

    def __init__(self, config: EngineConfig, state: ArchState | None = None, *,
                 sme_enabled: bool = True):
        if not isinstance(config, EngineConfig):
            raise TypeError(f"config must be an EngineConfig, not {config!r}")
        if state is None:
            state = ArchState(svl=config.max_svl)
        if state.svl not in config.supported_svls:
            raise ValueError(
                f"state SVL {state.svl!r} is not supported by the configuration (supported: "
                f"{', '.join(map(str, config.supported_svls))})")
        self._config = config
        self.state = state
        self.sme_enabled = bool(sme_enabled)
        self._handlers: dict[str, Callable[[Decoded], int | None]] = {
            op: getattr(self, method) for op, method in OP_HANDLERS.items()}
        self._normalized: tuple = ()

    @property
    def config(self) -> EngineConfig:
        return self._config

    # ------------------------------------------------------------------ public interface
    def execute(self, word: int) -> Result:
        """Execute one instruction word; scalar operands come from ``state.x``/``state.sp``."""
        decoded = _decode(word)
        if decoded is None:
            return Result(Status.UNDEF)
        form = decoded.form
        if not self._config.has(form.feature):
            return Result(Status.UNDEF)
        if not self.sme_enabled:
            return Result(Status.SME_TRAP, smtc=SMTC_SME_DISABLED, form=form.name)
        svcr = self.state.svcr
        requires = form.requires
        if requires is Requires.ZA:
            if not svcr & 2:
                return Result(Status.SME_TRAP, smtc=SMTC_ZA_INACTIVE, form=form.name)
        elif requires is Requires.SM_ZA:
            if not svcr & 1:
                return Result(Status.SME_TRAP, smtc=SMTC_NEEDS_STREAMING, form=form.name)
            if not svcr & 2:
                return Result(Status.SME_TRAP, smtc=SMTC_ZA_INACTIVE, form=form.name)
        elif requires is Requires.STREAMING:
            if not svcr & 1:
                return Result(Status.UNDEF)
        self._normalize_state()
        try:
            scalar = self._handlers[form.op](decoded)
        except _Fault as fault:
            return Result(Status.FAULT, fault_address=fault.address, form=form.name)
        return Result(Status.OK, scalar=scalar, form=form.name)

    def run(self, words: Iterable[int]) -> list[Result]:
        """Execute straight-line code; execution continues after traps and faults."""
        return [self.execute(word) for word in words]

    def set_svl(self, svl_bits: int) -> None:
        """Request an SVL (an SMCR_ELx.LEN write); the configuration picks the effective one.

        When the effective SVL changes, Z, P, FFR and ZA are reallocated at the new length and
        zeroed; SVCR, FPCR, FPSR, X, SP and memory are kept.

        Raises
        ------
        ValueError
            If ``svl_bits`` is not a positive integer.
        """
        if not isinstance(svl_bits, (int, np.integer)) or svl_bits <= 0:
            raise ValueError(f"requested SVL must be a positive number of bits, not {svl_bits!r}")
        effective = self._config.effective_svl(int(svl_bits))
        state = self.state
        if effective == state.svl:
            return
        svl_bytes = effective // 8
        state.svl = effective
        state.za = np.zeros((svl_bytes, svl_bytes), np.uint8)
        state.z = np.zeros((32, svl_bytes), np.uint8)
        state.p = np.zeros((16, svl_bytes // 8), np.uint8)
        state.ffr = np.zeros(svl_bytes // 8, np.uint8)

    # ------------------------------------------------------------------ state helpers
    def _normalize_state(self) -> None:
        """Make the arrays the in-place views rely on C-contiguous of the right type."""
        state = self.state
        arrays = (state.za, state.z, state.p, state.x)
        if len(self._normalized) == 4 and all(a is b for a, b in zip(arrays, self._normalized)):
            return
        for name, dtype in (("za", np.uint8), ("z", np.uint8), ("p", np.uint8),
                            ("x", np.uint64)):
            array = getattr(state, name)
            if not (isinstance(array, np.ndarray) and array.dtype == dtype
                    and array.flags.c_contiguous and array.flags.writeable):
                setattr(state, name, np.ascontiguousarray(array, dtype=dtype).copy())
        self._normalized = (state.za, state.z, state.p, state.x)

    @property
    def _svl_bytes(self) -> int:
        return self.state.za.shape[0]

    def _x(self, number: int) -> int:
        """X register read where 31 is XZR."""
        return 0 if number == 31 else int(self.state.x[number])

    def _xsp(self, number: int) -> int:
        """X register read where 31 is SP."""
        return self.state.sp & MASK64 if number == 31 else int(self.state.x[number])

    def _set_x(self, number: int, value: int) -> None:
        """X register write where 31 is XZR (the value is discarded)."""
        if number != 31:
            self.state.x[number] = value & MASK64

    def _set_xsp(self, number: int, value: int) -> None:
        """X register write where 31 is SP."""
        if number == 31:
            self.state.sp = value & MASK64
        else:
            self.state.x[number] = value & MASK64

    def _slice_number(self, selector_field: int, offset: int, dim: int) -> int:
        """(UInt(W12+selector<31:0>) + offset) MOD dim."""
        return ((int(self.state.x[12 + selector_field]) & 0xFFFF_FFFF) + offset) % dim

    def _active(self, predicate: int, esize: int) -> np.ndarray:
        return active_elements(self.state.p[predicate], esize)

    def _slice(self, decoded: Decoded, esize: int, vertical: bool) -> np.ndarray:
        """The addressed tile slice as a writable uint8[dim, esize] view."""
        fields = decoded.fields
        dim = self._svl_bytes // esize
        tile = tile_elements(self.state.za, esize, fields.get("tile", 0))
        index = self._slice_number(fields["rs"], fields.get("off", 0), dim)
        return tile[:, index] if vertical else tile[index]

    # SVCR side effects (sme-isa.md §1.4).
    def _set_pstate_sm(self, value: int) -> None:
        state = self.state
        if bool(value) == state.sm:
            return
        state.z[...] = 0
        state.p[...] = 0
        state.ffr[...] = 0
        state.fpsr = FPSR_RESET_ON_SM_CHANGE
        state.svcr = (state.svcr & ~1) | int(bool(value))

    def _set_pstate_za(self, value: int) -> None:
        state = self.state
        if bool(value) == state.za_enabled:
            return
        if value:
            state.za[...] = 0
        # ZA 1->0: the contents become UNKNOWN and cannot be observed; they are left as they are.
        state.svcr = (state.svcr & ~2) | (int(bool(value)) << 1)

    # ------------------------------------------------------------------ memory helpers
    def _check_range(self, address: int, length: int, write: bool) -> None:
        """Raise :class:`_Fault` unless all of [address, address+length) mod 2^64 is mapped."""
        address &= MASK64
        first = min(length, _ADDRESS_SPACE - address)
        try:
            self.state.memory.check(address, first, write)
            if first < length:
                self.state.memory.check(0, length - first, write)
        except MemoryFault as fault:
            raise _Fault(fault.address & MASK64) from None

    def _read_range(self, address: int, length: int) -> np.ndarray:
        address &= MASK64
        first = min(length, _ADDRESS_SPACE - address)
        data = self.state.memory.read(address, first)
        if first < length:
            data = np.concatenate((data, self.state.memory.read(0, length - first)))
        return data

    def _write_range(self, address: int, payload: np.ndarray) -> None:
        address &= MASK64
        length = payload.size
        first = min(length, _ADDRESS_SPACE - address)
        self.state.memory.write(address, payload[:first])
        if first < length:
            self.state.memory.write(0, payload[first:])

    def _span_mapped(self, address: int, length: int, write: bool) -> bool:
        try:
            self._check_range(address, length, write)
        except _Fault:
            return False
        return True

    def _load_elements(self, base: int, size: int, active: np.ndarray) -> np.ndarray:
        """Contiguous elements e at base + e·size: uint8[count, size], inactive ones zero.

        Inactive elements are not accessed. Raises :class:`_Fault` for the first active
        element, in element order, that touches unmapped memory.
        """
        count = active.size
        out = np.zeros((count, size), np.uint8)
        indices = np.flatnonzero(active)
        if indices.size == 0:
            return out
        first, last = int(indices[0]), int(indices[-1])
        start, length = base + first * size, (last - first + 1) * size
        if self._span_mapped(start, length, write=False):
            out[first:last + 1] = self._read_range(start, length).reshape(-1, size)
            out[~active] = 0
            return out
        # A hole under some inactive element (or a real fault): go element by element.
        for element in indices.tolist():
            self._check_range(base + element * size, size, write=False)
        for low, high in _runs(indices):
            out[low:high + 1] = self._read_range(
                base + low * size, (high - low + 1) * size).reshape(-1, size)
        return out

    def _store_elements(self, base: int, data: np.ndarray, active: np.ndarray) -> None:
        """Store the active rows of uint8[count, size] ``data`` to base + e·size.

        Every active element is checked before any byte is written; inactive elements are
        neither checked nor written.
        """
        size = data.shape[1]
        indices = np.flatnonzero(active)
        if indices.size == 0:
            return
        first, last = int(indices[0]), int(indices[-1])
        if not self._span_mapped(base + first * size, (last - first + 1) * size, write=True):
            for element in indices.tolist():
                self._check_range(base + element * size, size, write=True)
        for low, high in _runs(indices):
            self._write_range(base + low * size, data[low:high + 1].reshape(-1))

    # ------------------------------------------------------------------ SVCR and scalars
    def _op_msr_svcr_imm(self, decoded: Decoded) -> None:
        params = decoded.form.params
        start = int(params["start"])
        if params["set_sm"]:
            self._set_pstate_sm(start)
        if params["set_za"]:
            self._set_pstate_za(start)

    def _op_mrs_svcr(self, decoded: Decoded) -> int:
        value = self.state.svcr & 3
        self._set_x(decoded["rt"], value)
        return value

    def _op_msr_svcr(self, decoded: Decoded) -> None:
        value = self._x(decoded["rt"])
        self._set_pstate_sm(value & 1)
        self._set_pstate_za((value >> 1) & 1)

    def _vector_length_unit(self, unit: str) -> int:
        if unit == "svl_bytes":
            return self._svl_bytes
        if unit == "svl_pred_bytes":
            return self._svl_bytes // 8
        raise ValueError(f"unknown vector-length unit {unit!r} in the instruction table")

    def _op_rdsvl(self, decoded: Decoded) -> int:
        value = (decoded["imm"] * self._vector_length_unit(decoded.form.params["unit"])) & MASK64
        self._set_x(decoded["rd"], value)
        return value

    def _op_addsvl(self, decoded: Decoded) -> int:
        unit = self._vector_length_unit(decoded.form.params["unit"])
        value = (self._xsp(decoded["rn"]) + decoded["imm"] * unit) & MASK64
        self._set_xsp(decoded["rd"], value)
        return value

    # ------------------------------------------------------------------ ZA array
    def _op_zero_za(self, decoded: Decoded) -> None:
        mask = decoded["mask"]
        rows = np.arange(self._svl_bytes) % 8
        self.state.za[((mask >> rows) & 1).astype(bool)] = 0

    def _za_vector(self, decoded: Decoded) -> tuple[int, int]:
        """(array vector number, address) of LDR/STR ZA."""
        svl_bytes, offset = self._svl_bytes, decoded["off"]
        vector = self._slice_number(decoded["rv"], offset, svl_bytes)
        return vector, (self._xsp(decoded["rn"]) + offset * svl_bytes) & MASK64

    def _op_ldr_za(self, decoded: Decoded) -> None:
        vector, address = self._za_vector(decoded)
        self._check_range(address, self._svl_bytes, write=False)
        self.state.za[vector] = self._read_range(address, self._svl_bytes)

    def _op_str_za(self, decoded: Decoded) -> None:
        vector, address = self._za_vector(decoded)
        self._check_range(address, self._svl_bytes, write=True)
        self._write_range(address, self.state.za[vector].copy())

    def _tile_slice_address(self, decoded: Decoded, esize: int) -> int:
        return (self._xsp(decoded["rn"]) + self._x(decoded["rm"]) * esize) & MASK64

    def _op_ld1_tile(self, decoded: Decoded) -> None:
        params = decoded.form.params
        esize = params["esize"]
        active = self._active(decoded["pg"], esize)
        data = self._load_elements(self._tile_slice_address(decoded, esize), esize, active)
        self._slice(decoded, esize, params["vertical"])[...] = data

    def _op_st1_tile(self, decoded: Decoded) -> None:
        params = decoded.form.params
        esize = params["esize"]
        active = self._active(decoded["pg"], esize)
        data = self._slice(decoded, esize, params["vertical"]).copy()
        self._store_elements(self._tile_slice_address(decoded, esize), data, active)

    def _op_mova_to_tile(self, decoded: Decoded) -> None:
        params = decoded.form.params
        esize = params["esize"]
        active = self._active(decoded["pg"], esize)
        source = self.state.z[decoded["zn"]].reshape(-1, esize)
        self._slice(decoded, esize, params["vertical"])[active] = source[active]

    def _op_mova_to_vector(self, decoded: Decoded) -> None:
        params = decoded.form.params
        esize = params["esize"]
        active = self._active(decoded["pg"], esize)
        source = self._slice(decoded, esize, params["vertical"])
        self.state.z[decoded["zd"]].reshape(-1, esize)[active] = source[active]

    # ------------------------------------------------------------------ outer products
    def _op_fmopa_fp32(self, decoded: Decoded) -> None:
        self._fmopa(decoded, fp.fmla_f32)

    def _op_fmopa_fp64(self, decoded: Decoded) -> None:
        self._fmopa(decoded, fp.fmla_f64)

    def _fmopa(self, decoded: Decoded, multiply_add) -> None:
        """Non-widening FMOPA/FMOPS (sme-isa.md §2.7): ZA[r][c] = ZA[r][c] + (±Zn[r])·Zm[c]."""
        esize = decoded.form.params["esize"]
        rows = np.flatnonzero(self._active(decoded["pn"], esize))
        columns = np.flatnonzero(self._active(decoded["pm"], esize))
        if rows.size == 0 or columns.size == 0:
            return
        z = self.state.z
        zn = z[decoded["zn"]].view(_UNSIGNED[esize])[rows]
        zm = z[decoded["zm"]].view(_UNSIGNED[esize])[columns]
        if decoded.form.params["subtract"]:
            zn = zn ^ _SIGN_BIT[esize]
        tile = _tile_typed(self.state.za, esize, decoded["zada"])
        grid = np.ix_(rows, columns)
        tile[grid] = multiply_add(tile[grid], zn[:, None], zm[None, :], self.state.fpcr)

    def _op_fmopa_fp16_widening(self, decoded: Decoded) -> None:
        fpcr = self.state.fpcr
        self._widening_mopa(decoded, lambda acc, a0, a1, b0, b1:
                            fp.fdotadd_f16(acc, a0, a1, b0, b1, fpcr))

    def _op_bfmopa(self, decoded: Decoded) -> None:
        self._widening_mopa(decoded, fp.bfdotadd)

    def _widening_mopa(self, decoded: Decoded, dot_add) -> None:
        """2-way 16-bit to fp32 FMOPA/BFMOPA and their MOPS (sme-isa.md §2.8, §2.9).

        Output (r, c) takes the pairs Zn.h[2r+k], Zm.h[2c+k]; an inactive 16-bit element
        counts as +0, MOPS negates the active Zn elements, and the element is updated iff
        (pr0 and pc0) or (pr1 and pc1).
        """
        row_active = self._active(decoded["pn"], 2).reshape(-1, 2)
        column_active = self._active(decoded["pm"], 2).reshape(-1, 2)
        update = (row_active[:, None, 0] & column_active[None, :, 0]) \
            | (row_active[:, None, 1] & column_active[None, :, 1])
        if not update.any():
            return
        z = self.state.z
        zn = np.where(row_active, z[decoded["zn"]].view(np.uint16).reshape(-1, 2), 0) \
            .astype(np.uint16)
        zm = np.where(column_active, z[decoded["zm"]].view(np.uint16).reshape(-1, 2), 0) \
            .astype(np.uint16)
        if decoded.form.params["subtract"]:
            zn = np.where(row_active, zn ^ _SIGN_BIT[2], zn)
        tile = _tile_typed(self.state.za, 4, decoded["zada"])
        result = dot_add(tile, zn[:, None, 0], zn[:, None, 1], zm[None, :, 0], zm[None, :, 1])
        tile[...] = np.where(update, result, tile)

    def _op_int_mopa(self, decoded: Decoded) -> None:
        """4-way integer outer products (sme-isa.md §2.10), wrapping modulo 2^(8·esize)."""
        params = decoded.form.params
        esize = params["esize"]
        source_size = esize // 4
        z = self.state.z
        zn_type = (_UNSIGNED if params["zn_unsigned"] else _SIGNED)[source_size]
        zm_type = (_UNSIGNED if params["zm_unsigned"] else _SIGNED)[source_size]
        row_active = self._active(decoded["pn"], source_size).reshape(-1, 4)
        column_active = self._active(decoded["pm"], source_size).reshape(-1, 4)
        zn = np.where(row_active, z[decoded["zn"]].view(zn_type).reshape(-1, 4), 0) \
            .astype(np.int64)
        zm = np.where(column_active, z[decoded["zm"]].view(zm_type).reshape(-1, 4), 0) \
            .astype(np.int64)
        products = (zn @ zm.T).view(np.uint64)        # |sum| < 2^34: exact in int64
        tile = _tile_typed(self.state.za, esize, decoded["zada"])
        wide = tile.astype(np.uint64)
        wide = wide - products if params["subtract"] else wide + products
        tile[...] = wide.astype(tile.dtype)           # keeps the low 8·esize bits: wraps

    def _op_add_vector_to_tile(self, decoded: Decoded) -> None:
        """ADDHA (Zn[c] into every active row) and ADDVA (Zn[r] into every active column)."""
        params = decoded.form.params
        esize = params["esize"]
        rows = self._active(decoded["pn"], esize)
        columns = self._active(decoded["pm"], esize)
        vector = self.state.z[decoded["zn"]].view(_UNSIGNED[esize])
        addend = vector[:, None] if params["vertical"] else vector[None, :]
        tile = _tile_typed(self.state.za, esize, decoded["zada"])
        tile[...] = np.where(rows[:, None] & columns[None, :], tile + addend, tile)

    # ------------------------------------------------------------------ streaming SVE
    def _op_ptrue(self, decoded: Decoded) -> None:
        esize = decoded.form.params["esize"]
        svl_bytes = self._svl_bytes
        count = predicate_count(decoded["pattern"], svl_bytes // esize)
        self.state.p[decoded["pd"]] = _predicate_with_first(count, esize, svl_bytes)

    def _op_pfalse(self, decoded: Decoded) -> None:
        self.state.p[decoded["pd"]] = 0

    def _op_while(self, decoded: Decoded) -> None:
        """WHILELT/WHILELO: element i is active while op1 + i < op2 (no wrap-around)."""
        params = decoded.form.params
        esize = params["esize"]
        width = 64 if params["wide"] else 32
        operands = []
        for register in (decoded["rn"], decoded["rm"]):
            value = self._x(register) & ((1 << width) - 1)
            if not params["unsigned"] and value >> (width - 1):
                value -= 1 << width
            operands.append(value)
        elements = self._svl_bytes // esize
        count = min(max(operands[1] - operands[0], 0), elements)
        self.state.p[decoded["pd"]] = _predicate_with_first(count, esize, self._svl_bytes)

    def _broadcast(self, register: int, value: int, esize: int) -> None:
        lanes = self._svl_bytes // esize
        element = np.array([value & ((1 << (8 * esize)) - 1)], _UNSIGNED[esize])
        self.state.z[register] = np.tile(element, lanes).view(np.uint8)

    def _op_dup_scalar(self, decoded: Decoded) -> None:
        self._broadcast(decoded["zd"], self._xsp(decoded["rn"]), decoded.form.params["esize"])

    def _op_dup_imm(self, decoded: Decoded) -> None:
        value = decoded["imm8"] << (8 * decoded.fields.get("sh", 0))
        self._broadcast(decoded["zd"], value, decoded.form.params["esize"])

    def _op_cnt(self, decoded: Decoded) -> int:
        elements = self._svl_bytes // decoded.form.params["esize"]
        value = predicate_count(decoded["pattern"], elements) * (decoded["imm4"] + 1)
        self._set_x(decoded["rd"], value)
        return value

    def _register_transfer(self, decoded: Decoded) -> tuple[int, int]:
        """(address, length) of SVE LDR/STR of a Z register (VL bytes) or P register (PL)."""
        length = self._svl_bytes // 8 if decoded.form.params["predicate"] else self._svl_bytes
        offset = decoded["imm9h"] << 3 | decoded["imm9l"]
        offset -= 512 if offset >= 256 else 0
        return (self._xsp(decoded["rn"]) + offset * length) & MASK64, length

    def _op_ldr_register(self, decoded: Decoded) -> None:
        address, length = self._register_transfer(decoded)
        self._check_range(address, length, write=False)
        data = self._read_range(address, length)
        if decoded.form.params["predicate"]:
            self.state.p[decoded["pt"]] = data
        else:
            self.state.z[decoded["zt"]] = data

    def _op_str_register(self, decoded: Decoded) -> None:
        address, length = self._register_transfer(decoded)
        self._check_range(address, length, write=True)
        source = self.state.p[decoded["pt"]] if decoded.form.params["predicate"] \
            else self.state.z[decoded["zt"]]
        self._write_range(address, source.copy())

    def _contiguous_address(self, decoded: Decoded) -> int:
        """Address of element 0 of contiguous LD1/ST1 (scalar+scalar or scalar+immediate)."""
        params = decoded.form.params
        msize, esize = params["msize"], params["esize"]
        base = self._xsp(decoded["rn"])
        if params["scalar_offset"]:
            return (base + self._x(decoded["rm"]) * msize) & MASK64
        # "#imm, mul vl": imm times the memory footprint of one vector of esize elements.
        return (base + decoded["imm4"] * (self._svl_bytes // esize) * msize) & MASK64

    def _op_ld1_contiguous(self, decoded: Decoded) -> None:
        params = decoded.form.params
        msize, esize = params["msize"], params["esize"]
        active = self._active(decoded["pg"], esize)
        data = self._load_elements(self._contiguous_address(decoded), msize, active)
        vector = np.zeros((active.size, esize), np.uint8)    # zero-extending
        vector[:, :msize] = data
        self.state.z[decoded["zt"]] = vector.reshape(-1)

    def _op_st1_contiguous(self, decoded: Decoded) -> None:
        params = decoded.form.params
        msize, esize = params["msize"], params["esize"]
        active = self._active(decoded["pg"], esize)
        data = self.state.z[decoded["zt"]].reshape(-1, esize)[:, :msize].copy()  # truncating
        self._store_elements(self._contiguous_address(decoded), data, active)


#: Semantic operation (:data:`sw.isa.OPS`) to the :class:`ReferenceModel` method performing it.
OP_HANDLERS: Mapping[str, str] = MappingProxyType({
    "msr_svcr_imm": "_op_msr_svcr_imm",
    "mrs_svcr": "_op_mrs_svcr",
    "msr_svcr": "_op_msr_svcr",
    "zero_za": "_op_zero_za",
    "ld1_tile": "_op_ld1_tile",
    "st1_tile": "_op_st1_tile",
    "ldr_za": "_op_ldr_za",
    "str_za": "_op_str_za",
    "mova_to_tile": "_op_mova_to_tile",
    "mova_to_vector": "_op_mova_to_vector",
    "fmopa_fp32": "_op_fmopa_fp32",
    "fmopa_fp64": "_op_fmopa_fp64",
    "fmopa_fp16_widening": "_op_fmopa_fp16_widening",
    "bfmopa": "_op_bfmopa",
    "int_mopa": "_op_int_mopa",
    "add_vector_to_tile": "_op_add_vector_to_tile",
    "rdsvl": "_op_rdsvl",
    "addsvl": "_op_addsvl",
    "ptrue": "_op_ptrue",
    "pfalse": "_op_pfalse",
    "while": "_op_while",
    "dup_scalar": "_op_dup_scalar",
    "dup_imm": "_op_dup_imm",
    "cnt": "_op_cnt",
    "ldr_register": "_op_ldr_register",
    "str_register": "_op_str_register",
    "ld1_contiguous": "_op_ld1_contiguous",
    "st1_contiguous": "_op_st1_contiguous",
})
