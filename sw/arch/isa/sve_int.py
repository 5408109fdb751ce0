"""The streaming-SVE integer forms of the table: vector arithmetic, logic and shifts.

Declared from tables, one row per instruction and one form per element size it allows
(docs/isa.md, "Streaming SVE integer arithmetic"). An operation (``int_add``, ``int_asr``, ...)
is the arithmetic performed; a form's fields and boolean parameters say where its operands come
from:

* ``zdn`` (destructive) or ``zn`` the first operand, ``zm`` or an immediate the second;
* ``pg``: merging predication (inactive elements of the destination keep their value);
* ``reversed``: the operands are swapped (SUBR, ASRR, SDIVR, ...);
* ``wide``: the second operand is the 64-bit element of the same 64-bit lane (ASR ..., Zm.D);
* ``shift_right``: a shift immediate counts from the element size down (ASR #imm);
* ``top``: a narrowing result goes to the odd elements (SQXTNT), else to the even ones; a
  widening operation reads the odd narrow elements (SADDLT), else the even ones;
* ``mask64``: the N bit of a logical immediate (64-bit elements), fixed by the form.

:func:`immediate_operand` is the value of any immediate the forms carry.
"""

from __future__ import annotations

from zatile.sw.arch.isa.builder import ESIZE, FormList
from zatile.sw.arch.isa.forms import Alias, Decoded, Field, Requires, shifted_imm8
from zatile.sw.arch.pseudocode import decode_bit_masks, replicate, sve_move_mask_preferred

__all__ = ["TITLE", "FORMS", "immediate_operand", "shift_amount"]

#: The class of instructions this module declares (README, "The instruction subset").
TITLE = "streaming SVE: integer arithmetic, logic and shifts (SVE and SVE2)"

forms = FormList({})

_SIZES = "bhsd"
_ZDN, _ZD, _ZN = Field("zdn", 4, 0), Field("zd", 4, 0), Field("zn", 9, 5)
_PG, _ZM_LOW, _ZM_HIGH = Field("pg", 12, 10), Field("zm", 9, 5), Field("zm", 20, 16)


def _z(field: str, letter: str) -> str:
    return f"z{{{field}:d}}.{letter}"


def _add(name: str, mnemonic: str, value: int, fields, syntax: str, op: str, letter: str,
         **params) -> None:
    forms.add(f"{name}_{letter.upper()}" if letter else name, mnemonic, value, fields, syntax,
              op, Requires.STREAMING, esize=ESIZE[letter or "d"], **params)


