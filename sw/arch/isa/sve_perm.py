"""The streaming-SVE forms that move and permute elements, and MOVPRFX.

Declared from tables, one form per element size an instruction allows (docs/isa.md, "Streaming
SVE element moves and permutes"). The operation names what is done; a form's fields and
parameters say where the operands come from:

* ``zd``/``zdn``/``pd`` the destination (``zdn``: also the first source), ``rd``/``rdn`` a general
  register and ``vd``/``vdn`` a SIMD&FP scalar register (the low bits of a Z register);
* ``zn``/``zm``/``pn``/``pm`` vector and predicate sources, ``rn``/``rm`` general registers,
  ``vn``/``vm`` SIMD&FP scalars; immediates ``imm8`` (with ``sh``), ``base_imm``/``step_imm``
  (INDEX) and ``imm_hi``/``imm_lo`` (the two parts of one number: the DUP index, the EXT offset);
* ``after``: LASTA/CLASTA, the element after the last active one, where the B forms take the
  last active one;
* ``pairs``: the form reads the register pair ``{Zn, Zn+1}`` (modulo 32) as one table;
* ``high``: the ...2 and ...HI forms (ZIP2: the high halves, UZP2/TRN2: the odd elements,
  SUNPKHI/PUNPKHI: the high half), where the ...1 and ...LO forms take the low or even ones;
* ``zeroing``: predicated, inactive elements become zero rather than keep their value.
"""

from __future__ import annotations

from zatile.sw.arch.isa import sve_int
from zatile.sw.arch.isa.builder import ESIZE, FormList
from zatile.sw.arch.isa.forms import Alias, Field, Form, Requires

__all__ = ["TITLE", "FORMS", "MOVPRFX_OPS", "prefixed_destination"]

#: The class of instructions this module declares (README, "The instruction subset").
TITLE = "streaming SVE: element moves, permutes and MOVPRFX"

#: The MOVPRFX operation (a program generator pairs it with a destructive instruction).
MOVPRFX_OPS = ("perm_movprfx",)

forms = FormList({})

_SIZES = "bhsd"
_ZD, _ZDN, _ZN = Field("zd", 4, 0), Field("zdn", 4, 0), Field("zn", 9, 5)
_ZM_LOW, _ZM_HIGH = Field("zm", 9, 5), Field("zm", 20, 16)
_PG3, _PG4_HIGH = Field("pg", 12, 10), Field("pg", 19, 16)
_PD, _PN, _PM = Field("pd", 3, 0), Field("pn", 8, 5), Field("pm", 19, 16)


def _z(field: str, letter: str) -> str:
    return f"z{{{field}:d}}.{letter}"


def _pair(field: str, letter: str) -> str:
    """``{Zn.T, Zn+1.T}``, the second register printed modulo 32."""
    return f"{{z{{{field}:d}}.{letter}, z{{{field}:next}}.{letter}}}"


def _general(field: str, letter: str, stack: bool = False) -> str:
    """A W register for .B/.H/.S, an X register for .D (31 is the zero register or SP)."""
    kind = ("x" if letter == "d" else "w") + ("sp" if stack else "")
    return f"{{{field}:{kind}}}"


def _add(name: str, mnemonic: str, value: int, fields, syntax: str, op: str, letter: str,
         **params) -> None:
    forms.add(f"{name}_{letter.upper()}", mnemonic, value, fields, syntax, op,
              Requires.STREAMING, esize=ESIZE[letter], **params)


def _size(letter: str) -> int:
    return _SIZES.index(letter) << 22


# ----------------------------------------------------------------------------- moves
def _define_index() -> None:
    """INDEX: base and step each an immediate (signed, 5 bits) or a general register."""
    for operands, value in (("ii", 0x04204000), ("ir", 0x04204800), ("ri", 0x04204400),
                            ("rr", 0x04204C00)):
        for letter in _SIZES:
            fields, parts = [], []
            for which, kind, hi in (("base", operands[0], 9), ("step", operands[1], 20)):
                if kind == "i":
                    fields.append(Field(f"{which}_imm", hi, hi - 4, signed=True))
                    parts.append(f"#{{{which}_imm:s}}")
                else:
                    name = "rn" if which == "base" else "rm"
                    fields.append(Field(name, hi, hi - 4))
                    parts.append(_general(name, letter))
            _add(f"INDEX_{operands.upper()}", "index", value | _size(letter), [*fields, _ZD],
                 f"{_z('zd', letter)}, {parts[0]}, {parts[1]}", "perm_index", letter)


