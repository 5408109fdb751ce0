"""The streaming-SVE forms of the table: compares, predicate operations, counts and reductions.

Declared from tables (docs/isa.md, "Streaming SVE predicates, counts and reductions"). The
operations and their parameters:

* ``cmp``: integer compare writing a predicate (zeroing) and NZCV; ``cond`` is the condition
  (``eq ne ge gt lt le hs hi lo ls``), ``second`` where the second operand comes from
  (``vector``, ``wide``: the 64-bit element of the same lane, ``imm``);
* ``pred_logic`` / ``pred_logic_flags``: AND, BIC, EOR, SEL, ORR, ORN, NOR, NAND on predicates
  (``logic``), the second also setting NZCV; ``ptest``, ``pfirst``, ``pnext``, ``ptrues``;
* ``brk`` / ``brk_flags``: BRKA/BRKB (``after``), BRKN (``kind="next"``), BRKPA/BRKPB
  (``kind="propagate"``);
* ``while_cond``: the WHILE conditions the RTL does not perform (``cond``);
* ``cntp``; ``count_scalar`` / ``count_vector``: INC/DEC and the saturating SQINC.. by element
  count (``decrement``, ``saturate`` ``None``/``"signed"``/``"unsigned"``, ``width`` of a scalar);
  ``countp_scalar`` / ``countp_vector`` the same by an active-element count (INCP, SQINCP, ...);
  ADDVL/ADDPL are ``addsvl`` (in streaming mode VL is SVL);
* ``reduce``: SADDV, UADDV, S/U MIN/MAX V, ANDV, ORV, EORV (``function``) into a SIMD&FP scalar.
"""

from __future__ import annotations

from zatile.sw.arch.isa.builder import ESIZE, FormList
from zatile.sw.arch.isa.forms import Alias, Field, Requires, Trait

__all__ = ["TITLE", "FORMS", "COMPARE_CONDITIONS"]

#: The class of instructions this module declares (README, "The instruction subset").
TITLE = "streaming SVE: compares, predicate operations, counts and reductions"

_TRAITS = {op: {Trait.SETS_FLAGS} for op in (
    "cmp", "pred_logic_flags", "ptest", "pfirst", "pnext", "ptrues", "brk_flags", "while_cond")}
forms = FormList(_TRAITS)

_SIZES = "bhsd"
_PD, _PG3, _PG4 = Field("pd", 3, 0), Field("pg", 12, 10), Field("pg", 13, 10)
_ZN, _PN, _PM = Field("zn", 9, 5), Field("pn", 8, 5), Field("pm", 19, 16)

#: Every compare condition, with the condition binutils writes when the operands are swapped
#: (CMPLT Zn, Zm is CMPGT Zm, Zn: an assembler-only spelling).
COMPARE_CONDITIONS = {"eq": "eq", "ne": "ne", "ge": "le", "gt": "lt", "lt": "gt", "le": "ge",
                      "hs": "ls", "hi": "lo", "lo": "hi", "ls": "hs"}


def _add(name: str, mnemonic: str, value: int, fields, syntax: str, op: str, **params) -> None:
    forms.add(name, mnemonic, value, fields, syntax, op, Requires.STREAMING, **params)


# ----------------------------------------------------------------------------- compares
#: Compares of two vectors: condition, fixed bits (size 0).
_COMPARE_VECTORS = (("hs", 0x24000000), ("hi", 0x24000010), ("ge", 0x24008000),
                    ("gt", 0x24008010), ("eq", 0x2400A000), ("ne", 0x2400A010))
#: Compares with the 64-bit elements of the second vector (not for .D).
_COMPARE_WIDE = (("eq", 0x24002000), ("ne", 0x24002010), ("ge", 0x24004000),
                 ("gt", 0x24004010), ("lt", 0x24006000), ("le", 0x24006010),
                 ("hs", 0x2400C000), ("hi", 0x2400C010), ("lo", 0x2400E000),
                 ("ls", 0x2400E010))
