"""The checks the zero-copy notebook's autograded cells call. Each raises AssertionError with the numbers.

Every check says how it decided. Live on a GPU it runs the student's code for
real: the gather from a freshly filled mapped table with fresh random ids, its
rows compared bit for bit with NumPy's take and its speed compared with the
pinned copy of the same batch measured in the same run; the mailbox kernel
compiled from the student's source, its payload read while it still runs.
Without a GPU it runs what the CPU can run (the gather's launch thread by
thread through `zero_copy.gather.simulate_gather`, on the rows of the same
table the live run fills) and takes timings and mailbox rounds from the
recorded H200 profile (`zero_copy/profiles/h200`), and says so. The publish
step is judged on its PTX either way: NVRTC compiles it, with no GPU needed,
and `zero_copy.mailbox.publish_verdict` follows its stores, fences and stored
values on every path, for every round; offline, a value it cannot compute makes
the cell pending a GPU (labcore.pending), never a pass. Checks return nothing:
a number a test cell displays would count as partial credit.

Every call into the student's code goes through labcore.answers: while
grading, the sandbox records what the student's functions return (and the
publish source) and the trusted checker judges those values, running nothing
of the student's Python. Each check asks all its questions before it judges
anything, and the questions are the same with a GPU or without: the gather's
ids come from one table size in both.
"""

from __future__ import annotations

import dataclasses
import math
import re
import secrets
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

from labcore import answers, checking, nvrtc, ptx, public
from labcore.checking import Result, assert_own_function, say, verdicts
from labcore.device import gpu_available
from labcore.pending import PendingGPU, pending_message
from labcore.record import Record
from labcore.sizes import format_size
from zero_copy import gather, mailbox, model, replay
from zero_copy.config import VECTOR_BYTES, planned_rows
from zero_copy.kernel import THREADS
from zero_copy.report import GATHER_LINK_FRACTION, gather_verdict, mailbox_verdict, rates

GATHER_ROWS = 50_000
ROW_BYTES = 1 << 10
TABLE_BYTES = 1 << 30  # far beyond every cache on the way, small enough to pin on a lab machine
ID_PATTERNS = ("random", "descending", "repeated")
LAUNCH_SIZES = (1, 7, 8, 9, 31, 33, 1000, 3001, 50_000, 1_000_003, 50_000_000)
GATHER_REPEATS = 5
MAILBOX_ROUNDS = 3
MAX_PUBLISH_CHARS = 100_000  # a publish step is a few lines; a longer "source" is refused before NVRTC sees it
BREAK_EVEN_TOLERANCE = 1e-6  # relative: the formula is exact, so only rounding may differ
# (link GB/s, HBM GB/s): a PCIe Gen4 x16 card, a Gen5 one, and a coherent CPU-GPU link (NVLink-C2C class)
BREAK_EVEN_CASES = [(25.0, 1500.0), (55.0, 3350.0), (450.0, 4000.0)]
_HINT = "write the arithmetic yourself"


def _shown(value: Any, limit: int = 120) -> str:
    """repr of a value for a message, cut short: what came back may be anything, and large."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- the gather: launch configuration and id order -------------------------------------------------------------


def table_rows(row_bytes: int) -> int:
    """Rows of the table a gather check reads: live it is filled in mapped memory, offline its rows are computed."""
    return TABLE_BYTES // row_bytes


def request_ids(n_rows: int, table_rows: int, pattern: str, seed: int) -> np.ndarray:
    """A batch of row ids: random (duplicates possible), the same sorted descending, or a few rows many times."""
    assert pattern in ID_PATTERNS, f"pattern {pattern!r}; choose from {', '.join(ID_PATTERNS)}"
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, table_rows, n_rows, dtype=np.int64)
    if pattern == "descending":
        ids = np.sort(ids)[::-1].copy()
    elif pattern == "repeated":
        ids = rng.integers(0, 8, n_rows, dtype=np.int64) * (table_rows // 8) + table_rows // 16
    return ids


def _own_gather_launch(gather_launch: Callable[[int], Any]) -> None:
    """gather_launch(n_rows) is written in the notebook, not the package's launch (the student's kernel only:
    while grading the sandbox withholds the lesson's answers, labcore.answers.reference)."""
    assert_own_function(
        gather_launch,
        n_params=1,
        what="gather_launch(n_rows)",
        forbidden=("launch_gather_rows", "gather_rows_with", "gather_grid"),
        hint=_HINT,
    )


