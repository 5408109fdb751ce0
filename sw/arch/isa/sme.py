"""The SME forms of the table: SVCR, ZA moves and loads/stores, outer products, SVL arithmetic."""

from __future__ import annotations

from zatile.sw.arch.isa.builder import ESIZE, FormList
from zatile.sw.arch.isa.forms import Field, Requires, Trait

__all__ = ["TITLE", "FORMS"]

#: The class of instructions this module declares (README, "The instruction subset").
TITLE = "SME"

_TRAITS = {
    "msr_svcr_imm": {Trait.SVCR_WRITE},
    "msr_svcr": {Trait.SVCR_WRITE},
    "ld1_tile": {Trait.LOAD, Trait.ZA_SLICE},
    "st1_tile": {Trait.STORE, Trait.ZA_SLICE},
    "ldr_za": {Trait.LOAD, Trait.ZA_SLICE},
    "str_za": {Trait.STORE, Trait.ZA_SLICE},
    "mova_to_tile": {Trait.ZA_SLICE},
    "mova_to_vector": {Trait.ZA_SLICE},
    "fmopa_fp32": {Trait.OUTER_PRODUCT},
    "fmopa_fp64": {Trait.OUTER_PRODUCT},
    "fmopa_fp16_widening": {Trait.OUTER_PRODUCT},
    "bfmopa": {Trait.OUTER_PRODUCT},
    "int_mopa": {Trait.OUTER_PRODUCT},
    "add_vector_to_tile": {Trait.OUTER_PRODUCT},
}
forms = FormList(_TRAITS)


def _define_state_control() -> None:
    # MSR SVCRxx, #imm: CRm<2:1> selects SM/ZA/both, CRm<0> is the new value (docs/isa.md, "PSTATE and SVCR").
    for select, suffix, alt in ((3, "", "svcrsmza"), (1, " sm", "svcrsm"), (2, " za", "svcrza")):
        for start in (1, 0):
            word = 0xD503407F | ((select << 1) | start) << 8
            mnemonic = "smstart" if start else "smstop"
            name = mnemonic.upper() + (f"_{suffix.strip().upper()}" if suffix else "")
            forms.add(name, mnemonic, word, (), suffix.strip(), "msr_svcr_imm", Requires.ACCESS,
                      set_sm=bool(select & 1), set_za=bool(select & 2), start=bool(start),
                      alt_syntax=(f"msr {alt}, #{start}",))
    rt = Field("rt", 4, 0)
    forms.add("MRS_SVCR", "mrs", 0xD53B4240, [rt], "{rt:x}, svcr", "mrs_svcr",
              Requires.ACCESS, destination="rt")
    forms.add("MSR_SVCR", "msr", 0xD51B4240, [rt], "svcr, {rt:x}", "msr_svcr",
              Requires.ACCESS)


def _tile_slice_fields(top: int, tile_bits: int) -> list[Field]:
    """The tile number and slice offset packed into the 4 bits ``[top:top-3]`` (docs/isa.md, "Tile mapping").

    ``tile_bits`` high bits name the tile; the rest are the slice offset, so byte slices have no
    tile field and 128-bit slices no offset field.
    """
    fields = []
    if tile_bits:
        fields.append(Field("tile", top, top + 1 - tile_bits))
    if tile_bits < 4:
        fields.append(Field("off", top - tile_bits, top - 3))
    return fields