def _define_dup_indexed() -> None:
    """DUP (indexed): the index is ``imm2:tsz`` above the lowest set bit of ``tsz``, which
    gives the element size; binutils prints ``mov``, and ``mov Zd.T, <V>n`` for index 0."""
    for log2, letter in enumerate("bhsdq"):
        tsz_bit = 16 + log2
        if letter == "q":
            fields, index = [Field("imm_hi", 23, 22)], "{imm_hi:d}"
        else:
            fields = [Field("imm_hi", 23, 22), Field("imm_lo", 20, tsz_bit + 1)]
            index = f"{{imm_hi+imm_lo:cat{6 - log2}x{4 - log2}}}"
        preferred = (
            Alias("mov", f"{_z('zd', letter)}, {letter}{{zn:d}}",
                  when=lambda f: not f.get("imm_hi", 0) and not f.get("imm_lo", 0)),
            Alias("mov", f"{_z('zd', letter)}, {_z('zn', letter)}[{index}]"))
        forms.add(f"DUP_{letter.upper()}_INDEXED", "dup", 0x05202000 | 1 << tsz_bit,
                  [*fields, _ZN, _ZD], f"{_z('zd', letter)}, {_z('zn', letter)}[{index}]",
                  "perm_dup_indexed", Requires.STREAMING, esize=ESIZE[letter],
                  preferred=preferred)


def _define_copies() -> None:
    """CPY (immediate, general register, SIMD&FP scalar), printed ``mov``; SEL and its
    ``mov`` alias; INSR."""
    for letter in _SIZES:
        for zeroing, suffix in ((True, "z"), (False, "m")):
            if letter == "b":
                fields, immediate = [_PG4_HIGH, Field("imm8", 12, 5, signed=True), _ZD], \
                    "#{imm8:s}"
            else:
                fields, immediate = [_PG4_HIGH, Field("sh", 13, 13),
                                     Field("imm8", 12, 5, signed=True), _ZD], \
                    f"{{imm8+sh:dupimm{letter}}}"
            _add(f"CPY_IMM_{suffix.upper()}", "mov", 0x05100000 | _size(letter)
                 | (0 if zeroing else 1 << 14), fields,
                 f"{_z('zd', letter)}, p{{pg:d}}/{suffix}, {immediate}", "perm_cpy", letter,
                 aliases=("cpy",), zeroing=zeroing)
        _add("CPY_SCALAR", "mov", 0x0528A000 | _size(letter), [_PG3, Field("rn", 9, 5), _ZD],
             f"{_z('zd', letter)}, p{{pg:d}}/m, {_general('rn', letter, stack=True)}",
             "perm_cpy", letter, aliases=("cpy",), zeroing=False)
        _add("CPY_SIMD", "mov", 0x05208000 | _size(letter), [_PG3, Field("vn", 9, 5), _ZD],
             f"{_z('zd', letter)}, p{{pg:d}}/m, {letter}{{vn:d}}", "perm_cpy",
             letter, aliases=("cpy",), zeroing=False)
        _add("SEL", "sel", 0x0520C000 | _size(letter),
             [_ZM_HIGH, Field("pg", 13, 10), _ZN, _ZD],
             f"{_z('zd', letter)}, p{{pg:d}}, {_z('zn', letter)}, {_z('zm', letter)}",
             "perm_sel", letter,
             preferred=(Alias("mov", f"{_z('zd', letter)}, p{{pg:d}}/m, {_z('zn', letter)}",
                              {"zm": "zd"}),))
        _add("INSR_SCALAR", "insr", 0x05243800 | _size(letter), [Field("rm", 9, 5), _ZDN],
             f"{_z('zdn', letter)}, {_general('rm', letter)}", "perm_insr", letter)
        _add("INSR_SIMD", "insr", 0x05343800 | _size(letter), [Field("vm", 9, 5), _ZDN],
             f"{_z('zdn', letter)}, {letter}{{vm:d}}", "perm_insr", letter)


