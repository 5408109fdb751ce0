"""The streaming-SVE forms of the table: predicates, vector moves, element counts, loads/stores."""

from __future__ import annotations

from zatile.sw.arch.isa.builder import FormList
from zatile.sw.arch.isa.forms import Alias, Field, Requires, Trait

__all__ = ["TITLE", "FORMS"]

#: The class of instructions this module declares (README, "The instruction subset").
TITLE = "streaming SVE: predicate set-up, moves, counts, contiguous and register loads/stores"

_TRAITS = {
    "ldr_register": {Trait.LOAD},
    "str_register": {Trait.STORE},
    "ld1_contiguous": {Trait.LOAD},
    "st1_contiguous": {Trait.STORE},
    "while": {Trait.SETS_FLAGS},
}
forms = FormList(_TRAITS)


def _define_streaming_sve() -> None:
    pd, size_letters = Field("pd", 3, 0), "bhsd"
    for log2, letter in enumerate(size_letters):
        fields = [Field("pattern", 9, 5), pd]
        forms.add(f"PTRUE_{letter.upper()}", "ptrue", 0x2518E000 | log2 << 22,
                  fields, f"p{{pd:d}}.{letter}{{pattern:optpat}}", "ptrue", Requires.STREAMING,
                  esize=1 << log2)
    forms.add("PFALSE", "pfalse", 0x2518E400, [pd], "p{pd:d}.b", "pfalse",
              Requires.STREAMING)
    for mnemonic, unsigned in (("whilelt", 0), ("whilelo", 1)):
        for log2, letter in enumerate(size_letters):
            for sf, reg in ((0, "w"), (1, "x")):
                fields = [Field("rm", 20, 16), Field("rn", 9, 5), pd]
                forms.add(f"{mnemonic.upper()}_{letter.upper()}_{reg.upper()}", mnemonic,
                          0x25200400 | log2 << 22 | sf << 12 | unsigned << 11,
                          fields, f"p{{pd:d}}.{letter}, {{rn:{reg}}}, {{rm:{reg}}}", "while",
                          Requires.STREAMING, esize=1 << log2, unsigned=bool(unsigned),
                          wide=bool(sf))
    zd = Field("zd", 4, 0)
    for log2, letter in enumerate(size_letters):
        fields = [Field("rn", 9, 5), zd]
        forms.add(f"DUP_{letter.upper()}_SCALAR", "mov", 0x05203800 | log2 << 22,
                  fields, f"z{{zd:d}}.{letter}, {{rn:{'xsp' if letter == 'd' else 'wsp'}}}",
                  "dup_scalar", Requires.STREAMING, esize=1 << log2, aliases=("dup",))
        fields = [Field("imm8", 12, 5, signed=True), zd] if letter == "b" else \
            [Field("sh", 13, 13), Field("imm8", 12, 5, signed=True), zd]
        syntax = f"z{{zd:d}}.{letter}, {{imm8+sh:dupimm{letter}}}" if letter != "b" else \
            f"z{{zd:d}}.{letter}, #{{imm8:s}}"
        # ``fmov z.T, #0.0`` (binutils takes it; FDUP has no encoding of zero) is DUP #0.
        zero = () if letter == "b" else (
            Alias("fmov", f"z{{zd:d}}.{letter}, #0.0", printed=False),)
        forms.add(f"DUP_{letter.upper()}_IMM", "mov", 0x2538C000 | log2 << 22,
                  fields, syntax, "dup_imm", Requires.STREAMING, esize=1 << log2, aliases=("dup",),
                  preferred=zero)
    rd = Field("rd", 4, 0)
    for log2, letter in enumerate(size_letters):
        fields = [Field("imm4", 19, 16), Field("pattern", 9, 5), rd]
        count_letter = "bhwd"[log2]
        forms.add(f"CNT{count_letter.upper()}", f"cnt{count_letter}", 0x0420E000 | log2 << 22,
                  fields, "{rd:x}{pattern+imm4:cntpat}", "cnt", Requires.STREAMING, destination="rd",
                  esize=1 << log2)
    fields = [Field("imm", 10, 5, signed=True), rd]
    forms.add("RDVL", "rdvl", 0x04BF5000, fields, "{rd:x}, #{imm:s}", "rdsvl",
              Requires.STREAMING, destination="rd", unit="svl_bytes")
    # LDR/STR of a whole Z or P register (SVE fill/spill; the kernel model's context switch).
    for register, base_bits, target in (("z", 0x4000, Field("zt", 4, 0)), ("p", 0x0000, Field("pt", 3, 0))):
        for store in (0, 1):
            fields = [Field("imm9h", 21, 16), Field("imm9l", 12, 10), Field("rn", 9, 5), target]
            mnemonic = "str" if store else "ldr"
            forms.add(f"{mnemonic.upper()}_{register.upper()}", mnemonic,
                      (0xE5800000 if store else 0x85800000) | base_bits, fields,
                      f"{register}{{{target.name}:d}}, [{{rn:xsp}}{{imm9h+imm9l:mulvl9}}]",
                      "str_register" if store else "ldr_register", Requires.STREAMING,
                      predicate=register == "p")
    # Contiguous LD1B/H/W/D (zero-extending) and ST1B/H/W/D, scalar+scalar and scalar+immediate.
    zt, pg, rn = Field("zt", 4, 0), Field("pg", 12, 10), Field("rn", 9, 5)
    for msz in range(4):
        for esz in range(msz, 4):
            mem_letter, elem_letter = "bhwd"[msz], size_letters[esz]
            for store in (0, 1):
                mnemonic = ("st1" if store else "ld1") + mem_letter
                pred = "p{pg:d}" if store else "p{pg:d}/z"
                params = dict(msize=1 << msz, esize=1 << esz)
                if store:
                    base = 0xE4000000 | msz << 23 | esz << 21
                    ss_value, si_value = base | 0b010 << 13, base | 0b111 << 13
                else:
                    dtype = msz << 2 | esz
                    base = 0xA4000000 | dtype << 21
                    ss_value, si_value = base | 0b010 << 13, base | 0b101 << 13
                # Rm=XZR is unallocated for scalar+scalar; the assembler rejects it as binutils does.
                lsl = f", lsl #{msz}" if msz else ""
                fields = [Field("rm", 20, 16), pg, rn, zt]
                forms.add(f"{mnemonic.upper()}_{elem_letter.upper()}_SS", mnemonic, ss_value, fields,
                          "{z{zt:d}." + elem_letter + "}, " + pred + ", [{rn:xsp}, {rm:x}" + lsl + "]",
                          "st1_contiguous" if store else "ld1_contiguous", Requires.STREAMING,
                          unallocated=(("rm", 31),), scalar_offset=True, **params)
                fields = [Field("imm4", 19, 16, signed=True), pg, rn, zt]
                forms.add(f"{mnemonic.upper()}_{elem_letter.upper()}_SI", mnemonic, si_value, fields,
                          "{z{zt:d}." + elem_letter + "}, " + pred + ", [{rn:xsp}{imm4:mulvl}]",
                          "st1_contiguous" if store else "ld1_contiguous", Requires.STREAMING,
                          scalar_offset=False, **params)


_define_streaming_sve()
FORMS = tuple(forms.forms)
