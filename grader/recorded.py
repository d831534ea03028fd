"""`python -m grader.recorded [--show] RELEASE LESSON...`: what the lessons show from their references, recorded.

grader.bundle runs it in the instructors' checkout, offline, with labcore.answers.RECORD_ENV naming a folder: each
release notebook's cells but its test cells run here in order (the lesson replays the shipped profile; the
exercises are the release's stubs), and then `python -m <lesson>`; every reference they call files its result
there, and figures that need a reference are saved there. The student bundle ships that folder, so the lesson runs
to its end with no reference in it. A lesson cell that raises fails the whole run (exit 1, naming the cell).
`--show` prints what each cell printed and where the lesson's modules came from (tests run a bundle's release so).
"""

from __future__ import annotations

import contextlib
import io
import runpy
import sys
from pathlib import Path

from grader import cells
from grader.program import grade_id, is_solution


def _recorded_cells(notebook: Path) -> list[tuple[str, str, bool]]:
    """(name, source, whether it is an exercise) of every code cell but the graded test cells."""
    import nbformat  # seconds to import; only this command needs it

    found = []
    for index, cell in enumerate(nbformat.read(notebook, as_version=4).cells):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and not meta.get("grade"):
            found.append((grade_id(cell) or f"#{index + 1}", cell.source, is_solution(cell)))
    return found


def record(release: Path, lesson: str, ip: object, show: bool = False) -> str | None:
    """Run one lesson's release cells and its command; what failed, or None."""
    cells.fresh_namespace(ip)
    for count, (name, source, exercise) in enumerate(_recorded_cells(release / lesson / f"{lesson}.ipynb"), 1):
        outputs = cells.run_cell(ip, source, count)
        errors = [o for o in outputs if o["output_type"] == "error"]
        if show:
            print(f"-- {name}\n" + "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream"))
        if errors and not exercise:
            return f"{lesson}: cell {name} raised {errors[0]['ename']}: {errors[0]['evalue'][:200]}"
    argv = sys.argv
    try:
        sys.argv = [lesson]
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_module(lesson, run_name="__main__", alter_sys=True)
    except SystemExit as ended:
        if ended.code not in (0, None):
            return f"python -m {lesson} exited {ended.code}"
    finally:
        sys.argv = argv
    if show:
        print("modules:", " ".join(m.__file__ or "" for n, m in sorted(sys.modules.items()) if n.startswith(lesson)))
    return None


def main(argv: list[str]) -> int:
    show = argv[:1] == ["--show"]
    release, lessons = Path(argv[show]), argv[show + 1 :]
    ip = cells.shell()
    for lesson in lessons:
        problem = record(release, lesson, ip, show)
        if problem:
            print(problem, file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
