"""`python -m zero_copy`: see zero_copy.cli."""

from labcore.errors import run_cli
from zero_copy.cli import main

raise SystemExit(run_cli(main))
