"""The live run: the machine checked first, then the probes (the model's inputs), then each experiment picked,
into one results record."""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable

from labcore.device import DeviceFacts, device_facts
from labcore.gpulock import warn_if_shared
from labcore.nvrtc import require_nvrtc
from labcore.progress import progress
from labcore.record import Record
from zero_copy import LESSON
from zero_copy.config import Config
from zero_copy.experiments import (
    run_access,
    run_both_ways,
    run_breakeven,
    run_probes,
    run_reread,
    run_saxpy,
    run_streaming,
)
from zero_copy.gather import run_gather
from zero_copy.harness import Lab
from zero_copy.hostmem import HostMemory, check_host_memory, read_host_memory
from zero_copy.kernel import module
from zero_copy.mailbox import run_mailbox
from zero_copy.mapped import live_buffers, read_support, require_mapping

RUNNERS: dict[str, Callable[..., None]] = {
    "streaming": run_streaming,
    "breakeven": run_breakeven,
    "access": run_access,
    "gather": run_gather,
    "mailbox": run_mailbox,
    "saxpy": run_saxpy,
    "reread": run_reread,
    "both_ways": run_both_ways,
}


def check_machine(cfg: Config) -> tuple[DeviceFacts, HostMemory]:
    """The device's facts and the host's memory, once the device can map and the host can pin what cfg needs
    (UsageError otherwise); nothing is pinned yet."""
    facts = device_facts()
    require_mapping(facts)
    host = read_host_memory()
    check_host_memory(cfg, host)
    return facts, host


def run_live(cfg: Config, facts: DeviceFacts, host: HostMemory, *, command: str) -> Record:
    """Run the picked experiments on the GPU; progress goes to stderr, results into the record."""
    record = Record(lesson=LESSON, mode="live", source=command, device=facts, config=cfg.to_dict())
    support = read_support(facts)
    record.extra["host_memory"] = {**dataclasses.asdict(host), "pinnable_bytes": host.pinnable_bytes}
    t0 = time.perf_counter()
    print(f"{LESSON}: kernels compile with {require_nvrtc()}", file=sys.stderr, flush=True)
    warn_if_shared()
    with progress(1 + len(cfg.only), LESSON, unit="exp") as bar:
        lab = Lab(cfg, record, progress=bar.status)
        module().get_function("reread")  # compiles the whole module before anything is timed
        rates = run_probes(lab)
        bar.update("probes")
        for name in cfg.only:
            try:
                RUNNERS[name](lab, rates, support)
            finally:
                _free_device_pool(lab)
            bar.update(name)
    record.extra["support"] = dataclasses.asdict(support)
    record.extra["experiments"] = list(cfg.only)
    record.extra["wall_s"] = time.perf_counter() - t0
    _check_nothing_pinned(lab)
    return record


def _free_device_pool(lab: Lab) -> None:
    lab.sync()
    lab.cp.get_default_memory_pool().free_all_blocks()


def _check_nothing_pinned(lab: Lab) -> None:
    """Every buffer an experiment allocated or registered was freed or unregistered by its end."""
    left = live_buffers()
    lab.check(
        "every mapped buffer freed or unregistered",
        not left,
        "none left pinned" if not left else f"still pinned: {', '.join(map(repr, left))}",
    )
