"""Sparse row gathers from a host table too large to copy.

Taught in zero_copy/solutions/zero_copy.ipynb, section 5 (the lesson) and
section 6 (the exercise).

The lesson's experiment: the table lives in mapped memory; the GPU gathers a
batch with one warp per row straight into HBM, with sorted and with unsorted
ids. The CPU path it is measured against gathers the same rows with NumPy into
pinned staging and copies the batch. Every path is checked bit for bit against
NumPy's take.

The graded exercise: the student picks the launch configuration of
`gather_rows` (threads per block, blocks; one warp per row) and the id order
(sorted ids plus the permutation that puts rows back in request order).
`run_gather_exercise` runs exactly that on the GPU from a mapped table;
`simulate_gather` computes on the CPU what the same launch would write, thread
by thread, as the kernel derives its warp and lane. The lesson's own answers,
`zero_copy.kernel.gather_grid` and `sorted_order`, are withheld from students'
code while grading (labcore.answers.reference).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from labcore import reuse
from labcore.answers import reference
from labcore.gpulock import gpu_turn
from labcore.sizes import format_size
from labcore.timing import time_pass
from zero_copy import model
from zero_copy.config import VECTOR_BYTES, PassKey, Planned, as_json
from zero_copy.harness import Lab
from zero_copy.kernel import gather_rows_with, launch_fill_words, launch_gather_rows
from zero_copy.mapped import MappingSupport, alloc_mapped
from zero_copy.verify import compare, mix32, poison

FILL_SAMPLE = 4096
FILL_CHUNK_WORDS = 1 << 22  # filled_rows hashes this many words at a time
WARP = 32
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCKS = 2**31 - 1
POISON = np.uint32(0xFFFFFFFF)


def _runtime() -> Any:
    import cupy  # optional: only a live run reaches here, and offline readers need not install CuPy

    return cupy.cuda.runtime


# -- the lesson's experiment ---------------------------------------------------------------------------


def _take_then_copy(h_table: np.ndarray, ids: np.ndarray, staging: Any, d_out: Any, stream: Any) -> None:
    """The CPU path: NumPy gathers the rows into pinned staging, then one copy sends the batch."""
    rt = _runtime()
    np.take(h_table, ids, axis=0, out=staging.h)
    rt.memcpyAsync(d_out.data.ptr, staging.host_ptr, staging.nbytes, rt.memcpyHostToDevice, stream.ptr)


def _fill_table(lab: Lab, table: Any, plan: dict[str, Any], stream: Any) -> None:
    """The GPU writes the table over the link (timed once), then a sample is checked against the NumPy hash."""
    cfg = lab.config
    n_words = table.nbytes // 4
    fill_row = Planned(plan["fill_key"], nbytes=table.nbytes)
    lab.time(
        partial(launch_fill_words, table.d, n_words, cfg.seed, stream),
        fill_row,
        name="gather fill",
        repeats=1,
        warmup=0,
    )
    sample = np.random.default_rng(cfg.seed + 5).integers(0, n_words, FILL_SAMPLE)
    got = table.h.reshape(-1)[sample]
    ok = np.array_equal(got, mix32(sample, cfg.seed))
    lab.check(
        "gather table fill",
        ok,
        f"{FILL_SAMPLE} sampled words of the {format_size(table.nbytes)} table "
        f"{'match' if ok else 'do not match'} the fill hash",
    )


def run_gather(lab: Lab, rates: model.Rates, support: MappingSupport) -> None:
    """A batch of rows from a mapped table: GPU gather (sorted, unsorted ids) vs CPU take + copy."""
    cfg, cp = lab.config, lab.cp
    plan = model.plan_gather(cfg, rates)
    rows = {row.key.path: row for row in plan["rows"]}
    row_words = cfg.row_bytes // 4
    lab.progress(f"pinning a {format_size(cfg.table_bytes)} mapped table")
    with contextlib.ExitStack() as pinned:
        with gpu_turn():  # pinning is timed: a neighbour pinning or copying at once would slow it
            t0 = time.perf_counter()
            table = pinned.enter_context(alloc_mapped((cfg.table_rows, row_words), np.uint32))
            plan["pin_ms"] = (time.perf_counter() - t0) * 1e3
        stream = table.use(lab.stream())
        _fill_table(lab, table, plan, stream)
        rng = np.random.default_rng(cfg.seed + 6)
        ids = {"unsorted": rng.integers(0, cfg.table_rows, cfg.rows, dtype=np.int64)}
        ids["sorted"], _restore = sorted_order(ids["unsorted"])
        d_out = cp.empty((cfg.rows, row_words), dtype=np.uint32)
        expected = {path: np.take(table.h, host_ids, axis=0) for path, host_ids in ids.items()}
        for path in ("sorted", "unsorted"):
            d_ids = cp.asarray(ids[path])
            fn = partial(launch_gather_rows, table.d, d_ids, cfg.rows, cfg.row_bytes, d_out, stream)
            lab.check_run(f"gather {path}", fn, d_out, expected[path])
            lab.time(fn, rows[path], name="gather")
        with alloc_mapped((cfg.rows, row_words), np.uint32) as staging:
            staging.use(stream)
            cpu_path = partial(_take_then_copy, table.h, ids["sorted"], staging, d_out, stream)
            lab.check_run("gather cpu-take+copy", cpu_path, d_out, expected["sorted"])
            rt = _runtime()
            copy = partial(
                rt.memcpyAsync, d_out.data.ptr, staging.host_ptr, staging.nbytes, rt.memcpyHostToDevice, stream.ptr
            )
            lab.time(copy, rows["copy"], name="gather")
            lab.host_time(
                partial(np.take, table.h, ids["sorted"], axis=0, out=staging.h), rows["cpu-take"], name="gather"
            )
            lab.time(cpu_path, rows["cpu-take+copy"], name="gather")
        plan["ids_unique"] = int(np.unique(ids["sorted"]).size)
    lab.record.extra["gather"] = as_json(plan)


# -- the exercise: launch configuration and id order ----------------------------------------------------


@reference
def sorted_order(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ids in ascending order (a stable sort) and the permutation that puts gathered rows back in request
    order: sorted_ids[restore[i]] == ids[i]. The gather exercise's id order, withheld while grading."""
    order = np.argsort(ids, kind="stable")
    inverse = np.empty(order.size, dtype=np.int64)
    inverse[order] = np.arange(order.size)
    sorted_ids = ids[order]
    return sorted_ids, inverse


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
        return (
            f"{blocks:,} blocks x {threads} threads = {total:,} threads = {total // WARP:,} warps for "
            f"{n_rows:,} rows; one warp per row needs {WARP * n_rows:,} threads"
        )
    if threads % WARP:
        return (
            f"threads_per_block = {threads} is not a multiple of {WARP}: the kernel takes a thread's row from "
            f"its global index / 32 but its lane from threadIdx.x % 32, so a warp that straddles two blocks "
            f"gets some lanes twice and others never"
        )
    return None


