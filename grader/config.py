"""Names and nbgrader settings shared by the course checkout and the instructors' grading directories.

The checkout's own `nbgrader_config.py` (repo root) makes `solutions/` the source and `course/` the
release and keeps every gradebook out of the repository. A grading directory made by
`python -m grader setup DIR` gets a small `nbgrader_config.py` that calls `configure_grading` below, so
plain `nbgrader` commands run in DIR (formgrader included) grade exactly as `python -m grader` does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

SOURCE_DIR = "solutions"  # in the checkout: nbgrader source notebooks
RELEASE_DIR = "course"  # in the checkout: the generated student release
COURSE_ID = "datamove"
CELL_TIMEOUT_S = 120  # per-cell limit while grading; live GPU cells of the labs take well under a minute
GRADEBOOK = "gradebook.db"
GRADING_CONFIG = "nbgrader_config.py"


def run_files_glob(assignment: str) -> str:
    """Names of the files a student's run leaves beside the notebook (kept by grading: see grader.grading)."""
    return f"{assignment}_run*"


def db_url(root: Path) -> str:
    """The sqlite URL of a grading directory's gradebook."""
    return f"sqlite:///{Path(root).resolve() / GRADEBOOK}"


def grading_config_text(root: Path, code: Path, provenance: str) -> str:
    """The nbgrader_config.py written into a grading directory; code is the checkout holding grader/."""
    return (
        f'"""nbgrader configuration of the grading directory {root} (made by `python -m grader setup`)."""\n\n'
        f"# {provenance}\n"
        "import sys\n\n"
        f"sys.path.insert(0, {str(code)!r})  # the course checkout: grader, day54, zero_copy\n\n"
        "from grader.config import configure_grading  # noqa: E402\n\n"
        f"configure_grading(get_config(), root={str(root)!r}, repo={str(code)!r})  # noqa: F821\n"
        "# Local overrides go below, e.g. c = get_config(); c.Execute.timeout = 300\n"
    )


def configure_grading(c: Any, *, root: str, repo: str) -> None:
    """nbgrader settings of a grading directory: its own gradebook, graded timeouts, hidden tests kept hidden."""
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import Execute, GetGrades

    from grader.autograde import ExecuteOrReplay
    from grader.feedback import HideHiddenTests

    c.CourseDirectory.root = root
    c.CourseDirectory.course_id = COURSE_ID
    c.CourseDirectory.db_url = db_url(Path(root))
    c.Execute.timeout = CELL_TIMEOUT_S
    c.Execute.interrupt_on_timeout = True  # a timed-out cell is interrupted and fails; the next cells still run
    defaults = Autograde.class_traits()["autograde_preprocessors"].default()
    c.Autograde.autograde_preprocessors = [ExecuteOrReplay if pp is Execute else pp for pp in defaults]
    c.GenerateFeedback.preprocessors = [GetGrades, CSSHTMLHeaderPreprocessor, HideHiddenTests]
    _prepend_pythonpath(repo)


def _prepend_pythonpath(repo: str) -> None:
    """Kernels started by nbgrader inherit this, so notebooks import the checkout's packages."""
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if repo not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([repo, *parts])
