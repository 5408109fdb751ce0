"""The core of the reference model: decode, the checks in architectural order, state and memory.

:meth:`ModelCore.execute` decodes the word with :func:`~zatile.sw.arch.isa.decode` (a word
outside the table is UNDEFINED), runs the checks in the architectural order (docs/isa.md, "Trap
order"): a form whose optional feature the configuration lacks is UNDEFINED; with SME access
disabled every instruction traps with SMTC 0; then the form's
:class:`~zatile.sw.arch.isa.Requires` decides (ZA=0 traps with SMTC 3; a ZA-array instruction at
SM=0 traps with SMTC 2 before ZA is looked at; a streaming-SVE instruction at SM=0 is UNDEFINED,
because the engine implements no non-streaming SVE). Then the handler named after the form's
operation (:func:`handler_name`) performs it. Memory accesses are checked before anything is
written, so a trap, an UNDEF or a fault leaves every register and every byte of memory as it
was.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Iterable

import numpy as np

from zatile.sim.model.mapping import active_elements, runs, tile_elements
from zatile.sim.state import ArchState, MemoryFault
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.constants import FPSR_RESET_ON_SM_CHANGE, MASK64, SVCR_SM, SVCR_ZA, Smtc
from zatile.sw.arch.engine import Result, Status
from zatile.sw.arch.isa import OPS, Decoded, Form, Requires, Trait, decode

__all__ = ["ModelCore", "Fault", "admission", "handler_name"]

_ADDRESS_SPACE = 1 << 64


def handler_name(op: str) -> str:
    """The model method that performs operation ``op`` of the table."""
    return f"_op_{op}"


class Fault(Exception):
    """An access of an active element to unmapped memory (raised before any state changes)."""

    def __init__(self, address: int):
        super().__init__(f"fault at 0x{address:016x}")
        self.address = address


@lru_cache(maxsize=1 << 14)
def _decode(word: int) -> Decoded | None:
    return decode(word)


def admission(config: EngineConfig, form: Form, sme_enabled: bool, svcr: int) -> Result | None:
    """The result of an instruction of ``form`` that does not execute (UNDEF for a feature
    ``config`` lacks or SVE at SM=0, an SME trap when disabled or in the wrong PSTATE mode),
    None when it executes."""
    if not config.has(form.feature):
        return Result(Status.UNDEF)
    if not sme_enabled:
        return Result(Status.SME_TRAP, smtc=Smtc.SME_DISABLED, form=form.name)
    requires = form.requires
    if requires is Requires.ZA:
        if not svcr & SVCR_ZA:
            return Result(Status.SME_TRAP, smtc=Smtc.ZA_INACTIVE, form=form.name)
    elif requires is Requires.SM_ZA:
        if not svcr & SVCR_SM:
            return Result(Status.SME_TRAP, smtc=Smtc.NEEDS_STREAMING, form=form.name)
        if not svcr & SVCR_ZA:
            return Result(Status.SME_TRAP, smtc=Smtc.ZA_INACTIVE, form=form.name)
    elif requires is Requires.STREAMING:
        if not svcr & SVCR_SM:
            return Result(Status.UNDEF)
    return None


class ModelCore:
    """Decoding, the architectural checks, and the state and memory helpers every handler uses.

    The handlers themselves live in the mixins :class:`~zatile.sim.model.sme.SmeOps`,
    :class:`~zatile.sim.model.outer.OuterProductOps` and
    :class:`~zatile.sim.model.sve.StreamingSveOps`; :class:`~zatile.sim.model.ReferenceModel`
    combines them and documents the constructor's parameters, attributes and errors.
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
        # Every operation of the table is handled by the method named after it.
        self._handlers: dict[str, Callable[[Decoded], int | None]] = {
            op: getattr(self, handler_name(op)) for op in OPS}
        self._normalized: tuple = ()
        #: NZCV the instruction being executed set, if any (:meth:`_set_flags`).
        self._flags: int | None = None
        #: FPSR exception bits the instruction being executed raised, if it is a
        #: floating-point one (:meth:`_raise_fp`).
        self._fp_flags: int | None = None

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
        refused = admission(self._config, form, self.sme_enabled, self.state.svcr)
        if refused is not None:
            return refused
        self._normalize_state()
        self._flags = self._fp_flags = None
        try:
            scalar = self._handlers[form.op](decoded)
        except Fault as fault:
            return Result(Status.FAULT, fault_address=fault.address, form=form.name)
        if (self._flags is None) == (Trait.SETS_FLAGS in form.traits):
            raise RuntimeError(f"{form.name}: the handler of '{form.op}' must set NZCV exactly "
                               f"when the form has Trait.SETS_FLAGS")
        if (self._fp_flags is None) == (Trait.FP_FLAGS in form.traits):
            raise RuntimeError(f"{form.name}: the handler of '{form.op}' must report FPSR flags "
                               f"exactly when the form has Trait.FP_FLAGS")
        return Result(Status.OK, scalar=scalar, form=form.name, nzcv=self._flags,
                      fpsr_flags=self._fp_flags)

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

    def _set_flags(self, nzcv: int) -> None:
        """Write PSTATE.NZCV (bit 3 N, 2 Z, 1 C, 0 V); the result reports it to the CPU."""
        self.state.nzcv = self._flags = nzcv

    def _raise_fp(self, flags: int) -> None:
        """OR the cumulative FPSR exception bits ``flags`` (possibly none) into FPSR; the
        result reports them to the CPU. The engine traps no floating-point exception
        (docs/isa.md, "Floating-point exceptions")."""
        self._fp_flags = (self._fp_flags or 0) | flags
        self.state.fpsr |= flags

    def _predicate_test(self, result: np.ndarray, governing: np.ndarray, esize: int) -> None:
        """Set NZCV by ``PredTest``: over the elements of size ``esize`` active in
        ``governing``, N = the first is active in ``result``, Z = none is, C = the last is not,
        V = 0 (docs/isa.md, "Streaming SVE subset"). Both predicates are packed P registers."""
        bits = np.unpackbits(governing, bitorder="little")[::esize].astype(bool)
        values = np.unpackbits(result, bitorder="little")[::esize].astype(bool)[bits]
        first, last = (bool(values[0]), bool(values[-1])) if values.size else (False, False)
        self._set_flags(first << 3 | (not values.any()) << 2 | (not last) << 1)

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

    # SVCR side effects (docs/isa.md, "PSTATE and SVCR").
    def _set_pstate_sm(self, value: int) -> None:
        state = self.state
        if bool(value) == state.sm:
            return
        state.z[...] = 0
        state.p[...] = 0
        state.ffr[...] = 0
        state.fpsr = FPSR_RESET_ON_SM_CHANGE
        state.svcr = (state.svcr & ~SVCR_SM) | (SVCR_SM if value else 0)

    def _set_pstate_za(self, value: int) -> None:
        state = self.state
        if bool(value) == state.za_enabled:
            return
        if value:
            state.za[...] = 0
        # ZA 1->0: the contents become UNKNOWN and cannot be observed; they are left as they are.
        state.svcr = (state.svcr & ~SVCR_ZA) | (SVCR_ZA if value else 0)

    # ------------------------------------------------------------------ memory helpers
    def _check_range(self, address: int, length: int, write: bool) -> None:
        """Raise :class:`Fault` unless all of [address, address+length) mod 2^64 is mapped."""
        address &= MASK64
        first = min(length, _ADDRESS_SPACE - address)
        try:
            self.state.memory.check(address, first, write)
            if first < length:
                self.state.memory.check(0, length - first, write)
        except MemoryFault as fault:
            raise Fault(fault.address & MASK64) from None

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
        except Fault:
            return False
        return True

    def _load_elements(self, base: int, size: int, active: np.ndarray) -> np.ndarray:
        """Contiguous elements e at base + e·size: uint8[count, size], inactive ones zero.

        Inactive elements are not accessed. Raises :class:`Fault` for the first active
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
        for low, high in runs(indices):
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
        for low, high in runs(indices):
            self._write_range(base + low * size, data[low:high + 1].reshape(-1))
