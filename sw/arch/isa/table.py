"""The one instruction table: every form of :mod:`.sme`, :mod:`.sve`, :mod:`.sve_int` and
:mod:`.sve_pred`, :mod:`.sve_fp`, :mod:`.sve_perm`, :mod:`.sve_mem`, and the decoder.

The assembler and disassembler (:mod:`zatile.sw.arch.asm`), the reference model's dispatch
(:mod:`zatile.sim.model`), the RTL decoder (:mod:`zatile.hw.decoder`) and every operation class
used anywhere (:func:`ops_with`) are derived from :data:`FORMS`; nothing else decodes an
instruction.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from zatile.sw.arch.isa import sme, sve, sve_fp, sve_int, sve_mem, sve_perm, sve_pred
from zatile.sw.arch.isa.forms import Decoded, Form, Trait

__all__ = ["CLASSES", "FORMS", "FORMS_BY_NAME", "OPS", "decode", "ops_with"]

#: The forms by class: one entry per table module, under its ``TITLE``.
CLASSES: Mapping[str, tuple[Form, ...]] = MappingProxyType(
    {module.TITLE: module.FORMS
     for module in (sme, sve, sve_int, sve_pred, sve_fp, sve_perm, sve_mem)})
#: Every supported form, in table order.
FORMS: tuple[Form, ...] = tuple(form for forms in CLASSES.values() for form in forms)
FORMS_BY_NAME: Mapping[str, Form] = MappingProxyType({f.name: f for f in FORMS})
#: Every semantic operation named by the table (the model implements exactly these).
OPS: tuple[str, ...] = tuple(dict.fromkeys(f.op for f in FORMS))

if len(FORMS_BY_NAME) != len(FORMS):
    raise RuntimeError("two forms of the instruction table share a name")

_BY_TOP_BYTE: dict[int, tuple[Form, ...]] = {
    top: tuple(f for f in FORMS if (top << 24) & f.mask & 0xFF000000 == f.value & 0xFF000000)
    for top in range(256)
}


def decode(word: int) -> Decoded | None:
    """Decode a 32-bit word; None when it is outside the supported subset (UNDEF).

    Raises
    ------
    ValueError
        If ``word`` is not a 32-bit unsigned value.
    """
    if not 0 <= word <= 0xFFFFFFFF:
        raise ValueError(f"instruction word must be a 32-bit unsigned value, not {word!r}")
    for form in _BY_TOP_BYTE[word >> 24]:
        if word & form.mask == form.value:
            if not form.matches(word):
                return None
            return Decoded(word, form, MappingProxyType(form.fields_of(word)))
    return None


def ops_with(*traits: Trait) -> tuple[str, ...]:
    """The operations (table order) that have any of ``traits``."""
    wanted = set(traits)
    return tuple(op for op in OPS
                 if any(wanted & f.traits for f in FORMS if f.op == op))
