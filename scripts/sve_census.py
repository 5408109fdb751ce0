"""Census of the SVE and SME instructions compiled ACLE code uses, against zatile's ISA table.

Every C file of ``tests/corpus/`` is compiled with the ``ziglang`` package's clang
(``python -m ziglang cc -c --target=aarch64-linux-musl -mcpu=generic+sme``) at -O0, -O1, -O2
and -O3. The objects are kept in the project's build cache,
``${ZATILE_CACHE:-.zatile-cache}/corpus/<key>``, where the key hashes the sources, the flags and the zig version, so a rerun only disassembles. Every
executable section is disassembled with ``aarch64-linux-gnu-objdump -d`` and each instruction
word is classified by its A64 top-level encoding (op0 = bits [28:25]): op0 = 0b0010 is the SVE
space (which also holds RDVL, RDSVL, ADDSVL and ADDSPL), op0 = 0b0000 with bit 31 set is the SME
space. Everything else (scalar, Advanced SIMD, and the system instructions SMSTART/SMSTOP and
MRS/MSR SVCR) is left out.

An instruction form is its mnemonic as objdump prints it plus the shape of its operands, with
register numbers and immediate values abstracted but element sizes, predication (``/z``, ``/m``)
and addressing kept: ``ld1w {z.s}, p/z, [x, x, lsl #2]``; ``#mask`` is a bitmask immediate
(printed in hex), ``#i`` any other immediate. A form is implemented when zatile's
table (:func:`zatile.sw.arch.isa.decode`) decodes every word of it and prints the same mnemonic.

Run ``python scripts/sve_census.py`` for a table, ``--json`` for the same as JSON, and
``--missing`` to list only what zatile does not implement. tests/test_sve_corpus.py imports this
file and keeps the list of unimplemented forms as a ratchet.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zatile.sim.tools import ToolMissing, find_tool
from zatile.sw.arch.isa import decode, form_text

__all__ = ["CORPUS", "OPT_LEVELS", "COMPILE_FLAGS", "Instruction", "Form", "CompileFailed",
           "tool_problem", "zig_version", "corpus_sources", "cache_directory", "compile_corpus",
           "parse_objdump", "disassemble", "encoding_class", "operand_shape", "take_census",
           "run_census", "main"]

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus"
OPT_LEVELS = ("-O0", "-O1", "-O2", "-O3")
COMPILE_FLAGS = ("-c", "--target=aarch64-linux-musl", "-mcpu=generic+sme",
                 "-Wall", "-Wextra", "-Werror")
#: Bump when the way objects are made changes (invalidates every cached object).
_RECIPE = 1


@dataclass(frozen=True)
class Instruction:
    """One disassembled instruction of a corpus object."""

    file: str          # the corpus source, e.g. "gemm_f32.c"
    opt: str           # "-O2"
    section: str       # ".text"
    offset: int        # byte offset in the section
    word: int
    mnemonic: str      # as objdump prints it
    operands: str      # as objdump prints it, comments removed

    @property
    def place(self) -> str:
        return f"{self.file} {self.opt} {self.section}+0x{self.offset:x}"


@dataclass
class Form:
    """One SVE or SME instruction form of the corpus and where it occurs."""

    space: str         # "SVE" or "SME"
    mnemonic: str
    shape: str
    count: int = 0
    places: dict[str, set[str]] = field(default_factory=dict)   # file -> opt levels
    missing: list[Instruction] = field(default_factory=list)    # words zatile does not decode
    decoded_as: set[str] = field(default_factory=set)          # other mnemonics it decoded to

    @property
    def name(self) -> str:
        return f"{self.mnemonic} {self.shape}".rstrip()

    @property
    def status(self) -> str:
        """"implemented", "missing" (no word decodes) or "partial" (some words decode)."""
        if not self.missing:
            return "implemented"
        return "missing" if len(self.missing) == self.count else "partial"

    def where(self) -> str:
        return ", ".join(f"{file} {','.join(o.lstrip('-') for o in sorted(opts))}"
                         for file, opts in sorted(self.places.items()))

    def as_json(self) -> dict:
        return {
            "space": self.space, "mnemonic": self.mnemonic, "shape": self.shape,
            "form": self.name, "count": self.count, "status": self.status,
            "places": {file: sorted(opts) for file, opts in sorted(self.places.items())},
            "decoded_as": sorted(self.decoded_as),
            "missing_examples": [{"file": i.file, "opt": i.opt, "section": i.section,
                                  "offset": i.offset, "word": f"{i.word:08x}"}
                                 for i in self.missing[:3]],
        }


class CompileFailed(RuntimeError):
    """A corpus file did not compile cleanly."""


# --- tools and compilation --------------------------------------------------------------------

def tool_problem() -> str | None:
    """Why the census cannot run here (ziglang or objdump missing), or None."""
    if importlib.util.find_spec("ziglang") is None:
        return "the ziglang package is not installed (pip install ziglang)"
    try:
        find_tool("objdump")
    except ToolMissing as missing:
        return str(missing)
    return None


def _zig(*arguments: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ziglang", *arguments], cwd=cwd,
                          capture_output=True, text=True, check=False)


def zig_version() -> str:
    """The version of the installed ziglang package's compiler, e.g. ``"0.17.1"``."""
    result = _zig("version")
    if result.returncode != 0:
        raise CompileFailed(f"python -m ziglang version failed: {result.stderr.strip()}")
    return result.stdout.strip()


