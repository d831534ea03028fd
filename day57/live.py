"""The day-57 lab, live: the pinned pipeline and the link probe, then the job through managed memory three ways.

Correctness first: naive against the float64 closed form, then each schedule once (untimed, its warm-up) and its
output bit for bit against naive's. Then each pass is timed (labcore.timing, as every lesson times), the managed
arrays put back where the pass starts before every repeat (untimed): the input on the host where the program wrote
it, the output on the GPU like day 54's device buffers (with the advice, on the host it prefers). The last repeat's
output is checked again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from day57 import DOMAIN, LESSON
from day57.config import Config
from day57.managed import CPU, ManagedContext, advised, faulting, pipelined
from labcore.gpulock import gpu_turn
from labcore.kit.measure import live_record, run_schedule, seeded_host
from labcore.kit.memory import require_memory
from labcore.kit.schedules import duplex
from labcore.pipeline.context import CupyContext
from labcore.pipeline.verify import bit_exact_check, check_closed_form, verify_and_poison
from labcore.progress import progress
from labcore.record import Record
from labcore.sizes import format_size
from labcore.timing import time_pass

# each managed pass: its schedule, where the input and the output start (None: this GPU), and the advice
MANAGED_PASSES: dict[str, tuple[Callable[[Any], None], int, int | None, bool]] = {
    "faults": (faulting, CPU, None, False),
    "prefetch": (pipelined, CPU, None, False),
    "advised": (advised, CPU, CPU, True),
}
PASSES_TIMED = ("pipeline", "duplex", *MANAGED_PASSES)


def check_memory(cfg: Config) -> None:
    """Refuse, before allocating, a run that cannot fit: pinned input and output, the reference and the managed pair
    on the host; naive's output, the pinned pipeline's pairs and the managed pair moved over on the device."""
    require_memory(
        5 * cfg.total_bytes,
        3 * cfg.total_bytes + 2 * cfg.buffers * cfg.window_bytes + (64 << 20),
        host_what=f"--total {format_size(cfg.total_bytes)} needs {{need}} GiB of host memory",
        device_what=f"--total {format_size(cfg.total_bytes)} in managed memory beside naive's output needs "
        "{need} GiB of device memory",
    )


def run_live(cfg: Config) -> Record:
    """Measure everything the lesson discusses on the live GPU; correctness before timing."""
    cfg.validate()
    check_memory(cfg)
    record = live_record(LESSON, cfg.as_dict())
    host, _ = seeded_host(cfg.total_bytes, cfg.seed)
    pinned = CupyContext(host, cfg.window_bytes, cfg.buffers, cfg.fmas)
    with gpu_turn():
        expected = pinned.expected_output()
        host.poison()  # outputs poisoned before each run: a chunk nobody wrote fails its check
    record.checks.append(check_closed_form(host.h_in, expected.get(), cfg.fmas, pinned.chunk_elems))
    timed = dict(domain=DOMAIN, repeats=cfg.repeats, bytes_moved=2 * cfg.total_bytes)
    params = {"n_chunks": cfg.n_chunks, "window_bytes": cfg.window_bytes, "buffers": cfg.buffers}

    def check(name: str, out: Any) -> bool:
        with gpu_turn():
            bad = verify_and_poison(out, expected, pinned.chunk_elems)
        record.checks.append(bit_exact_check(f"{name} vs naive", bad, cfg.n_chunks))
        return record.checks[-1].ok

    run_schedule(pinned, pipelined)
    if not (record.checks[0].ok and check("pipeline", host.device_view(host.h_out))):
        return record
    with progress(len(PASSES_TIMED), LESSON) as bar:
        for name, schedule, ctx in (("pipeline", pipelined, pinned), ("duplex", duplex, pinned.with_buffers(2))):
            record.passes.append(
                time_pass(lambda s=schedule, c=ctx: s(c), key=cfg.key(name), name=name, params=params, **timed)
            )
            bar.update(name)
        managed = ManagedContext(cfg.total_bytes, cfg.window_bytes, cfg.buffers, cfg.fmas)
        managed.h_in[:] = host.h_in  # the program writes its input on the host: every page starts there
        managed.h_out.fill(float("nan"))  # poisoned, as every later run's output is by its check
        for name, (schedule, input_on, output_on, advice) in MANAGED_PASSES.items():
            managed.advise(advice)

            def place(i: int = input_on, o: int | None = output_on) -> None:
                managed.place(i, managed.device if o is None else o)

            with gpu_turn():
                place()
            run_schedule(managed, schedule)
            if not check(name, managed.d_out):
                break
            last = lambda n=name: check(f"{n}, last timed repeat,", managed.d_out)  # noqa: E731
            work = lambda s=schedule: s(managed)  # noqa: E731
            # the checked run was its warm-up
            record.passes.append(
                time_pass(
                    work, key=cfg.key(name), name=name, params=params, warmup=0, before=place, after_last=last, **timed
                )
            )
            managed.advise(False)
            bar.update(name)
    return record
