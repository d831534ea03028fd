"""The arithmetic the experiments are judged by (zero_copy/solutions/zero_copy.ipynb, sections 2 and 3).

B is a buffer's size, r how often a kernel reads each byte, L the link rate
(a pinned copy) and H the HBM rate (a device copy). Copying costs B/L for the
transfer plus r·B/H for the reads; zero-copy costs r·B/L, since nothing is
cached for reuse that can be relied on. Every `plan_*` returns the passes an
experiment measures (typed keys, zero_copy.config.Planned rows) with the
model's time beside each; the experiments fill them, the report reads them back.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from labcore.answers import reference
from labcore.pipeline.kernel import DEFAULT_FMAS
from labcore.sizes import format_size
from zero_copy.config import HBM_PROBE_BYTES, PROBE_BYTES, VECTOR_BYTES, Config, PassKey, Planned
from zero_copy.kernel import THREADS

WORD_BYTES = 4
SECTOR_BYTES = 32  # the smallest read a scattered load can turn into


@dataclasses.dataclass(frozen=True)
class Rates:
    """The measured inputs of the model, in decimal GB/s."""

    h2d_gbps: float
    d2h_gbps: float
    hbm_gbps: float


def transfer_ms(nbytes: float, gbps: float) -> float:
    """Milliseconds to move nbytes at gbps (decimal GB/s)."""
    return nbytes / (gbps * 1e6)


def copy_path_ms(nbytes: int, reads: int, rates: Rates) -> float:
    """Copy, then read r times from HBM: B/L + r·B/H."""
    return transfer_ms(nbytes, rates.h2d_gbps) + reads * transfer_ms(nbytes, rates.hbm_gbps)


def zero_copy_ms(nbytes: int, reads: int, link_gbps: float) -> float:
    """Read r times over the link: r·B/L."""
    return reads * transfer_ms(nbytes, link_gbps)


@reference
def crossover_reads(link_gbps: float, hbm_gbps: float, zero_copy_gbps: float | None = None) -> float:
    """The r at which B/L + r·B/H = r·B/Lz (Lz = L unless zero-copy loads run at their own rate); inf if never.

    With Lz = L it is the break-even exercise's answer, withheld from students' code while grading.
    """
    lz = zero_copy_gbps or link_gbps
    denominator = 1.0 / lz - 1.0 / hbm_gbps
    return math.inf if denominator <= 0 else (1.0 / link_gbps) / denominator


def fit_breakeven(reads: list[int], zero_copy: list[float], copy: list[float]) -> dict[str, float]:
    """Fit zero-copy = a·r (through 0) and copy = c + d·r; their crossing is the measured break-even."""
    a = sum(r * t for r, t in zip(reads, zero_copy, strict=True)) / sum(r * r for r in reads)
    mean_r, mean_t = sum(reads) / len(reads), sum(copy) / len(copy)
    spread = sum((r - mean_r) ** 2 for r in reads)
    d = sum((r - mean_r) * (t - mean_t) for r, t in zip(reads, copy, strict=True)) / spread
    c = mean_t - d * mean_r
    r_star = c / (a - d) if a > d else math.inf
    return {"zero_copy_ms_per_read": a, "copy_fixed_ms": c, "copy_ms_per_read": d, "crossover_reads": r_star}


def plan_probes() -> dict[str, Any]:
    """The three copies that measure L (each direction) and H; the HBM copy counts bytes read and written."""
    return {
        "rows": [
            Planned(PassKey("probe", "h2d", nbytes=PROBE_BYTES), "pinned H2D copy (L)", nbytes=PROBE_BYTES),
            Planned(PassKey("probe", "d2h", nbytes=PROBE_BYTES), "pinned D2H copy", nbytes=PROBE_BYTES),
            Planned(
                PassKey("probe", "hbm", nbytes=HBM_PROBE_BYTES),
                "HBM device copy (H, read+write)",
                nbytes=2 * HBM_PROBE_BYTES,
                params={"copy_bytes": HBM_PROBE_BYTES},
            ),
        ]
    }


def _row(key: PassKey, label: str, model_ms: float | None, nbytes: int, **more: Any) -> Planned:
    return Planned(key, label, model_ms, nbytes, more)


def plan_streaming(cfg: Config, rates: Rates) -> dict[str, Any]:
    """Read B once: zero-copy B/L; copy then kernel B/L + 2B/H; a pipeline hides all but one chunk's kernel."""
    b, c = cfg.stream_bytes, cfg.chunk_bytes
    link = transfer_ms(b, rates.h2d_gbps)
    kernel = 2 * transfer_ms(b, rates.hbm_gbps)  # the HBM kernel reads B and writes B

    def key(path: str, **chunked: int) -> PassKey:
        return PassKey("streaming", path, nbytes=b, **chunked)

    return {
        "nbytes": b,
        "chunk_bytes": c,
        "n_streams": cfg.n_streams,
        "rows": [
            _row(key("zero-copy"), "zero-copy: kernel reads mapped memory", link, b, path="zero-copy"),
            _row(key("zero-copy-wc"), "zero-copy, write-combined buffer", link, b, path="zero-copy-wc"),
            _row(key("copy-then-kernel"), "copy, then kernel", link + kernel, b, path="copy-then-kernel"),
            _row(
                key("pipeline", chunk_bytes=c, n_streams=cfg.n_streams),
                f"pipeline: {format_size(c)} chunks on {cfg.n_streams} streams",
                link + kernel * c / b,
                b,
                path="pipeline",
            ),
        ],
    }


