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
wait-for-release kernel and runs the same rounds, and `publish_problem` judges
the order of its stores on the PTX that NVRTC compiles from it (labcore.ptx),
the same way with or without a GPU: which word each store writes, and whether
on every path to the flag store each payload word is stored and then fenced at
system scope.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from labcore import nvrtc, ptx
from labcore.gpulock import gpu_turn
from labcore.record import PassTimes
from zero_copy import model
from zero_copy.config import as_json
from zero_copy.harness import Lab
from zero_copy.kernel import KERNEL_PATH, MAILBOX, MAILBOX_WORDS, compile_options, launch_publish_and_wait
from zero_copy.mapped import MappedBuffer, MappingSupport, alloc_mapped
from zero_copy.verify import round_ok

EXERCISE_KERNEL = "exercise_publish_and_wait"
STUDENT_FILE = "your_publish"  # the #line name of the student's lines: NVRTC's errors and PTX .loc lines use it
WORD = np.dtype(np.int32)  # the mailbox's words: `volatile int* box` in the kernels, int32 on the host
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
    with alloc_mapped(MAILBOX_WORDS, WORD) as box:
        # Non-blocking: no implicit synchronisation with the legacy stream can stall the poll.
        stream = box.use(cp.cuda.Stream(non_blocking=True))
        for round_no in range(1, n_rounds + 1):
            if lab is not None:
                lab.progress(f"mailbox round {round_no}")
            with gpu_turn():  # each round is timed on the host clock: launch to flag seen
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
#line 1 "STUDENT_FILE"
PUBLISH_SOURCE
#line 1 "exercise_kernel"

