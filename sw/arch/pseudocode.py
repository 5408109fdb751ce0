"""Shared pseudocode functions of the Arm ARM that both the reference model and the RTL generator
evaluate (docs/isa.md names each).
"""

from __future__ import annotations

__all__ = ["predicate_count"]


def predicate_count(pattern: int, elements: int) -> int:
    """``DecodePredCount``: how many elements a PTRUE/CNTx pattern selects out of ``elements``."""
    if pattern == 0:                                    # POW2
        return 1 << (elements.bit_length() - 1)
    if 1 <= pattern <= 8:                               # VL1-VL8
        return pattern if pattern <= elements else 0
    if 9 <= pattern <= 13:                              # VL16-VL256
        count = 16 << (pattern - 9)
        return count if count <= elements else 0
    if pattern == 29:                                   # MUL4
        return elements - elements % 4
    if pattern == 30:                                   # MUL3
        return elements - elements % 3
    if pattern == 31:                                   # ALL
        return elements
    return 0                                            # unallocated #uimm5
