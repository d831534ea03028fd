#!/usr/bin/env bash
# The second visit of 2026-12-01, after the checks changed (traces, live correctness cases, the reference in the
# same run, the mailbox on PTX, no false fails): the GPU tests, then one autograde and feedback of the reference.
# Carried: .whl and .nsyslibs, as in run.sh. Writes its logs to $OUT.
set -u
out=${OUT:?}
repo=$PWD
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$repo PATH=/tmp/site/bin:$PATH JUPYTER_PATH=/tmp/site/share/jupyter
export NSYS=/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys
export LD_LIBRARY_PATH=$repo/.nsyslibs/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
python3 -m pytest -q -m gpu -p no:cacheprovider -rA tests/ 2>&1 | grep -E "^(PASSED|FAILED|ERROR)|passed|failed|Error|assert" > "$out/gpu_tests2.txt"
mkdir -p /tmp/subs/ref
cp solutions/day54/day54.ipynb solutions/zero_copy/zero_copy.ipynb /tmp/subs/ref/
{
  python3 -m grader setup /tmp/g2 && python3 -m grader collect /tmp/g2 /tmp/subs
  start=$(date +%s.%N)
  python3 -m grader autograde /tmp/g2 --timeout 140
  echo "autograde wall $(python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),1))" "$start") s"
  python3 -m grader export /tmp/g2 --to "$out/grades2.csv"
  python3 -m grader feedback /tmp/g2
  grep -h -o "\[check\][^<]*" /tmp/g2/feedback/ref/*/*.html | head -40
} > "$out/autograde2.txt" 2>&1