// One thread: the student's publish, then the lesson's wait for the host's release, so the
// kernel cannot finish before the host has read the payload.
extern "C" __global__ void EXERCISE_KERNEL(volatile int* box, int round, long long timeout_ns) {
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
    wrapper = MAILBOX_WRAPPER.replace("EXERCISE_KERNEL", EXERCISE_KERNEL).replace("STUDENT_FILE", STUDENT_FILE)
    return KERNEL_PATH.read_text() + wrapper.replace("PUBLISH_SOURCE", publish_source)


def compile_publish(publish_source: str) -> Any:
    """The compiled exercise kernel; PublishCompileError with the compiler's first error lines, and
    labcore.nvrtc.CompileStopped past the compile's limits. The student's source is compiled to a cubin for this
    GPU in a child under limits (labcore.nvrtc), with the options its PTX was judged with, then loaded."""
    import cupy as cp  # optional: only a live check compiles, and offline graders need not install CuPy

    arch = f"sm_{cp.cuda.Device().compute_capability}"
    try:
        cubin = nvrtc.compile_cubin_limited(
            mailbox_source(publish_source), compile_options(), arch=arch, name=KERNEL_PATH.name
        )
    except ptx.PtxCompileError as exc:
        raise PublishCompileError(str(exc)) from None
    # CuPy keeps a module loaded from a path by that path: each cubin gets a name of its own
    with tempfile.TemporaryDirectory(prefix="publish-") as tmp:
        path = Path(tmp) / f"publish-{hashlib.sha256(cubin).hexdigest()[:16]}.cubin"
        path.write_bytes(cubin)
        return cp.RawModule(path=str(path)).get_function(EXERCISE_KERNEL)


def mailbox_rounds(publish_source: str, rounds: int) -> list[dict[str, Any]]:
    """Compile the student's publish step and run `rounds` rounds of launch, poll, read, release."""
    return _rounds(rounds, kernel=compile_publish(publish_source))


# -- the publish step judged on its compiled code (PTX) ----------------------------------------------------------

PAYLOAD = range(MAILBOX["PAYLOAD"], MAILBOX["PAYLOAD"] + MAILBOX["PAYLOAD_WORDS"])
EXPECTED = (
    "expected on every path through the compiled kernel: all payload words stored, then a system-scope fence "
    "(__threadfence_system()), then the flag"
)


@dataclass(frozen=True)
class _Facts:
    """What holds before an instruction over every path from the kernel's entry (must) or over some path (may).
    Word sets hold payload words (box indices)."""

    stored_must: frozenset[int] = frozenset()
    stored_may: frozenset[int] = frozenset()
    fenced_must: frozenset[int] = frozenset()  # a system-scope fence follows the word's last store
    fenced_may: frozenset[int] = frozenset()
    narrow_may: frozenset[int] = frozenset()  # a fence of GPU or block scope follows the word's last store
    again_may: frozenset[int] = frozenset()  # stored again after a system-scope fence had covered it
    flag_must: bool = False

    def meet(self, other: _Facts) -> _Facts:
        return _Facts(
            self.stored_must & other.stored_must,
            self.stored_may | other.stored_may,
            self.fenced_must & other.fenced_must,
            self.fenced_may | other.fenced_may,
            self.narrow_may | other.narrow_may,
            self.again_may | other.again_may,
            self.flag_must and other.flag_must,
        )

    def fence(self, order: ptx.Order) -> _Facts:
        """After a fence (or a release) that orders the stores so far for observers at order.scope."""
        if order.reaches("sys"):
            return replace(self, fenced_must=self.stored_must, fenced_may=self.stored_may)
        return replace(self, narrow_may=self.narrow_may | self.stored_may)

    def store(self, words: frozenset[int]) -> _Facts:
        payload = words & frozenset(PAYLOAD)
        return replace(
            self,
            stored_must=self.stored_must | payload,
            stored_may=self.stored_may | payload,
            fenced_must=self.fenced_must - payload,
            fenced_may=self.fenced_may - payload,
            narrow_may=self.narrow_may - payload,
            again_may=self.again_may | (payload & self.fenced_may),
            flag_must=self.flag_must or MAILBOX["FLAG"] in words,
        )


def publish_ptx(publish_source: str) -> str:
    """PTX of the exercise kernel around the student's publish step, compiled by NVRTC as the live run compiles
    it (the lesson's options) plus -lineinfo, which only adds the source lines of each instruction;
    labcore.nvrtc.CompileStopped past the compile's limits."""
    source = mailbox_source(publish_source)  # a student's: compiled in a child under limits (labcore.nvrtc)
    return nvrtc.compile_ptx_limited(source, [*compile_options(), "-lineinfo"], name=KERNEL_PATH.name)


def publish_problem(publish_source: str) -> str | None:
    """What is wrong with the compiled publish step (None if nothing): it must compile, and on every path to
    each store of the flag, every payload word is stored, then a system-scope fence orders them, then the flag."""
    try:
        text = publish_ptx(publish_source)
    except ptx.PtxCompileError as exc:
        own = any(line.startswith(f"{STUDENT_FILE}(") for line in exc.errors)
        hint = "" if own else "; define __device__ void publish(volatile int* box, int round) { ... }"
        return f"your publish step does not compile: {exc}{hint}"
    try:
        return ptx_problem(ptx.parse_function(text, EXERCISE_KERNEL))
    except ptx.PtxError as exc:
        return f"cannot analyse the compiled kernel: {exc}"


def ptx_problem(kernel: ptx.Function) -> str | None:
    """The first problem of a compiled kernel's stores to the mailbox, its first parameter (None if none): a
    store whose word cannot be told, the pointer stored away, the student's store to a word publish does not own,
    no flag store, a flag store the host can see before some payload word, a wait for the release without a flag."""
    values = ptx.pointer_values(kernel, kernel.params[0])
    accesses = ptx.memory_accesses(kernel, values)
    writes = [a for a in accesses if a.writes]
    for access in writes:
        if access.start is None:
            return (
                f"cannot tell which word of the mailbox {_where(access.instruction)} writes: its address is not "
                f"box plus a number known at compile time; write box[MB_PAYLOAD + w] with w a constant, or in a "
                f"loop the compiler unrolls (for (int w = 0; w < MB_PAYLOAD_WORDS; ++w))"
            )
    escaped = ptx.escapes(kernel, values)
    if escaped:
        return (
            f"the mailbox pointer is stored away at {_where(escaped[0])} (passed to a function that was not "
            f"inlined, printed, or kept in memory): the stores made through it cannot be followed; store through "
            f"box in publish itself"
        )
    owned = {MAILBOX["FLAG"], *PAYLOAD}
    for access in writes:
        foreign = [w for w in access.words(WORD.itemsize) if w not in owned]
        if foreign and _is_students(access.instruction):
            return (
                f"{_where(access.instruction)} stores box[{foreign[0]}]: publish stores only the payload "
                f"(box[MB_PAYLOAD .. MB_PAYLOAD + {len(PAYLOAD) - 1}]) and the flag (box[MB_FLAG])"
            )
    words = {a.instruction: frozenset(a.words(WORD.itemsize)) for a in writes}
    flags = [a for a in writes if MAILBOX["FLAG"] in words[a.instruction]]
    if not flags:
        return "the compiled kernel never stores the flag: raise it with box[MB_FLAG] = round after the fence"
    before = ptx.forward(
        kernel,
        _Facts(),
        lambda ins, facts: _transfer(ins, facts, words),
        _Facts.meet,
    )
    for access in flags:
        if access.position in before:
            problem = _flag_problem(kernel, access, before[access.position], writes)
            if problem:
                return f"{problem}; {EXPECTED}"
    release = [a for a in accesses if not a.writes and MAILBOX["RELEASE"] in a.words(WORD.itemsize)]
    if any(a.position in before and not before[a.position].flag_must for a in release):
        return (
            "on some path the kernel waits for the host's release (box[MB_RELEASE]) without having stored the "
            "flag: the host would wait for it in vain; store the flag on every path through publish"
        )
    return None


def _transfer(instruction: ptx.Instruction, facts: _Facts, words: dict[ptx.Instruction, frozenset[int]]) -> _Facts:
    order = ptx.ordering(instruction)
    if order is not None and order.releases and instruction.parts[0] in {"membar", "fence"}:
        facts = facts.fence(order)
    return facts.store(words[instruction]) if instruction in words else facts


def _flag_problem(kernel: ptx.Function, flag: ptx.Access, facts: _Facts, writes: list[ptx.Access]) -> str | None:
    """Why this flag store can become visible before some payload word (None if it cannot)."""
    order = ptx.ordering(flag.instruction)
    if order is not None and order.releases:  # a release store: the fence and the store in one instruction
        facts = facts.fence(order)
    missing = [w for w in PAYLOAD if w not in facts.fenced_must]
    if not missing:
        return None
    w = missing[0]
    k = w - PAYLOAD.start
    head = f"the host can see the flag (box[MB_FLAG]) before payload word {k} (box[MB_PAYLOAD + {k}])"
    at = f"the flag store at {_where(flag.instruction)}"
    payload_stores = [a.instruction for a in writes if w in a.words(WORD.itemsize)]
    stores = _places(payload_stores)
    fences = _places([i for _p, i in kernel.positions() if _system_fence(i)])
    if w not in facts.stored_may:
        return f"{head}: {at} comes before any store of payload word {k}"
    if w not in facts.stored_must:
        return f"{head}: the payload store at {stores} is on one branch only, and {at} can be reached without it"
    if w in facts.again_may:
        return (
            f"{head}: payload word {k} is stored again at {_places(payload_stores[-1:])}, after the system-scope "
            f"fence at {fences}, and no fence comes between that store and {at}"
        )
    if w not in facts.fenced_may and w in facts.narrow_may:
        return (
            f"{head}: the ordering between them, at {_places(_narrow_fences(kernel))}, has GPU or block scope "
            f"only: it orders the stores for the GPU's threads, not for the host, which needs "
            f"__threadfence_system() (system scope) between them"
        )
    if w not in facts.fenced_may:
        return f"{head}: no system-scope fence comes between the payload store at {stores} and {at}"
    return (
        f"{head}: the system-scope fence at {fences} is on one branch only; on a path that skips it, nothing "
        f"orders payload word {k} before {at}"
    )


def _system_fence(instruction: ptx.Instruction) -> bool:
    order = ptx.ordering(instruction)
    return instruction.parts[0] in {"membar", "fence"} and order is not None and order.releases and order.reaches("sys")


def _narrow_fences(kernel: ptx.Function) -> list[ptx.Instruction]:
    found = []
    for _pos, instruction in kernel.positions():
        order = ptx.ordering(instruction)
        if order is not None and order.releases and not order.reaches("sys"):
            found.append(instruction)
    return found


def _is_students(instruction: ptx.Instruction) -> bool:
    return instruction.source is not None and instruction.source[0] == STUDENT_FILE


def _where(instruction: ptx.Instruction) -> str:
    """'your line 6 (st.volatile.global.u32 [%rd2], %r1)': where a message can send the student."""
    if instruction.source is None:
        return f"({instruction.text})"
    file, line = instruction.source
    place = f"your line {line}" if file == STUDENT_FILE else f"line {line} of {file}"
    return f"{place} ({instruction.text})"


def _places(instructions: list[ptx.Instruction]) -> str:
    """Where some instructions are, the student's own first: 'your line 3 (st...) and your line 5 (st...)'."""
    own = [i for i in instructions if _is_students(i)] or instructions
    return " and ".join(dict.fromkeys(_where(i) for i in own)) or "none"
