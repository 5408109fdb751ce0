"""Architectural state of an SME engine, its sparse memory, and the ``.npz`` snapshot format.

A snapshot holds the arrays ``svl`` (bits), ``svcr``, ``za`` uint8[SVL_B, SVL_B], ``z``
uint8[32, SVL_B], ``p`` uint8[16, SVL_B/8], ``ffr`` uint8[SVL_B/8], ``fpcr``, ``fpsr``, ``nzcv``
(PSTATE.NZCV as bits 3-0: N, Z, C, V), ``x`` uint64[31], ``sp`` and memory regions named ``mem_<hex base address>`` (uint8). Missing keys
mean zero or empty. Predicate bit *b* is bit ``b % 8`` of byte ``b // 8``.

Loading checks every value against the architecture: SVCR has only SM and ZA, FPCR no RES0 bit
(:data:`~zatile.sw.arch.constants.FPCR_FIELDS`), FPSR 32 bits, NZCV 4 bits, each array its shape and element
range; the error names the key. :func:`check_user_space` is the one rule for where a memory region
may lie so that every backend (the model, QEMU, the RTL) can map it.
"""

from __future__ import annotations

import copy
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from zatile.sw.arch.constants import FPCR_FIELDS, MASK64, SVCR_SM, SVCR_ZA

__all__ = [
    "ArchState",
    "Memory",
    "MemoryFault",
    "SnapshotError",
    "USER_SPACE",
    "check_user_space",
]

_MEM_KEY = re.compile(r"mem_(?:0x)?([0-9a-fA-F]+)$")
_SCALAR_KEYS = ("svl", "svcr", "fpcr", "fpsr", "nzcv", "sp")
#: The largest value each scalar snapshot key may hold (``svl`` is checked by ArchState).
_SCALAR_LIMITS = {"svcr": SVCR_SM | SVCR_ZA, "fpcr": FPCR_FIELDS, "fpsr": 0xFFFF_FFFF,
                  "nzcv": 0xF, "sp": MASK64}
_ARRAY_DTYPES = {"za": np.uint8, "z": np.uint8, "p": np.uint8, "ffr": np.uint8, "x": np.uint64}
#: How the first bytes of a file tell what it is.
_ZIP_MAGIC, _NPY_MAGIC = b"PK\x03\x04", b"\x93NUMPY"

#: Where a memory region may lie, [start, end): above the first page, which Linux never maps
#: (``vm.mmap_min_addr``, 4096 by default), and below the last page under 2^47, the highest
#: address qemu-aarch64 maps for its guest on a 64-bit x86 host.
USER_SPACE = (0x1000, (1 << 47) - 0x1000)


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
        if not (0 <= base and base + array.size - 1 <= MASK64):
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

    def ranges(self) -> list[tuple[int, int, bool]]:
        """(base, size, readable) of each mapped region, in address order, without copying
        their contents."""
        return [(base, data.size, True) for base, data in sorted(self._regions.items())]

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


def check_user_space(memory: Memory) -> None:
    """Check that every region lies in :data:`USER_SPACE`, where every backend can map it.

    The model maps any address; QEMU runs the program as a Linux process and the RTL backend is
    compared with both, so a program that runs on one backend runs on all of them.

    Raises
    ------
    ValueError
        Naming the first region outside, and the range allowed.
    """
    start, end = USER_SPACE
    for base, data in memory.regions.items():
        if base < start or base + data.size > end:
            raise ValueError(f"memory region at 0x{base:x} ({data.size} bytes) is outside the "
                             f"user address space every backend maps, 0x{start:x} to 0x{end:x}")


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
    nzcv : int
        PSTATE.NZCV (bit 3 N, 2 Z, 1 C, 0 V): the CPU's flags, which the SVE instructions
        that set flags write.
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
    nzcv: int = 0
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
            "nzcv": np.array(self.nzcv, np.uint64),
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
                scalars[key] = _scalar(key, np.asarray(arrays.pop(key)))
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
            elif key in _ARRAY_DTYPES:
                fields[key] = _array(key, np.asarray(value))
            else:
                raise SnapshotError(f"unknown snapshot key '{key}'")
        try:
            memory = Memory(regions)
            return cls(svl=svl, memory=memory, **fields, **scalars)
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
            with open(path, "rb") as file:
                magic = file.read(len(_NPY_MAGIC))
                file.seek(0)
                if not magic.startswith(_ZIP_MAGIC):
                    raise SnapshotError(f"snapshot '{path}' is not a readable .npz archive: "
                                        f"{_not_npz(magic)}")
                with np.load(file, allow_pickle=False) as archive:
                    arrays = {key: _member(path, archive, key) for key in archive.files}
        except SnapshotError:
            raise
        except FileNotFoundError:
            raise SnapshotError(f"snapshot '{path}' does not exist") from None
        except OSError as error:
            raise SnapshotError(f"cannot read snapshot '{path}': {error.strerror}") from None
        except (zipfile.BadZipFile, EOFError, ValueError) as error:
            raise SnapshotError(f"snapshot '{path}' is not a readable .npz archive ({error})") \
                from None
        try:
            return cls.from_arrays(arrays, svl)
        except SnapshotError as error:
            raise SnapshotError(f"snapshot '{path}': {error}") from None


def _not_npz(magic: bytes) -> str:
    """What a file that is not a zip archive is instead, in words."""
    if not magic:
        return "the file is empty"
    if magic.startswith(_NPY_MAGIC):
        return "it is a single .npy array, not named arrays (write snapshots with numpy.savez)"
    return "it is not a zip file of named arrays (write snapshots with numpy.savez)"


def _member(path, archive, key: str) -> np.ndarray:
    """One array of an open ``.npz``; anything that is not a plain numeric array is an error."""
    try:
        return archive[key]
    except ValueError:
        raise SnapshotError(f"snapshot '{path}': key '{key}' holds Python objects, not numbers") \
            from None
    except (OSError, EOFError, zipfile.BadZipFile) as error:
        raise SnapshotError(f"snapshot '{path}': key '{key}' is not a numpy array ({error})") \
            from None


def _scalar(key: str, value: np.ndarray) -> int:
    """The integer of scalar snapshot key ``key``, checked against its architectural range."""
    if value.size != 1 or value.dtype.kind not in "iu":
        raise SnapshotError(f"snapshot key '{key}' must be one integer, "
                            f"not {value.dtype} of shape {value.shape}")
    number = int(value.reshape(()))
    limit = _SCALAR_LIMITS.get(key)
    if limit is None:
        return number
    if number < 0:
        raise SnapshotError(f"snapshot key '{key}' must not be negative, not {number}")
    if number & ~limit:
        raise SnapshotError(f"snapshot key '{key}' = 0x{number:x} sets reserved bits "
                            f"0x{number & ~limit:x} (defined bits: 0x{limit:x})")
    return number


def _array(key: str, value: np.ndarray) -> np.ndarray:
    """Array snapshot key ``key`` if its elements are integers that fit its element type."""
    dtype = np.dtype(_ARRAY_DTYPES[key])
    if value.dtype.kind not in "iu":
        raise SnapshotError(f"snapshot key '{key}' must be {dtype.name}, not {value.dtype}")
    if value.size and (int(value.min()) < 0 or int(value.max()) > np.iinfo(dtype).max):
        raise SnapshotError(f"snapshot key '{key}' holds values outside {dtype.name} "
                            f"({int(value.min())} to {int(value.max())})")
    return value