def _own_order_ids(order_ids: Callable[[np.ndarray], Any]) -> None:
    assert_own_function(order_ids, n_params=1, what="order_ids(ids)", forbidden=("sorted_order",), hint=_HINT)


def _asked_launch(gather_launch: Callable[[int], Any], n_rows: int) -> Any:
    """The student's gather_launch(n_rows), as labcore.answers gets it (unjudged)."""
    return answers.answer(
        f"gather_launch({n_rows})", ("zero_copy gather_launch", n_rows), answers.ask_call, gather_launch, n_rows
    )


def _launch_config(n_rows: int, config: Any) -> tuple[int, int]:
    """(threads, blocks) from what gather_launch returned, or AssertionError saying why CUDA would not launch it."""
    assert isinstance(config, tuple) and len(config) == 2, (
        f"gather_launch({n_rows}) should return (threads_per_block, blocks); got {_shown(config)}"
        + (": a list, where a tuple of two whole numbers is wanted" if isinstance(config, list) else "")
    )
    problem = gather.launch_problem(*config)
    assert problem is None, f"gather_launch({n_rows}): {problem}"
    return int(config[0]), int(config[1])


@dataclasses.dataclass(frozen=True)
class _GatherAsked:
    """One batch a gather check asks about: its trusted ids and the student's two answers, not yet judged."""

    ids: np.ndarray
    table_rows: int
    row_bytes: int
    pattern: str
    config: Any
    order: Any


def _ask_gather(
    check: str,
    gather_launch: Callable[[int], Any],
    order_ids: Callable[[np.ndarray], Any],
    *,
    n_rows: int,
    row_bytes: int,
    pattern: str,
) -> _GatherAsked:
    """Ask gather_launch and order_ids about one batch of fresh ids (the same ids with a GPU or without)."""
    assert n_rows >= 1 and row_bytes >= VECTOR_BYTES and row_bytes % VECTOR_BYTES == 0, (
        "rows >= 1 and a row a positive multiple of 16 bytes"
    )
    _own_gather_launch(gather_launch)
    _own_order_ids(order_ids)
    rows = table_rows(row_bytes)
    seed = answers.fresh_seed(f"zero_copy {check} {n_rows} {row_bytes} {pattern}")
    ids = request_ids(n_rows, rows, pattern, seed)
    config = _asked_launch(gather_launch, n_rows)
    order = answers.answer(
        f"order_ids on {n_rows:,} {pattern} ids",
        ("zero_copy order_ids", n_rows, rows, pattern, seed),
        ask_order,
        order_ids,
        n_rows,
        rows,
        pattern,
        seed,
    )
    return _GatherAsked(ids, rows, row_bytes, pattern, config, order)


@answers.asker
def ask_order(order_ids: Callable[[np.ndarray], Any], n_rows: int, rows: int, pattern: str, seed: int) -> Any:
    """The student's order_ids on the batch of ids these trusted values draw (`request_ids`)."""
    return order_ids(request_ids(n_rows, rows, pattern, seed))


def _student_plan(asked: _GatherAsked) -> tuple[int, int, np.ndarray, np.ndarray]:
    """Check what the student's two functions returned before anything runs or is simulated."""
    n = asked.ids.size
    threads, blocks = _launch_config(n, asked.config)
    order = asked.order
    assert isinstance(order, tuple) and len(order) == 2, (
        f"order_ids should return (sorted_ids, restore); got {type(order).__name__}"
        + (f" of {len(order)}" if isinstance(order, (tuple, list)) else "")
        + (
            f" of shape {order.shape}: one array, where a tuple of two is wanted"
            if isinstance(order, np.ndarray)
            else ""
        )
    )
    for name, part in zip(("sorted_ids", "restore"), order, strict=True):
        assert part is not None, f"order_ids: {name} should be {n:,} integers (shape ({n},)), got None"
    problem = gather.order_problem(asked.ids, *order, table_rows=asked.table_rows)
    assert problem is None, f"order_ids: {problem}"
    return threads, blocks, np.asarray(order[0], dtype=np.int64), np.asarray(order[1], dtype=np.int64)


