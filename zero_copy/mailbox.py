"""Results the host reads while the kernel still runs: fence and flag.

Taught in zero_copy/solutions/zero_copy.ipynb, section 5 (the lesson) and
Exercise 3.

The lesson's experiment: the kernel writes a payload into mapped memory,
fences with __threadfence_system(), raises a flag, and then waits for the host
to write a release word. The host polls the flag (each NumPy element read is a fresh
load, as through a volatile pointer), reads the payload, asks whether the
stream is still busy (it must be: the kernel cannot finish unreleased), and
only then releases the kernel and waits for the stream.

The graded exercise: the student writes the `publish` step (payload, fence,
flag) in CUDA C++; `mailbox_rounds` compiles it inside the lesson's
wait-for-release kernel and runs the same rounds, and `publish_verdict` judges
the PTX that NVRTC compiles from it (labcore.ptx.explore), the same way with or
without a GPU: on every path of the kernel (calls followed, loops turned, the
round a symbol, so for every round), every payload word is stored, then a
system-scope fence, then the flag, and nothing stores the payload or the flag
after it; the flag holds round and word k round * 1000003 + k when it is
raised. A path it cannot follow is a problem; a stored value it cannot compute
is `unverified` (offline that is "pending a GPU", labcore.pending).
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
from zero_copy.kernel import (
    KERNEL_PATH,
    MAILBOX,
    MAILBOX_WORDS,
    PUBLISH_THREADS,
    compile_options,
    launch_publish_and_wait,
)
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
OWNED = frozenset({MAILBOX["FLAG"], *PAYLOAD})  # the words publish may store
EXPECTED = (
    "expected on every path through the compiled kernel: all payload words stored, then a system-scope fence "
    "(__threadfence_system()), then the flag, and no store to the payload or the flag after it"
)
ROUND_NAME = "round"
ROUND = ptx.symbol(ROUND_NAME, 32)  # the kernel's round: one symbol, so a verdict holds for every round
# The one thread that publishes (kernel.launch_publish_and_wait: one block of PUBLISH_THREADS; thread 0 of block 0).
_THREAD = {
    **{f"%tid.{d}": ptx.known(0, 32) for d in "xyz"},
    **{f"%ctaid.{d}": ptx.known(0, 32) for d in "xyz"},
    **{f"%nctaid.{d}": ptx.known(1, 32) for d in "xyz"},
    "%ntid.x": ptx.known(PUBLISH_THREADS, 32),
    "%ntid.y": ptx.known(1, 32),
    "%ntid.z": ptx.known(1, 32),
    "%laneid": ptx.known(0, 32),
}


def expected_word(k: int) -> ptx.Sym:
    """What payload word k must hold for every round: round * 1000003 + k (expected_payload), as 32-bit ints."""
    return ptx.affine(((ROUND_NAME, 1000003),), k, 32)


def _initial(word: int) -> ptx.Value:
    """The mailbox before the kernel: zeros (one_round clears it), but the release word is the host's to write."""
    return ptx.known(0, 32) if 0 <= word < MAILBOX_WORDS and word != MAILBOX["RELEASE"] else None


MACHINE = ptx.Machine(
    base="box",
    inputs=(ptx.symbol("box"), ROUND, None),  # (box, round, timeout_ns): the timeout is not known
    specials=_THREAD,
    initial=_initial,
    word_bytes=WORD.itemsize,
)


