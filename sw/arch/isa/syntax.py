"""The operand syntax of the instruction table: binutils 2.40 spelling, printed and parsed.

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
``dupimm<t>`` DUP immediate of element type t (b/h/s/d) with its shift folded in
``mulvl9`` the split signed 9-bit offset of SVE LDR/STR
``rmxzr<n>`` ``, xN{, lsl #n}`` scaled index; the whole group may be omitted for XZR (``[x0]``)
``mulvl<n>`` ``, #k, mul vl`` with k = n × the field (n = 2, 3, 4), or nothing for 0 (LD2-LD4)
``uoff<n>`` ``, #k`` with k = n × the unsigned field, or nothing for 0 (LD1R*)
``soff<n>`` ``, #k`` with k = n × the signed field, or nothing for 0 (LD1RQ*)
``zlist<n><t>`` ``{zA.t, ...}`` of ``n`` consecutive Z registers from the field, modulo 32;
           printed ``{zA.t-zB.t}`` when ``n`` > 2 and the list does not wrap (binutils)
``prfop``  a prefetch operation: its name (``pldl1keep``) or ``#n`` for the unnamed ones
``shr<e>``/``shl<e>`` ``#n``: a ``tsz:imm3`` shift of ``e``-bit elements (right: ``e`` − field,
           left: the field); for ``e`` = 64 over two fields, the high bit first
``aimm``   unsigned ``#imm8{, lsl #8}`` of ADD/SUB (immediate), printed folded as objdump does
``logimm<N>`` ``.T, zN.T, #0x..`` of a logical immediate with bit N = ``<N>`` (fields: the
           register, ``immr``, ``imms``); ``T`` is the encoded element size, at least ``b``
           (``logimmnot<N>``: the immediate inverted, the assembler's ``bic``/``orn``/``eon``)
``bitmask<N>`` ``.T, #0x..`` of a logical immediate (DUPM; fields ``immr``, ``imms``)
``halfone``/``halftwo``/``zeroone`` ``#0.5``/``#1.0``, ``#0.5``/``#2.0``, ``#0.0``/``#1.0``:
           the floating-point constant a one-bit field selects (FADD ..., #imm)
``fpimm8`` ``#v``: the value of an 8-bit floating-point immediate (``VFPExpandImm``), printed
           as objdump does (``%.18e``: ``#1.000000000000000000e+00``)
``cat<w>x<n>`` unsigned decimal of ``w`` bits split over two fields, the low ``n`` bits in the
           second (the DUP index ``imm2:tsz``, the EXT byte offset ``imm8h:imm8l``)
``next``   the register after the field's, modulo 32 (``z{zn+1}`` of a register pair)
=========  ============================================================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping

from zatile.sw.arch.isa.forms import Alias, Decoded, Form, shifted_imm8, signed_offset9
from zatile.sw.arch.pseudocode import (decode_bit_masks, encode_bit_masks, replicate,
                                       vfp_imm_value)

__all__ = ["AsmError", "PATTERN_ALL", "PATTERN_NAMES", "PRFOP_NAMES", "ZA_MASK_NAMES",
           "RegisterOperand", "register_operands", "form_text", "parse_operands", "literal_regex"]

#: SVE predicate-constraint pattern names by value (others print as ``#n``).
PATTERN_NAMES: dict[int, str] = {
    0: "pow2", 1: "vl1", 2: "vl2", 3: "vl3", 4: "vl4", 5: "vl5", 6: "vl6", 7: "vl7", 8: "vl8",
    9: "vl16", 10: "vl32", 11: "vl64", 12: "vl128", 13: "vl256", 29: "mul4", 30: "mul3",
    31: "all",
}
PATTERN_ALL = 31

#: ZERO list groupings binutils 2.40 prints, in its greedy order (docs/isa.md, "ZERO").
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
    article = "an" if prefix == "x" else "a"
    raise AsmError(f"expected {article} {prefix}-register or {thirty_one}, found '{text}'")


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
    # objdump keeps the shift of a shifted zero, which is another word than #0.
    return "#0, lsl #8" if shift and not imm8 else f"#{shifted_imm8(imm8, shift)}"


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
    value = signed_offset9(high, low)
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


def _scaled_kind(scale: int, low: int, high: int, suffix: str) -> _Kind:
    """``, #k{suffix}`` with k = ``scale`` × the field (``low``..``high``), omitted for 0."""
    suffix_regex = re.escape(suffix).replace(r"\ ", r"\s+").replace(",", r"\s*,\s*")

    def parse(groups) -> tuple[int]:
        value = 0 if groups[0] is None else _int(groups[0])
        if value % scale or not low * scale <= value <= high * scale:
            unit = " vector lengths" if suffix else ""
            raise AsmError(f"the offset must be a multiple of {scale} between {low * scale} and "
                           f"{high * scale}{unit}, not {value}")
        return (value // scale,)

    return _Kind(r"(?:\s*,\s*#(-?(?:0x)?[0-9a-f]+)" + suffix_regex + ")?",
                 lambda v: f", #{v * scale}{suffix}" if v else "", parse)


def _zlist_text(first: int, count: int, letter: str) -> str:
    if count > 2 and first + count <= 32:
        return f"{{z{first}.{letter}-z{first + count - 1}.{letter}}}"
    return "{" + ", ".join(f"z{(first + k) % 32}.{letter}" for k in range(count)) + "}"


def _zlist_register(text: str, letter: str) -> int:
    match = re.fullmatch(r"z(\d+)\.([bhsdq])", text.strip())
    if not match or int(match.group(1)) > 31:
        raise AsmError(f"expected a vector register z0-z31 with its element size, found '{text}'")
    if match.group(2) != letter:
        raise AsmError(f"the registers of the list must be .{letter}, not .{match.group(2)}")
    return int(match.group(1))


def _zlist_parse(text: str, count: int, letter: str) -> tuple[int]:
    """The first register of a list of ``count`` consecutive Z registers, as GNU as reads it:
    a comma list (wrapping from z31 to z0) or a range ``zA.t-zB.t`` (not wrapping)."""
    inner = text.strip()[1:-1]
    if "-" in inner:
        first, last = (_zlist_register(part, letter) for part in inner.split("-", 1))
        if last - first != count - 1:
            raise AsmError(f"the range must name {count} registers in increasing order, "
                           f"not '{inner.strip()}'")
        return (first,)
    registers = [_zlist_register(part, letter) for part in inner.split(",")]
    if len(registers) != count:
        raise AsmError(f"the list must name {count} registers, not {len(registers)}")
    if any((registers[0] + k) % 32 != register for k, register in enumerate(registers)):
        raise AsmError(f"the registers of the list must be consecutive, not '{inner.strip()}'")
    return (registers[0],)


def _zlist_kind(count: int, letter: str) -> _Kind:
    return _Kind(r"(\{[^}]*\})", lambda first: _zlist_text(first, count, letter),
                 lambda g: _zlist_parse(g[0], count, letter))


#: Prefetch operation names by value (the others print as ``#n``).
PRFOP_NAMES: dict[int, str] = {
    (kind << 3) | (level << 1) | policy: f"p{name}l{level + 1}{('keep', 'strm')[policy]}"
    for kind, name in ((0, "ld"), (1, "st")) for level in range(3) for policy in (0, 1)}


def _prfop_value(text: str) -> int:
    for value, name in PRFOP_NAMES.items():
        if name == text:
            return value
    value = _int(text[1:] if text.startswith("#") else text)
    if not 0 <= value <= 15:
        raise AsmError(f"the prefetch operation must be a name or #0-#15, not '{text}'")
    return value


def _dupimm_kind(esize: int) -> _Kind:
    return _Kind(r"#(-?(?:0x)?[0-9a-f]+)(?:\s*,\s*lsl\s+#(\d+))?", _dupimm_text,
                 lambda g: _dupimm_parse(g, esize), 2)


for _bits in range(5):
    _KINDS[f"rmxzr{_bits}"] = _rmxzr_kind(f", lsl #{_bits}" if _bits else "")
for _count in (2, 3, 4):
    _KINDS[f"mulvl{_count}"] = _scaled_kind(_count, -8, 7, ", mul vl")
    for _letter in "bhsd":
        _KINDS[f"zlist{_count}{_letter}"] = _zlist_kind(_count, _letter)
for _scale in (1, 2, 4, 8):
    _KINDS[f"uoff{_scale}"] = _scaled_kind(_scale, 0, 63, "")
_KINDS["soff16"] = _scaled_kind(16, -8, 7, "")
_KINDS["prfop"] = _single(r"([a-z0-9#]+)", lambda v: PRFOP_NAMES.get(v, f"#{v}"), _prfop_value)
for _log2, _letter in enumerate("bhsd"):
    _KINDS[f"dupimm{_letter}"] = _dupimm_kind(1 << _log2)


def _shift_kind(bits: int, right: bool) -> _Kind:
    """``#n`` of a ``tsz:imm3`` shift immediate (docs/isa.md, "Shift immediates")."""
    low, high = (1, bits) if right else (0, bits - 1)

    def text(*fields: int) -> str:
        value = fields[0] << 5 | fields[1] if len(fields) == 2 else fields[0]
        return f"#{bits - value if right else value}"

    def parse(groups) -> tuple[int, ...]:
        amount = _int(groups[0])
        if not low <= amount <= high:
            raise AsmError(f"the shift must be between {low} and {high}, not {amount}")
        value = bits - amount if right else amount
        return (value >> 5, value & 0x1F) if bits == 64 else (value,)

    return _Kind(r"#((?:0x)?[0-9a-f]+)", text, parse)


def _aimm_text(imm8: int, shift: int) -> str:
    return "#0, lsl #8" if shift and not imm8 else f"#{shifted_imm8(imm8, shift)}"


def _aimm_parse(groups) -> tuple[int, int]:
    value = _int(groups[0])
    if groups[1] is not None:
        shift = _int(groups[1])
        if shift not in (0, 8) or not 0 <= value <= 255:
            raise AsmError(f"the immediate must be 0-255 with lsl #0 or #8, not "
                           f"{groups[0]}, lsl #{groups[1]}")
        return value, shift // 8
    if 0 <= value <= 255:
        return value, 0
    if 0 <= value <= 0xFF00 and value % 256 == 0:
        return value >> 8, 1
    raise AsmError(f"immediate {groups[0]} is not 0-255 or a multiple of 256 up to 65280")


_LETTER_BITS = {"b": 8, "h": 16, "s": 32, "d": 64}


def _bitmask_text(imm13: int, inverted: bool = False) -> str:
    """``.T, #0x..``: the element size ``T`` the encoding names (at least ``b``) and the
    immediate at that size."""
    bits, element = decode_bit_masks(imm13)
    width = max(bits, 8)
    letter = next(letter for letter, size in _LETTER_BITS.items() if size == width)
    value = replicate(element, bits, width) ^ ((1 << width) - 1 if inverted else 0)
    return f".{letter}, #0x{value:x}"


def _bitmask_value(n: int, letter: str, text: str, inverted: bool) -> tuple[int, int]:
    """``(immr, imms)`` of the immediate ``text`` written for ``letter`` elements, for the form
    whose N bit is ``n``."""
    width = _LETTER_BITS[letter]
    value = _int(text)
    if not -(1 << (width - 1)) <= value < 1 << width:
        raise AsmError(f"immediate {text} does not fit .{letter} elements")
    value &= (1 << width) - 1
    if inverted:
        value ^= (1 << width) - 1
    imm13 = encode_bit_masks(replicate(value, width))
    if imm13 is None:
        raise AsmError(f"immediate {text} is not a logical (bitmask) immediate")
    if imm13 >> 12 != n:
        raise AsmError(f"immediate {text} is {'not ' if n else ''}a 64-bit element pattern")
    return imm13 >> 6 & 0x3F, imm13 & 0x3F


def _logimm_kind(n: int, inverted: bool) -> _Kind:
    def text(register: int, immr: int, imms: int) -> str:
        size, value = _bitmask_text(n << 12 | immr << 6 | imms, inverted).split(", ")
        return f"{size}, z{register}{size}, {value}"

    def parse(groups) -> tuple[int, int, int]:
        first, register, second, immediate = groups
        if first != second:
            raise AsmError(f"element sizes .{first} and .{second} disagree")
        return (int(register), *_bitmask_value(n, first, immediate, inverted))

    return _Kind(r"\.([bhsd])\s*,\s*z(\d+)\.([bhsd])\s*,\s*#(-?(?:0x)?[0-9a-f]+)", text, parse, 4)


def _bitmask_kind(n: int) -> _Kind:
    return _Kind(r"\.([bhsd])\s*,\s*#(-?(?:0x)?[0-9a-f]+)",
                 lambda immr, imms: _bitmask_text(n << 12 | immr << 6 | imms),
                 lambda g: _bitmask_value(n, g[0], g[1], inverted=False), 2)


_KINDS["aimm"] = _Kind(r"#((?:0x)?[0-9a-f]+)(?:\s*,\s*lsl\s+#(\d+))?", _aimm_text,
                       _aimm_parse, 2)
for _n in (0, 1):
    _KINDS[f"logimm{_n}"] = _logimm_kind(_n, inverted=False)
    _KINDS[f"logimmnot{_n}"] = _logimm_kind(_n, inverted=True)
    _KINDS[f"bitmask{_n}"] = _bitmask_kind(_n)
for _bits in (8, 16, 32, 64):
    _KINDS[f"shr{_bits}"] = _shift_kind(_bits, right=True)
    _KINDS[f"shl{_bits}"] = _shift_kind(_bits, right=False)

def _fconst_kind(zero: float, one: float) -> _Kind:
    """``#zero`` or ``#one``, the constant a one-bit field selects, printed as ``#0.5``."""
    def parse(groups) -> tuple[int]:
        try:
            value = float(groups[0])
        except ValueError:
            raise AsmError(f"expected a floating-point constant, found '{groups[0]}'") from None
        if value not in (zero, one):
            raise AsmError(f"the immediate must be #{zero} or #{one}, not #{groups[0]}")
        return (int(value == one),)

    return _Kind(r"#([0-9.e+-]+)", lambda bit: f"#{one if bit else zero}", parse)


_KINDS["halfone"] = _fconst_kind(0.5, 1.0)
_KINDS["halftwo"] = _fconst_kind(0.5, 2.0)
_KINDS["zeroone"] = _fconst_kind(0.0, 1.0)

#: The 8-bit floating-point immediates by value.
_FP_IMM8 = {vfp_imm_value(imm8): imm8 for imm8 in range(256)}


def _fpimm8_parse(groups) -> tuple[int]:
    try:
        value = float(groups[0])
    except ValueError:
        raise AsmError(f"expected a floating-point constant, found '{groups[0]}'") from None
    if value not in _FP_IMM8:
        raise AsmError(f"#{groups[0]} is not ±(16 + n)/16 × 2^e with n 0-15 and e -3 to 4, "
                       f"the values an 8-bit floating-point immediate makes")
    return (_FP_IMM8[value],)


_KINDS["fpimm8"] = _Kind(r"#([0-9.e+-]+)", lambda imm8: f"#{vfp_imm_value(imm8):.18e}",
                         _fpimm8_parse)
def _concatenated_kind(bits: int, low_bits: int) -> _Kind:
    """An unsigned ``bits``-bit number whose low ``low_bits`` bits are the second field."""
    def parse(groups) -> tuple[int, int]:
        value = _int(groups[0])
        if not 0 <= value < 1 << bits:
            raise AsmError(f"the immediate must be between 0 and {(1 << bits) - 1}, not {value}")
        return value >> low_bits, value & ((1 << low_bits) - 1)

    return _Kind(r"((?:0x)?[0-9a-f]+)", lambda high, low: str(high << low_bits | low), parse)


def _next_register_parse(text: str) -> int:
    return (_int(text) - 1) % 32


_KINDS["next"] = _single(r"(\d+)", lambda v: str((v + 1) % 32), _next_register_parse)
for _bits, _low in ((6, 4), (5, 3), (4, 2), (3, 1), (8, 3)):
    _KINDS[f"cat{_bits}x{_low}"] = _concatenated_kind(_bits, _low)

_REGISTER_KINDS = ("x", "w", "xsp", "wsp", "w12")
_PLACEHOLDER = re.compile(r"\{([a-z0-9_+]+):([a-z0-9]+)\}")


def _range_problem(name: str, kind: str, letters: str, value: int, low: int,
                   high: int) -> str:
    """Why operand ``value`` of field ``name`` (spelled after ``letters`` with ``kind``) is
    out of ``low..high``, as the user wrote it."""
    if kind == "w12":
        return f"the slice index register must be W12–W{12 + high}, not W{value + 12}"
    if kind == "d" and letters.endswith("za"):
        return f"the tile must be ZA0–ZA{high} for this element size, not ZA{value}"
    if kind == "d" and letters.endswith("p"):
        which = "governing predicate" if high < 15 else "predicate register"
        return f"the {which} must be P0–P{high}, not P{value}"
    if kind == "d" and letters.endswith("z"):
        return f"the vector register must be Z0–Z{high}, not Z{value}"
    if name == "off":
        return f"the slice offset must be between 0 and {high}, not {value}"
    if kind == "mulvl":
        return f"the offset must be between {low} and {high} vector lengths, not {value}"
    return f"the immediate must be between {low} and {high}, not {value}"


class _Syntax:
    """A compiled operand template: formats field values and parses operand text."""

    def __init__(self, form: Form, syntax: str):
        self.parts: list[tuple[tuple[str, ...], _Kind] | str] = []
        #: (field, kind name) of every general-register operand, in template order.
        self.registers: list[tuple[str, str]] = []
        #: (field, kind name, letters the template writes just before it) of every operand
        #: that is one field, for range checks in the user's terms.
        self.ranged: list[tuple[str, str, str]] = []
        self.fields = {field.name: field for field in form.fields}
        regex, position = "", 0
        for match in _PLACEHOLDER.finditer(syntax):
            literal = syntax[position:match.start()]
            self.parts.append(literal)
            regex += literal_regex(literal)
            names = tuple(match.group(1).split("+"))
            kind = _KINDS[match.group(2)]
            if (match.group(2) in _REGISTER_KINDS or match.group(2).startswith("rmxzr")) \
                    and names[0] not in (field for field, _ in self.registers):
                # A register spelled twice (``sqincb x0, w0``) is one operand: the first spelling.
                self.registers.append((names[0], match.group(2)))
            if len(names) == 1:
                self.ranged.append((names[0], match.group(2),
                                    re.search(r"[a-z]*$", literal).group(0)))
            self.parts.append((names, kind))
            regex += kind.regex
            position = match.end()
        tail = syntax[position:]
        self.parts.append(tail)
        regex += literal_regex(tail)
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
        self._check_ranges(values)
        return values

    def _check_ranges(self, values: Mapping[str, int]) -> None:
        """Raise :class:`AsmError`, in the user's terms, for an operand out of its range."""
        for name, kind, letters in self.ranged:
            field = self.fields.get(name)
            if field is None or name not in values:
                continue
            low, high = (-(1 << (field.width - 1)), (1 << (field.width - 1)) - 1) \
                if field.signed else (0, (1 << field.width) - 1)
            if not low <= values[name] <= high:
                raise AsmError(_range_problem(name, kind, letters, values[name], low, high))


def literal_regex(literal: str) -> str:
    """A regular expression matching ``literal`` with any spacing around its punctuation."""
    out = ""
    for char in literal:
        if char == " ":
            out += r"\s*"
        elif char in ",[]{}/!":
            out += r"\s*" + re.escape(char) + r"\s*"
        else:
            out += re.escape(char)
    return out


_COMPILED: dict[tuple[str, str], _Syntax] = {}


def _syntax(form: Form, alias: Alias | None = None) -> _Syntax:
    template = form.syntax if alias is None else alias.syntax
    compiled = _COMPILED.get((form.name, template))
    if compiled is None:
        compiled = _COMPILED[form.name, template] = _Syntax(form, template)
    return compiled


@dataclass(frozen=True)
class RegisterOperand:
    """A general-register operand of a form's template: its field and how it is spelled.

    ``kind`` is ``x``/``w`` (31 is the zero register), ``xsp``/``wsp`` (31 is the stack
    pointer), ``w12`` (slice selectors W12-W15) or ``rmxzr<n>`` (an optional index register).
    """

    field: str
    kind: str


def register_operands(form: Form) -> tuple[RegisterOperand, ...]:
    """The general-register operands of ``form``, in template order."""
    return tuple(RegisterOperand(field, kind) for field, kind in _syntax(form).registers)


def form_text(decoded: Decoded) -> str:
    """binutils 2.40 objdump text of a decoded instruction (mnemonic, tab, operands).

    The first of the form's preferred aliases that applies to the word is printed instead.
    """
    form = decoded.form
    alias = next((alias for alias in form.preferred if alias.applies(decoded.fields)), None)
    mnemonic = form.mnemonic if alias is None else alias.mnemonic
    operands = _syntax(form, alias).text(decoded.fields)
    return f"{mnemonic}\t{operands}" if operands else mnemonic


def parse_operands(form: Form, operands: str, alias: Alias | None = None) -> dict[str, int] | None:
    """Field values if ``operands`` (lower case) spells ``form``'s operands (or those of its
    ``alias``, whose left-out fields are filled in), else None."""
    values = _syntax(form, alias).parse(operands)
    if values is not None and alias is not None:
        for target, source in alias.fill.items():
            values[target] = values[source]
    return values
