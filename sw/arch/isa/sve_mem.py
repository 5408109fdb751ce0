"""The streaming-SVE memory forms beyond contiguous LD1/ST1: replicating, sign-extending,
structure and non-temporal loads and stores, and contiguous prefetches.

Every form here is legal in streaming mode without FEAT_SME_FA64 (docs/isa.md, "Streaming SVE
loads and stores"); the gathers, scatters, first-fault and non-fault loads are not, and stay out
of the table. The forms' parameters:

* ``msize``: bytes of one element in memory; ``esize``: bytes of one element in the register;
* ``signed``: the memory element is sign-extended to ``esize`` (else zero-extended);
* ``scalar_offset``: scalar+scalar addressing (``[Xn|SP, Xm{, lsl #s}]``, Rm = XZR is
  unallocated), else scalar+immediate;
* ``registers``: how many consecutive Z registers a structure load or store transfers.
"""

from __future__ import annotations

from zatile.sw.arch.isa.builder import FormList
from zatile.sw.arch.isa.forms import Field, Requires, Trait

__all__ = ["TITLE", "FORMS"]

#: The class of instructions this module declares (README, "The instruction subset").
TITLE = ("streaming SVE: replicating, sign-extending, structure and non-temporal loads/stores, "
         "prefetches")

# Prefetches have neither trait: they read nothing architecturally and never fault.
_TRAITS = {
    "ld1_replicate": {Trait.LOAD},
    "ld1_signed": {Trait.LOAD},
    "ld_structure": {Trait.LOAD},
    "st_structure": {Trait.STORE},
    "ldnt1_contiguous": {Trait.LOAD},
    "stnt1_contiguous": {Trait.STORE},
    "ld1rq": {Trait.LOAD},
}
forms = FormList(_TRAITS)

_SIZES = "bhsd"
_MEMORY = "bhwd"
_ZT, _PG, _RN, _RM = Field("zt", 4, 0), Field("pg", 12, 10), Field("rn", 9, 5), Field("rm", 20, 16)
_IMM4 = Field("imm4", 19, 16, signed=True)


def _dtype(dtype: int) -> tuple[int, int, bool]:
    """(log2 msize, log2 esize, signed) of the 4-bit ``dtype`` of LD1R and contiguous LD1:
    zero-extending where the memory size is at most the element size, else sign-extending."""
    high, low = dtype >> 2, dtype & 3
    if high <= low:
        return high, low, False
    return 3 - high, 3 - low, True


def _address(msz: int, scalar_offset: bool, immediate: str) -> str:
    """The ``[Xn|SP, ...]`` operand: a scaled index register or the given immediate kind."""
    if scalar_offset:
        return "[{rn:xsp}, {rm:x}" + (f", lsl #{msz}" if msz else "") + "]"
    return "[{rn:xsp}{" + immediate + "}]"


def _single(letter: str, store: bool = False) -> str:
    """``{zT.t}, pG/z, `` (``pG, `` for a store): the one register and the predicate."""
    return "{z{zt:d}." + letter + "}, p{pg:d}" + (", " if store else "/z, ")


def _define_replicating_loads() -> None:
    """LD1R{B,H,W,D}, LD1RS{B,H,W}: one element, scalar + uimm6 × msize, broadcast."""
    for dtype in range(16):
        msz, esz, signed = _dtype(dtype)
        mnemonic = f"ld1r{'s' if signed else ''}{_MEMORY[msz]}"
        forms.add(f"{mnemonic.upper()}_{_SIZES[esz].upper()}", mnemonic,
                  0x84408000 | (dtype >> 2) << 23 | (dtype & 3) << 13,
                  [Field("imm6", 21, 16), _PG, _RN, _ZT],
                  _single(_SIZES[esz]) + _address(msz, False, f"imm6:uoff{1 << msz}"),
                  "ld1_replicate", Requires.STREAMING, msize=1 << msz, esize=1 << esz,
                  signed=signed)