# ----------------------------------------------------------------------------- predicated
#: Destructive predicated binary operations ``Zdn, Pg/M, Zdn, Zm``: mnemonic, fixed bits
#: (size 0), operation, element sizes, parameters.
_PREDICATED = (
    ("add", 0x04000000, "int_add", "bhsd", {}),
    ("sub", 0x04010000, "int_sub", "bhsd", {}),
    ("subr", 0x04030000, "int_sub", "bhsd", {"reversed": True}),
    ("smax", 0x04080000, "int_smax", "bhsd", {}),
    ("umax", 0x04090000, "int_umax", "bhsd", {}),
    ("smin", 0x040A0000, "int_smin", "bhsd", {}),
    ("umin", 0x040B0000, "int_umin", "bhsd", {}),
    ("sabd", 0x040C0000, "int_sabd", "bhsd", {}),
    ("uabd", 0x040D0000, "int_uabd", "bhsd", {}),
    ("mul", 0x04100000, "int_mul", "bhsd", {}),
    ("smulh", 0x04120000, "int_smulh", "bhsd", {}),
    ("umulh", 0x04130000, "int_umulh", "bhsd", {}),
    ("sdiv", 0x04140000, "int_sdiv", "sd", {}),
    ("udiv", 0x04150000, "int_udiv", "sd", {}),
    ("sdivr", 0x04160000, "int_sdiv", "sd", {"reversed": True}),
    ("udivr", 0x04170000, "int_udiv", "sd", {"reversed": True}),
    ("orr", 0x04180000, "int_orr", "bhsd", {}),
    ("eor", 0x04190000, "int_eor", "bhsd", {}),
    ("and", 0x041A0000, "int_and", "bhsd", {}),
    ("bic", 0x041B0000, "int_bic", "bhsd", {}),
    ("asr", 0x04108000, "int_asr", "bhsd", {}),
    ("lsr", 0x04118000, "int_lsr", "bhsd", {}),
    ("lsl", 0x04138000, "int_lsl", "bhsd", {}),
    ("asrr", 0x04148000, "int_asr", "bhsd", {"reversed": True}),
    ("lsrr", 0x04158000, "int_lsr", "bhsd", {"reversed": True}),
    ("lslr", 0x04178000, "int_lsl", "bhsd", {"reversed": True}),
    ("asr", 0x04188000, "int_asr", "bhs", {"wide": True}),
    ("lsr", 0x04198000, "int_lsr", "bhs", {"wide": True}),
    ("lsl", 0x041B8000, "int_lsl", "bhs", {"wide": True}),
    # SVE2 (legal in streaming mode)
    ("srshl", 0x44028000, "int_srshl", "bhsd", {}),
    ("urshl", 0x44038000, "int_urshl", "bhsd", {}),
    ("srshlr", 0x44068000, "int_srshl", "bhsd", {"reversed": True}),
    ("urshlr", 0x44078000, "int_urshl", "bhsd", {"reversed": True}),
    ("sqshl", 0x44088000, "int_sqshl", "bhsd", {}),
    ("uqshl", 0x44098000, "int_uqshl", "bhsd", {}),
    ("sqrshl", 0x440A8000, "int_sqrshl", "bhsd", {}),
    ("uqrshl", 0x440B8000, "int_uqrshl", "bhsd", {}),
    ("sqshlr", 0x440C8000, "int_sqshl", "bhsd", {"reversed": True}),
    ("uqshlr", 0x440D8000, "int_uqshl", "bhsd", {"reversed": True}),
    ("sqrshlr", 0x440E8000, "int_sqrshl", "bhsd", {"reversed": True}),
    ("uqrshlr", 0x440F8000, "int_uqrshl", "bhsd", {"reversed": True}),
    ("shadd", 0x44108000, "int_shadd", "bhsd", {}),
    ("uhadd", 0x44118000, "int_uhadd", "bhsd", {}),
    ("shsub", 0x44128000, "int_shsub", "bhsd", {}),
    ("uhsub", 0x44138000, "int_uhsub", "bhsd", {}),
    ("srhadd", 0x44148000, "int_srhadd", "bhsd", {}),
    ("urhadd", 0x44158000, "int_urhadd", "bhsd", {}),
    ("shsubr", 0x44168000, "int_shsub", "bhsd", {"reversed": True}),
    ("uhsubr", 0x44178000, "int_uhsub", "bhsd", {"reversed": True}),
    ("sqadd", 0x44188000, "int_sqadd", "bhsd", {}),
    ("uqadd", 0x44198000, "int_uqadd", "bhsd", {}),
    ("sqsub", 0x441A8000, "int_sqsub", "bhsd", {}),
    ("uqsub", 0x441B8000, "int_uqsub", "bhsd", {}),
    ("suqadd", 0x441C8000, "int_suqadd", "bhsd", {}),
    ("usqadd", 0x441D8000, "int_usqadd", "bhsd", {}),
    ("sqsubr", 0x441E8000, "int_sqsub", "bhsd", {"reversed": True}),
    ("uqsubr", 0x441F8000, "int_uqsub", "bhsd", {"reversed": True}),
)

#: Predicated unary operations ``Zd, Pg/M, Zn``: mnemonic, fixed bits, operation, sizes.
_UNARY = (
    ("sxtb", 0x0410A000, "int_sxtb", "hsd"), ("uxtb", 0x0411A000, "int_uxtb", "hsd"),
    ("sxth", 0x0412A000, "int_sxth", "sd"), ("uxth", 0x0413A000, "int_uxth", "sd"),
    ("sxtw", 0x0414A000, "int_sxtw", "d"), ("uxtw", 0x0415A000, "int_uxtw", "d"),
    ("abs", 0x0416A000, "int_abs", "bhsd"), ("neg", 0x0417A000, "int_neg", "bhsd"),
    ("cls", 0x0418A000, "int_cls", "bhsd"), ("clz", 0x0419A000, "int_clz", "bhsd"),
    ("cnt", 0x041AA000, "int_cnt", "bhsd"), ("cnot", 0x041BA000, "int_cnot", "bhsd"),
    ("not", 0x041EA000, "int_not", "bhsd"),
    ("sqabs", 0x4408A000, "int_sqabs", "bhsd"), ("sqneg", 0x4409A000, "int_sqneg", "bhsd"),
)

