"""The instruction table itself: structure, decode, and assembler/disassembler round trips."""

import random

import pytest

from zatile.sw.arch.asm import AsmError, assemble, assemble_line, disassemble, objdump_lines
from zatile.sw.arch.isa import FORMS, FORMS_BY_NAME, OPS, decode, scalar_destination, scalar_sources
from zatile.sw.arch.pseudocode import decode_bit_masks


def _canonical_logical_immediate(form, values):
    """Clear the bits of ``immr`` a logical immediate ignores (those at or above its element
    size, docs/isa.md, "Logical immediates"): such words are valid, but their text is the
    canonical word's, which is what an assembler makes of it."""
    if "immr" in values:
        decoded = decode_bit_masks((form.value >> 17 & 1) << 12 | values["immr"] << 6
                                   | values["imms"])
        if decoded is not None:
            values["immr"] &= decoded[0] - 1


def random_instance(form, rng):
    """A random valid word of ``form`` (fields uniformly random, exclusions re-drawn).

    For a form with preferred aliases, half the words make the fields one alias ties equal,
    so every alias spelling is exercised. Logical immediates are drawn canonical
    (:func:`_canonical_logical_immediate`), so that every word's text assembles back to it.
    """
    fields = form.field_map
    while True:
        values = {field.name: rng.getrandbits(field.width) for field in form.fields}
        if form.preferred and rng.random() < 0.5:
            for target, source in rng.choice(form.preferred).fill.items():
                values[target] = values[source] & ((1 << fields[target].width) - 1)
        _canonical_logical_immediate(form, values)
        word = form.value
        for name, value in values.items():
            word |= value << fields[name].lo
        if decode(word) is not None:
            return word


def test_no_word_matches_two_forms():
    for index, first in enumerate(FORMS):
        for second in FORMS[index + 1:]:
            assert (first.value ^ second.value) & first.mask & second.mask, \
                f"{first.name} and {second.name} overlap"


def test_every_form_decodes_to_itself_and_round_trips():
    rng = random.Random(1)
    for form in FORMS:
        for _ in range(20):
            word = random_instance(form, rng)
            assert decode(word).form is form
            text = disassemble(word)
            assert assemble_line(text) == word, (form.name, text)


def test_form_count_and_ops_cover_the_subset():
    assert len(FORMS) == len(FORMS_BY_NAME) == 160 + 586 + 336 + 243 + 200 + 108
    for op in ("int_mopa", "fmopa_fp32", "fmopa_fp64", "fmopa_fp16_widening", "bfmopa",
               "ld1_tile", "st1_tile", "ldr_za", "str_za", "mova_to_tile", "mova_to_vector",
               "zero_za", "add_vector_to_tile", "msr_svcr_imm", "ptrue", "while", "cnt"):
        assert op in OPS


