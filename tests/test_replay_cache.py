"""The parsed profile kept between processes (labcore.kit.replay's cache): a later process reads the parse instead of
parsing the exports again; what the cache holds is used only when it is whole, the user's own and made from the same
bytes by the same code; anything else is parsed anew, and a cache that cannot be written is no error."""

from __future__ import annotations

import dataclasses
import importlib
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from labcore.kit import replay
from labcore.lessons import names
from labcore.profiles import profile_path

LESSON = names()[0]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty cache of the test's own, and no parse kept in this process."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(replay.CACHE_ENV, str(folder))
    replay._parsed.cache_clear()
    yield folder
    replay._parsed.cache_clear()


def _load() -> object:
    """The first lesson's shipped profile, as its replay loads it (kept in this process only until cache_clear)."""
    return importlib.import_module(f"{LESSON}.replay").load_profile()


def _kept(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


def _forge(path: Path, record: object) -> None:
    """Rewrite a kept parse as another record, whole (magic, digest, pickle): what a reader takes for a parse."""
    body = pickle.dumps(record)
    digest = replay.hashlib.blake2b(body, digest_size=replay.DIGEST_BYTES).digest()
    path.write_bytes(replay.CACHE_MAGIC + digest + body)


def _marked(record: object) -> object:
    return dataclasses.replace(record, source="forged in the cache")


def test_a_later_process_reads_the_parse_from_the_cache(cache):
    """The first load parses and keeps the parse (the user's alone: 0700, 0600); the next reads it: a kept parse
    changed to another record is what the next load returns, so nothing was parsed again."""
    first = _load()
    kept = _kept(cache)
    assert len(kept) == 1
    assert cache.stat().st_mode & 0o777 == 0o700 and kept[0].stat().st_mode & 0o777 == 0o600
    _forge(kept[0], _marked(first))
    replay._parsed.cache_clear()
    assert _load().source == "forged in the cache"


def test_a_parse_cut_short_or_changed_is_parsed_anew(cache):
    """A kept parse that is not whole (cut short, a byte changed, another format) is not read: the exports are parsed
    again and the parse kept anew."""
    first = _load()
    [kept] = _kept(cache)
    whole = kept.read_bytes()
    for broken in (whole[: len(whole) // 2], whole[:-1] + bytes([whole[-1] ^ 1]), b"not a parse", b""):
        kept.write_bytes(broken)
        replay._parsed.cache_clear()
        assert _load() == first
        assert kept.read_bytes() == whole


def test_a_cache_others_can_write_is_not_read(cache):
    """A cache folder or parse that others can write (group or world) is not read: a pickle is code. Nothing is
    written into such a folder either."""
    first = _load()
    [kept] = _kept(cache)
    for folder_mode, file_mode in ((0o777, 0o600), (0o770, 0o600), (0o700, 0o666), (0o700, 0o620)):
        _forge(kept, _marked(first))
        forged = kept.read_bytes()
        cache.chmod(folder_mode)
        kept.chmod(file_mode)
        replay._parsed.cache_clear()
        assert _load().source != "forged in the cache", (oct(folder_mode), oct(file_mode))
        if folder_mode != 0o700:
            assert kept.read_bytes() == forged  # not written into a folder others can write
        cache.chmod(0o700)
        kept.chmod(0o600)
    _forge(kept, _marked(first))
    replay._parsed.cache_clear()
    assert _load().source == "forged in the cache"  # the control: the same file, the user's alone, is read


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_another_users_cache_is_not_read(cache):
    """A cache folder or parse that belongs to another user is not read, however its modes look."""
    first = _load()
    [kept] = _kept(cache)
    _forge(kept, _marked(first))
    for path in (cache, kept):
        os.chown(path, 65534, 65534)
        replay._parsed.cache_clear()
        assert _load().source != "forged in the cache", path
        os.chown(path, 0, 0)


def test_a_link_in_place_of_a_parse_is_not_followed(cache, tmp_path):
    """A kept parse that is a symbolic link (to a file anyone could have written) is not read."""
    first = _load()
    [kept] = _kept(cache)
    elsewhere = tmp_path / "elsewhere"
    _forge(elsewhere, _marked(first))
    kept.unlink()
    kept.symlink_to(elsewhere)
    replay._parsed.cache_clear()
    assert _load().source != "forged in the cache"


def test_other_bytes_another_folder_or_other_code_are_other_parses(cache, tmp_path, monkeypatch):
    """The parse's name covers the folder, its files' bytes and the parsing code: a copy of the profile elsewhere
    and the same folder under changed code are parsed anew, each kept under a name of its own."""
    _load()
    copy = Path(shutil.copytree(profile_path(LESSON), tmp_path / "copy", ignore=shutil.ignore_patterns("*.nsys-rep")))
    replay_module = importlib.import_module(f"{LESSON}.replay")
    replay._parsed.cache_clear()
    assert replay_module.load_profile(copy).passes == _load().passes
    assert len(_kept(cache)) == 2
    monkeypatch.setattr(replay, "_code_digest", lambda package: "other code")
    replay._parsed.cache_clear()
    _load()
    assert len(_kept(cache)) == 3


def test_a_parser_defined_in_a_function_is_never_kept(cache):
    """A stand-in parser (a test's, a function defined inside another) has no name the cache can vouch for."""

    def counted(path: Path, companion: Path | None) -> object:
        return importlib.import_module(f"{LESSON}.replay").from_exports(path, companion)

    replay.load(LESSON, None, counted)
    assert not cache.exists() or _kept(cache) == []


def test_off_or_unwritable_is_no_cache_and_no_error(tmp_path, monkeypatch):
    """DATAMOVE_CACHE=off keeps nothing; a cache folder that cannot be made (under a file) is no error."""
    replay._parsed.cache_clear()
    monkeypatch.setenv(replay.CACHE_ENV, "off")
    assert replay.cache_folder() is None
    first = _load()
    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setenv(replay.CACHE_ENV, str(blocker / "cache"))
    replay._parsed.cache_clear()
    assert _load() == first
    replay._parsed.cache_clear()


def test_the_cache_defaults_to_the_users_cache_folder(monkeypatch, tmp_path):
    """Without DATAMOVE_CACHE, the parses go under $XDG_CACHE_HOME (else ~/.cache)/datamove-course/replay."""
    monkeypatch.delenv(replay.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert replay.cache_folder() == tmp_path / "datamove-course" / "replay"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert replay.cache_folder() == tmp_path / "home" / ".cache" / "datamove-course" / "replay"


def test_the_lesson_command_says_the_same_from_the_cache(tmp_path):
    """`python -m <first lesson>` prints the same replay twice, the second time from the parse the first kept."""
    env = {**os.environ, replay.CACHE_ENV: str(tmp_path / "cache")}
    runs = [
        subprocess.run(
            [sys.executable, "-m", LESSON], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        for _ in range(2)
    ]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr[-2000:]
    assert runs[0].stdout == runs[1].stdout
    assert len(_kept(tmp_path / "cache")) >= 1
