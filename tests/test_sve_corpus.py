"""The streaming-SVE census of the ACLE corpus (tests/corpus, scripts/sve_census.py).

* The corpus compiles cleanly (``-Wall -Wextra -Werror``) at -O0, -O1, -O2 and -O3 with the
  ziglang package's clang (skipped without ziglang or aarch64-linux-gnu-objdump, failed instead
  when ZATILE_REQUIRE_TOOLS=1); a file that warns is reported by name and level.
* A ratchet: the SVE/SME forms the corpus compiles to that zatile's ISA table does not implement
  are exactly :data:`NOT_IMPLEMENTED`. Implementing one makes this test ask for its removal from
  the list; a corpus change that needs a new unimplemented form fails it, naming where it occurs.
* The classifier on planted words: SVE, SME, scalar, system and Advanced SIMD words are told apart
  by encoding, and a word the table does not decode (or decodes to another mnemonic) is reported
  as missing with its file and offset.
"""

from __future__ import annotations

import json

import pytest

from script_modules import load_script
from zatile.sim.tools import tools_required

census = load_script("sve_census")

#: The forms (mnemonic and operand shape, as scripts/sve_census.py names them) that the corpus
#: compiles to and zatile does not implement yet, with zig 0.17's clang: none today.
NOT_IMPLEMENTED: frozenset[str] = frozenset()


def _need_tools() -> None:
    problem = census.tool_problem()
    if problem:
        if tools_required():
            pytest.fail(f"{problem} (ZATILE_REQUIRE_TOOLS=1)")
        pytest.skip(problem)


@pytest.fixture(scope="module")
def corpus_census():
    _need_tools()
    return census.run_census()


def test_corpus_compiles_at_every_level(corpus_census):
    facts, forms = corpus_census
    assert len(facts["sources"]) >= 10
    assert facts["objects"] == len(facts["sources"]) * len(census.OPT_LEVELS)
    assert census.OPT_LEVELS == ("-O0", "-O1", "-O2", "-O3")
    # every file yields streaming SVE or SME code at every level
    seen = {(file, opt) for form in forms for file, opts in form.places.items() for opt in opts}
    absent = [(s, o) for s in facts["sources"] for o in census.OPT_LEVELS if (s, o) not in seen]
    assert not absent, f"no SVE/SME instruction in {absent}"


def test_unimplemented_forms_are_the_known_list(corpus_census):
    _, forms = corpus_census
    unimplemented = {form.name: form for form in forms if form.status != "implemented"}
    now_implemented = sorted(NOT_IMPLEMENTED - set(unimplemented))
    assert not now_implemented, \
        f"zatile implements these now; remove them from NOT_IMPLEMENTED: {now_implemented}"
    new = [f"{name} (e.g. {unimplemented[name].missing[0].place}, "
           f"word {unimplemented[name].missing[0].word:08x})"
           for name in sorted(set(unimplemented) - NOT_IMPLEMENTED)]
    assert not new, f"the corpus uses forms zatile does not implement: {new}"


def test_the_sme_forms_of_the_corpus_are_all_implemented(corpus_census):
    _, forms = corpus_census
    sme = [form for form in forms if form.space == "SME"]
    assert {"fmopa", "bfmopa", "smopa", "usmopa", "ld1w", "st1w", "mov", "zero"} <= \
        {form.mnemonic for form in sme}
    assert all(form.status == "implemented" for form in sme)


def test_a_warning_fails_the_compile_with_its_file_and_level(tmp_path, monkeypatch):
    _need_tools()
    monkeypatch.setenv("ZATILE_CACHE", str(tmp_path / "cache"))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "unused.c").write_text("int f(int x) { int unused; return x; }\n")
    sources = census.corpus_sources(corpus)
    with pytest.raises(census.CompileFailed, match=r"unused\.c -O0 does not compile cleanly"
                                                   r"(.|\n)*unused variable"):
        census.compile_corpus(sources, census.cache_directory(sources, census.zig_version()))
    assert not list((tmp_path / "cache").rglob("*.o"))   # nothing half-made is cached


