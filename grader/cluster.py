"""Where a class is graded: a Dask cluster (dask.distributed), on this machine or across a university's.

    --cluster local          a local cluster of worker processes: --jobs CPU workers (sandboxes, and the checks
                             when there is no GPU) and one GPU worker per GPU (CUDA_VISIBLE_DEVICES set), each
                             worker with one thread, so a GPU worker times one submission at a time
    --cluster slurm | pbs    dask-jobqueue's SLURMCluster / PBSCluster, configured as dask-jobqueue documents
                             (~/.config/dask/jobqueue.yaml: queue, cores, memory, and `resources` for GPU nodes),
                             scaled to --jobs workers
    --cluster tcp://HOST:P   a running scheduler; its workers are started by the instructor (`dask worker
                             tcp://HOST:P --nthreads 1 --preload grader.warm --resources GPU=1` on a GPU)

Two tasks per submission (grader.warm): `extract` on a worker declaring the resource CPU when there is one (any
worker otherwise), then `check`, which takes the resource GPU when any worker declares it (at most one timing per
GPU), else CPU (and then a worker's checker plans the questions too: there is no GPU to keep the planning from). A
worker that dies mid-submission has its tasks run again elsewhere (Dask's own retry: the scheduler's
allowed-failures), a task that raised is tried once more; a submission still failing after that gets
the reason. Workers preload grader.warm (its dask_setup prepares them before their first task). Results come back to
the coordinator, the one writer (grader.classgrade).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from grader import runner, warm
from labcore.device import gpu_count
from labcore.errors import UsageError

GPU, CPU = "GPU", "CPU"
PRELOAD = "grader.warm"  # its dask_setup prepares a worker before its first task
RETRIES = 1  # a task that raised is tried once more (a worker that died is Dask's allowed-failures' business)
WORKER_START_S = 120
CONNECT_S = 15  # a scheduler address that answers nothing in this time is wrong or down
# What a local cluster's scheduler and workers (given the coordinator's Dask config by their Nanny) leave off or
# do less often: a worker's statistical profiler, which samples the running task's thread 100 times a second (a task
# here is a submission's minutes in a sandbox: nothing to profile), the event loops' check for a blocked loop, 50
# times a second, and the system monitor's readings of CPU and memory, twice a second in every process.
QUIET = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "500ms",
    "distributed.admin.system-monitor.interval": "2s",
}


@dataclasses.dataclass
class Done:
    """One submission's two results, or why it has none."""

    job: warm.Job
    result: dict[str, Any] | None
    error: str = ""


def gpu_indices() -> list[int]:
    """The GPUs of this machine a local cluster gives a worker each (CUDA_VISIBLE_DEVICES respected)."""
    return list(range(gpu_count()))


def visible_device(index: int) -> str:
    """What a GPU worker's CUDA_VISIBLE_DEVICES says for this process's GPU `index`: the index itself, or, where
    this process's own CUDA_VISIBLE_DEVICES picks GPUs (`2,3`), the entry it stands for (`3` for index 1)."""
    picked = [part.strip() for part in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if part.strip()]
    return picked[index] if index < len(picked) else str(index)


def _local(workers: int, gpus: list[int]) -> Any:
    import dask
    from distributed import Nanny, Scheduler, SpecCluster
    from distributed.utils import get_mp_context

    # Workers are forked from grader.runner's forkserver (Dask, grader.warm and nbgrader imported there once), not
    # started afresh: 2 to 3 s of CPU each. A forked worker starts with the server's environment; it is given this
    # process's, whole, and drops what this process no longer has (warm.dask_setup).
    dask.config.set({"distributed.worker.multiprocessing-method": "forkserver", **QUIET})
    get_mp_context()  # Dask's own preload list, set once in a process, before runner's replaces it
    runner.start_forkserver()
    env = {**os.environ, **warm.shared_library()}  # the sandboxes' library, written once for every worker
    env[warm.WORKER_ENV] = json.dumps(sorted(env))
    spec: dict[str, Any] = {}
    common = {"nthreads": 1, "dashboard": False, "preload": [PRELOAD]}
    for n in range(workers):
        spec[f"cpu-{n}"] = {"cls": Nanny, "options": {**common, "resources": {CPU: 1}, "env": env}}
    for gpu in gpus:
        options = {**common, "resources": {GPU: 1}, "env": {**env, "CUDA_VISIBLE_DEVICES": visible_device(gpu)}}
        spec[f"gpu-{gpu}"] = {"cls": Nanny, "options": options}
    # no dashboard, and its HTTP server (health and metrics) on a free port: two classes graded at once on a machine
    # would otherwise each ask for 8787, and the second warn on stderr
    options = {"dashboard": False, "dashboard_address": "127.0.0.1:0", "host": "127.0.0.1"}
    scheduler = {"cls": Scheduler, "options": options}
    return SpecCluster(workers=spec, scheduler=scheduler, silence_logs=40)


