"""Streaming-SVE compares, predicate operations, counts and reductions of the model.

Predicates are handled as bool arrays of one entry per element (``ElemP``) and packed back into
the P register with only the lowest bit of each element set; NZCV comes from ``PredTest``
(:meth:`~zatile.sim.model.core.ModelCore._predicate_test`). docs/isa.md, "Streaming SVE
predicates, counts and reductions", states the rules.
"""

from __future__ import annotations

import functools
import operator
from typing import Callable

import numpy as np

from zatile.sim.model.mapping import SIGNED, UNSIGNED
from zatile.sw.arch.constants import MASK64
from zatile.sw.arch.isa import Decoded
from zatile.sw.arch.pseudocode import predicate_count, sat_q

__all__ = ["PredicateCountReduceOps", "COMPARISONS", "REDUCTIONS"]

#: Compare conditions: condition -> (signed operands, comparison).
COMPARISONS: dict[str, tuple[bool, Callable[[np.ndarray, np.ndarray], np.ndarray]]] = {
    "eq": (True, np.equal), "ne": (True, np.not_equal),
    "ge": (True, np.greater_equal), "gt": (True, np.greater),
    "lt": (True, np.less), "le": (True, np.less_equal),
    "hs": (False, np.greater_equal), "hi": (False, np.greater),
    "lo": (False, np.less), "ls": (False, np.less_equal),
}

#: Predicate logic: operation -> function(governing, first, second, destination) on bool arrays.
_LOGIC: dict[str, Callable[..., np.ndarray]] = {
    "and": lambda g, n, m, d: g & n & m,
    "bic": lambda g, n, m, d: g & n & ~m,
    "eor": lambda g, n, m, d: g & (n ^ m),
    "sel": lambda g, n, m, d: np.where(g, n, m),
    "orr": lambda g, n, m, d: g & (n | m),
    "orn": lambda g, n, m, d: g & (n | ~m),
    "nor": lambda g, n, m, d: g & ~(n | m),
    "nand": lambda g, n, m, d: g & ~(n & m),
}

#: Integer reductions: function -> (signed elements, identity of inactive elements, reduce).
REDUCTIONS: dict[str, tuple[bool, Callable[[int], int], Callable[[list[int]], int]]] = {
    "sadd": (True, lambda bits: 0, sum),
    "uadd": (False, lambda bits: 0, sum),
    "smax": (True, lambda bits: -(1 << (bits - 1)), max),
    "umax": (False, lambda bits: 0, max),
    "smin": (True, lambda bits: (1 << (bits - 1)) - 1, min),
    "umin": (False, lambda bits: (1 << bits) - 1, min),
    "or": (False, lambda bits: 0, lambda values: functools.reduce(operator.or_, values)),
    "eor": (False, lambda bits: 0, lambda values: functools.reduce(operator.xor, values)),
    "and": (False, lambda bits: (1 << bits) - 1,
            lambda values: functools.reduce(operator.and_, values)),
}


def _last_active(governing: np.ndarray, elements: np.ndarray) -> bool:
    """``LastActive``: ``elements`` at the last element active in ``governing`` (False if none)."""
    active = np.flatnonzero(governing)
    return bool(active.size) and bool(elements[active[-1]])


def _as_signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