def _simulated(
    ids: np.ndarray, threads: int, blocks: int, sorted_ids: np.ndarray, restore: np.ndarray, row_bytes: int
) -> tuple[bool, str]:
    """The kernel's writes for this grid computed on the CPU (gather.written_from: which row lands in each 16-byte
    word), put back with restore, against the rows asked for: every word must hold its own row.

    The whole (rows, words) array is built only to say what is wrong: every word holds its own row exactly when
    each row restore takes back is written whole and sorted_ids[restore] are the ids asked for."""
    words = row_bytes // VECTOR_BYTES
    whole = gather.rows_written_whole(sorted_ids.size, threads, blocks, words)
    if whole[restore].all() and np.array_equal(sorted_ids[restore], ids):
        return True, f"bit-exact, {ids.size * words:,} values (16-byte words) in {ids.size:,} rows"
    written = gather.written_from(sorted_ids, threads, blocks, words)[restore]
    bad = written != np.asarray(ids, dtype=np.int64)[:, None]
    row, word = divmod(int(np.flatnonzero(bad)[0]), written.shape[1])
    got = "nothing was written there" if written[row, word] < 0 else f"it holds row {written[row, word]}"
    return False, (
        f"{int(np.count_nonzero(bad)):,} of {written.size:,} values differ (16-byte words, in "
        f"{int(np.count_nonzero(bad.any(axis=1))):,} of {ids.size:,} rows); first: row {row} (id {ids[row]}), "
        f"word {word}: {got}"
    )


def _gather_verdict(asked: _GatherAsked, *, repeats: int) -> tuple[gather.GatherRun | None, str, tuple]:
    """Run (live) or simulate (offline) the student's gather; AssertionError naming what went wrong."""
    ids, row_bytes, pattern = asked.ids, asked.row_bytes, asked.pattern
    n_rows = ids.size
    threads, blocks, sorted_ids, restore = plan = _student_plan(asked)
    idle = gather.idle_blocks(threads, blocks, n_rows)
    assert idle == 0, (
        f"{blocks:,} blocks of {threads} threads for {n_rows:,} rows: {idle:,} whole block(s) have no "
        f"row to copy; one warp per row needs ceil(32 x {n_rows:,} / {threads}) = {blocks - idle:,}"
    )
    fill_seed = secrets.randbelow(2**31)  # the table's contents: the trusted side's alone
    run = None
    if gpu_available():
        run = gather.run_gather_exercise(
            ids,
            threads,
            blocks,
            sorted_ids,
            restore,
            row_bytes=row_bytes,
            table_bytes=asked.table_rows * row_bytes,
            seed=fill_seed,
            repeats=repeats,
        )
        ok, detail = run.ok, run.detail
        how = (
            f"live: {n_rows:,} {pattern} ids, rows of {row_bytes} B gathered on the GPU from a "
            f"{format_size(run.table_bytes)} mapped table, put back with your restore"
        )
    else:
        ok, detail = _simulated(ids, threads, blocks, sorted_ids, restore, row_bytes)
        how = (
            f"offline: {n_rows:,} {pattern} ids, rows of {row_bytes} B; what your grid makes the kernel write "
            f"was computed warp by warp on the CPU (no GPU to run it on)"
        )
    if not ok:
        diagnosis = gather.mapping_problem(threads, blocks, n_rows)
        raise AssertionError(
            f"grid of {blocks:,} blocks x {threads} threads, rows put back with your restore: "
            f"{detail}" + (f". {diagnosis}" if diagnosis else "")
        )
    return run, how + f": {detail}", plan


def check_gather_correct(
    gather_launch: Callable[[int], Any],
    order_ids: Callable[[np.ndarray], Any],
    *,
    n_rows: int = GATHER_ROWS,
    row_bytes: int = ROW_BYTES,
    pattern: str = "random",
) -> None:
    """Rows bit-exact against NumPy's take in request order (no block launched without a row to copy)."""
    asked = _ask_gather(
        "check_gather_correct", gather_launch, order_ids, n_rows=n_rows, row_bytes=row_bytes, pattern=pattern
    )
    answers.asked()
    _, how, (threads, blocks, _, _) = _gather_verdict(asked, repeats=0)
    say(f"{how}; grid {blocks:,} x {threads}")


