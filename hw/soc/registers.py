"""The register map of the SoC wrapper's AXI4-Lite control port (:mod:`zatile.hw.soc.control`).

One table, :data:`REGISTERS`, states every register once: the control slave decodes from it, the
generated ``zatile_soc.json`` lists it, the README's table is checked against it, and the host
drivers (the cocotb bench, the UART bridge) address registers by its names.

Registers are 32 bits at word-aligned byte offsets. An access to an offset the map does not
list, a write to a read-only register and a read of a write-only one are answered SLVERR and
change nothing. 64-bit values are two registers, ``_LO`` at the lower offset; reading a
performance counter's ``_LO`` latches its ``_HI`` so that the pair read in that order is one
value.

How a host runs instructions: write the operands to ``ISSUE_SRC*`` (they stay until rewritten),
then the instruction word to ``ISSUE_WORD``, which queues the instruction with the operands
(an issue FIFO of ``FIFO.ISSUE_DEPTH`` entries; a write to a full FIFO is answered SLVERR, sets
``STATUS.ISSUE_OVERFLOW`` and queues nothing). Results come back in issue order in a result
FIFO: ``RESULT`` shows the oldest (``VALID`` = 0 when there is none) with ``RESULT_SCALAR`` and
``RESULT_FAULT``; any write to ``RESULT_POP`` removes it. ``CONTROL`` and ``FPCR`` may change
only while ``STATUS.IDLE`` (the engine's control inputs, :mod:`zatile.hw.engine`). The debug
window shows the ZA row, Z, P or FFR register ``DEBUG_SELECT`` selects (the engine's debug
port), one 32-bit word of it per register, while the engine is idle.
"""

from __future__ import annotations

from dataclasses import dataclass

from zatile.sw.arch.config import EngineConfig

from zatile.hw.perf_counters import PERF_COUNTERS

__all__ = ["Field", "Register", "REGISTERS", "REGISTERS_BY_NAME", "ID_VALUE", "PERF_BASE",
           "DEBUG_WINDOW", "ISSUE_DEPTH", "RESULT_DEPTH", "debug_words", "register_map_json",
           "register_map_markdown", "pack_register", "unpack_register"]

#: What ``ID`` reads: "ZATL" in ASCII, most significant byte first.
ID_VALUE = 0x5A41544C
#: Entries of the issue and result FIFOs.
ISSUE_DEPTH = 8
RESULT_DEPTH = 16
#: Offset of the first performance counter; each takes 8 bytes (``_LO``, ``_HI``).
PERF_BASE = 0x100
#: Offset of the debug window: word ``k`` holds bytes ``4k..4k+3`` of the selected register.
DEBUG_WINDOW = 0x400



@dataclass(frozen=True)
class Field:
    """Bits ``lsb .. lsb+width-1`` of a register."""

    name: str
    lsb: int
    width: int
    description: str


@dataclass(frozen=True)
class Register:
    """One 32-bit register: ``access`` is ``RO``, ``RW`` or ``WO`` (``RW1C`` fields are named
    in the description)."""

    name: str
    offset: int
    access: str
    description: str
    fields: tuple[Field, ...] = ()


def _register(name, offset, access, description, *fields) -> Register:
    return Register(name, offset, access, description, tuple(Field(*f) for f in fields))


