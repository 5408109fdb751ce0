"""The data model of the instruction table: fields, forms, decoded words, PSTATE classes, traits.

A :class:`Form` is one instruction encoding: fixed bits, variable fields (:class:`Field`), an operand
template (:mod:`zatile.sw.arch.isa.syntax`), the semantic operation it performs, the PSTATE it
needs (:class:`Requires`), the optional feature it needs and the static parameters of its
operation. The forms themselves are declared once, in :mod:`zatile.sw.arch.isa.table`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Callable, Mapping

__all__ = ["Requires", "Trait", "Field", "Alias", "Form", "Decoded", "signed_offset9",
           "shifted_imm8"]


class Requires(Enum):
    """Which PSTATE an instruction needs (docs/isa.md, "Trap order"), in the order the checks run."""

    #: SMSTART/SMSTOP, MSR/MRS SVCR: only SME access (CheckSMEAccess).
    ACCESS = "access"
    #: RDSVL/ADDSVL/ADDSPL: SME enabled (CheckSMEEnabled), any SM/ZA.
    SME = "sme"
    #: ZERO, LDR/STR ZA: SME enabled and PSTATE.ZA=1.
    ZA = "za"
    #: MOVA, tile LD1/ST1, outer products, ADDHA/ADDVA: SM=1 then ZA=1.
    SM_ZA = "sm_za"
    #: Streaming SVE: legal only with SM=1 (the engine has no non-streaming SVE).
    STREAMING = "streaming"


class Trait(Enum):
    """A class of operations, stated once per operation in the table (``table.OP_TRAITS``).

    The RTL's unit selection, the testbench's coverage and the kernel model's checks all derive
    their operation lists from these (:func:`zatile.sw.arch.isa.ops_with`).
    """

    #: Reads memory.
    LOAD = "load"
    #: Writes memory.
    STORE = "store"
    #: Reads or writes one ZA tile slice or ZA array vector.
    ZA_SLICE = "za_slice"
    #: Accumulates into a ZA tile in an outer-product array.
    OUTER_PRODUCT = "outer_product"
    #: Writes SVCR (PSTATE.SM and/or PSTATE.ZA).
    SVCR_WRITE = "svcr_write"
    #: Sets PSTATE.NZCV, which the CPU holds: the engine reports the new flags with the result.
    SETS_FLAGS = "sets_flags"
    #: Floating-point arithmetic that may raise exceptions: the engine reports the cumulative
    #: FPSR bits it raised with the result, for the CPU to OR into FPSR.
    FP_FLAGS = "fp_flags"


def signed_offset9(high: int, low: int) -> int:
    """The signed 9-bit ``#imm, mul vl`` offset of SVE LDR/STR, split as ``imm9h:imm9l``."""
    value = high << 3 | low
    return value - 512 if value >= 256 else value


def shifted_imm8(imm8: int, shift: int) -> int:
    """The value of an SVE ``#imm8{, lsl #8}`` immediate (``shift`` is the ``sh`` bit)."""
    return imm8 << (8 * shift)


@dataclass(frozen=True)
class Field:
    """A bit field ``word[hi:lo]``."""

    name: str
    hi: int
    lo: int
    signed: bool = False

    @property
    def width(self) -> int:
        return self.hi - self.lo + 1

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lo

    def extract(self, word: int) -> int:
        value = (word >> self.lo) & ((1 << self.width) - 1)
        if self.signed and value >> (self.width - 1):
            value -= 1 << self.width
        return value

    def insert(self, value: int) -> int:
        low, high = (-(1 << (self.width - 1)), (1 << (self.width - 1)) - 1) if self.signed \
            else (0, (1 << self.width) - 1)
        if not low <= value <= high:
            raise ValueError(f"{value} does not fit field {self.name} ({low}..{high})")
        return (value & ((1 << self.width) - 1)) << self.lo


@dataclass(frozen=True)
class Alias:
    """A preferred spelling of some words of a form (``mov z0.d, z1.d`` for ``orr`` with Zn = Zm).

    The disassembler prints the first printed alias of a form whose :attr:`when` holds; the
    assembler accepts every alias spelling, for the words where :attr:`when` holds (as GNU as
    accepts ``mov`` for DUPM only where DUP cannot make the immediate). An alias changes only
    the text: the word, the form and its operation stay the same, so nothing but the assembler
    and disassembler sees it.

    Attributes
    ----------
    mnemonic : str
        The alias mnemonic, as binutils prints it.
    syntax : str
        Its operand template (:mod:`zatile.sw.arch.isa.syntax`); it may leave fields out.
    fill : Mapping of str to str
        Each field the template leaves out, and the field whose value it takes (Zm from Zn).
    when : callable or None
        ``when(fields)`` says whether a word with these field values prints as this alias, beyond
        the equalities of :attr:`fill`; None means always.
    printed : bool
        False for a spelling only the assembler accepts (``bic`` for ``and`` with the inverted
        immediate); the disassembler never prints it.
    """

    mnemonic: str
    syntax: str
    fill: Mapping[str, str] = field(default_factory=dict)
    when: Callable[[Mapping[str, int]], bool] | None = field(default=None, compare=False)
    printed: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "fill", MappingProxyType(dict(self.fill)))

    def applies(self, fields: Mapping[str, int]) -> bool:
        """Whether a word with these field values prints as this alias."""
        return self.printed and self.accepts(fields)

    def accepts(self, fields: Mapping[str, int]) -> bool:
        """Whether the assembler may spell a word with these field values as this alias."""
        return all(fields[target] == fields[source] for target, source in self.fill.items()) \
            and (self.when is None or self.when(fields))