@dataclass(frozen=True)
class _Path:
    """What one path has done so far (payload words by index k = 0 .. MB_PAYLOAD_WORDS - 1)."""

    last: tuple[ptx.Instruction | None, ...] = (None,) * len(PAYLOAD)  # each word's last store
    values: tuple[ptx.Value, ...] = (ptx.known(0, 32),) * len(PAYLOAD)  # each word's value now
    unfenced: frozenset[int] = frozenset()  # stored since the last system-scope fence
    narrow: frozenset[int] = frozenset()  # of those, followed by a GPU- or block-scope fence
    covered: frozenset[int] = frozenset()  # a system-scope fence has followed a store of the word
    fences: tuple[ptx.Instruction, ...] = ()  # system-scope fences, in order
    narrow_fences: tuple[ptx.Instruction, ...] = ()
    flag: ptx.Instruction | None = None  # the flag store, once made
    waited: bool = False  # the release word read after the flag: in the lesson's wait for the host

    def fence(self, instruction: ptx.Instruction, order: ptx.Order) -> _Path:
        if order.reaches("sys"):
            return replace(
                self,
                unfenced=frozenset(),
                narrow=frozenset(),
                covered=self.covered | self.unfenced,
                fences=_added(self.fences, instruction),
            )
        return replace(self, narrow=self.narrow | self.unfenced, narrow_fences=_added(self.narrow_fences, instruction))

    def store(self, instruction: ptx.Instruction, words: dict[int, ptx.Value]) -> _Path:
        ks = {w - PAYLOAD.start: v for w, v in words.items() if w in PAYLOAD}
        return replace(
            self,
            last=tuple(instruction if k in ks else s for k, s in enumerate(self.last)),
            values=tuple(ks.get(k, v) for k, v in enumerate(self.values)),
            unfenced=self.unfenced | set(ks),
            narrow=self.narrow - set(ks),
            flag=self.flag or (instruction if MAILBOX["FLAG"] in words else None),
        )


def _added(found: tuple[ptx.Instruction, ...], instruction: ptx.Instruction) -> tuple[ptx.Instruction, ...]:
    """`found` with `instruction` once (a fence in a loop adds nothing new: the facts stay finite)."""
    return found if instruction in found else (*found, instruction)


@dataclass(frozen=True)
class _Wrong:
    """A path that breaks the rule: at `flag` (or at `at`), payload word `k`, of this `kind`."""

    kind: str
    path: _Path
    at: ptx.Instruction
    k: int = 0
    detail: str = ""


@dataclass
class PublishVerdict:
    """The compiled publish step judged on every path: `problem` (None if none), what could not be verified of the
    stored values (`unverified`: empty when every value was), and how many paths were followed."""

    problem: str | None
    unverified: list[str]
    paths: int = 0


