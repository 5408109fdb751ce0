"""The QEMU backend: run a straight-line SME program under ``qemu-aarch64`` from a given state.

:func:`run_qemu` wraps the program in one freestanding AArch64 executable (no libc), assembled
and linked with binutils and run under ``qemu-aarch64`` with SVL = the state's SVL:

1. The **prologue** maps every memory region of the initial state at its own address and
   copies its bytes in, installs handlers for SIGILL, SIGSEGV and SIGBUS on an alternate
   signal stack, and only then loads the architectural state (ZA, SVCR, Z/P/FFR, FPCR, FPSR,
   SP, X0-X30). All syscalls come first because every SVC clears PSTATE.SM (docs/abi.md, "System calls").
2. The **body** is the program, verbatim, one instruction per line.
3. The **epilogue** stores every register without clobbering any first, then the memory
   regions, and writes the whole dump to stdout.

A body instruction that raises a signal is recorded in a table (by its index) and skipped: the
handler advances the PC by 4 and returns through ``rt_sigreturn``, which restores X, SP,
FPSR/FPCR, PSTATE.SM, Z/P/FFR at the streaming or non-streaming VL, and ZA from the signal
frame. So a trapped instruction leaves the state as it was, like the reference model.

The state crosses the process boundary in one byte layout (:func:`state_layout`), used both
for the initial state (embedded with ``.incbin``) and for the final dump.

What QEMU shows that the reference model may not (all measured on QEMU 10.0.2):

* Memory is mapped in whole 4 KiB pages, so an access outside a region but inside one of its
  pages succeeds (reads zero or a neighbour's bytes; writes are not reported) where the
  model faults. Use page-aligned regions when faults are compared.
* SP is exactly ``initial.sp``, 0 included: the harness needs no stack (handlers run on their
  own), so an SP-based access faults or not as it would in the model.
* MSR keeps only FPCR bits 0x07FF2007 (QEMU 10 has FEAT_AFP and FEAT_EBF16) and FPSR bits
  0xF800009F; other bits read back as zero.
* No alignment check fires: an SP base that is not 16-byte aligned, and even LDXR at an odd
  address, just work. SIGBUS is caught all the same (Linux raises it for alignment faults).
* The ``max`` CPU has FEAT_SME_FA64 enabled, so Advanced SIMD is legal in streaming mode (the
  harness itself relies on it for WRFFR/RDFFR).
"""

from __future__ import annotations

import re
import resource
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zatile.sim.binutils import ARCH_FLAGS
from zatile.sim.state import ArchState, Memory
from zatile.sim.tools import find_tool
from zatile.sw.arch.asm import statements
from zatile.sw.arch.config import SVL_CHOICES
from zatile.sw.arch.constants import SVCR_SM, SVCR_ZA

__all__ = [
    "QemuResult",
    "ProgramError",
    "QemuError",
    "SIGNAL_NAMES",
    "qemu_cpu_option",
    "state_layout",
    "run_qemu",
]

#: Signals the harness catches, by number, with the names :class:`QemuResult` reports.
SIGNAL_NAMES: dict[int, str] = {4: "SIGILL", 7: "SIGBUS", 11: "SIGSEGV"}

_LABEL_OR_DIRECTIVE = re.compile(r"^(\.|[A-Za-z_.$][\w.$]*\s*:)")
_ASSEMBLER_MESSAGE = re.compile(r"^[^:\n]*:(\d+): (Error|Warning): (.*)$", re.MULTILINE)

# Linux AArch64 syscall numbers and flags (asm-generic/unistd.h, asm-generic/mman.h, signal.h).
_SYS_SIGALTSTACK = 132
_SYS_RT_SIGACTION = 134
_SYS_RT_SIGRETURN = 139
_SYS_WRITE = 64
_SYS_EXIT_GROUP = 94
_SYS_MMAP = 222
_PROT_READ_WRITE = 0x3
_MAP_PRIVATE_FIXED_ANONYMOUS = 0x02 | 0x10 | 0x20
_SA_SIGINFO_ONSTACK_RESTORER = 0x4 | 0x08000000 | 0x04000000

#: Offset of ``uc_mcontext.pc`` in the AArch64 ``struct ucontext``: uc_flags, uc_link,
#: uc_stack (24 bytes), a 1024-bit sigset_t area, then the 16-byte aligned sigcontext
#: (fault_address, regs[31], sp, pc).
_UCONTEXT_PC = 440
#: Offset of ``si_addr`` in ``siginfo_t`` (si_signo, si_errno, si_code, padding).
_SIGINFO_ADDR = 16

