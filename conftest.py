"""Shared fixtures of every test folder (tests/ and each lesson's tests/); GPU tests carry the `gpu` marker and skip
where CuPy sees no device."""

from __future__ import annotations

from pathlib import Path

import pytest

from labcore.device import gpu_available


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and CuPy (none here)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def profiles(tmp_path: Path) -> Path:
    """An empty COURSE_PROFILES folder: no profile recorded there (the multi-GPU section's tests)."""
    folder = tmp_path / "profiles"
    folder.mkdir()
    return folder


@pytest.fixture
def as_graded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Checks judge as the trusted checker does, with the lesson's references (labcore.answers.grading()), while the
    answers are still computed in this process: a test of a check's judgment against a withheld key or reference,
    which the student's own kernel never makes (labcore.public)."""
    from labcore import answers

    monkeypatch.setattr(answers, "grading", lambda: True)


@pytest.fixture
def withhold(monkeypatch: pytest.MonkeyPatch):
    """withhold(module, name): the module's reference `name` raises as the student bundle's withheld copy does."""
    from labcore import answers

    def replace(module: object, name: str) -> None:
        def withheld(*args: object, **kwargs: object) -> None:
            raise answers.ReferenceWithheld(f"{getattr(module, '__name__', module)}.{name}")

        monkeypatch.setattr(module, name, withheld)

    return replace


@pytest.fixture
def no_references(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every reference a lesson's public expectations come from raises, as in the student bundle (labcore.public):
    a check that still called one in the student's kernel would fail. A lesson's tests withhold its keys too."""
    from labcore import answers, public
    from labcore.lessons import names

    def withheld(*args: object, **kwargs: object) -> None:
        raise answers.ReferenceWithheld("a reference")

    for lesson in names():
        public.computed_values(lesson)  # its expectations registered
        for found in public._REGISTRY.get(lesson, {}).values():
            monkeypatch.setattr(found, "reference", withheld)
