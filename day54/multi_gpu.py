"""Several GPUs: each pipelining its own array alone and all at once, and a buffer moved from one GPU to another.

day54/solutions/day54.ipynb, section 7. Two experiments, live on however many GPUs CuPy sees:

- **Side by side**: every GPU gets its own pinned input and output and its own CupyContext, and runs naive and
  pipelined first alone (the others idle) and then all at once, enqueued from this thread on every device
  before any is waited for, each timed with events on its own legacy default stream. The question is whether
  each GPU keeps its pipelined/naive ratio when its neighbours share the host. Each GPU's output, alone and
  together, is checked bit for bit against its own naive output (every GPU draws a different input).
- **GPU to GPU**: a device buffer moved from GPU 0 to GPU 1 by a peer copy (cudaMemcpyPeerAsync, with peer
  access enabled where the GPUs allow it; otherwise the driver's own path, said so) against staging through
  pinned host memory (copy out of GPU 0, copy in to GPU 1, chunk by chunk through two staging buffers so that
  the two copies overlap). The destination is poisoned before and checked bit for bit after each method.

With one GPU the first runs alone and says there is no GPU to run beside it; the second says it needs two.
The results are one record (`labcore.record.Record`, lesson SECTION); `python -m day54 --gpus --json PATH`
writes it, and the two-GPU profile shipped under day54/profiles/h200x2/ is such a file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nvtx

from day54 import LESSON, report, schedules
from day54.config import Config
from labcore.device import DeviceFacts, cupy_or_none, device_facts, gpu_count
from labcore.errors import UsageError
from labcore.gpulock import gpu_id, gpu_turn, warn_if_shared
from labcore.kit.memory import require_host
from labcore.nvrtc import require_nvrtc
from labcore.pipeline.context import CupyContext, HostArrays
from labcore.pipeline.verify import check_bit_exact, check_closed_form
from labcore.profiles import shipped_profile
from labcore.progress import progress
from labcore.record import Check, PassTimes, Record, load
from labcore.sizes import format_size
from labcore.timing import time_pass

SECTION = "day54-multi-gpu"  # the record's lesson: a day-54 replay refuses this record, and this section any other
DOMAIN = "day54-multi-gpu"  # NVTX domain: kept apart from the day-54 lab's ranges, which its replay parses
COMMAND = "python -m day54 --gpus"
PROFILE_NAME = "multi_gpu.json"
# <lesson>/profiles/<gpu>/, like every shipped profile: the student bundle carries what lies in such a folder
GPUS = "h200x2"
PROFILE = Path(LESSON) / "profiles" / GPUS / PROFILE_NAME  # from the checkout's root
SHIPPED = shipped_profile(LESSON, GPUS) / PROFILE_NAME
RECORD_COMMAND = f"{COMMAND} --json {PROFILE.as_posix()}"
SOURCE, DEST = 0, 1  # the copy experiment moves GPU 0's buffer to GPU 1, whatever the number of GPUs
STAGING_BUFFERS = 2  # double buffering: one staging buffer fills from GPU 0 while the other drains into GPU 1
_H2D, _D2H = 1, 2  # cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost
AT_ONCE = 1.25  # a span of all GPUs under this many times the slowest GPU's own time: they overlapped
_PEER_ALREADY_ENABLED = 704  # cudaErrorPeerAccessAlreadyEnabled: CuPy may have enabled it for its own copies

NO_NEIGHBOUR = "one GPU here: there is no second GPU to run beside it, so only 'alone' is measured"
NEEDS_TWO = "GPU to GPU: a peer copy needs two GPUs; this machine has {n} (CUDA_VISIBLE_DEVICES counts)"


@dataclasses.dataclass(frozen=True)
class PipelineKey:
    """One GPU's timed pipeline: 'pipelined GPU 1 together w=64MiB b=2' (alone: its neighbours idle)."""

    schedule: str  # "naive" or "pipelined"
    gpu: int
    together: bool
    window_bytes: int
    buffers: int

    def __str__(self) -> str:
        when = "together" if self.together else "alone"
        return f"{self.schedule} GPU {self.gpu} {when} w={format_size(self.window_bytes)} b={self.buffers}"


