"""Shared core of the course: device facts, event timing, the results record,
nsys exports, plots and command-line plumbing. The lessons and the grader import it."""

import sys

__all__ = ["UsageError"]

# jsonschema checks the "iri" string formats with rfc3987_syntax where it is installed (jupyter-events' extra brings
# it in), and importing that compiles 38 Lark grammars: 1.6 s of CPU in every process that reads a notebook
# (nbformat imports jsonschema), a grading child or command line among them. Nothing the course runs checks those
# formats, so its processes go without: jsonschema leaves a format it cannot check unchecked. A process that imported
# it before the course (a Jupyter server) keeps it.
sys.modules.setdefault("rfc3987_syntax", None)

from labcore.errors import UsageError  # noqa: E402
