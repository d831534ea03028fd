"""The student's side, as a student meets it: the bundle's release notebooks with answers pasted in, run in the
bundle's own install, each graded cell read back as a verdict (passed, pending a GPU, or not passed).

`python tests/student_side.py BUNDLE PYTHON [--answers right|stubs]` prints one line a graded cell; the tests
(tests/test_student_side.py) and the GPU session (benchmarks/h200.sh student-side) call the same functions.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKERS = re.compile(r"^\s*#+\s*(BEGIN|END) SOLUTION\s*$")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
CELL_S = 600


@dataclass(frozen=True)
class Verdict:
    """One graded cell of a run: its grade id, points and what it showed."""

    lesson: str
    cell: str
    points: float
    state: str  # passed | pending | failed
    text: str  # what the cell printed (its verdict lines, ANSI codes removed)

    def line(self) -> str:
        first = self.text.strip().splitlines()
        shown = " | ".join(first[:3]) if first else ""
        return f"{self.lesson:9} {self.cell:28} {self.points:4.1f}  {self.state:8} {shown[:240]}"


def solution_text(source: str) -> str:
    """A solution cell's source with nbgrader's markers dropped (the stub above a region stays, the region after it
    wins: `X = stub` then `X = answer`)."""
    return "".join(line for line in source.splitlines(keepends=True) if not MARKERS.match(line))


def _nbgrader(cell: dict) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def with_answers(release: dict, solutions: dict) -> dict:
    """The release notebook with every solution cell's source taken from the lesson's solutions notebook."""
    answers = {
        _nbgrader(c)["grade_id"]: solution_text("".join(c["source"]))
        for c in solutions["cells"]
        if _nbgrader(c).get("solution")
    }
    out = json.loads(json.dumps(release))
    for cell in out["cells"]:
        grade_id = _nbgrader(cell).get("grade_id")
        if _nbgrader(cell).get("solution") and grade_id in answers:
            cell["source"] = answers[grade_id]
    return out


# The runner goes without rfc3987_syntax, as the course's own processes do (labcore/__init__.py): 1.4 s of CPU
# a run otherwise, for a format check nothing here uses. With a second notebook (argv[5]), once every cell has run
# the runner takes that notebook's sources and runs again, in the same kernel, every cell from the first exercise
# on: a student who ran the release, wrote answers and ran the exercises again (the lesson never reads them).
RUNNER = r"""
import json, sys
sys.modules["rfc3987_syntax"] = None
import nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
client = NotebookClient(nb, timeout=int(sys.argv[3]), allow_errors=True, kernel_name="python3",
                        resources={"metadata": {"path": sys.argv[4]}})
if len(sys.argv) < 6:
    client.execute()
    nbformat.write(nb, sys.argv[2])
    raise SystemExit
then = nbformat.read(sys.argv[5], as_version=4)
first = next(i for i, c in enumerate(nb.cells) if {"solution", "grade"} & set(c.metadata.get("nbgrader", {})))
with client.setup_kernel():
    for index, cell in enumerate(nb.cells):
        client.execute_cell(cell, index)
    nbformat.write(nb, sys.argv[2])
    client.nb = then
    for index in range(first, len(then.cells)):
        client.execute_cell(then.cells[index], index)
nbformat.write(then, sys.argv[2] + ".then")
"""


def run_notebook(
    python: str, notebook: dict, folder: Path, env: dict[str, str] | None = None, then: dict | None = None
) -> dict | tuple[dict, dict]:
    """Execute `notebook` with `python`'s kernel in `folder` (the bundle's notebook folder copy); the executed one.
    With `then`, also `then`'s cells from the first exercise on, in the same kernel: both executed notebooks."""
    src, out = folder / "answered.ipynb", folder / "executed.ipynb"
    src.write_text(json.dumps(notebook))
    argv = [python, "-c", RUNNER, str(src), str(out), str(CELL_S), str(folder)]
    if then is not None:
        (folder / "then.ipynb").write_text(json.dumps(then))
        argv.append(str(folder / "then.ipynb"))
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=CELL_S * 4)
    if done.returncode != 0:
        raise RuntimeError(f"executing {src} failed: " + "\n".join(done.stderr.strip().splitlines()[-8:]))
    if then is None:
        return json.loads(out.read_text())
    return json.loads(out.read_text()), json.loads(Path(f"{out}.then").read_text())


def _shown(outputs: list[dict]) -> str:
    parts = []
    for out in outputs:
        if out.get("output_type") == "stream":
            parts.append("".join(out.get("text", "")))
        elif out.get("output_type") == "error":
            parts.append("\n".join(out.get("traceback", [])) or f"{out.get('ename')}: {out.get('evalue')}")
        elif "data" in out and "text/plain" in out["data"]:
            parts.append("".join(out["data"]["text/plain"]))
    return ANSI.sub("", "\n".join(parts))


