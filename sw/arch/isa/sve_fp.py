"""The streaming-SVE floating-point forms of the table: arithmetic, multiply-add, rounding,
comparisons, reductions, reciprocal estimates and steps, conversions and immediate moves on
half, single and double precision.

Declared from tables, one row per instruction and one form per element size (docs/isa.md,
"Streaming SVE floating point"). An operation (``fp_add``, ``fp_mla``, ...) is the arithmetic
performed; a form's fields and parameters say where its operands come from:

* ``zdn`` (destructive) or ``zn`` the first operand, ``zm`` or an immediate (``imm``, one bit
  choosing between the two constants :data:`IMMEDIATE_CONSTANTS` gives the operation) the
  second;
* ``pg``: merging predication (inactive elements of the destination keep their value);
* ``reversed``: the operands are swapped (FSUBR, FDIVR);
* multiply-add: ``negate_product`` / ``negate_addend`` (FMLS, FNMLA, ...); the MAD forms
  (``zdn``, ``za``) multiply the destination, the MLA forms (``zda``) accumulate into it;
* compares (``fp_cmp<condition>``): ``absolute`` (FACGE); without ``zm`` against +0.0,
  ``swapped`` for FCMLT/FCMLE (#0.0), which compare 0 with the element;
* conversions (``fp_<mnemonic>``): ``esize`` is the container each element occupies (the
  predicate's granule), the larger of the source and result sizes; ``narrowing`` (the result
  is narrower) or ``widening`` (the source is), by half or, with ``quarter``, by a quarter
  (:func:`conversion_sizes` gives both sizes); the SVE2 forms FCVTNT, FCVTLT, ... write or
  read the odd (top) narrow elements;
* ``fp_dup_imm``/``fp_cpy_imm`` (FMOV): ``imm8`` is an 8-bit floating-point immediate.

Every operation that can raise a floating-point exception has ``Trait.FP_FLAGS``.
"""

from __future__ import annotations

from zatile.sw.arch.isa.builder import ESIZE, FormList
from zatile.sw.arch.isa.forms import Alias, Field, Requires, Trait

__all__ = ["TITLE", "FORMS", "IMMEDIATE_CONSTANTS", "CONDITIONS", "FRINT_SUFFIXES",
           "conversion_sizes"]

#: The class of instructions this module declares (README, "The instruction subset").
TITLE = ("streaming SVE: floating-point arithmetic, rounding, comparisons, reductions, "
         "estimates, conversions and immediates")

#: The comparison conditions (``fp_cmp<condition>``): ``un`` is unordered (FCMUO).
CONDITIONS = ("eq", "ne", "ge", "gt", "un")
#: The FRINT<x> suffixes (``fp_frint<x>``): a fixed rounding, or FPCR's for ``i`` and ``x``.
FRINT_SUFFIXES = "npmzaxi"
_FLAG_OPS = ("fp_add", "fp_sub", "fp_mul", "fp_mulx", "fp_div", "fp_max", "fp_min", "fp_maxnm",
             "fp_minnm", "fp_abd", "fp_scale", "fp_mla", "fp_sqrt", "fp_addv", "fp_maxv",
             "fp_minv", "fp_maxnmv", "fp_minnmv",
             *(f"fp_frint{suffix}" for suffix in FRINT_SUFFIXES), *(
                 f"fp_{mnemonic}" for mnemonic in ("fcvt", "bfcvt", "fcvtx", "fcvtnt", "fcvtlt",
                                                   "bfcvtnt", "fcvtxnt", "scvtf", "ucvtf",
                                                   "fcvtzs", "fcvtzu")),
             "fp_recpe", "fp_rsqrte", "fp_recps", "fp_rsqrts", "fp_recpx",
             *(f"fp_cmp{condition}" for condition in CONDITIONS))
forms = FormList({op: {Trait.FP_FLAGS} for op in _FLAG_OPS})

_SIZES = "bhsd"
_FP_SIZES = "hsd"
_ZDN, _ZD, _ZN = Field("zdn", 4, 0), Field("zd", 4, 0), Field("zn", 9, 5)
_PG, _ZM_LOW, _ZM_HIGH = Field("pg", 12, 10), Field("zm", 9, 5), Field("zm", 20, 16)
_PD = Field("pd", 3, 0)

#: The constants the immediate bit selects (0, 1), by operation; the syntax kind spelling them.
IMMEDIATE_CONSTANTS = {"fp_add": (0.5, 1.0), "fp_sub": (0.5, 1.0), "fp_mul": (0.5, 2.0),
                       "fp_maxnm": (0.0, 1.0), "fp_minnm": (0.0, 1.0), "fp_max": (0.0, 1.0),
                       "fp_min": (0.0, 1.0)}
