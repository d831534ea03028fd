"""Errors a user can cause, reported as one line and exit status 2."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence


class UsageError(Exception):
    """Bad input: an option, a file or a machine that cannot do the job."""


def run_cli(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None) -> int:
    """Run a command's main; turn a UsageError into one line on stderr and exit 2."""
    try:
        return main(argv)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `... | head` closed the pipe: not an error of ours
        sys.stdout = open(os.devnull, "w")  # keep Python from failing again at exit
        return 0