def _define_last() -> None:
    """LASTA/LASTB and CLASTA/CLASTB: the element after (A) or at (B) the last active one."""
    for after, mnemonic_suffix in ((True, "a"), (False, "b")):
        bit = (0 if after else 1) << 16
        for letter in _SIZES:
            general = _general("rd", letter)
            _add(f"LAST{mnemonic_suffix.upper()}_SCALAR", f"last{mnemonic_suffix}",
                 0x0520A000 | bit | _size(letter), [_PG3, _ZN, Field("rd", 4, 0)],
                 f"{general}, p{{pg:d}}, {_z('zn', letter)}", "perm_last", letter,
                 destination="rd", after=after)
            _add(f"LAST{mnemonic_suffix.upper()}_SIMD", f"last{mnemonic_suffix}",
                 0x05228000 | bit | _size(letter), [_PG3, _ZN, Field("vd", 4, 0)],
                 f"{letter}{{vd:d}}, p{{pg:d}}, {_z('zn', letter)}", "perm_last", letter,
                 after=after)
            general = _general("rdn", letter)
            _add(f"CLAST{mnemonic_suffix.upper()}_SCALAR", f"clast{mnemonic_suffix}",
                 0x0530A000 | bit | _size(letter), [_PG3, _ZM_LOW, Field("rdn", 4, 0)],
                 f"{general}, p{{pg:d}}, {general}, {_z('zm', letter)}", "perm_clast", letter,
                 destination="rdn", reads_destination=True, after=after)
            _add(f"CLAST{mnemonic_suffix.upper()}_SIMD", f"clast{mnemonic_suffix}",
                 0x052A8000 | bit | _size(letter), [_PG3, _ZM_LOW, Field("vdn", 4, 0)],
                 f"{letter}{{vdn:d}}, p{{pg:d}}, {letter}{{vdn:d}}, {_z('zm', letter)}",
                 "perm_clast", letter, after=after)
            _add(f"CLAST{mnemonic_suffix.upper()}_VECTOR", f"clast{mnemonic_suffix}",
                 0x05288000 | bit | _size(letter), [_PG3, _ZM_LOW, _ZDN],
                 f"{_z('zdn', letter)}, p{{pg:d}}, {_z('zdn', letter)}, {_z('zm', letter)}",
                 "perm_clast", letter, after=after)


# ----------------------------------------------------------------------------- permutes
#: ZIP/UZP/TRN: mnemonic, opc (bits 12:10 of both the vector and the predicate form), high.
_INTERLEAVE = (
    ("zip1", 0, "zip", False), ("zip2", 1, "zip", True), ("uzp1", 2, "uzp", False),
    ("uzp2", 3, "uzp", True), ("trn1", 4, "trn", False), ("trn2", 5, "trn", True),
)

#: SUNPKLO/SUNPKHI/UUNPKLO/UUNPKHI: mnemonic, fixed bits, signed, high.
_UNPACK = (
    ("sunpklo", 0x05303800, True, False), ("sunpkhi", 0x05313800, True, True),
    ("uunpklo", 0x05323800, False, False), ("uunpkhi", 0x05333800, False, True),
)

#: REVB/REVH/REVW/RBIT (predicated, merging): mnemonic, opc, sizes.
_REVERSE_WITHIN = (("revb", 0, "hsd"), ("revh", 1, "sd"), ("revw", 2, "d"), ("rbit", 3, "bhsd"))


