"""Errors a user can cause, reported as one line and exit status 2."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path


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


def output_folder(path: str | Path, option: str, given: str | Path | None = None) -> Path:
    """The folder an option writes into, made before any work starts; UsageError naming it when it cannot be."""
    folder, given = Path(path).expanduser(), path if given is None else given
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{option} {given}: {folder} is a file, not a folder; give a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a parent that is a file, no permission, a read-only file system
        raise UsageError(
            f"{option} {given}: cannot make the folder {folder} ({exc.strerror}); give one you can write"
        ) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {given}: the folder {folder} is not writable; give one you can write")
    return folder


def output_file(path: str | Path, option: str) -> Path:
    """A file an option writes, its folder made before any work starts; UsageError when it cannot be written there."""
    target = Path(path).expanduser()
    if target.is_dir():
        raise UsageError(f"{option} {path} is a directory; give a file name such as {target / 'results.json'}")
    output_folder(target.parent, option, given=path)
    return target
