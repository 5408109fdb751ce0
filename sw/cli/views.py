"""What ``zatile run`` shows of a final state: typed tile views (``--show``), registers
(``--regs``), and the general registers the program wrote.
"""

from __future__ import annotations

import argparse
import re

import ml_dtypes
import numpy as np

from zatile.sw.arch.asm import parse_program
from zatile.sw.arch.isa import destination_of

__all__ = ["VIEWS", "REGISTER_GROUPS", "TileView", "tile_view", "register_list",
           "register_values", "written_registers"]

#: Element types ``--show`` can view a tile as; ``hex`` shows each tile element's bytes.
VIEWS = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16, "i32": np.int32,
         "u32": np.uint32, "i64": np.int64, "u64": np.uint64, "f16": np.float16,
         "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64, "hex": None}
#: ``--regs`` groups: general registers and SP, Z, P and FFR.
REGISTER_GROUPS = ("x", "z", "p", "ffr")

_ELEMENT_BYTES = {"b": 1, "h": 2, "s": 4, "d": 8, "q": 16}
_TILE = re.compile(r"za(\d+)\.([bhsdq])(?::(\w+))?$")
#: Every name ``--regs`` takes: the groups, then single registers.
_REGISTERS = {"x": [f"x{n}" for n in range(31)] + ["sp"], "z": [f"z{n}" for n in range(32)],
              "p": [f"p{n}" for n in range(16)], "ffr": ["ffr"]}
_REGISTER_NAMES = {*_REGISTERS, *(name for group in _REGISTERS.values() for name in group)}


class TileView(str):
    """A ``--show`` argument: ``za<tile>.<b|h|s|d|q>[:<view>]``, checked when parsed."""

    def __new__(cls, text: str):
        match = _TILE.match(text.strip().lower())
        if not match:
            raise argparse.ArgumentTypeError(
                f"expected a tile like za1.s or za1.s:f32, not '{text}'")
        tile, letter, view = int(match.group(1)), match.group(2), match.group(3)
        esize = _ELEMENT_BYTES[letter]
        if tile >= esize:
            raise argparse.ArgumentTypeError(
                f"there is no tile za{tile}.{letter}: .{letter} tiles are za0-za{esize - 1}")
        if view is not None and view not in VIEWS:
            raise argparse.ArgumentTypeError(
                f"unknown view '{view}' in '{text}'; choose from {', '.join(VIEWS)}")
        spec = super().__new__(cls, text.strip().lower())
        spec.tile, spec.element_bytes = tile, esize
        spec.view = view or ("hex" if esize == 16 else f"i{8 * esize}")
        return spec


def tile_view(state, spec: TileView) -> tuple[str, list[list]]:
    """The title and rows of tile ``spec`` of ``state`` in its view.

    Each row is tile slice *i* (ZA row ``i * element_bytes + tile``) read as the view's type:
    as many columns as the slice holds values of that type; ``hex`` gives one string per tile
    element, most significant byte first. Floating-point values are Python floats.
    """
    dim = state.svl_bytes // spec.element_bytes
    rows = state.za[spec.tile::spec.element_bytes][:dim]
    if spec.view == "hex":
        size = spec.element_bytes
        values = [[row[c * size:(c + 1) * size][::-1].tobytes().hex()
                   for c in range(row.size // size)] for row in rows]
    else:
        typed = rows.copy().view(VIEWS[spec.view])
        convert = float if typed.dtype.kind == "f" or spec.view == "bf16" else int
        values = [[convert(v) for v in row] for row in typed]
    return f"{spec} ({dim}x{len(values[0])}, {spec.view} view)", values


def format_tile(title: str, values: list[list]) -> str:
    """A tile view as aligned text, one line per slice."""
    cells = [[v if isinstance(v, str) else f"{v:g}" if isinstance(v, float) else str(v)
              for v in row] for row in values]
    width = max(len(cell) for row in cells for cell in row)
    return title + ":\n" + "\n".join(" ".join(f"{cell:>{width}}" for cell in row)
                                     for row in cells)


def register_list(text: str) -> list[str]:
    """A ``--regs`` argument: groups (``x,z,p,ffr``) and single registers (``x3,z1,p0,sp``)."""
    names = [part.strip().lower() for part in text.split(",") if part.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected registers like x,z,p or x3,z1, not '{text}'")
    for name in names:
        if name not in _REGISTER_NAMES:
            raise argparse.ArgumentTypeError(
                f"unknown register '{name}'; name groups ({', '.join(REGISTER_GROUPS)}) or "
                f"registers x0-x30, sp, z0-z31, p0-p15")
    return names


def register_values(state, names: list[str]) -> dict[str, int | str]:
    """The named registers of ``state``: X and SP as integers, Z/P/FFR as hex of their bytes
    in lane order (byte 0 first)."""
    expanded = [single for name in names for single in _REGISTERS.get(name, [name])]
    values = {}
    for name in dict.fromkeys(expanded):
        if name == "sp":
            values[name] = int(state.sp)
        elif name == "ffr":
            values[name] = state.ffr.tobytes().hex()
        else:
            number = int(name[1:])
            values[name] = int(state.x[number]) if name[0] == "x" else \
                getattr(state, name[0])[number].tobytes().hex()
    return values


def written_registers(source: str, outcome) -> dict[str, int]:
    """The general registers (and SP) that instructions of ``source`` completing OK in
    ``outcome`` (a RunOutcome) wrote a scalar result to, with their final values, in program
    order."""
    written, state = {}, outcome.final
    for instruction, result in zip(parse_program(source), outcome.outcomes):
        register = destination_of(instruction.word)
        if register is None or register.is_zero or result.status != "ok":
            continue
        if register.is_sp:
            written["sp"] = int(state.sp)
        else:
            written[f"x{register.number}"] = int(state.x[register.number])
    return written