def idle_blocks(threads: int, blocks: int, n_rows: int) -> int:
    """Whole blocks that have no row to copy (they launch, find warp >= n_ids, and return)."""
    needed = -(-WARP * n_rows // threads)
    return max(0, blocks - needed)


def _integers(value: Any) -> np.ndarray | None:
    """`value` as an integer array, or None when it is not one (ragged lists, strings, numbers beyond int64)."""
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError, OverflowError):
        return None
    return arr if arr.dtype.kind in "iu" else None


def order_problem(ids: np.ndarray, sorted_ids: Any, restore: Any, table_rows: int | None = None) -> str | None:
    """Whether gathering `sorted_ids` and then taking rows `restore` gives the rows of `ids`, in order (and, given
    `table_rows`, whether every id the gather would read is a row of the table)."""
    n = ids.size
    arrays = {}
    for name, value in (("sorted_ids", sorted_ids), ("restore", restore)):
        arr = _integers(value)
        if arr is None or arr.shape != (n,):
            got = f"shape {arr.shape} of {arr.dtype}" if arr is not None else _described(value)
            return f"{name} should be {n:,} integers (shape ({n},)), got {got}"
        arrays[name] = arr
    sorted_ids, restore = arrays["sorted_ids"], arrays["restore"]
    if restore.min() < 0 or restore.max() >= n:
        return f"restore holds positions outside 0..{n - 1} (min {restore.min()}, max {restore.max()})"
    if table_rows is not None and (sorted_ids.min() < 0 or sorted_ids.max() >= table_rows):
        return (
            f"sorted_ids holds row ids outside the table's 0..{table_rows - 1} (min {sorted_ids.min()}, max "
            f"{sorted_ids.max()}): the gather would read past the table"
        )
    back = sorted_ids[restore]
    wrong = np.flatnonzero(back != ids)
    if wrong.size:
        i = int(wrong[0])
        return (
            f"{wrong.size:,} of {n:,} rows come back in the wrong place: result row {i} would hold table row "
            f"{int(back[i])} (sorted_ids[restore[{i}]]), but request {i} asked for row {int(ids[i])}; "
            f"restore must undo the sort"
        )
    return None