#: Predicated multiply-add: mnemonic, fixed bits, operation, whether Zdn is the multiplicand
#: (MAD/MSB: ``Zdn, Pg/M, Zm, Za``) rather than the addend (MLA/MLS: ``Zda, Pg/M, Zn, Zm``).
_MULTIPLY_ADD = (
    ("mla", 0x04004000, "int_mla", False), ("mls", 0x04006000, "int_mls", False),
    ("mad", 0x0400C000, "int_mla", True), ("msb", 0x0400E000, "int_mls", True),
)

#: Shifts by immediate, predicated (``Zdn, Pg/M, Zdn, #shift``): mnemonic, fixed bits,
#: operation, right shift.
_SHIFT_IMMEDIATE_PREDICATED = (
    ("asr", 0x04008000, "int_asr", True), ("lsr", 0x04018000, "int_lsr", True),
    ("lsl", 0x04038000, "int_lsl", False), ("asrd", 0x04048000, "int_asrd", True),
    ("sqshl", 0x04068000, "int_sqshl", False), ("uqshl", 0x04078000, "int_uqshl", False),
    ("srshr", 0x040C8000, "int_srshr", True), ("urshr", 0x040D8000, "int_urshr", True),
    ("sqshlu", 0x040F8000, "int_sqshlu", False),
)


def _tsz_fields(letter: str, low: int, high_bit: int) -> tuple[int, list[Field]]:
    """Fixed bits and fields of a ``tsz:imm3`` shift immediate for elements ``letter``.

    ``tsz`` is bit ``high_bit`` + 1, bit ``high_bit`` and the two bits above ``low + 2``;
    ``imm3`` is bits ``low + 2 .. low``. The element size is the highest set bit of ``tsz``,
    and the bits below it form one number ``shift`` of log2(element bits) bits
    (``shift_hi`` holds its top bit for .D, whose bits are not contiguous).
    """
    log2 = _SIZES.index(letter)
    if log2 == 3:
        return 1 << (high_bit + 1), [Field("shift_hi", high_bit, high_bit),
                                     Field("shift", low + 4, low)]
    if log2 == 2:
        return 1 << high_bit, [Field("shift", low + 4, low)]
    return 1 << (low + 3 + log2), [Field("shift", low + 2 + log2, low)]


def _shift_kind(letter: str, right: bool) -> str:
    fields = "shift_hi+shift" if letter == "d" else "shift"
    return f"{{{fields}:{'shr' if right else 'shl'}{8 * ESIZE[letter]}}}"


def _define_predicated() -> None:
    for mnemonic, value, op, sizes, params in _PREDICATED:
        name = f"{mnemonic.upper()}_ZPZ{'W' if params.get('wide') else 'Z'}"
        for letter in sizes:
            second = _z("zm", "d" if params.get("wide") else letter)
            _add(name, mnemonic, value | _SIZES.index(letter) << 22, [_PG, _ZM_LOW, _ZDN],
                 f"{_z('zdn', letter)}, p{{pg:d}}/m, {_z('zdn', letter)}, {second}", op, letter,
                 **params)
    for mnemonic, value, op, sizes in _UNARY:
        for letter in sizes:
            _add(f"{mnemonic.upper()}_ZPZ", mnemonic, value | _SIZES.index(letter) << 22,
                 [_PG, _ZN, _ZD], f"{_z('zd', letter)}, p{{pg:d}}/m, {_z('zn', letter)}", op,
                 letter)
    for mnemonic, value, op, multiplicand in _MULTIPLY_ADD:
        for letter in _SIZES:
            if multiplicand:
                fields = [_ZM_HIGH, _PG, Field("za", 9, 5), _ZDN]
                syntax = f"{_z('zdn', letter)}, p{{pg:d}}/m, {_z('zm', letter)}, {_z('za', letter)}"
            else:
                fields = [_ZM_HIGH, _PG, _ZN, Field("zda", 4, 0)]
                syntax = f"{_z('zda', letter)}, p{{pg:d}}/m, {_z('zn', letter)}, {_z('zm', letter)}"
            _add(f"{mnemonic.upper()}_ZPZZZ", mnemonic, value | _SIZES.index(letter) << 22,
                 fields, syntax, op, letter)
    for mnemonic, value, op, right in _SHIFT_IMMEDIATE_PREDICATED:
        for letter in _SIZES:
            size_bits, fields = _tsz_fields(letter, 5, 22)
            _add(f"{mnemonic.upper()}_ZPZI", mnemonic, value | size_bits,
                 [_PG, *fields, _ZDN],
                 f"{_z('zdn', letter)}, p{{pg:d}}/m, {_z('zdn', letter)}, "
                 f"{_shift_kind(letter, right)}", op, letter, shift_right=right)