#: Compares with an immediate: signed 5-bit, or unsigned 7-bit for the unsigned conditions.
_COMPARE_IMMEDIATE = (("ge", 0x25000000), ("gt", 0x25000010), ("lt", 0x25002000),
                      ("le", 0x25002010), ("eq", 0x25008000), ("ne", 0x25008010),
                      ("hs", 0x24200000), ("hi", 0x24200010), ("lo", 0x24202000),
                      ("ls", 0x24202010))


def _define_compares() -> None:
    head = "p{pd:d}.%s, p{pg:d}/z, z{zn:d}.%s"
    for cond, value in _COMPARE_VECTORS:
        swapped = COMPARE_CONDITIONS[cond]
        for log2, letter in enumerate(_SIZES):
            syntax = f"p{{pd:d}}.{letter}, p{{pg:d}}/z, z{{zn:d}}.{letter}, z{{zm:d}}.{letter}"
            alias = () if swapped == cond else (Alias(
                f"cmp{swapped}",
                f"p{{pd:d}}.{letter}, p{{pg:d}}/z, z{{zm:d}}.{letter}, z{{zn:d}}.{letter}",
                printed=False),)
            _add(f"CMP{cond.upper()}_{letter.upper()}_ZZ", f"cmp{cond}", value | log2 << 22,
                 [Field("zm", 20, 16), _PG3, _ZN, _PD], syntax, "cmp", cond=cond,
                 second="vector", esize=ESIZE[letter], preferred=alias)
    for cond, value in _COMPARE_WIDE:
        for log2, letter in enumerate("bhs"):
            _add(f"CMP{cond.upper()}_{letter.upper()}_ZW", f"cmp{cond}", value | log2 << 22,
                 [Field("zm", 20, 16), _PG3, _ZN, _PD],
                 head % (letter, letter) + ", z{zm:d}.d", "cmp", cond=cond, second="wide",
                 esize=ESIZE[letter])
    for cond, value in _COMPARE_IMMEDIATE:
        unsigned = cond in ("hs", "hi", "lo", "ls")
        immediate = Field("imm7", 20, 14) if unsigned else Field("imm5", 20, 16, signed=True)
        for log2, letter in enumerate(_SIZES):
            _add(f"CMP{cond.upper()}_{letter.upper()}_ZI", f"cmp{cond}", value | log2 << 22,
                 [immediate, _PG3, _ZN, _PD],
                 head % (letter, letter) + f", #{{{immediate.name}:{'d' if unsigned else 's'}}}",
                 "cmp", cond=cond, second="imm", esize=ESIZE[letter])


# ----------------------------------------------------------------------------- predicates
#: Predicate logic ``Pd.B, Pg/Z, Pn.B, Pm.B``: mnemonic, fixed bits, operation, and the
#: spelling binutils prefers with its field equalities (``mov`` for ORR with Pg = Pn = Pm).
_PREDICATE_LOGIC = (
    ("and", 0x25004000, "and", ("mov", "p{pd:d}.b, p{pg:d}/z, p{pn:d}.b", {"pm": "pn"})),
    ("bic", 0x25004010, "bic", None),
    ("eor", 0x25004200, "eor", ("not", "p{pd:d}.b, p{pg:d}/z, p{pn:d}.b", {"pm": "pg"})),
    ("sel", 0x25004210, "sel", ("mov", "p{pd:d}.b, p{pg:d}/m, p{pn:d}.b", {"pm": "pd"})),
    ("orr", 0x25804000, "orr", ("mov", "p{pd:d}.b, p{pn:d}.b", {"pm": "pn", "pg": "pn"})),
    ("orn", 0x25804010, "orn", None),
    ("nor", 0x25804200, "nor", None),
    ("nand", 0x25804210, "nand", None),
)