@dataclasses.dataclass(frozen=True)
class CopyKey:
    """One way of moving the buffer: 'peer GPU 0->GPU 1' or 'staged GPU 0->GPU 1 w=64MiB b=2'."""

    method: str  # "peer" or "staged"
    source: int
    dest: int
    window_bytes: int = 0  # staged only
    buffers: int = 0

    def __str__(self) -> str:
        head = f"{self.method} GPU {self.source}->GPU {self.dest}"
        return head if self.method == "peer" else f"{head} w={format_size(self.window_bytes)} b={self.buffers}"


def _cupy() -> Any:
    cp = cupy_or_none()
    if cp is None:
        raise RuntimeError("the multi-GPU section needs a GPU")
    return cp


# -- live: side by side -------------------------------------------------------------------------------------------


@contextlib.contextmanager
def turns(gpus: list[int]) -> Iterator[None]:
    """Hold the turn of every GPU in `gpus`, taken in bus-id order so that two processes never wait on each other
    (CUDA_VISIBLE_DEVICES may number the same GPUs differently in each)."""
    with contextlib.ExitStack() as stack:
        for gpu in sorted(gpus, key=lambda g: gpu_id(g).key):
            stack.enter_context(gpu_turn(gpu))
        yield


def synchronize_all(gpus: list[int]) -> None:
    """cudaDeviceSynchronize on each GPU."""
    cp = _cupy()
    for gpu in gpus:
        cp.cuda.Device(gpu).synchronize()


@dataclasses.dataclass
class Lane:
    """One GPU's share of the side-by-side experiment: its pinned arrays, its context, its naive reference."""

    gpu: int
    host: HostArrays
    ctx: CupyContext
    reference: Any = None  # naive's output, in this GPU's memory

    def run(self, schedule: schedules.Schedule, buffers: int) -> None:
        """Enqueue `schedule` on this GPU (not waited for)."""
        with _cupy().cuda.Device(self.gpu):
            schedule(self.ctx.with_buffers(buffers))

    def poison(self) -> None:
        with _cupy().cuda.Device(self.gpu):
            self.host.poison()

    def check(self, name: str) -> Check:
        """The output, compared on this GPU with naive's bit for bit (read across the link from pinned memory)."""
        with _cupy().cuda.Device(self.gpu):
            out = self.host.device_view(self.host.h_out)
            return check_bit_exact(f"GPU {self.gpu}: {name} vs its naive", out, self.reference, self.ctx.chunk_elems)


def make_lane(gpu: int, cfg: Config) -> Lane:
    """GPU `gpu`'s arrays and context; its input is drawn from seed + gpu, so no GPU's output matches another's."""
    cp = _cupy()
    with cp.cuda.Device(gpu):
        host = HostArrays(cfg.total_bytes)
        host.fill_random(cfg.seed + gpu)
        return Lane(gpu, host, CupyContext(host, cfg.window_bytes, max(cfg.buffers), cfg.fmas))


def check_naive(lane: Lane, fmas: int) -> Check:
    """Naive alone against the float64 closed form; its output becomes the lane's reference."""
    cp = _cupy()
    lane.poison()
    run_together([lane], schedules.naive, 1)
    check = check_closed_form(lane.host.h_in, lane.host.h_out, fmas, lane.ctx.chunk_elems)
    with cp.cuda.Device(lane.gpu):
        lane.reference = cp.asarray(lane.host.h_out)
    return dataclasses.replace(check, name=f"GPU {lane.gpu}: {check.name}")


def run_together(lanes: list[Lane], schedule: schedules.Schedule, buffers: int) -> None:
    """Enqueue `schedule` on every GPU, then wait for all: they run at the same time."""
    for lane in lanes:
        lane.run(schedule, buffers)
    synchronize_all([lane.gpu for lane in lanes])