class PredicateCountReduceOps:
    """Handlers of the :class:`~zatile.sim.model.ReferenceModel` (mixed into it)."""

    # ------------------------------------------------------------------ predicate helpers
    def _elem_p(self, register: int, esize: int) -> np.ndarray:
        """bool[elements]: ``ElemP`` of every element of ``esize`` bytes of P<register>."""
        return np.unpackbits(self.state.p[register], bitorder="little")[::esize].astype(bool)

    def _packed(self, elements: np.ndarray, esize: int) -> np.ndarray:
        """The P register value with element e of ``esize`` bytes set where ``elements[e]``."""
        bits = np.zeros(self._svl_bytes, np.uint8)
        bits[::esize] = elements
        return np.packbits(bits, bitorder="little")

    def _write_predicate(self, register: int, elements: np.ndarray, esize: int,
                         governing: np.ndarray | None) -> None:
        """Write P<register>; with ``governing`` (bool elements) also set NZCV by PredTest."""
        result = self._packed(elements, esize)
        self.state.p[register] = result
        if governing is not None:
            self._predicate_test(result, self._packed(governing, esize), esize)

    def _lanes(self, register: int, esize: int, signed: bool) -> np.ndarray:
        return self.state.z[register].view((SIGNED if signed else UNSIGNED)[esize])

    # ------------------------------------------------------------------ compares
    def _op_cmp(self, decoded: Decoded) -> None:
        params = decoded.form.params
        esize = params["esize"]
        signed, compare = COMPARISONS[params["cond"]]
        first = self._lanes(decoded["zn"], esize, signed).astype(object)
        if params["second"] == "vector":
            second = self._lanes(decoded["zm"], esize, signed).astype(object)
        elif params["second"] == "wide":
            wide = self._lanes(decoded["zm"], 8, signed).astype(object)
            second = np.repeat(wide, 8 // esize)
        else:
            second = decoded.fields.get("imm5", decoded.fields.get("imm7"))
        governing = self._elem_p(decoded["pg"], esize)
        self._write_predicate(decoded["pd"], governing & compare(first, second).astype(bool),
                              esize, governing)

    # ------------------------------------------------------------------ predicate operations
    def _predicate_logic(self, decoded: Decoded, flags: bool) -> None:
        g, n, m, d = (self._elem_p(decoded[name], 1) for name in ("pg", "pn", "pm", "pd"))
        result = _LOGIC[decoded.form.params["logic"]](g, n, m, d)
        self._write_predicate(decoded["pd"], result, 1, g if flags else None)

    def _op_pred_logic(self, decoded: Decoded) -> None:
        self._predicate_logic(decoded, flags=False)

    def _op_pred_logic_flags(self, decoded: Decoded) -> None:
        self._predicate_logic(decoded, flags=True)

    def _op_ptest(self, decoded: Decoded) -> None:
        self._predicate_test(self.state.p[decoded["pn"]], self.state.p[decoded["pg"]], 1)

    def _op_pfirst(self, decoded: Decoded) -> None:
        governing = self._elem_p(decoded["pg"], 1)
        result = self._elem_p(decoded["pdn"], 1)
        active = np.flatnonzero(governing)
        if active.size:
            result[active[0]] = True
        self._write_predicate(decoded["pdn"], result, 1, governing)

    def _op_pnext(self, decoded: Decoded) -> None:
        esize = decoded.form.params["esize"]
        governing = self._elem_p(decoded["pv"], esize)
        # the last true element of Pdn, whether or not Pv has it (LastActiveElement(operand))
        current = np.flatnonzero(self._elem_p(decoded["pdn"], esize))
        start = current[-1] + 1 if current.size else 0
        following = np.flatnonzero(governing[start:])
        result = np.zeros_like(governing)
        if following.size:
            result[start + following[0]] = True
        self._write_predicate(decoded["pdn"], result, esize, governing)

    def _op_ptrues(self, decoded: Decoded) -> None:
        esize = decoded.form.params["esize"]
        elements = self._svl_bytes // esize
        result = np.arange(elements) < predicate_count(decoded["pattern"], elements)
        self._write_predicate(decoded["pd"], result, esize, result)

    def _break(self, decoded: Decoded) -> np.ndarray:
        """The BRK* result (bool bytes): BRKA/BRKB break after/before the first active true
        element of Pn; BRKPA/BRKPB do so on Pm only when the last active element of Pn is
        true; BRKN keeps Pdm when the last active element of Pn is true, else clears it."""
        params = decoded.form.params
        governing = self._elem_p(decoded["pg"], 1)
        first = self._elem_p(decoded["pn"], 1)
        kind = params["kind"]
        if kind == "next":
            return self._elem_p(decoded["pdm"], 1) if _last_active(governing, first) \
                else np.zeros_like(first)
        if kind == "propagate":
            carry, source = _last_active(governing, first), self._elem_p(decoded["pm"], 1)
        else:
            carry, source = True, first
        result = np.zeros_like(first)
        for element in np.flatnonzero(governing):
            if not params["after"]:
                carry = carry and not source[element]
            result[element] = carry
            if params["after"]:
                carry = carry and not source[element]
        if params.get("merging"):
            result = np.where(governing, result, self._elem_p(decoded["pd"], 1))
        return result

    def _brk_target(self, decoded: Decoded) -> int:
        return decoded["pdm"] if decoded.form.params["kind"] == "next" else decoded["pd"]

    def _op_brk(self, decoded: Decoded) -> None:
        self._write_predicate(self._brk_target(decoded), self._break(decoded), 1, None)

    def _op_brk_flags(self, decoded: Decoded) -> None:
        result = self._break(decoded)
        # BRKNS tests its result against all-true; the others against Pg.
        governing = np.ones_like(result) if decoded.form.params["kind"] == "next" \
            else self._elem_p(decoded["pg"], 1)
        self._write_predicate(self._brk_target(decoded), result, 1, governing)

    def _op_while_cond(self, decoded: Decoded) -> None:
        """WHILELE/LS (ascending) and WHILEGE/GT/HS/HI (from the last element down): the
        first operand steps by one in its register width, wrapping, while the condition holds
        (docs/isa.md, "Streaming SVE predicates, counts and reductions")."""
        params = decoded.form.params
        esize, width, cond = params["esize"], params["width"], params["cond"]
        signed, compare = COMPARISONS[cond]
        read = (lambda value: _as_signed(value, width)) if signed \
            else (lambda value: value & ((1 << width) - 1))
        first, second = self._x(decoded["rn"]), read(self._x(decoded["rm"]))
        elements = self._svl_bytes // esize
        descending = cond in ("ge", "gt", "hs", "hi")
        order = range(elements - 1, -1, -1) if descending else range(elements)
        result = np.zeros(elements, bool)
        for element in order:
            if not compare(read(first), second):
                break
            result[element] = True
            first += -1 if descending else 1
        self._write_predicate(decoded["pd"], result, esize, np.ones(elements, bool))

    # ------------------------------------------------------------------ counts
    def _op_cntp(self, decoded: Decoded) -> int:
        esize = decoded.form.params["esize"]
        count = int(np.count_nonzero(self._elem_p(decoded["pg"], esize)
                                     & self._elem_p(decoded["pn"], esize)))
        self._set_x(decoded["rd"], count)
        return count

    def _pattern_count(self, decoded: Decoded) -> int:
        elements = self._svl_bytes // decoded.form.params["esize"]
        return predicate_count(decoded["pattern"], elements) * (decoded["imm4"] + 1)

    def _active_count(self, decoded: Decoded) -> int:
        return int(np.count_nonzero(self._elem_p(decoded["pm"], decoded.form.params["esize"])))

    def _adjust_scalar(self, decoded: Decoded, count: int) -> int:
        """X<rdn> plus or minus ``count``: wrapping, or saturating in 32 or 64 bits (a 32-bit
        signed result is sign-extended to 64, an unsigned one zero-extended)."""
        params = decoded.form.params
        width, saturate = params["width"], params["saturate"]
        delta = -count if params["decrement"] else count
        value = self._x(decoded["rdn"])
        if saturate is None:
            result = value + delta
        else:
            signed = saturate == "signed"
            operand = _as_signed(value, width) if signed else value & ((1 << width) - 1)
            result = sat_q(operand + delta, width, signed)
        result &= MASK64
        self._set_x(decoded["rdn"], result)
        return result

    def _adjust_vector(self, decoded: Decoded, count: int) -> None:
        """Every element of Z<zdn> plus or minus ``count``, wrapping or saturating."""
        params = decoded.form.params
        esize, saturate = params["esize"], params["saturate"]
        bits = 8 * esize
        delta = -count if params["decrement"] else count
        lanes = self._lanes(decoded["zdn"], esize, saturate == "signed")
        values = [int(value) + delta for value in lanes]
        if saturate is not None:
            values = [sat_q(value, bits, saturate == "signed") for value in values]
        mask = (1 << bits) - 1
        lanes.view(UNSIGNED[esize])[:] = [value & mask for value in values]

    def _op_count_scalar(self, decoded: Decoded) -> int:
        return self._adjust_scalar(decoded, self._pattern_count(decoded))

    def _op_count_vector(self, decoded: Decoded) -> None:
        self._adjust_vector(decoded, self._pattern_count(decoded))

    def _op_countp_scalar(self, decoded: Decoded) -> int:
        return self._adjust_scalar(decoded, self._active_count(decoded))

    def _op_countp_vector(self, decoded: Decoded) -> None:
        self._adjust_vector(decoded, self._active_count(decoded))

    # ------------------------------------------------------------------ reductions
    def _op_reduce(self, decoded: Decoded) -> None:
        """SADDV, UADDV, S/U MIN/MAX V, ANDV, ORV, EORV: inactive elements count as the
        identity; the result goes to the low bytes of Z<vd>, the rest of which is zeroed (a
        SIMD&FP scalar write)."""
        params = decoded.form.params
        esize, size = params["esize"], params["result_size"]
        signed, identity, reduce = REDUCTIONS[params["function"]]
        lanes = self._lanes(decoded["zn"], esize, signed)
        active = self._elem_p(decoded["pg"], esize)
        values = [int(value) for value in lanes[active]] or [identity(8 * esize)]
        result = int(reduce(values)) & ((1 << (8 * size)) - 1)
        vector = np.zeros(self._svl_bytes, np.uint8)
        vector[:size] = np.frombuffer(result.to_bytes(size, "little"), np.uint8)
        self.state.z[decoded["vd"]] = vector
