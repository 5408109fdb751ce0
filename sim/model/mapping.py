"""How the architectural arrays map onto numpy views: ZA tiles and slices, predicates, element runs.

The ZA mapping (docs/isa.md, "Tile mapping") is in :func:`tile_elements` and
:func:`active_elements`, so that :mod:`zatile.sim.divergences` describes QEMU's behaviour in the
same terms as the model.
"""

from __future__ import annotations

import numpy as np

__all__ = ["UNSIGNED", "SIGNED", "SIGN_BIT", "tile_elements", "tile_typed", "active_elements",
           "predicate_with_first", "runs"]

#: Little-endian unsigned element types by size in bytes (ZA and Z bytes are little-endian).
UNSIGNED = {1: np.dtype("<u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8")}
#: Little-endian signed element types by size in bytes.
SIGNED = {1: np.dtype("<i1"), 2: np.dtype("<i2"), 4: np.dtype("<i4"), 8: np.dtype("<i8")}
#: The sign bit of a floating-point element by size in bytes.
SIGN_BIT = {2: np.uint16(0x8000), 4: np.uint32(0x8000_0000), 8: np.uint64(1 << 63)}


def tile_elements(za: np.ndarray, esize: int, tile: int) -> np.ndarray:
    """Tile ``ZA<tile>`` of ``esize``-byte elements as a writable uint8[dim, dim, esize] view.

    Element (r, c) is bytes [c·esize, (c+1)·esize) of the array vector ZA[tile + r·esize]
    (docs/isa.md, "Tile mapping"): ``view[i]`` is horizontal slice i, ``view[:, j]`` vertical slice j.
    """
    svl_bytes = za.shape[0]
    dim = svl_bytes // esize
    view = za.reshape(dim, esize, svl_bytes)[:, tile, :].reshape(dim, dim, esize)
    return view


def tile_typed(za: np.ndarray, esize: int, tile: int) -> np.ndarray:
    """Tile ``ZA<tile>`` as a writable [dim, dim] view of little-endian unsigned elements."""
    svl_bytes = za.shape[0]
    dim = svl_bytes // esize
    return za.reshape(dim, esize, svl_bytes)[:, tile, :].view(UNSIGNED[esize])


def active_elements(predicate: np.ndarray, esize: int) -> np.ndarray:
    """bool[SVL_B / esize]: ``ActivePredicateElement`` of every element of ``esize`` bytes.

    ``predicate`` is the uint8[SVL_B/8] register; element e tests predicate bit e·esize.
    """
    return np.unpackbits(predicate, bitorder="little").view(np.bool_)[::esize]


def predicate_with_first(count: int, esize: int, svl_bytes: int) -> np.ndarray:
    """A P register value whose first ``count`` elements of ``esize`` bytes are active."""
    bits = np.zeros(svl_bytes, np.uint8)
    bits[0:count * esize:esize] = 1
    return np.packbits(bits, bitorder="little")


def runs(indices: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) of each run of consecutive values in sorted ``indices``."""
    first, last = int(indices[0]), int(indices[-1])
    if last - first + 1 == indices.size:
        return [(first, last)]
    breaks = np.flatnonzero(np.diff(indices) != 1)
    starts = np.concatenate(([indices[0]], indices[breaks + 1]))
    ends = np.concatenate((indices[breaks], [indices[-1]]))
    return list(zip(starts.tolist(), ends.tolist()))