class _Judge:
    """The rule, path by path (ptx.explore's step), and what other paths did before each flag store (messages)."""

    def __init__(self) -> None:
        self.wrong: list[_Wrong] = []
        self.unverified: dict[str, None] = {}
        self.stored_before: dict[ptx.Instruction, dict[int, list[ptx.Instruction]]] = {}
        self.fenced_before: dict[ptx.Instruction, list[ptx.Instruction]] = {}
        self.flags = 0

    def step(self, facts: _Path, event: ptx.Event) -> _Path | None:
        """The path's facts after `event`, or None (recorded in self.wrong) once it breaks the rule."""
        ins = event.instruction
        if event.kind in ("fence", "end", "loop"):
            return self.control(facts, event)
        words = list(event.words(WORD.itemsize))
        if event.kind == "load":
            if MAILBOX["RELEASE"] not in words:
                return facts
            return self.stop(_Wrong("waits", facts, ins)) if facts.flag is None else replace(facts, waited=True)
        if event.start is None:
            return self.stop(_Wrong("address", facts, ins))
        foreign = [w for w in words if w not in OWNED]
        if MAILBOX["RELEASE"] in words or (foreign and _is_students(ins)):
            return self.stop(_Wrong("foreign", facts, ins, detail=str(foreign[0])))
        mine = [w for w in words if w in OWNED]
        if mine and facts.flag is not None:
            return self.stop(_Wrong("after", facts, ins, detail=str(mine[0])))
        if event.order is not None and event.order.releases:  # a release store: the fence and the store in one
            facts = facts.fence(ins, event.order)
        if MAILBOX["FLAG"] in words:
            problem = self.flag(facts, ins, event.values[words.index(MAILBOX["FLAG"])])
            if problem:
                return self.stop(problem)
        return facts.store(ins, dict(zip(words, event.values, strict=False)))

    def control(self, facts: _Path, event: ptx.Event) -> _Path | None:
        """step for a fence, the kernel's end or a loop."""
        ins = event.instruction
        if event.kind == "fence":
            return facts.fence(ins, event.order) if event.order is not None and event.order.releases else facts
        if event.kind == "end" and ins.parts[0] in {"exit", "trap"}:  # not the kernel's own return
            return self.stop(_Wrong("stops", facts, ins))
        if event.kind == "end" and facts.flag is None:
            return self.stop(_Wrong("end", facts, ins))
        if event.kind == "end":  # the kernel returns: only after the wait for the release
            return facts if facts.waited else self.stop(_Wrong("stops", facts, ins))
        # a loop may run for ever: fine only in the lesson's wait for the release
        return self.stop(_Wrong("loop", facts, ins)) if not facts.waited else facts

    def stop(self, wrong: _Wrong) -> None:
        self.wrong.append(wrong)
        return None

    def flag(self, facts: _Path, ins: ptx.Instruction, value: ptx.Value) -> _Wrong | None:
        """Whether the flag stored here may be raised: every word stored, then fenced; the values they hold."""
        self.flags += 1
        before = self.stored_before.setdefault(ins, {})
        for k, store in enumerate(facts.last):
            if store is not None:
                before.setdefault(k, []).append(store)
        fenced = [k for k in range(len(PAYLOAD)) if facts.last[k] is not None and k not in facts.unfenced]
        if fenced and facts.fences:
            self.fenced_before.setdefault(ins, []).append(facts.fences[-1])
        for k in range(len(PAYLOAD)):
            if facts.last[k] is None:
                return _Wrong("unstored", facts, ins, k)
        for k in range(len(PAYLOAD)):
            if k in facts.unfenced:
                return _Wrong("unfenced", facts, ins, k)
        return self.values(facts, ins, value)

    def values(self, facts: _Path, ins: ptx.Instruction, value: ptx.Value) -> _Wrong | None:
        """flag's last part: the flag's value and the payload's, wrong, or noted where the analysis cannot tell."""
        same = _same(value, ROUND)
        if same is False:
            return _Wrong("flag value", facts, ins, detail=str(value))
        if same is None:
            self.unverified[f"the value the flag store at {_where(ins)} stores"] = None
        for k, held in enumerate(facts.values):
            same = _same(held, expected_word(k))
            if same is False:
                return _Wrong("value", facts, ins, k, str(held))
            if same is None:
                self.unverified[f"payload word {k}'s value when {_where(ins)} stores the flag"] = None
        return None

    def message(self, wrong: _Wrong) -> str:
        """One line: what the path did, where, and what was expected."""
        ins, k, path = wrong.at, wrong.k, wrong.path
        at = f"the flag store at {_where(ins)}"
        head = f"the host can see the flag (box[MB_FLAG]) before payload word {k} (box[MB_PAYLOAD + {k}])"
        simple = {
            "end": "on some path the kernel ends without storing the flag (box[MB_FLAG]): the host would wait for "
            "it in vain; store the flag on every path through publish",
            "loop": f"the loop at {_where(ins)} comes back to the same state before the kernel waits for the host's "
            f"release (or, after {ptx.WIDEN_AFTER} turns, to one the analysis cannot tell apart), so on some path "
            f"it may never end: the host would wait for the flag, or the stream, in vain; {EXPECTED}",
            "stops": f"{_where(ins)} ends the kernel before the host has read the payload and released it: the "
            f"host must find the kernel still running, waiting for the release; let publish return",
            "waits": "on some path the kernel waits for the host's release (box[MB_RELEASE]) without having stored "
            "the flag: the host would wait for it in vain; store the flag on every path through publish",
            "address": f"cannot tell which word of the mailbox {_where(ins)} writes: its address is not box plus a "
            f"number known at compile time; write box[MB_PAYLOAD + w] with w a constant or the counter of a loop "
            f"with constant bounds (for (int w = 0; w < MB_PAYLOAD_WORDS; ++w))",
            "foreign": f"{_where(ins)} stores box[{wrong.detail}]: publish stores only the payload "
            f"(box[MB_PAYLOAD .. MB_PAYLOAD + {len(PAYLOAD) - 1}]) and the flag (box[MB_FLAG])",
            "after": f"{_where(ins)} stores box[{wrong.detail}] after the flag store at {_where(path.flag)} "
            f"(once the flag is up the host may read the payload at any moment); {EXPECTED}"
            if path.flag
            else "",
            "flag value": f"{at} stores {wrong.detail}, but the host waits for the flag to equal round: store "
            f"box[MB_FLAG] = round",
            "value": f"when {at} raises the flag, payload word {k} (box[MB_PAYLOAD + {k}]) holds {wrong.detail}; "
            f"expected round * 1000003 + {k}",
        }
        if wrong.kind in simple:
            return simple[wrong.kind]
        return f"{head}: {self.why(wrong, at)}; {EXPECTED}"

    def why(self, wrong: _Wrong, at: str) -> str:
        ins, k, path = wrong.at, wrong.k, wrong.path
        if wrong.kind == "unstored":
            elsewhere = self.stored_before.get(ins, {}).get(k)
            if elsewhere:
                return (
                    f"the payload store at {_places(elsewhere)} is on one branch only, and {at} can be reached "
                    f"without it"
                )
            return f"{at} comes before any store of payload word {k}"
        store = _places([path.last[k]])
        if k in path.covered:
            return (
                f"payload word {k} is stored again at {store}, after the system-scope fence at "
                f"{_places(list(path.fences))}, and no fence comes between that store and {at}"
            )
        if k in path.narrow:
            return (
                f"the ordering between them, at {_places(list(path.narrow_fences))}, has GPU or block scope only: it "
                f"orders the stores for the GPU's threads, not for the host, which needs __threadfence_system() "
                f"(system scope) between them"
            )
        elsewhere = self.fenced_before.get(ins)
        if elsewhere:
            return (
                f"the system-scope fence at {_places(elsewhere)} is on one branch only; on a path that skips it, "
                f"nothing orders payload word {k} before {at}"
            )
        return f"no system-scope fence comes between the payload store at {store} and {at}"