def _define_za_moves() -> None:
    imm8 = Field("mask", 7, 0)
    forms.add("ZERO", "zero", 0xC0080000, [imm8], "{mask:zamask}", "zero_za",
              Requires.ZA)
    # Tile LD1/ST1 (docs/isa.md, "Tile mapping"): [3:0] splits into tile number and slice offset by size.
    for letter in "bhsdq":
        esize = ESIZE[letter]
        tile_bits = esize.bit_length() - 1            # 0..4 bits of tile number
        q = 1 if letter == "q" else 0
        msz = 3 if letter == "q" else tile_bits
        for store in (0, 1):
            for vertical in (0, 1):
                fields = [Field("rm", 20, 16), Field("rs", 14, 13), Field("pg", 12, 10), Field("rn", 9, 5),
                          *_tile_slice_fields(3, tile_bits)]
                value = 0xE0000000 | q << 24 | msz << 22 | store << 21 | vertical << 15
                hv = "v" if vertical else "h"
                tile = "{tile:d}" if tile_bits else "0"
                off = "{off:d}" if tile_bits < 4 else "0"
                mnemonic = ("st1" if store else "ld1") + ("bhwdq"[tile_bits])
                pred = "p{pg:d}" if store else "p{pg:d}/z"
                forms.add(f"{mnemonic.upper()}_ZA_{hv.upper()}", mnemonic, value,
                          fields, f"{{za{tile}{hv}.{letter}[{{rs:w12}}, {off}]}}, {pred}, "
                          f"[{{rn:xsp}}{{rm:rmxzr{tile_bits}}}]",
                          "st1_tile" if store else "ld1_tile", Requires.SM_ZA,
                          esize=esize, vertical=bool(vertical))
    for store in (0, 1):
        fields = [Field("rv", 14, 13), Field("rn", 9, 5), Field("off", 3, 0)]
        mnemonic = "str" if store else "ldr"
        forms.add(f"{mnemonic.upper()}_ZA", mnemonic, 0xE1000000 | store << 21,
                  fields, "za[{rv:w12}, {off:d}], [{rn:xsp}{off:mulvl}]",
                  "str_za" if store else "ldr_za", Requires.ZA)
    # MOVA both ways (docs/isa.md, "MOVA"); binutils prints and accepts "mov".
    for letter in "bhsdq":
        esize = ESIZE[letter]
        tile_bits = esize.bit_length() - 1
        size, q = (3, 1) if letter == "q" else (tile_bits, 0)
        for vertical in (0, 1):
            hv = "v" if vertical else "h"
            tile = "{tile:d}" if tile_bits else "0"
            off = "{off:d}" if tile_bits < 4 else "0"
            slice_text = f"za{tile}{hv}.{letter}[{{rs:w12}}, {off}]"
            # vector to tile: ZAd:off in [3:0]
            fields = [Field("rs", 14, 13), Field("pg", 12, 10), Field("zn", 9, 5),
                      *_tile_slice_fields(3, tile_bits)]
            forms.add(f"MOVA_Z_TO_ZA_{letter.upper()}_{hv.upper()}", "mov",
                      0xC0000000 | size << 22 | q << 16 | vertical << 15, fields,
                      f"{slice_text}, p{{pg:d}}/m, z{{zn:d}}.{letter}", "mova_to_tile", Requires.SM_ZA,
                      esize=esize, vertical=bool(vertical), aliases=("mova",))
            # tile to vector: ZAn:off in [8:5]
            fields = [Field("rs", 14, 13), Field("pg", 12, 10), Field("zd", 4, 0),
                      *_tile_slice_fields(8, tile_bits)]
            forms.add(f"MOVA_ZA_TO_Z_{letter.upper()}_{hv.upper()}", "mov",
                      0xC0020000 | size << 22 | q << 16 | vertical << 15, fields,
                      f"z{{zd:d}}.{letter}, p{{pg:d}}/m, {slice_text}", "mova_to_vector",
                      Requires.SM_ZA, esize=esize, vertical=bool(vertical), aliases=("mova",))


