"""Real programs: a static aarch64 Linux ELF on the host CPU, with a minimal Linux beneath it.

:class:`ElfProcess` loads a static executable (pyelftools: PT_LOAD segments, the initial stack
with argc/argv/envp/auxv) into a :class:`~zatile.sim.host_cpu.HostCpu` whose engine is any
:class:`~zatile.sw.arch.engine.Engine` backend, and serves the system calls a static musl program
makes on its way from ``_start`` to ``exit``.

It has two uses. Inside the kernel model (:mod:`~zatile.sw.abi.host_tasks`, which
:func:`zatile.sw.abi.runner.run_program` and ``zatile exec`` use), it loads the image into the
process's CPU and serves the memory, file, identity and time system calls, while the kernel
does threads, signals, scheduling and SME state. Standalone, with its own engine, it is one
process with one thread and no signal delivery to handlers (a synchronous signal or a ``kill``
of itself ends it with the default action): the Python API that calls a program's exported
functions (:meth:`ElfProcess.call`, for ``zatile.sw.ops`` and tests).

A system call is served by the method ``sys_<name>`` (the names of
:data:`zatile.sw.abi.constants.SYSCALLS`); any other returns -ENOSYS and prints one warning line
naming the call (once per call number).
"""

from __future__ import annotations

import copy
import io
import random
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import BinaryIO, Callable, Mapping, Sequence

import numpy as np
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from unicorn import UcError

from zatile.sim.engine import ModelEngine
from zatile.sim.host_cpu import PROT_EXEC, PROT_READ, PROT_WRITE, HostCpu, Stop, StopKind
from zatile.sim.state import MemoryFault
from zatile.sw.abi import constants as c
from zatile.sw.abi.cpufeatures import SmeVectorLengths, hwcap2_from_id
from zatile.sw.abi.procfs import SYSCTL_SME_DEFAULT_VL, ProcfsMixin
from zatile.sw.abi.sigframe import minimum_signal_stack_size
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.constants import MASK64, SVCR_ZA
from zatile.sw.arch.engine import Engine

__all__ = ["ExecError", "ElfImage", "load_elf_image", "ElfProcess", "ProcessResult"]

PAGE = 0x1000
#: Top of the main thread's stack, and its size.
STACK_TOP = 0x0000_7FFF_FFFF_0000
STACK_SIZE = 8 << 20
#: Anonymous mmap()s are placed downwards from here.
MMAP_TOP = 0x0000_7F00_0000_0000
#: The bytes of mappings the processes of one model may hold together (RLIMIT_AS-like, for the
#: simulator's sake: a hostile program cannot make it allocate the host's memory): mmap, brk
#: and fork fail with ENOMEM past it.
GUEST_MEMORY_LIMIT = 2 << 30
#: The return address of :meth:`ElfProcess.call`: a page holding ``BRK #0x5A7``.
RETURN_PAGE = 0x0000_7FFF_FFFF_F000
_BRK_RETURN = 0xD420_B4E0            # brk #0x5a7
#: Where a static position-independent executable (ET_DYN) is loaded.
PIE_BASE = 0x0000_5555_5555_0000

# AT_* keys of the auxiliary vector.
AT_NULL, AT_PHDR, AT_PHENT, AT_PHNUM, AT_PAGESZ, AT_BASE = 0, 3, 4, 5, 6, 7
AT_FLAGS, AT_ENTRY = 8, 9
AT_UID, AT_EUID, AT_GID, AT_EGID, AT_PLATFORM, AT_HWCAP, AT_CLKTCK = 11, 12, 13, 14, 15, 16, 17
AT_SECURE, AT_RANDOM, AT_HWCAP2, AT_EXECFN = 23, 25, 26, 31

# AT_HWCAP of the Cortex-A72 the host CPU models: FP, ASIMD, AES, PMULL, SHA1, SHA2, CRC32,
# CPUID (MRS of ID registers is emulated).
HWCAP_A72 = 0x8FB


_PID = 1000
_AT_FDCWD = 0xFFFF_FF9C                 # -100 as a 32-bit int
_O_RDONLY, _O_WRONLY = 0, 1
_SEEK_SET, _SEEK_CUR = 0, 1
_PATH_MAX = 4096
_SIG_DFL, _SIG_IGN = 0, 1
# Signals whose default action is to ignore them.
_IGNORED_BY_DEFAULT = {17, 23, 28}     # SIGCHLD, SIGURG, SIGWINCH


class ExecError(Exception):
    """The file cannot be executed (missing, not an ELF, wrong machine, dynamic)."""


@dataclass(frozen=True)
class Segment:
    address: int
    data: bytes
    memory_size: int
    prot: int


@dataclass(frozen=True)
class ElfImage:
    """What ``execve`` takes from a static executable."""

    path: str
    entry: int
    segments: tuple[Segment, ...]
    phdr_address: int
    phnum: int
    phentsize: int
    #: Addresses of the functions and data objects of the symbol table, by name.
    symbols: Mapping[str, int] = field(default_factory=dict)


