#!/usr/bin/env bash
# Record day 57's profile on a GPU machine: the versions, a plain timed run, then the same run under Nsight Systems
# with unified-memory fault tracing and --json, the nsys stats CSV exports a replay reads (day57.replay), and the
# faults of the trace binned per 100 us from nsys's own SQLite export (the queries below), then the replay.
#   usage: bash day57/record.sh OUTDIR        (the shipped one: day57/profiles/<gpu>)
# Needs: python3 with CuPy and cuda-bindings, this checkout importable; nsys on PATH or NSYS=path.
set -uo pipefail
out=${1:?usage: bash day57/record.sh OUTDIR}
mkdir -p "$out"
nsys=${NSYS:-nsys}
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.current --format=csv,noheader
  python3 -c 'import cupy, numpy; print("CuPy", cupy.__version__, "CUDA runtime", cupy.cuda.runtime.runtimeGetVersion(), "driver", cupy.cuda.runtime.driverGetVersion(), "numpy", numpy.__version__)'
  python3 -c 'import cupy; a = cupy.cuda.Device().attributes; print("ConcurrentManagedAccess", a.get("ConcurrentManagedAccess"), "PageableMemoryAccess", a.get("PageableMemoryAccess"))'
  python3 -c 'from cupy_backends.cuda.api import runtime as r; print("CuPy memPrefetchAsync:", r.memPrefetchAsync.__doc__, "memAdvise:", r.memAdvise.__doc__)'
  python3 -c 'import cuda.bindings; print("cuda-bindings", cuda.bindings.__version__)'
  "$nsys" --version
  python3 --version
} > "$out/versions.txt" 2>&1
python3 -m pytest -q -m gpu -p no:cacheprovider day57/tests > "$out/gpu_tests.txt" 2>&1
echo "gpu tests: $(tail -1 "$out/gpu_tests.txt")"
TIMEFORMAT='wall %R s'
{ time python3 -m day57 > "$out/plain_run.txt" 2> "$out/plain_run.err"; } 2>> "$out/plain_run.err"
echo "plain run: $(tail -1 "$out/plain_run.err")"
"$nsys" profile -t cuda,nvtx --cuda-um-gpu-page-faults=true --cuda-um-cpu-page-faults=true --sample=none \
  --cpuctxsw=none -o "$out/day57" --force-overwrite true python3 -m day57 --repeats 3 --json "$out/results.json" \
  > "$out/profiled_run.txt" 2> "$out/profiled_run.err"
"$nsys" stats --report nvtx_sum,nvtx_pushpop_trace,cuda_gpu_trace --format csv \
  --output "$out/day57" "$out/day57.nsys-rep" > "$out/stats.log" 2>&1
"$nsys" stats --report um_sum,um_total_sum,um_cpu_page_faults_sum --format csv --output "$out/day57" \
  "$out/day57.nsys-rep" >> "$out/stats.log" 2>&1
python3 - "$out/day57.sqlite" "$out" <<'PY'
# GPU and CPU page faults, binned per 100 us of the trace's clock (the NVTX ranges' clock)
import csv, sqlite3, sys
db, out = sqlite3.connect(sys.argv[1]), sys.argv[2]
for table, name, count in (("CUDA_UM_GPU_PAGE_FAULT_EVENTS", "um_gpu_faults", "SUM(numberOfPageFaults)"),
                           ("CUDA_UM_CPU_PAGE_FAULT_EVENTS", "um_cpu_faults", "COUNT(*)")):
    rows = db.execute(f"SELECT start / 100000 * 100000, {count} FROM {table} GROUP BY 1 ORDER BY 1").fetchall()
    with open(f"{out}/day57_{name}.csv", "w", newline="") as f:
        csv.writer(f).writerows([("Bin Start (ns)", "Faults"), *rows])
PY
rm -f "$out/day57.sqlite"
# the whole trace (190,000 rows, 24 MB) and the report file stay behind; the replay reads the migrations binned
python3 -m day57.replay "$out/day57_cuda_gpu_trace.csv" "$out/day57_um_migrations.csv" && rm "$out/day57_cuda_gpu_trace.csv"
python3 -m day57 --from-profile "$out" > "$out/replayed_run.txt" 2> "$out/replayed_run.err"
echo "replay: exit $? ($(head -1 "$out/replayed_run.txt"))"
rm -f "$out/day57.nsys-rep"
ls -la "$out"
