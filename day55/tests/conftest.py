"""Day 55's tests: GPU tests carry the `gpu` marker and skip where CuPy sees no device (as the course's other tests
do; the hook only marks this folder's tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from labcore.device import gpu_available

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and CuPy (none here)")
    for item in items:
        if "gpu" in item.keywords and HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(skip)
