#!/usr/bin/env python3
"""The instruction table by class, as the README lists it: each class (one table module), its
form count, and its mnemonics with the element sizes their forms take.

Usage: ``python scripts/isa_forms.py`` prints the Markdown table; ``tests/test_readme.py`` keeps
the README's copy equal to it.
"""

from __future__ import annotations

import sys

from zatile.sw.arch.isa.table import CLASSES

_SIZE_LETTERS = {1: "b", 2: "h", 4: "s", 8: "d", 16: "q"}


def markdown() -> str:
    """The README table of implemented forms."""
    lines = ["| class | forms | mnemonics (element sizes) |", "|---|---|---|"]
    for title, forms in CLASSES.items():
        sizes: dict[str, set[int]] = {}
        for form in forms:
            for mnemonic in (form.mnemonic, *(alias.mnemonic for alias in form.preferred)):
                sizes.setdefault(mnemonic, set())
            if "esize" in form.params:
                sizes[form.mnemonic].add(form.params["esize"])
        names = ", ".join(
            f"{name} ({''.join(_SIZE_LETTERS[size] for size in sorted(found))})" if found else name
            for name, found in sorted(sizes.items()))
        lines.append(f"| {title} | {len(forms)} | {names} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
    sys.exit(0)
