#!/usr/bin/env bash
# Record a lesson's profile on a GPU machine: GPU tests, a plain timed run, then the same command under Nsight
# Systems with --json, the nsys stats CSV exports a replay reads, and the replay of what was recorded.
#   usage: profiles/record.sh LESSON OUTDIR        (LESSON: a line of lessons.txt; OUTDIR: say LESSON/profiles/h200)
# A lesson's own record.sh calls this with what differs for it: REPORTS (the nsys stats reports to export, comma
# separated) and NSYS_FLAGS (more `nsys profile` options, e.g. --cuda-graph-trace=node).
# Needs: python3 with CuPy and this checkout importable (run from the checkout's root); nsys on PATH or NSYS=path.
set -uo pipefail
lesson=${1:?usage: record.sh LESSON OUTDIR}; out=${2:?usage: record.sh LESSON OUTDIR}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
python3 -c 'import sys; from labcore.lessons import names; n = names(); sys.exit(None if sys.argv[1] in n else "record.sh: {!r} is not a lesson of lessons.txt ({})".format(sys.argv[1], ", ".join(n)))' "$lesson" || exit 2
mkdir -p "$out"
nsys=${NSYS:-nsys}
reports=${REPORTS:-nvtx_sum,nvtx_pushpop_trace,cuda_gpu_mem_time_sum,cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_trace}
read -r -a nsys_flags <<< "${NSYS_FLAGS:-}"
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.current --format=csv,noheader
  python3 -c 'import cupy, numpy; print("CuPy", cupy.__version__, "CUDA runtime", cupy.cuda.runtime.runtimeGetVersion(), "driver", cupy.cuda.runtime.driverGetVersion(), "numpy", numpy.__version__)'
  python3 -c 'import cuda.bindings as b; print("cuda-bindings", b.__version__)' 2> /dev/null
  "$nsys" --version
  python3 --version
} > "$out/versions.txt" 2>&1
python3 -m pytest -q -m gpu -p no:cacheprovider "$lesson/tests" > "$out/gpu_tests.txt" 2>&1
echo "gpu tests: $(tail -1 "$out/gpu_tests.txt")"
TIMEFORMAT='wall %R s'
{ time python3 -m "$lesson" > "$out/plain_run.txt" 2> "$out/plain_run.err"; } 2>> "$out/plain_run.err"
echo "plain run: $(tail -1 "$out/plain_run.err")"
"$nsys" profile -t cuda,nvtx "${nsys_flags[@]}" --sample=none --cpuctxsw=none -o "$out/$lesson" --force-overwrite true \
  python3 -m "$lesson" --json "$out/results.json" > "$out/profiled_run.txt" 2> "$out/profiled_run.err"
"$nsys" stats --report "$reports" --format csv --output "$out/$lesson" "$out/$lesson.nsys-rep" > /dev/null 2>&1
rm -f "$out/$lesson.sqlite"
{ time python3 -m "$lesson" --from-profile "$out" --plot "$out/plots" > "$out/replay.txt" 2> "$out/replay.err"; } 2>> "$out/replay.err"
echo "replay: exit $? ($(head -1 "$out/replay.txt"))"
ls -la "$out"
