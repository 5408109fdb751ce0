"""The one instruction table of zatile.

Every supported instruction form is declared once, here, as a :class:`Form`: its fixed bits, its
fields, its operand syntax (a template in binutils 2.40 spelling), the feature it needs, the
PSTATE it needs and the semantic operation it performs. The assembler and disassembler
(:mod:`sw.asm`), the reference model's dispatch (:mod:`sim.model`) and the RTL decoder's
constants (:mod:`hw`) are all derived from :data:`FORMS`; nothing else decodes an instruction.

Template language (``Form.syntax``)
-----------------------------------
Literal text is printed as is (the assembler accepts any spacing around punctuation and any
case). ``{field:kind}`` prints a field; ``{a+b:kind}`` a kind that needs two fields. A field may
appear twice (LDR ZA): the assembler then demands both spellings agree. Kinds:

=========  ============================================================================
``d``      unsigned decimal                     ``s``       signed decimal (field is two's complement)
``w12``    ``w{12+field}`` (slice selectors)   ``x``/``w`` general register, 31 = ``xzr``/``wzr``
``xsp``    general register, 31 = ``sp``       ``wsp``     W register, 31 = ``wsp``
``mulvl``  ``, #n, mul vl`` or nothing for 0   ``zamask``  ZERO tile list, binutils grouping
``optpat`` ``, <pattern>`` or nothing for ALL  ``cntpat``  CNTx ``, pattern, mul #n`` suffix
``dupimm`` DUP immediate with its shift folded in
``rmxzr``  ``, xN{suffix}`` scaled index; the whole group may be omitted for XZR (``[x0]``)
=========  ============================================================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Callable, Iterable, Mapping

__all__ = [
    "Requires",
    "Field",
    "Form",
    "FORMS",
    "FORMS_BY_NAME",
    "OPS",
    "Decoded",
    "decode",
    "ScalarRegister",
    "scalar_sources",
    "scalar_destination",
    "PATTERN_NAMES",
    "ZA_MASK_NAMES",
]


class Requires(Enum):
    """Which PSTATE an instruction needs (sme-isa.md §1.5), in the order the checks run."""

    #: SMSTART/SMSTOP, MSR/MRS SVCR: only SME access (CheckSMEAccess).
    ACCESS = "access"
    #: RDSVL/ADDSVL/ADDSPL: SME enabled (CheckSMEEnabled), any SM/ZA.
    SME = "sme"
    #: ZERO, LDR/STR ZA: SME enabled and PSTATE.ZA=1.
    ZA = "za"
    #: MOVA, tile LD1/ST1, outer products, ADDHA/ADDVA: SM=1 then ZA=1.
    SM_ZA = "sm_za"
    #: Streaming-SVE subset: legal only with SM=1 (the engine has no non-streaming SVE).
    STREAMING = "streaming"


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
        Optional feature (``sw.config.FEATURES``) it needs; None for base SME.
    params : Mapping
        Static operands of the operation (element size, direction, signedness, ...).
    aliases : tuple of str
        Other mnemonics the assembler accepts (``mova`` for ``mov``).
    alt_syntax : tuple of str
        Complete alternative spellings of a fixed word (``msr svcrsm, #1``).
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        covered = 0
        for f in self.fields:
            if covered & f.mask:
                raise ValueError(f"{self.name}: field {f.name} overlaps another field")
            covered |= f.mask
        if covered & self.mask or (self.value & ~self.mask) or (covered | self.mask) != 0xFFFFFFFF:
            raise ValueError(f"{self.name}: fields and fixed bits must partition the word")

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
        return word & self.mask == self.value


@dataclass(frozen=True)
class Decoded:
    """A decoded instruction word: its form and field values."""

    word: int
    form: Form
    fields: Mapping[str, int]

    def __getitem__(self, name: str) -> int:
        return self.fields[name]


# --------------------------------------------------------------------------- syntax helpers
#: SVE predicate-constraint pattern names by value (others print as ``#n``).
PATTERN_NAMES: dict[int, str] = {
    0: "pow2", 1: "vl1", 2: "vl2", 3: "vl3", 4: "vl4", 5: "vl5", 6: "vl6", 7: "vl7", 8: "vl8",
    9: "vl16", 10: "vl32", 11: "vl64", 12: "vl128", 13: "vl256", 29: "mul4", 30: "mul3",
    31: "all",
}
PATTERN_ALL = 31

#: ZERO list groupings binutils 2.40 prints, in its greedy order (sme-isa.md §2.2).
ZA_MASK_NAMES: tuple[tuple[int, str], ...] = (
    (0x55, "za0.h"), (0xAA, "za1.h"),
    (0x11, "za0.s"), (0x22, "za1.s"), (0x44, "za2.s"), (0x88, "za3.s"),
) + tuple((1 << k, f"za{k}.d") for k in range(8))

_ZA_TILE_MASKS: dict[str, int] = {name: mask for mask, name in ZA_MASK_NAMES}
_ZA_TILE_MASKS.update({"za": 0xFF, "za0.b": 0xFF})


def _zamask_text(mask: int) -> str:
    if mask == 0xFF:
        return "{za}"
    names, remaining = [], mask
    for group, name in ZA_MASK_NAMES:
        if remaining & group == group:
            names.append(name)
            remaining &= ~group
    return "{" + ", ".join(names) + "}"


def _zamask_value(text: str) -> int:
    inner = text.strip()[1:-1].strip()
    mask = 0
    for name in filter(None, (part.strip() for part in inner.split(","))):
        if name not in _ZA_TILE_MASKS:
            raise AsmError(f"unknown ZA tile '{name}' in ZERO list")
        mask |= _ZA_TILE_MASKS[name]
    return mask


def _pattern_text(value: int) -> str:
    return PATTERN_NAMES.get(value, f"#{value}")


def _pattern_value(text: str) -> int:
    text = text.strip()
    for value, name in PATTERN_NAMES.items():
        if name == text:
            return value
    if text.startswith("#"):
        value = _int(text[1:])
        if 0 <= value <= 31:
            return value
    raise AsmError(f"invalid predicate pattern '{text}'")


def _int(text: str) -> int:
    text = text.strip()
    try:
        return int(text, 0)
    except ValueError:
        raise AsmError(f"expected an integer, found '{text}'") from None


def _reg_text(number: int, prefix: str, thirty_one: str) -> str:
    return thirty_one if number == 31 else f"{prefix}{number}"


def _reg_value(text: str, prefix: str, thirty_one: str) -> int:
    text = text.strip()
    if text == thirty_one:
        return 31
    match = re.fullmatch(prefix + r"(\d+)", text)
    if match and int(match.group(1)) <= 30:
        return int(match.group(1))
    raise AsmError(f"expected a {prefix}-register or {thirty_one}, found '{text}'")


class AsmError(ValueError):
    """Text that is not a valid instruction of the subset; the message says why."""


@dataclass(frozen=True)
class _Kind:
    """How one placeholder kind prints and parses."""

    regex: str
    text: Callable[..., str]
    parse: Callable[[tuple[str | None, ...]], tuple[int, ...]]
    groups: int = 1


def _single(regex: str, text: Callable[[int], str], parse: Callable[[str], int]) -> _Kind:
    return _Kind(regex, text, lambda g: (parse(g[0]),))


def _cntpat_text(pattern: int, imm: int) -> str:
    if imm == 0:
        return "" if pattern == PATTERN_ALL else f", {_pattern_text(pattern)}"
    return f", {_pattern_text(pattern)}, mul #{imm + 1}"


def _cntpat_parse(groups) -> tuple[int, int]:
    pattern_text, mul_text = groups
    pattern = PATTERN_ALL if pattern_text is None else _pattern_value(pattern_text)
    mul = 1 if mul_text is None else _int(mul_text)
    if not 1 <= mul <= 16:
        raise AsmError(f"multiplier must be between 1 and 16, not {mul}")
    return pattern, mul - 1


def _dupimm_text(imm8: int, shift: int) -> str:
    return f"#{imm8 << (8 * shift)}"


def _dupimm_parse(groups, esize: int) -> tuple[int, int]:
    value = _int(groups[0])
    if groups[1] is not None:
        shift = _int(groups[1])
        if shift not in (0, 8):
            raise AsmError(f"DUP shift must be lsl #0 or lsl #8, not {shift}")
        candidates = [(value, shift // 8)]
    else:
        bits = 8 * esize
        if value >= 1 << (bits - 1):          # unsigned spelling of a negative element value
            value -= 1 << bits
        candidates = [(value, 0)] + ([(value >> 8, 1)] if value % 256 == 0 and esize > 1 else [])
    for imm8, shift in candidates:
        if -128 <= imm8 <= 127 and not (shift and esize == 1):
            return imm8, shift
    raise AsmError(f"immediate {groups[0]} cannot be encoded for .{'bhsd'[esize.bit_length() - 1]}")


def _split_mulvl_text(high: int, low: int) -> str:
    value = high << 3 | low
    value -= 512 if value >= 256 else 0
    return f", #{value}, mul vl" if value else ""


def _split_mulvl_parse(groups) -> tuple[int, int]:
    value = 0 if groups[0] is None else _int(groups[0])
    if not -256 <= value <= 255:
        raise AsmError(f"offset must be between -256 and 255, not {value}")
    value &= 0x1FF
    return value >> 3, value & 7


_REG = r"([a-z]+\d*)"
_KINDS: dict[str, _Kind] = {
    "d": _single(r"(\d+)", str, _int),
    "s": _single(r"(-?(?:0x)?[0-9a-f]+)", str, _int),
    "w12": _single(r"w(\d+)", lambda v: f"w{v + 12}", lambda t: _int(t) - 12),
    "x": _single(_REG, lambda v: _reg_text(v, "x", "xzr"), lambda t: _reg_value(t, "x", "xzr")),
    "w": _single(_REG, lambda v: _reg_text(v, "w", "wzr"), lambda t: _reg_value(t, "w", "wzr")),
    "xsp": _single(_REG, lambda v: _reg_text(v, "x", "sp"), lambda t: _reg_value(t, "x", "sp")),
    "wsp": _single(_REG, lambda v: _reg_text(v, "w", "wsp"), lambda t: _reg_value(t, "w", "wsp")),
    "mulvl": _single(r"(?:\s*,\s*#(-?\d+)\s*,\s*mul\s+vl)?",
                     lambda v: f", #{v}, mul vl" if v else "",
                     lambda t: 0 if t is None else _int(t)),
    "zamask": _single(r"(\{[^}]*\})", _zamask_text, _zamask_value),
    "optpat": _single(r"(?:\s*,\s*([a-z0-9#]+))?", lambda v: "" if v == PATTERN_ALL
                      else f", {_pattern_text(v)}",
                      lambda t: PATTERN_ALL if t is None else _pattern_value(t)),
    "mulvl9": _Kind(r"(?:\s*,\s*#(-?\d+)\s*,\s*mul\s+vl)?", _split_mulvl_text,
                    _split_mulvl_parse),
    "cntpat": _Kind(r"(?:\s*,\s*([a-z0-9#]+)(?:\s*,\s*mul\s+#(\d+))?)?", _cntpat_text,
                    _cntpat_parse, 2),
}


def _rmxzr_kind(suffix: str) -> _Kind:
    """Scaled index register ``, xM{suffix}``; omitted entirely means XZR (tile LD1/ST1)."""
    suffix_regex = re.escape(suffix).replace(r"\ ", r"\s+").replace(",", r"\s*,\s*")
    return _Kind(r"(?:\s*,\s*" + _REG + suffix_regex + r")?",
                 lambda v: f", {_reg_text(v, 'x', 'xzr')}{suffix}",
                 lambda g: (31 if g[0] is None else _reg_value(g[0], "x", "xzr"),))


def _dupimm_kind(esize: int) -> _Kind:
    return _Kind(r"#(-?(?:0x)?[0-9a-f]+)(?:\s*,\s*lsl\s+#(\d+))?", _dupimm_text,
                 lambda g: _dupimm_parse(g, esize), 2)


_REGISTER_KINDS = ("x", "w", "xsp", "wsp", "w12")
_PLACEHOLDER = re.compile(r"\{([a-z0-9_+]+):([a-z0-9]+)\}")


class _Syntax:
    """A compiled operand template: formats field values and parses operand text."""

    def __init__(self, form: Form, kinds: Mapping[str, _Kind]):
        self.parts: list[tuple[tuple[str, ...], _Kind] | str] = []
        #: (field, kind name) of every general-register operand, in template order.
        self.registers: list[tuple[str, str]] = []
        regex, position = "", 0
        for match in _PLACEHOLDER.finditer(form.syntax):
            literal = form.syntax[position:match.start()]
            self.parts.append(literal)
            regex += _literal_regex(literal)
            names = tuple(match.group(1).split("+"))
            kind = kinds[match.group(2)]
            if match.group(2) in _REGISTER_KINDS or match.group(2).startswith("rmxzr"):
                self.registers.append((names[0], match.group(2)))
            self.parts.append((names, kind))
            regex += kind.regex
            position = match.end()
        tail = form.syntax[position:]
        self.parts.append(tail)
        regex += _literal_regex(tail)
        self.regex = re.compile(regex + r"\s*$")

    def text(self, values: Mapping[str, int]) -> str:
        out = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
            else:
                names, kind = part
                out.append(kind.text(*(values[n] for n in names)))
        return "".join(out)

    def parse(self, operands: str) -> dict[str, int] | None:
        match = self.regex.match(operands)
        if not match:
            return None
        groups, values, index = match.groups(), {}, 0
        for part in self.parts:
            if isinstance(part, str):
                continue
            names, kind = part
            parsed = kind.parse(groups[index:index + kind.groups])
            index += kind.groups
            for name, value in zip(names, parsed):
                if name in values and values[name] != value:
                    raise AsmError(f"operand values for '{name}' disagree ({values[name]} and {value})")
                values[name] = value
        return values


def _literal_regex(literal: str) -> str:
    out = ""
    for char in literal:
        if char == " ":
            out += r"\s*"
        elif char in ",[]{}/!":
            out += r"\s*" + re.escape(char) + r"\s*"
        else:
            out += re.escape(char)
    return out


# --------------------------------------------------------------------------- the table
_SIZES = "bhsdq"                       # element size letter by log2(bytes)
_ESIZE = {"b": 1, "h": 2, "s": 4, "d": 8, "q": 16}

F = Field
_forms: list[Form] = []


def _add(name, mnemonic, value, mask, fields, syntax, op, requires, feature=None, **params):
    aliases = params.pop("aliases", ())
    alt_syntax = params.pop("alt_syntax", ())
    _forms.append(Form(name, mnemonic, value, mask, tuple(fields), syntax, op, requires,
                       feature, params, aliases, alt_syntax))


def _mask_of(fields: Iterable[Field]) -> int:
    covered = 0
    for f in fields:
        covered |= f.mask
    return 0xFFFFFFFF & ~covered


def _define_state_control() -> None:
    # MSR SVCRxx, #imm: CRm<2:1> selects SM/ZA/both, CRm<0> is the new value (sme-isa.md §2.1).
    for select, suffix, alt in ((3, "", "svcrsmza"), (1, " sm", "svcrsm"), (2, " za", "svcrza")):
        for start in (1, 0):
            word = 0xD503407F | ((select << 1) | start) << 8
            mnemonic = "smstart" if start else "smstop"
            name = mnemonic.upper() + (f"_{suffix.strip().upper()}" if suffix else "")
            _add(name, mnemonic, word, 0xFFFFFFFF, (), suffix.strip(), "msr_svcr_imm", Requires.ACCESS,
                 set_sm=bool(select & 1), set_za=bool(select & 2), start=bool(start),
                 alt_syntax=(f"msr {alt}, #{start}",))
    rt = F("rt", 4, 0)
    _add("MRS_SVCR", "mrs", 0xD53B4240, _mask_of([rt]), [rt], "{rt:x}, svcr", "mrs_svcr",
         Requires.ACCESS)
    _add("MSR_SVCR", "msr", 0xD51B4240, _mask_of([rt]), [rt], "svcr, {rt:x}", "msr_svcr",
         Requires.ACCESS)


def _define_za_moves() -> None:
    imm8 = F("mask", 7, 0)
    _add("ZERO", "zero", 0xC0080000, _mask_of([imm8]), [imm8], "{mask:zamask}", "zero_za",
         Requires.ZA)
    # Tile LD1/ST1 (sme-isa.md §2.3): [3:0] splits into tile number and slice offset by size.
    for letter in "bhsdq":
        esize = _ESIZE[letter]
        tile_bits = esize.bit_length() - 1            # 0..4 bits of tile number
        q = 1 if letter == "q" else 0
        msz = 3 if letter == "q" else tile_bits
        for store in (0, 1):
            for vertical in (0, 1):
                fields = [F("rm", 20, 16), F("rs", 14, 13), F("pg", 12, 10), F("rn", 9, 5)]
                if tile_bits:
                    fields.append(F("tile", 3, 4 - tile_bits))
                if tile_bits < 4:
                    fields.append(F("off", 3 - tile_bits, 0))
                value = 0xE0000000 | q << 24 | msz << 22 | store << 21 | vertical << 15
                hv = "v" if vertical else "h"
                tile = "{tile:d}" if tile_bits else "0"
                off = "{off:d}" if tile_bits < 4 else "0"
                mnemonic = ("st1" if store else "ld1") + ("bhwdq"[tile_bits])
                pred = "p{pg:d}" if store else "p{pg:d}/z"
                _add(f"{mnemonic.upper()}_ZA_{hv.upper()}", mnemonic, value, _mask_of(fields),
                     fields, f"{{za{tile}{hv}.{letter}[{{rs:w12}}, {off}]}}, {pred}, "
                     f"[{{rn:xsp}}{{rm:rmxzr{tile_bits}}}]",
                     "st1_tile" if store else "ld1_tile", Requires.SM_ZA,
                     esize=esize, vertical=bool(vertical))
    for store in (0, 1):
        fields = [F("rv", 14, 13), F("rn", 9, 5), F("off", 3, 0)]
        mnemonic = "str" if store else "ldr"
        _add(f"{mnemonic.upper()}_ZA", mnemonic, 0xE1000000 | store << 21, _mask_of(fields),
             fields, "za[{rv:w12}, {off:d}], [{rn:xsp}{off:mulvl}]",
             "str_za" if store else "ldr_za", Requires.ZA)
    # MOVA both ways (sme-isa.md §2.5); binutils prints and accepts "mov".
    for letter in "bhsdq":
        esize = _ESIZE[letter]
        tile_bits = esize.bit_length() - 1
        size, q = (3, 1) if letter == "q" else (tile_bits, 0)
        for vertical in (0, 1):
            hv = "v" if vertical else "h"
            tile = "{tile:d}" if tile_bits else "0"
            off = "{off:d}" if tile_bits < 4 else "0"
            slice_text = f"za{tile}{hv}.{letter}[{{rs:w12}}, {off}]"
            # vector to tile: ZAd:off in [3:0]
            fields = [F("rs", 14, 13), F("pg", 12, 10), F("zn", 9, 5)]
            if tile_bits:
                fields.append(F("tile", 3, 4 - tile_bits))
            if tile_bits < 4:
                fields.append(F("off", 3 - tile_bits, 0))
            _add(f"MOVA_Z_TO_ZA_{letter.upper()}_{hv.upper()}", "mov",
                 0xC0000000 | size << 22 | q << 16 | vertical << 15, _mask_of(fields), fields,
                 f"{slice_text}, p{{pg:d}}/m, z{{zn:d}}.{letter}", "mova_to_tile", Requires.SM_ZA,
                 esize=esize, vertical=bool(vertical), aliases=("mova",))
            # tile to vector: ZAn:off in [8:5]
            fields = [F("rs", 14, 13), F("pg", 12, 10), F("zd", 4, 0)]
            if tile_bits:
                fields.append(F("tile", 8, 9 - tile_bits))
            if tile_bits < 4:
                fields.append(F("off", 8 - tile_bits, 5))
            _add(f"MOVA_ZA_TO_Z_{letter.upper()}_{hv.upper()}", "mov",
                 0xC0020000 | size << 22 | q << 16 | vertical << 15, _mask_of(fields), fields,
                 f"z{{zd:d}}.{letter}, p{{pg:d}}/m, {slice_text}", "mova_to_vector",
                 Requires.SM_ZA, esize=esize, vertical=bool(vertical), aliases=("mova",))


def _define_outer_products() -> None:
    common = [F("zm", 20, 16), F("pm", 15, 13), F("pn", 12, 10), F("zn", 9, 5)]
    fp_forms = (
        # name, mnemonic, base, tile element, source element, op, feature
        ("FMOPA_S", "fmop", 0x80800000, "s", "s", "fmopa_fp32", "F32F32"),
        ("FMOPA_D", "fmop", 0x80C00000, "d", "d", "fmopa_fp64", "F64F64"),
        ("FMOPA_H_S", "fmop", 0x81A00000, "s", "h", "fmopa_fp16_widening", "F16F32"),
        ("BFMOPA", "bfmop", 0x81800000, "s", "h", "bfmopa", "B16F32"),
    )
    for name, stem, base, tile_letter, src_letter, op, feature in fp_forms:
        tile = F("zada", 2, 0) if tile_letter == "d" else F("zada", 1, 0)
        fields = common + [tile]
        for subtract in (0, 1):
            mnemonic = stem + ("s" if subtract else "a")
            form_name = name.replace("MOPA", "MOPS") if subtract else name
            _add(form_name, mnemonic, base | subtract << 4, _mask_of(fields), fields,
                 f"za{{zada:d}}.{tile_letter}, p{{pn:d}}/m, p{{pm:d}}/m, "
                 f"z{{zn:d}}.{src_letter}, z{{zm:d}}.{src_letter}",
                 op, Requires.SM_ZA, feature, subtract=bool(subtract),
                 esize=_ESIZE[tile_letter])
    signedness = (("s", 0, 0), ("su", 0, 1), ("us", 1, 0), ("u", 1, 1))
    for tile_letter, base, src_letter, feature in (("s", 0xA0800000, "b", "I8I32"),
                                                   ("d", 0xA0C00000, "h", "I16I64")):
        tile = F("zada", 2, 0) if tile_letter == "d" else F("zada", 1, 0)
        fields = common + [tile]
        for prefix, zn_unsigned, zm_unsigned in signedness:
            for subtract in (0, 1):
                mnemonic = f"{prefix}mop{'s' if subtract else 'a'}"
                _add(f"{mnemonic.upper()}_{tile_letter.upper()}", mnemonic,
                     base | zn_unsigned << 24 | zm_unsigned << 21 | subtract << 4,
                     _mask_of(fields), fields,
                     f"za{{zada:d}}.{tile_letter}, p{{pn:d}}/m, p{{pm:d}}/m, "
                     f"z{{zn:d}}.{src_letter}, z{{zm:d}}.{src_letter}",
                     "int_mopa", Requires.SM_ZA, feature, subtract=bool(subtract),
                     zn_unsigned=bool(zn_unsigned), zm_unsigned=bool(zm_unsigned),
                     esize=_ESIZE[tile_letter])
    for tile_letter, base, feature in (("s", 0xC0900000, "I8I32"), ("d", 0xC0D00000, "I16I64")):
        tile = F("zada", 2, 0) if tile_letter == "d" else F("zada", 1, 0)
        fields = [F("pm", 15, 13), F("pn", 12, 10), F("zn", 9, 5), tile]
        for vertical, mnemonic in ((0, "addha"), (1, "addva")):
            _add(f"{mnemonic.upper()}_{tile_letter.upper()}", mnemonic, base | vertical << 16,
                 _mask_of(fields), fields,
                 f"za{{zada:d}}.{tile_letter}, p{{pn:d}}/m, p{{pm:d}}/m, z{{zn:d}}.{tile_letter}",
                 "add_vector_to_tile", Requires.SM_ZA, feature, vertical=bool(vertical),
                 esize=_ESIZE[tile_letter])


def _define_scalar_sme() -> None:
    rd, rn, imm6 = F("rd", 4, 0), F("rn", 20, 16), F("imm", 10, 5, signed=True)
    _add("RDSVL", "rdsvl", 0x04BF5800, _mask_of([rd, imm6]), [rd, imm6], "{rd:x}, #{imm:s}",
         "rdsvl", Requires.SME, unit="svl_bytes")
    for mnemonic, base, unit in (("addsvl", 0x04205800, "svl_bytes"),
                                 ("addspl", 0x04605800, "svl_pred_bytes")):
        fields = [rd, rn, imm6]
        _add(mnemonic.upper(), mnemonic, base, _mask_of(fields), fields,
             "{rd:xsp}, {rn:xsp}, #{imm:s}", "addsvl", Requires.SME, unit=unit)


def _define_streaming_sve() -> None:
    pd, size_letters = F("pd", 3, 0), "bhsd"
    for log2, letter in enumerate(size_letters):
        fields = [F("pattern", 9, 5), pd]
        _add(f"PTRUE_{letter.upper()}", "ptrue", 0x2518E000 | log2 << 22, _mask_of(fields),
             fields, f"p{{pd:d}}.{letter}{{pattern:optpat}}", "ptrue", Requires.STREAMING,
             esize=1 << log2)
    _add("PFALSE", "pfalse", 0x2518E400, _mask_of([pd]), [pd], "p{pd:d}.b", "pfalse",
         Requires.STREAMING)
    for mnemonic, unsigned in (("whilelt", 0), ("whilelo", 1)):
        for log2, letter in enumerate(size_letters):
            for sf, reg in ((0, "w"), (1, "x")):
                fields = [F("rm", 20, 16), F("rn", 9, 5), pd]
                _add(f"{mnemonic.upper()}_{letter.upper()}_{reg.upper()}", mnemonic,
                     0x25200400 | log2 << 22 | sf << 12 | unsigned << 11, _mask_of(fields),
                     fields, f"p{{pd:d}}.{letter}, {{rn:{reg}}}, {{rm:{reg}}}", "while",
                     Requires.STREAMING, esize=1 << log2, unsigned=bool(unsigned),
                     wide=bool(sf))
    zd = F("zd", 4, 0)
    for log2, letter in enumerate(size_letters):
        fields = [F("rn", 9, 5), zd]
        _add(f"DUP_{letter.upper()}_SCALAR", "mov", 0x05203800 | log2 << 22, _mask_of(fields),
             fields, f"z{{zd:d}}.{letter}, {{rn:{'xsp' if letter == 'd' else 'wsp'}}}",
             "dup_scalar", Requires.STREAMING, esize=1 << log2, aliases=("dup",))
        fields = [F("imm8", 12, 5, signed=True), zd] if letter == "b" else \
            [F("sh", 13, 13), F("imm8", 12, 5, signed=True), zd]
        kind_name = f"dupimm{letter}"
        _KINDS[kind_name] = _dupimm_kind(1 << log2)
        syntax = f"z{{zd:d}}.{letter}, {{imm8+sh:{kind_name}}}" if letter != "b" else \
            f"z{{zd:d}}.{letter}, #{{imm8:s}}"
        _add(f"DUP_{letter.upper()}_IMM", "mov", 0x2538C000 | log2 << 22, _mask_of(fields),
             fields, syntax, "dup_imm", Requires.STREAMING, esize=1 << log2, aliases=("dup",))
    rd = F("rd", 4, 0)
    for log2, letter in enumerate(size_letters):
        fields = [F("imm4", 19, 16), F("pattern", 9, 5), rd]
        count_letter = "bhwd"[log2]
        _add(f"CNT{count_letter.upper()}", f"cnt{count_letter}", 0x0420E000 | log2 << 22, _mask_of(fields),
             fields, "{rd:x}{pattern+imm4:cntpat}", "cnt", Requires.STREAMING, esize=1 << log2)
    fields = [F("imm", 10, 5, signed=True), rd]
    _add("RDVL", "rdvl", 0x04BF5000, _mask_of(fields), fields, "{rd:x}, #{imm:s}", "rdsvl",
         Requires.STREAMING, unit="svl_bytes")
    # LDR/STR of a whole Z or P register (SVE fill/spill; the kernel model's context switch).
    for register, base_bits, target in (("z", 0x4000, F("zt", 4, 0)), ("p", 0x0000, F("pt", 3, 0))):
        for store in (0, 1):
            fields = [F("imm9h", 21, 16), F("imm9l", 12, 10), F("rn", 9, 5), target]
            mnemonic = "str" if store else "ldr"
            _add(f"{mnemonic.upper()}_{register.upper()}", mnemonic,
                 (0xE5800000 if store else 0x85800000) | base_bits, _mask_of(fields), fields,
                 f"{register}{{{target.name}:d}}, [{{rn:xsp}}{{imm9h+imm9l:mulvl9}}]",
                 "str_register" if store else "ldr_register", Requires.STREAMING,
                 predicate=register == "p")
    # Contiguous LD1B/H/W/D (zero-extending) and ST1B/H/W/D, scalar+scalar and scalar+immediate.
    zt, pg, rn = F("zt", 4, 0), F("pg", 12, 10), F("rn", 9, 5)
    for msz in range(4):
        for esz in range(msz, 4):
            mem_letter, elem_letter = "bhwd"[msz], size_letters[esz]
            for store in (0, 1):
                mnemonic = ("st1" if store else "ld1") + mem_letter
                pred = "p{pg:d}" if store else "p{pg:d}/z"
                params = dict(msize=1 << msz, esize=1 << esz)
                if store:
                    base = 0xE4000000 | msz << 23 | esz << 21
                    ss_value, si_value = base | 0b010 << 13, base | 0b111 << 13
                else:
                    dtype = msz << 2 | esz
                    base = 0xA4000000 | dtype << 21
                    ss_value, si_value = base | 0b010 << 13, base | 0b101 << 13
                # Rm=XZR is unallocated for scalar+scalar: exclude it with a non-XZR check in
                # decode (see _EXCLUDED); the assembler rejects it as binutils does.
                lsl = f", lsl #{msz}" if msz else ""
                fields = [F("rm", 20, 16), pg, rn, zt]
                _add(f"{mnemonic.upper()}_{elem_letter.upper()}_SS", mnemonic, ss_value,
                     _mask_of(fields), fields,
                     "{z{zt:d}." + elem_letter + "}, " + pred + ", [{rn:xsp}, {rm:x}" + lsl + "]",
                     "st1_contiguous" if store else "ld1_contiguous", Requires.STREAMING,
                     scalar_offset=True, **params)
                fields = [F("imm4", 19, 16, signed=True), pg, rn, zt]
                _add(f"{mnemonic.upper()}_{elem_letter.upper()}_SI", mnemonic, si_value,
                     _mask_of(fields), fields,
                     "{z{zt:d}." + elem_letter + "}, " + pred + ", [{rn:xsp}{imm4:mulvl}]",
                     "st1_contiguous" if store else "ld1_contiguous", Requires.STREAMING,
                     scalar_offset=False, **params)


for _bits in range(5):
    _KINDS[f"rmxzr{_bits}"] = _rmxzr_kind(f", lsl #{_bits}" if _bits else "")
_define_state_control()
_define_za_moves()
_define_outer_products()
_define_scalar_sme()
_define_streaming_sve()

#: Every supported form, in table order.
FORMS: tuple[Form, ...] = tuple(_forms)
FORMS_BY_NAME: Mapping[str, Form] = MappingProxyType({f.name: f for f in FORMS})
#: Every semantic operation named by the table (the model implements exactly these).
OPS: tuple[str, ...] = tuple(dict.fromkeys(f.op for f in FORMS))
del _forms

# Words a form's mask admits but the architecture leaves unallocated (checked after matching).
_EXCLUDED: dict[str, Callable[[Mapping[str, int]], bool]] = {
    name: (lambda fields: fields["rm"] == 31)
    for name, form in FORMS_BY_NAME.items() if form.params.get("scalar_offset") is True
}

_SYNTAX: dict[str, _Syntax] = {f.name: _Syntax(f, _KINDS) for f in FORMS}
_BY_TOP_BYTE: dict[int, tuple[Form, ...]] = {}
for _top in range(256):
    _BY_TOP_BYTE[_top] = tuple(f for f in FORMS
                               if (_top << 24) & f.mask & 0xFF000000 == f.value & 0xFF000000)


def decode(word: int) -> Decoded | None:
    """Decode a 32-bit word; None when it is outside the supported subset (UNDEF)."""
    if not 0 <= word <= 0xFFFFFFFF:
        raise ValueError(f"instruction word must be a 32-bit unsigned value, not {word!r}")
    for form in _BY_TOP_BYTE[word >> 24]:
        if word & form.mask == form.value:
            fields = form.fields_of(word)
            excluded = _EXCLUDED.get(form.name)
            if excluded and excluded(fields):
                return None
            return Decoded(word, form, MappingProxyType(fields))
    return None


#: Ops whose first general-register operand is written rather than read.
_WRITES_FIRST_REGISTER = ("mrs_svcr", "rdsvl", "cnt", "addsvl")


@dataclass(frozen=True)
class ScalarRegister:
    """A general-purpose register operand of a decoded instruction.

    Attributes
    ----------
    field : str
        The field that names it (``rn``, ``rm``, ``rs``, ...).
    number : int
        Register number 0-31 (slice selectors are already offset: ``w12`` is 12).
    is_sp : bool
        Number 31 means the stack pointer here.
    is_zero : bool
        Number 31 means the zero register here.
    width : int
        64 for X operands, 32 for W operands.
    """

    field: str
    number: int
    is_sp: bool
    is_zero: bool
    width: int


def _scalar_registers(decoded: Decoded) -> list[ScalarRegister]:
    registers = []
    for field_name, kind in _SYNTAX[decoded.form.name].registers:
        number = decoded.fields[field_name] + (12 if kind == "w12" else 0)
        registers.append(ScalarRegister(
            field_name, number, is_sp=number == 31 and kind in ("xsp", "wsp"),
            is_zero=number == 31 and kind not in ("xsp", "wsp", "w12"),
            width=32 if kind in ("w", "wsp", "w12") else 64))
    return registers


def scalar_sources(decoded: Decoded) -> tuple[ScalarRegister, ...]:
    """The general registers an instruction reads, in operand order (derived from the table)."""
    registers = _scalar_registers(decoded)
    if decoded.form.op in _WRITES_FIRST_REGISTER:
        registers = registers[1:]
    return tuple(registers)


def scalar_destination(decoded: Decoded) -> ScalarRegister | None:
    """The general register an instruction writes, if any."""
    if decoded.form.op in _WRITES_FIRST_REGISTER:
        return _scalar_registers(decoded)[0]
    return None


def form_text(decoded: Decoded) -> str:
    """binutils 2.40 objdump text of a decoded instruction (mnemonic, tab, operands)."""
    operands = _SYNTAX[decoded.form.name].text(decoded.fields)
    return f"{decoded.form.mnemonic}\t{operands}" if operands else decoded.form.mnemonic


def parse_operands(form: Form, operands: str) -> dict[str, int] | None:
    """Field values if ``operands`` (lower case) spells ``form``'s operands, else None."""
    return _SYNTAX[form.name].parse(operands)
