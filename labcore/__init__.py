"""Shared core of the course: device facts, event timing, the results record,
nsys exports, plots and command-line plumbing. The lessons and the grader import it."""

__all__ = ["UsageError"]

from labcore.errors import UsageError
