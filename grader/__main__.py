"""python -m grader: the instructors' command (see grader.cli)."""

import sys

from grader.cli import main
from labcore.errors import run_cli

sys.exit(run_cli(main))
