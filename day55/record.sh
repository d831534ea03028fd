#!/usr/bin/env bash
# Record day 55's shipped profile on a GPU machine: its GPU tests, a plain timed run, then the same command under
# Nsight Systems with --json, and the nsys stats CSV exports the replay reads.
#   usage: bash day55/record.sh [OUTDIR]        (default: day55/profiles/h200, the shipped profile's folder)
# Needs: python3 with CuPy and this checkout importable (run from the checkout's root); nsys on PATH or NSYS=path.
set -uo pipefail
out=${1:-day55/profiles/h200}
mkdir -p "$out"
nsys=${NSYS:-nsys}
reports=nvtx_sum,nvtx_pushpop_trace,cuda_gpu_mem_time_sum,cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_trace
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.current --format=csv,noheader
  python3 -c 'import cupy, numpy; print("CuPy", cupy.__version__, "CUDA runtime", cupy.cuda.runtime.runtimeGetVersion(), "driver", cupy.cuda.runtime.driverGetVersion(), "numpy", numpy.__version__)'
  "$nsys" --version
  python3 --version
} > "$out/versions.txt" 2>&1
python3 -m pytest -q -m gpu day55/tests > "$out/gpu_tests.txt" 2>&1
echo "gpu tests: $(tail -1 "$out/gpu_tests.txt")"
TIMEFORMAT='wall %R s'
{ time python3 -m day55 > "$out/plain_run.txt" 2> "$out/plain_run.err"; } 2>> "$out/plain_run.err"
echo "plain run: $(tail -1 "$out/plain_run.err")"
"$nsys" profile -t cuda,nvtx --sample=none --cpuctxsw=none -o "$out/day55" --force-overwrite true \
  python3 -m day55 --json "$out/results.json" > "$out/profiled_run.txt" 2> "$out/profiled_run.err"
"$nsys" stats --report "$reports" --format csv --output "$out/day55" "$out/day55.nsys-rep" > /dev/null 2>&1
rm -f "$out/day55.sqlite"
{ time python3 -m day55 --from-profile "$out" --plot "$out/plots" > "$out/replay.txt" 2> "$out/replay.err"; } 2>> "$out/replay.err"
echo "replay: $(tail -1 "$out/replay.err")"
ls -la "$out"
