"""The structure site/architecture.md promises: one import direction, no cycles, a lesson imports no other one; and
the page's rules a lesson follows, each cited by the tests that check it.

(The lesson shape and the one list of lessons: tests/test_shape.py.)"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from labcore.lessons import TESTS_DIR, names

ROOT = Path(__file__).resolve().parents[1]
LESSONS = names()
BENCHMARKS_DIR = "benchmarks"  # a lesson's benchmark scripts, run from the checkout
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
            if {TESTS_DIR, BENCHMARKS_DIR} & set(path.relative_to(root / package).parts):
                continue  # a lesson's own tests and benchmarks, no modules of it (tests/test_shape.py keeps them to it)
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
    """labcore <- lessons <- grader, imports at the top, no cycles: site/architecture.md holds (Lesson rule 7 on the
    architecture page)."""
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
    """The project's text files: what git does not ignore (tracked or new), else every file but the usual leftovers;
    a scratch file git ignores is nobody's document."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True
    )
    found = (
        [ROOT / line for line in listed.stdout.splitlines()]
        if listed.returncode == 0
        else [p for p in ROOT.rglob("*") if not {".venv", "build", ".git"} & set(p.relative_to(ROOT).parts)]
    )
    return [
        p
        for p in found
        if p.suffix in {".py", ".md", ".ipynb", ".cu", ".sh"}
        and p.is_file()
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


# -- the rules a lesson follows: each on the page, each cited by a test that checks it -----------------------------

RULES_HEADING = "## The rules a lesson follows"
CITATION = re.compile(r"Lesson rules? (\d+(?:(?:, | and |, and )\d+)*) on the architecture page")


def lesson_rules(page: str) -> dict[int, str]:
    """{number: rule} of the page's numbered list under RULES_HEADING (to the next heading)."""
    section = page.split(RULES_HEADING, 1)[1].split("\n## ", 1)[0] if RULES_HEADING in page else ""
    return {int(m[1]): m[2] for m in re.finditer(r"^(\d+)\. (.+)$", section, re.M)}


def rule_citations(paths: list[Path]) -> dict[int, list[str]]:
    """{rule number: ['file::test', ...]} of every test function whose docstring cites a lesson rule."""
    cited: dict[int, list[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                doc = " ".join((ast.get_docstring(node) or "").split())
                for match in CITATION.finditer(doc):
                    for number in re.findall(r"\d+", match[1]):
                        cited.setdefault(int(number), []).append(f"{path.name}::{node.name}")
    return cited


def rule_problems(rules: dict[int, str], cited: dict[int, list[str]]) -> list[str]:
    """Rules numbered out of order, rules no test cites, and citations of a rule the page does not have."""
    problems = [] if list(rules) == list(range(1, len(rules) + 1)) else [f"rules numbered {list(rules)}"]
    problems += [f"rule {n} is cited by no test: {rule}" for n, rule in rules.items() if n not in cited]
    problems += [f"{w} cites rule {n}, not on the page" for n, at in cited.items() if n not in rules for w in at]
    return problems


def test_every_lesson_rule_is_cited_by_a_test_and_every_citation_is_a_rule():
    """The architecture page's rules a lesson follows are numbered 1, 2, ...; each is cited ("Lesson rule N on the
    architecture page") by the docstring of at least one test, in tests/ or a lesson's tests/, and every test that
    cites a rule cites one the page has."""
    rules = lesson_rules((ROOT / "site" / "architecture.md").read_text())
    tests = sorted((ROOT / "tests").glob("test_*.py")) + sorted(
        p for name in LESSONS for p in (ROOT / name / TESTS_DIR).glob("test_*.py")
    )
    assert len(rules) >= 10
    assert rule_problems(rules, rule_citations(tests)) == []


def test_the_rule_check_finds_an_uncited_rule_and_a_stray_citation(tmp_path):
    """Not vacuous: a rule no test cites, a citation of a rule that is not there and a gap in the numbers are found;
    a citation wrapped over two lines of a docstring is read."""
    page = f"# A\n\n{RULES_HEADING}\n\n1. One.\n2. Two.\n4. Four.\n\n## Next\n\n5. Not a rule.\n"
    (tmp_path / "test_x.py").write_text(
        'def test_a():\n    """Checks (Lesson rules 1 and\n    4 on the architecture page)."""\n\n\n'
        'def test_b():\n    """Lesson rule 9 on the architecture page."""\n\n\n'
        'def helper():\n    """Lesson rule 2 on the architecture page (not a test)."""\n'
    )
    rules, cited = lesson_rules(page), rule_citations([tmp_path / "test_x.py"])
    assert rules == {1: "One.", 2: "Two.", 4: "Four."}
    assert cited == {1: ["test_x.py::test_a"], 4: ["test_x.py::test_a"], 9: ["test_x.py::test_b"]}
    assert rule_problems(rules, cited) == [
        "rules numbered [1, 2, 4]",
        "rule 2 is cited by no test: Two.",
        "test_x.py::test_b cites rule 9, not on the page",
    ]


DRAWS_NOTHING = """
import runpy, sys
sys.argv = [sys.argv[1]]
try:
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
except SystemExit as exc:
    assert not exc.code, exc.code
print(sorted(name for name in sys.modules if name.split(".")[0] == "matplotlib")[:3])
"""


def test_a_lesson_command_that_draws_nothing_never_imports_matplotlib():
    """`python -m <lesson>` without --plot (here: the shipped profile replayed) never imports matplotlib: labcore.plots
    imports it when the first figure is made. It is 0.6 s of CPU a command, most of a bad option's cost."""
    for lesson in LESSONS:
        done = subprocess.run([sys.executable, "-c", DRAWS_NOTHING, lesson], capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.splitlines()[-1] == "[]", (lesson, done.stdout.splitlines()[-1])
