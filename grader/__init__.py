"""The course's nbgrader plumbing: `python -m grader` generates the student release, validates it, and
sets up, autogrades, gives feedback on and exports an instructor's grading directory (see grader.cli)."""

import labcore  # noqa: F401  (first: what it leaves out of every process, grading children included)
