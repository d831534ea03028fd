"""labcore.reuse: a check's big buffers are freed after it, unless the process keeps them (a warm checker)."""

from __future__ import annotations

import pytest

from labcore import reuse


class Buffer:
    made = 0

    def __init__(self) -> None:
        Buffer.made += 1
        self.closed = False
        self.settled = 0

    def close(self) -> None:
        self.closed = True

    def settle(self) -> None:
        self.settled += 1


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(reuse, "_keeping", False)
    monkeypatch.setattr(reuse, "_kept", {})
    Buffer.made = 0


def test_without_keep_every_borrow_is_fresh_and_freed(fresh):
    with reuse.borrowed("table", Buffer) as first:
        pass
    with reuse.borrowed("table", Buffer) as second:
        pass
    assert first is not second and first.closed and second.closed
    assert reuse.kept() == []


def test_kept_buffers_are_lent_again_and_settled(fresh):
    reuse.keep()
    with reuse.borrowed("table", Buffer) as first:
        pass
    with reuse.borrowed("table", Buffer) as second:
        pass
    assert first is second and not first.closed and first.settled == 2
    assert Buffer.made == 1 and reuse.kept() == ["table"]


def test_a_borrower_that_raises_frees_the_buffer(fresh):
    reuse.keep()
    with pytest.raises(RuntimeError), reuse.borrowed("table", Buffer) as broken:
        raise RuntimeError("a check failed mid-run")
    assert broken.closed and reuse.kept() == []
    with reuse.borrowed("table", Buffer) as after:
        pass
    assert after is not broken and not after.closed


def test_at_most_max_kept_the_least_recently_used_freed_first(fresh):
    reuse.keep()
    made = {}
    for key in range(reuse.MAX_KEPT):
        with reuse.borrowed(key, Buffer) as buffer:
            made[key] = buffer
    with reuse.borrowed(0, Buffer):  # 0 is now the most recently used: 1 goes first
        pass
    with reuse.borrowed("new", Buffer):
        pass
    assert made[1].closed and not made[0].closed
    assert 1 not in reuse.kept() and len(reuse.kept()) == reuse.MAX_KEPT