# ----------------------------------------------------------------------------- unpredicated
#: Unpredicated ``Zd, Zn, Zm``: mnemonic, fixed bits, operation, sizes, parameters.
_UNPREDICATED = (
    ("add", 0x04200000, "int_add", "bhsd", {}),
    ("sub", 0x04200400, "int_sub", "bhsd", {}),
    ("sqadd", 0x04201000, "int_sqadd", "bhsd", {}),
    ("uqadd", 0x04201400, "int_uqadd", "bhsd", {}),
    ("sqsub", 0x04201800, "int_sqsub", "bhsd", {}),
    ("uqsub", 0x04201C00, "int_uqsub", "bhsd", {}),
    ("asr", 0x04208000, "int_asr", "bhs", {"wide": True}),
    ("lsr", 0x04208400, "int_lsr", "bhs", {"wide": True}),
    ("lsl", 0x04208C00, "int_lsl", "bhs", {"wide": True}),
    # SVE2 (legal in streaming mode)
    ("mul", 0x04206000, "int_mul", "bhsd", {}),
    ("smulh", 0x04206800, "int_smulh", "bhsd", {}),
    ("umulh", 0x04206C00, "int_umulh", "bhsd", {}),
    ("sqdmulh", 0x04207000, "int_sqdmulh", "bhsd", {}),
    ("sqrdmulh", 0x04207400, "int_sqrdmulh", "bhsd", {}),
)

#: Bitwise operations on whole vectors (``.D`` only): mnemonic, fixed bits, operation.
_LOGICAL = (
    ("and", 0x04203000, "int_and"), ("orr", 0x04603000, "int_orr"),
    ("eor", 0x04A03000, "int_eor"), ("bic", 0x04E03000, "int_bic"),
)

#: Shifts by immediate, unpredicated (``Zd, Zn, #shift``).
_SHIFT_IMMEDIATE = (
    ("asr", 0x04209000, "int_asr", True), ("lsr", 0x04209400, "int_lsr", True),
    ("lsl", 0x04209C00, "int_lsl", False),
)

#: Immediate operand ``Zdn, Zdn, #imm``: mnemonic, fixed bits, operation, immediate kind
#: (``shifted``: unsigned ``#imm8{, lsl #8}``; ``unsigned``/``signed``: 8 bits), parameters.
_IMMEDIATE = (
    ("add", 0x2520C000, "int_add", "shifted", {}),
    ("sub", 0x2521C000, "int_sub", "shifted", {}),
    ("subr", 0x2523C000, "int_sub", "shifted", {"reversed": True}),
    ("sqadd", 0x2524C000, "int_sqadd", "shifted", {}),
    ("uqadd", 0x2525C000, "int_uqadd", "shifted", {}),
    ("sqsub", 0x2526C000, "int_sqsub", "shifted", {}),
    ("uqsub", 0x2527C000, "int_uqsub", "shifted", {}),
    ("smax", 0x2528C000, "int_smax", "signed", {}),
    ("umax", 0x2529C000, "int_umax", "unsigned", {}),
    ("smin", 0x252AC000, "int_smin", "signed", {}),
    ("umin", 0x252BC000, "int_umin", "unsigned", {}),
    ("mul", 0x2530C000, "int_mul", "signed", {}),
)

#: Bitwise operations with a logical (bitmask) immediate: mnemonic, fixed bits, operation, and
#: the mnemonic the assembler also accepts with the inverted immediate.
_LOGICAL_IMMEDIATE = (
    ("orr", 0x05000000, "int_orr", "orn"), ("eor", 0x05400000, "int_eor", "eon"),
    ("and", 0x05800000, "int_and", "bic"),
)

#: SVE2 saturating extract narrow ``Zd.T, Zn.Tb``: mnemonic, fixed bits, operation, top.
_NARROW = (
    ("sqxtnb", 0x45204000, "int_sqxtn", False), ("sqxtnt", 0x45204400, "int_sqxtn", True),
    ("uqxtnb", 0x45204800, "int_uqxtn", False), ("uqxtnt", 0x45204C00, "int_uqxtn", True),
    ("sqxtunb", 0x45205000, "int_sqxtun", False), ("sqxtunt", 0x45205400, "int_sqxtun", True),
)