@pytest.mark.parametrize("text, word", [
    # worked examples from the LLVM and binutils test suites
    ("smstart", 0xD503477F), ("smstop za", 0xD503447F), ("msr svcrsm, #1", 0xD503437F),
    ("zero {za}", 0xC00800FF), ("zero {za0.h}", 0xC0080055), ("zero {}", 0xC0080000),
    ("zero {za0.d, za1.d, za2.d, za4.d, za5.d, za7.d}", 0xC00800B7),
    ("ld1w {za1h.s[w14, 1]}, p5/z, [x10, x21, lsl #2]", 0xE0955545),
    ("ld1w {za3v.s[w15, 3]}, p7/z, [sp]", 0xE09FFFEF),
    ("ld1q {za15v.q[w15, 0]}, p7/z, [x1, x2, lsl #4]", 0xE1C2FC2F),
    ("st1w {za3h.s[w13, 3]}, p2, [x4, x5, lsl #2]", 0xE0A5288F),
    ("ldr za[w15, 15], [sp, #15, mul vl]", 0xE10063EF),
    ("str za[w13, 7], [x12, #7, mul vl]", 0xE1202187),
    ("mova z21.h, p5/m, za1h.h[w14, 2]", 0xC0425555),
    ("mova za15v.q[w12, 0], p1/m, z2.q", 0xC0C1844F),
    ("fmops za3.s, p6/m, p7/m, z4.s, z1.s", 0x8081F893),
    ("fmopa za5.d, p5/m, p2/m, z10.d, z21.d", 0x80D55545),
    ("fmopa za1.s, p5/m, p2/m, z10.h, z21.h", 0x81B55541),
    ("bfmops za0.s, p0/m, p1/m, z1.h, z4.h", 0x81842030),
    ("usmopa za0.s, p0/m, p1/m, z1.b, z4.b", 0xA1842020),
    ("umops za3.s, p6/m, p7/m, z4.b, z1.b", 0xA1A1F893),
    ("usmops za7.d, p7/m, p7/m, z31.h, z31.h", 0xA1DFFFF7),
    ("addva za0.d, p0/m, p0/m, z0.d", 0xC0D10000),
    ("rdsvl x21, #-32", 0x04BF5C15), ("addsvl sp, sp, #31", 0x043F5BFF),
    ("addspl x0, x0, #-32", 0x04605C00),
    ("dup z4.s, #1, lsl #8", 0x25B8E024), ("MOV Z0.S, W1", 0x05A03820),
    ("mov z4.h, #0, lsl #8", 0x2578E004),
])
def test_known_encodings(text, word):
    assert assemble_line(text) == word


def test_a_shifted_zero_dup_immediate_keeps_its_shift_as_objdump_prints_it():
    assert disassemble(0x2578E004) == "mov\tz4.h, #0, lsl #8"


@pytest.mark.parametrize("text, problem", [
    ("ldr za[w12, 1], [x0, #2, mul vl]", "disagree"),
    ("ld1w {za4h.s[w12, 0]}, p0/z, [x0]", "the tile must be ZA0–ZA3 for this element size, "
                                          "not ZA4"),
    ("ld1w {za0h.s[w11, 0]}, p0/z, [x0]", "the slice index register must be W12–W15, not W11"),
    ("ld1b {z0.b}, p0/z, [x0, xzr]", "unallocated"),
    ("fmopa za0.s, p8/m, p0/m, z0.s, z0.s", "the governing predicate must be P0–P7, not P8"),
    ("frobnicate x0", "unknown mnemonic"),
    (".word 5", "directive '.word' is not supported"),
    ("loop:", "labels are not supported"),
    ("ldr z0, [x32]", "expected an x-register or sp, found 'x32'"),
    ("mov z6.b, #1, lsl #8", "invalid operands"),
    ("mov z6.h, #257", "cannot be encoded"),
])
def test_bad_text_is_rejected_with_a_reason(text, problem):
    with pytest.raises(AsmError, match=problem):
        assemble_line(text)


#: Operands out of range: the message speaks of registers, tiles, offsets and immediates as the
#: user wrote them, never of encoding fields (tests/test_isa_binutils.py checks GNU as rejects
#: each line too).
OUT_OF_RANGE = {
    "ld1w {za0h.s[w16, 0]}, p0/z, [x0]": "the slice index register must be W12–W15, not W16",
    "ldr za[w11, 0], [x0]": "the slice index register must be W12–W15, not W11",
    "ld1w {za0h.s[w12, 4]}, p0/z, [x0]": "the slice offset must be between 0 and 3, not 4",
    "ld1d {za8h.d[w12, 0]}, p0/z, [x0]": "the tile must be ZA0–ZA7 for this element size, "
                                         "not ZA8",
    "fmopa za4.s, p0/m, p0/m, z0.s, z1.s": "the tile must be ZA0–ZA3 for this element size, "
                                           "not ZA4",
    "fmopa za0.s, p0/m, p0/m, z32.s, z1.s": "the vector register must be Z0–Z31, not Z32",
    "ptrue p16.s": "the predicate register must be P0–P15, not P16",
    "rdsvl x0, #64": "the immediate must be between -32 and 31, not 64",
    "ld1w {z0.s}, p0/z, [x0, #8, mul vl]": "the offset must be between -8 and 7 vector "
                                           "lengths, not 8",
}


