"""What the zero-copy notebook's graded exercises run, live on a GPU and modelled on the CPU.

The gather exercise: the student picks the launch configuration of
`gather_rows` (threads per block, blocks; one warp per row) and the id order
(sorted ids plus the permutation that puts rows back in request order).
`run_gather` runs exactly that on the GPU from a mapped table;
`simulate_gather` computes on the CPU what the same launch would write, thread
by thread, as the kernel derives its warp and lane. The mailbox exercise: the
student writes the `publish` step (payload, fence, flag) in CUDA C++;
`mailbox_rounds` wraps it in the lesson's wait-for-release kernel and reads the
payload while that kernel still runs.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from labcore.profiles import default_profile
from labcore.record import Record, load
from zero_copy import LESSON
from zero_copy.config import PassKey
from zero_copy.kernel import KERNEL_PATH, MAILBOX, MAILBOX_WORDS, compile_options, launch_fill_words, module

WARP = 32
VEC_BYTES = 16  # gather_rows moves uint4 words
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCKS = 2**31 - 1
POISON = np.uint32(0xFFFFFFFF)


# -- the recorded profile -----------------------------------------------------------------------------

def profile_path(path: str | Path | None = None) -> Path:
    """The results.json to replay: the shipped H200 one, or the one at `path` (a directory or the file)."""
    path = Path(path) if path is not None else default_profile(LESSON)
    return path / "results.json" if path.is_dir() else path


def load_profile(path: str | Path | None = None) -> Record:
    """The recorded run at profile_path(path); ValueError when it records another lesson."""
    path = profile_path(path)
    record = load(path)
    if record.lesson != LESSON:
        raise ValueError(f"{path} records the {record.lesson!r} lesson, not {LESSON!r}")
    return record


# -- the gather: launch configuration and id order ----------------------------------------------------

def launch_problem(threads: Any, blocks: Any) -> str | None:
    """Why CUDA would refuse this launch (or None): whole numbers, 1..1024 threads, 1..2^31-1 blocks."""
    for name, value, top in (("threads_per_block", threads, MAX_THREADS_PER_BLOCK), ("blocks", blocks, MAX_BLOCKS)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            return f"{name} must be a whole number, got {value!r} ({type(value).__name__})"
        if not 1 <= int(value) <= top:
            return f"{name} = {value} is outside what CUDA launches (1..{top})"
    return None


def mapping_problem(threads: int, blocks: int, n_rows: int) -> str | None:
    """What is wrong with a grid meant to give each of n_rows rows one warp (None when nothing is)."""
    total = threads * blocks
    if total < WARP * n_rows:
        return (f"{blocks:,} blocks x {threads} threads = {total:,} threads = {total // WARP:,} warps for "
                f"{n_rows:,} rows; one warp per row needs {WARP * n_rows:,} threads")
    if threads % WARP:
        return (f"threads_per_block = {threads} is not a multiple of {WARP}: the kernel takes a thread's row from "
                f"its global index / 32 but its lane from threadIdx.x % 32, so a warp that straddles two blocks "
                f"gets some lanes twice and others never")
    return None


def idle_blocks(threads: int, blocks: int, n_rows: int) -> int:
    """Whole blocks that have no row to copy (they launch, find warp >= n_ids, and return)."""
    needed = -(-WARP * n_rows // threads)
    return max(0, blocks - needed)


def order_problem(ids: np.ndarray, sorted_ids: Any, restore: Any) -> str | None:
    """Whether gathering `sorted_ids` and then taking rows `restore` gives the rows of `ids`, in order."""
    n = ids.size
    for name, value in (("sorted_ids", sorted_ids), ("restore", restore)):
        arr = np.asarray(value)
        if arr.shape != (n,) or arr.dtype.kind not in "iu":
            return f"{name} should be {n:,} integers (shape ({n},)), got shape {arr.shape} of {arr.dtype}"
    sorted_ids, restore = np.asarray(sorted_ids), np.asarray(restore)
    if restore.min() < 0 or restore.max() >= n:
        return f"restore holds positions outside 0..{n - 1} (min {restore.min()}, max {restore.max()})"
    back = sorted_ids[restore]
    wrong = np.flatnonzero(back != ids)
    if wrong.size:
        i = int(wrong[0])
        return (f"{wrong.size:,} of {n:,} rows come back in the wrong place: result row {i} would hold table row "
                f"{int(back[i])} (sorted_ids[restore[{i}]]), but request {i} asked for row {int(ids[i])}; "
                f"restore must undo the sort")
    return None


def first_descent(ids: Any) -> int | None:
    """The first position where ids go down (None when they are in ascending order)."""
    arr = np.asarray(ids)
    down = np.flatnonzero(np.diff(arr) < 0)
    return int(down[0]) if down.size else None


def simulate_gather(h_table: np.ndarray, ids: np.ndarray, threads: int, blocks: int, out: np.ndarray) -> None:
    """What gather_rows writes into `out` for this grid, computed on the CPU thread by thread.

    The kernel's own arithmetic: global thread t = blockIdx.x * blockDim.x + threadIdx.x,
    warp = t / 32, lane = threadIdx.x % 32; warp w (< n_ids) copies 16-byte words lane,
    lane + 32, ... of table row ids[w] into out row w. Threads past 32 * n_ids do nothing.
    """
    n_ids, row_vecs = ids.size, h_table.shape[1] * h_table.itemsize // VEC_BYTES
    table_vecs = h_table.view(np.uint32).reshape(h_table.shape[0], row_vecs, 4)
    out_vecs = out.view(np.uint32).reshape(n_ids, row_vecs, 4)
    t = np.arange(min(threads * blocks, WARP * n_ids), dtype=np.int64)
    warp, lane = t // WARP, (t % threads) % WARP
    rows = ids[warp]
    for first in range(0, row_vecs, WARP):
        j = lane + first
        live = j < row_vecs
        out_vecs[warp[live], j[live]] = table_vecs[rows[live], j[live]]


def gather_rows_with(d_table: Any, d_ids: Any, n_ids: int, row_bytes: int, d_out: Any, threads: int, blocks: int,
                     stream: Any) -> None:
    """Launch the lesson's gather_rows kernel with the given grid (zero_copy.kernel launches it with its own)."""
    module().get_function("gather_rows")((int(blocks),), (int(threads),),
                                         (d_table, d_ids, np.int32(n_ids), np.int32(row_bytes // VEC_BYTES), d_out),
                                         stream=stream)


@dataclasses.dataclass
class GatherRun:
    """One live run of a student's gather: the verdict and, when timed, the medians of the same run."""

    ok: bool
    detail: str
    n_rows: int
    row_bytes: int
    table_bytes: int
    gather_ms: float | None = None
    copy_ms: float | None = None
    restore_ms: float | None = None

    @property
    def batch_bytes(self) -> int:
        return self.n_rows * self.row_bytes

    @property
    def fraction_of_copy(self) -> float | None:
        """The gather's GB/s over the pinned copy's GB/s for the same bytes."""
        return None if not self.gather_ms or not self.copy_ms else self.copy_ms / self.gather_ms

    def gbps(self, ms: float | None) -> float | None:
        return None if not ms else self.batch_bytes / (ms * 1e6)


def run_gather(ids: np.ndarray, threads: int, blocks: int, sorted_ids: np.ndarray, restore: np.ndarray, *,
               row_bytes: int, table_bytes: int, seed: int, repeats: int = 0) -> GatherRun:
    """Gather `sorted_ids` from a mapped table with this grid, put rows back with `restore`, compare with NumPy.

    With repeats > 0 it then times, in the same run, the gather kernel, the restore (an HBM pass) and the pinned
    copy of the same batch from staging, each a median of `repeats` after a warm-up.
    """
    import cupy as cp

    from zero_copy.lab import compare, poison
    from zero_copy.mapped import alloc_mapped

    n, row_words = ids.size, row_bytes // 4
    table_rows = table_bytes // row_bytes
    stream = cp.cuda.Stream(non_blocking=False)  # blocking: the timing's legacy-stream events wait for it
    with alloc_mapped((table_rows, row_words), np.uint32) as table:
        table.use(stream)
        launch_fill_words(table.d, table.nbytes // 4, seed, stream)
        stream.synchronize()
        expected = np.take(table.h, ids, axis=0)
        d_ids = cp.asarray(np.asarray(sorted_ids, dtype=np.int64))
        d_restore = cp.asarray(np.asarray(restore, dtype=np.int64))
        d_sorted = cp.empty((n, row_words), dtype=np.uint32)
        d_out = cp.empty_like(d_sorted)

        def gather() -> None:
            gather_rows_with(table.d, d_ids, n, row_bytes, d_sorted, threads, blocks, stream)

        def put_back() -> None:
            with stream:
                cp.take(d_sorted, d_restore, axis=0, out=d_out)

        poison(d_sorted)
        poison(d_out)
        cp.cuda.Device().synchronize()
        gather()
        put_back()
        stream.synchronize()
        ok, detail = compare(cp.asnumpy(d_out), expected)
        run = GatherRun(ok, detail, n, row_bytes, table_rows * row_bytes)
        if ok and repeats:
            _time_gather(run, gather, put_back, d_sorted, stream, repeats)
    return run


def _time_gather(run: GatherRun, gather: Callable[[], None], put_back: Callable[[], None],
                 d_dst: Any, stream: Any, repeats: int) -> None:
    """Medians of the gather, the restore and the pinned H2D copy of the same batch, all in this run."""
    import cupy as cp

    from labcore.timing import time_pass
    from zero_copy.mapped import alloc_mapped

    rt = cp.cuda.runtime
    with alloc_mapped(d_dst.shape, np.uint32) as staging:
        staging.use(stream)  # its bytes do not matter: a copy's speed does not depend on them

        def copy() -> None:
            rt.memcpyAsync(d_dst.data.ptr, staging.host_ptr, staging.nbytes, rt.memcpyHostToDevice, stream.ptr)

        timed = {}
        for name, fn in (("gather", gather), ("restore", put_back), ("copy", copy)):
            found = time_pass(fn, key=str(PassKey("exercise", name, rows=run.n_rows)), name=f"exercise {name}",
                              params={},
                              domain="grader", repeats=repeats, bytes_moved=run.batch_bytes)
            timed[name] = found.median_ms
    run.gather_ms, run.restore_ms, run.copy_ms = timed["gather"], timed["restore"], timed["copy"]


# -- the mailbox: the student's publish step inside the lesson's wait-for-release kernel -----------------

MAILBOX_WRAPPER = r"""
// ---- the student's publish step; compiler errors name its own lines: "your_publish(3): error ..." ----
#line 1 "your_publish"
PUBLISH_SOURCE
#line 1 "exercise_kernel"

// One thread: the student's publish, then the lesson's wait for the host's release, so the
// kernel cannot finish before the host has read the payload.
extern "C" __global__ void exercise_publish_and_wait(volatile int* box, int round, long long timeout_ns) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    unsigned long long t_publish = global_ns();
    *reinterpret_cast<volatile unsigned long long*>(box + MB_T_PUBLISH) = t_publish;
    publish(box, round);
    wait_for_release(box, round, t_publish, timeout_ns);
}
"""


class PublishCompileError(ValueError):
    """NVRTC rejected the student's publish step; the message holds the compiler's first error lines."""


def mailbox_source(publish_source: str) -> str:
    """The whole kernel source: the lesson's kernels (global_ns, wait_for_release), then the student's publish
    step inside the exercise kernel."""
    return KERNEL_PATH.read_text() + MAILBOX_WRAPPER.replace("PUBLISH_SOURCE", publish_source)


def compile_publish(publish_source: str) -> Any:
    """The compiled exercise kernel; PublishCompileError with the compiler's first error lines."""
    import cupy as cp
    from cupy.cuda.compiler import CompileException

    try:
        return cp.RawModule(code=mailbox_source(publish_source),
                            options=compile_options()).get_function("exercise_publish_and_wait")
    except CompileException as exc:
        errors = [line.strip() for line in str(exc).splitlines() if "error" in line]
        raise PublishCompileError("; ".join(errors[:3]) or str(exc).splitlines()[0]) from None


def one_round(kernel: Any, box: Any, round_no: int, stream: Any) -> dict[str, Any]:
    """Launch, poll the flag, read the payload while the kernel runs, release it, then wait for the stream."""
    from zero_copy.mailbox import HOST_TIMEOUT_S, KERNEL_TIMEOUT_NS, _wait_for_flag, expected_payload

    h_box = box.h
    h_box[:] = 0
    t_launch = time.perf_counter()
    kernel((1,), (32,), (box.d, np.int32(round_no), np.int64(KERNEL_TIMEOUT_NS)), stream=stream)
    seen = _wait_for_flag(h_box, round_no, t_launch + HOST_TIMEOUT_S)
    t_seen = time.perf_counter()
    start = MAILBOX["PAYLOAD"]
    payload = h_box[start:start + MAILBOX["PAYLOAD_WORDS"]].tolist()
    running = not stream.done
    h_box[MAILBOX["RELEASE"]] = round_no
    stream.synchronize()
    return {"round": round_no, "flag_seen": seen, "flag_seen_ms": (t_seen - t_launch) * 1e3, "payload": payload,
            "payload_ok": seen and payload == expected_payload(round_no), "running_when_read": running,
            "acked": bool(h_box[MAILBOX["ACK"]] == round_no),
            "timed_out": bool(h_box[MAILBOX["TIMED_OUT"]] == round_no)}


def mailbox_rounds(publish_source: str, rounds: int) -> list[dict[str, Any]]:
    """Compile the student's publish step and run `rounds` rounds of launch, poll, read, release."""
    import cupy as cp

    from zero_copy.mapped import alloc_mapped

    kernel = compile_publish(publish_source)
    with alloc_mapped(MAILBOX_WORDS, np.int32) as box:
        # Non-blocking: no implicit synchronisation with the legacy stream can stall the poll.
        stream = box.use(cp.cuda.Stream(non_blocking=True))
        return [one_round(kernel, box, n, stream) for n in range(1, rounds + 1)]


# -- the publish step's order, read from its source -------------------------------------------------------

_PAYLOAD_STORE = re.compile(r"(\bbox\s*\[\s*MB_PAYLOAD\b[^\]]*\]|\*\s*\(\s*box\s*\+\s*MB_PAYLOAD\b[^)]*\))\s*=(?!=)")
_FLAG_STORE = re.compile(r"(\bbox\s*\[\s*MB_FLAG\s*\]|\*\s*\(\s*box\s*\+\s*MB_FLAG\s*\))\s*=(?!=)")
_SYSTEM_FENCE = re.compile(r"\b__threadfence_system\s*\(\s*\)")
_DEVICE_FENCE = re.compile(r"\b__threadfence\s*\(\s*\)")
_SIGNATURE = re.compile(r"__device__\s+(?:__forceinline__\s+|inline\s+)?void\s+publish\s*\(\s*volatile\s+int\s*\*"
                        r"\s*box\s*,\s*int\s+round\s*\)")


def strip_comments(source: str) -> str:
    """CUDA source without // and /* */ comments (a fence in a comment orders nothing)."""
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", source, flags=re.S))


def publish_order_problem(source: str) -> str | None:
    """What is wrong with the order of payload stores, __threadfence_system() and the flag store (None if nothing)."""
    code = strip_comments(source)
    if not _SIGNATURE.search(code):
        return "define __device__ void publish(volatile int* box, int round) { ... }"
    payload = [m.start() for m in _PAYLOAD_STORE.finditer(code)]
    flags = [m.start() for m in _FLAG_STORE.finditer(code)]
    fences = [m.start() for m in _SYSTEM_FENCE.finditer(code)]
    if not payload:
        return "no payload store found: write the words as box[MB_PAYLOAD + w] = ..."
    if not flags:
        return "no flag store found: raise the flag with box[MB_FLAG] = round"
    if flags[0] < payload[-1]:
        return "the flag is stored before the last payload store: the host may see the flag with an old payload"
    if not fences:
        if _DEVICE_FENCE.search(code):
            return ("__threadfence() orders the stores only as other threads of the GPU see them; the host needs "
                    "__threadfence_system() between the payload and the flag")
        return "no __threadfence_system() between the payload and the flag: nothing orders them for the host"
    if not any(payload[-1] < f < flags[0] for f in fences):
        where = "after the flag" if fences[0] > flags[0] else "before the payload"
        return (f"__threadfence_system() comes {where}; it must sit between the last payload store and the flag "
                f"store, so the host sees the payload before the flag")
    return None
