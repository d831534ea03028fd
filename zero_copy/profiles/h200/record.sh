#!/usr/bin/env bash
# Records profiles/h200/zero_copy on the H200 lab machine (README.md beside this file says how it was run).
# From the repository root, with nvtx importable and Nsight Systems' libdw in .nsyslibs:
#     OUT=out/zero_copy bash profiles/h200/zero_copy/record.sh
# It runs the lesson's tests (CPU and GPU), then ONE profiled `python -m zero_copy` whose --json record
# and nsys CSV exports are the profile, and tars the CSVs (the device tool returns at most 8 files).
set -u
OUT=${OUT:-out/zero_copy}
NSYS=${NSYS:-/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys}
REPORTS=nvtx_sum,cuda_gpu_mem_time_sum,cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_trace
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=$PWD/.nsyslibs/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

{
    date -u +%Y-%m-%dT%H:%M:%SZ
    nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv
    python3 -c 'import cupy, cuda.bindings, numpy, sys; print("python", sys.version.split()[0], "cupy", cupy.__version__,
                "cuda-bindings", cuda.bindings.__version__, "numpy", numpy.__version__)'
    nvcc --version | tail -n 2
    "$NSYS" --version
    grep -E 'MemTotal|MemAvailable' /proc/meminfo
    echo "ulimit -l: $(ulimit -l)"
} > "$OUT/environment.txt" 2>&1

python3 -m pytest -q -p no:cacheprovider tests/test_zero_copy.py tests/test_zero_copy_gpu.py > "$OUT/pytest.txt" 2>&1

rm -f /tmp/zero_copy.nsys-rep /tmp/zero_copy.sqlite  # a stale export would make `nsys stats` refuse
"$NSYS" profile -t cuda,nvtx --sample=none --cpuctxsw=none --force-overwrite true -o /tmp/zero_copy \
    sh -c "python3 -m zero_copy --repeats 3 --json '$OUT/results.json' > '$OUT/run.txt' 2> '$OUT/run_stderr.txt'" \
    > "$OUT/nsys_log.txt" 2>&1
"$NSYS" stats --force-export=true --report "$REPORTS" --format csv --output "$OUT/zero_copy" /tmp/zero_copy.nsys-rep \
    >> "$OUT/nsys_log.txt" 2>&1
tar czf "$OUT/nsys_csv.tar.gz" -C "$OUT" $(cd "$OUT" && ls zero_copy_*.csv) && rm -f "$OUT"/zero_copy_*.csv

tail -n 3 "$OUT/pytest.txt"
cat "$OUT/run.txt"
