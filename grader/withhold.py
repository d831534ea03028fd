"""The lesson packages as the grading sandbox sees them: the student bundle's packages, reference answers withheld.

A lesson keeps the reference answer to each exercise for its own runs (the pipelined schedule it measures, the
cost model it plots), and students install it with the bundle. While grading, a student's answer that calls it,
under any name, must not pass. So the sandbox gets a copy of the packages in which:

- every Python function decorated `@reference` (labcore.answers.reference) has its body replaced by
  `raise ReferenceWithheld(...)`; its signature, decorators and docstring stay, so every module imports;
- every region of a CUDA file between a line holding `BEGIN REFERENCE` and one holding `END REFERENCE`
  becomes one comment line.

Only source text is read and written here; nothing of the lessons is imported (grader has no lesson imports).
"""

from __future__ import annotations

import ast
import re
import shutil
import tomllib
from pathlib import Path

from grader.bundle import PROFILES_PACKAGE, shipped_packages
from labcore.errors import UsageError

MARKER = "reference"
CUDA_SUFFIXES = (".cu", ".cuh", ".h")
CUDA_REGION = re.compile(r"^[^\n]*BEGIN REFERENCE[^\n]*\n.*?^[^\n]*END REFERENCE[^\n]*$", re.M | re.S)
WITHHELD_CUDA = "// (the reference is withheld while grading)"
SANDBOX_PACKAGES = ("grader",)  # besides the bundle's: the sandbox runs the notebook with grader.sandboxed


def _is_marker(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return (isinstance(target, ast.Name) and target.id == MARKER) or (
        isinstance(target, ast.Attribute) and target.attr == MARKER
    )


def withhold_python(text: str, where: str, module: str = "") -> tuple[str, list[str]]:
    """(the module with every @reference body replaced, the qualified names withheld)."""
    try:
        tree = ast.parse(text, filename=where)
    except SyntaxError as exc:
        raise UsageError(f"{where}: cannot read it to withhold reference answers ({exc})") from None
    found: list[tuple[int, int, int, str]] = []  # (first body line, last line, indent, name)

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef) and any(_is_marker(d) for d in child.decorator_list):
                    body = child.body
                    keep = 1 if ast.get_docstring(child) is not None and len(body) > 1 else 0
                    first = body[keep] if keep < len(body) else body[0]
                    if first.lineno == child.lineno:
                        raise UsageError(f"{where}: {name} is marked @{MARKER}; give it a body on lines of its own")
                    found.append((first.lineno, child.end_lineno or first.lineno, first.col_offset, name))
                else:
                    visit(child, f"{name}.")

    visit(tree, "")
    lines = text.splitlines(keepends=True)
    for first, last, indent, name in sorted(found, reverse=True):
        stub = " " * indent + f"raise ReferenceWithheld({(module + '.' if module else '') + name!r})\n"
        lines[first - 1 : last] = [stub]
    if found:
        lines.append("\n\nfrom labcore.answers import ReferenceWithheld  # noqa: E402 (added by grader.withhold)\n")
    return "".join(lines), [name for *_, name in found]


def withhold_cuda(text: str) -> tuple[str, int]:
    """(the CUDA source with every reference region replaced by a comment, how many regions)."""
    return CUDA_REGION.subn(WITHHELD_CUDA, text)


def sandbox_library(repo: Path, dest: Path) -> list[str]:
    """Write the sandbox's packages into dest (one folder per import name); the names of what was withheld."""
    main = tomllib.loads((repo / "pyproject.toml").read_text())
    withheld: list[str] = []
    packages = [*shipped_packages(repo, main), *((p, repo / p, sorted(_py_files(repo / p))) for p in SANDBOX_PACKAGES)]
    for package, src, files in packages:
        for path in files:
            target = dest / package / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            if path.suffix == ".py" and package != PROFILES_PACKAGE:
                module = ".".join([package, *path.relative_to(src).with_suffix("").parts]).removesuffix(".__init__")
                text, names = withhold_python(path.read_text(), str(path), module)
                withheld += [f"{module}.{n}" for n in names]
                target.write_text(text)
            elif path.suffix in CUDA_SUFFIXES:
                text, count = withhold_cuda(path.read_text())
                withheld += [f"{package}/{path.relative_to(src).as_posix()}: {count} region(s)"] if count else []
                target.write_text(text)
            else:
                shutil.copy2(path, target)
    return withheld


def _py_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*.py") if "__pycache__" not in p.parts]