def test_cache_key_changes_with_sources_and_zig_version(tmp_path, monkeypatch):
    monkeypatch.setenv("ZATILE_CACHE", str(tmp_path))
    source = tmp_path / "kernel.c"
    source.write_text("void f(void) {}\n")
    first = census.cache_directory([source], "0.17.1")
    assert first.parent == tmp_path / "corpus"
    assert census.cache_directory([source], "0.17.1") == first
    assert census.cache_directory([source], "0.17.2") != first
    source.write_text("void f(void) { }\n")
    assert census.cache_directory([source], "0.17.1") != first


# --- the classifier on planted words -----------------------------------------------------------

PLANTED_OBJDUMP = """
planted.o:     file format elf64-littleaarch64


Disassembly of section .text.kernel:

0000000000000000 <kernel>:
   0:\t2598e3e0 \tptrue\tp0.s
   4:\t80810000 \tfmopa\tza0.s, p0/m, p0/m, z0.s, z1.s
   8:\td65f03c0 \tret
   c:\td503457f \tsmstart\tza
  10:\t64832041 \tfcmla\tz1.s, p0/m, z2.s, z3.s, #90
  14:\t4ea18400 \tadd\tv0.4s, v0.4s, v1.4s
  18:\t05c04900 \tmov\tz0.s, #0xff800000
  1c:\t25b8c000 \tmov\tz0.s, #0
  20:\te0bf0040 \tst1w\t{za0h.s[w12, 0]}, p0, [x2, xzr, lsl #2]
  24:\t54ffff41 \tb.ne\t20 <kernel+0x20>  // b.any
"""


def test_objdump_lines_are_parsed_with_section_and_offset():
    instructions = census.parse_objdump(PLANTED_OBJDUMP, "planted.c", "-O2")
    assert len(instructions) == 10
    assert {i.section for i in instructions} == {".text.kernel"}
    fcmla = instructions[4]
    assert (fcmla.offset, fcmla.word, fcmla.mnemonic, fcmla.operands) == \
        (0x10, 0x64832041, "fcmla", "z1.s, p0/m, z2.s, z3.s, #90")
    assert instructions[-1].operands == "20 <kernel+0x20>"
    assert fcmla.place == "planted.c -O2 .text.kernel+0x10"


def test_words_are_classified_by_encoding():
    assert census.encoding_class(0x2598E3E0) == "SVE"     # ptrue p0.s
    assert census.encoding_class(0x04BF5800) == "SVE"     # rdsvl x0, #0: SME, in the SVE space
    assert census.encoding_class(0x80810000) == "SME"     # fmopa
    assert census.encoding_class(0xE0BF0040) == "SME"     # st1w (tile slice)
    for other in (0xD65F03C0, 0xD503457F, 0x4EA18400, 0x54FFFF41, 0x00000000):
        assert census.encoding_class(other) is None       # ret, smstart, NEON add, b.ne, udf


@pytest.mark.parametrize("operands, shape", [
    ("{za0h.s[w12, 0]}, p0, [x2, xzr, lsl #2]", "{zah.s[w, i]}, p, [x, x, lsl #2]"),
    ("za3.s, p1/m, p2/m, z4.b, z5.b", "za.s, p/m, p/m, z.b, z.b"),
    ("z0.s, p7/m, za1v.s[w13, 3]", "z.s, p/m, zav.s[w, i]"),
    ("{z1.s}, p1/z, [x0, #-3, mul vl]", "{z.s}, p/z, [x, #i, mul vl]"),
    ("sp, sp, #-2", "x, x, #i"),
    ("x9, all, mul #4", "x, pat, mul #i"),
    ("p0.s, vl64", "p.s, pat"),
    ("z2.s, #0xff800000", "z.s, #mask"),
    ("z2.s, #-1, lsl #8", "z.s, #i, lsl #8"),
    ("z2.s, #1.000000000000000000e+00", "z.s, #i"),
    ("s0, p0, z1.s", "s, p, z.s"),
    ("z3.s, z4.s[2]", "z.s, z.s[i]"),
])
def test_operand_shapes(operands, shape):
    assert census.operand_shape(operands) == shape