def _jobqueue(kind: str, workers: int) -> Any:
    try:
        import dask_jobqueue
    except ImportError:
        raise UsageError(f"--cluster {kind} needs dask-jobqueue: pip install dask-jobqueue") from None
    made = {"slurm": dask_jobqueue.SLURMCluster, "pbs": dask_jobqueue.PBSCluster}[kind](
        worker_extra_args=["--preload", PRELOAD]
    )
    made.scale(jobs=workers)
    return made


@contextlib.contextmanager
def open_cluster(spec: str, *, workers: int, gpus: list[int] | None = None) -> Iterator[Any]:
    """A dask.distributed Client on the cluster `spec` names (see the module's doc); closed on exit."""
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")  # workers' start and stop lines are not news
    from distributed import Client

    cluster = None
    if spec == "local":
        cluster = _local(workers, gpu_indices() if gpus is None else gpus)
    elif spec in ("slurm", "pbs"):
        cluster = _jobqueue(spec, workers)
    elif "://" not in spec:
        raise UsageError(f"--cluster {spec!r}: expected local, slurm, pbs or a scheduler address (tcp://HOST:PORT)")
    try:
        client = Client(
            cluster if cluster is not None else spec, timeout=f"{CONNECT_S if cluster is None else WORKER_START_S}s"
        )
    except OSError as exc:
        if cluster is not None:
            cluster.close()
        raise UsageError(f"--cluster {spec}: no scheduler answered ({exc})") from None
    try:
        if cluster is None or spec != "local":
            client.wait_for_workers(1, timeout=WORKER_START_S)
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def declared(client: Any) -> set[str]:
    """The resources the cluster's workers declare."""
    found: set[str] = set()
    for info in client.scheduler_info()["workers"].values():
        found |= set(info.get("resources", {}))
    return found


def run(
    client: Any,
    jobs: Iterable[warm.Job],
    *,
    started: Callable[[str], None] | None = None,
    done: Callable[[Done], None] | None = None,
    submitted: Callable[[], None] | None = None,
) -> list[Done]:
    """Grade the jobs on the cluster, each sent as soon as `jobs` yields it; `submitted` is called once all are
    sent, and `done` in the coordinator as each submission's results arrive."""
    from distributed import wait

    have = declared(client)
    cpu = {CPU: 1} if CPU in have else None
    gpu = {GPU: 1} if GPU in have else cpu
    tag = f"{os.getpid()}-{time.monotonic_ns()}"
    jobs_by_key, checks = {}, []
    for job in jobs:
        key = f"{job.name}-{tag}"
        extracted = client.submit(
            warm.extract, job, GPU not in have, key=f"extract-{key}", resources=cpu, pure=False, retries=RETRIES
        )
        checked = client.submit(
            warm.check, job, extracted, key=f"check-{key}", resources=gpu, pure=False, retries=RETRIES
        )
        jobs_by_key[checked.key] = job
        checks.append(checked)
    if submitted:
        submitted()
    found = []
    seen: set[str] = set()
    pending = set(checks)
    while pending:
        if started:
            _report_started(client, seen, started)
        try:
            finished = wait(list(pending), timeout=1.0, return_when="FIRST_COMPLETED").done
        except TimeoutError:  # nothing finished this second: the bar's names are refreshed
            continue
        for future in finished:
            pending.discard(future)
            job = jobs_by_key[future.key]
            try:
                one = Done(job, future.result())  # the sandbox's cells and the verdicts, not the answers
            except Exception as exc:  # a task that failed on every try, a worker lost too often
                one = Done(job, None, _why(exc))
            found.append(one)
            if done:
                done(one)
    return found


def _report_started(client: Any, seen: set[str], started: Callable[[str], None]) -> None:
    """Tell `started` of submissions a worker is on now (the progress bar names them)."""
    for keys in client.processing().values():
        for key in keys:
            name = str(key).split("-", 1)[1].rsplit("-", 2)[0] if "-" in str(key) else ""
            if name and name not in seen:
                seen.add(name)
                started(name)


def _why(exc: BaseException) -> str:
    name = type(exc).__name__
    if name == "KilledWorker":
        return "its grading worker died on every try (the scheduler gave up on it)"
    text = str(exc).splitlines()[0][:300] if str(exc) else ""
    return f"{name}: {text}" if text else name