def _same(value: ptx.Value, want: ptx.Sym) -> bool | None:
    """Whether a 32-bit word holds `want` for every round: True, False (two different forms of the round differ
    for some round), or None when the value cannot be told (e.g. through an instruction the analysis does not
    compute: a GPU run can still check it)."""
    if not isinstance(value, ptx.Sym) or value.bits < 32:
        return None
    diff = ptx.affine((*value.terms, *((n, -c) for n, c in want.terms)), value.const - want.const, 32)
    return diff.constant and diff.const == 0


def publish_ptx(publish_source: str) -> str:
    """PTX of the exercise kernel around the student's publish step, compiled by NVRTC as the live run compiles
    it (the lesson's options) plus -lineinfo, which only adds the source lines of each instruction;
    labcore.nvrtc.CompileStopped past the compile's limits."""
    source = mailbox_source(publish_source)  # a student's: compiled in a child under limits (labcore.nvrtc)
    return nvrtc.compile_ptx_limited(source, [*compile_options(), "-lineinfo"], name=KERNEL_PATH.name)


def publish_verdict(publish_source: str) -> PublishVerdict:
    """The student's publish step compiled and judged on every path of the exercise kernel (ptx_verdict)."""
    try:
        text = publish_ptx(publish_source)
    except ptx.PtxCompileError as exc:
        own = any(line.startswith(f"{STUDENT_FILE}(") for line in exc.errors)
        hint = "" if own else "; define __device__ void publish(volatile int* box, int round) { ... }"
        return PublishVerdict(f"your publish step does not compile: {exc}{hint}", [])
    return ptx_verdict(text, EXERCISE_KERNEL)


def publish_problem(publish_source: str) -> str | None:
    """What is wrong with the compiled publish step (None if nothing that the analysis can tell)."""
    return publish_verdict(publish_source).problem


def ptx_verdict(text: str, kernel: str) -> PublishVerdict:
    """Every path through `kernel` of the PTX `text` (its calls followed), for every round: before each flag
    store every payload word is stored and then fenced at system scope (or the flag store is a system-scope
    release), no store of the payload or the flag follows it, no path waits for the release or ends without the
    flag, publish stores no other word, and the flag holds round and word k round * 1000003 + k. What the
    analysis cannot follow is a problem; a stored value it cannot compute is `unverified`."""
    judge = _Judge()
    try:
        paths = ptx.explore(text, kernel, MACHINE, _Path(), judge.step)
    except ptx.PtxError as exc:
        return PublishVerdict(f"cannot analyse the compiled kernel: {exc}", [])
    if judge.wrong and not judge.flags and not any(w.path.flag for w in judge.wrong):
        first = judge.wrong[0]
        if first.kind in {"end", "waits"}:
            return PublishVerdict(
                "the compiled kernel never stores the flag: raise it with box[MB_FLAG] = round after the fence",
                [],
                paths,
            )
    if judge.wrong:
        return PublishVerdict(judge.message(judge.wrong[0]), [], paths)
    return PublishVerdict(None, list(judge.unverified), paths)


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