def check_gather_launch(gather_launch: Callable[[int], Any], n_values: tuple[int, ...] = LAUNCH_SIZES) -> None:
    """For every batch size: a grid CUDA launches, one whole warp per row, and no block without a row."""
    _own_gather_launch(gather_launch)
    configs = [_asked_launch(gather_launch, n) for n in n_values]
    answers.asked()
    for n, config in zip(n_values, configs, strict=True):
        threads, blocks = _launch_config(n, config)
        problem = gather.mapping_problem(threads, blocks, n)
        assert problem is None, f"gather_launch({n:,}): {problem}"
        idle = gather.idle_blocks(threads, blocks, n)
        assert idle == 0, f"gather_launch({n:,}) = {config}: {idle:,} whole block(s) have no row to copy"
    say(
        f"gather_launch gives every row one warp and no idle block for {len(n_values)} batch sizes "
        f"({min(n_values):,} to {max(n_values):,} rows)"
    )


def gather_result(fraction: float, threshold: float, source: str, batch_bytes: int, **more: Any) -> Result:
    """check_gather_bandwidth's number as data: the gather's GB/s over the pinned copy's for the same batch."""
    return Result(
        "zero_copy gather / the pinned copy",
        f"{batch_bytes / 1e6:.1f} MB batch",
        "fraction of the copy's GB/s",
        fraction,
        "fraction",
        source,
        threshold=threshold,
        passes_below=False,
        **more,
    )


def _recorded_gather(sorted_ids: np.ndarray, threads: int, threshold: float, batch_bytes: int) -> None:
    """Offline: the recorded H200 gather with sorted or unsorted ids, whichever order the student's ids have."""
    record = replay.load_profile()
    plan, verdict = record.extra["gather"], gather_verdict(record)
    descent = gather.first_descent(sorted_ids)
    path = "sorted" if descent is None else "unsorted"
    found = record.pass_times(next(r.key for r in planned_rows(plan) if r.key.path == path))
    fraction = found.gbps() / verdict["copy_gbps"]
    where = (
        f"offline, from the recorded {record.device.name} run ({record.recorded_at}): its gather with {path} "
        f"ids moved {found.gbps():.1f} GB/s = {fraction:.2f} of the pinned copy of the same batch "
        f"({verdict['copy_gbps']:.1f} GB/s)"
    )
    found_result = checking.record(
        gather_result(
            fraction, threshold, "recorded", batch_bytes, reference=verdict["fraction_of_copy"], detail=f"{path} ids"
        )
    )
    assert found_result.passed, (
        f"your ids are not in ascending order (ids[{descent}] > ids[{descent + 1}]); {where}, below {threshold}"
        if descent is not None
        else f"{where}, below {threshold}"
    )
    note = (
        ""
        if threads == THREADS
        else f"; it launched {THREADS} threads per block, yours {threads}: that difference is not measurable offline"
    )
    say(f"your ids are in ascending order; {where} >= {threshold}{note}")


def check_gather_bandwidth(
    gather_launch: Callable[[int], Any],
    order_ids: Callable[[np.ndarray], Any],
    *,
    threshold: float = GATHER_LINK_FRACTION,
    n_rows: int = GATHER_ROWS,
    row_bytes: int = ROW_BYTES,
) -> None:
    """The gather moves at least `threshold` of the pinned H2D copy's GB/s for the same batch, measured together."""
    asked = _ask_gather(
        "check_gather_bandwidth", gather_launch, order_ids, n_rows=n_rows, row_bytes=row_bytes, pattern="random"
    )
    answers.asked()
    run, how, (threads, _, sorted_ids, _) = _gather_verdict(asked, repeats=GATHER_REPEATS)
    if run is None:
        say(how)
        _recorded_gather(sorted_ids, threads, threshold, asked.ids.size * asked.row_bytes)
        return
    fraction = run.fraction_of_copy
    measured = (
        f"live, medians of {GATHER_REPEATS}: your gather {run.gather_ms:.3f} ms = "
        f"{run.gbps(run.gather_ms):.1f} GB/s, the pinned copy of the same {run.batch_bytes / 1e6:.1f} MB "
        f"{run.copy_ms:.3f} ms = {run.gbps(run.copy_ms):.1f} GB/s: {fraction:.2f} of it"
    )
    found = checking.record(gather_result(fraction, threshold, "live", run.batch_bytes, detail=measured))
    assert found.passed, f"{measured}, below {threshold}"
    say(f"{how}; {measured} >= {threshold} (putting rows back took another {run.restore_ms:.3f} ms in HBM)")


# -- the break-even --------------------------------------------------------------------------------------------