#: Alternate signal stack: a frame at SVL 2048 holds ZA (64 KiB), the SVE record (8.7 KiB)
#: and the 4 KiB base frame, so 256 KiB leaves ample room. Handlers never use the program's SP.
_ALTSTACK_BYTES = 256 * 1024
_PAGE = 4096
#: Alignment of the executable's base (the linker's AArch64 maximum page size).
_IMAGE_ALIGN = 0x10000
_IMAGE_LOWEST = 0x400000
#: Unmapped space kept between the harness's executable and every memory region, so that an
#: access past a region faults as in the model instead of landing in the harness. More than any
#: immediate offset reaches (LDR/STR Z: 255 vector lengths, 64 KiB at SVL 2048).
_IMAGE_GUARD = 0x10_0000

# Exit statuses of the harness itself (a program's own outcome is always status 0).
_EXIT_MAP_FAILED = 90
_EXIT_SIGNAL_OUTSIDE_BODY = 91
_EXIT_WRITE_FAILED = 92

#: The only stdout before ``_EXIT_MAP_FAILED``: the range mmap refused and what it returned.
_MAP_FAILURE = np.dtype([("address", "<u8"), ("length", "<u8"), ("result", "<i8")])
#: The only stdout before ``_EXIT_SIGNAL_OUTSIDE_BODY``: a signal in the harness's own code.
_STRAY_SIGNAL = np.dtype([("signal", "<u8"), ("pc", "<u8"), ("fault_address", "<u8")])
#: Room for either record (both are written from one buffer).
_HARNESS_ERROR_BYTES = max(_MAP_FAILURE.itemsize, _STRAY_SIGNAL.itemsize)
_BODY_SIZE_ERROR = "the program must assemble to one instruction per line"


@dataclass
class QemuResult:
    """The outcome of one :func:`run_qemu` call.

    Attributes
    ----------
    state : ArchState
        The final architectural state; its memory has the initial state's regions.
    trapped : dict[int, str]
        Body instruction index (0-based, among instruction lines) -> ``"SIGILL"``,
        ``"SIGSEGV"`` or ``"SIGBUS"``, for every instruction that raised a signal and was skipped.
    za_valid : bool
        False when PSTATE.ZA was 0 at the end: ZA could not be read and ``state.za`` is zero.
    """

    state: ArchState
    trapped: dict[int, str]
    za_valid: bool


class ProgramError(ValueError):
    """A program the harness cannot run: a label or directive, or text the assembler rejects.

    Attributes
    ----------
    line : int
        1-based line number in the program text.
    text : str
        The offending line.
    """

    def __init__(self, line: int, text: str, message: str):
        super().__init__(f"line {line}: {message}: '{text}'")
        self.line = line
        self.text = text


class QemuError(RuntimeError):
    """QEMU crashed, timed out, or the harness around the program failed; quotes stderr."""


def qemu_cpu_option(svl_bits: int) -> str:
    """The ``-cpu`` value that runs QEMU's ``max`` CPU at SVL = ``svl_bits``.

    The non-streaming SVE vector length is set to the same value, so Z and P hold SVL bits
    whether or not the program leaves streaming mode. Both properties take bytes.

    Raises
    ------
    ValueError
        If ``svl_bits`` is not a power of two between 128 and 2048.
    """
    if svl_bits not in SVL_CHOICES:
        raise ValueError(f"SVL must be a power of two between 128 and 2048 bits, not {svl_bits!r}")
    svl_bytes = svl_bits // 8
    return f"max,sme-default-vector-length={svl_bytes},sve-default-vector-length={svl_bytes}"