def plan_breakeven(cfg: Config, rates: Rates) -> dict[str, Any]:
    """Each r in cfg.reads: zero-copy r·B/L against copy B/L + r·B/H, and the crossover they predict."""
    b = cfg.buffer_bytes
    rows = [
        {
            "reads": r,
            "zero_copy": _row(
                PassKey("breakeven", "zero-copy", reads=r, nbytes=b),
                f"zero-copy r={r}",
                zero_copy_ms(b, r, rates.h2d_gbps),
                r * b,
            ),
            "copy": _row(
                PassKey("breakeven", "copy", reads=r, nbytes=b), f"copy then kernel r={r}", copy_path_ms(b, r, rates), b
            ),
        }
        for r in sorted(set(cfg.reads))
    ]
    return {"nbytes": b, "rows": rows, "crossover_model": crossover_reads(rates.h2d_gbps, rates.hbm_gbps)}


def plan_access(cfg: Config, rates: Rates) -> dict[str, Any]:
    """4-byte loads over the link: coalesced at L; scattered at most L·4/32 (one 32-byte sector per word)."""
    b = cfg.buffer_bytes
    scattered_gbps = rates.h2d_gbps * WORD_BYTES / SECTOR_BYTES
    return {
        "nbytes": b,
        "rows": [
            _row(
                PassKey("access", "coalesced", nbytes=b),
                "coalesced: a warp loads 128 contiguous bytes",
                transfer_ms(b, rates.h2d_gbps),
                b,
                pattern="coalesced",
                model_gbps=rates.h2d_gbps,
            ),
            _row(
                PassKey("access", "scattered", nbytes=b),
                "scattered: 32 lanes, 32 different lines",
                transfer_ms(b, scattered_gbps),
                b,
                pattern="scattered",
                model_gbps=scattered_gbps,
            ),
        ],
    }


def plan_gather(cfg: Config, rates: Rates) -> dict[str, Any]:
    """A batch of rows from a mapped table: the GPU gather should take about as long as copying the batch."""
    batch, n = cfg.batch_bytes, cfg.rows
    link = transfer_ms(batch, rates.h2d_gbps)

    def key(path: str) -> PassKey:
        return PassKey("gather", path, rows=n)

    return {
        "table_bytes": cfg.table_bytes,
        "row_bytes": cfg.row_bytes,
        "n_rows": n,
        "batch_bytes": batch,
        "fill_key": PassKey("gather", "fill", nbytes=cfg.table_bytes),
        "rows": [
            _row(key("sorted"), "GPU gather, sorted ids (one warp per row)", link, batch, path="sorted"),
            _row(key("unsorted"), "GPU gather, unsorted ids", link, batch, path="unsorted"),
            _row(key("copy"), "pinned H2D copy of the batch alone", link, batch, path="copy"),
            _row(key("cpu-take"), "CPU take into pinned staging (host clock)", None, batch, path="cpu-take"),
            _row(key("cpu-take+copy"), "CPU take, then copy", None, batch, path="cpu-take+copy"),
        ],
    }


def plan_mailbox(cfg: Config) -> dict[str, Any]:
    """The fence-and-flag rounds: no bandwidth model, the verdict is about ordering."""
    return {"key": PassKey("mailbox", "launch-to-flag"), "rounds": cfg.repeats, "warmup": cfg.warmup}


