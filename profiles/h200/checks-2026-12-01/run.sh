#!/usr/bin/env bash
# What ran on the course's H200 on 2026-12-01, from the repository root, through the device tool.
# Carried (ignored folders): .whl (wheels.sh: nvtx, nbclient, ipykernel, nbgrader...), .whl-nvrtc-b (the
# cuda13 extra's small wheels: cuda-toolkit meta, nvidia-cuda-runtime, nvtx, setuptools) and .nsyslibs;
# .stash holds nvidia-cuda-nvrtc (58 MB, carried by the call before, too large to carry with the rest).
# Writes its logs to $OUT.
set -u
out=${OUT:?}
repo=$PWD
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > "$out/env.txt" 2>&1
python3 --version >> "$out/env.txt" 2>&1

# 1. pip install '.[cuda13]' into a fresh venv (system packages visible: CuPy, numpy, pandas are the image's);
#    the extra's NVRTC comes from the carried wheels; then `python -m day54 > log 2>&1` from another folder.
{
  python3 -m venv --system-site-packages /tmp/v
  /tmp/v/bin/pip install -q --no-index .whl-nvrtc-b/setuptools-*.whl
  /tmp/v/bin/pip install --no-index --no-build-isolation --find-links .stash --find-links .whl-nvrtc-b "$repo[cuda13]"
  echo "exit $?"
  /tmp/v/bin/pip list 2>/dev/null | grep -i -E "^(cupy|cuda|nvidia|datamove|nvtx)"
} > "$out/install.txt" 2>&1
(cd /tmp && /tmp/v/bin/python -m day54 > "$out/day54_log.txt" 2>&1; echo "exit $?" >> "$out/day54_log.txt")
echo "carriage returns in the log: $(tr -cd '\r' < "$out/day54_log.txt" | wc -c)" >> "$out/install.txt"

# 2. The GPU tests and one autograde of the reference submission, with the checkout on PYTHONPATH.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$repo PATH=/tmp/site/bin:$PATH JUPYTER_PATH=/tmp/site/share/jupyter
export NSYS=/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys
export LD_LIBRARY_PATH=$repo/.nsyslibs/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
python3 -m pytest -q -m gpu -p no:cacheprovider tests/ > "$out/gpu_tests.txt" 2>&1
mkdir -p /tmp/subs/ref
cp solutions/day54/day54.ipynb solutions/zero_copy/zero_copy.ipynb /tmp/subs/ref/
{
  python3 -m grader setup /tmp/g1 && python3 -m grader collect /tmp/g1 /tmp/subs
  start=$(date +%s.%N)
  python3 -m grader autograde /tmp/g1 --timeout 140
  echo "autograde wall $(python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),1))" "$start") s"
  python3 -m grader export /tmp/g1 --to "$out/grades.csv"
} > "$out/autograde.txt" 2>&1
