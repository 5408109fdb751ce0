"""The docs/ folder is where the code's architecture facts are cited from.

Every citation of the form ``docs/<file>.md, "<Section title>"`` must name an existing file and a
heading in it, and nothing cites the reference notes that are not in the repository.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Folders that are not the project's own text: version control, virtualenvs, caches, build output
#: (as in .gitignore).
NOT_SEARCHED = re.compile(r"\.git|\.venv.*|__pycache__|\.pytest_cache|\.hypothesis|build|dist"
                          r"|sim_build.*|\.zatile-cache|.*\.egg-info")
#: The kinds of file searched; "" is a file without suffix (Makefile, .ci/run).
SUFFIXES = {".py", ".md", ".s", ".S", ".c", ".h", ".toml", ".sh", ".txt", ".cfg", ".ini", ".yml",
            ".yaml", ""}

CITATION = re.compile(r'docs/([\w-]+\.md),?\s+"([^"]+)"')
#: The reference notes outside the repository, by name or by their bare section numbers.
EXTERNAL = re.compile(r"sme-(?:isa|abi|software)\.md|§\s?\d[\d.]*")
HEADING = re.compile(r"^#+\s+(.*?)\s*$", re.M)


def _project_files(root: Path) -> list[Path]:
    """Every file of the project below ``root``, except this test's own planted examples."""
    files = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(name for name in subfolders if not NOT_SEARCHED.fullmatch(name))
        files.extend(Path(folder) / name for name in sorted(names)
                     if Path(name).suffix in SUFFIXES)
    return sorted(path for path in files if path.resolve() != Path(__file__).resolve())


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


def duplicate_headings(root: Path) -> list[str]:
    """``docs/x.md:line: heading`` for every heading that repeats an earlier one of its file.

    A citation names a section by its heading, so a repeated heading would make it ambiguous.
    """
    duplicates = []
    for doc in sorted((root / "docs").glob("*.md")):
        text = doc.read_text()
        seen = set()
        for match in HEADING.finditer(text):
            if match.group(1) in seen:
                duplicates.append(f"docs/{doc.name}:{_line_of(text, match.start())}: "
                                  f"{match.group(1)}")
            seen.add(match.group(1))
    return duplicates


def test_no_citation_of_notes_outside_the_repository():
    assert external_citations(ROOT) == []


def test_every_docs_citation_names_an_existing_section():
    assert broken_citations(ROOT) == []


def test_headings_are_unique_within_each_doc():
    assert duplicate_headings(ROOT) == []


def test_a_repeated_heading_is_reported_with_its_line(tmp_path):
    root = _planted_tree(tmp_path, "x = 1\n")
    (root / "docs" / "abi.md").write_text("# ABI\n\n## prctl\n\nrules\n\n## prctl\n")
    assert duplicate_headings(root) == ["docs/abi.md:7: prctl"]


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


def test_files_outside_the_code_folders_are_searched_but_not_virtualenvs(tmp_path):
    note = "sme-" + "abi.md"
    root = _planted_tree(tmp_path, "x = 1\n")
    for name in (".ci/run", "__main__.py", "tools/new_folder/check.sh", ".venv/lib/site.py",
                 "zatile.egg-info/PKG-INFO", "sim/__pycache__/planted.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"# see {note}\n")
    assert external_citations(root) == [f".ci/run:1: {note}", f"__main__.py:1: {note}",
                                        f"tools/new_folder/check.sh:1: {note}"]


def test_an_external_citation_is_reported_with_its_line(tmp_path):
    note = "sme-" + "isa.md"
    root = _planted_tree(tmp_path, f"x = 1\n# as in {note} §1.3\n# and (§10.2)\n")
    assert external_citations(root) == [f"sim/planted.py:2: {note}", "sim/planted.py:2: §1.3",
                                        "sim/planted.py:3: §10.2"]