def corpus_sources(corpus: Path = CORPUS) -> list[Path]:
    """The corpus's C files, sorted by name."""
    return sorted(corpus.glob("*.c"))


def cache_directory(sources: Sequence[Path], version: str) -> Path:
    """Where the objects of ``sources`` compiled by zig ``version`` are kept."""
    digest = hashlib.sha256(f"recipe {_RECIPE}\nzig {version}\n".encode())
    for flag in (*COMPILE_FLAGS, *OPT_LEVELS):
        digest.update(f"flag {flag}\n".encode())
    for source in sources:
        digest.update(f"source {source.name} {len(source.read_bytes())}\n".encode())
        digest.update(source.read_bytes())
    base = Path(os.environ.get("ZATILE_CACHE") or CORPUS.parent.parent / ".zatile-cache")
    return base / "corpus" / digest.hexdigest()[:20]


def _object_name(source: Path, opt: str) -> str:
    return f"{source.stem}{opt}.o"


def compile_corpus(sources: Sequence[Path], cache: Path) -> dict[tuple[str, str], Path]:
    """Compile every source at every level in :data:`OPT_LEVELS` (reusing cached objects).

    Returns
    -------
    dict
        (source file name, opt level) -> object path.

    Raises
    ------
    CompileFailed
        If a file does not compile or warns; the message has the compiler's output.
    """
    cache.mkdir(parents=True, exist_ok=True)
    objects = {}
    for source in sources:
        for opt in OPT_LEVELS:
            target = cache / _object_name(source, opt)
            if not target.exists():
                partial = target.with_suffix(f".tmp{os.getpid()}.o")
                result = _zig("cc", *COMPILE_FLAGS, opt, str(source), "-o", str(partial),
                              cwd=source.parent)
                if result.returncode != 0:
                    partial.unlink(missing_ok=True)
                    raise CompileFailed(f"{source.name} {opt} does not compile cleanly:\n"
                                        f"{result.stderr.strip()}")
                os.replace(partial, target)   # atomic: a concurrent run sees all or nothing
            objects[source.name, opt] = target
    return objects


# --- disassembly and classification -------------------------------------------------------------

_SECTION = re.compile(r"^Disassembly of section (\S+):$")
_INSTRUCTION = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f]{8}) \t(\S+)(?:\t(.*))?$")


def parse_objdump(text: str, file: str, opt: str) -> list[Instruction]:
    """The instructions of ``objdump -d`` output (one object's)."""
    instructions, section = [], "?"
    for line in text.splitlines():
        if match := _SECTION.match(line):
            section = match[1]
        elif match := _INSTRUCTION.match(line):
            operands = re.sub(r"\s*(//|;).*$", "", match[4] or "")
            instructions.append(Instruction(file, opt, section, int(match[1], 16),
                                            int(match[2], 16), match[3], operands.strip()))
    return instructions


def disassemble(objects: dict[tuple[str, str], Path]) -> list[Instruction]:
    """Every instruction in the executable sections of ``objects``."""
    objdump = find_tool("objdump")
    instructions = []
    for (file, opt), path in sorted(objects.items()):
        text = subprocess.run([objdump, "-d", str(path)], capture_output=True, text=True,
                              check=True).stdout
        instructions += parse_objdump(text, file, opt)
    return instructions


def encoding_class(word: int) -> str | None:
    """"SVE" or "SME" by the A64 top-level encoding of ``word``; None for anything else."""
    op0 = (word >> 25) & 0xF
    if op0 == 0b0010:
        return "SVE"
    if op0 == 0b0000 and word >> 31:
        return "SME"
    return None


_SHAPE_RULES = (
    (re.compile(r"<[^>]*>"), ""),                                  # symbol annotations
    (re.compile(r"\bza\d*([hv]?)\.([bhsdq])"), r"za\1.\2"),        # tiles and tile slices
    (re.compile(r"\bz\d+\b"), "z"),
    (re.compile(r"\bp\d+\b"), "p"),
    (re.compile(r"\b(?:x\d+|xzr|sp)\b"), "x"),
    (re.compile(r"\b(?:w\d+|wzr|wsp)\b"), "w"),
    (re.compile(r"\b([bhsdqv])\d+\b"), r"\1"),                     # scalar FP/SIMD registers
    (re.compile(r"\b(?:pow2|vl\d+|mul[34]|all)\b"), "pat"),         # predicate patterns
    # binutils prints bitmask immediates (DUPM, AND/ORR/EOR #imm) in hex, all others in decimal
    (re.compile(r"(?<!lsl )#-?0x[0-9a-f]+"), "#mask"),
    (re.compile(r"(?<!lsl )#[-+]?[0-9.]+(?:e[-+]?\d+)?"), "#i"),
    (re.compile(r"(?<=[\[,] )\d+(?=\])|(?<=\[)\d+(?=\])"), "i"),  # slice and element indexes
)