_CONSTANT_KINDS = {(0.5, 1.0): "halfone", (0.5, 2.0): "halftwo", (0.0, 1.0): "zeroone"}


def conversion_sizes(params) -> tuple[int, int]:
    """The source and result element sizes in bytes of a conversion form's parameters."""
    container = params["esize"]
    narrow = container // (4 if params["quarter"] else 2)
    return (narrow if params["widening"] else container,
            narrow if params["narrowing"] else container)


def _z(field: str, letter: str) -> str:
    return f"z{{{field}:d}}.{letter}"


def _add(name: str, mnemonic: str, value: int, fields, syntax: str, op: str, letter: str,
         **params) -> None:
    forms.add(f"{name}_{letter.upper()}", mnemonic, value | _SIZES.index(letter) << 22, fields,
              syntax, op, Requires.STREAMING, esize=ESIZE[letter], **params)


#: Predicated ``Zdn, Pg/M, Zdn, Zm``: mnemonic, opc (bits 19:16), operation, parameters.
_PREDICATED = (
    ("fadd", 0x0, "fp_add", {}), ("fsub", 0x1, "fp_sub", {}), ("fmul", 0x2, "fp_mul", {}),
    ("fsubr", 0x3, "fp_sub", {"reversed": True}), ("fmaxnm", 0x4, "fp_maxnm", {}),
    ("fminnm", 0x5, "fp_minnm", {}), ("fmax", 0x6, "fp_max", {}), ("fmin", 0x7, "fp_min", {}),
    ("fabd", 0x8, "fp_abd", {}), ("fscale", 0x9, "fp_scale", {}), ("fmulx", 0xA, "fp_mulx", {}),
    ("fdivr", 0xC, "fp_div", {"reversed": True}), ("fdiv", 0xD, "fp_div", {}),
)

#: Predicated with an immediate ``Zdn, Pg/M, Zdn, #const``: mnemonic, opc (bits 18:16),
#: operation, parameters.
_IMMEDIATE = (
    ("fadd", 0, "fp_add", {}), ("fsub", 1, "fp_sub", {}), ("fmul", 2, "fp_mul", {}),
    ("fsubr", 3, "fp_sub", {"reversed": True}), ("fmaxnm", 4, "fp_maxnm", {}),
    ("fminnm", 5, "fp_minnm", {}), ("fmax", 6, "fp_max", {}), ("fmin", 7, "fp_min", {}),
)

#: Unpredicated ``Zd, Zn, Zm``: mnemonic, opc (bits 12:10), operation.
_UNPREDICATED = (("fadd", 0, "fp_add"), ("fsub", 1, "fp_sub"), ("fmul", 2, "fp_mul"),
                 ("frecps", 6, "fp_recps"), ("frsqrts", 7, "fp_rsqrts"))

#: Unpredicated estimates ``Zd, Zn``: mnemonic, fixed bits (size 0), operation.
_ESTIMATES = (("frecpe", 0x650E3000, "fp_recpe"), ("frsqrte", 0x650F3000, "fp_rsqrte"))

#: Multiply-add: mnemonic, opc (bits 15:13), negate the product, negate the addend.
_MULTIPLY_ADD = (
    ("fmla", 0, False, False), ("fmls", 1, True, False), ("fnmla", 2, True, True),
    ("fnmls", 3, False, True), ("fmad", 4, False, False), ("fmsb", 5, True, False),
    ("fnmad", 6, True, True), ("fnmsb", 7, False, True),
)

#: Predicated unary ``Zd, Pg/M, Zn``: mnemonic, fixed bits (size 0), operation, parameters.
_UNARY = (
    ("frintn", 0x6500A000, "fp_frintn", {}), ("frintp", 0x6501A000, "fp_frintp", {}),
    ("frintm", 0x6502A000, "fp_frintm", {}), ("frintz", 0x6503A000, "fp_frintz", {}),
    ("frinta", 0x6504A000, "fp_frinta", {}), ("frintx", 0x6506A000, "fp_frintx", {}),
    ("frinti", 0x6507A000, "fp_frinti", {}),
    ("fsqrt", 0x650DA000, "fp_sqrt", {}),
    ("fabs", 0x041CA000, "fp_abs", {}),
    ("fneg", 0x041DA000, "fp_neg", {}),
    ("frecpx", 0x650CA000, "fp_recpx", {}),
)