def load_elf_image(path: str | Path) -> ElfImage:
    """Parse a static aarch64 executable.

    Raises
    ------
    ExecError
        Missing or unreadable file, not an ELF, not 64-bit little-endian AArch64, not an
        executable, or a dynamic executable (PT_INTERP).
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        raise ExecError(f"cannot read '{path}': {error.strerror}") from None
    if raw[:4] != b"\x7fELF":
        raise ExecError(f"'{path}' is not an ELF file")
    try:
        elf = ELFFile(io.BytesIO(raw))
        if elf.elfclass != 64 or not elf.little_endian or elf["e_machine"] != "EM_AARCH64":
            raise ExecError(f"'{path}' is not a 64-bit little-endian AArch64 ELF "
                            f"({elf['e_machine']}, ELF{elf.elfclass})")
        kind = elf["e_type"]
        if kind not in ("ET_EXEC", "ET_DYN"):
            raise ExecError(f"'{path}' is not an executable ({kind})")
        segments = list(elf.iter_segments())
        if any(segment["p_type"] == "PT_INTERP" for segment in segments):
            raise ExecError(f"'{path}' is a dynamic executable; link it statically "
                            f"(zatile cc does)")
        base = PIE_BASE if kind == "ET_DYN" else 0
        loads, phdr = [], None
        for segment in segments:
            if segment["p_type"] == "PT_PHDR":
                phdr = base + segment["p_vaddr"]
            if segment["p_type"] != "PT_LOAD" or segment["p_memsz"] == 0:
                continue
            flags = segment["p_flags"]
            prot = (PROT_READ if flags & 4 else 0) | (PROT_WRITE if flags & 2 else 0) \
                | (PROT_EXEC if flags & 1 else 0)
            loads.append(Segment(base + segment["p_vaddr"], segment.data(),
                                 segment["p_memsz"], prot))
        if not loads:
            raise ExecError(f"'{path}' has no loadable segment")
        if phdr is None:
            first = min(segments, key=lambda s: s["p_vaddr"] if s["p_type"] == "PT_LOAD"
                        else 1 << 64)
            phdr = base + first["p_vaddr"] + elf["e_phoff"] - first["p_offset"]
        symbols = {}
        table = elf.get_section_by_name(".symtab")
        if table is not None:
            for symbol in table.iter_symbols():
                if symbol["st_info"]["type"] in ("STT_FUNC", "STT_OBJECT") and symbol.name \
                        and symbol["st_shndx"] != "SHN_UNDEF":
                    symbols.setdefault(symbol.name, base + symbol["st_value"])
        return ElfImage(str(path), base + elf["e_entry"], tuple(loads), phdr, elf["e_phnum"],
                        elf["e_phentsize"], MappingProxyType(symbols))
    except ELFError as error:
        raise ExecError(f"'{path}' is not a valid ELF file: {error}") from None


@dataclass
class ProcessResult:
    """How a program ended and what it cost."""

    status: int
    signal: int | None
    wall_seconds: float
    host_instructions: int
    engine_instructions: int
    engine_by_class: dict
    syscalls: int
    v_transfers: int
    stop: Stop | None = None
    #: Wall time spent in the engine's ``issue`` (the rest is the host CPU and the system calls).
    engine_seconds: float = 0.0
    #: Engine instructions the host streamed without waiting for their results, and the times
    #: it waited for streamed ones (:class:`~zatile.sim.host_cpu.HostCpuStats`).
    engine_streamed: int = 0
    engine_drains: int = 0
    #: Simulated engine clock cycles and performance counters (the RTL backend only).
    engine_cycles: int | None = None
    engine_perf: dict | None = None
    #: What the kernel model did (:func:`~zatile.sw.abi.runner.run_program`): context
    #: switches, preemptions at the end of a quantum, saves of a thread's SME state from the
    #: engine and lazy restores (at the thread's first engine instruction after a switch),
    #: signals delivered to handlers, the bytes of ZA the kernel stored from the engine and
    #: loaded into it, and its virtual ZA contexts (docs/abi.md, "Virtual ZA contexts"): loads
    #: into a physical context, evictions from one, binds that found theirs resident.
    context_switches: int = 0
    preemptions: int = 0
    sme_saves: int = 0
    lazy_restores: int = 0
    signals_delivered: int = 0
    za_bytes_saved: int = 0
    za_bytes_restored: int = 0
    za_loads: int = 0
    za_evictions: int = 0
    za_resident_hits: int = 0
    #: Engine cycles of the kernel's own instructions (the RTL backend; 0 on the model).
    kernel_engine_cycles: int = 0

    #: The kernel counters, by their names in :meth:`to_json_dict` (the same as the fields).
    KERNEL_COUNTERS = ("context_switches", "preemptions", "sme_saves", "lazy_restores",
                       "signals_delivered", "za_bytes_saved", "za_bytes_restored", "za_loads",
                       "za_evictions", "za_resident_hits", "kernel_engine_cycles")

    def to_json_dict(self) -> dict:
        figures = {"exit_status": self.status, "signal": self.signal,
                   "wall_seconds": round(self.wall_seconds, 6),
                   "host_instructions": self.host_instructions,
                   "engine_instructions": self.engine_instructions,
                   "engine_instructions_by_class": dict(self.engine_by_class),
                   "engine_seconds": round(self.engine_seconds, 6),
                   "engine_streamed": self.engine_streamed, "engine_drains": self.engine_drains,
                   "syscalls": self.syscalls, "v_transfers": self.v_transfers,
                   "signals": self.signals_delivered + int(self.signal is not None),
                   **{name: getattr(self, name) for name in self.KERNEL_COUNTERS}}
        if self.engine_cycles is not None:
            figures.update(engine_cycles=self.engine_cycles, engine_perf=dict(self.engine_perf))
        return figures

    @classmethod
    def from_json_dict(cls, figures: dict) -> ProcessResult:
        """The result :meth:`to_json_dict` describes (without the :class:`Stop`)."""
        return cls(figures["exit_status"], figures["signal"], figures["wall_seconds"],
                   figures["host_instructions"], figures["engine_instructions"],
                   dict(figures["engine_instructions_by_class"]), figures["syscalls"],
                   figures["v_transfers"], engine_seconds=figures["engine_seconds"],
                   engine_streamed=figures["engine_streamed"],
                   engine_drains=figures["engine_drains"],
                   engine_cycles=figures.get("engine_cycles"),
                   engine_perf=figures.get("engine_perf"),
                   **{name: figures[name] for name in cls.KERNEL_COUNTERS})


@dataclass
class _OpenFile:
    """An open file of the model's file system view, and the position in it."""

    path: str
    readable: bool
    writable: bool
    offset: int = 0