def _define_outer_products() -> None:
    common = [Field("zm", 20, 16), Field("pm", 15, 13), Field("pn", 12, 10), Field("zn", 9, 5)]
    # ``ways``: source elements per tile element (each tile element sums that many products).
    fp_forms = (
        # name, mnemonic, base, tile element, source element, op, feature
        ("FMOPA_S", "fmop", 0x80800000, "s", "s", "fmopa_fp32", "F32F32"),
        ("FMOPA_D", "fmop", 0x80C00000, "d", "d", "fmopa_fp64", "F64F64"),
        ("FMOPA_H_S", "fmop", 0x81A00000, "s", "h", "fmopa_fp16_widening", "F16F32"),
        ("BFMOPA", "bfmop", 0x81800000, "s", "h", "bfmopa", "B16F32"),
    )
    for name, stem, base, tile_letter, src_letter, op, feature in fp_forms:
        tile = Field("zada", 2, 0) if tile_letter == "d" else Field("zada", 1, 0)
        fields = common + [tile]
        for subtract in (0, 1):
            mnemonic = stem + ("s" if subtract else "a")
            form_name = name.replace("MOPA", "MOPS") if subtract else name
            forms.add(form_name, mnemonic, base | subtract << 4, fields,
                      f"za{{zada:d}}.{tile_letter}, p{{pn:d}}/m, p{{pm:d}}/m, "
                      f"z{{zn:d}}.{src_letter}, z{{zm:d}}.{src_letter}",
                      op, Requires.SM_ZA, feature, subtract=bool(subtract),
                      esize=ESIZE[tile_letter], ways=ESIZE[tile_letter] // ESIZE[src_letter])
    signedness = (("s", 0, 0), ("su", 0, 1), ("us", 1, 0), ("u", 1, 1))
    for tile_letter, base, src_letter, feature in (("s", 0xA0800000, "b", "I8I32"),
                                                   ("d", 0xA0C00000, "h", "I16I64")):
        tile = Field("zada", 2, 0) if tile_letter == "d" else Field("zada", 1, 0)
        fields = common + [tile]
        for prefix, zn_unsigned, zm_unsigned in signedness:
            for subtract in (0, 1):
                mnemonic = f"{prefix}mop{'s' if subtract else 'a'}"
                forms.add(f"{mnemonic.upper()}_{tile_letter.upper()}", mnemonic,
                          base | zn_unsigned << 24 | zm_unsigned << 21 | subtract << 4, fields,
                          f"za{{zada:d}}.{tile_letter}, p{{pn:d}}/m, p{{pm:d}}/m, "
                          f"z{{zn:d}}.{src_letter}, z{{zm:d}}.{src_letter}",
                          "int_mopa", Requires.SM_ZA, feature, subtract=bool(subtract),
                          zn_unsigned=bool(zn_unsigned), zm_unsigned=bool(zm_unsigned),
                          esize=ESIZE[tile_letter], ways=4)
    for tile_letter, base, feature in (("s", 0xC0900000, "I8I32"), ("d", 0xC0D00000, "I16I64")):
        tile = Field("zada", 2, 0) if tile_letter == "d" else Field("zada", 1, 0)
        fields = [Field("pm", 15, 13), Field("pn", 12, 10), Field("zn", 9, 5), tile]
        for vertical, mnemonic in ((0, "addha"), (1, "addva")):
            forms.add(f"{mnemonic.upper()}_{tile_letter.upper()}", mnemonic, base | vertical << 16, fields,
                      f"za{{zada:d}}.{tile_letter}, p{{pn:d}}/m, p{{pm:d}}/m, z{{zn:d}}.{tile_letter}",
                      "add_vector_to_tile", Requires.SM_ZA, feature, vertical=bool(vertical),
                      esize=ESIZE[tile_letter])


def _define_scalar_sme() -> None:
    rd, rn, imm6 = Field("rd", 4, 0), Field("rn", 20, 16), Field("imm", 10, 5, signed=True)
    forms.add("RDSVL", "rdsvl", 0x04BF5800, [rd, imm6], "{rd:x}, #{imm:s}",
              "rdsvl", Requires.SME, destination="rd", unit="svl_bytes")
    for mnemonic, base, unit in (("addsvl", 0x04205800, "svl_bytes"),
                                 ("addspl", 0x04605800, "svl_pred_bytes")):
        fields = [rd, rn, imm6]
        forms.add(mnemonic.upper(), mnemonic, base, fields,
                  "{rd:xsp}, {rn:xsp}, #{imm:s}", "addsvl", Requires.SME,
                  destination="rd", unit=unit)


_define_state_control()
_define_za_moves()
_define_outer_products()
_define_scalar_sme()
FORMS = tuple(forms.forms)