def _define_predicates() -> None:
    fields = [_PM, _PG4, _PN, _PD]
    for mnemonic, value, logic, alias in _PREDICATE_LOGIC:
        for flags in (False, True) if mnemonic != "sel" else (False,):
            name = mnemonic + ("s" if flags else "")
            preferred = () if alias is None else \
                (Alias(alias[0] + ("s" if flags else ""), alias[1], alias[2]),)
            governed = "p{pg:d}" if mnemonic == "sel" else "p{pg:d}/z"
            _add(f"{name.upper()}_PPZZ", name, value | flags << 22, fields,
                 f"p{{pd:d}}.b, {governed}, p{{pn:d}}.b, p{{pm:d}}.b",
                 "pred_logic_flags" if flags else "pred_logic", logic=logic, esize=1,
                 preferred=preferred)
    _add("PTEST", "ptest", 0x2550C000, [_PG4, _PN], "p{pg:d}, p{pn:d}.b", "ptest", esize=1)
    _add("PFIRST", "pfirst", 0x2558C000, [Field("pg", 8, 5), Field("pdn", 3, 0)],
         "p{pdn:d}.b, p{pg:d}, p{pdn:d}.b", "pfirst", esize=1)
    for log2, letter in enumerate(_SIZES):
        _add(f"PNEXT_{letter.upper()}", "pnext", 0x2519C400 | log2 << 22,
             [Field("pv", 8, 5), Field("pdn", 3, 0)],
             f"p{{pdn:d}}.{letter}, p{{pv:d}}, p{{pdn:d}}.{letter}", "pnext",
             esize=ESIZE[letter])
        _add(f"PTRUES_{letter.upper()}", "ptrues", 0x2519E000 | log2 << 22,
             [Field("pattern", 9, 5), _PD], f"p{{pd:d}}.{letter}{{pattern:optpat}}", "ptrues",
             esize=ESIZE[letter])
    for name, value, after in (("brka", 0x25104000, True), ("brkb", 0x25904000, False)):
        _add(f"{name.upper()}_Z", name, value, [_PG4, _PN, _PD],
             "p{pd:d}.b, p{pg:d}/z, p{pn:d}.b", "brk", kind="break", after=after, merging=False)
        _add(f"{name.upper()}_M", name, value | 0x10, [_PG4, _PN, _PD],
             "p{pd:d}.b, p{pg:d}/m, p{pn:d}.b", "brk", kind="break", after=after, merging=True)
        _add(f"{name.upper()}S", f"{name}s", value | 1 << 22, [_PG4, _PN, _PD],
             "p{pd:d}.b, p{pg:d}/z, p{pn:d}.b", "brk_flags", kind="break", after=after,
             merging=False)
    for flags in (False, True):
        name = "brkns" if flags else "brkn"
        _add(name.upper(), name, 0x25184000 | flags << 22, [_PG4, _PN, Field("pdm", 3, 0)],
             "p{pdm:d}.b, p{pg:d}/z, p{pn:d}.b, p{pdm:d}.b", "brk_flags" if flags else "brk",
             kind="next")
        for name, bit in (("brkpa", 0), ("brkpb", 0x10)):
            name += "s" if flags else ""
            _add(name.upper(), name, 0x2500C000 | flags << 22 | bit, [_PM, _PG4, _PN, _PD],
                 "p{pd:d}.b, p{pg:d}/z, p{pn:d}.b, p{pm:d}.b",
                 "brk_flags" if flags else "brk", kind="propagate", after=not bit)


#: WHILE conditions beyond WHILELT/WHILELO (which are ``while``): condition, fixed bits
#: (``sf`` 0, size 0). GE/GT/HS/HI (SVE2) fill from the last element down.
_WHILE = (("ge", 0x25200000), ("gt", 0x25200010), ("le", 0x25200410), ("hs", 0x25200800),
          ("hi", 0x25200810), ("ls", 0x25200C10))


