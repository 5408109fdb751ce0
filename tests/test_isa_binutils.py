"""Proof of the ISA table against the binutils 2.40 oracle.

* ≥ 10,000 random valid instructions (every form, random operands): our assembler produces the
  bytes ``aarch64-linux-gnu-as`` produces, and our disassembler the text objdump prints.
* ≥ 100,000 random words from the encoding space of the subset: we and objdump agree on which
  are valid instructions of the subset.
"""

import random
import subprocess

import pytest

from zatile.sw.arch.asm import AsmError, assemble_line, disassemble, parse_program
from zatile.sim.binutils import gnu_assemble, gnu_disassemble
from zatile.sw.arch.isa import FORMS, decode
from tests.conftest import need_tool
from tests.test_isa import OUT_OF_RANGE, random_instance

#: objdump behaviours that are not the architecture's (docs/isa.md, "Disassembly conventions"); each is a
#: predicate over (word, objdump text). Nothing else may differ.
BINUTILS_QUIRKS = {
    # objdump ignores bit 16 (Q) of MOVA for B/H/S/D; Q=1 with size != 11 is unallocated.
    "mova-q-bit": lambda word, text: word & 0xFF3E0000 in (0xC0000000, 0xC0020000, 0xC0400000,
                                                           0xC0420000, 0xC0800000, 0xC0820000,
                                                           0xC0C00000, 0xC0C20000)
    and word & 0x00010000 and text.startswith("mov\t"),
    # MSR SVCRxx with a reserved CRm prints as a generic system-register write.
    "svcr-reserved-crm": lambda word, text: word & 0xFFFFF0FF == 0xD503407F
    and text.startswith("msr\ts0_3_c4_c"),
}


@pytest.fixture(scope="module")
def tools():
    need_tool("as")
    need_tool("objdump")
    need_tool("objcopy")


def test_random_instructions_match_binutils_bytes_and_text(tools):
    rng = random.Random(2026)
    per_form = -(-10_000 // len(FORMS))
    words = [random_instance(form, rng) for form in FORMS for _ in range(per_form)]
    assert len(words) >= 10_000
    texts = [disassemble(word) for word in words]
    assert [assemble_line(text) for text in texts] == words
    gnu_words = gnu_assemble(texts)
    mismatched = [(t, f"{w:08x}", f"{g:08x}") for t, w, g in zip(texts, words, gnu_words) if w != g]
    assert not mismatched, mismatched[:10]
    gnu_texts = gnu_disassemble(words)
    differing = [(f"{w:08x}", ours, theirs)
                 for w, ours, theirs in zip(words, texts, gnu_texts) if ours != theirs]
    assert not differing, differing[:10]


def _encoding_space_words(rng, count):
    """Words near the subset: mutated form values and random words under the subset's top bytes."""
    top_bytes = sorted({form.value >> 24 for form in FORMS})
    words = []
    for index in range(count):
        if index % 2:
            form = rng.choice(FORMS)
            word = random_instance(form, rng)
            for _ in range(rng.randint(1, 3)):
                word ^= 1 << rng.randrange(32)
        else:
            word = rng.choice(top_bytes) << 24 | rng.getrandbits(24)
        words.append(word)
    return words


def test_random_words_agree_with_binutils_on_validity(tools):
    rng = random.Random(99)
    words = _encoding_space_words(rng, 100_000)
    gnu_texts = gnu_disassemble(words)
    problems, quirks_seen = [], {name: 0 for name in BINUTILS_QUIRKS}
    for word, theirs in zip(words, gnu_texts):
        ours_valid = decode(word) is not None
        theirs_valid = not theirs.endswith("undefined")
        if ours_valid:
            if disassemble(word) != theirs:
                problems.append((f"{word:08x}", disassemble(word), theirs))
            continue
        if not theirs_valid:
            continue
        quirk = next((name for name, applies in BINUTILS_QUIRKS.items() if applies(word, theirs)),
                     None)
        if quirk:
            quirks_seen[quirk] += 1
            continue
        # objdump decoded something outside the subset: our assembler must not claim that text.
        try:
            claimed = assemble_line(theirs.replace("\t", " "))
        except AsmError:
            continue
        problems.append((f"{word:08x}", "unsupported", theirs, f"we assemble it to {claimed:08x}"))
    assert not problems, problems[:10]
    assert all(quirks_seen.values()), quirks_seen


STATEMENTS = ("smstart ; zero {za}\n"
              "// a comment line\n"
              "  # a line comment\n"
              "rdsvl x0, #1 // a trailing comment\n"
              " ; ;\n"
              "smstop za;smstop\n")


def test_statements_and_comments_follow_gnu_as():
    need_tool("as")
    program = parse_program(STATEMENTS)
    assert [instruction.word for instruction in program] == gnu_assemble([STATEMENTS])
    assert [(instruction.line, instruction.text) for instruction in program] == [
        (1, "smstart"), (1, "zero {za}"), (4, "rdsvl x0, #1"), (6, "smstop za"), (6, "smstop")]


@pytest.mark.parametrize("line", ["smstart # not a comment here", "smstart @ not a comment"])
def test_what_gnu_as_rejects_is_an_error_naming_the_line(line):
    need_tool("as")
    with pytest.raises(subprocess.CalledProcessError):
        gnu_assemble(["smstop", line])
    with pytest.raises(AsmError, match="^line 2: "):
        parse_program(f"smstop\n{line}\n")


def test_operands_we_call_out_of_range_gnu_as_rejects_too():
    need_tool("as")
    for line in OUT_OF_RANGE:
        with pytest.raises(subprocess.CalledProcessError):
            gnu_assemble([line])


@pytest.mark.parametrize("line, message", [
    (".word 5", "directive '.word' is not supported"),
    ("loop:", "labels are not supported"),
    ("loop: smstart", "labels are not supported"),
])
def test_what_gnu_as_accepts_but_a_program_may_not_hold_is_an_error_naming_the_line(line,
                                                                                   message):
    need_tool("as")
    gnu_assemble(["smstop", line])                         # valid to GNU as
    with pytest.raises(AsmError, match=f"^line 2: {message}"):
        parse_program(f"smstop\n{line}\n")


def test_assemble_line_takes_one_instruction():
    with pytest.raises(AsmError, match="one instruction expected"):
        assemble_line("smstart ; zero {za}")
