"""The course's nbgrader plumbing: `python -m grader` generates the student release, validates it, and
sets up, autogrades, gives feedback on and exports an instructor's grading directory (see grader.cli)."""