def _define_whiles() -> None:
    for cond, value in _WHILE:
        for log2, letter in enumerate(_SIZES):
            for sf, register in ((0, "w"), (1, "x")):
                _add(f"WHILE{cond.upper()}_{letter.upper()}_{register.upper()}", f"while{cond}",
                     value | log2 << 22 | sf << 12, [Field("rm", 20, 16), Field("rn", 9, 5), _PD],
                     f"p{{pd:d}}.{letter}, {{rn:{register}}}, {{rm:{register}}}", "while_cond",
                     cond=cond, esize=ESIZE[letter], width=32 << sf)


# ----------------------------------------------------------------------------- counts
def _define_counts() -> None:
    pattern, imm4, rdn, zdn = Field("pattern", 9, 5), Field("imm4", 19, 16), \
        Field("rdn", 4, 0), Field("zdn", 4, 0)
    scalar = dict(destination="rdn", reads_destination=True)
    cntp = "{pattern+imm4:cntpat}"
    for log2, letter in enumerate(_SIZES):
        count_letter = "bhwd"[log2]
        for decrement in (False, True):
            verb = "dec" if decrement else "inc"
            _add(f"{verb.upper()}{count_letter.upper()}_X", f"{verb}{count_letter}",
                 0x0430E000 | log2 << 22 | decrement << 10, [imm4, pattern, rdn],
                 "{rdn:x}" + cntp, "count_scalar", esize=ESIZE[letter], decrement=decrement,
                 saturate=None, width=64, **scalar)
            if letter != "b":
                _add(f"{verb.upper()}{count_letter.upper()}_Z", f"{verb}{count_letter}",
                     0x0430C000 | log2 << 22 | decrement << 10, [imm4, pattern, zdn],
                     f"z{{zdn:d}}.{letter}" + cntp, "count_vector", esize=ESIZE[letter],
                     decrement=decrement, saturate=None)
            for unsigned in (False, True):
                name = f"{'uq' if unsigned else 'sq'}{verb}{count_letter}"
                saturate = "unsigned" if unsigned else "signed"
                for sf in (0, 1):
                    syntax = "{rdn:x}" if sf else ("{rdn:w}" if unsigned else "{rdn:x}, {rdn:w}")
                    _add(f"{name.upper()}_{'X' if sf else 'W'}", name,
                         0x0420F000 | log2 << 22 | sf << 20 | decrement << 11 | unsigned << 10,
                         [imm4, pattern, rdn], syntax + cntp, "count_scalar",
                         esize=ESIZE[letter], decrement=decrement, saturate=saturate,
                         width=64 if sf else 32, **scalar)
                if letter != "b":
                    _add(f"{name.upper()}_Z", name,
                         0x0420C000 | log2 << 22 | decrement << 11 | unsigned << 10,
                         [imm4, pattern, zdn], f"z{{zdn:d}}.{letter}" + cntp, "count_vector",
                         esize=ESIZE[letter], decrement=decrement, saturate=saturate)
    rd, rn, imm6 = Field("rd", 4, 0), Field("rn", 20, 16), Field("imm", 10, 5, signed=True)
    for mnemonic, value, unit in (("addvl", 0x04205000, "svl_bytes"),
                                  ("addpl", 0x04605000, "svl_pred_bytes")):
        _add(mnemonic.upper(), mnemonic, value, [rn, imm6, rd], "{rd:xsp}, {rn:xsp}, #{imm:s}",
             "addsvl", destination="rd", unit=unit)