def test_census_of_planted_words_reports_what_the_table_lacks():
    instructions = census.parse_objdump(PLANTED_OBJDUMP, "planted.c", "-O2")
    # a word objdump names differently from zatile's table counts as missing too
    renamed = census.Instruction("other.c", "-O1", ".text", 0x40, 0x25B8C000, "fmov", "z0.s, #0.0")
    forms = {form.name: form for form in census.take_census([*instructions, renamed])}
    assert set(forms) == {
        "ptrue p.s", "fmopa za.s, p/m, p/m, z.s, z.s",
        "fcmla z.s, p/m, z.s, z.s, #i",
        "mov z.s, #mask", "mov z.s, #i", "st1w {zah.s[w, i]}, p, [x, x, lsl #2]", "fmov z.s, #i"}
    assert forms["ptrue p.s"].space == "SVE"
    assert forms["fmopa za.s, p/m, p/m, z.s, z.s"].space == "SME"
    implemented = {name for name, form in forms.items() if form.status == "implemented"}
    assert implemented == {"ptrue p.s", "fmopa za.s, p/m, p/m, z.s, z.s", "mov z.s, #i",
                           "mov z.s, #mask", "st1w {zah.s[w, i]}, p, [x, x, lsl #2]"}
    fcmla = forms["fcmla z.s, p/m, z.s, z.s, #i"]
    assert fcmla.status == "missing"
    assert [(i.file, i.opt, i.section, i.offset) for i in fcmla.missing] == \
        [("planted.c", "-O2", ".text.kernel", 0x10)]
    assert fcmla.as_json()["missing_examples"] == [
        {"file": "planted.c", "opt": "-O2", "section": ".text.kernel", "offset": 0x10,
         "word": "64832041"}]
    # DUPM is in the table under its own mnemonic and prints as objdump's mov
    assert forms["mov z.s, #mask"].missing == []
    fmov = forms["fmov z.s, #i"]
    assert fmov.status == "missing" and fmov.decoded_as == {"mov"}
    assert fmov.missing[0].place == "other.c -O1 .text+0x40"
    counts = census.summary(list(forms.values()))
    assert counts["SVE"]["forms"] == 5 and counts["SVE"]["forms_implemented"] == 3
    assert counts["SME"] == {"forms": 2, "forms_implemented": 2, "mnemonics": 2,
                             "mnemonics_fully_implemented": 2, "instructions": 2}


def test_a_partly_decoded_form_is_partial():
    good = census.Instruction("a.c", "-O0", ".text", 0, 0x25B8C000, "mov", "z0.s, #0")
    # the same printed shape from a word the table names differently (FDUP: fmov z0.s, #2.0)
    other = census.Instruction("a.c", "-O3", ".text", 8, 0x25B9C000, "mov", "z0.s, #0")
    (form,) = census.take_census([good, other])
    assert form.status == "partial" and [i.offset for i in form.missing] == [8]


def test_missing_tools_give_one_error_line(monkeypatch, capsys):
    monkeypatch.setattr(census, "tool_problem", lambda: "the ziglang package is not installed")
    assert census.main(["--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "zatile: error: the ziglang package is not installed\n"


def test_json_output_lists_the_same_missing_forms(corpus_census, capsys):
    assert census.main(["--json", "--missing"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {form["form"] for form in report["forms"]} == NOT_IMPLEMENTED
    assert report["summary"]["all"]["forms"] == len(corpus_census[1])
