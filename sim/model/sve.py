"""Streaming-SVE operations of the model: predicates, DUP, element counts, Z/P loads and stores."""

from __future__ import annotations

import numpy as np

from zatile.sim.model.mapping import UNSIGNED, predicate_with_first
from zatile.sw.arch.constants import MASK64
from zatile.sw.arch.isa import Decoded, shifted_imm8, signed_offset9
from zatile.sw.arch.pseudocode import predicate_count

__all__ = ["StreamingSveOps"]


class StreamingSveOps:
    """Handlers of the :class:`~zatile.sim.model.ReferenceModel` (mixed into it)."""

    # ------------------------------------------------------------------ streaming SVE
    def _op_ptrue(self, decoded: Decoded) -> None:
        esize = decoded.form.params["esize"]
        svl_bytes = self._svl_bytes
        count = predicate_count(decoded["pattern"], svl_bytes // esize)
        self.state.p[decoded["pd"]] = predicate_with_first(count, esize, svl_bytes)

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
        result = predicate_with_first(count, esize, self._svl_bytes)
        self.state.p[decoded["pd"]] = result
        self._predicate_test(result, predicate_with_first(elements, esize, self._svl_bytes),
                             esize)

    def _broadcast(self, register: int, value: int, esize: int) -> None:
        lanes = self._svl_bytes // esize
        element = np.array([value & ((1 << (8 * esize)) - 1)], UNSIGNED[esize])
        self.state.z[register] = np.tile(element, lanes).view(np.uint8)

    def _op_dup_scalar(self, decoded: Decoded) -> None:
        self._broadcast(decoded["zd"], self._xsp(decoded["rn"]), decoded.form.params["esize"])

    def _op_dup_imm(self, decoded: Decoded) -> None:
        value = shifted_imm8(decoded["imm8"], decoded.fields.get("sh", 0))
        self._broadcast(decoded["zd"], value, decoded.form.params["esize"])

    def _op_cnt(self, decoded: Decoded) -> int:
        elements = self._svl_bytes // decoded.form.params["esize"]
        value = predicate_count(decoded["pattern"], elements) * (decoded["imm4"] + 1)
        self._set_x(decoded["rd"], value)
        return value

    def _register_transfer(self, decoded: Decoded) -> tuple[int, int]:
        """(address, length) of SVE LDR/STR of a Z register (VL bytes) or P register (PL)."""
        length = self._svl_bytes // 8 if decoded.form.params["predicate"] else self._svl_bytes
        offset = signed_offset9(decoded["imm9h"], decoded["imm9l"])
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