def _described(value: Any) -> str:
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError, OverflowError):
        return f"a {type(value).__name__} that is not an array"
    return f"shape {arr.shape} of {arr.dtype}"


def first_descent(ids: Any) -> int | None:
    """The first position where ids go down (None when they are in ascending order)."""
    arr = np.asarray(ids)
    down = np.flatnonzero(np.diff(arr) < 0)
    return int(down[0]) if down.size else None


def filled_rows(rows: np.ndarray, row_words: int, seed: int) -> np.ndarray:
    """Rows `rows` of the table that launch_fill_words fills (word i of the table = mix32(i + seed)), computed on
    the CPU: the rows a gather reads, without the rest of a table too large to build."""
    out = np.empty((rows.size, row_words), dtype=np.uint32)
    step = max(1, FILL_CHUNK_WORDS // row_words)
    for start in range(0, rows.size, step):
        part = np.asarray(rows[start : start + step], dtype=np.int64)
        out[start : start + part.size] = mix32(part[:, None] * row_words + np.arange(row_words), seed)
    return out


def simulate_gather(h_table: np.ndarray, ids: np.ndarray, threads: int, blocks: int, out: np.ndarray) -> None:
    """What gather_rows writes into `out` for this grid, computed on the CPU thread by thread.

    The kernel's own arithmetic: global thread t = blockIdx.x * blockDim.x + threadIdx.x,
    warp = t / 32, lane = threadIdx.x % 32; warp w (< n_ids) copies 16-byte words lane,
    lane + 32, ... of table row ids[w] into out row w. Threads past 32 * n_ids do nothing.
    """
    n_ids, row_vecs = ids.size, h_table.shape[1] * h_table.itemsize // VECTOR_BYTES
    table_vecs = h_table.view(np.uint32).reshape(h_table.shape[0], row_vecs, 4)
    out_vecs = out.view(np.uint32).reshape(n_ids, row_vecs, 4)
    t = np.arange(min(threads * blocks, WARP * n_ids), dtype=np.int64)
    warp, lane = t // WARP, (t % threads) % WARP
    rows = ids[warp]
    for first in range(0, row_vecs, WARP):
        j = lane + first
        live = j < row_vecs
        out_vecs[warp[live], j[live]] = table_vecs[rows[live], j[live]]


def written_from(ids: np.ndarray, threads: int, blocks: int, row_vecs: int) -> np.ndarray:
    """Which table row gather_rows copies into each 16-byte word of each output row for this grid: an
    (n_ids, row_vecs) array of row ids, -1 where nothing writes. It is simulate_gather's result for a table whose
    words each hold their row's id, computed per warp rather than per word: thread t is lane (t % threads) % 32 of
    warp t / 32, and a warp's lane l copies words l, l + 32, ... of its row; threads past 32 * n_ids do nothing."""
    lanes = _lanes(ids.size, threads, blocks)
    return np.where(lanes[:, np.arange(row_vecs) % WARP], np.asarray(ids, dtype=np.int64)[:, None], -1)


def rows_written_whole(n_ids: int, threads: int, blocks: int, row_vecs: int) -> np.ndarray:
    """Whether gather_rows writes every 16-byte word of each output row for this grid (a bool per row): the
    rows of written_from that hold no -1, found from the warps' lanes alone, without the (n_ids, row_vecs) array."""
    if threads % WARP == 0:  # every warp whole: thread t is lane t % 32 of warp t / 32, and the first warps run
        return np.arange(n_ids) < threads * blocks // WARP
    needed = np.unique(np.arange(row_vecs) % WARP)  # the lanes that copy some word of a row
    return _lanes(n_ids, threads, blocks)[:, needed].all(axis=1)


def _lanes(n_ids: int, threads: int, blocks: int) -> np.ndarray:
    """(n_ids, 32) bools: whether lane l of the warp that copies row i runs in this grid."""
    t = np.arange(min(threads * blocks, WARP * n_ids), dtype=np.int64)
    lanes = np.zeros((n_ids, WARP), dtype=bool)
    lanes[t // WARP, (t % threads) % WARP] = True
    return lanes


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


TABLE_GRAIN_WORDS = 16 << 20  # a kept gather table's capacity is a multiple of this many uint32 (64 MiB)


def run_gather_exercise(
    ids: np.ndarray,
    threads: int,
    blocks: int,
    sorted_ids: np.ndarray,
    restore: np.ndarray,
    *,
    row_bytes: int,
    table_bytes: int,
    seed: int,
    repeats: int = 0,
) -> GatherRun:
    """Gather `sorted_ids` from a mapped table with this grid, put rows back with `restore`, compare with NumPy.

    With repeats > 0 it then times, in the same run, the gather kernel, the restore (an HBM pass) and the pinned
    copy of the same batch from staging, each a median of `repeats` after a warm-up.
    """
    import cupy as cp  # optional: only a live check reaches here, and offline graders need not install CuPy

    n, row_words = ids.size, row_bytes // 4
    table_rows = table_bytes // row_bytes
    stream = cp.cuda.Stream(non_blocking=False)  # blocking: the timing's legacy-stream events wait for it
    shape, words = (table_rows, row_words), table_rows * row_words
    # One kept buffer serves every row size of about the same table size (the checks' tables are all just under
    # 1 GiB): keyed by its capacity, viewed with this check's shape. Keyed by shape, the hidden tests' four row
    # sizes and two staging sizes overflowed reuse.MAX_KEPT, and every submission pinned its tables again.
    capacity = -(-words // TABLE_GRAIN_WORDS) * TABLE_GRAIN_WORDS
    with reuse.borrowed(("gather table", capacity), partial(alloc_mapped, capacity, np.uint32)) as buffer:
        buffer.use(stream)  # refilled below with this check's seed: a kept table's old rows are all overwritten
        h_table, d_table = buffer.h[:words].reshape(shape), buffer.d[:words].reshape(shape)
        with gpu_turn():  # untimed, but it would disturb a neighbour's timed pass
            launch_fill_words(d_table, words, seed, stream)
            stream.synchronize()
        expected = np.take(h_table, ids, axis=0)
        d_ids = cp.asarray(np.asarray(sorted_ids, dtype=np.int64))
        d_restore = cp.asarray(np.asarray(restore, dtype=np.int64))
        d_sorted = cp.empty((n, row_words), dtype=np.uint32)
        d_out = cp.empty_like(d_sorted)

        def gather() -> None:
            gather_rows_with(d_table, d_ids, n, row_bytes, d_sorted, threads, blocks, stream)

        def put_back() -> None:
            with stream:
                cp.take(d_sorted, d_restore, axis=0, out=d_out)

        with gpu_turn():
            poison(d_sorted)
            poison(d_out)
            cp.cuda.Device().synchronize()
            gather()
            put_back()
            stream.synchronize()
        ok, detail = compare(cp.asnumpy(d_out), expected)
        run = GatherRun(ok, detail, n, row_bytes, table_rows * row_bytes)
        if ok and repeats:
            _time_gather_exercise(run, gather, put_back, d_sorted, stream, repeats)
    return run


def _time_gather_exercise(
    run: GatherRun, gather: Callable[[], None], put_back: Callable[[], None], d_dst: Any, stream: Any, repeats: int
) -> None:
    """Medians of the gather, the restore and the pinned H2D copy of the same batch, all in this run."""
    rt = _runtime()
    with reuse.borrowed(("gather staging", d_dst.shape), partial(alloc_mapped, d_dst.shape, np.uint32)) as staging:
        staging.use(stream)  # its bytes do not matter: a copy's speed does not depend on them

        def copy() -> None:
            rt.memcpyAsync(d_dst.data.ptr, staging.host_ptr, staging.nbytes, rt.memcpyHostToDevice, stream.ptr)

        timed = {}
        for name, fn in (("gather", gather), ("restore", put_back), ("copy", copy)):
            found = time_pass(
                fn,
                key=str(PassKey("exercise", name, rows=run.n_rows)),
                name=f"exercise {name}",
                params={},
                domain="grader",
                repeats=repeats,
                bytes_moved=run.batch_bytes,
            )
            timed[name] = found.median_ms
    run.gather_ms, run.restore_ms, run.copy_ms = timed["gather"], timed["restore"], timed["copy"]