def time_together(
    lanes: list[Lane], schedule: schedules.Schedule, name: str, buffers: int, cfg: Config
) -> list[PassTimes]:
    """Warm up, then time `schedule` on every GPU at once, `cfg.repeats` times: one PassTimes per GPU.

    Each GPU's time is from events on its own legacy default stream around its own work; its host_ms is the span
    from the first enqueue to the last GPU's end, the same for all: a span near the longest GPU's time says they
    overlapped, one near the sum that they took turns. The GPU enqueued first rotates from repeat to repeat.
    """
    cp = _cupy()
    gpus = [lane.gpu for lane in lanes]
    events, views = {}, {}
    for lane in lanes:
        with cp.cuda.Device(lane.gpu):
            events[lane.gpu] = (cp.cuda.Event(), cp.cuda.Event())
            views[lane.gpu] = lane.ctx.with_buffers(buffers)  # made before the clock starts
    times_ms: dict[int, list[float]] = {gpu: [] for gpu in gpus}
    span_ms: list[float] = []
    label = f"{name} together w={format_size(cfg.window_bytes)} b={buffers}"
    for repeat in range(cfg.warmup + cfg.repeats):
        synchronize_all(gpus)
        order = lanes[repeat % len(lanes) :] + lanes[: repeat % len(lanes)]
        with nvtx.annotate(label if repeat >= cfg.warmup else f"warmup {label}", domain=DOMAIN):
            t0 = time.perf_counter()
            for lane in order:
                start, stop = events[lane.gpu]
                with cp.cuda.Device(lane.gpu):
                    start.record(cp.cuda.Stream.null)
                    schedule(views[lane.gpu])
                    stop.record(cp.cuda.Stream.null)
            for _, stop in events.values():
                stop.synchronize()
            synchronize_all(gpus)
            t1 = time.perf_counter()
        if repeat >= cfg.warmup:
            span_ms.append((t1 - t0) * 1e3)
            for gpu in gpus:
                times_ms[gpu].append(cp.cuda.get_elapsed_time(*events[gpu]))
    return [
        PassTimes(
            key=str(PipelineKey(name, gpu, True, cfg.window_bytes, buffers)),
            name=name,
            params={"gpu": gpu, "together": True, "window_bytes": cfg.window_bytes, "buffers": buffers},
            times_ms=times_ms[gpu],
            host_ms=span_ms,
            bytes_moved=2 * cfg.total_bytes,
        )
        for gpu in gpus
    ]


def _time_alone(lane: Lane, schedule: schedules.Schedule, name: str, buffers: int, cfg: Config) -> PassTimes:
    with _cupy().cuda.Device(lane.gpu):
        view = lane.ctx.with_buffers(buffers)
        return time_pass(
            lambda: schedule(view),
            key=PipelineKey(name, lane.gpu, False, cfg.window_bytes, buffers),
            name=name,
            params={"gpu": lane.gpu, "together": False, "window_bytes": cfg.window_bytes, "buffers": buffers},
            domain=DOMAIN,
            repeats=cfg.repeats,
            warmup=cfg.warmup,
            bytes_moved=2 * cfg.total_bytes,
        )


def side_by_side(cfg: Config, gpus: list[int], record: Record, step: Callable[[str], None]) -> None:
    """The first experiment on `gpus` (all at once when there are several), into `record`."""
    cp = _cupy()
    lanes = [make_lane(gpu, cfg) for gpu in gpus]
    try:
        with turns(gpus):  # 'alone' means no other process on the other GPUs either: they share the host
            _side_by_side(cfg, lanes, record, step)
    finally:
        lanes.clear()  # the last references: each GPU's buffers go back to its pool, and from there to the GPU
        for gpu in gpus:
            with cp.cuda.Device(gpu):
                cp.get_default_memory_pool().free_all_blocks()