def _define_permutes() -> None:
    ext_imm = [Field("imm_hi", 20, 16), Field("imm_lo", 12, 10)]
    forms.add("EXT", "ext", 0x05200000, [*ext_imm, _ZM_LOW, _ZDN],
              "z{zdn:d}.b, z{zdn:d}.b, z{zm:d}.b, #{imm_hi+imm_lo:cat8x3}", "perm_ext",
              Requires.STREAMING, esize=1, pairs=False)
    forms.add("EXT_PAIR", "ext", 0x05600000, [*ext_imm, _ZN, _ZD],
              "z{zd:d}.b, " + _pair("zn", "b") + ", #{imm_hi+imm_lo:cat8x3}", "perm_ext",
              Requires.STREAMING, esize=1, pairs=True)
    for letter in _SIZES:
        _add("REV_Z", "rev", 0x05383800 | _size(letter), [_ZN, _ZD],
             f"{_z('zd', letter)}, {_z('zn', letter)}", "perm_rev", letter)
        _add("REV_P", "rev", 0x05344000 | _size(letter), [_PN, _PD],
             f"p{{pd:d}}.{letter}, p{{pn:d}}.{letter}", "perm_rev_predicate", letter)
        for mnemonic, opc, kind, high in _INTERLEAVE:
            _add(f"{mnemonic.upper()}_Z", mnemonic, 0x05206000 | opc << 10 | _size(letter),
                 [_ZM_HIGH, _ZN, _ZD],
                 f"{_z('zd', letter)}, {_z('zn', letter)}, {_z('zm', letter)}", f"perm_{kind}",
                 letter, high=high)
            _add(f"{mnemonic.upper()}_P", mnemonic, 0x05204000 | opc << 10 | _size(letter),
                 [_PM, _PN, _PD], f"p{{pd:d}}.{letter}, p{{pn:d}}.{letter}, p{{pm:d}}.{letter}",
                 f"perm_{kind}_predicate", letter, high=high)
        _add("TBL", "tbl", 0x05203000 | _size(letter), [_ZM_HIGH, _ZN, _ZD],
             f"{_z('zd', letter)}, {{{_z('zn', letter)}}}, {_z('zm', letter)}", "perm_tbl",
             letter, pairs=False)
        _add("TBL_PAIR", "tbl", 0x05202800 | _size(letter), [_ZM_HIGH, _ZN, _ZD],
             f"{_z('zd', letter)}, {_pair('zn', letter)}, {_z('zm', letter)}", "perm_tbl",
             letter, pairs=True)
        _add("TBX", "tbx", 0x05202C00 | _size(letter), [_ZM_HIGH, _ZN, _ZD],
             f"{_z('zd', letter)}, {_z('zn', letter)}, {_z('zm', letter)}", "perm_tbx", letter)
        _add("SPLICE", "splice", 0x052C8000 | _size(letter), [_PG3, _ZM_LOW, _ZDN],
             f"{_z('zdn', letter)}, p{{pg:d}}, {_z('zdn', letter)}, {_z('zm', letter)}",
             "perm_splice", letter, pairs=False)
        _add("SPLICE_PAIR", "splice", 0x052D8000 | _size(letter), [_PG3, _ZN, _ZD],
             f"{_z('zd', letter)}, p{{pg:d}}, {_pair('zn', letter)}", "perm_splice", letter,
             pairs=True)
    for mnemonic, opc, sizes in _REVERSE_WITHIN:
        for letter in sizes:
            _add(mnemonic.upper(), mnemonic, 0x05248000 | opc << 16 | _size(letter),
                 [_PG3, _ZN, _ZD], f"{_z('zd', letter)}, p{{pg:d}}/m, {_z('zn', letter)}",
                 f"perm_{mnemonic}", letter)
    for mnemonic, value, signed, high in _UNPACK:
        for log2, letter in enumerate("hsd", start=1):
            _add(mnemonic.upper(), mnemonic, value | log2 << 22, [_ZN, _ZD],
                 f"{_z('zd', letter)}, {_z('zn', _SIZES[log2 - 1])}", "perm_unpack", letter,
                 signed=signed, high=high)
    for mnemonic, high in (("punpklo", False), ("punpkhi", True)):
        forms.add(mnemonic.upper(), mnemonic, 0x05304000 | high << 16, [_PN, _PD],
                  "p{pd:d}.h, p{pn:d}.b", "perm_unpack_predicate", Requires.STREAMING,
                  esize=2, high=high)


def _define_movprfx() -> None:
    """MOVPRFX: a copy that the architecture allows only before a destructive instruction
    writing the same register (docs/isa.md, "MOVPRFX")."""
    forms.add("MOVPRFX", "movprfx", 0x0420BC00, [_ZN, _ZD], "z{zd:d}, z{zn:d}", "perm_movprfx",
              Requires.STREAMING, esize=1)
    for letter in _SIZES:
        for zeroing, suffix in ((True, "z"), (False, "m")):
            _add(f"MOVPRFX_{suffix.upper()}", "movprfx", 0x04102000 | _size(letter)
                 | (0 if zeroing else 1 << 16), [_PG3, _ZN, _ZD],
                 f"{_z('zd', letter)}, p{{pg:d}}/{suffix}, {_z('zn', letter)}", "perm_movprfx",
                 letter, zeroing=zeroing)


def prefixed_destination(form: Form) -> str | None:
    """The destination field of ``form`` if MOVPRFX may prefix it, else None.

    The forms zatile pairs with MOVPRFX are the integer class's destructive ones (``Zdn`` or
    ``Zda``: the predicated binary and shift forms, multiply-add, the immediate forms) and its
    predicated unary ones (``Zd`` with a merging ``Pg``). The prefixed instruction must write
    the register MOVPRFX wrote, not read it through any other operand, and, after a
    predicated MOVPRFX, be predicated by the same ``Pg`` at the same element size
    (docs/isa.md, "MOVPRFX").
    """
    if form not in sve_int.FORMS:
        return None
    fields = form.field_map
    for name in ("zdn", "zda"):
        if name in fields:
            return name
    return "zd" if "pg" in fields and "zn" in fields else None


_define_index()
_define_dup_indexed()
_define_copies()
_define_last()
_define_permutes()
_define_movprfx()
FORMS = tuple(forms.forms)
