"""Architectural state of an SME engine, its sparse memory, and the ``.npz`` snapshot format.

A snapshot holds the arrays ``svl`` (bits), ``svcr``, ``za`` uint8[SVL_B, SVL_B], ``z``
uint8[32, SVL_B], ``p`` uint8[16, SVL_B/8], ``ffr`` uint8[SVL_B/8], ``fpcr``, ``fpsr``, ``x``
uint64[31], ``sp`` and memory regions named ``mem_<hex base address>`` (uint8). Missing keys
mean zero or empty. Predicate bit *b* is bit ``b % 8`` of byte ``b // 8``.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from zatile.sw.arch.constants import MASK64, SVCR_SM, SVCR_ZA

__all__ = [
    "ArchState",
    "Memory",
    "MemoryFault",
    "SnapshotError",

]

_MEM_KEY = re.compile(r"mem_(?:0x)?([0-9a-fA-F]+)$")
_SCALAR_KEYS = ("svl", "svcr", "fpcr", "fpsr", "sp")


class SnapshotError(ValueError):
    """A snapshot file that cannot be used; the message is one line naming the problem."""


class MemoryFault(Exception):
    """An access touched an address that no memory region maps.

    Attributes
    ----------
    address : int
        The first faulting byte address.
    write : bool
        Whether the access was a store.
    """

    def __init__(self, address: int, write: bool):
        super().__init__(f"{'write' if write else 'read'} fault at 0x{address:016x}")
        self.address = address
        self.write = write


class Memory:
    """A sparse, byte-addressable memory made of non-overlapping mapped regions.

    Accesses are checked before any byte moves, so a faulting access changes nothing.
    """

    def __init__(self, regions: dict[int, np.ndarray] | None = None):
        self._regions: dict[int, np.ndarray] = {}
        for base, data in (regions or {}).items():
            self.map(base, data)

    def map(self, base: int, data) -> None:
        """Map a region at ``base`` holding ``data`` (bytes-like or a uint8 array).

        Raises
        ------
        ValueError
            If the region is empty, leaves the 64-bit space or overlaps a mapped region.
        """
        array = np.array(np.frombuffer(bytes(data), np.uint8) if not isinstance(data, np.ndarray)
                         else data, dtype=np.uint8).reshape(-1)
        if array.size == 0:
            raise ValueError(f"memory region at 0x{base:x} is empty")
        if not 0 <= base and base + array.size - 1 <= MASK64:
            raise ValueError(f"memory region at 0x{base:x} of {array.size} bytes leaves the 64-bit space")
        for other, other_data in self._regions.items():
            if base < other + other_data.size and other < base + array.size:
                raise ValueError(
                    f"memory region at 0x{base:x} overlaps the region at 0x{other:x}")
        self._regions[base] = array.copy()

    @property
    def regions(self) -> dict[int, np.ndarray]:
        """Mapped regions by base address (the arrays are live views: do not resize)."""
        return dict(sorted(self._regions.items()))

    def _locate(self, address: int, length: int, write: bool) -> tuple[np.ndarray, int]:
        address &= MASK64
        for base, data in self._regions.items():
            if base <= address < base + data.size:
                if address + length <= base + data.size:
                    return data, address - base
                raise MemoryFault(base + data.size, write)
        raise MemoryFault(address, write)

    def check(self, address: int, length: int, write: bool = False) -> None:
        """Raise :class:`MemoryFault` unless all of ``[address, address+length)`` is mapped."""
        if length:
            self._locate(address, length, write)

    def read(self, address: int, length: int) -> np.ndarray:
        """Read ``length`` bytes as a uint8 array copy."""
        if length == 0:
            return np.zeros(0, np.uint8)
        data, offset = self._locate(address, length, False)
        return data[offset:offset + length].copy()

    def write(self, address: int, payload) -> None:
        """Write bytes (a uint8 array or bytes-like) at ``address``."""
        payload = np.frombuffer(bytes(payload), np.uint8) if not isinstance(payload, np.ndarray) \
            else payload.astype(np.uint8, copy=False).reshape(-1)
        if payload.size == 0:
            return
        data, offset = self._locate(address, payload.size, True)
        data[offset:offset + payload.size] = payload

    def copy(self) -> "Memory":
        """An independent copy."""
        return Memory({base: data.copy() for base, data in self._regions.items()})

    def __eq__(self, other) -> bool:
        if not isinstance(other, Memory):
            return NotImplemented
        mine, theirs = self.regions, other.regions
        return mine.keys() == theirs.keys() and all(
            np.array_equal(mine[b], theirs[b]) for b in mine)


@dataclass
class ArchState:
    """Every architectural register the engine has, at one SVL.

    Attributes
    ----------
    svl : int
        Effective streaming vector length in bits.
    svcr : int
        SVCR: bit 0 SM, bit 1 ZA.
    za : numpy.ndarray
        uint8[SVL_B, SVL_B]; row n is the array vector ZA[n].
    z : numpy.ndarray
        uint8[32, SVL_B].
    p : numpy.ndarray
        uint8[16, SVL_B // 8].
    ffr : numpy.ndarray
        uint8[SVL_B // 8].
    fpcr, fpsr : int
        Floating-point control and status.
    x : numpy.ndarray
        uint64[31], X0-X30.
    sp : int
        The stack pointer (read when an instruction names register 31 as a base).
    memory : Memory
        Data memory.
    """

    svl: int
    svcr: int = 0
    za: np.ndarray = None
    z: np.ndarray = None
    p: np.ndarray = None
    ffr: np.ndarray = None
    fpcr: int = 0
    fpsr: int = 0
    x: np.ndarray = None
    sp: int = 0
    memory: Memory = field(default_factory=Memory)

    def __post_init__(self) -> None:
        if self.svl not in (128, 256, 512, 1024, 2048):
            raise ValueError(
                f"SVL must be a power of two between 128 and 2048 bits, not {self.svl!r}")
        svl_b = self.svl_bytes
        shapes = {"za": (svl_b, svl_b), "z": (32, svl_b), "p": (16, svl_b // 8),
                  "ffr": (svl_b // 8,)}
        for name, shape in shapes.items():
            value = getattr(self, name)
            if value is None:
                setattr(self, name, np.zeros(shape, np.uint8))
            else:
                value = np.asarray(value)
                if value.shape != shape:
                    raise ValueError(f"{name} must have shape {shape} at SVL {self.svl}, "
                                     f"not {value.shape}")
                setattr(self, name, value.astype(np.uint8).copy())
        if self.x is None:
            self.x = np.zeros(31, np.uint64)
        else:
            x = np.asarray(self.x)
            if x.shape != (31,):
                raise ValueError(f"x must have shape (31,), not {x.shape}")
            self.x = x.astype(np.uint64).copy()

    @property
    def svl_bytes(self) -> int:
        """SVL_B, the vector length in bytes."""
        return self.svl // 8

    @property
    def sm(self) -> bool:
        """PSTATE.SM."""
        return bool(self.svcr & SVCR_SM)

    @property
    def za_enabled(self) -> bool:
        """PSTATE.ZA."""
        return bool(self.svcr & SVCR_ZA)

    def copy(self) -> "ArchState":
        """A deep, independent copy."""
        return copy.deepcopy(self)

    # ------------------------------------------------------------------ snapshots
    def to_arrays(self) -> dict[str, np.ndarray]:
        """The snapshot arrays (see the module docstring)."""
        arrays = {
            "svl": np.array(self.svl, np.uint64), "svcr": np.array(self.svcr, np.uint64),
            "za": self.za, "z": self.z, "p": self.p, "ffr": self.ffr,
            "fpcr": np.array(self.fpcr, np.uint64), "fpsr": np.array(self.fpsr, np.uint64),
            "x": self.x, "sp": np.array(self.sp, np.uint64),
        }
        for base, data in self.memory.regions.items():
            arrays[f"mem_{base:x}"] = data
        return arrays

    def save(self, path: str | Path) -> None:
        """Write the state as an ``.npz`` snapshot."""
        np.savez(path, **self.to_arrays())

    @classmethod
    def from_arrays(cls, arrays, svl: int | None = None) -> "ArchState":
        """Build a state from snapshot arrays; ``svl`` (bits) overrides or supplies the SVL.

        Raises
        ------
        SnapshotError
            One line naming the first problem.
        """
        arrays = dict(arrays)
        scalars = {}
        for key in _SCALAR_KEYS:
            if key in arrays:
                value = np.asarray(arrays.pop(key))
                if value.size != 1 or value.dtype.kind not in "iu":
                    raise SnapshotError(f"snapshot key '{key}' must be one integer, "
                                        f"not {value.dtype} of shape {value.shape}")
                scalars[key] = int(value.reshape(()))
        snapshot_svl = scalars.pop("svl", None)
        if svl is None:
            svl = snapshot_svl if snapshot_svl is not None else 512
        elif snapshot_svl is not None and snapshot_svl != svl:
            raise SnapshotError(f"snapshot is for SVL {snapshot_svl} but SVL {svl} was requested")
        regions = {}
        fields = {}
        for key, value in arrays.items():
            match = _MEM_KEY.match(key)
            if match:
                value = np.asarray(value)
                if value.dtype != np.uint8 or value.ndim != 1:
                    raise SnapshotError(f"snapshot memory '{key}' must be a 1-D uint8 array, "
                                        f"not {value.dtype} of shape {value.shape}")
                regions[int(match.group(1), 16)] = value
            elif key in ("za", "z", "p", "ffr", "x"):
                value = np.asarray(value)
                expected = np.uint64 if key == "x" else np.uint8
                if value.dtype.kind not in "iu":
                    raise SnapshotError(f"snapshot key '{key}' must be {np.dtype(expected).name}, "
                                        f"not {value.dtype}")
                fields[key] = value
            else:
                raise SnapshotError(f"unknown snapshot key '{key}'")
        try:
            memory = Memory(regions)
            return cls(svl=svl, memory=memory, **fields, **{k: v for k, v in scalars.items()})
        except ValueError as error:
            raise SnapshotError(str(error)) from None

    @classmethod
    def load(cls, path: str | Path, svl: int | None = None) -> "ArchState":
        """Read an ``.npz`` snapshot.

        Raises
        ------
        SnapshotError
            If the file is missing, not an ``.npz`` archive, or malformed.
        """
        try:
            with np.load(path, allow_pickle=False) as archive:
                arrays = {key: archive[key] for key in archive.files}
        except FileNotFoundError:
            raise SnapshotError(f"snapshot '{path}' does not exist") from None
        except (OSError, ValueError) as error:
            raise SnapshotError(f"snapshot '{path}' is not a readable .npz archive ({error})") \
                from None
        try:
            return cls.from_arrays(arrays, svl)
        except SnapshotError as error:
            raise SnapshotError(f"snapshot '{path}': {error}") from None