def operand_shape(operands: str) -> str:
    """``operands`` with register numbers and immediate values abstracted.

    >>> operand_shape("{za0h.s[w12, 0]}, p0, [x2, xzr, lsl #2]")
    '{zah.s[w, i]}, p, [x, x, lsl #2]'
    """
    for pattern, replacement in _SHAPE_RULES:
        operands = pattern.sub(replacement, operands)
    return operands.strip()


def take_census(instructions: Iterable[Instruction]) -> list[Form]:
    """The SVE and SME forms among ``instructions``, each with its status in zatile's table.

    Sorted by space, then mnemonic, then shape.
    """
    forms: dict[tuple[str, str, str], Form] = {}
    for instruction in instructions:
        space = encoding_class(instruction.word)
        if space is None:
            continue
        key = (space, instruction.mnemonic, operand_shape(instruction.operands))
        form = forms.setdefault(key, Form(*key))
        form.count += 1
        form.places.setdefault(instruction.file, set()).add(instruction.opt)
        decoded = decode(instruction.word)
        # the mnemonic zatile prints (a preferred alias such as mov for DUPM or ORR included)
        printed = None if decoded is None else form_text(decoded).split("\t")[0]
        if printed != instruction.mnemonic:
            form.missing.append(instruction)
            if printed is not None:
                form.decoded_as.add(printed)
    return [forms[key] for key in sorted(forms)]


def run_census(corpus: Path = CORPUS) -> tuple[dict, list[Form]]:
    """Compile (or reuse), disassemble and classify the corpus.

    Returns
    -------
    tuple
        (facts about the run: zig version, flags, cache directory, object count; the forms).
    """
    sources = corpus_sources(corpus)
    version = zig_version()
    cache = cache_directory(sources, version)
    objects = compile_corpus(sources, cache)
    forms = take_census(disassemble(objects))
    facts = {"zig": version, "flags": list(COMPILE_FLAGS), "opt_levels": list(OPT_LEVELS),
             "sources": [s.name for s in sources], "objects": len(objects), "cache": str(cache)}
    return facts, forms


def summary(forms: Sequence[Form]) -> dict:
    """Counts of distinct forms (and mnemonics) used and implemented, per space."""
    result = {}
    for space in ("SVE", "SME", "all"):
        chosen = [f for f in forms if space in ("all", f.space)]
        implemented = [f for f in chosen if f.status == "implemented"]
        result[space] = {
            "forms": len(chosen), "forms_implemented": len(implemented),
            "mnemonics": len({f.mnemonic for f in chosen}),
            "mnemonics_fully_implemented": len({f.mnemonic for f in implemented}
                                               - {f.mnemonic for f in chosen
                                                  if f.status != "implemented"}),
            "instructions": sum(f.count for f in chosen),
        }
    return result


def _table(facts: dict, shown: Sequence[Form], forms: Sequence[Form]) -> str:
    width = max((len(f.name) for f in shown), default=4)
    lines = [f"zig {facts['zig']} cc {' '.join(facts['flags'])} {'/'.join(facts['opt_levels'])}: "
             f"{len(facts['sources'])} files, {facts['objects']} objects ({facts['cache']})", "",
             f"{'space':5}  {'status':11}  {'count':>5}  {'form':{width}}  where"]
    for form in shown:
        decodes_as = f"  [decodes as {'/'.join(sorted(form.decoded_as))}]" if form.decoded_as else ""
        lines.append(f"{form.space:5}  {form.status:11}  {form.count:5}  {form.name:{width}}  "
                     f"{form.where()}{decodes_as}")
    lines.append("")
    for space, counts in summary(forms).items():
        lines.append(f"{space}: {counts['forms']} forms ({counts['mnemonics']} mnemonics, "
                     f"{counts['instructions']} instructions); zatile implements "
                     f"{counts['forms_implemented']} forms")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sve_census.py", description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--missing", action="store_true",
                        help="only the forms zatile does not implement")
    arguments = parser.parse_args(argv)
    problem = tool_problem()
    if problem:
        print(f"zatile: error: {problem}", file=sys.stderr)
        return 2
    try:
        facts, forms = run_census()
    except CompileFailed as failure:
        print(f"zatile: error: {failure}", file=sys.stderr)
        return 1
    shown = [f for f in forms if f.status != "implemented"] if arguments.missing else forms
    if arguments.json:
        print(json.dumps({**facts, "summary": summary(forms),
                          "forms": [f.as_json() for f in shown]}, indent=1))
    else:
        print(_table(facts, shown, forms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