def _define_predicate_counts() -> None:
    pm, rdn, zdn = Field("pm", 8, 5), Field("rdn", 4, 0), Field("zdn", 4, 0)
    scalar = dict(destination="rdn", reads_destination=True)
    for log2, letter in enumerate(_SIZES):
        esize = ESIZE[letter]
        _add(f"CNTP_{letter.upper()}", "cntp", 0x25208000 | log2 << 22,
             [_PG4, _PN, Field("rd", 4, 0)], f"{{rd:x}}, p{{pg:d}}, p{{pn:d}}.{letter}", "cntp",
             destination="rd", esize=esize)
        for decrement in (False, True):
            verb = "dec" if decrement else "inc"
            _add(f"{verb.upper()}P_X_{letter.upper()}", f"{verb}p",
                 0x252C8800 | log2 << 22 | decrement << 16, [pm, rdn],
                 f"{{rdn:x}}, p{{pm:d}}.{letter}", "countp_scalar", esize=esize,
                 decrement=decrement, saturate=None, width=64, **scalar)
            if letter != "b":
                _add(f"{verb.upper()}P_Z_{letter.upper()}", f"{verb}p",
                     0x252C8000 | log2 << 22 | decrement << 16, [pm, zdn],
                     f"z{{zdn:d}}.{letter}, p{{pm:d}}.{letter}", "countp_vector", esize=esize,
                     decrement=decrement, saturate=None)
            for unsigned in (False, True):
                name = f"{'uq' if unsigned else 'sq'}{verb}p"
                saturate = "unsigned" if unsigned else "signed"
                for sf in (0, 1):
                    predicate = f"p{{pm:d}}.{letter}"
                    syntax = f"{{rdn:x}}, {predicate}" if sf else (
                        f"{{rdn:w}}, {predicate}" if unsigned else f"{{rdn:x}}, {predicate}, {{rdn:w}}")
                    _add(f"{name.upper()}_{'X' if sf else 'W'}_{letter.upper()}", name,
                         0x25288800 | log2 << 22 | decrement << 17 | unsigned << 16 | sf << 10,
                         [pm, rdn], syntax, "countp_scalar", esize=esize, decrement=decrement,
                         saturate=saturate, width=64 if sf else 32, **scalar)
                if letter != "b":
                    _add(f"{name.upper()}_Z_{letter.upper()}", name,
                         0x25288000 | log2 << 22 | decrement << 17 | unsigned << 16, [pm, zdn],
                         f"z{{zdn:d}}.{letter}, p{{pm:d}}.{letter}", "countp_vector",
                         esize=esize, decrement=decrement, saturate=saturate)


# ----------------------------------------------------------------------------- reductions
#: Integer reductions ``Vd, Pg, Zn.T``: mnemonic, fixed bits, function, element sizes, and
#: whether the result is a 64-bit scalar (the sums) rather than one element.
_REDUCTIONS = (
    ("saddv", 0x04002000, "sadd", "bhs", True), ("uaddv", 0x04012000, "uadd", "bhsd", True),
    ("smaxv", 0x04082000, "smax", "bhsd", False), ("umaxv", 0x04092000, "umax", "bhsd", False),
    ("sminv", 0x040A2000, "smin", "bhsd", False), ("uminv", 0x040B2000, "umin", "bhsd", False),
    ("orv", 0x04182000, "or", "bhsd", False), ("eorv", 0x04192000, "eor", "bhsd", False),
    ("andv", 0x041A2000, "and", "bhsd", False),
)


def _define_reductions() -> None:
    for mnemonic, value, function, sizes, wide in _REDUCTIONS:
        for letter in sizes:
            log2 = _SIZES.index(letter)
            _add(f"{mnemonic.upper()}_{letter.upper()}", mnemonic, value | log2 << 22,
                 [_PG3, _ZN, Field("vd", 4, 0)],
                 f"{'d' if wide else letter}{{vd:d}}, p{{pg:d}}, z{{zn:d}}.{letter}", "reduce",
                 function=function, esize=ESIZE[letter], result_size=8 if wide else ESIZE[letter])


_define_compares()
_define_predicates()
_define_whiles()
_define_counts()
_define_predicate_counts()
_define_reductions()
FORMS = tuple(forms.forms)
