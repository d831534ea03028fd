#!/usr/bin/env bash
# Record day 56's profile on a GPU machine: the GPU tests, a plain timed run, then the same run under Nsight
# Systems with --json, and the nsys stats CSV exports a replay reads (day56.replay).
#   usage: bash day56/record.sh OUTDIR        (the shipped one: day56/profiles/h200)
# Differs from profiles/record.sh in three ways: the lesson's tests live in day56/tests; nsys traces a graph's
# nodes one by one (--cuda-graph-trace=node; by default a graph is one row and its copies cannot be replayed);
# and the exports are the ranges and the GPU trace only: cuda_api_sum counts no per-copy calls for a graph's
# nodes, so labcore.exports' cross-check of calls against copies would refuse a graph's profile.
# Needs: python3 with CuPy and this checkout importable; nsys on PATH or NSYS=path.
set -uo pipefail
out=${1:?usage: bash day56/record.sh OUTDIR}
mkdir -p "$out"
nsys=${NSYS:-nsys}
reports=nvtx_sum,nvtx_pushpop_trace,cuda_gpu_trace
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.current --format=csv,noheader
  python3 -c 'import cupy, numpy; print("CuPy", cupy.__version__, "CUDA runtime", cupy.cuda.runtime.runtimeGetVersion(), "driver", cupy.cuda.runtime.driverGetVersion(), "numpy", numpy.__version__)'
  python3 -c 'import cuda.bindings; print("cuda-bindings", cuda.bindings.__version__)'
  "$nsys" --version
  python3 --version
} > "$out/versions.txt" 2>&1
python3 -m pytest -q -m gpu -p no:cacheprovider day56/tests > "$out/gpu_tests.txt" 2>&1
echo "gpu tests: $(tail -1 "$out/gpu_tests.txt")"
TIMEFORMAT='wall %R s'
{ time python3 -m day56 > "$out/plain_run.txt" 2> "$out/plain_run.err"; } 2>> "$out/plain_run.err"
echo "plain run: $(tail -1 "$out/plain_run.err")"
"$nsys" profile -t cuda,nvtx --cuda-graph-trace=node --sample=none --cpuctxsw=none -o "$out/day56" \
  --force-overwrite true python3 -m day56 --json "$out/results.json" > "$out/profiled_run.txt" 2> "$out/profiled_run.err"
"$nsys" stats --report "$reports" --format csv --output "$out/day56" "$out/day56.nsys-rep" > /dev/null 2>&1
rm -f "$out/day56.sqlite"
python3 -m day56 --from-profile "$out" > "$out/replayed_run.txt" 2> "$out/replayed_run.err"
echo "replay: exit $? ($(head -1 "$out/replayed_run.txt"))"
ls -la "$out"
