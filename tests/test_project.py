"""The project's own promises: the README's commands, CI calling them, environment.yml matching pyproject."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"cupy-cuda13x": "cupy", "cupy-cuda12x": "cupy"}
CONDA_ONLY = {"python", "pip", "cuda-version"}


def _requirement(text: str) -> tuple[str, str]:
    match = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*)$", text)
    assert match, text
    return match.group(1).lower(), match.group(2).replace(" ", "")


def pyproject_requirements() -> dict[str, str]:
    """Base, cuda13, test and course requirements of pyproject.toml, under their conda-forge names."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    reqs = project["dependencies"] + extras["cuda13"] + extras["test"] + extras["course"]
    named = dict(_requirement(r) for r in reqs)
    return {CONDA_NAMES.get(name, name): spec for name, spec in named.items()}


def environment_requirements() -> dict[str, str]:
    """The conda dependencies of environment.yml (the pip section excluded)."""
    found = {}
    text = (ROOT / "environment.yml").read_text()
    for line in text[text.index("dependencies:"):].splitlines():
        match = re.match(r"^  - ([A-Za-z0-9_.\-]+)(.*)$", line)
        if match:
            name, spec = _requirement(match.group(1) + match.group(2))
            if name not in CONDA_ONLY:
                found[name] = spec
    return found


def test_environment_yml_names_the_same_dependencies_as_pyproject():
    """Same packages, same version bounds (CuPy under its conda-forge name)."""
    assert environment_requirements() == pyproject_requirements()


def test_each_cuda_extra_names_exactly_one_cupy_wheel():
    """cuda12 -> cupy-cuda12x, cuda13 -> cupy-cuda13x, nothing else CuPy-like."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for extra, wheel in (("cuda12", "cupy-cuda12x"), ("cuda13", "cupy-cuda13x")):
        cupys = [_requirement(r)[0] for r in extras[extra] if r.lower().startswith("cupy")]
        assert cupys == [wheel]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"^    (python3 -m venv .+)$", text, flags=re.M)


def test_readme_first_screen_has_the_two_commands():
    """The first 40 lines hold a main-job command and a test command, both starting from bare Python."""
    first_screen = "\n".join((ROOT / "README.md").read_text().splitlines()[:40])
    commands = [c for c in _readme_commands() if c in first_screen]
    assert any(c.endswith("python -m day54") for c in commands)
    assert any("pytest" in c for c in commands)


def test_ci_runs_the_readme_test_command_verbatim():
    """.ci/run contains the README's test command line unchanged."""
    test_command = next(c for c in _readme_commands() if "pytest" in c)
    assert test_command in (ROOT / ".ci" / "run").read_text().splitlines()
