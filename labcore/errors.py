"""Errors a user can cause, reported as one line and exit status 2 (130 for Ctrl-C), never a traceback."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

# Folders output_folder made for the command running now, outermost first: a command that fails removes those still
# empty, so that a refused run leaves nothing behind (run_cli)
_MADE: list[Path] = []


class UsageError(Exception):
    """Bad input: an option, a file or a machine that cannot do the job."""


def require_listed(name: str, listed: Sequence[str], refusal: str, listing: str = "there are") -> None:
    """UsageError unless `name` is one of `listed`: the refusal, then what the valid names are."""
    if name not in listed:
        raise UsageError(f"{refusal}; {listing}: {', '.join(listed) or 'none'}")


def run_cli(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None) -> int:
    """Run a command's main; turn a UsageError (or an OSError no check foresaw) into one line on stderr and exit 2,
    Ctrl-C into 'error: interrupted' and 130. A command that fails removes the output folders it made while they are
    still empty."""
    _MADE.clear()
    status = 1
    try:
        status = main(argv)
        return status
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # what no check foresaw: a disk that filled, a folder that turned read-only on the way
        if isinstance(exc, BrokenPipeError):
            sys.stdout = open(os.devnull, "w")  # `... | head` closed the pipe: not an error of ours
            status = 0
            return status
        print(f"error: {os_error_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    finally:
        if status != 0:
            _unmake()


def _unmake() -> None:
    """Remove the folders this command made that are still empty, innermost first."""
    while _MADE:
        with contextlib.suppress(OSError):
            _MADE.pop().rmdir()


def os_error_line(exc: OSError) -> str:
    """An OSError as one line: the file or files it names, and what the system said ('/x/r.json: No space left on
    device')."""
    names = " -> ".join(str(name) for name in (exc.filename, exc.filename2) if name is not None)
    why = exc.strerror or str(exc) or type(exc).__name__
    return f"{names}: {why}" if names else why


def gpu_index(value: str | None, option: str = "--device") -> None:
    """A --device value is a GPU index (0, 1, ...), also where a replay runs on no GPU; UsageError otherwise."""
    if value is not None and not str(value).strip().isdigit():
        raise UsageError(f"{option} {value!r}: not a GPU index; give 0, 1, ... (the GPU's number on this machine)")


def output_folder(path: str | Path, option: str, given: str | Path | None = None) -> Path:
    """The folder an option writes into, made before any work starts; UsageError naming it when it cannot be."""
    folder, given = Path(path).expanduser(), path if given is None else given
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{option} {given}: {folder} is a file, not a folder; give a folder")
    missing = [folder, *(p for p in folder.parents if not p.exists())] if not folder.exists() else []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _MADE.extend(p for p in reversed(missing) if p not in _MADE)
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
    if target.exists() and not os.access(target, os.W_OK):
        raise UsageError(f"{option} {path}: the file {target} is not writable; give one you can write")
    return target
