#!/usr/bin/env bash
# CPU seconds of a whole process tree: runs COMMAND in a fresh cpuacct cgroup (v1, as root), so processes
# that no parent waits for (multiprocessing's forkserver and what it forked, Jupyter kernels) still count,
# which bash's `time` misses. Prints wall, user and sys seconds on stderr after the command's own output.
#   usage: benchmarks/cpu_time.sh COMMAND [ARG ...]
set -u
base=/sys/fs/cgroup/cpuacct
group="$base/cpu_time.$$"
if ! mkdir "$group" 2>/dev/null; then
  echo "cpu_time: cannot make a cgroup under $base (needs root and cgroup v1 cpuacct); timing with bash instead" >&2
  time "$@"; exit $?
fi
start=$(date +%s.%N)
( echo $BASHPID > "$group/cgroup.procs" && exec "$@" )
status=$?
end=$(date +%s.%N)
read -r _ user _ sys < <(tr '\n' ' ' < "$group/cpuacct.stat")
hz=$(getconf CLK_TCK)
python3 - "$start" "$end" "$user" "$sys" "$hz" <<'PY' >&2
import sys
start, end, user, system, hz = map(float, sys.argv[1:])
print(f"cpu_time: wall {end - start:.1f} s, user {user / hz:.1f} s, sys {system / hz:.1f} s, "
      f"cpu {(user + system) / hz:.1f} s (whole process tree)")
PY
rmdir "$group" 2>/dev/null || true
exit $status
