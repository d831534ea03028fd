"""python -m day54.student FILE FUNCTION: record a student's schedule the way the grader reads it.

Run by the notebook (`session.record_my_run`) on a GPU machine: it imports the
schedule FUNCTION from FILE, measures the lab at 4 and 64 MiB with that
schedule as the extra pass 'student' (checked bit for bit against naive
first), and writes the results record. The schedule is handed the same
`labcore.pipeline.context.Context` facade the grader records it behind. The notebook runs
it under Nsight Systems when nsys is available, so `day54_run_*.csv` exports
land beside the notebook; graders without a GPU compare those with the
submitted schedule's trace and show what they measured, unverified: they
never earn a point (nbgrader keeps them: no source file of the assignment is
named day54_run*).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Sequence

from day54 import schedules
from day54.config import Config, MiB
from day54.live import run_live
from labcore import answers
from labcore.device import device_facts, gpu_available
from labcore.errors import UsageError, run_cli
from labcore.pipeline.context import Context


def load_schedule(path: str, name: str):
    """Import FUNCTION from a .py file written out of the notebook."""
    spec = importlib.util.spec_from_file_location("student_schedule", path)
    if spec is None or spec.loader is None:
        raise UsageError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    if not callable(getattr(module, name, None)):
        raise UsageError(f"{path} defines no function {name!r}")
    return getattr(module, name)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m day54.student", description=__doc__)
    parser.add_argument("file")
    parser.add_argument("function")
    parser.add_argument("--json", required=True, metavar="PATH")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    if not gpu_available():
        raise UsageError("recording your run needs a GPU; without one the grader simulates your schedule")
    schedule = load_schedule(args.file, args.function)
    print(f"day54.student: live on {device_facts().summary()}", flush=True)
    cfg = Config(windows=[4 * MiB, 64 * MiB], buffers=[2, 3], repeats=args.repeats, pitfalls=False)
    yours = lambda ctx: schedule(Context(ctx))  # noqa: E731 (the same facade the grader records behind)
    stand_in = {}
    if answers.withheld(schedules.pipelined):  # the student edition: your schedule runs the pipelined passes too
        print("day54.student: the pipelined passes run your schedule (the student edition has no reference)")
        stand_in[schedules.pipelined] = yours
    with answers.standing_in(stand_in, ("day54",)):
        record = run_live(cfg, student=yours)
    record.save(args.json)
    bad = [c for c in record.checks if not c.ok]
    for check in bad:
        print(f"FAIL {check.name}: {check.detail}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