def _real(value: Any, what: str) -> float:
    """What the student's function returned as a float, or AssertionError (not a number, or beyond a float)."""
    ok = isinstance(value, (int, float, np.floating, np.integer)) and not isinstance(value, (bool, np.bool_))
    assert ok, f"{what} should return a number, got {_shown(value)}"
    try:
        return float(value)
    except OverflowError:
        raise AssertionError(f"{what} returned {_shown(value)}, beyond what a float holds") from None


def _shipped_rates() -> list[list[float]]:
    """The (L, H) of the lesson's shipped profile: a visible case beside BREAK_EVEN_CASES, so an offline run of the
    notebook checks its own record's L and H in the student's kernel too."""
    measured = rates(replay.load_profile())
    return [[measured.h2d_gbps, measured.hbm_gbps]]


BREAK_EVEN = public.Expectation(  # the visible (L, H) pairs, and the model's r* at each (labcore.public)
    "zero_copy", "break-even", lambda: [*BREAK_EVEN_CASES, *_shipped_rates()], lambda case: model.crossover_reads(*case)
)


def _assert_break_even(link: float, hbm: float, got: float, value: Any) -> None:
    """The student's r* (`got`, read from `value`) is the model's at this L and H: inf where copying never wins."""
    want = BREAK_EVEN.want([link, hbm])
    if math.isinf(want):
        assert math.isinf(got) and got > 0, (
            f"L = {link:g}, H = {hbm:g} GB/s: copying costs B/L + r·B/H, more than zero-copy's r·B/L for every "
            f"r, so copying never wins: return math.inf; you return {value!r}"
        )
        return
    assert math.isfinite(got) and abs(got - want) <= BREAK_EVEN_TOLERANCE * want, (
        f"L = {link:g}, H = {hbm:g} GB/s: you give r* = {got:.6g}, the model {want:.6g} "
        f"(where copying, B/L + r·B/H, costs what zero-copy, r·B/L, does)"
    )


def check_break_even(
    break_even_reads: Callable[[float, float], float],
    record: Record | None = None,
    *,
    cases: list[tuple[float, float]] | None = None,
) -> None:
    """The student's r* solves B/L + r·B/H = r·B/L on the record's L and H and on other links (inf: never).

    While grading, a record given is read from the lesson's shipped profile, whatever the notebook's variable holds.
    """
    assert_own_function(
        break_even_reads,
        n_params=2,
        what="break_even_reads(link_gbps, hbm_gbps)",
        forbidden=("crossover_reads", "fit_breakeven"),
        hint=_HINT,
    )
    todo = list(cases if cases is not None else BREAK_EVEN_CASES)
    if record is not None:
        record = answers.lesson_data(record, replay.load_profile)
        measured = rates(record)
        todo.insert(0, [measured.h2d_gbps, measured.hbm_gbps])
    got_all = [
        answers.answer(
            f"break_even_reads({link:g}, {hbm:g})",
            ("zero_copy break_even_reads", link, hbm),
            answers.ask_call,
            break_even_reads,
            link,
            hbm,
        )
        for link, hbm in todo
    ]
    answers.asked()
    found = []
    for (link, hbm), value in zip(todo, got_all, strict=True):
        got = _real(value, f"break_even_reads({link:g}, {hbm:g})")
        found.append(got)
        if not BREAK_EVEN.judges([link, hbm]):  # this run's own L and H, live: graded later
            say(f"this run's L = {link:.1f} and H = {hbm:.0f} GB/s: your r* = {got:.6g}, checked when graded")
            continue
        _assert_break_even(link, hbm, got, value)
    origin = ""
    if record is not None:
        link, hbm = todo[0]
        origin = (
            f"; on the record's L = {link:.1f} and H = {hbm:.0f} GB/s ({record.device.name}, "
            f"{record.recorded_at}) r* = {found[0]:.3f}"
        )
    say(f"{len(todo)} (L, H) pairs match the model{origin}")


# -- the mailbox -----------------------------------------------------------------------------------------------


def _round_problem(result: dict[str, Any]) -> str | None:
    n = result["round"]
    if not result["flag_seen"]:
        return f"round {n}: the host never saw the flag {n} within {mailbox.HOST_TIMEOUT_S:.0f} s"
    if not result["payload_ok"]:
        return (
            f"round {n}: after seeing the flag the host read the payload {result['payload']}, "
            f"expected {mailbox.expected_payload(n)}"
        )
    if not result["running_when_read"]:
        return f"round {n}: the kernel had already finished when the host read the payload"
    if result["timed_out"] or not result["acked"]:
        return f"round {n}: the kernel did not end on the host's release"
    return None


