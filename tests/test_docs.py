"""The docs/ folder is where the code's architecture facts are cited from.

Every citation of the form ``docs/<file>.md, "<Section title>"`` must name an existing file and a
heading in it, and nothing cites the reference notes that are not in the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: What is searched for citations: the project's own text, not its virtualenv or build output.
SEARCHED = ("hw", "sim", "tb", "sw", "tests", "scripts", "docs", "README.md", "Makefile",
            "pyproject.toml")
SUFFIXES = {".py", ".md", ".s", ".c", ".toml", ""}

CITATION = re.compile(r'docs/([\w-]+\.md),?\s+"([^"]+)"')
#: The reference notes outside the repository, by name or by their bare section numbers.
EXTERNAL = re.compile(r"sme-(?:isa|abi|software)\.md|§\s?\d[\d.]*")
HEADING = re.compile(r"^#+\s+(.*?)\s*$", re.M)


def _project_files(root: Path) -> list[Path]:
    """The searched files below ``root``, except this test's own planted examples."""
    files = []
    for name in SEARCHED:
        path = root / name
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files.extend(p for p in sorted(path.rglob("*"))
                         if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts)
    return [path for path in files if path.resolve() != Path(__file__).resolve()]


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def external_citations(root: Path) -> list[str]:
    """``file:line: text`` for every mention of the out-of-repository reference notes."""
    found = []
    for path in _project_files(root):
        text = path.read_text(errors="replace")
        for match in EXTERNAL.finditer(text):
            found.append(f"{path.relative_to(root)}:{_line_of(text, match.start())}: "
                         f"{match.group(0)}")
    return found


def broken_citations(root: Path) -> list[str]:
    """``file:line: docs/x.md "heading"`` for every citation whose file or heading is missing.

    A heading may be split across lines in the citing text (a wrapped comment or docstring).
    """
    headings: dict[str, set[str]] = {}
    for doc in (root / "docs").glob("*.md"):
        headings[doc.name] = set(HEADING.findall(doc.read_text()))
    broken = []
    for path in _project_files(root):
        text = path.read_text(errors="replace")
        for match in CITATION.finditer(text):
            name = match.group(1)
            title = re.sub(r"\s*\n\s*(?:#\s*)?", " ", match.group(2)).strip()
            if title not in headings.get(name, set()):
                problem = "no such file" if name not in headings else "no such section"
                broken.append(f"{path.relative_to(root)}:{_line_of(text, match.start())}: "
                              f'docs/{name} "{title}" ({problem})')
    return broken


def test_no_citation_of_notes_outside_the_repository():
    assert external_citations(ROOT) == []


def test_every_docs_citation_names_an_existing_section():
    assert broken_citations(ROOT) == []


def test_the_docs_cover_what_the_code_cites():
    cited = set()
    for path in _project_files(ROOT):
        cited.update(match.group(1) for match in CITATION.finditer(path.read_text(errors="replace")))
    assert {"isa.md", "abi.md", "divergences.md"} <= cited
    assert (ROOT / "docs" / "architecture.md").is_file()


def test_every_divergence_has_its_section():
    from zatile.sim.divergences import DIVERGENCES

    sections = set(HEADING.findall((ROOT / "docs" / "divergences.md").read_text()))
    assert {divergence.id for divergence in DIVERGENCES} <= sections


def _planted_tree(tmp_path: Path, source: str) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "isa.md").write_text("# ISA\n\n## Tile mapping\n\ntext\n")
    (tmp_path / "sim").mkdir()
    (tmp_path / "sim" / "planted.py").write_text(source)
    return tmp_path


def test_a_bad_section_and_a_missing_file_are_reported_with_their_line(tmp_path):
    root = _planted_tree(tmp_path, '"""Rows (docs/isa.md, "Tile mapping").\n\n'
                                   'Slices (docs/isa.md, "Tile\n   mappings"); docs/abi.md, "prctl"\n"""\n')
    assert broken_citations(root) == [
        'sim/planted.py:3: docs/isa.md "Tile mappings" (no such section)',
        'sim/planted.py:4: docs/abi.md "prctl" (no such file)',
    ]


def test_a_wrapped_citation_of_an_existing_section_is_accepted(tmp_path):
    root = _planted_tree(tmp_path, '# the rule (docs/isa.md, "Tile\n# mapping") says so\n')
    assert broken_citations(root) == []


def test_an_external_citation_is_reported_with_its_line(tmp_path):
    note = "sme-" + "isa.md"
    root = _planted_tree(tmp_path, f"x = 1\n# as in {note} §1.3\n# and (§10.2)\n")
    assert external_citations(root) == [f"sim/planted.py:2: {note}", "sim/planted.py:2: §1.3",
                                        "sim/planted.py:3: §10.2"]