@pytest.mark.parametrize("text", OUT_OF_RANGE)
def test_out_of_range_operands_are_named_in_user_terms(text):
    with pytest.raises(AsmError) as caught:
        assemble_line(text)
    assert str(caught.value) == f"invalid operands for '{text.split()[0]}': {OUT_OF_RANGE[text]}"
    assert "field" not in str(caught.value)


def test_program_errors_name_the_line():
    with pytest.raises(AsmError, match=r"line 3: .*'bogus'"):
        assemble("smstart\n// comment\nbogus\n")


def test_every_32_bit_pattern_class_disassembles_without_raising():
    rng = random.Random(7)
    for _ in range(20000):
        text = disassemble(rng.getrandbits(32))
        assert text
    assert disassemble(0x12345678) == ".inst\t0x12345678 ; unsupported"


def test_objdump_listing_layout():
    assert objdump_lines([0xD503477F, 0xE1000000]) == [
        "   0:\td503477f \tsmstart", "   4:\te1000000 \tldr\tza[w12, 0], [x0]"]


def test_scalar_operands_follow_the_templates():
    decoded = decode(assemble_line("ld1w {za0h.s[w13, 0]}, p0/z, [sp, x3, lsl #2]"))
    sources = scalar_sources(decoded)
    assert [(r.field, r.number, r.is_sp, r.width) for r in sources] == [
        ("rs", 13, False, 32), ("rn", 31, True, 64), ("rm", 3, False, 64)]
    destination = scalar_destination(decode(assemble_line("addsvl sp, x3, #-2")))
    assert destination.is_sp and destination.number == 31
    assert scalar_destination(decode(assemble_line("cntb xzr"))).is_zero
    assert scalar_destination(decode(assemble_line("msr svcr, x3"))) is None


def test_a_preferred_alias_prints_when_it_applies_and_assembles_to_the_same_word():
    from zatile.sw.arch.isa import Alias, Decoded, Field, Form, Requires, form_text, parse_operands
    # ORR (vectors, unpredicated) and its MOV alias, as binutils spells them.
    orr = Form("ORR_Z_TEST", "orr", 0x04603000, 0xFFE0FC00,
               (Field("zm", 20, 16), Field("zn", 9, 5), Field("zd", 4, 0)),
               "z{zd:d}.d, z{zn:d}.d, z{zm:d}.d", "orr", Requires.STREAMING,
               preferred=(Alias("mov", "z{zd:d}.d, z{zn:d}.d", {"zm": "zn"}),))
    same, different = orr.encode(zd=1, zn=2, zm=2), orr.encode(zd=1, zn=2, zm=3)
    assert form_text(Decoded(same, orr, orr.fields_of(same))) == "mov\tz1.d, z2.d"
    assert form_text(Decoded(different, orr, orr.fields_of(different))) == "orr\tz1.d, z2.d, z3.d"
    assert orr.encode(**parse_operands(orr, "z1.d, z2.d", orr.preferred[0])) == same
    with pytest.raises(ValueError, match="'zq' is not one of its fields"):
        Form("BAD", "orr", 0x04603000, 0xFFE0FC00,
             (Field("zm", 20, 16), Field("zn", 9, 5), Field("zd", 4, 0)), "", "orr",
             Requires.STREAMING, preferred=(Alias("mov", "", {"zq": "zn"}),))


def test_a_destination_the_form_also_reads_is_a_source():
    from zatile.sw.arch.isa import Decoded, Field, Form, Requires
    fields = (Field("imm4", 19, 16), Field("pattern", 9, 5), Field("rdn", 4, 0))
    incd = Form("INCD_TEST", "incd", 0x04F0E000, 0xFFF0FC00, fields, "{rdn:x}{pattern+imm4:cntpat}",
                "inc", Requires.STREAMING, destination="rdn", params={"reads_destination": True})
    word = incd.encode(rdn=3, pattern=31)
    decoded = Decoded(word, incd, incd.fields_of(word))
    assert [r.name for r in scalar_sources(decoded)] == ["x3"]
    assert scalar_destination(decoded).name == "x3"
