"""Outer products of the model: FMOPA/FMOPS (fp32, fp64, fp16 and bf16 widening), integer MOPA/MOPS, ADDHA/ADDVA."""

from __future__ import annotations

import numpy as np

from zatile.sim import fp
from zatile.sim.model.mapping import SIGN_BIT, SIGNED, UNSIGNED, tile_typed
from zatile.sw.arch.isa import Decoded

__all__ = ["OuterProductOps"]


class OuterProductOps:
    """Handlers of the :class:`~zatile.sim.model.ReferenceModel` (mixed into it)."""

    # ------------------------------------------------------------------ outer products
    def _op_fmopa_fp32(self, decoded: Decoded) -> None:
        self._fmopa(decoded, fp.fmla_f32)

    def _op_fmopa_fp64(self, decoded: Decoded) -> None:
        self._fmopa(decoded, fp.fmla_f64)

    def _fmopa(self, decoded: Decoded, multiply_add) -> None:
        """Non-widening FMOPA/FMOPS (docs/isa.md, "FMOPA"): ZA[r][c] = ZA[r][c] + (±Zn[r])·Zm[c]."""
        esize = decoded.form.params["esize"]
        rows = np.flatnonzero(self._active(decoded["pn"], esize))
        columns = np.flatnonzero(self._active(decoded["pm"], esize))
        if rows.size == 0 or columns.size == 0:
            return
        z = self.state.z
        zn = z[decoded["zn"]].view(UNSIGNED[esize])[rows]
        zm = z[decoded["zm"]].view(UNSIGNED[esize])[columns]
        if decoded.form.params["subtract"]:
            zn = zn ^ SIGN_BIT[esize]
        tile = tile_typed(self.state.za, esize, decoded["zada"])
        grid = np.ix_(rows, columns)
        tile[grid] = multiply_add(tile[grid], zn[:, None], zm[None, :], self.state.fpcr)

    def _op_fmopa_fp16_widening(self, decoded: Decoded) -> None:
        fpcr = self.state.fpcr
        self._widening_mopa(decoded, lambda acc, a0, a1, b0, b1:
                            fp.fdotadd_f16(acc, a0, a1, b0, b1, fpcr))

    def _op_bfmopa(self, decoded: Decoded) -> None:
        self._widening_mopa(decoded, fp.bfdotadd)

    def _widening_mopa(self, decoded: Decoded, dot_add) -> None:
        """2-way 16-bit to fp32 FMOPA/BFMOPA and their MOPS (docs/isa.md, "Widening outer products").

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
            zn = np.where(row_active, zn ^ SIGN_BIT[2], zn)
        tile = tile_typed(self.state.za, 4, decoded["zada"])
        result = dot_add(tile, zn[:, None, 0], zn[:, None, 1], zm[None, :, 0], zm[None, :, 1])
        tile[...] = np.where(update, result, tile)

    def _op_int_mopa(self, decoded: Decoded) -> None:
        """4-way integer outer products (docs/isa.md, "Integer outer products"), wrapping modulo 2^(8·esize)."""
        params = decoded.form.params
        esize = params["esize"]
        source_size = esize // 4
        z = self.state.z
        zn_type = (UNSIGNED if params["zn_unsigned"] else SIGNED)[source_size]
        zm_type = (UNSIGNED if params["zm_unsigned"] else SIGNED)[source_size]
        row_active = self._active(decoded["pn"], source_size).reshape(-1, 4)
        column_active = self._active(decoded["pm"], source_size).reshape(-1, 4)
        zn = np.where(row_active, z[decoded["zn"]].view(zn_type).reshape(-1, 4), 0) \
            .astype(np.int64)
        zm = np.where(column_active, z[decoded["zm"]].view(zm_type).reshape(-1, 4), 0) \
            .astype(np.int64)
        products = (zn @ zm.T).view(np.uint64)        # |sum| < 2^34: exact in int64
        tile = tile_typed(self.state.za, esize, decoded["zada"])
        wide = tile.astype(np.uint64)
        wide = wide - products if params["subtract"] else wide + products
        tile[...] = wide.astype(tile.dtype)           # keeps the low 8·esize bits: wraps

    def _op_add_vector_to_tile(self, decoded: Decoded) -> None:
        """ADDHA (Zn[c] into every active row) and ADDVA (Zn[r] into every active column)."""
        params = decoded.form.params
        esize = params["esize"]
        rows = self._active(decoded["pn"], esize)
        columns = self._active(decoded["pm"], esize)
        vector = self.state.z[decoded["zn"]].view(UNSIGNED[esize])
        addend = vector[:, None] if params["vertical"] else vector[None, :]
        tile = tile_typed(self.state.za, esize, decoded["zada"])
        tile[...] = np.where(rows[:, None] & columns[None, :], tile + addend, tile)
