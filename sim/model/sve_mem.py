"""Streaming-SVE loads and stores beyond contiguous LD1/ST1: replicating (LD1R*, LD1RQ*),
sign-extending (LD1S*), structure (LD2-LD4, ST2-ST4) and non-temporal (LDNT1, STNT1), and
prefetches (docs/isa.md, "Streaming SVE loads and stores").

Every access goes through the core's ``_load_elements`` and ``_store_elements``: an inactive
element is never accessed and never faults, the first active element (in element order) that
touches unmapped memory faults with the first unmapped address, and nothing is written to a
register or to memory before every access is known to succeed.
"""

from __future__ import annotations

import numpy as np

from zatile.sim.model.mapping import SIGNED, UNSIGNED
from zatile.sw.arch.constants import MASK64
from zatile.sw.arch.isa import Decoded

__all__ = ["VectorMemoryOps"]

#: Bytes of one quadword, the unit LD1RQ loads and replicates.
_QUADWORD = 16


def _extend(data: np.ndarray, esize: int, signed: bool) -> np.ndarray:
    """uint8[count, msize] memory elements widened to uint8[count·esize] register bytes."""
    msize = data.shape[1]
    elements = data.copy().view(SIGNED[msize] if signed else UNSIGNED[msize]).reshape(-1)
    widened = elements.astype(SIGNED[esize] if signed else UNSIGNED[esize])
    return widened.view(np.uint8)


class VectorMemoryOps:
    """Handlers of the :class:`~zatile.sim.model.ReferenceModel` (mixed into it).

    The contiguous address of LD1S*, LDNT1 and STNT1 is the one of LD1/ST1
    (:meth:`~zatile.sim.model.sve.StreamingSveOps._contiguous_address`).
    """

    def _scalar_plus_scalar(self, decoded: Decoded) -> int:
        """Xn|SP + Xm × msize (scalar+scalar addressing)."""
        return (self._xsp(decoded["rn"])
                + self._x(decoded["rm"]) * decoded.form.params["msize"]) & MASK64

    def _op_ld1_replicate(self, decoded: Decoded) -> None:
        """LD1R*: one element at Xn|SP + uimm6 × msize, extended and written to every active
        element; inactive elements are zero, and with none active memory is not read."""
        params = decoded.form.params
        msize, esize = params["msize"], params["esize"]
        active = self._active(decoded["pg"], esize)
        address = (self._xsp(decoded["rn"]) + decoded["imm6"] * msize) & MASK64
        element = self._load_elements(address, msize, np.array([active.any()]))
        value = _extend(element, esize, params["signed"])
        vector = np.zeros((active.size, esize), np.uint8)
        vector[active] = value
        self.state.z[decoded["zt"]] = vector.reshape(-1)

    def _op_ld1_signed(self, decoded: Decoded) -> None:
        """LD1SB/LD1SH/LD1SW: contiguous elements of msize bytes, sign-extended to esize."""
        params = decoded.form.params
        active = self._active(decoded["pg"], params["esize"])
        data = self._load_elements(self._contiguous_address(decoded), params["msize"], active)
        self.state.z[decoded["zt"]] = _extend(data, params["esize"], signed=True)

    def _op_ldnt1_contiguous(self, decoded: Decoded) -> None:
        """LDNT1: the data effect of LD1 of the same size (the non-temporal hint has none)."""
        self._op_ld1_contiguous(decoded)

    def _op_stnt1_contiguous(self, decoded: Decoded) -> None:
        """STNT1: the data effect of ST1 of the same size."""
        self._op_st1_contiguous(decoded)

    def _structure_address(self, decoded: Decoded) -> int:
        """Address of structure 0: Xn|SP + Xm × msize, or + imm4 × registers × VL bytes."""
        params = decoded.form.params
        if params["scalar_offset"]:
            return self._scalar_plus_scalar(decoded)
        offset = decoded["imm4"] * params["registers"] * self._svl_bytes
        return (self._xsp(decoded["rn"]) + offset) & MASK64

    def _structure_registers(self, decoded: Decoded) -> list[int]:
        """Zt, Zt+1, ... modulo 32."""
        return [(decoded["zt"] + k) % 32 for k in range(decoded.form.params["registers"])]

    def _op_ld_structure(self, decoded: Decoded) -> None:
        """LD2/LD3/LD4: structure e (its ``registers`` elements consecutive in memory) to
        element e of Zt, Zt+1, ...; inactive structures are zero and not accessed."""
        params = decoded.form.params
        msize, registers = params["msize"], self._structure_registers(decoded)
        active = self._active(decoded["pg"], msize)
        data = self._load_elements(self._structure_address(decoded), msize * len(registers),
                                   active)
        by_register = data.reshape(active.size, len(registers), msize)
        for index, register in enumerate(registers):
            self.state.z[register] = by_register[:, index].reshape(-1)

    def _op_st_structure(self, decoded: Decoded) -> None:
        """ST2/ST3/ST4: element e of Zt, Zt+1, ... interleaved to structure e."""
        params = decoded.form.params
        msize, registers = params["msize"], self._structure_registers(decoded)
        active = self._active(decoded["pg"], msize)
        data = np.stack([self.state.z[register].reshape(-1, msize) for register in registers],
                        axis=1).reshape(active.size, -1)
        self._store_elements(self._structure_address(decoded), data, active)

    def _op_ld1rq(self, decoded: Decoded) -> None:
        """LD1RQ*: the elements of the first quadword, under the predicate's first quadword,
        from Xn|SP + Xm × msize or + imm4 × 16; replicated to every quadword."""
        params = decoded.form.params
        msize = params["msize"]
        active = self._active(decoded["pg"], msize)[:_QUADWORD // msize]
        if params["scalar_offset"]:
            address = self._scalar_plus_scalar(decoded)
        else:
            address = (self._xsp(decoded["rn"]) + decoded["imm4"] * _QUADWORD) & MASK64
        quadword = self._load_elements(address, msize, active).reshape(-1)
        self.state.z[decoded["zt"]] = np.tile(quadword, self._svl_bytes // _QUADWORD)

    def _op_prefetch(self, decoded: Decoded) -> None:
        """PRFB/PRFH/PRFW/PRFD: a hint; no architectural effect, never a fault."""
