"""Results the host reads while the kernel still runs: fence and flag (seed 000, "Pattern 2").

The kernel writes a payload into mapped memory, fences with
__threadfence_system(), raises a flag, and then waits for the host to write a
release word. The host polls the flag (each NumPy element read is a fresh
load, as through a volatile pointer), reads the payload, asks whether the
stream is still busy (it must be: the kernel cannot finish unreleased), and
only then releases the kernel and waits for the stream.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from labcore.record import PassTimes
from zero_copy import model
from zero_copy.config import as_json
from zero_copy.kernel import MAILBOX, MAILBOX_WORDS, launch_publish_and_wait
from zero_copy.lab import Lab
from zero_copy.mapped import MappedBuffer, alloc_mapped
from zero_copy.support import MappingSupport

HOST_TIMEOUT_S = 5.0
KERNEL_TIMEOUT_NS = 10_000_000_000  # longer than the host's, so the host's release is what ends a round


def expected_payload(round_no: int) -> list[int]:
    """What the kernel publishes in a round (kernels/zero_copy.cu, publish_and_wait)."""
    return [round_no * 1000003 + w for w in range(MAILBOX["PAYLOAD_WORDS"])]


def _wait_for_flag(h_box: np.ndarray, round_no: int, deadline: float) -> bool:
    while time.perf_counter() < deadline:
        if h_box[MAILBOX["FLAG"]] == round_no:
            return True
    return False


def one_round(box: MappedBuffer, round_no: int, stream: Any) -> dict[str, Any]:
    """Launch, poll the flag, read the payload while the kernel runs, release it, then wait for the stream."""
    h_box = box.h
    h_box[:] = 0
    t_launch = time.perf_counter()
    launch_publish_and_wait(box.d, round_no, KERNEL_TIMEOUT_NS, stream)
    seen = _wait_for_flag(h_box, round_no, t_launch + HOST_TIMEOUT_S)
    t_seen = time.perf_counter()
    start = MAILBOX["PAYLOAD"]
    payload = h_box[start:start + MAILBOX["PAYLOAD_WORDS"]].tolist()
    running = not stream.done  # cudaStreamQuery: the kernel has not finished
    h_box[MAILBOX["RELEASE"]] = round_no
    stream.synchronize()
    stamps = h_box[MAILBOX["T_PUBLISH"]:MAILBOX["T_RELEASED"] + 2].view(np.uint64)
    return {
        "round": round_no, "flag_seen": seen, "flag_seen_ms": (t_seen - t_launch) * 1e3,
        "payload": payload, "payload_ok": seen and payload == expected_payload(round_no),
        "running_when_read": running, "acked": bool(h_box[MAILBOX["ACK"]] == round_no),
        "timed_out": bool(h_box[MAILBOX["TIMED_OUT"]] == round_no),
        "kernel_waited_us": (int(stamps[1]) - int(stamps[0])) / 1e3,
    }


def round_ok(result: dict[str, Any]) -> bool:
    """Payload exact, read while the stream was busy, and the kernel finished because the host released it."""
    return bool(result["payload_ok"] and result["running_when_read"] and result["acked"]
                and not result["timed_out"])


def run_mailbox(lab: Lab, rates: model.Rates, support: MappingSupport) -> None:
    """warmup + repeats rounds; the timed ones give the launch-to-flag latency seen by the host."""
    cfg, cp = lab.config, lab.cp
    plan = model.plan_mailbox(cfg)
    results = []
    with alloc_mapped(MAILBOX_WORDS, np.int32) as box:
        # Non-blocking: no implicit synchronisation with the legacy stream can stall the poll.
        stream = box.use(cp.cuda.Stream(non_blocking=True))
        for round_no in range(1, cfg.warmup + cfg.repeats + 1):
            lab.progress(f"mailbox round {round_no}")
            results.append(one_round(box, round_no, stream))
    timed = results[cfg.warmup:]
    lab.record.passes.append(PassTimes(key=str(plan["key"]), name="mailbox", params={"clock": "host"},
                                       times_ms=[max(r["flag_seen_ms"], 1e-6) for r in timed],
                                       host_ms=[r["flag_seen_ms"] for r in timed]))
    good = sum(round_ok(r) for r in results)
    lab.check("mailbox payload read while the kernel ran", good == len(results),
              f"{good} of {len(results)} rounds: payload exact, stream still busy when read, kernel released "
              f"by the host and acknowledged")
    lab.record.extra["mailbox"] = {**as_json(plan), "results": results}
