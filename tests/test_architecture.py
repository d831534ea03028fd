"""The structure site/architecture.md promises: one import direction, no cycles, a lesson imports no other one.

(The lesson shape and the one list of lessons: tests/test_shape.py.)"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from labcore.lessons import TESTS_DIR, names

ROOT = Path(__file__).resolve().parents[1]
LESSONS = names()
PACKAGES = ("labcore", *LESSONS, "grader")


def allowed(lessons: tuple[str, ...]) -> dict[str, set[str]]:
    """Who may import whom: labcore <- lessons <- grader <- notebooks. A lesson imports no other lesson."""
    return {
        "labcore": {"labcore"},
        "grader": {"labcore", "grader"},
        **{lesson: {"labcore", lesson} for lesson in lessons},
    }


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def imports(root: Path, packages: tuple[str, ...]) -> dict[str, list[tuple[str, bool, int]]]:
    """module -> [(imported project module, at module level?, line)] for every .py file of `packages`."""
    found: dict[str, list[tuple[str, bool, int]]] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if TESTS_DIR in path.relative_to(root / package).parts:
                continue  # a lesson's own tests (tests/test_shape.py keeps them to their lesson)
            module = _module_name(path, root)
            tree = ast.parse(path.read_text(), filename=str(path))
            top = set(map(id, tree.body))
            edges = []
            for node in ast.walk(tree):
                targets: list[str] = []
                if isinstance(node, ast.Import):
                    targets = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = _resolve(node, module, path.name == "__init__.py")
                    targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
                for target in targets:
                    if target.split(".")[0] in packages:
                        edges.append((target, id(node) in top, node.lineno))
            found[module] = edges
    return found


def _known(target: str, modules: set[str]) -> str | None:
    """The project module an import names ('day54.config.PassKey' -> 'day54.config'), or None."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def violations(root: Path, packages: tuple[str, ...], allowed: dict[str, set[str]]) -> list[str]:
    """Imports against the direction, function-level imports of the project, and import cycles."""
    graph = imports(root, packages)
    modules = set(graph)
    problems, edges = [], {m: set() for m in modules}
    for module, found in graph.items():
        for target, at_top, line in found:
            owner, wanted = module.split(".")[0], target.split(".")[0]
            if wanted not in allowed[owner]:
                problems.append(f"{module}:{line} imports {target} ({owner} may import only {sorted(allowed[owner])})")
            if not at_top:
                problems.append(f"{module}:{line} imports {target} inside a function")
            known = _known(target, modules)
            if known and known != module:
                edges[module].add(known)
    # Packages import their parents' __init__ implicitly; only module-to-module edges make cycles here.
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                problems.append("import cycle: " + " -> ".join([*path[path.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for module in sorted(modules):
        if module not in state:
            visit(module, [module])
    return problems


def test_imports_follow_the_direction_and_make_no_cycle():
    """labcore <- lessons <- grader, imports at the top, no cycles: site/architecture.md holds."""
    assert violations(ROOT, PACKAGES, allowed(LESSONS)) == []


def test_the_check_catches_a_wrong_import_a_late_import_and_a_cycle(tmp_path):
    """The architecture check above is not vacuous: each kind of violation is reported, a lesson importing another
    lesson among them; a lesson's own tests are not its modules."""
    for package, files in {
        "labcore": {"__init__.py": "", "a.py": "from lesson_a import b\n"},
        "lesson_a": {
            "__init__.py": "",
            "b.py": "from lesson_a import c\n",
            "c.py": "def f():\n    from lesson_a import b\n",
            "tests/test_b.py": "import grader\nfrom lesson_b import d\n",
        },
        "lesson_b": {"__init__.py": "", "d.py": "from lesson_a import b\n"},
        "grader": {"__init__.py": "", "g.py": "import lesson_a.b\n"},
    }.items():
        for name, text in files.items():
            (tmp_path / package / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / package / name).write_text(text)
    found = violations(tmp_path, ("labcore", "lesson_a", "lesson_b", "grader"), allowed(("lesson_a", "lesson_b")))
    assert any(p.startswith("labcore.a:1 imports lesson_a") for p in found)
    assert any(p.startswith("grader.g:1 imports lesson_a.b") for p in found)
    assert any("lesson_a.c:2 imports lesson_a inside a function" in p for p in found)
    assert any(p.startswith("import cycle:") and "lesson_a.b" in p and "lesson_a.c" in p for p in found)
    assert any(p.startswith("lesson_b.d:1 imports lesson_a.b (lesson_b may import only") for p in found)
    assert not [p for p in found if "tests" in p], found


def _project_files() -> list[Path]:
    tracked = [p for p in ROOT.rglob("*") if p.is_file() and p.suffix in {".py", ".md", ".ipynb", ".cu", ".sh"}]
    return [
        p
        for p in tracked
        if not {".venv", "build", ".git"} & set(p.relative_to(ROOT).parts)
        and "egg-info" not in str(p)
        and p != Path(__file__).resolve()
    ]  # this file spells the patterns


def test_no_file_names_a_document_that_is_not_in_the_repository():
    """References to .md documents resolve inside the repository; no seed texts or issue numbers are cited."""
    names = {p.name for p in ROOT.rglob("*.md") if ".venv" not in p.parts}
    problems = []
    for path in _project_files():
        text = path.read_text(errors="replace")
        for match in re.finditer(r"\b([A-Za-z][\w-]*\.md)\b", text):
            if match[1] not in names:
                problems.append(f"{path.relative_to(ROOT)}: names {match[1]}")
        for match in re.finditer(r"\b(seed \d{3}|seeds/|issue \d+|DESIGN\b|STYLE\b)", text):
            problems.append(f"{path.relative_to(ROOT)}: cites {match[1]!r}")
    assert problems == []