@dataclass(frozen=True)
class Form:
    """One instruction form.

    Attributes
    ----------
    name : str
        Unique identifier, e.g. ``"LD1W_ZA_V"``.
    mnemonic : str
        Mnemonic as binutils prints it (``mov`` for MOVA and DUP).
    value, mask : int
        A word is this form when ``word & mask == value`` (fields are the unmasked bits).
    fields : tuple of Field
        The variable fields.
    syntax : str
        Operand template (module docstring).
    op : str
        Semantic operation, a key of the model's dispatch (one of :data:`OPS`).
    requires : Requires
        PSTATE the instruction needs.
    feature : str or None
        Optional feature (:data:`zatile.sw.arch.config.FEATURES`) it needs; None for base SME.
    params : Mapping
        Static operands of the operation (element size, direction, signedness, ...).
    aliases : tuple of str
        Other mnemonics the assembler accepts (``mova`` for ``mov``).
    alt_syntax : tuple of str
        Complete alternative spellings of a fixed word (``msr svcrsm, #1``).
    preferred : tuple of Alias
        Spellings binutils prefers for some of its words (the first that applies is printed).
    destination : str or None
        The field naming the general register the instruction writes (its value comes back in
        ``Result.scalar``); None when it writes none. With ``params["reads_destination"]`` the
        instruction reads that register first (``incd x3``).
    traits : frozenset of Trait
        The classes its operation belongs to.
    unallocated : tuple of (str, int)
        Field values that make a word matching the form unallocated nonetheless (UNDEF), e.g.
        ``(("rm", 31),)`` for the scalar+scalar contiguous loads.
    """

    name: str
    mnemonic: str
    value: int
    mask: int
    fields: tuple[Field, ...]
    syntax: str
    op: str
    requires: Requires
    feature: str | None = None
    params: Mapping[str, object] = field(default_factory=dict, compare=False)
    aliases: tuple[str, ...] = ()
    alt_syntax: tuple[str, ...] = ()
    destination: str | None = None
    traits: frozenset[Trait] = frozenset()
    unallocated: tuple[tuple[str, int], ...] = ()
    preferred: tuple[Alias, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        covered = 0
        for f in self.fields:
            if covered & f.mask:
                raise ValueError(f"{self.name}: field {f.name} overlaps another field")
            covered |= f.mask
        if covered & self.mask or (self.value & ~self.mask) or (covered | self.mask) != 0xFFFFFFFF:
            raise ValueError(f"{self.name}: fields and fixed bits must partition the word")
        filled = (name for alias in self.preferred for pair in alias.fill.items() for name in pair)
        for name in (self.destination, *(name for name, _ in self.unallocated), *filled):
            if name is not None and name not in self.field_map:
                raise ValueError(f"{self.name}: {name!r} is not one of its fields")

    @property
    def field_map(self) -> dict[str, Field]:
        return {f.name: f for f in self.fields}

    def encode(self, **values: int) -> int:
        """The word with the given field values (missing fields are zero)."""
        fields = self.field_map
        unknown = set(values) - set(fields)
        if unknown:
            raise ValueError(f"{self.name} has no field(s) {sorted(unknown)}")
        word = self.value
        for name, value in values.items():
            word |= fields[name].insert(value)
        return word

    def fields_of(self, word: int) -> dict[str, int]:
        """Field values of ``word`` (which must match this form)."""
        return {f.name: f.extract(word) for f in self.fields}

    def matches(self, word: int) -> bool:
        """Whether ``word`` is an allocated encoding of this form."""
        if word & self.mask != self.value:
            return False
        return not any(self.field_map[name].extract(word) == value
                       for name, value in self.unallocated)


@dataclass(frozen=True)
class Decoded:
    """A decoded instruction word: its form and field values."""

    word: int
    form: Form
    fields: Mapping[str, int]

    def __getitem__(self, name: str) -> int:
        return self.fields[name]