@dataclass
class _Signals:
    actions: dict[int, int] = field(default_factory=dict)    # signal -> handler address
    blocked: int = 0


def _float_bits(value, dtype) -> int:
    return int(np.array(value, dtype).view(f"u{np.dtype(dtype).itemsize}"))


def _float_from_bits(dtype):
    width = np.dtype(dtype).itemsize
    return lambda bits: np.array(bits & ((1 << 8 * width) - 1), f"u{width}").view(dtype)[()]


#: :meth:`ElfProcess.call`'s result types: how each is read from X0 or V0.
_RESULT_TYPES = {int: None, None: None, np.float16: _float_from_bits(np.float16),
                 np.float32: _float_from_bits(np.float32),
                 np.float64: _float_from_bits(np.float64),
                 float: lambda bits: float(_float_from_bits(np.float64)(bits))}


def _classify_arguments(arguments) -> tuple[list[int], list[int]]:
    """AAPCS64 register allocation of scalar arguments: (X register values, V register bits)."""
    integers, floats = [], []
    for argument in arguments:
        if isinstance(argument, (bool, int, np.integer)):
            integers.append(int(argument) & MASK64)
        elif isinstance(argument, np.floating) and argument.dtype.itemsize in (2, 4, 8):
            floats.append(_float_bits(argument, argument.dtype))
        elif isinstance(argument, float):
            floats.append(_float_bits(argument, np.float64))
        else:
            raise TypeError(f"an argument must be an integer or a floating-point number, not "
                            f"{argument!r}")
    for kind, values in (("integer or pointer", integers), ("floating-point", floats)):
        if len(values) > 8:
            raise ValueError(f"at most 8 {kind} arguments go in registers, not {len(values)}")
    return integers, floats


def _page_down(value: int) -> int:
    return value & ~(PAGE - 1)


def _page_up(value: int) -> int:
    return (value + PAGE - 1) & ~(PAGE - 1)