#: SVE2 shift right narrow ``Zd.T, Zn.Tb, #shift``: mnemonic, fixed bits, operation, top.
_SHIFT_NARROW = tuple(
    (f"{mnemonic}{half}", value | (0x400 if half == "t" else 0), op, half == "t")
    for mnemonic, value, op in (
        ("sqshrun", 0x45200000, "int_sqshrun"), ("sqrshrun", 0x45200800, "int_sqrshrun"),
        ("shrn", 0x45201000, "int_shrn"), ("rshrn", 0x45201800, "int_rshrn"),
        ("sqshrn", 0x45202000, "int_sqshrn"), ("sqrshrn", 0x45202800, "int_sqrshrn"),
        ("uqshrn", 0x45203000, "int_uqshrn"), ("uqrshrn", 0x45203800, "int_uqrshrn"))
    for half in "bt")

#: SVE2 widening ``Zd.T, Zn.Tb, Zm.Tb`` (``Zn.T`` for the wide forms): mnemonic, fixed bits,
#: operation, top (odd narrow elements) or bottom (even), wide first operand.
_WIDENING = tuple(
    (f"{mnemonic}{half}", value | (0x400 if half == "t" else 0), op, half == "t", wide)
    for mnemonic, value, op, wide in (
        ("saddl", 0x45000000, "int_saddl", False), ("uaddl", 0x45000800, "int_uaddl", False),
        ("ssubl", 0x45001000, "int_ssubl", False), ("usubl", 0x45001800, "int_usubl", False),
        ("sabdl", 0x45003000, "int_sabdl", False), ("uabdl", 0x45003800, "int_uabdl", False),
        ("saddw", 0x45004000, "int_saddw", True), ("uaddw", 0x45004800, "int_uaddw", True),
        ("ssubw", 0x45005000, "int_ssubw", True), ("usubw", 0x45005800, "int_usubw", True),
        ("sqdmull", 0x45006000, "int_sqdmull", False), ("smull", 0x45007000, "int_smull", False),
        ("umull", 0x45007800, "int_umull", False))
    for half in "bt")


