"""Sparse row gathers from a host table too large to copy (seed 000, "Pattern 1").

The table lives in mapped memory; the GPU gathers a batch with one warp per
row straight into HBM, with sorted and with unsorted ids. The CPU path it is
measured against gathers the same rows with NumPy into pinned staging and
copies the batch. Every path is checked bit for bit against NumPy's take.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import numpy as np

from labcore.sizes import format_size
from zero_copy import model
from zero_copy.config import Planned, as_json
from zero_copy.kernel import launch_fill_words, launch_gather_rows, mix32
from zero_copy.lab import Lab
from zero_copy.mapped import alloc_mapped
from zero_copy.support import MappingSupport

FILL_SAMPLE = 4096


def _runtime() -> Any:
    import cupy

    return cupy.cuda.runtime


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
    lab.time(partial(launch_fill_words, table.d, n_words, cfg.seed, stream), fill_row, name="gather fill",
             repeats=1, warmup=0)
    sample = np.random.default_rng(cfg.seed + 5).integers(0, n_words, FILL_SAMPLE)
    got = table.h.reshape(-1)[sample]
    ok = np.array_equal(got, mix32(sample, cfg.seed))
    lab.check("gather table fill", ok, f"{FILL_SAMPLE} sampled words of the {format_size(table.nbytes)} table "
              f"{'match' if ok else 'do not match'} the fill hash")


def run_gather(lab: Lab, rates: model.Rates, support: MappingSupport) -> None:
    """A batch of rows from a mapped table: GPU gather (sorted, unsorted ids) vs CPU take + copy."""
    cfg, cp = lab.config, lab.cp
    plan = model.plan_gather(cfg, rates)
    rows = {row.key.path: row for row in plan["rows"]}
    row_words = cfg.row_bytes // 4
    lab.progress(f"pinning a {format_size(cfg.table_bytes)} mapped table")
    t0 = time.perf_counter()
    with alloc_mapped((cfg.table_rows, row_words), np.uint32) as table:
        plan["pin_ms"] = (time.perf_counter() - t0) * 1e3
        stream = table.use(lab.stream())
        _fill_table(lab, table, plan, stream)
        rng = np.random.default_rng(cfg.seed + 6)
        ids = {"unsorted": rng.integers(0, cfg.table_rows, cfg.rows, dtype=np.int64)}
        ids["sorted"] = np.sort(ids["unsorted"])
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
            copy = partial(rt.memcpyAsync, d_out.data.ptr, staging.host_ptr, staging.nbytes,
                           rt.memcpyHostToDevice, stream.ptr)
            lab.time(copy, rows["copy"], name="gather")
            lab.host_time(partial(np.take, table.h, ids["sorted"], axis=0, out=staging.h), rows["cpu-take"],
                          name="gather")
            lab.time(cpu_path, rows["cpu-take+copy"], name="gather")
        plan["ids_unique"] = int(np.unique(ids["sorted"]).size)
    lab.record.extra["gather"] = as_json(plan)