def state_layout(svl_bytes: int) -> np.dtype:
    """The byte layout of an architectural state as the harness loads and dumps it.

    The scalars fill 288 bytes, so ZA, Z, P and FFR start on 16-byte boundaries.
    """
    return np.dtype([
        ("x", "<u8", (31,)), ("sp", "<u8"), ("svcr", "<u8"), ("fpcr", "<u8"), ("fpsr", "<u8"),
        ("nzcv", "<u8"),
        ("za", "u1", (svl_bytes, svl_bytes)), ("z", "u1", (32, svl_bytes)),
        ("p", "u1", (16, svl_bytes // 8)), ("ffr", "u1", (svl_bytes // 8,)),
    ])


def _pack_state(state: ArchState) -> bytes:
    block = np.zeros((), state_layout(state.svl_bytes))
    for name in ("x", "za", "z", "p", "ffr"):
        block[name] = getattr(state, name)
    for name in ("sp", "svcr", "fpcr", "fpsr", "nzcv"):
        block[name] = getattr(state, name)
    return block.tobytes()


def _body_lines(program: str) -> list[tuple[int, str]]:
    """(1-based line number, instruction text) for every statement of ``program``.

    The statements are those of :func:`~zatile.sw.arch.asm.statements`, so that instruction
    indices agree with the other backends; each goes on its own line of the harness.
    """
    lines = []
    for number, text in statements(program):
        if _LABEL_OR_DIRECTIVE.match(text):
            raise ProgramError(number, text, "labels and directives are not allowed in a "
                               "straight-line program")
        lines.append((number, text))
    return lines


def _page_ranges(memory: Memory) -> list[tuple[int, int]]:
    """Disjoint, sorted (start, end) page ranges covering every region; shared pages merge."""
    ranges: list[tuple[int, int]] = []
    for base, data in memory.regions.items():
        start = base // _PAGE * _PAGE
        end = -(-(base + data.size) // _PAGE) * _PAGE
        if ranges and start <= ranges[-1][1]:
            ranges[-1] = (ranges[-1][0], max(ranges[-1][1], end))
        else:
            ranges.append((start, end))
    return ranges


def _image_base(ranges: list[tuple[int, int]], image_bytes: int) -> int:
    """The lowest aligned address from which the executable, with :data:`_IMAGE_GUARD` of
    unmapped space on either side, misses every memory region."""
    base = _IMAGE_LOWEST
    moved = True
    while moved:
        moved = False
        for start, end in ranges:
            if start < base + image_bytes + _IMAGE_GUARD and base - _IMAGE_GUARD < end:
                base = -(-(end + _IMAGE_GUARD) // _IMAGE_ALIGN) * _IMAGE_ALIGN
                moved = True
    return base


def _loaded_span(executable: bytes) -> tuple[int, int]:
    """[lowest, highest) guest address the PT_LOAD segments of an ELF64 executable occupy."""
    phoff, = struct.unpack_from("<Q", executable, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", executable, 0x36)
    spans = []
    for index in range(phnum):
        kind, _, _, vaddr, _, _, memsz, _ = struct.unpack_from(
            "<IIQQQQQQ", executable, phoff + index * phentsize)
        if kind == 1:
            spans.append((vaddr, vaddr + memsz))
    return min(s for s, _ in spans), max(e for _, e in spans)


def _mov_constant(register: str, value: int) -> list[str]:
    """MOVZ/MOVK instructions that put the 64-bit ``value`` in ``register``."""
    lines = [f"movz {register}, #{value & 0xFFFF}"]
    for shift in (16, 32, 48):
        chunk = (value >> shift) & 0xFFFF
        if chunk:
            lines.append(f"movk {register}, #{chunk}, lsl #{shift}")
    return lines


def _address(register: str, symbol: str, offset: int = 0) -> list[str]:
    """ADRP/ADD of ``symbol + offset`` (reaches anywhere within 4 GiB, unlike ADR)."""
    target = f"{symbol}+{offset}" if offset else symbol
    return [f"adrp {register}, {target}", f"add {register}, {register}, :lo12:{target}"]


def _generate_source(initial: ArchState, body: list[str], state_file: Path) -> str:
    """The whole harness program around ``body`` as binutils assembly text."""
    layout = state_layout(initial.svl_bytes)
    offset = {name: layout.fields[name][1] for name in layout.names}
    svl_bytes = initial.svl_bytes
    regions = initial.memory.regions
    traps_bytes = -(-len(body) // 16) * 16

    code = [".text", ".global _start", "_start:"]
    # Memory first: mmap cannot run once SM is set, and ZA/Z loads read the embedded blob.
    for start, end in _page_ranges(initial.memory):
        code += [f"// map 0x{start:x}-0x{end:x}", *_mov_constant("x0", start),
                 *_mov_constant("x1", end - start), "bl map_pages"]
    blob_offset = layout.itemsize
    for base, data in regions.items():
        code += [f"// region 0x{base:x}, {data.size} bytes", *_mov_constant("x0", base),
                 *_address("x1", "state_in", blob_offset), *_mov_constant("x2", data.size),
                 "bl copy_bytes"]
        blob_offset += data.size
    code += ["// handlers run on their own stack, whatever the program does to SP",
             *_address("x0", "altstack_descriptor"), "mov x1, #0",
             f"mov x8, #{_SYS_SIGALTSTACK}", "svc #0"]
    for signal in SIGNAL_NAMES:
        code += [f"mov x0, #{signal}", *_address("x1", "sigaction_descriptor"), "mov x2, #0",
                 "mov x3, #8", f"mov x8, #{_SYS_RT_SIGACTION}", "svc #0"]

    # Architectural state. No syscall from here on until the epilogue has stored everything.
    code += [*_address("x20", "state_in")]
    if initial.za_enabled:
        code += ["smstart za", *_address("x1", "state_in", offset["za"]), "mov w12, #0",
                 "1:", "ldr za[w12, 0], [x1]", f"add x1, x1, #{svl_bytes}", "add w12, w12, #1",
                 f"cmp w12, #{svl_bytes}", "b.ne 1b"]
    if initial.sm:
        code += ["smstart sm"]
    code += [*_address("x1", "state_in", offset["z"])]
    code += [f"ldr z{n}, [x1, #{n}, mul vl]" for n in range(32)]
    code += [*_address("x1", "state_in", offset["ffr"]), "ldr p0, [x1]", "wrffr p0.b",
             *_address("x1", "state_in", offset["p"])]
    code += [f"ldr p{n}, [x1, #{n}, mul vl]" for n in range(16)]
    code += [f"ldr x1, [x20, #{offset['fpcr']}]", "msr fpcr, x1",
             # FPSR last: an SM change (above) resets it to 0x0800009f.
             f"ldr x1, [x20, #{offset['fpsr']}]", "msr fpsr, x1",
             # NZCV after the last flag-setting instruction of the prologue (the ZA loop's cmp).
             f"ldr x1, [x20, #{offset['nzcv']}]", "lsl x1, x1, #28", "msr nzcv, x1",
             f"ldr x1, [x20, #{offset['sp']}]", "mov sp, x1",
             f"add x30, x20, #{offset['x']}"]
    code += [f"ldp x{n}, x{n + 1}, [x30, #{8 * n}]" for n in range(0, 30, 2)]
    code += ["ldr x30, [x30, #240]"]  # the base register goes last

    code += ["body_start:", *body, "body_end:",
             f".if (body_end - body_start) != {4 * len(body)}",
             f'.error "{_BODY_SIZE_ERROR}"', ".endif"]

    # Epilogue: park X0 in TPIDR_EL0 (not part of the state) to free a base register.
    code += ["msr tpidr_el0, x0", *_address("x0", "state_out")]
    code += [f"stp x{n}, x{n + 1}, [x0, #{8 * n}]" for n in range(1, 31, 2)]
    code += ["mrs x1, tpidr_el0", "str x1, [x0]",
             "mrs x1, nzcv", "lsr x1, x1, #28", f"str x1, [x0, #{offset['nzcv']}]",
             "mrs x1, fpsr", f"str x1, [x0, #{offset['fpsr']}]",
             "mov x1, sp", f"str x1, [x0, #{offset['sp']}]",
             "mrs x1, fpcr", f"str x1, [x0, #{offset['fpcr']}]",
             "mrs x2, svcr", f"str x2, [x0, #{offset['svcr']}]",
             "tbz x2, #1, 2f", *_address("x1", "state_out", offset["za"]), "mov w12, #0",
             "1:", "str za[w12, 0], [x1]", f"add x1, x1, #{svl_bytes}", "add w12, w12, #1",
             f"cmp w12, #{svl_bytes}", "b.ne 1b", "2:",
             *_address("x1", "state_out", offset["z"])]
    code += [f"str z{n}, [x1, #{n}, mul vl]" for n in range(32)]
    code += [*_address("x1", "state_out", offset["p"])]
    code += [f"str p{n}, [x1, #{n}, mul vl]" for n in range(16)]
    # Streaming or not, the VL is SVL (see qemu_cpu_option) and FA64 allows RDFFR.
    code += ["rdffr p0.b", *_address("x1", "state_out", offset["ffr"]), "str p0, [x1]"]
    code += [*_address("x1", "state_out"), *_mov_constant("x2", layout.itemsize + traps_bytes),
             "bl write_all"]
    for base, data in regions.items():
        code += [*_mov_constant("x1", base), *_mov_constant("x2", data.size), "bl write_all"]
    code += ["mov x0, #0", f"mov x8, #{_SYS_EXIT_GROUP}", "svc #0"]

    code += [
        "// map_pages(x0 = start, x1 = length): anonymous RW pages, exactly there, or fail",
        "map_pages:", "mov x9, x0", "mov x10, x1", f"mov x2, #{_PROT_READ_WRITE}",
        f"mov x3, #{_MAP_PRIVATE_FIXED_ANONYMOUS}", "mov x4, #-1", "mov x5, #0",
        f"mov x8, #{_SYS_MMAP}", "svc #0", "cmp x0, x9", "b.ne 1f", "ret",
        "1:", *_address("x1", "harness_error"), "stp x9, x10, [x1]", "str x0, [x1, #16]",
        f"mov x2, #{_MAP_FAILURE.itemsize}", "bl write_all",
        f"mov x0, #{_EXIT_MAP_FAILED}", f"mov x8, #{_SYS_EXIT_GROUP}", "svc #0",

        "// copy_bytes(x0 = destination, x1 = source, x2 = length > 0)",
        "copy_bytes:", "1:", "ldrb w3, [x1], #1", "strb w3, [x0], #1", "subs x2, x2, #1",
        "b.ne 1b", "ret",

        "// write_all(x1 = buffer, x2 = length > 0) to stdout, however the pipe splits it",
        "write_all:", "1:", "mov x0, #1", f"mov x8, #{_SYS_WRITE}", "svc #0", "cmp x0, #0",
        "b.le 2f", "add x1, x1, x0", "subs x2, x2, x0", "b.ne 1b", "ret",
        "2:", f"mov x0, #{_EXIT_WRITE_FAILED}", f"mov x8, #{_SYS_EXIT_GROUP}", "svc #0",

        "// trap_handler(x0 = signal, x1 = siginfo, x2 = ucontext): note and skip",
        "trap_handler:", f"ldr x3, [x2, #{_UCONTEXT_PC}]", *_address("x4", "body_start"),
        *_address("x5", "body_end"), "cmp x3, x4", "b.lo 1f", "cmp x3, x5", "b.hs 1f",
        "sub x5, x3, x4", "lsr x5, x5, #2", *_address("x6", "traps"), "strb w0, [x6, x5]",
        "add x3, x3, #4", f"str x3, [x2, #{_UCONTEXT_PC}]", "ret",
        "1:", f"ldr x4, [x1, #{_SIGINFO_ADDR}]", *_address("x1", "harness_error"),
        "stp x0, x3, [x1]", "str x4, [x1, #16]", f"mov x2, #{_STRAY_SIGNAL.itemsize}",
        "bl write_all", f"mov x0, #{_EXIT_SIGNAL_OUTSIDE_BODY}",
        f"mov x8, #{_SYS_EXIT_GROUP}", "svc #0",

        "trap_restorer:", f"mov x8, #{_SYS_RT_SIGRETURN}", "svc #0",
    ]

    data = [
        ".data", ".balign 16",
        "state_in:", f'.incbin "{state_file}"',
        ".balign 8",
        "altstack_descriptor:", ".quad altstack", ".quad 0", f".quad {_ALTSTACK_BYTES}",
        "sigaction_descriptor:", ".quad trap_handler", f".quad {_SA_SIGINFO_ONSTACK_RESTORER}",
        ".quad trap_restorer", ".quad 0",
        ".bss", ".balign 16",
        "state_out:", f".skip {layout.itemsize}",
        "traps:", f".skip {traps_bytes}",
        "harness_error:", f".skip {_HARNESS_ERROR_BYTES}",
        ".balign 16", "altstack:", f".skip {_ALTSTACK_BYTES}",
    ]
    return "\n".join(code + data) + "\n"


def _image_bound(initial: ArchState, body_length: int) -> int:
    """An upper bound on the bytes the executable spans: code, data, bss, segment alignment."""
    layout = state_layout(initial.svl_bytes)
    regions = initial.memory.regions
    code = 4 * (body_length + 1024 + 40 * len(regions))
    memory = sum(data.size for data in regions.values())
    data = 2 * layout.itemsize + memory + body_length + 256 + _ALTSTACK_BYTES
    return -(-(code + data + 3 * _IMAGE_ALIGN) // _IMAGE_ALIGN) * _IMAGE_ALIGN


def _raise_assembler_error(stderr: str, body: list[tuple[int, str]],
                           body_first_line: int) -> None:
    """Raise ProgramError for the first error on a body line, else QemuError with stderr."""
    for match in _ASSEMBLER_MESSAGE.finditer(stderr):
        if match.group(2) != "Error":
            continue
        index = int(match.group(1)) - body_first_line
        if 0 <= index < len(body):
            number, text = body[index]
            raise ProgramError(number, text, f"aarch64-linux-gnu-as: {match.group(3)}")
    if _BODY_SIZE_ERROR in stderr:
        # Trap indices are (pc - body_start) / 4, so a line of another size would shift them.
        raise QemuError(f"{_BODY_SIZE_ERROR}, but some line assembled to more or fewer than "
                        f"4 bytes:\n{stderr}")
    raise QemuError(f"the QEMU harness did not assemble (a bug in sim/qemu.py):\n{stderr}")


def run_qemu(program: str, initial: ArchState, timeout: float = 30.0) -> QemuResult:
    """Run ``program`` under ``qemu-aarch64`` from ``initial`` and return the final state.

    Parameters
    ----------
    program : str
        binutils syntax, one instruction per line; blank lines and ``//`` comments allowed,
        no labels or directives.
    initial : ArchState
        The state to start from; its memory regions are mapped at their own addresses.
    timeout : float
        Seconds allowed for each of assembling, linking and running.

    Returns
    -------
    QemuResult
        Final state (same memory regions as ``initial``), trapped instructions, ZA validity.

    Raises
    ------
    ProgramError
        If the program has a label or directive, or the assembler rejects a line (the message
        quotes the assembler and the line).
    QemuError
        If QEMU crashes, times out, or cannot map a memory region (the message quotes stderr).
    ValueError
        If SVCR has bits other than SM and ZA.
    sim.tools.ToolMissing
        If binutils or QEMU is not installed.
    """
    if initial.svcr & ~(SVCR_SM | SVCR_ZA):
        raise ValueError(f"SVCR has only SM (bit 0) and ZA (bit 1), not 0x{initial.svcr:x}")
    body = _body_lines(program)
    layout = state_layout(initial.svl_bytes)
    regions = initial.memory.regions
    base = _image_base(_page_ranges(initial.memory), _image_bound(initial, len(body)))

    with tempfile.TemporaryDirectory(prefix="zatile-qemu-") as work:
        work = Path(work)
        state_file = work / "state.bin"
        state_file.write_bytes(_pack_state(initial)
                               + b"".join(data.tobytes() for data in regions.values()))
        source = _generate_source(initial, [text for _, text in body], state_file)
        (work / "prog.s").write_text(source)
        body_first_line = source.splitlines().index("body_start:") + 2
        assembled = subprocess.run(
            [find_tool("as"), *ARCH_FLAGS, "prog.s", "-o", "prog.o"], cwd=work,
            capture_output=True, text=True, timeout=timeout)
        if assembled.returncode:
            _raise_assembler_error(assembled.stderr, body, body_first_line)
        linked = subprocess.run(
            [find_tool("ld"), "-static", f"-Ttext-segment=0x{base:x}", "prog.o", "-o", "prog"],
            cwd=work, capture_output=True, text=True, timeout=timeout)
        if linked.returncode:
            raise QemuError(f"the QEMU harness did not link:\n{linked.stderr}")
        low, high = _loaded_span((work / "prog").read_bytes())
        for start, end in _page_ranges(initial.memory):
            if start < high and low < end:
                raise QemuError(f"internal: the harness at 0x{low:x}-0x{high:x} overlaps memory "
                                f"0x{start:x}-0x{end:x}")
        command = [find_tool("qemu"), "-cpu", qemu_cpu_option(initial.svl), "./prog"]
        try:
            run = subprocess.run(command, cwd=work, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired as expired:
            stderr = (expired.stderr or b"").decode(errors="replace")
            raise QemuError(f"qemu-aarch64 timed out after {timeout} s\n{stderr}") from None
    return _parse_output(run, initial, layout, len(body))


def _parse_output(run: subprocess.CompletedProcess, initial: ArchState, layout: np.dtype,
                  body_length: int) -> QemuResult:
    """Turn the harness's stdout into a QemuResult, or raise QemuError for its failures."""
    stderr = run.stderr.decode(errors="replace")
    if run.returncode == _EXIT_MAP_FAILED and len(run.stdout) == _MAP_FAILURE.itemsize:
        failure = np.frombuffer(run.stdout, _MAP_FAILURE)[0]
        raise QemuError(f"QEMU could not map memory 0x{int(failure['address']):x}, "
                        f"{int(failure['length'])} bytes (mmap returned "
                        f"{int(failure['result'])})\n{stderr}")
    if run.returncode == _EXIT_SIGNAL_OUTSIDE_BODY and len(run.stdout) == _STRAY_SIGNAL.itemsize:
        stray = np.frombuffer(run.stdout, _STRAY_SIGNAL)[0]
        raise QemuError(f"signal {int(stray['signal'])} at pc 0x{int(stray['pc']):x} (fault "
                        f"address 0x{int(stray['fault_address']):x}), outside the program "
                        f"body: a branch left it, or the harness failed\n{stderr}")
    traps_bytes = -(-body_length // 16) * 16
    regions = initial.memory.regions
    expected = layout.itemsize + traps_bytes + sum(data.size for data in regions.values())
    if run.returncode != 0 or len(run.stdout) != expected:
        status = (f"killed by signal {-run.returncode}" if run.returncode < 0
                  else f"exit status {run.returncode}")
        raise QemuError(f"qemu-aarch64 failed ({status}, {len(run.stdout)} of {expected} "
                        f"bytes of output)\n{stderr}")

    block = np.frombuffer(run.stdout, layout, count=1)[0]
    traps = np.frombuffer(run.stdout, np.uint8, body_length, layout.itemsize)
    trapped = {int(index): SIGNAL_NAMES[int(traps[index])]
               for index in np.flatnonzero(traps)}
    final_memory = {}
    offset = layout.itemsize + traps_bytes
    for base, data in regions.items():
        final_memory[base] = np.frombuffer(run.stdout, np.uint8, data.size, offset)
        offset += data.size
    svcr = int(block["svcr"])
    za_valid = bool(svcr & SVCR_ZA)
    state = ArchState(
        svl=initial.svl, svcr=svcr,
        za=block["za"] if za_valid else None, z=block["z"], p=block["p"], ffr=block["ffr"],
        fpcr=int(block["fpcr"]), fpsr=int(block["fpsr"]), nzcv=int(block["nzcv"]),
        x=block["x"], sp=int(block["sp"]),
        memory=Memory(final_memory))
    return QemuResult(state, trapped, za_valid)


def qemu_sme_cpu_option(svl_bits: int) -> str:
    """The ``-cpu`` value for compiled programs: SME with every SVL from 128 up to ``svl_bits``
    supported and ``svl_bits`` the default, as ``zatile exec --svl`` configures the engine."""
    if svl_bits not in SVL_CHOICES:
        raise ValueError(f"SVL must be a power of two between 128 and 2048 bits, not {svl_bits!r}")
    lengths = ",".join(f"sme{bits}={'on' if bits <= svl_bits else 'off'}"
                       for bits in SVL_CHOICES)
    # No FEAT_SME_FA64 (QEMU's max has it): Advanced SIMD in streaming mode must trap, as on
    # the engine.
    return f"max,sme=on,sme_fa64=off,{lengths},sme-default-vector-length={svl_bits // 8}"


def run_qemu_program(path: str, argv: list[str], svl_bits: int, stdout=None, stderr=None,
                     timeout: float | None = None) -> int:
    """Run a static aarch64 program under ``qemu-aarch64`` (the oracle of ``zatile exec``).

    ``argv[0]`` is what the program sees as its name. Returns the exit status as a shell
    reports it (128 + signal when a signal ended it).
    """
    command = [find_tool("qemu"), "-cpu", qemu_sme_cpu_option(svl_bits), "-0", argv[0], path,
               *argv[1:]]
    # No core files: QEMU writes qemu_<prog>_<time>_<pid>.core into the working folder.
    result = subprocess.run(command, stdout=stdout, stderr=stderr, timeout=timeout,
                            env={"PATH": "/bin", "HOME": "/"},
                            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
    return 128 - result.returncode if result.returncode < 0 else result.returncode
