"""Names the course checkout and the instructors' grading directories share: folders, the per-cell time limit,
the errors grading gives cells.

The checkout's own `nbgrader_config.py` (repo root) makes `course/` the release (the sources are the lessons'
<lesson>/solutions/, handed to nbgrader by grader.course) and keeps every gradebook out of the repository. A
grading directory has its own `nbgrader_config.py` and gradebook (see grader.grading). Importing this module
costs nothing: every command, `python -m grader --help` included, reads these names.
"""

from __future__ import annotations

from pathlib import Path

# A check's "pending a GPU" (labcore.pending raises it; its one home): 0 until graded live, said so everywhere.
from labcore.pending import PENDING_GPU as PENDING_GPU

SOURCE_DIR = "solutions"  # in the checkout: <lesson>/solutions/ holds the lesson's nbgrader source notebook
RELEASE_DIR = "course"  # in the checkout: the generated student release
COURSE_ID = "datamove"
CELL_TIMEOUT_S = 120  # per-cell limit while grading; live GPU cells of the labs take well under a minute
GRADEBOOK = "gradebook.db"
GRADING_CONFIG = "nbgrader_config.py"

# The errors grading gives cells (grader.preprocessors); the autograde table reads them back (grader.autograde).
TIMED_OUT = "CellTimeoutError"  # nbgrader's: the cell ran past the per-cell limit and was interrupted
KERNEL_DIED = "DeadKernelError"  # nbclient's: the kernel process ended while this cell ran
KERNEL_STUCK = "UnresponsiveKernelError"  # nbgrader's: the kernel stopped answering (an interrupt did not end a cell)
NOT_RUN = "NotRun"  # a cell after the one the kernel was lost in
NOT_GRADED = "GradingError"  # every code cell of a notebook that grading left no outputs for
# In a grading directory: what collect skipped of students it took nothing from (grader.status reads it)
SKIPPED_AT_COLLECT = "collect_skipped.json"
# what collect takes and the coordinator reads of a student's files (a real notebook with its figures is a few MB,
# a real run's nsys exports a few MB): past these, one student's files would fill the coordinator's memory
MAX_NOTEBOOK_BYTES = 64 << 20
MAX_RUN_FILE_BYTES = 64 << 20
MAX_RUN_FILES = 64  # a real run leaves 8 (day 54's exports, its record and its schedule)
MAX_RUN_FILES_BYTES = 256 << 20  # all of an assignment's run files together
# the course's notebooks have 38-59 cells; each cell costs the coordinator and nbgrader's recording (the one writer,
# for the whole class) about a millisecond: 200,000 cells held a class of three for four minutes
MAX_NOTEBOOK_CELLS = 2_000
# In a grading directory: each submission's stored result (grader.classgrade), and beside it, while nbgrader could
# not record that student, why (the table, the CSV and the report say it)
STORE = ".grading"
BEFORE_RECORDING = "gradebook-before-recording.db"  # in STORE: the gradebook as it was before the last recording
UNRECORDED = "unrecorded.txt"
# In an autograded notebook's metadata: wall seconds of the sandbox and of the trusted checker (grader.classgrade)
TIMES_KEY = "datamove_grading"
RESTORED = "datamove_restored"  # a cell's metadata key: why grading put the cell or its nbgrader metadata back


def run_files_glob(assignment: str) -> str:
    """Names of the files a student's run leaves beside the notebook (kept by grading: see grader.grading)."""
    return f"{assignment}_run*"


def db_url(root: Path) -> str:
    """The sqlite URL of a grading directory's gradebook."""
    return f"sqlite:///{Path(root).resolve() / GRADEBOOK}"


def unrecorded_note(root: Path, assignment: str, student: str) -> Path:
    """The file saying why nbgrader could not record a student's submission (there while it could not)."""
    return Path(root) / STORE / assignment / student / UNRECORDED