def _empty_publish(source: str) -> bool:
    """The source defines publish() with nothing but comments in its body (the release's stub)."""
    code = re.sub(r"/\*.*?\*/|//[^\n]*", "", source, flags=re.S)
    return re.search(r"\bpublish\s*\([^)]*\)\s*\{\s*\}", code) is not None


def _mailbox_result(good: int, rounds: int, source: str) -> Result:
    """check_mailbox_publish's number as data: the share of rounds whose host read the exact payload while the kernel
    ran (every one is needed)."""
    return Result(
        "zero_copy mailbox: rounds read exactly",
        f"{rounds} rounds",
        "fraction of rounds",
        good / rounds if rounds else 0.0,
        "fraction",
        source,
        threshold=1.0,
        passes_below=False,
        detail=f"{good} of {rounds} rounds",
    )


def check_mailbox_publish(publish_source: str, *, rounds: int = MAILBOX_ROUNDS) -> None:
    """Payload stores, then a system-scope fence, then the flag, on every path of the compiled kernel; the host
    reads the exact payload while it runs."""
    source = answers.answer("your publish() source", ("zero_copy publish",), answers.ask_value, publish_source)
    answers.asked()
    assert isinstance(source, str), f"expected CUDA source as a str, got {type(source).__name__}"
    assert len(source) <= MAX_PUBLISH_CHARS, (
        f"MY_PUBLISH holds {len(source):,} characters; a publish step is a few lines (at most {MAX_PUBLISH_CHARS:,})"
    )
    assert "YOUR CODE HERE" not in source and not _empty_publish(source), (
        "MY_PUBLISH still holds the exercise's stub, a publish() that stores nothing: inside it, store the payload "
        "words (box[MB_PAYLOAD + w]), then fence at system scope, then store the flag (box[MB_FLAG])"
    )
    try:
        verdict = mailbox.publish_verdict(source)  # compiles it in a child under limits (labcore.nvrtc)
    except nvrtc.CompileStopped as exc:
        raise AssertionError(f"your publish step was not compiled: {exc}") from None
    assert verdict.problem is None, verdict.problem
    order = (
        f"on every path of your compiled kernel (PTX for {ptx.DEFAULT_ARCH} from {ptx.nvrtc_version()}) the payload "
        f"words are stored, then fenced at system scope, then the flag is stored, and nothing after it"
    )
    if not gpu_available():
        if verdict.unverified:
            raise PendingGPU(
                pending_message(
                    f"offline, {order}, but the analysis could not compute "
                    f"{'; '.join(verdict.unverified[:2])}: a GPU run reads what your kernel stores"
                )
            )
        record = replay.load_profile()
        recorded = mailbox_verdict(record)
        failed = recorded["rounds"] - recorded["good_rounds"]
        checking.record(_mailbox_result(recorded["good_rounds"], recorded["rounds"], "recorded"))
        assert recorded["passed"], f"offline: the recorded mailbox failed in {failed} of {recorded['rounds']} rounds"
        say(
            f"offline: {order}, and for every round the flag holds round and payload word k round * 1000003 + k "
            f"when it is raised (no GPU to run it); the recorded {record.device.name} run ({record.recorded_at}), "
            f"whose kernel does the same, read the exact payload while the kernel ran in {recorded['good_rounds']} "
            f"of {recorded['rounds']} rounds"
        )
        return
    try:
        results = mailbox.mailbox_rounds(source, rounds)
    except mailbox.PublishCompileError as exc:
        raise AssertionError(f"your publish step does not compile: {exc}") from None
    except nvrtc.CompileStopped as exc:
        raise AssertionError(f"your publish step was not compiled: {exc}") from None
    problems = [p for p in map(_round_problem, results) if p]
    checking.record(_mailbox_result(rounds - len(problems), rounds, "live"))
    assert not problems, f"{len(problems)} of {rounds} rounds failed; first: {problems[0]}"
    latency_ms = statistics.median(r["flag_seen_ms"] for r in results)
    say(
        f"live: {order}; in {rounds} of {rounds} rounds the host saw the flag (median {latency_ms * 1e3:.0f} us after "
        f"the launch) and read the exact payload while your kernel was still running"
    )


verdicts(globals())  # in the student's kernel a failed check shows one verdict, not a traceback (labcore.checking)