REGISTERS: tuple[Register, ...] = (
    _register("ID", 0x000, "RO", f"0x{ID_VALUE:08X}, 'ZATL'"),
    _register("CONFIG", 0x004, "RO", "the configuration the engine was built for",
              ("MAX_SVL", 0, 12, "largest SVL in bits"),
              ("MEM_DATA_WIDTH", 12, 12, "bits per memory beat (AXI data width)"),
              ("ZA_CONTEXTS", 24, 5, "physical ZA contexts")),
    _register("SMFR0_LO", 0x008, "RO", "ID_AA64SMFR0_EL1 bits 31:0"),
    _register("SMFR0_HI", 0x00C, "RO", "ID_AA64SMFR0_EL1 bits 63:32"),
    _register("CONTROL", 0x010, "RW", "the engine's control inputs (change only while idle)",
              ("SME_ENABLE", 0, 1, "SME instructions may run (0: they trap)"),
              ("SMCR_LEN", 4, 4, "SMCR_ELx.LEN: the effective SVL is (LEN+1)*128, at most "
                                 "MAX_SVL"),
              ("ZA_CONTEXT", 8, 4, "the physical ZA context selected"),
              ("IRQ_ENABLE", 16, 1, "irq is high while the result FIFO holds a result")),
    _register("FPCR", 0x014, "RW", "FPCR (rounding mode, FZ, DN, AH, FZ16)"),
    _register("STATUS", 0x018, "RO", "the engine's state",
              ("SVCR", 0, 2, "PSTATE.SM (bit 0) and PSTATE.ZA (bit 1)"),
              ("IDLE", 2, 1, "no instruction inside the engine and none queued"),
              ("ISSUE_OVERFLOW", 3, 1, "an ISSUE_WORD write found the FIFO full (sticky; "
                                       "cleared by writing 1 to ISSUE_OVERFLOW_CLEAR)"),
              ("SVL_BYTES", 8, 9, "effective SVL in bytes")),
    _register("FIFO", 0x01C, "RO", "FIFO levels",
              ("ISSUE_FREE", 0, 8, "free entries of the issue FIFO"),
              ("RESULTS", 8, 8, "results waiting in the result FIFO"),
              ("ISSUE_DEPTH", 16, 8, "entries of the issue FIFO"),
              ("RESULT_DEPTH", 24, 8, "entries of the result FIFO")),
    _register("ISSUE_SRC0_LO", 0x020, "RW", "first scalar operand, bits 31:0"),
    _register("ISSUE_SRC0_HI", 0x024, "RW", "first scalar operand, bits 63:32"),
    _register("ISSUE_SRC1_LO", 0x028, "RW", "second scalar operand, bits 31:0"),
    _register("ISSUE_SRC1_HI", 0x02C, "RW", "second scalar operand, bits 63:32"),
    _register("ISSUE_SRC2_LO", 0x030, "RW", "third scalar operand, bits 31:0"),
    _register("ISSUE_SRC2_HI", 0x034, "RW", "third scalar operand, bits 63:32"),
    _register("ISSUE_WORD", 0x038, "WO", "queue this instruction word with ISSUE_SRC0-2"),
    _register("ISSUE_OVERFLOW_CLEAR", 0x03C, "WO", "writing bit 0 set clears "
                                                   "STATUS.ISSUE_OVERFLOW"),
    _register("RESULT", 0x040, "RO", "the oldest result",
              ("VALID", 0, 1, "there is a result (the other fields are meaningful)"),
              ("STATUS", 1, 2, "0 OK, 1 UNDEF, 2 SME trap, 3 fault"),
              ("SMTC", 3, 3, "ESR_ELx.SMTC of an SME trap"),
              ("NZCV", 6, 4, "the flags an instruction that sets them produced"),
              ("SETS_FLAGS", 10, 1, "the instruction wrote NZCV"),
              ("FPSR_RESET", 11, 1, "the instruction changed PSTATE.SM: FPSR is reset"),
              ("FPSR_FLAGS", 12, 8, "FPSR cumulative exception bits raised")),
    _register("RESULT_SCALAR_LO", 0x048, "RO", "the oldest result's scalar, bits 31:0"),
    _register("RESULT_SCALAR_HI", 0x04C, "RO", "the oldest result's scalar, bits 63:32"),
    _register("RESULT_FAULT_LO", 0x050, "RO", "the oldest result's fault address, bits 31:0"),
    _register("RESULT_FAULT_HI", 0x054, "RO", "the oldest result's fault address, bits 63:32"),
    _register("RESULT_POP", 0x058, "WO", "remove the oldest result (SLVERR when there is none)"),
    _register("DEBUG_SELECT", 0x060, "RW", "what the debug window shows",
              ("SPACE", 0, 2, "0 ZA row, 1 Z, 2 P, 3 FFR"),
              ("INDEX", 8, 8, "the row or register number")),
    *(reg for i, name in enumerate(PERF_COUNTERS) for reg in (
        _register(f"PERF_{name.upper()}_LO", PERF_BASE + 8 * i, "RO",
                  f"performance counter {name}, bits 31:0 (latches bits 63:32)"),
        _register(f"PERF_{name.upper()}_HI", PERF_BASE + 8 * i + 4, "RO",
                  f"performance counter {name}, bits 63:32 as latched by _LO"))),
)

