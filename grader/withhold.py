"""Reference answers withheld from a copy of the lesson packages: the student bundle's and the grading sandbox's.

A lesson keeps the reference answer to each exercise for its own runs in the instructors' checkout (the pipelined
schedule it measures, the cost model it plots, the grader's live checks, which time against the reference). No
copy that students' code can run or read holds them: grader.bundle writes both the bundle's packages and the
sandbox's through this module, in which

- every Python function decorated `@reference` (labcore.answers.reference) has its body replaced by
  `return recorded_reference(module, name, locals())`, which answers only a call the bundle's lesson made on the
  shipped profile with the result the checkout recorded, and raises ReferenceWithheld otherwise (the sandbox has
  no record); its signature, decorators and docstring stay, so every module imports;
- every region of a CUDA file between a line holding `BEGIN REFERENCE` and one holding `END REFERENCE`
  becomes one comment line.

Only source text is read and written here; nothing of the lessons is imported (grader has no lesson imports).
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

from labcore.errors import UsageError

MARKER = "reference"
CUDA_SUFFIXES = (".cu", ".cuh", ".h")
CUDA_REGION = re.compile(r"^[^\n]*BEGIN REFERENCE[^\n]*\n.*?^[^\n]*END REFERENCE[^\n]*$", re.M | re.S)
WITHHELD_CUDA = "// (the reference is withheld: it is an exercise's answer)"
STUB = "recorded_reference"  # labcore.answers' function that a withheld body calls


def _is_marker(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return (isinstance(target, ast.Name) and target.id == MARKER) or (
        isinstance(target, ast.Attribute) and target.attr == MARKER
    )


def reference_bodies(text: str, where: str) -> list[tuple[int, int, int, str]]:
    """(first body line after any docstring, last line, its indent, qualified name) of each @reference function."""
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
    return found


def withhold_python(text: str, where: str, module: str = "") -> tuple[str, list[str]]:
    """(the module with every @reference body replaced, the qualified names withheld)."""
    found = reference_bodies(text, where)
    lines = text.splitlines(keepends=True)
    for first, last, indent, name in sorted(found, reverse=True):
        lines[first - 1 : last] = [" " * indent + f"return {STUB}({module!r}, {name!r}, locals())\n"]
    if found:
        lines.append(f"\n\nfrom labcore.answers import {STUB}  # noqa: E402 (added by grader.withhold)\n")
    return "".join(lines), [name for *_, name in found]


def withhold_cuda(text: str) -> tuple[str, int]:
    """(the CUDA source with every reference region replaced by a comment, how many regions)."""
    return CUDA_REGION.subn(WITHHELD_CUDA, text)


def reference_lines(text: str, where: str) -> list[str]:
    """The lines a withheld copy must not hold: each @reference body's (docstring left out) or reference region's,
    stripped, those that say something (not blank, a lone brace or bracket, `pass`, a comment alone)."""
    if where.endswith(".py"):
        lines = text.splitlines()
        held = [line for first, last, _, _ in reference_bodies(text, where) for line in lines[first - 1 : last]]
    else:
        held = [line for region in CUDA_REGION.findall(text) for line in region.splitlines()[1:-1]]
    stripped = (line.strip() for line in held)
    return [
        s for s in stripped if s and s != "pass" and not re.fullmatch(r"[\W_]+", s) and not s.startswith(("#", "//"))
    ]


def write_withheld(package: str, src: Path, files: list[Path], into: Path) -> list[str]:
    """Copy one package's files (from its folder src) into the folder into, references withheld; the names of what
    was withheld. Data files (a lesson's profiles) are copied as they are."""
    withheld: list[str] = []
    for path in files:
        target = into / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".py":
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
