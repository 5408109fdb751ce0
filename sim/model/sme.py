"""SME operations of the model: SVCR, SVL arithmetic, ZERO, LDR/STR ZA, tile LD1/ST1, MOVA."""

from __future__ import annotations

import numpy as np

from zatile.sw.arch.constants import MASK64, SVCR_SM, SVCR_ZA
from zatile.sw.arch.isa import Decoded

__all__ = ["SmeOps"]


class SmeOps:
    """Handlers of the :class:`~zatile.sim.model.ReferenceModel` (mixed into it)."""

    # ------------------------------------------------------------------ SVCR and scalars
    def _op_msr_svcr_imm(self, decoded: Decoded) -> None:
        params = decoded.form.params
        start = int(params["start"])
        if params["set_sm"]:
            self._set_pstate_sm(start)
        if params["set_za"]:
            self._set_pstate_za(start)

    def _op_mrs_svcr(self, decoded: Decoded) -> int:
        value = self.state.svcr & (SVCR_SM | SVCR_ZA)
        self._set_x(decoded["rt"], value)
        return value

    def _op_msr_svcr(self, decoded: Decoded) -> None:
        value = self._x(decoded["rt"])
        self._set_pstate_sm(value & SVCR_SM)
        self._set_pstate_za(value & SVCR_ZA)

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
