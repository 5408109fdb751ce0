"""Architectural constants every layer of zatile names: one definition each.

The register bit masks and trap codes are the Arm ARM's (docs/isa.md, "PSTATE and SVCR" and
"Trap order"); the kernel model's Linux spellings of the same values derive from these
(:mod:`zatile.sw.abi.constants`).
"""

from __future__ import annotations

from enum import IntEnum, IntFlag

__all__ = ["MASK64", "SVCR_SM", "SVCR_ZA", "FPCR_FIELDS", "Smtc", "FPSR_RESET_ON_SM_CHANGE",
           "FpsrFlag", "FPSR_CUMULATIVE"]

#: All ones in a 64-bit register.
MASK64 = (1 << 64) - 1

#: SVCR.SM: PSTATE.SM, streaming mode.
SVCR_SM = 1 << 0
#: SVCR.ZA: PSTATE.ZA, the ZA array is live.
SVCR_ZA = 1 << 1

#: Every defined field of the AArch64 FPCR with all its features: FIZ, AH, NEP [2:0], the trap
#: enables IOE-IXE [12:8], EBF [13], IDE [15], Len [18:16], FZ16 [19], Stride [21:20], RMode
#: [23:22], FZ [24], DN [25], AHP [26]. Every other bit is RES0.
FPCR_FIELDS = 0x07FF_BF07


class Smtc(IntEnum):
    """SME trap codes: ESR_ELx.ISS[2:0] of an exception with EC 0x1D."""

    #: SME access disabled (CPACR/SMEN): every SME and streaming-SVE instruction.
    SME_DISABLED = 0
    #: An instruction illegal in streaming mode (unused: the engine sees none).
    ILLEGAL_IN_STREAMING = 1
    #: A ZA instruction at PSTATE.SM=0.
    NEEDS_STREAMING = 2
    #: A ZA instruction at PSTATE.ZA=0.
    ZA_INACTIVE = 3


#: FPSR after ResetSVEState, i.e. after every change of PSTATE.SM: every cumulative exception
#: bit and QC set (docs/isa.md, "PSTATE and SVCR").
FPSR_RESET_ON_SM_CHANGE = 0x0800009F


class FpsrFlag(IntFlag):
    """The cumulative floating-point exception bits of FPSR, which an instruction that raises
    the exception sets and nothing but software clears (docs/isa.md, "Floating-point
    exceptions")."""

    #: Invalid Operation (a signalling NaN, inf - inf, 0 * inf, a conversion out of range).
    IOC = 1 << 0
    #: Divide by Zero.
    DZC = 1 << 1
    #: Overflow.
    OFC = 1 << 2
    #: Underflow.
    UFC = 1 << 3
    #: Inexact.
    IXC = 1 << 4
    #: Input Denormal (a denormal input flushed to zero by FPCR.FZ).
    IDC = 1 << 7


#: Every cumulative exception bit of FPSR.
FPSR_CUMULATIVE = int(FpsrFlag.IOC | FpsrFlag.DZC | FpsrFlag.OFC | FpsrFlag.UFC | FpsrFlag.IXC
                      | FpsrFlag.IDC)