REGISTERS_BY_NAME = {register.name: register for register in REGISTERS}


def pack_register(name: str, **fields: int) -> int:
    """The 32-bit value of register ``name`` with the given fields (the others 0).

    Raises
    ------
    ValueError
        For a field the register does not have or a value that does not fit it.
    """
    register = REGISTERS_BY_NAME[name]
    known = {field.name: field for field in register.fields}
    value = 0
    for field_name, field_value in fields.items():
        if field_name not in known:
            raise ValueError(f"register {name} has no field {field_name!r}")
        field = known[field_name]
        if not 0 <= field_value < 1 << field.width:
            raise ValueError(f"{name}.{field_name}={field_value:#x} does not fit "
                             f"{field.width} bits")
        value |= field_value << field.lsb
    return value


def unpack_register(name: str, value: int) -> dict[str, int]:
    """The fields of register ``name`` holding ``value``."""
    return {field.name: value >> field.lsb & ((1 << field.width) - 1)
            for field in REGISTERS_BY_NAME[name].fields}


def debug_words(config: EngineConfig) -> int:
    """32-bit words of the debug window: a ZA row (or Z register) at the largest SVL."""
    return config.max_svl // 32


def register_map_json(config: EngineConfig) -> list[dict]:
    """The register map of an engine built for ``config``, as JSON objects (offsets as numbers
    and hex strings), with the debug window's words."""
    entries = [{"name": r.name, "offset": r.offset, "offset_hex": f"0x{r.offset:03X}",
                "access": r.access, "description": r.description,
                "fields": [{"name": f.name, "lsb": f.lsb, "width": f.width,
                            "description": f.description} for f in r.fields]}
               for r in REGISTERS]
    entries += [{"name": f"DEBUG_DATA{k}", "offset": DEBUG_WINDOW + 4 * k,
                 "offset_hex": f"0x{DEBUG_WINDOW + 4 * k:03X}", "access": "RO",
                 "description": f"bytes {4 * k}..{4 * k + 3} of the selected register",
                 "fields": []} for k in range(debug_words(config))]
    return entries


def register_map_markdown() -> str:
    """The register map as a Markdown table (the README's), one row per register, its fields
    listed as ``NAME[msb:lsb]``; the performance counters and the debug window summarised."""
    lines = ["| offset | register | access | contents |", "|---|---|---|---|"]
    for register in REGISTERS:
        if register.name.startswith("PERF_") and register.offset != PERF_BASE:
            continue
        if register.offset == PERF_BASE:
            counters = ", ".join(r.name[len("PERF_"):-len("_LO")].lower() for r in REGISTERS
                                 if r.name.startswith("PERF_") and r.name.endswith("_LO"))
            last = max(r.offset for r in REGISTERS if r.name.startswith("PERF_"))
            lines.append(f"| 0x{PERF_BASE:03X}-0x{last:03X} | PERF_<name>_LO/_HI | RO | "
                         f"64-bit performance counters, 8 bytes each, in this order: "
                         f"{counters}; reading _LO latches _HI |")
            continue
        fields = "; ".join(
            f"{field.name}[{field.lsb + field.width - 1}:{field.lsb}]" if field.width > 1
            else f"{field.name}[{field.lsb}]" for field in register.fields)
        contents = register.description + (f": {fields}" if fields else "")
        lines.append(f"| 0x{register.offset:03X} | {register.name} | {register.access} | "
                     f"{contents} |")
    lines.append(f"| 0x{DEBUG_WINDOW:03X}- | DEBUG_DATA<k> | RO | word k of the register "
                 f"DEBUG_SELECT selects (SVL/32 words at the largest SVL) |")
    return "\n".join(lines) + "\n"