def _define_unpredicated() -> None:
    for mnemonic, value, op, sizes, params in _UNPREDICATED:
        name = f"{mnemonic.upper()}_ZZ{'W' if params.get('wide') else 'Z'}"
        for letter in sizes:
            second = _z("zm", "d" if params.get("wide") else letter)
            _add(name, mnemonic, value | _SIZES.index(letter) << 22, [_ZM_HIGH, _ZN, _ZD],
                 f"{_z('zd', letter)}, {_z('zn', letter)}, {second}", op, letter, **params)
    for mnemonic, value, op in _LOGICAL:
        preferred = (Alias("mov", "z{zd:d}.d, z{zn:d}.d", {"zm": "zn"}),) \
            if mnemonic == "orr" else ()
        _add(f"{mnemonic.upper()}_ZZZ", mnemonic, value, [_ZM_HIGH, _ZN, _ZD],
             f"{_z('zd', 'd')}, {_z('zn', 'd')}, {_z('zm', 'd')}", op, "", preferred=preferred)
    for mnemonic, value, op, right in _SHIFT_IMMEDIATE:
        for letter in _SIZES:
            size_bits, fields = _tsz_fields(letter, 16, 22)
            _add(f"{mnemonic.upper()}_ZZI", mnemonic, value | size_bits, [*fields, _ZN, _ZD],
                 f"{_z('zd', letter)}, {_z('zn', letter)}, {_shift_kind(letter, right)}", op,
                 letter, shift_right=right)
    imm8_signed, imm8, sh = Field("imm8", 12, 5, signed=True), Field("imm8", 12, 5), \
        Field("sh", 13, 13)
    for mnemonic, value, op, kind, params in _IMMEDIATE:
        for letter in _SIZES:
            if kind == "shifted" and letter != "b":
                fields, immediate = [sh, imm8, _ZDN], "{imm8+sh:aimm}"
            else:
                fields = [imm8_signed if kind == "signed" else imm8, _ZDN]
                immediate = f"#{{imm8:{'s' if kind == 'signed' else 'd'}}}"
            _add(f"{mnemonic.upper()}_ZZI", mnemonic, value | _SIZES.index(letter) << 22, fields,
                 f"{_z('zdn', letter)}, {_z('zdn', letter)}, {immediate}", op, letter, **params)
    immr, imms = Field("immr", 16, 11), Field("imms", 10, 5)
    for n in (0, 1):
        # N=1 makes 64-bit elements, N=0 the smaller ones; which imms are reserved depends on N.
        reserved = tuple(("imms", value) for value in range(64)
                         if decode_bit_masks(n << 12 | value) is None)
        suffix = "_D" if n else "_BHS"
        for mnemonic, value, op, inverted in _LOGICAL_IMMEDIATE:
            forms.add(f"{mnemonic.upper()}_ZZI{suffix}", mnemonic, value | n << 17,
                      [immr, imms, _ZDN], f"z{{zdn:d}}{{zdn+immr+imms:logimm{n}}}", op,
                      Requires.STREAMING, esize=8, unallocated=reserved, mask64=bool(n),
                      preferred=(Alias(inverted, f"z{{zdn:d}}{{zdn+immr+imms:logimmnot{n}}}",
                                       printed=False),))
        forms.add(f"DUPM{suffix}", "dupm", 0x05C00000 | n << 17, [immr, imms, _ZD],
                  f"z{{zd:d}}{{immr+imms:bitmask{n}}}", "int_dupm", Requires.STREAMING, esize=8,
                  unallocated=reserved, mask64=bool(n),
                  preferred=(Alias("mov", f"z{{zd:d}}{{immr+imms:bitmask{n}}}",
                                   when=lambda fields, n=n: sve_move_mask_preferred(
                                       _imm13(n, fields))),))
    for mnemonic, value, op, top, wide in _WIDENING:
        for log2, letter in enumerate("hsd", start=1):
            narrow = _SIZES[log2 - 1]
            _add(mnemonic.upper(), mnemonic, value | log2 << 22, [_ZM_HIGH, _ZN, _ZD],
                 f"{_z('zd', letter)}, {_z('zn', letter if wide else narrow)}, "
                 f"{_z('zm', narrow)}", op, letter, top=top)
    for mnemonic, value, op, top in _SHIFT_NARROW:
        for log2, letter in enumerate("bhs"):
            size_bits, fields = _tsz_fields(letter, 16, 22)
            _add(mnemonic.upper(), mnemonic, value | size_bits, [*fields, _ZN, _ZD],
                 f"{_z('zd', letter)}, {_z('zn', _SIZES[log2 + 1])}, "
                 f"{_shift_kind(letter, right=True)}", op, letter, top=top, shift_right=True)
    for mnemonic, value, op, top in _NARROW:
        for log2, letter in enumerate("bhs"):
            # the tsz of the shifts right narrow, with a zero shift (docs/isa.md, "Shift
            # immediates")
            size_bits, _ = _tsz_fields(letter, 16, 22)
            _add(mnemonic.upper(), mnemonic, value | size_bits, [_ZN, _ZD],
                 f"{_z('zd', letter)}, {_z('zn', _SIZES[log2 + 1])}", op, letter, top=top)


def shift_amount(decoded: Decoded) -> int:
    """The shift of a ``tsz:imm3`` immediate (``#1``..``#esize`` right, ``#0``.. left)."""
    bits = 8 * decoded.form.params["esize"]
    low = decoded["shift"] | decoded.fields.get("shift_hi", 0) << 5
    return bits - low if decoded.form.params["shift_right"] else low


def immediate_operand(decoded: Decoded) -> int:
    """The immediate operand of a form, as the operation uses it.

    An 8-bit immediate (signed or unsigned as the field is, shifted by ``sh``), a shift amount,
    or a logical immediate replicated to 64 bits.
    """
    fields = decoded.fields
    if "imm8" in fields:
        return shifted_imm8(fields["imm8"], fields.get("sh", 0))
    if "shift" in fields:
        return shift_amount(decoded)
    bits, element = decode_bit_masks(_imm13(int(decoded.form.params["mask64"]), fields))
    return replicate(element, bits)


def _imm13(n: int, fields) -> int:
    """``N:immr:imms`` of a logical immediate form whose N bit is ``n``."""
    return n << 12 | fields["immr"] << 6 | fields["imms"]


_define_predicated()
_define_unpredicated()
FORMS = tuple(forms.forms)
