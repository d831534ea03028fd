"""Replays: a lesson's results record from a recorded profile instead of the GPU.

A profile folder holds the nsys CSV exports of a profiled run and the results.json that run wrote. A replay reads
the passes and their timelines from the exports (the NVTX ranges of the lesson's domain and cuda_gpu_trace, checked
for consistency on the way in) and takes from results.json what nsys cannot know: the device, the configuration,
the correctness verdicts and the lesson's extras. A folder with only results.json, or a results.json named
directly, replays the record. A lesson's replay module writes only `from_exports` (what its ranges mean):

    def load_profile(path=None):
        return load(LESSON, path, from_exports, hint=f"; the shipped profile is recorded by `bash {LESSON}/record.sh`")

    shipped_profile = shipped(load_profile)       # parsed once a process; each call a copy the caller may change

and in from_exports: `keys(exports, PassKey.parse, ...)`, `exports.check(text, ops_validator(...))`,
`sweep_total(exports, keys, needed)`, `median_repeats(exports, keys, drawn)`, then `replay_record(...)`.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import stat
import sys
import tempfile
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from labcore import nsys
from labcore import record as rec
from labcore.device import DeviceFacts
from labcore.errors import UsageError
from labcore.exports import Exports, median_instance
from labcore.kit.keys import PassKey
from labcore.profiles import RESULTS, load_companion, load_results, profile_path, require_exports
from labcore.sizes import format_size

COPY_SLACK_BYTES = 1000  # exports print sizes in MB with 3 decimals
REPLAYED_EXPORTS = ("nvtx_pushpop_trace", "cuda_gpu_trace")  # what a replay from exports reads
STAGES = ("h2d", "kernel", "d2h")
TRACE_REPEAT = "trace_repeat"  # record.extra: pass key -> the timed repeat whose timeline the trace holds

FromExports = Callable[[Path, "Path | None"], rec.Record]


def load(
    lesson: str,
    path: str | Path | None,
    from_exports: FromExports,
    *,
    hint: str = "",
    missing: Callable[[], str] | None = None,
    exports: Sequence[str] = REPLAYED_EXPORTS,
) -> rec.Record:
    """Read a profile folder (nsys exports, else results.json) or a results.json into a replay record; `hint`
    ends the line that refuses a folder with neither, `missing()` is the line for a shipped folder with neither;
    `exports` are the nsys exports `from_exports` reads."""
    shipped = path is None
    path = profile_path(lesson, path)
    if path.is_file():
        return load_results(path, lesson)
    require_exports(path, exports)
    companion = path / RESULTS
    if has_exports(path, exports):
        return pickle.loads(_parsed(from_exports, path, companion if companion.exists() else None, _stamp(path)))
    if companion.exists():
        return load_results(companion, lesson)
    if shipped and missing:
        raise UsageError(missing())
    raise UsageError(
        f"--from-profile {path}: neither nsys CSV exports ({', '.join(exports)}) nor a results.json there{hint}"
    )


def _stamp(directory: Path) -> tuple[tuple[str, str], ...]:
    """What a profile folder holds: each file's name and a digest of its bytes (milliseconds for a shipped profile's
    megabytes), so that a changed or added export is parsed anew whatever its times say."""
    return tuple(
        sorted(
            (p.name, hashlib.blake2b(p.read_bytes(), digest_size=16).hexdigest())
            for p in directory.iterdir()
            if p.is_file()
        )
    )


@functools.lru_cache(maxsize=8)
def _parsed(from_exports: FromExports, path: Path, companion: Path | None, stamp: tuple) -> bytes:
    """A profile folder's exports parsed into a record, once per process for each content of the folder (a second or
    more each: a notebook replays the same profile in several cells), kept as pickled bytes so that each caller gets
    a record of its own to change; between processes, the user's cache keeps it (below)."""
    key = _cache_key(from_exports, path, companion, stamp)
    kept = _read_cache(key) if key else None
    if kept is not None:
        return kept
    parsed = pickle.dumps(from_exports(path, companion))
    if key:
        _write_cache(key, parsed)
    return parsed