def verdicts(lesson: str, executed: dict) -> list[Verdict]:
    """The graded code cells' verdicts: failed where the cell ended in an error, pending where it said pending; and
    every lesson cell that raised, as "raised" (a lesson runs to its end; an exercise's stub may raise)."""
    found = []
    for index, cell in enumerate(executed["cells"]):
        meta = _nbgrader(cell)
        if cell["cell_type"] != "code":
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        text = _shown(cell.get("outputs", []))
        if not meta.get("grade"):
            if errors and not meta.get("solution"):  # a lesson cell: an exercise's stub may raise, a lesson never
                name = meta.get("grade_id") or cell.get("id") or f"#{index}"
                found.append(Verdict(lesson, name, 0.0, "raised", text))
            continue
        pending = any(o.get("ename") == "PendingGPU" for o in errors)
        state = "pending" if pending else "failed" if errors else "passed"
        found.append(Verdict(lesson, meta["grade_id"], float(meta.get("points", 0)), state, text))
    return found


def with_edits(notebook: dict, edits: dict[str, str]) -> dict:
    """The notebook with the solution cells named (by grade id) holding other sources (wrong answers)."""
    out = json.loads(json.dumps(notebook))
    cells = {_nbgrader(c).get("grade_id"): c for c in out["cells"] if _nbgrader(c).get("solution")}
    unknown = sorted(set(edits) - set(cells))
    assert not unknown, f"no exercise cells {unknown}"
    for grade_id, source in edits.items():
        cells[grade_id]["source"] = source
    return out


def _release(bundle: Path, lesson: str, answers: str, edits: dict[str, str] | None) -> dict:
    release = json.loads((bundle / "notebooks" / lesson / f"{lesson}.ipynb").read_text())
    if answers == "right":
        solutions = json.loads((ROOT / lesson / "solutions" / f"{lesson}.ipynb").read_text())
        release = with_answers(release, solutions)
    return with_edits(release, edits or {})


@contextlib.contextmanager
def _lesson_folder(bundle: Path, lesson: str, keep: Path | None) -> Iterator[Path]:
    """A scratch copy of the lesson's notebook folder (its files but the notebook); copied to keep/lesson after."""
    with tempfile.TemporaryDirectory(prefix=f"student-{lesson}-") as scratch:
        folder = Path(scratch)
        for path in (bundle / "notebooks" / lesson).iterdir():
            if path.is_file() and path.suffix != ".ipynb":
                (folder / path.name).write_bytes(path.read_bytes())
        try:
            yield folder
        finally:
            if keep is not None:
                shutil.copytree(folder, keep / lesson, dirs_exist_ok=True)


def student_run(
    bundle: Path,
    python: str,
    lesson: str,
    answers: str = "right",
    keep: Path | None = None,
    env: dict | None = None,
    edits: dict[str, str] | None = None,
) -> list[Verdict]:
    """One lesson of the bundle run in `python` (the bundle's install), with the right answers or the stubs, then
    `edits` (exercise cells by grade id); `keep`: a folder to copy the notebook's folder into afterwards."""
    with _lesson_folder(bundle, lesson, keep) as folder:
        executed = run_notebook(python, _release(bundle, lesson, answers, edits), folder, env)
        return verdicts(lesson, executed)  # type: ignore[arg-type]


def stubs_then_answers(
    bundle: Path, python: str, lesson: str, edits: dict[str, str], env: dict | None = None
) -> tuple[list[Verdict], list[Verdict]]:
    """The untouched release run whole, then, in the same kernel, its exercises again with the right answers and
    `edits` (a student who ran everything, then wrote answers): each pass's verdicts."""
    with _lesson_folder(bundle, lesson, None) as folder:
        untouched, answered = _release(bundle, lesson, "stubs", None), _release(bundle, lesson, "right", edits)
        first, then = run_notebook(python, untouched, folder, env, then=answered)
        return verdicts(lesson, first), verdicts(lesson, then)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", type=Path)
    parser.add_argument("python")
    parser.add_argument("--answers", choices=("right", "stubs"), default="right")
    parser.add_argument("--lesson", action="append")
    parser.add_argument("--keep", type=Path, help="copy each lesson's notebook folder here after its run")
    args = parser.parse_args()
    listed = (args.bundle / "labcore" / "lessons.txt").read_text().splitlines()
    lessons = args.lesson or [x.strip() for x in listed if x.strip() and not x.startswith("#")]
    states: dict[str, int] = {}
    for lesson in lessons:
        for verdict in student_run(args.bundle, args.python, lesson, args.answers, args.keep):
            print(verdict.line(), flush=True)
            states[verdict.state] = states.get(verdict.state, 0) + 1
    print("graded cells: " + ", ".join(f"{n} {state}" for state, n in sorted(states.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
