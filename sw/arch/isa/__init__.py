"""The instruction table and everything about one instruction word.

* :mod:`.forms` — the data model: :class:`Field`, :class:`Form`, :class:`Decoded`,
  :class:`Requires` (the PSTATE a form needs), :class:`Trait` (operation classes);
* :mod:`.syntax` — the operand templates, printed and parsed as binutils 2.40 spells them;
* :mod:`.sme`, :mod:`.sve`, :mod:`.sve_int`, :mod:`.sve_pred`, :mod:`.sve_fp`, :mod:`.sve_perm`,
  :mod:`.sve_mem` — the forms themselves, declared once;
  :mod:`.table` — all of them, :func:`decode` and :func:`ops_with`;
* :mod:`.operands` — the general registers an instruction reads and writes, and the CPU's side
  of issuing it.
"""

from zatile.sw.arch.isa.forms import (
    Alias, Decoded, Field, Form, Requires, Trait, shifted_imm8, signed_offset9,
)
from zatile.sw.arch.isa.operands import (
    GeneralRegisters, ScalarRegister, destination_of, operand_values, read_operands,
    scalar_destination, scalar_sources, sources_of, write_result,
)
from zatile.sw.arch.isa.syntax import (
    PATTERN_ALL, PATTERN_NAMES, ZA_MASK_NAMES, AsmError, form_text, parse_operands,
)
from zatile.sw.arch.isa.table import FORMS, FORMS_BY_NAME, OPS, decode, ops_with

__all__ = [
    "Alias", "Field", "Form", "Decoded", "Requires", "Trait", "signed_offset9", "shifted_imm8",
    "FORMS", "FORMS_BY_NAME", "OPS", "decode", "ops_with",
    "AsmError", "PATTERN_ALL", "PATTERN_NAMES", "ZA_MASK_NAMES", "form_text", "parse_operands",
    "ScalarRegister", "GeneralRegisters", "scalar_sources", "scalar_destination", "sources_of",
    "destination_of", "operand_values", "read_operands", "write_result",
]
