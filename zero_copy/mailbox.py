"""Results the host reads while the kernel still runs: fence and flag.

Taught in solutions/zero_copy/zero_copy.ipynb, section 7 (the lesson) and
section 8 (the exercise).

The lesson's experiment: the kernel writes a payload into mapped memory,
fences with __threadfence_system(), raises a flag, and then waits for the host
to write a release word. The host polls the flag (each NumPy element read is a fresh
load, as through a volatile pointer), reads the payload, asks whether the
stream is still busy (it must be: the kernel cannot finish unreleased), and
only then releases the kernel and waits for the stream.

The graded exercise: the student writes the `publish` step (payload, fence,
flag) in CUDA C++; `mailbox_rounds` compiles it inside the lesson's
wait-for-release kernel and runs the same rounds, and `publish_order_problem`
reads the order of its stores from the source.
"""

from __future__ import annotations

import re
import time
from typing import Any

import numpy as np

from labcore.record import PassTimes
from zero_copy import model
from zero_copy.config import as_json
from zero_copy.harness import Lab
from zero_copy.kernel import KERNEL_PATH, MAILBOX, MAILBOX_WORDS, compile_options, launch_publish_and_wait
from zero_copy.mapped import MappedBuffer, MappingSupport, alloc_mapped
from zero_copy.verify import round_ok

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


def one_round(box: MappedBuffer, round_no: int, stream: Any, kernel: Any = None) -> dict[str, Any]:
    """Launch (the lesson's kernel, or `kernel`), poll the flag, read the payload while the kernel runs, release
    it, then wait for the stream."""
    h_box = box.h
    h_box[:] = 0
    t_launch = time.perf_counter()
    launch_publish_and_wait(box.d, round_no, KERNEL_TIMEOUT_NS, stream, kernel)
    seen = _wait_for_flag(h_box, round_no, t_launch + HOST_TIMEOUT_S)
    t_seen = time.perf_counter()
    start = MAILBOX["PAYLOAD"]
    payload = h_box[start : start + MAILBOX["PAYLOAD_WORDS"]].tolist()
    running = not stream.done  # cudaStreamQuery: the kernel has not finished
    h_box[MAILBOX["RELEASE"]] = round_no
    stream.synchronize()
    stamps = h_box[MAILBOX["T_PUBLISH"] : MAILBOX["T_RELEASED"] + 2].view(np.uint64)
    return {
        "round": round_no,
        "flag_seen": seen,
        "flag_seen_ms": (t_seen - t_launch) * 1e3,
        "payload": payload,
        "payload_ok": seen and payload == expected_payload(round_no),
        "running_when_read": running,
        "acked": bool(h_box[MAILBOX["ACK"]] == round_no),
        "timed_out": bool(h_box[MAILBOX["TIMED_OUT"]] == round_no),
        "kernel_waited_us": (int(stamps[1]) - int(stamps[0])) / 1e3,
    }


def _rounds(n_rounds: int, lab: Lab | None = None, kernel: Any = None) -> list[dict[str, Any]]:
    """Rounds 1..n_rounds on one mapped mailbox and one non-blocking stream."""
    import cupy as cp  # optional: only a live run reaches here, and offline readers need not install CuPy

    results = []
    with alloc_mapped(MAILBOX_WORDS, np.int32) as box:
        # Non-blocking: no implicit synchronisation with the legacy stream can stall the poll.
        stream = box.use(cp.cuda.Stream(non_blocking=True))
        for round_no in range(1, n_rounds + 1):
            if lab is not None:
                lab.progress(f"mailbox round {round_no}")
            results.append(one_round(box, round_no, stream, kernel))
    return results


def run_mailbox(lab: Lab, rates: model.Rates, support: MappingSupport) -> None:
    """warmup + repeats rounds; the timed ones give the launch-to-flag latency seen by the host."""
    cfg = lab.config
    plan = model.plan_mailbox(cfg)
    results = _rounds(cfg.warmup + cfg.repeats, lab)
    timed = results[cfg.warmup :]
    lab.record.passes.append(
        PassTimes(
            key=str(plan["key"]),
            name="mailbox",
            params={"clock": "host"},
            times_ms=[max(r["flag_seen_ms"], 1e-6) for r in timed],
            host_ms=[r["flag_seen_ms"] for r in timed],
        )
    )
    good = sum(round_ok(r) for r in results)
    lab.check(
        "mailbox payload read while the kernel ran",
        good == len(results),
        f"{good} of {len(results)} rounds: payload exact, stream still busy when read, kernel released "
        f"by the host and acknowledged",
    )
    lab.record.extra["mailbox"] = {**as_json(plan), "results": results}


# -- the exercise: the student's publish step inside the lesson's wait-for-release kernel ----------------

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
    import cupy as cp  # optional: only a live check compiles, and offline graders need not install CuPy
    from cupy.cuda.compiler import CompileException  # optional, as above

    try:
        return cp.RawModule(code=mailbox_source(publish_source), options=compile_options()).get_function(
            "exercise_publish_and_wait"
        )
    except CompileException as exc:
        errors = [line.strip() for line in str(exc).splitlines() if "error" in line]
        raise PublishCompileError("; ".join(errors[:3]) or str(exc).splitlines()[0]) from None


def mailbox_rounds(publish_source: str, rounds: int) -> list[dict[str, Any]]:
    """Compile the student's publish step and run `rounds` rounds of launch, poll, read, release."""
    return _rounds(rounds, kernel=compile_publish(publish_source))


# -- the publish step's order, read from its source -------------------------------------------------------

_PAYLOAD_STORE = re.compile(r"(\bbox\s*\[\s*MB_PAYLOAD\b[^\]]*\]|\*\s*\(\s*box\s*\+\s*MB_PAYLOAD\b[^)]*\))\s*=(?!=)")
_FLAG_STORE = re.compile(r"(\bbox\s*\[\s*MB_FLAG\s*\]|\*\s*\(\s*box\s*\+\s*MB_FLAG\s*\))\s*=(?!=)")
_SYSTEM_FENCE = re.compile(r"\b__threadfence_system\s*\(\s*\)")
_DEVICE_FENCE = re.compile(r"\b__threadfence\s*\(\s*\)")
_SIGNATURE = re.compile(
    r"__device__\s+(?:__forceinline__\s+|inline\s+)?void\s+publish\s*\(\s*volatile\s+int\s*\*"
    r"\s*box\s*,\s*int\s+round\s*\)"
)


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
            return (
                "__threadfence() orders the stores only as other threads of the GPU see them; the host needs "
                "__threadfence_system() between the payload and the flag"
            )
        return "no __threadfence_system() between the payload and the flag: nothing orders them for the host"
    if not any(payload[-1] < f < flags[0] for f in fences):
        where = "after the flag" if fences[0] > flags[0] else "before the payload"
        return (
            f"__threadfence_system() comes {where}; it must sit between the last payload store and the flag "
            f"store, so the host sees the payload before the flag"
        )
    return None
