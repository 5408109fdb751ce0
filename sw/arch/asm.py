"""Assembler and disassembler for the zatile subset, derived entirely from :mod:`zatile.sw.arch.isa`.

Text follows binutils 2.40: the assembler accepts what ``aarch64-linux-gnu-as
-march=armv9-a+sme+sme-f64+sme-i64`` accepts for the subset (including the ``mova``/``dup``
spellings and ``msr svcrsm, #1``), and the disassembler prints exactly what
``aarch64-linux-gnu-objdump -d`` prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from zatile.sw.arch.isa import FORMS, Alias, AsmError, Form, decode, form_text, parse_operands
from zatile.sw.arch.isa.syntax import literal_regex

__all__ = [
    "AsmError",
    "Instruction",
    "assemble_line",
    "statements",
    "assemble",
    "parse_program",
    "disassemble",
    "objdump_lines",
]

#: GNU as for AArch64: ``//`` starts a comment anywhere, ``#`` only as a line's first non-blank
#: character, and ``;`` separates statements on one line (``@`` is not a comment).
_COMMENT = re.compile(r"//.*$")
_SEPARATOR = ";"
_LINE_COMMENT = "#"


def _forms_by_mnemonic() -> dict[str, list[tuple[Form, Alias | None]]]:
    """Every (form, alias spelling or None) a mnemonic may name."""
    table: dict[str, list[tuple[Form, Alias | None]]] = {}
    for form in FORMS:
        for mnemonic in (form.mnemonic, *form.aliases):
            table.setdefault(mnemonic, []).append((form, None))
        for alias in form.preferred:
            table.setdefault(alias.mnemonic, []).append((form, alias))
    return table


_BY_MNEMONIC = _forms_by_mnemonic()
_ALT_SPELLINGS: list[tuple[re.Pattern, Form]] = [
    (re.compile(literal_regex(text) + r"\s*$"), form)
    for form in FORMS for text in form.alt_syntax
]


@dataclass(frozen=True)
class Instruction:
    """One assembled source line."""

    line: int
    text: str
    word: int


def assemble_line(text: str) -> int:
    """Assemble one instruction.

    Raises
    ------
    AsmError
        If the text is not an instruction of the subset, or names an unallocated encoding.
    """
    source = _COMMENT.sub("", text).strip().lower()
    if not source:
        raise AsmError("empty line")
    if _SEPARATOR in source:
        raise AsmError(f"one instruction expected, not several separated by '{_SEPARATOR}'")
    for pattern, form in _ALT_SPELLINGS:
        if pattern.match(source):
            return form.value
    mnemonic, *rest = source.split(None, 1)
    operands = rest[0].strip() if rest else ""
    candidates = _BY_MNEMONIC.get(mnemonic)
    if candidates is None:
        if mnemonic.startswith("."):
            raise AsmError(f"directive '{mnemonic}' is not supported: a program is "
                           "instructions of the subset only")
        if mnemonic.endswith(":") or operands.startswith(":"):
            raise AsmError("labels are not supported: a program is straight-line "
                           "instructions of the subset only")
        raise AsmError(f"unknown mnemonic '{mnemonic}'")
    problems = []
    for form, alias in candidates:
        try:
            values = parse_operands(form, operands, alias)
        except AsmError as problem:
            problems.append(str(problem))
            continue
        if values is None:
            continue
        if alias is not None and not alias.accepts(values):
            problems.append(f"'{mnemonic}' does not spell this instruction")
            continue
        try:
            word = form.encode(**values)
        except ValueError as problem:
            problems.append(str(problem))
            continue
        if decode(word) is None:
            problems.append("unallocated encoding")
            continue
        return word
    detail = f": {problems[0]}" if problems else ""
    raise AsmError(f"invalid operands for '{mnemonic}'{detail}")


def statements(source: str) -> list[tuple[int, str]]:
    """(1-based line number, text) of every statement of ``source``, as GNU as splits them.

    Comments and blank statements are dropped; everything else is kept for the caller to
    assemble or reject, so nothing is skipped silently.
    """
    found = []
    for number, line in enumerate(source.splitlines(), start=1):
        line = _COMMENT.sub("", line)
        if line.lstrip().startswith(_LINE_COMMENT):
            continue
        found.extend((number, text.strip()) for text in line.split(_SEPARATOR) if text.strip())
    return found


def parse_program(source: str) -> list[Instruction]:
    """Assemble a straight-line program: one instruction per statement (:func:`statements`).

    Raises
    ------
    AsmError
        Naming the 1-based line number of the first bad statement.
    """
    program = []
    for number, text in statements(source):
        try:
            program.append(Instruction(number, text, assemble_line(text)))
        except AsmError as problem:
            raise AsmError(f"line {number}: {problem}: '{text}'") from None
    return program


def assemble(source: str) -> list[int]:
    """The instruction words of a program."""
    return [instruction.word for instruction in parse_program(source)]


def disassemble(word: int) -> str:
    """objdump text (mnemonic, tab, operands) or ``.inst 0x… ; unsupported``.

    Never raises for any 32-bit word.
    """
    decoded = decode(word & 0xFFFFFFFF)
    if decoded is None:
        return f".inst\t0x{word & 0xFFFFFFFF:08x} ; unsupported"
    return form_text(decoded)


def objdump_lines(words: list[int]) -> list[str]:
    """Listing lines in objdump's ``   addr:\\tword \\ttext`` layout."""
    return [f"{4 * index:4x}:\t{word:08x} \t{disassemble(word)}"
            for index, word in enumerate(words)]