def _side_by_side(cfg: Config, lanes: list[Lane], record: Record, step: Callable[[str], None]) -> None:
    runs = [("naive", schedules.naive, 1)] + [("pipelined", schedules.pipelined, b) for b in cfg.buffers]
    for lane in lanes:
        record.checks.append(check_naive(lane, cfg.fmas))
        for b in cfg.buffers:
            lane.poison()
            run_together([lane], schedules.pipelined, b)
            record.checks.append(lane.check(f"pipelined b={b} alone"))
    if len(lanes) > 1:
        for name, schedule, b in runs:
            for lane in lanes:
                lane.poison()
            run_together(lanes, schedule, b)
            record.checks.extend(lane.check(f"{name} b={b} together") for lane in lanes)
    step("checks")
    if not all(c.ok for c in record.checks):
        return
    for lane in lanes:
        for name, schedule, b in runs:
            record.passes.append(_time_alone(lane, schedule, name, b, cfg))
        step(f"GPU {lane.gpu} alone")
    if len(lanes) > 1:
        for name, schedule, b in runs:
            record.passes.extend(time_together(lanes, schedule, name, b, cfg))
        step("together")


# -- live: GPU to GPU ---------------------------------------------------------------------------------------------


def enable_peer_access(source: int, dest: int) -> dict[str, bool]:
    """Ask the driver whether each GPU can reach the other's memory, and enable it each way it can."""
    cp = _cupy()
    runtime = cp.cuda.runtime
    can = {
        "dest_reads_source": bool(runtime.deviceCanAccessPeer(dest, source)),
        "source_reads_dest": bool(runtime.deviceCanAccessPeer(source, dest)),
    }
    for (device, peer), allowed in zip(((dest, source), (source, dest)), can.values(), strict=True):
        if allowed:
            with cp.cuda.Device(device):
                try:
                    runtime.deviceEnablePeerAccess(peer)
                except runtime.CUDARuntimeError as exc:
                    if exc.status != _PEER_ALREADY_ENABLED:
                        raise
    return {**can, "enabled": any(can.values())}