def plan_saxpy(cfg: Config, rates: Rates) -> dict[str, Any]:
    """a·x + y over B-byte arrays: 2B in and B out; mapped reads are bounded by 2B/L, writes overlap them."""
    b, c, nfl = cfg.saxpy_bytes, cfg.chunk_bytes, cfg.saxpy_bytes // WORD_BYTES
    h2d, d2h = transfer_ms(2 * b, rates.h2d_gbps), transfer_ms(b, rates.d2h_gbps)
    hbm = transfer_ms(3 * b, rates.hbm_gbps)

    def key(path: str, **chunked: int) -> PassKey:
        return PassKey("saxpy", path, n_floats=nfl, **chunked)

    return {
        "nbytes": b,
        "n_floats": nfl,
        "chunk_bytes": c,
        "n_streams": cfg.n_streams,
        "rows": [
            _row(key("mapped"), "mapped: x, y read and result written over the link", h2d, 3 * b, path="mapped"),
            _row(
                key("sync-copies"),
                "synchronous copies in, kernel, copy out",
                h2d + hbm + d2h,
                3 * b,
                path="sync-copies",
            ),
            _row(
                key("async-copies", chunk_bytes=c, n_streams=cfg.n_streams),
                f"asynchronous copies, {format_size(c)} chunks on {cfg.n_streams} streams",
                h2d + d2h * c / b,
                3 * b,
                path="async-copies",
            ),
        ],
    }


def plan_reread(cfg: Config, rates: Rates) -> dict[str, Any]:
    """A loop re-reads each float4 k times: k·B/L over the link, k·B/H from HBM."""
    b, k = cfg.buffer_bytes, cfg.reread_k
    link, hbm = zero_copy_ms(b, k, rates.h2d_gbps), zero_copy_ms(b, k, rates.hbm_gbps)
    rows = []
    spacings = (("far", "re-reads a whole buffer apart"), ("near", "re-reads of a neighbouring warp's lines"))
    for spacing, what in spacings:
        for memory, label, model_ms in (("mapped", "mapped", link), ("device", "HBM", hbm)):
            rows.append(
                _row(
                    PassKey("reread", f"{spacing} {memory}", reread_k=k, nbytes=b),
                    f"{spacing}: {what}, {label}",
                    model_ms,
                    k * b,
                    spacing=spacing,
                    memory=memory,
                )
            )
    return {"nbytes": b, "k": k, "rows": rows}


def both_ways_grids(cfg: Config, sm_count: int) -> list[tuple[int, int | None]]:
    """(blocks, blocks per SM) of each grid the mapped kernel runs with: cfg's multiples of the SM count, then one
    float4 per thread (per SM: None), largest last, each grid once."""
    per_thread = -(-(cfg.both_bytes // VECTOR_BYTES) // THREADS)
    grids: dict[int, int | None] = {}
    for per_sm in sorted(cfg.both_blocks_per_sm):
        grids.setdefault(min(per_sm * sm_count, per_thread), per_sm)
    grids.setdefault(per_thread, None)
    return sorted(grids.items())


def plan_both_ways(cfg: Config, rates: Rates, sm_count: int) -> dict[str, Any]:
    """Day 54's job (B in, the FMA chain, B out) three ways: a kernel reading and writing mapped memory, at each
    grid; day 54's pipeline of c-byte chunks; the duplex link floor (one B copy each way at once).

    Each pass moves 2B over the link. The model gives every path the link floor at the solo rates, the larger of
    B/L and B/L_d2h (the two directions are separate lanes), and the pipeline one chunk each way more: its first
    copy in and its last copy out overlap nothing (the "overhang" the mapped-SAXPY page means).
    """
    b, c = cfg.both_bytes, cfg.both_chunk_bytes
    floor = max(transfer_ms(b, rates.h2d_gbps), transfer_ms(b, rates.d2h_gbps))
    overhang = transfer_ms(c, rates.h2d_gbps) + transfer_ms(c, rates.d2h_gbps)
    rows = []
    for blocks, per_sm in both_ways_grids(cfg, sm_count):
        grid = f"{per_sm} per SM" if per_sm is not None else "one float4 per thread"
        rows.append(
            _row(
                PassKey("both_ways", "mapped", blocks=blocks, nbytes=b),
                f"mapped both ways, {blocks} blocks ({grid})",
                floor,
                2 * b,
                path="mapped",
                blocks=blocks,
                blocks_per_sm=per_sm,
            )
        )
    rows.append(
        _row(
            PassKey("both_ways", "pipeline", nbytes=b, chunk_bytes=c, n_streams=cfg.both_buffers),
            f"day 54's pipeline: {format_size(c)} chunks x {cfg.both_buffers} buffers",
            floor + overhang,
            2 * b,
            path="pipeline",
        )
    )
    rows.append(
        _row(
            PassKey("both_ways", "duplex", nbytes=b),
            f"link floor: {format_size(b)} H2D and D2H copies at once",
            floor,
            2 * b,
            path="duplex",
        )
    )
    return {
        "nbytes": b,
        "chunk_bytes": c,
        "n_buffers": cfg.both_buffers,
        "fmas": DEFAULT_FMAS,
        "threads": THREADS,
        "sm_count": sm_count,
        "overhang_model_ms": overhang,
        "rows": rows,
    }
