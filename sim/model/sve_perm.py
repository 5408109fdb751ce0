"""Streaming-SVE element moves, permutes and MOVPRFX in the model.

Vectors are handled as rows of element bytes (``uint8[elements, esize]``), so one handler serves
every element size including the 128-bit elements of DUP (indexed); predicates as rows of
``esize`` bits, one per byte of the vector, so that a predicate permute moves whole predicate
elements as the Arm ARM's ``Elem[..., esize DIV 8]`` does (docs/isa.md, "Streaming SVE element
moves and permutes"). A SIMD&FP scalar register is the low bits of its Z register; writing one
zeroes the rest of the Z register.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from zatile.sim.model.mapping import SIGNED, UNSIGNED
from zatile.sw.arch.isa import Decoded, shifted_imm8

__all__ = ["PermuteOps", "zip_rows", "uzp_rows", "trn_rows"]


def zip_rows(first: np.ndarray, second: np.ndarray, part: int) -> np.ndarray:
    """ZIP1 (``part`` 0) or ZIP2 (1): interleave the low or high halves of two row arrays."""
    half = first.shape[0] // 2
    result = np.empty_like(first)
    result[0::2] = first[part * half:(part + 1) * half]
    result[1::2] = second[part * half:(part + 1) * half]
    return result


def uzp_rows(first: np.ndarray, second: np.ndarray, part: int) -> np.ndarray:
    """UZP1 (``part`` 0) or UZP2 (1): the even or odd rows of ``first`` then of ``second``."""
    return np.concatenate((first, second))[part::2]


def trn_rows(first: np.ndarray, second: np.ndarray, part: int) -> np.ndarray:
    """TRN1 (``part`` 0) or TRN2 (1): the even or odd rows of both, alternating."""
    result = np.empty_like(first)
    result[0::2] = first[part::2]
    result[1::2] = second[part::2]
    return result


_INTERLEAVE: dict[str, Callable[[np.ndarray, np.ndarray, int], np.ndarray]] = {
    "zip": zip_rows, "uzp": uzp_rows, "trn": trn_rows,
}


def _element_bytes(value: int, esize: int) -> np.ndarray:
    """``value`` modulo 2^(8·esize) as ``esize`` little-endian bytes."""
    return np.frombuffer((value % (1 << (8 * esize))).to_bytes(esize, "little"), np.uint8)


def _last_active(active: np.ndarray) -> int:
    """``LastActiveElement``: the index of the last active element, -1 when none is."""
    indices = np.flatnonzero(active)
    return int(indices[-1]) if indices.size else -1


class PermuteOps:
    """Handlers of the :class:`~zatile.sim.model.ReferenceModel` (mixed into it)."""

    # ------------------------------------------------------------------ helpers
    def _rows(self, register: int, esize: int) -> np.ndarray:
        """Z<register> as a uint8[elements, esize] view."""
        return self.state.z[register].reshape(-1, esize)

    def _pair_rows(self, register: int, esize: int) -> np.ndarray:
        """The rows of ``Zn`` then ``Zn+1`` (modulo 32): a table of twice the elements."""
        return np.concatenate((self._rows(register, esize),
                               self._rows((register + 1) % 32, esize)))

    def _write_rows(self, register: int, rows: np.ndarray) -> None:
        self.state.z[register] = rows.reshape(-1)

    def _write_scalar_vector(self, register: int, element: np.ndarray) -> None:
        """Write a SIMD&FP scalar register: the low bytes of Z<register>, the rest zeroed."""
        vector = np.zeros(self._svl_bytes, np.uint8)
        vector[:element.size] = element
        self.state.z[register] = vector

    def _predicate_rows(self, register: int, esize: int) -> np.ndarray:
        """P<register> as uint8[elements, esize] of its bits (one per vector byte)."""
        return np.unpackbits(self.state.p[register], bitorder="little").reshape(-1, esize)

    def _write_predicate_rows(self, register: int, rows: np.ndarray) -> None:
        self.state.p[register] = np.packbits(rows.reshape(-1), bitorder="little")

    def _merge(self, decoded: Decoded, rows: np.ndarray, esize: int, zeroing: bool) -> None:
        """Write ``rows`` to the active elements of ``zd`` under ``pg``; the inactive ones keep
        their value or, when ``zeroing``, become zero."""
        destination = decoded["zd"]
        active = self._active(decoded["pg"], esize)[:, None]
        old = np.zeros_like(rows) if zeroing else self._rows(destination, esize)
        self._write_rows(destination, np.where(active, rows, old))

    # ------------------------------------------------------------------ moves
    def _op_perm_index(self, decoded: Decoded) -> None:
        """INDEX: element e is base + e·step, modulo the element size."""
        esize, fields = decoded.form.params["esize"], decoded.fields
        base = fields["base_imm"] if "base_imm" in fields else self._x(fields["rn"])
        step = fields["step_imm"] if "step_imm" in fields else self._x(fields["rm"])
        count = self._svl_bytes // esize
        values = [(base + element * step) % (1 << (8 * esize)) for element in range(count)]
        self.state.z[decoded["zd"]] = np.array(values, UNSIGNED[esize]).view(np.uint8)

    def _op_perm_dup_indexed(self, decoded: Decoded) -> None:
        """DUP (indexed): every element is element ``index`` of Zn; zero when the index is at
        or beyond the last element."""
        esize = decoded.form.params["esize"]
        low_bits = 4 - (esize.bit_length() - 1)
        index = decoded["imm_hi"] << low_bits | decoded.fields.get("imm_lo", 0)
        source = self._rows(decoded["zn"], esize)
        rows = np.zeros_like(source)
        if index < source.shape[0]:
            rows[:] = source[index]
        self._write_rows(decoded["zd"], rows)

    def _op_perm_cpy(self, decoded: Decoded) -> None:
        """CPY: an immediate, a general register (31 is SP) or a SIMD&FP scalar to the active
        elements."""
        params, fields = decoded.form.params, decoded.fields
        esize = params["esize"]
        if "imm8" in fields:
            element = _element_bytes(shifted_imm8(fields["imm8"], fields.get("sh", 0)), esize)
        elif "rn" in fields:
            element = _element_bytes(self._xsp(fields["rn"]), esize)
        else:
            element = self.state.z[fields["vn"], :esize].copy()
        rows = np.broadcast_to(element, (self._svl_bytes // esize, esize))
        self._merge(decoded, rows, esize, params["zeroing"])

    def _op_perm_sel(self, decoded: Decoded) -> None:
        """SEL: the active elements from Zn, the others from Zm."""
        esize = decoded.form.params["esize"]
        active = self._active(decoded["pg"], esize)[:, None]
        self._write_rows(decoded["zd"], np.where(active, self._rows(decoded["zn"], esize),
                                                 self._rows(decoded["zm"], esize)))

    def _op_perm_insr(self, decoded: Decoded) -> None:
        """INSR: shift Zdn up by one element and put the scalar in element 0."""
        esize, fields = decoded.form.params["esize"], decoded.fields
        element = _element_bytes(self._x(fields["rm"]), esize) if "rm" in fields \
            else self.state.z[fields["vm"], :esize].copy()
        rows = self._rows(decoded["zdn"], esize)
        self._write_rows(decoded["zdn"], np.concatenate((element[None], rows[:-1])))

    def _scalar_result(self, decoded: Decoded, element: np.ndarray) -> int | None:
        """Write an element to the general register (zero-extended; returned as the result's
        scalar) or SIMD&FP scalar register the form names."""
        fields = decoded.fields
        general = decoded.form.destination
        if general is not None:
            value = int.from_bytes(element.tobytes(), "little")
            self._set_x(fields[general], value)
            return value
        self._write_scalar_vector(fields["vd"] if "vd" in fields else fields["vdn"], element)
        return None

    def _op_perm_last(self, decoded: Decoded) -> int | None:
        """LASTA: the element after the last active one (element 0 after the end or when none
        is active); LASTB: the last active element (the last element when none is)."""
        params = decoded.form.params
        esize = params["esize"]
        source = self._rows(decoded["zn"], esize)
        last = _last_active(self._active(decoded["pg"], esize))
        if params["after"]:
            last = last + 1 if last + 1 < source.shape[0] else 0
        elif last < 0:
            last = source.shape[0] - 1
        return self._scalar_result(decoded, source[last].copy())

    def _op_perm_clast(self, decoded: Decoded) -> int | None:
        """CLASTA/CLASTB: as LASTA/LASTB from Zm, but with no active element the destination
        keeps its value (a scalar keeps its low element bits, zero-extended)."""
        params, fields = decoded.form.params, decoded.fields
        esize = params["esize"]
        source = self._rows(fields["zm"], esize)
        last = _last_active(self._active(fields["pg"], esize))
        if last < 0:
            if "zdn" in fields:
                return None
            element = _element_bytes(self._x(fields["rdn"]), esize) if "rdn" in fields \
                else self.state.z[fields["vdn"], :esize].copy()
        else:
            if params["after"]:
                last = last + 1 if last + 1 < source.shape[0] else 0
            element = source[last].copy()
        if "zdn" in fields:
            self._write_rows(fields["zdn"], np.broadcast_to(element, source.shape))
            return None
        return self._scalar_result(decoded, element)

    # ------------------------------------------------------------------ permutes
    def _op_perm_ext(self, decoded: Decoded) -> None:
        """EXT: the vector starting at byte ``imm`` of the pair (first register low); an offset
        at or beyond the vector length counts as 0."""
        fields = decoded.fields
        position = fields["imm_hi"] << 3 | fields["imm_lo"]
        if position >= self._svl_bytes:
            position = 0
        if decoded.form.params["pairs"]:
            table = self._pair_rows(fields["zn"], 1).reshape(-1)
            destination = fields["zd"]
        else:
            table = np.concatenate((self.state.z[fields["zdn"]], self.state.z[fields["zm"]]))
            destination = fields["zdn"]
        self.state.z[destination] = table[position:position + self._svl_bytes]

    def _op_perm_rev(self, decoded: Decoded) -> None:
        """REV (vector): the elements in reverse order."""
        esize = decoded.form.params["esize"]
        self._write_rows(decoded["zd"], self._rows(decoded["zn"], esize)[::-1].copy())

    def _op_perm_rev_predicate(self, decoded: Decoded) -> None:
        """REV (predicate): the predicate elements (esize/8 bits each) in reverse order."""
        esize = decoded.form.params["esize"]
        self._write_predicate_rows(decoded["pd"], self._predicate_rows(decoded["pn"], esize)[::-1])

    def _interleave(self, decoded: Decoded, kind: str) -> None:
        """ZIP/UZP/TRN (``kind``) of two vectors, or of two predicates by whole elements."""
        params = decoded.form.params
        esize = params["esize"]
        function = _INTERLEAVE[kind]
        if "pd" in decoded.fields:
            result = function(self._predicate_rows(decoded["pn"], esize),
                              self._predicate_rows(decoded["pm"], esize), int(params["high"]))
            self._write_predicate_rows(decoded["pd"], result)
        else:
            result = function(self._rows(decoded["zn"], esize), self._rows(decoded["zm"], esize),
                              int(params["high"]))
            self._write_rows(decoded["zd"], result)

    def _op_perm_zip(self, decoded: Decoded) -> None:
        self._interleave(decoded, "zip")

    def _op_perm_uzp(self, decoded: Decoded) -> None:
        self._interleave(decoded, "uzp")

    def _op_perm_trn(self, decoded: Decoded) -> None:
        self._interleave(decoded, "trn")

    _op_perm_zip_predicate = _op_perm_zip
    _op_perm_uzp_predicate = _op_perm_uzp
    _op_perm_trn_predicate = _op_perm_trn

    def _table_lookup(self, decoded: Decoded, table: np.ndarray, default: np.ndarray) -> None:
        """Element e of Zd is ``table[Zm[e]]``, or ``default[e]`` for an index beyond it."""
        esize = decoded.form.params["esize"]
        indices = self.state.z[decoded["zm"]].view(UNSIGNED[esize]).astype(np.uint64)
        inside = indices < np.uint64(table.shape[0])
        result = default.copy()
        result[inside] = table[indices[inside].astype(np.intp)]
        self._write_rows(decoded["zd"], result)

    def _op_perm_tbl(self, decoded: Decoded) -> None:
        """TBL: out-of-range indices give zero; the SVE2 form looks up ``{Zn, Zn+1}``."""
        esize = decoded.form.params["esize"]
        table = self._pair_rows(decoded["zn"], esize) if decoded.form.params["pairs"] \
            else self._rows(decoded["zn"], esize).copy()
        self._table_lookup(decoded, table, np.zeros((self._svl_bytes // esize, esize), np.uint8))

    def _op_perm_tbx(self, decoded: Decoded) -> None:
        """TBX: out-of-range indices keep the element of Zd."""
        esize = decoded.form.params["esize"]
        self._table_lookup(decoded, self._rows(decoded["zn"], esize).copy(),
                           self._rows(decoded["zd"], esize))

    def _op_perm_splice(self, decoded: Decoded) -> None:
        """SPLICE: the elements of the first register from its first to its last active one
        (inactive ones between included), then the lowest elements of the second."""
        esize, fields = decoded.form.params["esize"], decoded.fields
        if decoded.form.params["pairs"]:
            first, second, destination = self._rows(fields["zn"], esize), \
                self._rows((fields["zn"] + 1) % 32, esize), fields["zd"]
        else:
            first, second, destination = self._rows(fields["zdn"], esize), \
                self._rows(fields["zm"], esize), fields["zdn"]
        indices = np.flatnonzero(self._active(fields["pg"], esize))
        segment = first[indices[0]:indices[-1] + 1] if indices.size else first[:0]
        self._write_rows(destination, np.concatenate(
            (segment, second[:first.shape[0] - segment.shape[0]])))

    def _reverse_within(self, decoded: Decoded, unit: int) -> None:
        """Reverse the order of the ``unit``-bit pieces of each active element (merging)."""
        esize = decoded.form.params["esize"]
        bits = np.unpackbits(self._rows(decoded["zn"], esize), axis=1, bitorder="little")
        reversed_bits = bits.reshape(bits.shape[0], -1, unit)[:, ::-1].reshape(bits.shape)
        self._merge(decoded, np.packbits(reversed_bits, axis=1, bitorder="little"), esize,
                    zeroing=False)

    def _op_perm_revb(self, decoded: Decoded) -> None:
        self._reverse_within(decoded, 8)

    def _op_perm_revh(self, decoded: Decoded) -> None:
        self._reverse_within(decoded, 16)

    def _op_perm_revw(self, decoded: Decoded) -> None:
        self._reverse_within(decoded, 32)

    def _op_perm_rbit(self, decoded: Decoded) -> None:
        self._reverse_within(decoded, 1)

    def _op_perm_unpack(self, decoded: Decoded) -> None:
        """SUNPK/UUNPK: the low (LO) or high (HI) half of Zn's elements, extended to double
        width."""
        params = decoded.form.params
        esize, part = params["esize"], int(params["high"])
        count = self._svl_bytes // esize
        narrow = self.state.z[decoded["zn"]].view(
            (SIGNED if params["signed"] else UNSIGNED)[esize // 2])[part * count:(part + 1) * count]
        wide = narrow.astype((SIGNED if params["signed"] else UNSIGNED)[esize])
        self.state.z[decoded["zd"]] = wide.view(np.uint8)

    def _op_perm_unpack_predicate(self, decoded: Decoded) -> None:
        """PUNPKLO/PUNPKHI: each bit of the low or high half of Pn becomes the lowest bit of a
        .H predicate element."""
        part = int(decoded.form.params["high"])
        source = np.unpackbits(self.state.p[decoded["pn"]], bitorder="little")
        half = source.size // 2
        result = np.zeros_like(source)
        result[0::2] = source[part * half:(part + 1) * half]
        self.state.p[decoded["pd"]] = np.packbits(result, bitorder="little")

    # ------------------------------------------------------------------ MOVPRFX
    def _op_perm_movprfx(self, decoded: Decoded) -> None:
        """MOVPRFX: a copy of Zn (predicated: of its active elements, the others zeroed or
        kept); the instruction it prefixes then executes on its own (docs/isa.md,
        "MOVPRFX")."""
        if "pg" not in decoded.fields:
            self.state.z[decoded["zd"]] = self.state.z[decoded["zn"]].copy()
            return
        params = decoded.form.params
        self._merge(decoded, self._rows(decoded["zn"], params["esize"]).copy(), params["esize"],
                    params["zeroing"])