def _define_sign_extending_loads() -> None:
    """LD1SB/LD1SH/LD1SW to every wider element size, scalar+scalar and scalar+imm."""
    for dtype in range(16):
        msz, esz, signed = _dtype(dtype)
        if not signed:
            continue
        mnemonic = f"ld1s{_MEMORY[msz]}"
        for scalar_offset, value in ((True, 0xA4004000), (False, 0xA400A000)):
            fields = [_RM if scalar_offset else _IMM4, _PG, _RN, _ZT]
            forms.add(f"{mnemonic.upper()}_{_SIZES[esz].upper()}_{'SS' if scalar_offset else 'SI'}",
                      mnemonic, value | dtype << 21, fields,
                      _single(_SIZES[esz]) + _address(msz, scalar_offset, "imm4:mulvl"),
                      "ld1_signed", Requires.STREAMING,
                      unallocated=(("rm", 31),) if scalar_offset else (),
                      msize=1 << msz, esize=1 << esz, scalar_offset=scalar_offset)


def _define_structure_and_non_temporal() -> None:
    """LD2-LD4/ST2-ST4 (structures) and LDNT1/STNT1 of every size, both addressings."""
    for msz in range(4):
        letter = _SIZES[msz]
        for registers in (1, 2, 3, 4):
            for store in (False, True):
                if registers == 1:
                    mnemonic = f"{'stnt1' if store else 'ldnt1'}{_MEMORY[msz]}"
                    op = "stnt1_contiguous" if store else "ldnt1_contiguous"
                    target, immediate = _single(letter, store), "imm4:mulvl"
                else:
                    mnemonic = f"{'st' if store else 'ld'}{registers}{_MEMORY[msz]}"
                    op = "st_structure" if store else "ld_structure"
                    target = f"{{zt:zlist{registers}{letter}}}, p{{pg:d}}" \
                        + (", " if store else "/z, ")
                    immediate = f"imm4:mulvl{registers}"
                base = (0xE4000000 if store else 0xA4000000) | msz << 23 | (registers - 1) << 21
                ss_value = base | (0x6000 if store else 0xC000)
                si_value = base | (0x10E000 if store else 0xE000)
                for scalar_offset, value in ((True, ss_value), (False, si_value)):
                    params = dict(msize=1 << msz, esize=1 << msz, scalar_offset=scalar_offset)
                    if registers > 1:
                        params["registers"] = registers
                    forms.add(f"{mnemonic.upper()}_{'SS' if scalar_offset else 'SI'}", mnemonic,
                              value, [_RM if scalar_offset else _IMM4, _PG, _RN, _ZT],
                              target + _address(msz, scalar_offset, immediate), op,
                              Requires.STREAMING,
                              unallocated=(("rm", 31),) if scalar_offset else (), **params)


def _define_quadword_replicating_loads() -> None:
    """LD1RQ{B,H,W,D}: 16 bytes under the first quadword of the predicate, to every quadword."""
    for msz in range(4):
        mnemonic = f"ld1rq{_MEMORY[msz]}"
        for scalar_offset, value in ((True, 0xA4000000), (False, 0xA4002000)):
            forms.add(f"{mnemonic.upper()}_{'SS' if scalar_offset else 'SI'}", mnemonic,
                      value | msz << 23, [_RM if scalar_offset else _IMM4, _PG, _RN, _ZT],
                      _single(_SIZES[msz]) + _address(msz, scalar_offset, "imm4:soff16"),
                      "ld1rq", Requires.STREAMING,
                      unallocated=(("rm", 31),) if scalar_offset else (),
                      msize=1 << msz, esize=1 << msz, scalar_offset=scalar_offset)


def _define_prefetches() -> None:
    """PRFB/PRFH/PRFW/PRFD, scalar + imm6 (mul vl) and scalar+scalar: hints without effect."""
    prfop = Field("prfop", 3, 0)
    for msz in range(4):
        mnemonic = f"prf{_MEMORY[msz]}"
        for scalar_offset, value, offset in ((True, 0x8400C000 | msz << 23, _RM),
                                             (False, 0x85C00000 | msz << 13,
                                              Field("imm6", 21, 16, signed=True))):
            forms.add(f"{mnemonic.upper()}_{'SS' if scalar_offset else 'SI'}", mnemonic, value,
                      [offset, _PG, _RN, prfop],
                      "{prfop:prfop}, p{pg:d}, " + _address(msz, scalar_offset, "imm6:mulvl"),
                      "prefetch", Requires.STREAMING,
                      unallocated=(("rm", 31),) if scalar_offset else (),
                      msize=1 << msz, scalar_offset=scalar_offset)


_define_replicating_loads()
_define_sign_extending_loads()
_define_structure_and_non_temporal()
_define_quadword_replicating_loads()
_define_prefetches()
FORMS = tuple(forms.forms)
