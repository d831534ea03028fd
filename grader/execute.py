"""`python -m grader.execute IN OUT --timeout S`: execute a notebook to the end and write it with its outputs.

The one way grading executes a notebook, in two places (grader.sandbox): inside the sandbox, on the student's
notebook, and in the trusted checker, on the notebook of test cells it builds. It is nbgrader's Execute as the
course configures it (grader.preprocessors.ExecuteToTheEnd): each cell has the time limit, a cell past it is
interrupted and gets an error naming it, a lost kernel ends the run with the reason in that cell and NotRun in
every later one. The working directory is the notebook's folder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

from grader.preprocessors import ExecuteToTheEnd


def execute(source: Path, out: Path, timeout_s: int) -> None:
    """Execute source in its folder; write the executed notebook to out."""
    nb = nbformat.read(source, as_version=4)
    executor = ExecuteToTheEnd(timeout=timeout_s, interrupt_on_timeout=True)
    executor.preprocess(nb, {"metadata": {"path": str(source.parent)}})
    nbformat.write(nb, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.execute", description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--timeout", type=int, required=True, help="seconds per cell")
    args = parser.parse_args(argv)
    execute(args.source, args.out, args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
