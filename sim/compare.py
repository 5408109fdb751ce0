"""Naming the first architectural difference between two states, and describing outcomes."""

from __future__ import annotations

import numpy as np

from zatile.sim.run import InstructionOutcome
from zatile.sim.state import ArchState

__all__ = ["first_difference", "za_location", "describe_outcome"]


def first_difference(left: ArchState, right: ArchState, *, compare_za: bool = True) -> str | None:
    """Name the first architectural byte on which two states differ, or None if they agree."""
    for name in ("svl", "svcr", "fpcr", "fpsr", "nzcv", "sp"):
        if getattr(left, name) != getattr(right, name):
            return f"{name}: 0x{getattr(left, name):x} != 0x{getattr(right, name):x}"
    for register in range(31):
        if left.x[register] != right.x[register]:
            return f"x{register}: 0x{int(left.x[register]):x} != 0x{int(right.x[register]):x}"
    arrays = [("z", left.z, right.z), ("p", left.p, right.p)]
    if compare_za:
        arrays.append(("za", left.za, right.za))
    for name, mine, theirs in arrays:
        differing = np.argwhere(mine != theirs)
        if differing.size:
            row, byte = (int(v) for v in differing[0])
            label = za_location(row, byte) if name == "za" else f"{name}{row} byte {byte}"
            return (f"{label}: 0x{int(mine[row, byte]):02x} != "
                    f"0x{int(theirs[row, byte]):02x}")
    differing = np.flatnonzero(left.ffr != right.ffr)
    if differing.size:
        byte = int(differing[0])
        return f"ffr byte {byte}: 0x{int(left.ffr[byte]):02x} != 0x{int(right.ffr[byte]):02x}"
    mine, theirs = left.memory.regions, right.memory.regions
    if mine.keys() != theirs.keys():
        return f"memory regions differ: {sorted(mine)} != {sorted(theirs)}"
    for base, data in mine.items():
        differing = np.flatnonzero(data != theirs[base])
        if differing.size:
            offset = int(differing[0])
            return (f"memory 0x{base + offset:x}: 0x{int(data[offset]):02x} != "
                    f"0x{int(theirs[base][offset]):02x}")
    return None


def za_location(row: int, byte: int) -> str:
    """A ZA byte in tile terms, through the 32-bit tiles: ZA row ``4 * slice + tile`` is
    horizontal slice ``slice`` of ``za<tile>h.s`` and its bytes ``4e..4e+3`` are element ``e``."""
    return (f"za{row % 4}h.s slice {row // 4} element {byte // 4} "
            f"(za row {row} byte {byte})")


def describe_outcome(outcome: InstructionOutcome) -> str:
    """An instruction's outcome in words, e.g. ``fault at 0x410700`` or ``sme_trap (SMTC 3)``."""
    if outcome.status == "sme_trap":
        return f"sme_trap (SMTC {outcome.smtc})"
    if outcome.status == "fault":
        return f"fault at 0x{outcome.fault_address:x}"
    return outcome.status
