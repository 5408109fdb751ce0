"""The layout stays true: one ``zatile`` namespace, dependencies one way, no import circles.

docs/architecture.md states the rules this test enforces, reading every import statement of the
project (module-level and function-local) with :mod:`ast`:

* every import of a project module is spelled ``zatile.…`` (never ``hw``, ``sim``, ``tb``, ``sw``);
* ``sw/arch`` imports only ``sw/arch``; ``hw`` imports ``hw`` and ``sw/arch``; ``sim`` imports ``sim``
  and ``sw/arch``; ``tb`` imports ``tb``, ``hw``, ``sim`` and ``sw/arch``; the rest of ``sw`` (the
  top) imports anything; nothing outside ``tests/`` imports a test module;
* the module import graph has no cycle;
* a function-local import of a project module says why on its line or the line above (the only
  accepted reason is start-up time, never a hidden cycle, which the cycle check would see).
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = ("hw", "sim", "tb", "sw")
#: Which layers each layer may import.
ALLOWED = {
    "arch": {"arch"},
    "hw": {"hw", "arch"},
    "sim": {"sim", "arch"},
    "tb": {"tb", "hw", "sim", "arch"},
    "top": {"top", "tb", "hw", "sim", "arch"},
}
TEST_MODULES = {path.stem for path in (ROOT / "tests").glob("*.py")}


@dataclass(frozen=True)
class Import:
    path: Path
    line: int
    target: str           # the imported module (a submodule when ``from P import submodule``)
    local: bool           # inside a function
    explained: bool       # a comment on its line or the line above


def module_name(path: Path) -> str:
    """``zatile.<dotted path>`` of a project source file."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["zatile", *parts])


def layer_of(module: str) -> str:
    parts = module.split(".")
    if parts[1:3] == ["sw", "arch"]:
        return "arch"
    if len(parts) > 1 and parts[1] in ("hw", "sim", "tb"):
        return parts[1]
    return "top"


def project_files() -> list[Path]:
    files = [ROOT / "__init__.py", ROOT / "__main__.py"]
    for directory in PACKAGE_DIRS:
        files += sorted((ROOT / directory).rglob("*.py"))
    return [f for f in files if "__pycache__" not in f.parts]


def _is_module(name: str) -> bool:
    relative = Path(*name.split(".")[1:])
    return (ROOT / relative).with_suffix(".py").exists() or (ROOT / relative / "__init__.py").exists()


def imports_of(path: Path) -> list[Import]:
    source = path.read_text()
    lines = source.splitlines()
    tree = ast.parse(source)
    found = []

    def visit(node, local: bool):
        for child in ast.iter_child_nodes(node):
            inside = local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                line = child.lineno
                explained = "#" in lines[line - 1] or lines[line - 2].strip().startswith("#")
                if isinstance(child, ast.Import):
                    targets = [alias.name for alias in child.names]
                elif child.level:
                    raise AssertionError(f"{path}:{line}: relative import; spell it zatile.…")
                else:
                    base = child.module or ""
                    targets = [f"{base}.{alias.name}" if _is_module(f"{base}.{alias.name}")
                               and base.startswith("zatile") else base
                               for alias in child.names]
                for target in dict.fromkeys(targets):
                    found.append(Import(path, line, target, local, explained))
            visit(child, inside)

    visit(tree, False)
    return found


def project_imports(path: Path) -> list[Import]:
    ours = ("zatile",) + PACKAGE_DIRS + ("tests",)
    return [i for i in imports_of(path) if i.target.split(".")[0] in ours
            or i.target in TEST_MODULES]


def layer_violations(files: list[Path]) -> list[str]:
    """Every import that breaks the rules, as ``path:line: why``."""
    problems = []
    for path in files:
        importer = module_name(path)
        for item in project_imports(path):
            where = f"{path.relative_to(ROOT)}:{item.line}"
            top = item.target.split(".")[0]
            if top != "zatile":
                problems.append(f"{where}: imports {item.target!r}; spell it zatile.… "
                                if top in PACKAGE_DIRS else
                                f"{where}: imports the test module {item.target!r}")
                continue
            allowed = ALLOWED[layer_of(importer)]
            if layer_of(item.target) not in allowed:
                problems.append(f"{where}: {layer_of(importer)} module {importer} imports "
                                f"{layer_of(item.target)} module {item.target}")
            if item.local and not item.explained:
                problems.append(f"{where}: function-local import of {item.target} without a "
                                "comment saying why")
    return problems


def import_cycles(files: list[Path]) -> list[list[str]]:
    """Strongly connected components (of more than one module, or self-loops) of the graph."""
    graph: dict[str, set[str]] = {}
    for path in files:
        importer = module_name(path)
        graph.setdefault(importer, set())
        for item in project_imports(path):
            if item.target.startswith("zatile") and item.target != importer:
                graph[importer].add(item.target)
    index, low, stack, on_stack, cycles, counter = {}, {}, [], set(), [], [0]

    def connect(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for successor in graph.get(node, ()):
            if successor not in index:
                connect(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in list(graph):
        if node not in index:
            connect(node)
    return cycles


def test_every_project_import_follows_the_layers():
    problems = layer_violations(project_files())
    assert not problems, "\n".join(problems)


def test_there_are_no_import_cycles():
    cycles = import_cycles(project_files())
    assert not cycles, "\n".join(" <-> ".join(cycle) for cycle in cycles)


def test_scripts_import_the_package_not_the_folders():
    problems = layer_violations(sorted((ROOT / "scripts").glob("*.py")))
    # scripts sit at the top: only spelling and test-module imports can be wrong there
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------ the checker catches
def _write(tmp_path: Path, relative: str, text: str) -> Path:
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("relative, text, expected", [
    ("hw/bad.py", "from zatile.sim.model import ReferenceModel\n", "hw module"),
    ("sw/arch/bad.py", "from zatile.hw import engine\n", "arch module"),
    ("sim/bad.py", "import zatile.tb.runner\n", "sim module"),
    ("tb/bad.py", "from zatile.sw.cli import main\n", "tb module"),
    ("sim/old.py", "from sim.state import ArchState\n", "spell it zatile"),
    ("sw/uses_tests.py", "import test_abi_common\n", "test module"),
    ("sw/hidden.py", "def f():\n    from zatile.sw.backends import compare\n",
     "without a comment"),
])
def test_a_planted_violation_is_reported_with_its_place(tmp_path, monkeypatch, relative, text,
                                                       expected):
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    path = _write(tmp_path, relative, text)
    problems = layer_violations([path])
    assert len(problems) == 1 and expected in problems[0], problems
    assert problems[0].startswith(f"{relative}:"), problems


def test_a_planted_cycle_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    a = _write(tmp_path, "sim/a.py", "from zatile.sim import b\n")
    b = _write(tmp_path, "sim/b.py", "def f():\n    import zatile.sim.a  # start-up\n")
    c = _write(tmp_path, "sim/c.py", "import zatile.sim.a\n")
    assert import_cycles([a, b, c]) == [["zatile.sim.a", "zatile.sim.b"]]


def test_the_installed_package_list_is_every_folder_package():
    """pyproject.toml lists each package explicitly (the root is ``zatile``): none missing."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {module_name(init) for directory in PACKAGE_DIRS
               for init in (ROOT / directory).rglob("__init__.py")} | {"zatile"}
    assert config["package-dir"] == {"zatile": "."}
    assert set(config["packages"]) == on_disk