#: Compares of two vectors ``Pd, Pg/Z, Zn, Zm``: mnemonic, fixed bits (size 0), condition,
#: absolute values, the mnemonic of the swapped-operand spelling the assembler also accepts.
_COMPARE = (
    ("fcmge", 0x65004000, "ge", False, "fcmle"), ("fcmgt", 0x65004010, "gt", False, "fcmlt"),
    ("fcmeq", 0x65006000, "eq", False, None), ("fcmne", 0x65006010, "ne", False, None),
    ("fcmuo", 0x6500C000, "un", False, None), ("facge", 0x6500C010, "ge", True, "facle"),
    ("facgt", 0x6500E010, "gt", True, "faclt"),
)

#: Compares with zero ``Pd, Pg/Z, Zn, #0.0``: mnemonic, fixed bits (size 0), condition, and
#: whether the operands are swapped (0 compared with the element).
_COMPARE_ZERO = (
    ("fcmge", 0x65102000, "ge", False), ("fcmgt", 0x65102010, "gt", False),
    ("fcmlt", 0x65112000, "gt", True), ("fcmle", 0x65112010, "ge", True),
    ("fcmeq", 0x65122000, "eq", False), ("fcmne", 0x65132000, "ne", False),
)

#: Conversions ``Zd.T, Pg/M, Zn.Tb``: mnemonic, fixed bits, result and source size letters.
#: FCVTX, FCVTNT, FCVTLT, BFCVTNT and FCVTXNT are SVE2; all are legal in streaming mode.
_CONVERSIONS = (
    ("fcvt", 0x6588A000, "h", "s"), ("fcvt", 0x6589A000, "s", "h"),
    ("fcvt", 0x65C8A000, "h", "d"), ("fcvt", 0x65C9A000, "d", "h"),
    ("fcvt", 0x65CAA000, "s", "d"), ("fcvt", 0x65CBA000, "d", "s"),
    ("bfcvt", 0x658AA000, "h", "s"), ("fcvtx", 0x650AA000, "s", "d"),
    ("fcvtnt", 0x6488A000, "h", "s"), ("fcvtnt", 0x64CAA000, "s", "d"),
    ("fcvtlt", 0x6489A000, "s", "h"), ("fcvtlt", 0x64CBA000, "d", "s"),
    ("bfcvtnt", 0x648AA000, "h", "s"), ("fcvtxnt", 0x640AA000, "s", "d"),
    *((mnemonic, value | unsigned << 16, to, source)
      for unsigned, (int_to_fp, fp_to_int) in enumerate((("scvtf", "fcvtzs"), ("ucvtf", "fcvtzu")))
      for mnemonic, value, to, source in (
          (int_to_fp, 0x6552A000, "h", "h"), (int_to_fp, 0x6554A000, "h", "s"),
          (int_to_fp, 0x6556A000, "h", "d"), (int_to_fp, 0x6594A000, "s", "s"),
          (int_to_fp, 0x65D0A000, "d", "s"), (int_to_fp, 0x65D4A000, "s", "d"),
          (int_to_fp, 0x65D6A000, "d", "d"),
          (fp_to_int, 0x655AA000, "h", "h"), (fp_to_int, 0x655CA000, "s", "h"),
          (fp_to_int, 0x655EA000, "d", "h"), (fp_to_int, 0x659CA000, "s", "s"),
          (fp_to_int, 0x65D8A000, "s", "d"), (fp_to_int, 0x65DCA000, "d", "s"),
          (fp_to_int, 0x65DEA000, "d", "d"))),
)

#: Reductions to a scalar ``Vd, Pg, Zn``: mnemonic, opc (bits 18:16), operation.
_REDUCTIONS = (
    ("faddv", 0, "fp_addv"), ("fmaxnmv", 4, "fp_maxnmv"), ("fminnmv", 5, "fp_minnmv"),
    ("fmaxv", 6, "fp_maxv"), ("fminv", 7, "fp_minv"),
)