@dataclasses.dataclass
class Transfer:
    """The buffers of the copy experiment: GPU `source`'s data, GPU `dest`'s destination and its expected content,
    and the pinned staging buffers, streams and events of the staged path."""

    source: int
    dest: int
    window_bytes: int
    d_src: Any
    d_dst: Any
    d_expected: Any
    staging: list[Any]
    source_streams: list[Any]
    dest_streams: list[Any]
    copied_out: list[Any]  # on the source GPU: staging buffer s holds its chunk
    copied_in: list[Any]  # on the destination GPU: staging buffer s is free again

    @property
    def nbytes(self) -> int:
        return self.d_src.nbytes

    @property
    def n_chunks(self) -> int:
        return self.nbytes // self.window_bytes

    def peer(self) -> None:
        """Enqueue the whole buffer as one cudaMemcpyPeerAsync on the source GPU's legacy default stream."""
        cp = _cupy()
        with cp.cuda.Device(self.source):
            cp.cuda.runtime.memcpyPeerAsync(
                self.d_dst.data.ptr, self.dest, self.d_src.data.ptr, self.source, self.nbytes, 0
            )

    def staged(self) -> None:
        """Enqueue chunk k out of the source GPU into staging buffer k % B, then from there into the destination
        GPU; a staging buffer takes its next chunk only once the destination has read its last one."""
        cp = _cupy()
        n_staging = len(self.staging)
        for k in range(self.n_chunks):
            s, offset = k % n_staging, k * self.window_bytes
            with cp.cuda.Device(self.source):
                self.source_streams[s].wait_event(self.copied_in[s])  # no-op until the buffer's first tenant
                cp.cuda.runtime.memcpyAsync(
                    self.staging[s].ctypes.data,
                    self.d_src.data.ptr + offset,
                    self.window_bytes,
                    _D2H,
                    self.source_streams[s].ptr,
                )
                self.copied_out[s].record(self.source_streams[s])
            with cp.cuda.Device(self.dest):
                self.dest_streams[s].wait_event(self.copied_out[s])
                cp.cuda.runtime.memcpyAsync(
                    self.d_dst.data.ptr + offset,
                    self.staging[s].ctypes.data,
                    self.window_bytes,
                    _H2D,
                    self.dest_streams[s].ptr,
                )
                self.copied_in[s].record(self.dest_streams[s])

    def poison(self) -> None:
        cp = _cupy()
        with cp.cuda.Device(self.dest):
            self.d_dst.fill(cp.nan)
            cp.cuda.Device(self.dest).synchronize()

    def check(self, name: str) -> Check:
        """The destination against the source's content, on the destination GPU, bit for bit."""
        cp = _cupy()
        with cp.cuda.Device(self.dest):
            check = check_bit_exact(name, self.d_dst, self.d_expected, self.window_bytes // 4)
        return dataclasses.replace(check, detail=check.detail.replace("naive", "the source"))


def make_transfer(cfg: Config, source: int, dest: int, staging_buffers: int = STAGING_BUFFERS) -> Transfer:
    """Random data on `source`, an empty buffer and the expected content (by way of the host) on `dest`, and
    `staging_buffers` pinned staging buffers of the window's size (1 makes the staged copies take turns)."""
    import cupyx  # CuPy is optional: only a live run gets here

    cp = _cupy()
    n = cfg.total_bytes // 4
    with cp.cuda.Device(source):
        d_src = cp.random.default_rng(cfg.seed).random(n, dtype=cp.float32)
        expected = d_src.get()  # through the host: a device-to-device copy is what is being tested
        source_streams = [cp.cuda.Stream(non_blocking=False) for _ in range(staging_buffers)]
        copied_out = [cp.cuda.Event(disable_timing=True) for _ in range(staging_buffers)]
    with cp.cuda.Device(dest):
        d_dst = cp.empty(n, dtype=cp.float32)
        d_expected = cp.asarray(expected)
        dest_streams = [cp.cuda.Stream(non_blocking=False) for _ in range(staging_buffers)]
        copied_in = [cp.cuda.Event(disable_timing=True) for _ in range(staging_buffers)]
    staging = [cupyx.empty_pinned(cfg.window_bytes, dtype="uint8") for _ in range(staging_buffers)]
    return Transfer(
        source=source,
        dest=dest,
        window_bytes=cfg.window_bytes,
        d_src=d_src,
        d_dst=d_dst,
        d_expected=d_expected,
        staging=staging,
        source_streams=source_streams,
        dest_streams=dest_streams,
        copied_out=copied_out,
        copied_in=copied_in,
    )


def time_copy(transfer: Transfer, enqueue: Callable[[], None], key: CopyKey, cfg: Config) -> PassTimes:
    """Warm up, then time `enqueue` `cfg.repeats` times on the source GPU's clock: start on its legacy default
    stream, and a stop that waits there for the destination GPU's legacy default stream to drain."""
    cp = _cupy()
    source, dest = transfer.source, transfer.dest
    with cp.cuda.Device(source):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
    with cp.cuda.Device(dest):
        dest_done = cp.cuda.Event(disable_timing=True)
    times_ms, host_ms = [], []
    for repeat in range(cfg.warmup + cfg.repeats):
        synchronize_all([source, dest])
        with nvtx.annotate(str(key) if repeat >= cfg.warmup else f"warmup {key}", domain=DOMAIN):
            t0 = time.perf_counter()
            with cp.cuda.Device(source):
                start.record(cp.cuda.Stream.null)
            enqueue()
            with cp.cuda.Device(dest):
                dest_done.record(cp.cuda.Stream.null)  # after every blocking stream on the destination drained
            with cp.cuda.Device(source):
                cp.cuda.Stream.null.wait_event(dest_done)
                stop.record(cp.cuda.Stream.null)
            stop.synchronize()
            synchronize_all([source, dest])
            t1 = time.perf_counter()
        if repeat >= cfg.warmup:
            times_ms.append(cp.cuda.get_elapsed_time(start, stop))
            host_ms.append((t1 - t0) * 1e3)
    params = {"source": source, "dest": dest, "window_bytes": key.window_bytes, "buffers": key.buffers}
    return PassTimes(
        key=str(key),
        name=key.method,
        params=params,
        times_ms=times_ms,
        host_ms=host_ms,
        bytes_moved=transfer.nbytes,
    )


def gpu_to_gpu(cfg: Config, source: int, dest: int, record: Record, step: Callable[[str], None]) -> None:
    """The second experiment, GPU `source` to GPU `dest`, into `record`."""
    cp = _cupy()
    peer = enable_peer_access(source, dest)
    record.extra["peer_access"] = {"source": source, "dest": dest, **peer}
    try:
        with turns([source, dest]):
            _gpu_to_gpu(cfg, make_transfer(cfg, source, dest), record, step)
    finally:
        for gpu in (source, dest):
            with cp.cuda.Device(gpu):
                cp.get_default_memory_pool().free_all_blocks()


def _gpu_to_gpu(cfg: Config, transfer: Transfer, record: Record, step: Callable[[str], None]) -> None:
    source, dest = transfer.source, transfer.dest
    methods = [
        (CopyKey("peer", source, dest), transfer.peer),
        (CopyKey("staged", source, dest, cfg.window_bytes, len(transfer.staging)), transfer.staged),
    ]
    for key, enqueue in methods:
        transfer.poison()
        enqueue()
        synchronize_all([source, dest])
        record.checks.append(transfer.check(f"{key} vs the source"))
    step("copy checks")
    if not all(c.ok for c in record.checks[-len(methods) :]):
        return
    for key, enqueue in methods:
        record.passes.append(time_copy(transfer, enqueue, key, cfg))
        step(key.method)


# -- live: the whole section --------------------------------------------------------------------------------------


def check_memory(cfg: Config, n_gpus: int) -> None:
    """Refuse, before allocating, a run the host cannot hold: every GPU's pinned input and output at once."""
    require_host(
        2 * n_gpus * cfg.total_bytes + STAGING_BUFFERS * cfg.window_bytes,
        f"--total {format_size(cfg.total_bytes)} on {n_gpus} GPUs needs {{need}} GiB of host memory "
        "(each GPU's pinned input and output)",
    )


def live_line(n_gpus: int) -> str:
    """'day54 --gpus: live on 2 GPUs: GPU 0 NVIDIA H200 (...); GPU 1 NVIDIA H200 (...)'."""
    named = "; ".join(f"GPU {gpu} {device_facts(gpu).summary()}" for gpu in range(n_gpus))
    return f"{COMMAND.removeprefix('python -m ')}: live on {n_gpus} GPU{'s' if n_gpus > 1 else ''}: {named}"


def run_live(cfg: Config) -> Record:
    """Both experiments on every GPU this process sees (the copy between GPU 0 and GPU 1); what one GPU cannot
    measure is said on stderr and recorded as absent."""
    cfg.validate()
    n_gpus = gpu_count()
    if n_gpus < 1:
        raise RuntimeError("run_live needs a GPU")
    check_memory(cfg, n_gpus)
    gpus = list(range(n_gpus))
    config = {**cfg.as_dict(), "gpus": n_gpus}
    for unused in ("windows", "pitfalls"):
        config.pop(unused)
    record = Record(
        lesson=SECTION,
        mode="live",
        source="live",
        device=device_facts(0),
        config=config,
        extra={"gpus": [dataclasses.asdict(device_facts(gpu)) for gpu in gpus]},
    )
    print(f"{SECTION}: kernels compile with {require_nvrtc()}", file=sys.stderr, flush=True)
    for gpu in gpus:
        warn_if_shared(gpu)
    if n_gpus == 1:
        print(NO_NEIGHBOUR, file=sys.stderr, flush=True)
    steps = 1 + n_gpus + (4 if n_gpus > 1 else 0)  # checks, each GPU alone; together, the copies' checks and times
    with progress(steps, SECTION) as bar:
        side_by_side(cfg, gpus, record, bar.update)
        if n_gpus > 1 and all(c.ok for c in record.checks):
            gpu_to_gpu(cfg, SOURCE, DEST, record, bar.update)
    if n_gpus == 1:
        print(NEEDS_TWO.format(n=n_gpus), file=sys.stderr, flush=True)
    return record


# -- replay -------------------------------------------------------------------------------------------------------


def no_profile_line() -> str:
    """What a machine with fewer than two GPUs and no shipped two-GPU profile says, in one line."""
    return (
        f"no two-GPU profile is recorded yet ({SHIPPED} is absent); on a machine with two GPUs, record it with: "
        f"{RECORD_COMMAND}"
    )


def shipped_exists() -> bool:
    return SHIPPED.is_file()


def load_profile(path: str | Path | None = None) -> Record:
    """A recorded multi-GPU record (a JSON file, or a directory holding PROFILE_NAME; default the shipped one) as a
    replay; UsageError naming the file when it is missing or records something else."""
    path = Path(path) if path is not None else SHIPPED
    if path.is_dir():
        path = path / PROFILE_NAME
    if path == SHIPPED and not path.is_file():
        raise UsageError(no_profile_line())
    record = load(path)
    if record.lesson != SECTION:
        raise UsageError(f"{path} records {record.lesson!r}, not the multi-GPU section ({SECTION!r})")
    record.mode, record.source = "replay", str(path)
    return record


def gpu_facts(record: Record) -> list[DeviceFacts]:
    """Each GPU's facts, in index order."""
    return [DeviceFacts.from_dict(facts) for facts in record.extra.get("gpus", [])] or [record.device]


def describe(record: Record) -> str:
    """Where a replay's numbers came from, for the mode line."""
    facts = gpu_facts(record)
    names = sorted({f.summary() for f in facts})
    machine = f"{len(facts)}x {names[0]}" if len(names) == 1 else "; ".join(f.summary() for f in facts)
    d = record.device
    versions = ", ".join(
        f"{k} {v}" for k, v in (("driver", d.driver), ("CUDA runtime", d.cuda_runtime), ("CuPy", d.cupy)) if v
    )
    return (
        f"replay of {record.source} (recorded {record.recorded_at} on {machine}{'; ' + versions if versions else ''})"
    )


# -- reading a record ---------------------------------------------------------------------------------------------


def gpus_in(record: Record) -> int:
    """How many GPUs the record's run saw."""
    return int(record.config.get("gpus", len(gpu_facts(record))))


def depths(record: Record) -> list[int]:
    """The pipeline depths the record timed."""
    return sorted({p.params["buffers"] for p in record.passes if p.name == "pipelined"})


def pipeline_ms(record: Record, schedule: str, gpu: int, together: bool, buffers: int) -> float | None:
    """A pipeline's median, or None when the record has none (together, on one GPU)."""
    key = PipelineKey(schedule, gpu, together, record.config["window_bytes"], buffers)
    return record.pass_times(key).median_ms if record.has_pass(key) else None


def ratio(record: Record, gpu: int, together: bool, buffers: int) -> float | None:
    """pipelined / naive on one GPU, alone or together; None when not measured."""
    naive = pipeline_ms(record, "naive", gpu, together, 1)
    piped = pipeline_ms(record, "pipelined", gpu, together, buffers)
    return None if naive is None or piped is None else piped / naive


def copy_times(record: Record, method: str) -> PassTimes | None:
    """The peer or staged copy's times, or None when the record has no copy."""
    return next((p for p in record.passes if p.name == method), None)


def together_span_ms(record: Record, schedule: str, buffers: int) -> tuple[float, float] | None:
    """(median span of all GPUs together, the longest GPU's median), or None without a together run."""
    keys = [PipelineKey(schedule, gpu, True, record.config["window_bytes"], buffers) for gpu in range(gpus_in(record))]
    if not all(record.has_pass(k) for k in keys):
        return None
    passes = [record.pass_times(k) for k in keys]
    spans = sorted(passes[0].host_ms)
    return spans[len(spans) // 2], max(p.median_ms for p in passes)


def at_once(span_ms: float, slowest_ms: float) -> bool:
    """Whether GPUs timed together overlapped: all of them done in little more than the slowest one's time (run
    one after another, two GPUs would take about twice it)."""
    return span_ms < AT_ONCE * slowest_ms


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def pipelines_table(record: Record) -> str:
    """Per GPU and depth: naive, pipelined and their ratio alone and together, and the ratio's change."""
    cfg = record.config
    window, total = cfg["window_bytes"], cfg["total_bytes"]
    gpus = gpus_in(record)
    beside = f"all {gpus} at once" if gpus > 1 else "with no GPU beside it"
    columns = f"{'naive ms':>11}{'pipelined':>11}{'ratio':>8}"
    head = f"{'GPU':<5}{'buffers':>8}{columns}  |{columns}{'together/alone':>16}"
    lines = [
        f"Each GPU pipelining its own {format_size(total)} ({format_size(window)} window, {total // window} chunks), "
        f"alone and {beside}; medians",
        f"{'':<13}{'alone':^30}  |{'together':^30}",
        head,
        "-" * len(head),
    ]
    for gpu in range(gpus):
        for b in depths(record):
            alone, together = ratio(record, gpu, False, b), ratio(record, gpu, True, b)
            change = None if alone is None or together is None else together / alone
            cells = [
                pipeline_ms(record, "naive", gpu, False, 1),
                pipeline_ms(record, "pipelined", gpu, False, b),
                alone,
                pipeline_ms(record, "naive", gpu, True, 1),
                pipeline_ms(record, "pipelined", gpu, True, b),
                together,
            ]
            shown = [f"{_ms(v):>11}" if i % 3 < 2 else f"{_ms(v):>8}" for i, v in enumerate(cells)]
            lines.append(f"{gpu:<5}{b:>8}{''.join(shown[:3])}  |{''.join(shown[3:])}{_ms(change):>16}")
    if gpus == 1:
        lines.append(NO_NEIGHBOUR)
    for schedule, b in [("naive", 1)] + [("pipelined", b) for b in depths(record)]:
        span = together_span_ms(record, schedule, b)
        if span is not None:
            lines.append(
                f"{schedule} b={b}, all GPUs: done {span[0]:.3f} ms after the first enqueue, the slowest GPU's own "
                f"{span[1]:.3f} ms: {'they overlapped' if at_once(*span) else 'they did NOT run at once'}"
            )
    return "\n".join(lines)


def copies_table(record: Record) -> str:
    """Peer copy against staging through pinned host memory: ms, GB/s, and how much faster the peer copy is."""
    peer, staged = copy_times(record, "peer"), copy_times(record, "staged")
    if peer is None or staged is None:
        return NEEDS_TWO.format(n=gpus_in(record))
    access = record.extra.get("peer_access", {})
    source, dest = access.get("source", SOURCE), access.get("dest", DEST)
    how = (
        "peer access enabled"
        if access.get("enabled")
        else "peer access NOT possible between these GPUs: the driver moves it by its own fallback"
    )
    window, buffers = staged.params["window_bytes"], staged.params["buffers"]
    rows = [
        (f"peer copy (cudaMemcpyPeerAsync, {how})", peer),
        (f"staged through pinned host ({format_size(window)} chunks, {buffers} staging buffers)", staged),
    ]
    width = max(len(label) for label, _ in rows) + 2
    lines = [
        f"Moving {format_size(peer.bytes_moved)} from GPU {source} to GPU {dest}; medians",
        f"{'method':<{width}}{'ms':>9}{'GB/s':>9}",
    ]
    lines.append("-" * len(lines[1]))
    lines += [f"{label:<{width}}{p.median_ms:>9.3f}{p.gbps():>9.1f}" for label, p in rows]
    lines.append(f"peer copy: {staged.median_ms / peer.median_ms:.1f}x faster than staging through the host")
    return "\n".join(lines)


def render(record: Record) -> str:
    """Everything `python -m day54 --gpus` prints after its mode line."""
    return "\n\n".join([report.checks_text(record), pipelines_table(record), copies_table(record)])