# The parse kept between processes: every lesson command, notebook kernel and grading worker that replays a profile
# parsed the same exports again (a second or more of CPU each; a grading worker's checker and sandbox parse every
# lesson's on their start). A file per parse under the user's cache folder, named by a digest of what the parse reads
# (the folder's path and files' bytes) and of what parses (labcore's and the lesson's sources, this Python, pandas and
# NumPy): a changed export or a changed parser is parsed anew; only a lesson's shipped profile is kept. Only the
# user's own folder is read (owned by them, writable by no one else, like their ~/.ssh): a pickle is code. A folder
# that cannot be made or written is no cache.
CACHE_ENV = "DATAMOVE_CACHE"  # a folder for the parsed profiles; "off": none
CACHE_MAGIC = b"datamove-replay-1\n"  # then a digest of the pickle (a file cut short or changed is no parse)
DIGEST_BYTES = 32
MAX_KEPT = 32  # parses kept at most (a few a lesson; each changed course code makes new ones): the newest stay


def cache_folder() -> Path | None:
    """Where parsed profiles are kept: $DATAMOVE_CACHE, else the user's cache folder ($XDG_CACHE_HOME or ~/.cache)
    under datamove-course/replay; None when $DATAMOVE_CACHE is "off"."""
    configured = os.environ.get(CACHE_ENV, "")
    if configured == "off":
        return None
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "datamove-course" / "replay"


@functools.cache
def _code_digest(package: str) -> str:
    """A digest of what parses a profile: labcore's and the lesson package's sources (their tests left out), this
    Python and the pandas and NumPy it reads the exports with."""
    digest = hashlib.blake2b(f"{sys.version} {pd.__version__} {np.__version__}".encode(), digest_size=16)
    folders = [Path(__file__).resolve().parents[1], Path(sys.modules[package].__file__).resolve().parent]
    for folder in dict.fromkeys(folders):
        for source in sorted(folder.rglob("*.py")):
            if "tests" not in source.relative_to(folder).parts:
                digest.update(source.relative_to(folder).as_posix().encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


def _cache_key(from_exports: FromExports, path: Path, companion: Path | None, stamp: tuple) -> str | None:
    """The parse's name in the cache; None where nothing is kept: a parser the cache cannot vouch for (one defined
    inside a function, a test's stand-in), a profile that is not the lesson's shipped one (a folder of the reader's
    own, a copy: replayed now and then, it would only fill the cache), or no cache."""
    module, name = getattr(from_exports, "__module__", None), getattr(from_exports, "__qualname__", "<")
    if not module or "<" in name or module.split(".")[0] not in sys.modules or cache_folder() is None:
        return None
    try:
        package = Path(sys.modules[module.split(".")[0]].__file__).resolve().parent
        if not path.resolve().is_relative_to(package):
            return None
        code = _code_digest(module.split(".")[0])
    except (OSError, AttributeError, TypeError):  # a package without source files here: no cache
        return None
    what = repr((module, name, str(path.resolve()), str(companion.resolve()) if companion else None, stamp, code))
    return hashlib.blake2b(what.encode(), digest_size=20).hexdigest()


def _own(folder: Path) -> bool:
    """Whether a folder is the user's alone: theirs, not a link, writable by no one else."""
    try:
        st = folder.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _read_cache(key: str) -> bytes | None:
    """The kept parse, or None: nothing kept, a folder that is not the user's own, a file cut short or changed."""
    folder = cache_folder()
    if folder is None or not _own(folder):
        return None
    try:
        with open(folder / key, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NOFOLLOW)) as kept:
            st = os.fstat(kept.fileno())
            if st.st_uid != os.getuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return None
            data = kept.read()
    except OSError:
        return None
    start = len(CACHE_MAGIC) + DIGEST_BYTES
    head, digest, body = data[: len(CACHE_MAGIC)], data[len(CACHE_MAGIC) : start], data[start:]
    if head != CACHE_MAGIC or hashlib.blake2b(body, digest_size=DIGEST_BYTES).digest() != digest:
        return None
    return body


