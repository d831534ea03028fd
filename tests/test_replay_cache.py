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


@pytest.fixture(scope="module")
def parsed(tmp_path_factory) -> tuple[object, bytes, str]:
    """The first lesson's profile parsed once into a cache: (the record, the kept file's bytes, its name)."""
    folder = tmp_path_factory.mktemp("parsed") / "cache"
    with pytest.MonkeyPatch.context() as env:
        env.setenv(replay.CACHE_ENV, str(folder))
        replay._parsed.cache_clear()
        record = _load()
        replay._parsed.cache_clear()
    [kept] = _kept(folder)
    return record, kept.read_bytes(), kept.name


def _placed(cache: Path, parsed: tuple[object, bytes, str], forged: bool = True) -> Path:
    """The parse (forged: changed to a marked record) in the test's cache, as a first load would have kept it."""
    record, whole, name = parsed
    cache.mkdir(mode=0o700)
    kept = cache / name
    kept.write_bytes(whole)
    kept.chmod(0o600)
    if forged:
        _forge(kept, _marked(record))
    return kept


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


def test_a_parse_cut_short_or_changed_is_parsed_anew(cache, parsed):
    """A kept parse that is not whole (cut short, a byte changed, another format, empty) is not read; a load then
    parses the exports again and keeps the parse anew."""
    kept = _placed(cache, parsed, forged=False)
    whole = parsed[1]
    assert replay._read_cache(kept.name) == whole[len(replay.CACHE_MAGIC) + replay.DIGEST_BYTES :]  # the control
    for broken in (whole[: len(whole) // 2], whole[:-1] + bytes([whole[-1] ^ 1]), b"not a parse", b""):
        kept.write_bytes(broken)
        assert replay._read_cache(kept.name) is None, broken[:40]
    assert _load() == parsed[0]
    assert kept.read_bytes() == whole


def test_a_cache_others_can_write_is_not_read(cache, parsed):
    """A cache folder or parse that others can write (group or world) is not read: a pickle is code. Nothing is
    written into such a folder either."""
    kept = _placed(cache, parsed)
    forged = kept.read_bytes()
    for folder_mode, file_mode in ((0o777, 0o600), (0o770, 0o600), (0o700, 0o666), (0o700, 0o620)):
        cache.chmod(folder_mode)
        kept.chmod(file_mode)
        assert replay._read_cache(kept.name) is None, (oct(folder_mode), oct(file_mode))
    cache.chmod(0o777)
    kept.chmod(0o600)
    assert _load().source != "forged in the cache"
    assert kept.read_bytes() == forged  # not written into a folder others can write
    cache.chmod(0o700)
    replay._parsed.cache_clear()
    assert _load().source == "forged in the cache"  # the control: the same file, the user's alone, is read


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_another_users_cache_is_not_read(cache, parsed):
    """A cache folder or parse that belongs to another user is not read, however its modes look."""
    kept = _placed(cache, parsed)
    for path in (cache, kept):
        os.chown(path, 65534, 65534)
        assert replay._read_cache(kept.name) is None, path
        os.chown(path, 0, 0)
    assert replay._read_cache(kept.name) is not None


def test_a_link_in_place_of_a_parse_is_not_followed(cache, parsed, tmp_path):
    """A kept parse that is a symbolic link (to a file anyone could have written) is not read."""
    kept = _placed(cache, parsed)
    elsewhere = tmp_path / "elsewhere"
    kept.rename(elsewhere)
    kept.symlink_to(elsewhere)
    assert replay._read_cache(kept.name) is None
    kept.unlink()
    elsewhere.rename(kept)
    assert replay._read_cache(kept.name) is not None


def _key(from_exports: object, folder: Path) -> str | None:
    companion = folder / "results.json"
    return replay._cache_key(from_exports, folder, companion if companion.exists() else None, replay._stamp(folder))


def test_other_bytes_or_other_code_are_other_parses_and_a_copy_is_not_kept(cache, tmp_path):
    """The parse's name covers the folder, its files' bytes and the parsing code: other bytes and changed code each
    name a parse of their own. A profile outside the lesson's package (a copy, a reader's own recording) is not
    kept at all: replayed now and then, it would only fill the cache."""
    from_exports = importlib.import_module(f"{LESSON}.replay").from_exports
    shipped = profile_path(LESSON)
    names = {_key(from_exports, shipped)}
    names.add(replay._cache_key(from_exports, shipped, None, (("an export", "other bytes"),)))
    with pytest.MonkeyPatch.context() as code:
        code.setattr(replay, "_code_digest", lambda package: "other code")
        names.add(_key(from_exports, shipped))
    assert len(names) == 3 and None not in names
    assert _key(from_exports, shipped) in names  # the control: the same folder, bytes and code, the same name
    copy = Path(shutil.copytree(shipped, tmp_path / "copy", ignore=shutil.ignore_patterns("*.nsys-rep")))
    assert _key(from_exports, copy) is None


def test_the_cache_keeps_the_newest_parses_only(cache):
    """Past MAX_KEPT parses (each change of the course's code makes new ones), writing one removes the oldest."""
    for n in range(replay.MAX_KEPT + 3):
        replay._write_cache(f"parse-{n:03d}", b"parsed")
        os.utime(cache / f"parse-{n:03d}", (1000 + n, 1000 + n))
    assert _kept(cache) == [cache / f"parse-{n:03d}" for n in range(3, replay.MAX_KEPT + 3)]


def test_a_parser_defined_in_a_function_is_never_kept(cache):
    """A stand-in parser (a test's, a function defined inside another) has no name the cache can vouch for."""
    from_exports = importlib.import_module(f"{LESSON}.replay").from_exports

    def counted(path: Path, companion: Path | None) -> object:
        return from_exports(path, companion)

    assert _key(counted, profile_path(LESSON)) is None and _key(lambda p, c: None, profile_path(LESSON)) is None
    assert _key(from_exports, profile_path(LESSON)) is not None  # the control: the lesson's own parser


def test_off_or_unwritable_is_no_cache_and_no_error(tmp_path, monkeypatch):
    """DATAMOVE_CACHE=off keeps nothing and reads nothing; a cache folder that cannot be made (under a file) is no
    error, and nothing is read from it."""
    monkeypatch.setenv(replay.CACHE_ENV, "off")
    assert replay.cache_folder() is None
    replay._write_cache("a-parse", b"parsed")
    assert replay._read_cache("a-parse") is None
    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setenv(replay.CACHE_ENV, str(blocker / "cache"))
    replay._write_cache("a-parse", b"parsed")
    assert replay._read_cache("a-parse") is None and blocker.read_text() == ""
    monkeypatch.setenv(replay.CACHE_ENV, str(tmp_path / "cache"))  # the control: a folder that can be made
    replay._write_cache("a-parse", b"parsed")
    assert replay._read_cache("a-parse") == b"parsed"


def test_the_cache_defaults_to_the_users_cache_folder(monkeypatch, tmp_path):
    """Without DATAMOVE_CACHE, the parses go under $XDG_CACHE_HOME (else ~/.cache)/datamove-course/replay."""
    monkeypatch.delenv(replay.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert replay.cache_folder() == tmp_path / "datamove-course" / "replay"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert replay.cache_folder() == tmp_path / "home" / ".cache" / "datamove-course" / "replay"


def test_the_lesson_command_says_the_same_from_the_cache(tmp_path):
    """`python -m <first lesson> --from-profile <its shipped profile>` (a replay, a GPU or not) prints the same twice,
    the second time from the parse the first kept."""
    env = {**os.environ, replay.CACHE_ENV: str(tmp_path / "cache")}
    command = [sys.executable, "-m", LESSON, "--from-profile", str(profile_path(LESSON))]
    runs = [
        subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300) for _ in range(2)
    ]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr[-2000:]
    assert runs[0].stdout == runs[1].stdout
    assert len(_kept(tmp_path / "cache")) == 1


def test_the_offline_page_says_how_the_cache_behaves():
    """The offline readers' page names the cache's folder, its switch and how many parses stay, as the code has them."""
    page = (Path(__file__).resolve().parents[1] / "site" / "offline.md").read_text()
    assert "~/.cache/datamove-course/replay" in page and f"`{replay.CACHE_ENV}=off`" in page
    assert f"the newest {replay.MAX_KEPT} parses" in " ".join(page.split())