class ElfProcess(ProcfsMixin):
    """One static ELF program on a :class:`HostCpu`, with the system calls it needs.

    Its files are the kernel model's (:class:`~zatile.sw.abi.procfs.ProcfsMixin`):
    ``/proc/sys/abi/sme_default_vector_length`` (read and write; it starts at ``svl``, as if
    set before the program started) and ``/proc/cpuinfo``.

    Parameters
    ----------
    image : ElfImage
    argv, envp : sequence of str
    svl : int
        The engine's largest SVL in bits, and the process's SME vector length.
    engine_class : callable
        ``engine_class(config, memory)``: the engine backend (the reference model by default).
    stdout, stderr : binary file objects
        Where the program's fd 1 and fd 2 go.
    count_instructions : bool
        Count host instructions (slower; for ``--stats``).
    cpu : HostCpu, optional
        A CPU an operating system prepared (the kernel model's
        :mod:`~zatile.sw.abi.host_tasks`: its engine, scheduling, signals and most system
        calls are the kernel's; this object then loads the image and serves the memory and
        file system calls). ``engine_class`` and ``count_instructions`` are then unused.
    files : ProcfsMixin, optional
        Whose files ``openat`` reaches (the kernel's, with its sysctl); this object's own by
        default.
    memory_in_use : callable, optional
        The bytes mapped by every process that shares :data:`GUEST_MEMORY_LIMIT` with this one
        (the kernel's count); this process's own by default.
    """

    def __init__(self, image: ElfImage, argv: Sequence[str], envp: Sequence[str] = (),
                 svl: int = 512,
                 engine_class: Callable[[EngineConfig, object], Engine] = ModelEngine,
                 stdout: BinaryIO | None = None, stderr: BinaryIO | None = None,
                 count_instructions: bool = False, cpu: HostCpu | None = None,
                 files: ProcfsMixin | None = None,
                 memory_in_use: Callable[[], int] | None = None):
        self.image = image
        self.config = EngineConfig(max_svl=svl)
        self.lengths = SmeVectorLengths.from_config(self.config)
        if cpu is None:
            cpu = HostCpu(lambda memory: engine_class(self.config, memory), self._syscall,
                          count_instructions=count_instructions)
            cpu.engine.smcr_len = svl // 128 - 1
            cpu.engine.sme_enabled = True
        self.cpu = cpu
        engine = cpu.engine
        self.files = files or self
        self.memory_in_use = memory_in_use or (lambda: self.cpu.memory.mapped_bytes)
        self.sme_vl = svl // 8
        self.stdout = stdout if stdout is not None else sys.stdout.buffer
        self.stderr = stderr if stderr is not None else sys.stderr.buffer
        self.syscalls = 0
        self.signals = _Signals()
        self.sme_default_vl = self.sme_vl
        self.sme_vl_inherit = False
        self.sme_vl_onexec = 0              # no execve: recorded for prctl's answers only
        self.hwcap2 = hwcap2_from_id(engine.id_aa64smfr0)
        self.processes = {}                 # no /proc/<pid>/ files
        self._files: dict[int, _OpenFile] = {}
        self._warned: set[int] = set()
        self._random = random.Random(0x5A71E)
        self._mmap_next = MMAP_TOP
        self._load(argv, envp)

    # ------------------------------------------------------------------ execve
    def _load(self, argv: Sequence[str], envp: Sequence[str]) -> None:
        cpu = self.cpu
        pages: dict[int, int] = {}
        for segment in self.image.segments:
            for page in range(_page_down(segment.address),
                              _page_up(segment.address + segment.memory_size), PAGE):
                pages[page] = pages.get(page, 0) | segment.prot
        for start, end, prot in _runs(pages):
            cpu.map(start, end - start, prot)
        for segment in self.image.segments:
            cpu.write_memory(segment.address, segment.data)
        self.brk_start = self.brk = _page_up(max(s.address + s.memory_size
                                                 for s in self.image.segments))
        cpu.map(STACK_TOP - STACK_SIZE, STACK_SIZE, PROT_READ | PROT_WRITE)
        cpu.sp = self._initial_stack(argv, envp)
        cpu.pc = self.image.entry

    def auxv(self, random_address: int, execfn: int) -> list[tuple[int, int]]:
        image = self.image
        return [(AT_PHDR, image.phdr_address), (AT_PHENT, image.phentsize),
                (AT_PHNUM, image.phnum), (AT_PAGESZ, PAGE), (AT_BASE, 0), (AT_FLAGS, 0),
                (AT_ENTRY, image.entry), (AT_UID, 0), (AT_EUID, 0), (AT_GID, 0), (AT_EGID, 0),
                (AT_HWCAP, HWCAP_A72), (AT_CLKTCK, 100), (AT_SECURE, 0),
                (AT_RANDOM, random_address),
                (AT_HWCAP2, self.hwcap2),
                (c.AT_MINSIGSTKSZ, minimum_signal_stack_size(self.lengths.max_vl)),
                (AT_EXECFN, execfn), (AT_NULL, 0)]

    def _initial_stack(self, argv: Sequence[str], envp: Sequence[str]) -> int:
        """Strings at the top, then AT_RANDOM's 16 bytes, then argc/argv/envp/auxv (16-aligned)."""
        cursor = STACK_TOP - 16
        addresses = []
        for text in [*argv, *envp, self.image.path]:
            data = text.encode() + b"\0"
            cursor -= len(data)
            self.cpu.write_memory(cursor, data)
            addresses.append(cursor)
        argv_addresses = addresses[:len(argv)]
        envp_addresses = addresses[len(argv):len(argv) + len(envp)]
        execfn = addresses[-1]
        cursor = (cursor - 16) & ~15
        self.cpu.write_memory(cursor, bytes(self._random.getrandbits(8) for _ in range(16)))
        random_address = cursor
        words = [len(argv), *argv_addresses, 0, *envp_addresses, 0]
        auxv = self.auxv(random_address, execfn)
        #: The auxiliary vector on the initial stack (AT_NULL excluded).
        self.initial_auxv = tuple(pair for pair in auxv if pair[0] != AT_NULL)
        for key, value in auxv:
            words += [key, value]
        cursor = (cursor - 8 * len(words)) & ~15
        self.cpu.write_memory(cursor, struct.pack(f"<{len(words)}Q", *words))
        return cursor

    def forked(self, cpu: HostCpu) -> "ElfProcess":
        """fork's copy of this process on ``cpu`` (which has a copy of the memory): the same
        brk and mmap cursor, a copy of the open files and their offsets."""
        child = copy.copy(self)
        child.cpu = cpu
        child._files = {fd: copy.copy(file) for fd, file in self._files.items()}
        child._warned = set(self._warned)
        return child

    # ------------------------------------------------------------------ running
    def run(self) -> ProcessResult:
        start = time.perf_counter()
        stop = self.cpu.run()
        elapsed = time.perf_counter() - start
        for stream in (self.stdout, self.stderr):
            stream.flush()
        if stop.kind is StopKind.EXIT:
            status, signal = stop.status & 0xFF, None
        else:
            status, signal = 128 + stop.signal, stop.signal
        stats = self.cpu.stats
        return ProcessResult(status, signal, elapsed, stats.host_instructions,
                             stats.engine_instructions, dict(stats.engine_by_class),
                             self.syscalls, stats.v_pulls + stats.v_pushes, stop,
                             engine_seconds=stats.engine_seconds,
                             engine_streamed=stats.engine_streamed,
                             engine_drains=stats.engine_drains)

    # ------------------------------------------------------------------ calling functions
    def symbol(self, name: str) -> int:
        """The address of function or object ``name`` (KeyError if the program has none)."""
        return self.image.symbols[name]

    def call(self, function: str | int, *arguments: int | float | np.floating,
             streaming: bool = False, shared_za: bool = False, result: type | None = int):
        """Call ``function`` (a symbol or an address) under the AAPCS64 and return its result.

        Meant for after :meth:`run` (the C library is initialised) or instead of it.

        Parameters
        ----------
        *arguments : int, float or numpy floating scalar
            Up to eight of each register class, allocated in order as the AAPCS64 does: an int
            (or pointer) goes to the next X register; a ``numpy.float16``/``float32`` or a
            ``float``/``numpy.float64`` (``double``) to the next SIMD&FP register as H, S or D.
        streaming : bool
            The function has the streaming interface (``__arm_streaming``): PSTATE.SM is set
            before the call (and before the SIMD&FP arguments are placed: SMSTART zeroes them)
            and cleared after the result is read, as a non-streaming caller's compiler would.
        shared_za : bool
            The function shares ZA (``__arm_in/out/inout/preserves("za")``): PSTATE.ZA is set
            before the call (ZA zero if it was off) and left set; read and write the contents
            with ``cpu.read_za()``/``cpu.write_za()``. Without it the function has a private-ZA
            interface, which the AAPCS64 forbids calling with ZA active.
        result : type or None
            ``int``: X0 (default); ``numpy.float16``, ``numpy.float32``, ``float`` or
            ``numpy.float64``: H0, S0 or D0 as that type; None: nothing.

        Raises
        ------
        ValueError
            More than eight arguments of a class, or ``result`` is not one of the above.
        TypeError
            An argument that is neither an integer nor a floating-point number.
        RuntimeError
            ZA is active (ZA=1, TPIDR2_EL0 zero) for a private-ZA call; or the function did not
            return (it exited or a signal stopped it).
        """
        if result not in _RESULT_TYPES:
            raise ValueError(f"result must be int, float, numpy.float16/32/64 or None, not "
                             f"{result!r}")
        integers, floats = _classify_arguments(arguments)
        cpu = self.cpu
        if not shared_za and cpu.engine.svcr & SVCR_ZA and not cpu.tpidr2:
            raise RuntimeError(f"{function} has a private-ZA interface and ZA is active "
                               f"(PSTATE.ZA=1, TPIDR2_EL0=0): save what it holds with "
                               f"cpu.read_za(), then cpu.exit_za(), or call with shared_za=True")
        if not cpu.memory.mapped(RETURN_PAGE, RETURN_PAGE + PAGE):
            cpu.map(RETURN_PAGE, PAGE, PROT_READ | PROT_EXEC)
            cpu.write_memory(RETURN_PAGE, _BRK_RETURN.to_bytes(4, "little"))
        address = self.symbol(function) if isinstance(function, str) else function
        if streaming:
            cpu.start_streaming_mode()
        if shared_za:
            cpu.start_za()
        for number, value in enumerate(integers):
            cpu.set_x(number, value)
        for number, bits in enumerate(floats):
            cpu.set_v(number, bits)
        cpu.set_x(30, RETURN_PAGE)
        cpu.sp = (STACK_TOP - STACK_SIZE // 2) & ~15
        stop = cpu.run(address)
        if stop.kind is not StopKind.SIGNAL or stop.address != RETURN_PAGE:
            raise RuntimeError(f"{function} did not return: {stop}")
        value = None if result is None else cpu.x(0) if result is int \
            else _RESULT_TYPES[result](cpu.v(0))
        if streaming:
            cpu.end_streaming_mode()
        return value

    def call_with_memory(self, function: str | int, arguments: Sequence[int],
                         inputs: Sequence[tuple[int, bytes]],
                         outputs: Sequence[tuple[int, int]]) -> tuple[list[bytes], dict]:
        """Map each ``(address, data)`` of ``inputs`` read-write (whole pages) and write it,
        :meth:`call` ``function`` with integer or pointer ``arguments`` (no result), and read
        each ``(address, length)`` of ``outputs``.

        Returns
        -------
        (list of bytes, dict)
            The outputs, and the host CPU's ``engine_instructions``,
            ``engine_instructions_by_class`` and ``engine_streamed`` so far.
        """
        cpu = self.cpu
        for address, data in inputs:
            start = _page_down(address)
            cpu.map(start, _page_up(address + len(data)) - start, PROT_READ | PROT_WRITE)
            cpu.write_memory(address, bytes(data))
        self.call(function, *arguments, result=None)
        return ([cpu.read_memory(address, length) for address, length in outputs],
                {"engine_instructions": cpu.stats.engine_instructions,
                 "engine_instructions_by_class": dict(cpu.stats.engine_by_class),
                 "engine_streamed": cpu.stats.engine_streamed})

    # ------------------------------------------------------------------ system calls
    def _syscall(self, cpu: HostCpu) -> None:
        # Kernel entry ends streaming mode (Z, P, V zero, FPSR reset); ZA is kept.
        cpu.end_streaming_mode()
        self.syscalls += 1
        number = cpu.x(8)
        arguments = [cpu.x(n) for n in range(6)]
        handler = self.handler(number)
        if handler is None:
            result = self.unimplemented(number)
        else:
            try:
                result = handler(*arguments)
            except MemoryFault:
                result = -c.EFAULT
        if result is not None:
            cpu.set_x(0, result)

    def handler(self, number: int):
        """The method serving system call ``number``, or None."""
        name = c.SYSCALLS.get(number)
        return getattr(self, f"sys_{name}", None) if name else None

    def unimplemented(self, number: int) -> int:
        """-ENOSYS for system call ``number``, with one warning line on stderr the first time."""
        if number not in self._warned:
            self._warned.add(number)
            name = c.SYSCALLS.get(number, "unknown to arm64")
            self.stderr.write(f"zatile: warning: system call {number} ({name}) is not "
                              f"implemented (returns -ENOSYS)\n".encode())
        return -c.ENOSYS

    def _read(self, address: int, length: int) -> bytes:
        return self.cpu.read_memory(address, length)

    def _write(self, address: int, data: bytes) -> None:
        self.cpu.memory.check(address, len(data), write=True)
        self.cpu.write_memory(address, data)

    def _stream(self, fd: int) -> BinaryIO | None:
        return {1: self.stdout, 2: self.stderr}.get(fd)

    def _put(self, fd: int, data: bytes) -> int:
        """Write ``data`` to ``fd``: bytes written or a negative errno."""
        stream = self._stream(fd)
        if stream is not None:
            stream.write(data)
            return len(data)
        file = self._files.get(fd)
        if file is None or not file.writable:
            return -c.EBADF
        written = self.files.write_file(file.path, data)
        if written > 0:
            file.offset += written
        return written

    def _get(self, fd: int, count: int) -> bytes | int:
        """The next ``count`` bytes of ``fd`` (without consuming them), or a negative errno."""
        if fd == 0:
            return b""                      # stdin is empty
        file = self._files.get(fd)
        if file is None or not file.readable:
            return -c.EBADF
        if file.path == SYSCTL_SME_DEFAULT_VL and file.offset:
            return b""                      # proc_dointvec: a read past the start is EOF
        contents = self.files.read_file(file.path)
        return contents if isinstance(contents, int) \
            else contents[file.offset:file.offset + count]

    def _consume(self, fd: int, count: int) -> None:
        if fd in self._files:
            self._files[fd].offset += count

    def _iovec(self, iov: int, iovcnt: int) -> list[tuple[int, int]] | int:
        if iovcnt > 1024:
            return -c.EINVAL
        return [struct.unpack("<QQ", self._read(iov + 16 * index, 16)) for index in range(iovcnt)]

    def sys_write(self, fd, buffer, count, *_):
        if fd not in (1, 2) and fd not in self._files:
            return -c.EBADF
        return self._put(fd, self._read(buffer, count))

    def sys_writev(self, fd, iov, iovcnt, *_):
        if fd not in (1, 2) and fd not in self._files:
            return -c.EBADF
        vectors = self._iovec(iov, iovcnt)
        if isinstance(vectors, int):
            return vectors
        return self._put(fd, b"".join(self._read(base, length) for base, length in vectors))

    def sys_read(self, fd, buffer, count, *_):
        data = self._get(fd, count)
        if isinstance(data, int):
            return data
        self._write(buffer, data)
        self._consume(fd, len(data))
        return len(data)

    def sys_readv(self, fd, iov, iovcnt, *_):
        vectors = self._iovec(iov, iovcnt)
        if isinstance(vectors, int):
            return vectors
        data = self._get(fd, sum(length for _, length in vectors))
        if isinstance(data, int):
            return data
        cursor = 0
        for base, length in vectors:
            self._write(base, data[cursor:cursor + length])
            cursor += length
            if cursor >= len(data):
                break
        self._consume(fd, len(data))
        return len(data)

    def sys_openat(self, dirfd, path_address, flags, *_):
        """Only the files the kernel model serves (:class:`~zatile.sw.abi.procfs.ProcfsMixin`):
        no host file is ever reachable."""
        path = self._read_path(path_address)
        if isinstance(path, int):
            return path
        if not path.startswith("/"):
            if dirfd & 0xFFFF_FFFF != _AT_FDCWD:
                return -c.ENOTDIR if dirfd in self._files else -c.EBADF
            path = "/" + path                       # the working directory is /
        access = flags & 3
        if access == 3:
            return -c.EINVAL
        found = self.files.read_file(path)
        if isinstance(found, int):
            return found
        if access != _O_RDONLY and self.files.write_file(path, b"") == -c.EACCES:
            return -c.EACCES
        fd = next(number for number in range(3, 3 + len(self._files) + 1)
                  if number not in self._files)
        self._files[fd] = _OpenFile(path, readable=access != _O_WRONLY,
                                    writable=access != _O_RDONLY)
        return fd

    def _read_path(self, address: int) -> str | int:
        """A NUL-terminated path from guest memory, or -EFAULT / -ENAMETOOLONG."""
        data = bytearray()
        while len(data) < _PATH_MAX:
            try:
                chunk = self._read(address + len(data), 1)
            except MemoryFault:
                return -c.EFAULT
            if chunk == b"\0":
                return data.decode("utf-8", "surrogateescape")
            data += chunk
        return -c.ENAMETOOLONG

    def sys_lseek(self, fd, offset, whence, *_):
        """``seq_lseek``: SEEK_SET and SEEK_CUR only; the standard streams are not seekable."""
        if fd in (0, 1, 2):
            return -c.ESPIPE
        file = self._files.get(fd)
        if file is None:
            return -c.EBADF
        offset -= (offset >> 63) << 64                 # signed
        if whence not in (_SEEK_SET, _SEEK_CUR):
            return -c.EINVAL
        position = offset + (file.offset if whence == _SEEK_CUR else 0)
        if position < 0:
            return -c.EINVAL
        file.offset = position
        return position

    def sys_close(self, fd, *_):
        if fd in (0, 1, 2):
            return 0
        return 0 if self._files.pop(fd, None) is not None else -c.EBADF

    def sys_ioctl(self, fd, request, *_):
        return -c.ENOTTY          # no terminals (TIOCGWINSZ: musl's isatty)

    def sys_exit(self, status, *_):
        self.cpu.stop(Stop(StopKind.EXIT, status=status & 0xFF))

    def sys_exit_group(self, status, *_):
        self.cpu.stop(Stop(StopKind.EXIT, status=status & 0xFF))

    def sys_set_tid_address(self, *_):
        return _PID

    def sys_set_robust_list(self, *_):
        return 0

    def sys_getpid(self, *_):
        return _PID

    def sys_gettid(self, *_):
        return _PID

    def sys_getppid(self, *_):
        return 1

    def sys_getuid(self, *_):
        return 0

    sys_geteuid = sys_getgid = sys_getegid = sys_getuid

    def sys_sched_yield(self, *_):
        return 0

    def sys_nanosleep(self, *_):
        return 0

    def sys_madvise(self, *_):
        return 0

    def sys_prlimit64(self, *_):
        return -c.ENOSYS

    def sys_uname(self, buffer, *_):
        fields = ("Linux", "zatile", "6.16.0-zatile", "#1 SMP", "aarch64", "(none)")
        self._write(buffer, b"".join(f.encode().ljust(65, b"\0") for f in fields))
        return 0

    def sys_clock_gettime(self, clock, timespec, *_):
        if clock > 11:
            return -c.EINVAL
        now = time.clock_gettime_ns(time.CLOCK_MONOTONIC if clock else time.CLOCK_REALTIME)
        self._write(timespec, struct.pack("<qq", now // 10**9, now % 10**9))
        return 0

    def sys_getrandom(self, buffer, count, flags, *_):
        count = min(count, 1 << 20)
        self._write(buffer, bytes(self._random.getrandbits(8) for _ in range(count)))
        return count

    def sys_rt_sigaction(self, signal, action, old_action, size, *_):
        if not 1 <= signal <= 64 or signal in (9, 19) and action or size != 8:
            return -c.EINVAL
        if old_action:
            self._write(old_action, struct.pack("<QQQQ", self.signals.actions.get(signal, 0),
                                                0, 0, 0))
        if action:
            handler, = struct.unpack("<Q", self._read(action, 8))
            self.signals.actions[signal] = handler
        return 0

    def sys_rt_sigprocmask(self, how, new, old, size, *_):
        if size != 8 or how > 2:
            return -c.EINVAL
        if old:
            self._write(old, struct.pack("<Q", self.signals.blocked))
        if new:
            mask, = struct.unpack("<Q", self._read(new, 8))
            mask &= ~((1 << 8) | (1 << 18))          # SIGKILL, SIGSTOP cannot be blocked
            blocked = self.signals.blocked
            self.signals.blocked = (blocked | mask, blocked & ~mask, mask)[how]
        return 0

    def _kill_self(self, signal: int):
        if signal == 0:
            return 0
        if not 1 <= signal <= 64:
            return -c.EINVAL
        action = self.signals.actions.get(signal, _SIG_DFL)
        if action == _SIG_IGN or action == _SIG_DFL and signal in _IGNORED_BY_DEFAULT:
            return 0
        # Default action (or a handler, which this runner cannot run yet): terminate.
        self.cpu.stop(Stop(StopKind.SIGNAL, signal=signal, address=self.cpu.pc,
                           detail="kill" if action == _SIG_DFL else "handler not supported"))
        return 0

    def sys_kill(self, pid, signal, *_):
        return self._kill_self(signal) if pid in (_PID, 0) else -c.ESRCH

    def sys_tkill(self, tid, signal, *_):
        return self._kill_self(signal) if tid == _PID else -c.ESRCH

    def sys_tgkill(self, tgid, tid, signal, *_):
        return self._kill_self(signal) if (tgid, tid) == (_PID, _PID) else -c.ESRCH

    def sys_brk(self, address, *_):
        if address < self.brk_start:
            return self.brk
        new = _page_up(address)
        old = _page_up(self.brk)
        try:
            if new > old:
                if self.cpu.memory.mapped(old, new) \
                        or new - old > GUEST_MEMORY_LIMIT - self.memory_in_use():
                    return self.brk
                self.cpu.map(old, new - old, PROT_READ | PROT_WRITE)
            elif new < old:
                self.cpu.unmap(new, old - new)
        except UcError:
            return self.brk
        self.brk = address
        return self.brk

    def sys_mmap(self, address, length, prot, flags, fd, offset):
        map_fixed, map_anonymous = 0x10, 0x20
        if length == 0 or offset & (PAGE - 1):
            return -c.EINVAL
        if not flags & map_anonymous:
            return -c.EBADF          # no files: every file descriptor is bad
        size = _page_up(length)
        if size > GUEST_MEMORY_LIMIT - self.memory_in_use():
            return -c.ENOMEM
        if flags & map_fixed:
            if address & (PAGE - 1) or address + size > STACK_TOP:
                return -c.EINVAL if address & (PAGE - 1) else -c.ENOMEM
            self.cpu.unmap(address, size)
        else:
            address = self._find_free(size)
        try:
            self.cpu.map(address, size, prot & 7)
        except UcError:
            return -c.ENOMEM
        return address

    def _find_free(self, size: int) -> int:
        candidate = self._mmap_next - size
        while self.cpu.memory.mapped(candidate, candidate + size):
            candidate -= size
        self._mmap_next = candidate
        return candidate

    def sys_munmap(self, address, length, *_):
        if address & (PAGE - 1) or length == 0:
            return -c.EINVAL
        self.cpu.unmap(address, _page_up(length))
        return 0

    def sys_mprotect(self, address, length, prot, *_):
        if address & (PAGE - 1):
            return -c.EINVAL
        size = _page_up(length)
        if size == 0:
            return 0
        if not self.cpu.memory.covered(address, address + size):
            return -c.ENOMEM                   # Linux: a hole in the range, whatever the prot
        try:
            self.cpu.protect(address, size, prot & 7)
        except UcError:
            return -c.ENOMEM
        return 0

    def sys_prctl(self, option, arg2, *_):
        """PR_SME_SET_VL / PR_SME_GET_VL (docs/abi.md, "prctl" and "Live vector-length
        changes"); anything else is -EINVAL."""
        inherit_flag = c.PR_SME_VL_INHERIT if self.sme_vl_inherit else 0
        if option == c.PR_SME_GET_VL:
            return self.sme_vl | inherit_flag
        if option != c.PR_SME_SET_VL:
            return -c.EINVAL
        requested = arg2 & c.PR_SME_VL_LEN_MASK
        flags = arg2 & ~requested & MASK64
        vl = self.lengths.requested(requested, flags)
        if vl < 0:
            return vl
        onexec = bool(flags & c.PR_SME_SET_VL_ONEXEC)
        if not onexec and vl != self.sme_vl:
            # A live change: streaming mode already ended at syscall entry, ZA is discarded.
            self.cpu.exit_za()
            self.cpu.engine.smcr_len = vl // 16 - 1
            self.sme_vl = vl
        self.sme_vl_inherit = bool(flags & c.PR_SME_VL_INHERIT)
        self.sme_vl_onexec = vl if onexec or self.sme_vl_inherit else 0
        return (self.sme_vl_onexec if onexec else self.sme_vl) \
            | (c.PR_SME_VL_INHERIT if self.sme_vl_inherit else 0)


def _runs(pages: dict[int, int]):
    """Contiguous runs of pages with the same protection: (start, end, prot)."""
    run = None
    for page in sorted(pages):
        prot = pages[page]
        if run and run[1] == page and run[2] == prot:
            run[1] = page + PAGE
        else:
            if run:
                yield tuple(run)
            run = [page, page + PAGE, prot]
    if run:
        yield tuple(run)