def _write_cache(key: str, parsed: bytes) -> None:
    """Keep a parse for later processes (whole or not at all: written aside, then renamed); quietly nothing where
    the folder cannot be made or written, or is not the user's own."""
    folder = cache_folder()
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not _own(folder):
            return
        fd, aside = tempfile.mkstemp(dir=folder, prefix=".parse-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(CACHE_MAGIC + hashlib.blake2b(parsed, digest_size=DIGEST_BYTES).digest())
                out.write(parsed)
            os.replace(aside, folder / key)
        except BaseException:
            Path(aside).unlink(missing_ok=True)
            raise
        kept = sorted((p for p in folder.iterdir() if not p.name.startswith(".")), key=_mtime, reverse=True)
        for old in kept[MAX_KEPT:]:  # parses of code long changed: the oldest go
            old.unlink(missing_ok=True)
    except OSError:
        return


def _mtime(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


def has_exports(directory: Path, exports: Sequence[str] = REPLAYED_EXPORTS) -> bool:
    """Whether a folder holds every export a replay reads (a malformed export is an error, not a no)."""
    try:
        found = nsys.find_exports(directory)
    except nsys.NsysFormatError:
        raise
    except UsageError:
        return False
    return set(exports) <= set(found)


def shipped(load_profile: Callable[[], rec.Record]) -> Callable[[], rec.Record]:
    """A function giving the shipped profile's record, parsed once per process (its exports take a second or more
    to read): each call a copy the caller may change, unpickled from the parsed record's bytes (1 ms; a deepcopy
    took 10). Checks read it while grading, for every submission a warm worker grades."""

    @functools.cache
    def parsed_bytes() -> bytes:
        return pickle.dumps(load_profile())

    def shipped_profile() -> rec.Record:
        return pickle.loads(parsed_bytes())

    shipped_profile.__doc__ = "The shipped profile's record, parsed once per process: a copy the caller may change."
    return shipped_profile


def keys(exports: Exports, parse: Callable[[str], Any], lesson: str, form: str) -> dict[str, Any]:
    """Each timed range's text and its parsed key; a range that is not one of the lesson's keys is an error naming
    the export and the expected `form`."""
    parsed = {}
    for text in exports.by_key:
        key = parse(text)
        if key is None:
            raise nsys.NsysFormatError(
                exports.ranges_path, None, f"range {text!r} is not a {lesson} pass (expected {form})"
            )
        parsed[text] = key
    return parsed


def ops_validator(
    kinds: Collection[str], n_chunks: int, window: int, chunks: str, serial_span: bool = False
) -> Callable[[pd.DataFrame], str | None]:
    """Consistency of one instance: n_chunks operations of each kind in `kinds` (none of the others), each copy one
    window; with `serial_span`, one stream's operations adding up to no more than its span. `chunks` describes the
    chunks in the error ('16 chunks of 64MiB')."""

    def validate(ops: pd.DataFrame) -> str | None:
        counts = ops["kind"].value_counts().to_dict()
        for kind in STAGES:
            want = n_chunks if kind in kinds else 0
            if counts.get(kind, 0) != want:
                return f"{counts.get(kind, 0)} {kind} operations, expected {want} ({chunks})"
        sizes = ops.loc[ops["kind"] != "kernel", "bytes"]
        off = sizes[(sizes - window).abs() > COPY_SLACK_BYTES]
        if len(off):
            return f"a copy of {int(off.iloc[0])} bytes, expected {window} (the window)"
        if serial_span and ops["stream"].nunique() == 1:  # one stream runs its operations one after another
            busy = int(ops["duration_ns"].sum())
            span = int(ops["end_ns"].max() - ops["start_ns"].min())
            if busy > span * 1.001:
                return f"one stream's operations add up to {busy / 1e6:.3f} ms, more than its span {span / 1e6:.3f} ms"
        return None

    return validate


def check_window_passes(
    exports: Exports,
    parsed: Mapping[str, PassKey],
    kinds: Callable[[str], Collection[str]],
    total: int,
    serial_span: bool = False,
) -> None:
    """Every pass of a window sweep checked by ops_validator (its kinds by name) at its window of `total`."""
    for text, key in parsed.items():
        n_chunks = total // key.window_bytes
        chunks = f"{n_chunks} chunks of {format_size(key.window_bytes)}"
        exports.check(text, ops_validator(kinds(key.name), n_chunks, key.window_bytes, chunks, serial_span))


def sweep_total(exports: Exports, keys: Iterable[PassKey], needed: Iterable[str]) -> tuple[list[int], int]:
    """A window sweep's windows (those with an 'h2d' component) and the array they all cover; an error names a
    window missing one of the `needed` one-pair passes, or windows that cover different totals."""
    keys = set(keys)
    windows = sorted({k.window_bytes for k in keys if k.name == "h2d"})
    if not windows:
        raise nsys.NsysFormatError(exports.ranges_path, None, "no 'h2d w=... b=1' component ranges")
    for window in windows:
        for name in needed:
            if PassKey(name, window, 1) not in keys:
                raise nsys.NsysFormatError(
                    exports.ranges_path, None, f"no {name!r} range for window {format_size(window)}"
                )
    totals = {w: len(exports.by_key[str(PassKey("h2d", w, 1))][0]) * w for w in windows}
    if len(set(totals.values())) != 1:
        sizes = ", ".join(f"{format_size(w)}: {format_size(t)}" for w, t in totals.items())
        raise nsys.NsysFormatError(exports.trace_path, None, f"windows cover different totals ({sizes})")
    return windows, next(iter(totals.values()))


def window_passes(exports: Exports, parsed: Mapping[str, PassKey]) -> list[rec.PassTimes]:
    """Every pass of a window sweep, its params its window and depth."""
    return [
        exports.pass_times(
            text, key.name, {"window_bytes": key.window_bytes, "buffers": key.buffers}, copy_bytes=key.window_bytes
        )
        for text, key in parsed.items()
    ]


def median_repeats(exports: Exports, drawn: Iterable[str]) -> tuple[dict[str, int], list[rec.Op]]:
    """For each pass drawn on a timeline, the timed repeat whose time is the median, and those repeats' operations
    (timed from their range's start: each timeline ends at the table's median)."""
    repeats = {text: median_instance(exports.elapsed_ms[text]) for text in drawn}
    return repeats, [op for text, instance in repeats.items() for op in exports.ops(text, instance)]


def replay_record(
    lesson: str,
    directory: Path,
    companion: Path | None,
    exports: Exports,
    base: rec.Record | None,
    **fields: Any,
) -> rec.Record:
    """The replay record: `fields` (config, passes, trace, extra) from the exports; the device (else the exports'
    GPU name), the checks and when it was recorded from the run's results.json (`base`) when there is one."""
    return rec.Record(
        lesson=lesson,
        mode="replay",
        source=f"nsys exports in {directory}" + (f" with {companion.name}" if companion else ""),
        device=base.device if base else DeviceFacts(name=exports.device_name),
        checks=base.checks if base else [],
        recorded_at=base.recorded_at if base else "unknown",
        **fields,
    )


def companion_of(companion: Path | None, lesson: str) -> rec.Record | None:
    """The run's results.json beside the exports, if any (UsageError when it records another lesson)."""
    return load_companion(companion, lesson) if companion else None