def _define() -> None:
    pg_low = Field("pg", 12, 10)
    for mnemonic, opc, op, params in _PREDICATED:
        for letter in _FP_SIZES:
            _add(f"{mnemonic.upper()}_ZPZZ", mnemonic, 0x65008000 | opc << 16,
                 [pg_low, _ZM_LOW, _ZDN],
                 f"{_z('zdn', letter)}, p{{pg:d}}/m, {_z('zdn', letter)}, {_z('zm', letter)}",
                 op, letter, **params)
    for mnemonic, opc, op, params in _IMMEDIATE:
        kind = _CONSTANT_KINDS[IMMEDIATE_CONSTANTS[op]]
        for letter in _FP_SIZES:
            _add(f"{mnemonic.upper()}_ZPZI", mnemonic, 0x65188000 | opc << 16,
                 [pg_low, Field("imm", 5, 5), _ZDN],
                 f"{_z('zdn', letter)}, p{{pg:d}}/m, {_z('zdn', letter)}, {{imm:{kind}}}",
                 op, letter, **params)
    for mnemonic, opc, op in _UNPREDICATED:
        for letter in _FP_SIZES:
            _add(f"{mnemonic.upper()}_ZZZ", mnemonic, 0x65000000 | opc << 10,
                 [_ZM_HIGH, _ZN, _ZD],
                 f"{_z('zd', letter)}, {_z('zn', letter)}, {_z('zm', letter)}", op, letter)
    for mnemonic, value, op in _ESTIMATES:
        for letter in _FP_SIZES:
            _add(mnemonic.upper(), mnemonic, value, [_ZN, _ZD],
                 f"{_z('zd', letter)}, {_z('zn', letter)}", op, letter)
    for mnemonic, opc, negate_product, negate_addend in _MULTIPLY_ADD:
        mad = opc >= 4
        for letter in _FP_SIZES:
            if mad:
                fields = [Field("za", 20, 16), pg_low, _ZM_LOW, _ZDN]
                syntax = (f"{_z('zdn', letter)}, p{{pg:d}}/m, {_z('zm', letter)}, "
                          f"{_z('za', letter)}")
            else:
                fields = [_ZM_HIGH, pg_low, _ZN, Field("zda", 4, 0)]
                syntax = (f"{_z('zda', letter)}, p{{pg:d}}/m, {_z('zn', letter)}, "
                          f"{_z('zm', letter)}")
            _add(mnemonic.upper(), mnemonic, 0x65200000 | opc << 13, fields, syntax, "fp_mla",
                 letter, negate_product=negate_product, negate_addend=negate_addend)
    for mnemonic, value, op, params in _UNARY:
        for letter in _FP_SIZES:
            _add(mnemonic.upper(), mnemonic, value, [pg_low, _ZN, _ZD],
                 f"{_z('zd', letter)}, p{{pg:d}}/m, {_z('zn', letter)}", op, letter, **params)
    for mnemonic, value, condition, absolute, swapped in _COMPARE:
        for letter in _FP_SIZES:
            operands = "p{pd:d}.%s, p{pg:d}/z, z{%s:d}.%s, z{%s:d}.%s"
            preferred = () if swapped is None else (
                Alias(swapped, operands % (letter, "zm", letter, "zn", letter), printed=False),)
            _add(f"{mnemonic.upper()}_PPZZ", mnemonic, value, [_ZM_HIGH, pg_low, _ZN, _PD],
                 operands % (letter, "zn", letter, "zm", letter), f"fp_cmp{condition}",
                 letter, absolute=absolute, preferred=preferred)
    for mnemonic, value, condition, swapped in _COMPARE_ZERO:
        for letter in _FP_SIZES:
            _add(f"{mnemonic.upper()}_PPZ0", mnemonic, value, [pg_low, _ZN, _PD],
                 f"p{{pd:d}}.{letter}, p{{pg:d}}/z, {_z('zn', letter)}, #0.0",
                 f"fp_cmp{condition}", letter, swapped=swapped)
    for mnemonic, opc, op in _REDUCTIONS:
        for letter in _FP_SIZES:
            _add(mnemonic.upper(), mnemonic, 0x65002000 | opc << 16,
                 [pg_low, _ZN, Field("vd", 4, 0)],
                 f"{letter}{{vd:d}}, p{{pg:d}}, {_z('zn', letter)}", op, letter)
    for mnemonic, value, to, source in _CONVERSIONS:
        container = max(ESIZE[to], ESIZE[source])
        forms.add(f"{mnemonic.upper()}_{to.upper()}{source.upper()}", mnemonic, value,
                  [pg_low, _ZN, _ZD], f"{_z('zd', to)}, p{{pg:d}}/m, {_z('zn', source)}",
                  f"fp_{mnemonic}", Requires.STREAMING, esize=container,
                  narrowing=ESIZE[to] < container, widening=ESIZE[source] < container,
                  quarter=min(ESIZE[to], ESIZE[source]) * 4 == container)
    for letter in _FP_SIZES:
        # FDUP and FCPY: binutils prints and takes FMOV, and takes FDUP/FCPY too.
        _add("FDUP", "fmov", 0x2539C000, [Field("imm8", 12, 5), _ZD],
             f"{_z('zd', letter)}, {{imm8:fpimm8}}", "fp_dup_imm", letter, aliases=("fdup",))
        _add("FCPY", "fmov", 0x0510C000, [Field("pg", 19, 16), Field("imm8", 12, 5), _ZD],
             f"{_z('zd', letter)}, p{{pg:d}}/m, {{imm8:fpimm8}}", "fp_cpy_imm", letter,
             aliases=("fcpy",))


_define()
FORMS = tuple(forms.forms)
