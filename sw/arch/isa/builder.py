"""How the table modules declare forms: one :class:`FormList` per module, one ``add`` per form.

A form's mask is the complement of its fields (fields and fixed bits partition the word); its
traits come from the module's per-operation trait map, so an operation's class is written once.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from zatile.sw.arch.isa.forms import Alias, Field, Form, Requires, Trait

__all__ = ["ESIZE", "FormList", "mask_of"]

#: Element size in bytes by size letter.
ESIZE = {"b": 1, "h": 2, "s": 4, "d": 8, "q": 16}


def mask_of(fields: Iterable[Field]) -> int:
    """The fixed-bit mask of a form with these variable fields."""
    covered = 0
    for f in fields:
        covered |= f.mask
    return 0xFFFFFFFF & ~covered


class FormList:
    """The forms one table module declares, in declaration order.

    Parameters
    ----------
    traits : mapping of str to iterable of Trait
        The traits of each operation the module uses; an operation missing here has none.
    """

    def __init__(self, traits: Mapping[str, Iterable[Trait]]):
        self._traits = {op: frozenset(values) for op, values in traits.items()}
        self.forms: list[Form] = []

    def add(self, name: str, mnemonic: str, value: int, fields: Iterable[Field], syntax: str,
            op: str, requires: Requires, feature: str | None = None, *,
            destination: str | None = None, unallocated: Iterable[tuple[str, int]] = (),
            aliases: tuple[str, ...] = (), alt_syntax: tuple[str, ...] = (),
            preferred: Iterable[Alias] = (), **params) -> Form:
        """Declare one form (arguments as :class:`~zatile.sw.arch.isa.forms.Form`)."""
        fields = tuple(fields)
        form = Form(name, mnemonic, value, mask_of(fields), fields, syntax, op, requires,
                    feature, params, aliases, alt_syntax, destination,
                    self._traits.get(op, frozenset()), tuple(unallocated), tuple(preferred))
        self.forms.append(form)
        return form
