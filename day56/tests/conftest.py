"""Day 56's tests: GPU tests carry the `gpu` marker and skip where CuPy sees no device (as tests/conftest.py)."""

from __future__ import annotations

import pytest

from labcore.device import gpu_available


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and CuPy (none here)")
    for item in items:
        if "gpu" in item.keywords and item.path.is_relative_to(config.rootpath / "day56"):
            item.add_marker(skip)
