"""The zero-copy checks while grading (labcore.answers): the sandbox only asks, the checker only judges.

For every check: the reference answers, collected as the grading sandbox collects them and judged from the file
as the checker judges them, pass; a wrong answer collected the same way fails in the checker with the check's own
message; an empty answers file fails with NoAnswer; and forged values fail with a clear AssertionError, never
another kind of error. The sandbox's copy of the lesson withholds the reference answers (labcore.answers.reference):
the collect phase here runs with them raising, as there.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from labcore import answers, ptx
from zero_copy import checks, gather, kernel, mailbox, model, replay
from zero_copy.kernel import KERNEL_PATH, compile_options

# -- the reference solutions, as zero_copy/solutions/zero_copy.ipynb writes them ---------------------------------


def break_even_reads(link_gbps, hbm_gbps):
    # B/L + r·B/H = r·B/L  <=>  r (1/L - 1/H) = 1/L  <=>  r = H / (H - L)
    if hbm_gbps <= link_gbps:
        return math.inf
    return hbm_gbps / (hbm_gbps - link_gbps)


def gather_launch(n_rows):
    threads_per_block = 256  # eight warps per block
    blocks = (32 * n_rows + threads_per_block - 1) // threads_per_block
    return threads_per_block, blocks


def order_ids(ids):
    order = np.argsort(ids, kind="stable")  # sorted_ids[k] = ids[order[k]]
    restore = np.empty_like(order)
    restore[order] = np.arange(order.size)  # the inverse permutation: sorted_ids[restore[i]] = ids[i]
    return ids[order], restore


MY_PUBLISH = r"""
__device__ void publish(volatile int* box, int round) {
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) {
        box[MB_PAYLOAD + w] = round * 1000003 + w;
    }
    __threadfence_system();  // the host sees the payload before it can see the flag
    box[MB_FLAG] = round;
}
"""

SEED = "20240917"  # the grading run's seed the two roles share
SMALL = {"n_rows": 3001, "row_bytes": 48}  # a small batch keeps the offline simulation quick


# -- the two roles -------------------------------------------------------------------------------------------------


class Roles:
    """Switches this process between the grading sandbox (collect) and the trusted checker (judge)."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.dir, self.mp, self.n = tmp_path, monkeypatch, 0

    def collect(self) -> Path:
        """Become the sandbox, on a fresh answers file: no GPU, and the lesson's reference answers withheld."""
        self.n += 1
        path = self.dir / f"answers{self.n}.jsonl"
        path.touch()
        self.mp.setattr(answers, "role", answers.Role.collect(path, SEED))
        self.mp.setattr(checks, "gpu_available", lambda: False)
        for owner, name in ((model, "crossover_reads"), (kernel, "gather_grid"), (gather, "sorted_order")):
            self.mp.setattr(owner, name, _withheld(name))
        return path

    def judge(self, path: Path, *, gpu: bool = False) -> None:
        """Become the checker on `path`, the lesson whole again (its references are trusted code there)."""
        self.mp.undo()
        self.mp.setattr(answers, "role", answers.Role.judge(path, SEED))
        self.mp.setattr(checks, "gpu_available", lambda: gpu)
        answers._answers.cache_clear()

    def empty(self) -> Path:
        self.n += 1
        path = self.dir / f"empty{self.n}.jsonl"
        path.touch()
        return path


def _withheld(name: str) -> Callable[..., Any]:
    def body(*args: Any, **kwargs: Any) -> Any:
        raise answers.ReferenceWithheld(f"{name} is withheld in the grading sandbox")

    return body


@pytest.fixture
def roles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Roles]:
    yield Roles(tmp_path, monkeypatch)
    answers._answers.cache_clear()


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def forged(path: Path, question: str, value: Any, *, raw: bool = False) -> Path:
    """A copy of a collected answers file whose answers to `question` (a key prefix) hold `value` instead."""
    out = path.with_name(path.stem + "-forged.jsonl")
    lines = []
    hits = 0
    for line in lines_of(path):
        if line["key"].startswith(question):
            line = {"key": line["key"], "value": value if raw else answers.encode(value)}
            hits += 1
        lines.append(json.dumps(line))
    assert hits, f"no answer to {question!r} in {path}"
    out.write_text("\n".join(["not json at all", '{"value": 1}', *lines]) + "\n")
    return out


# -- the break-even --------------------------------------------------------------------------------------------


def test_break_even_reference_collected_then_judged_passes(roles, capsys):
    path = roles.collect()
    checks.check_break_even(break_even_reads, replay.load_profile())
    checks.check_break_even(break_even_reads, cases=[(100.0, 100.0), (900.0, 4800.0)])
    assert capsys.readouterr().out == ""  # the sandbox judges nothing and says nothing
    assert len(lines_of(path)) == 6 and all("value" in line for line in lines_of(path))
    roles.judge(path)
    checks.check_break_even(answers.Answer("break_even_reads"), replay.load_profile())
    checks.check_break_even(answers.Answer("break_even_reads"), cases=[(100.0, 100.0), (900.0, 4800.0)])
    out = capsys.readouterr().out
    assert "[check] 4 (L, H) pairs match the model; on the record's L = 55.1 and H = 4077 GB/s" in out
    assert "r* = 1.014" in out


def test_break_even_while_grading_reads_the_shipped_record_not_the_notebooks(roles, capsys):
    """A notebook variable swapped for anything else changes nothing: L and H come from the shipped profile."""
    path = roles.collect()
    checks.check_break_even(break_even_reads, object())
    roles.judge(path)
    checks.check_break_even(answers.Answer("break_even_reads"), "a record the student made up")
    assert "on the record's L = 55.1 and H = 4077 GB/s" in capsys.readouterr().out


def test_break_even_wrong_formula_fails_in_the_judge(roles):
    path = roles.collect()
    checks.check_break_even(lambda link, hbm: 1 + link / hbm, replay.load_profile())  # the sandbox does not judge
    roles.judge(path)
    with pytest.raises(AssertionError, match=r"L = 55.08\d*, H = 4076.\d* GB/s: you give r\* = .*, the model 1.0137"):
        checks.check_break_even(answers.Answer("break_even_reads"), replay.load_profile())


def test_break_even_calling_the_withheld_model_fails_naming_it(roles):
    """In the sandbox the lesson's crossover_reads raises: an answer borrowing it under any name fails."""
    path = roles.collect()
    borrowed = model.crossover_reads
    with pytest.raises(answers.AnswerRaised, match=r"break_even_reads\(25, 1500\): your code raised ReferenceWith"):
        checks.check_break_even(lambda link, hbm: borrowed(link, hbm))
    roles.judge(path)
    with pytest.raises(answers.AnswerRaised, match=r"crossover_reads is withheld"):
        checks.check_break_even(answers.Answer("break_even_reads"))


def test_break_even_with_no_answers_fails_with_no_answer(roles):
    roles.judge(roles.empty())
    with pytest.raises(answers.NoAnswer, match=r"break_even_reads\(25, 1500\): no answer came back"):
        checks.check_break_even(answers.Answer("break_even_reads"))


@pytest.mark.parametrize(
    ("value", "raw", "needle"),
    [
        ("banana", False, r"break_even_reads\(25, 1500\) should return a number, got 'banana'"),
        (True, False, r"should return a number, got True"),
        (10**400, False, r"break_even_reads\(25, 1500\) returned 1000.*, beyond what a float holds"),
        (float("nan"), False, r"you give r\* = nan, the model"),
        ([1.0], False, r"should return a number, got \[1.0\]"),
        ({"array": "|O", "shape": [1], "bytes": "AAAAAAAAAAA="}, True, r"the answer that came back is not readable"),
        ({"float": "not a float"}, True, r"the answer that came back is not readable"),
    ],
    ids=["str", "bool", "huge-int", "nan", "list", "object-array", "bad-float"],
)
def test_break_even_forged_answers_fail_clearly(roles, value, raw, needle):
    path = roles.collect()
    checks.check_break_even(break_even_reads)
    roles.judge(forged(path, "break_even_reads(", value, raw=raw))
    with pytest.raises(AssertionError, match=needle):
        checks.check_break_even(answers.Answer("break_even_reads"))


def test_break_even_forged_finite_where_copying_never_wins(roles):
    path = roles.collect()
    checks.check_break_even(break_even_reads, cases=[(100.0, 100.0)])
    roles.judge(forged(path, "break_even_reads(", 12.0))
    with pytest.raises(AssertionError, match=r"copying never wins: return math.inf; you return 12.0"):
        checks.check_break_even(answers.Answer("break_even_reads"), cases=[(100.0, 100.0)])


# -- the gather's launch ----------------------------------------------------------------------------------------


def test_gather_launch_reference_collected_then_judged_passes(roles, capsys):
    path = roles.collect()
    checks.check_gather_launch(gather_launch)
    assert len(lines_of(path)) == len(checks.LAUNCH_SIZES)
    roles.judge(path)
    checks.check_gather_launch(answers.Answer("gather_launch"))
    assert "for 11 batch sizes (1 to 50,000,000 rows)" in capsys.readouterr().out


def test_gather_launch_wrong_fails_in_the_judge(roles):
    path = roles.collect()
    checks.check_gather_launch(lambda n: (256, max(1, 32 * n // 256)))
    roles.judge(path)
    with pytest.raises(AssertionError, match=r"gather_launch\(9\): 1 blocks x 256 threads = 256 threads = 8 warps"):
        checks.check_gather_launch(answers.Answer("gather_launch"))


def test_gather_launch_calling_the_withheld_grid_fails(roles):
    path = roles.collect()
    borrowed = kernel.gather_grid
    with pytest.raises(answers.AnswerRaised, match=r"gather_launch\(1\): your code raised ReferenceWithheld"):
        checks.check_gather_launch(lambda n: borrowed(n))
    roles.judge(path)
    with pytest.raises(answers.AnswerRaised, match=r"gather_launch\(1\): your code raised ReferenceWithheld"):
        checks.check_gather_launch(answers.Answer("gather_launch"))


def test_gather_launch_with_no_answers_fails_with_no_answer(roles):
    roles.judge(roles.empty())
    with pytest.raises(answers.NoAnswer, match=r"gather_launch\(1\): no answer came back"):
        checks.check_gather_launch(answers.Answer("gather_launch"))


@pytest.mark.parametrize(
    ("value", "raw", "needle"),
    [
        ("banana", False, r"gather_launch\(1\) should return \(threads_per_block, blocks\); got 'banana'"),
        ((True, 5), False, r"gather_launch\(1\): threads_per_block must be a whole number, got True"),
        (("256", 1), False, r"threads_per_block must be a whole number, got '256'"),
        ((256, 2**40), False, r"blocks = 1099511627776 is outside what CUDA launches"),
        ({"tuple": [1, 2, 3]}, True, r"should return \(threads_per_block, blocks\); got \(1, 2, 3\)"),
        ({"tuple": [{"nonsense": 1}, 2]}, True, r"gather_launch\(1\): the answer that came back is not readable"),
    ],
    ids=["str", "bool", "str-threads", "too-many-blocks", "three", "undecodable"],
)
def test_gather_launch_forged_answers_fail_clearly(roles, value, raw, needle):
    path = roles.collect()
    checks.check_gather_launch(gather_launch)
    roles.judge(forged(path, "gather_launch(", value, raw=raw))
    with pytest.raises(AssertionError, match=needle):
        checks.check_gather_launch(answers.Answer("gather_launch"))


# -- the gather's rows and order --------------------------------------------------------------------------------


def test_gather_correct_reference_collected_then_judged_passes(roles, capsys):
    path = roles.collect()
    checks.check_gather_correct(gather_launch, order_ids)
    checks.check_gather_correct(gather_launch, order_ids, pattern="descending", **SMALL)
    assert capsys.readouterr().out == ""
    roles.judge(path)
    checks.check_gather_correct(answers.Answer("gather_launch"), answers.Answer("order_ids"))
    checks.check_gather_correct(
        answers.Answer("gather_launch"), answers.Answer("order_ids"), pattern="descending", **SMALL
    )
    out = capsys.readouterr().out
    assert out.count("[check] offline:") == 2 and out.count("bit-exact") == 2


def test_gather_asks_the_same_with_a_gpu_or_without(roles, monkeypatch, capsys):
    """Collected in a sandbox without a GPU, judged by a checker with one: the live path finds every answer it needs."""
    path = roles.collect()
    checks.check_gather_correct(gather_launch, order_ids, **SMALL)
    roles.judge(path, gpu=True)
    ran = {}

    def live(ids, threads, blocks, sorted_ids, restore, *, row_bytes, table_bytes, seed, repeats=0):
        ran.update(threads=threads, blocks=blocks, table_bytes=table_bytes)
        ok = np.array_equal(sorted_ids[restore], ids)
        return gather.GatherRun(ok, "bit-exact (stand-in)", ids.size, row_bytes, table_bytes)

    monkeypatch.setattr(gather, "run_gather_exercise", live)
    checks.check_gather_correct(answers.Answer("gather_launch"), answers.Answer("order_ids"), **SMALL)
    assert "[check] live: 3,001 random ids" in capsys.readouterr().out
    assert ran == {"threads": 256, "blocks": 376, "table_bytes": checks.table_rows(48) * 48}


def test_gather_ids_are_fresh_per_run_and_the_same_in_sandbox_and_checker(roles, monkeypatch):
    """fresh_seed: the same ids in both roles of one grading run, other ids in the next run."""
    seen = []

    def spy(ids):
        seen.append(ids.copy())
        return order_ids(ids)

    roles.collect()
    checks.check_gather_correct(gather_launch, spy, **SMALL)
    monkeypatch.setattr(answers, "role", dataclasses.replace(answers.role, seed="7"))
    checks.check_gather_correct(gather_launch, spy, **SMALL)
    assert not np.array_equal(seen[0], seen[1])
    ids = checks.request_ids(
        3001, checks.table_rows(48), "random", answers.fresh_seed("zero_copy check_gather_correct 3001 48 random")
    )
    np.testing.assert_array_equal(ids, seen[1])


@pytest.mark.parametrize(
    ("launch", "order", "needle"),
    [
        (lambda n: (256, (n + 255) // 256), order_ids, r"values differ.*one warp per row needs"),
        (gather_launch, lambda ids: (np.sort(ids), np.arange(ids.size)), r"order_ids: .*restore must undo the sort"),
        (lambda n: (256, (32 * n + 255) // 256 + 1), order_ids, r"1 whole block\(s\) have no row to copy"),
    ],
    ids=["thread-per-row", "no-restore", "idle-block"],
)
def test_gather_correct_wrong_answers_fail_in_the_judge(roles, launch, order, needle):
    path = roles.collect()
    checks.check_gather_correct(launch, order, **SMALL)
    roles.judge(path)
    with pytest.raises(AssertionError, match=needle):
        checks.check_gather_correct(answers.Answer("gather_launch"), answers.Answer("order_ids"), **SMALL)


def test_order_ids_calling_the_withheld_sort_fails(roles):
    path = roles.collect()
    borrowed = gather.sorted_order
    with pytest.raises(answers.AnswerRaised, match=r"order_ids on 3,001 random ids: your code raised Reference"):
        checks.check_gather_correct(gather_launch, lambda ids: borrowed(ids), **SMALL)
    roles.judge(path)
    with pytest.raises(answers.AnswerRaised, match=r"sorted_order is withheld"):
        checks.check_gather_correct(answers.Answer("gather_launch"), answers.Answer("order_ids"), **SMALL)


def test_gather_correct_with_no_answers_fails_with_no_answer(roles):
    roles.judge(roles.empty())
    with pytest.raises(answers.NoAnswer, match=r"gather_launch\(3001\): no answer came back"):
        checks.check_gather_correct(answers.Answer("gather_launch"), answers.Answer("order_ids"), **SMALL)


def _collected_order(roles: Roles, pattern: str = "random") -> tuple[Path, tuple[np.ndarray, np.ndarray]]:
    got = []

    def keep(ids):
        got.append(ids.copy())
        return order_ids(ids)

    path = roles.collect()
    checks.check_gather_correct(gather_launch, keep, pattern=pattern, **SMALL)
    return path, order_ids(got[0])


@pytest.mark.parametrize(
    ("value", "raw", "needle"),
    [
        ("banana", False, r"order_ids should return \(sorted_ids, restore\); got str"),
        ((1, 2, 3), False, r"order_ids should return \(sorted_ids, restore\); got tuple of 3"),
        (
            ("a", "b"),
            False,
            r"order_ids: sorted_ids should be 3,001 integers \(shape \(3001,\)\), got shape \(\) of <U1",
        ),
        (
            {"tuple": [{"list": [{"list": [1]}, {"list": [1, 2]}]}, {"list": [0]}]},
            True,
            r"order_ids: sorted_ids should be 3,001 integers .*, got a list that is not an array",
        ),
        (
            (np.zeros(3001, dtype=np.float64), np.arange(3001)),
            False,
            r"sorted_ids should be 3,001 integers .*, got shape \(3001,\) of float64",
        ),
        ((np.zeros(3001, dtype=np.int64), np.full(3001, 5000)), False, r"restore holds positions outside 0..3000"),
        ((np.zeros(3001, dtype=np.int64), np.zeros(3001, dtype=np.int64)), False, r"restore must undo the sort"),
    ],
    ids=["str", "three", "strings", "ragged", "floats", "restore-out-of-range", "wrong-rows"],
)
def test_order_ids_forged_answers_fail_clearly(roles, value, raw, needle):
    path, _ = _collected_order(roles)
    roles.judge(forged(path, "order_ids on", value, raw=raw))
    with pytest.raises(AssertionError, match=needle):
        checks.check_gather_correct(answers.Answer("gather_launch"), answers.Answer("order_ids"), **SMALL)


@pytest.mark.parametrize("bad_id", [-5, 10**15])
def test_order_ids_forged_to_read_past_the_table_is_refused(roles, bad_id):
    """Rows put back right, but one sorted id the restore never uses lies outside the table: refused before the
    gather runs (live it would read past the mapped table)."""
    path, (sorted_ids, restore) = _collected_order(roles, "repeated")
    j = int(np.flatnonzero(np.diff(sorted_ids) == 0)[0]) + 1  # a repeated row: position j can go unused
    restore = np.where(restore == j, j - 1, restore)
    sorted_ids = sorted_ids.copy()
    sorted_ids[j] = bad_id
    roles.judge(forged(path, "order_ids on", (sorted_ids, restore)))
    with pytest.raises(AssertionError, match=r"sorted_ids holds row ids outside the table's 0..22369620"):
        checks.check_gather_correct(
            answers.Answer("gather_launch"), answers.Answer("order_ids"), pattern="repeated", **SMALL
        )


# -- the gather's bandwidth -------------------------------------------------------------------------------------


def test_gather_bandwidth_reference_collected_then_judged_passes(roles, capsys):
    path = roles.collect()
    checks.check_gather_bandwidth(gather_launch, order_ids, **SMALL)
    roles.judge(path)
    checks.check_gather_bandwidth(answers.Answer("gather_launch"), answers.Answer("order_ids"), **SMALL)
    out = capsys.readouterr().out
    assert "its gather with sorted ids moved 49.5 GB/s = 0.91 of the pinned copy" in out


def test_gather_bandwidth_with_a_gpu_judges_the_live_run(roles, monkeypatch, capsys):
    path = roles.collect()
    checks.check_gather_bandwidth(gather_launch, order_ids, **SMALL)
    roles.judge(path, gpu=True)

    def live(ids, threads, blocks, sorted_ids, restore, *, row_bytes, table_bytes, seed, repeats=0):
        assert repeats == checks.GATHER_REPEATS
        return gather.GatherRun(True, "bit-exact (stand-in)", ids.size, row_bytes, table_bytes, 1.0, 0.95, 0.1)

    monkeypatch.setattr(gather, "run_gather_exercise", live)
    checks.check_gather_bandwidth(answers.Answer("gather_launch"), answers.Answer("order_ids"), **SMALL)
    assert "0.95 of it >= 0.85" in capsys.readouterr().out


def test_gather_bandwidth_unsorted_ids_fail_in_the_judge(roles):
    path = roles.collect()
    checks.check_gather_bandwidth(gather_launch, lambda ids: (ids, np.arange(ids.size)), **SMALL)
    roles.judge(path)
    with pytest.raises(AssertionError, match=r"your ids are not in ascending order .* below 0.85"):
        checks.check_gather_bandwidth(answers.Answer("gather_launch"), answers.Answer("order_ids"), **SMALL)


def test_gather_bandwidth_with_no_answers_fails_with_no_answer(roles):
    roles.judge(roles.empty())
    with pytest.raises(answers.NoAnswer, match=r"no answer came back"):
        checks.check_gather_bandwidth(answers.Answer("gather_launch"), answers.Answer("order_ids"), **SMALL)


def test_gather_bandwidth_forged_answer_fails_clearly(roles):
    path = roles.collect()
    checks.check_gather_bandwidth(gather_launch, order_ids, **SMALL)
    roles.judge(forged(path, "order_ids on", {"sorted": [1, 2]}))
    with pytest.raises(AssertionError, match=r"order_ids should return \(sorted_ids, restore\); got dict"):
        checks.check_gather_bandwidth(answers.Answer("gather_launch"), answers.Answer("order_ids"), **SMALL)


# -- the mailbox -------------------------------------------------------------------------------------------------


def test_publish_reference_collected_then_judged_passes(roles, capsys):
    path = roles.collect()
    checks.check_mailbox_publish(MY_PUBLISH)
    assert lines_of(path)[0]["value"] == MY_PUBLISH
    roles.judge(path)
    checks.check_mailbox_publish(answers.Answer("MY_PUBLISH"))
    checks.check_mailbox_publish(answers.Answer("MY_PUBLISH"), rounds=20)
    assert capsys.readouterr().out.count("[check] offline: on every path of your compiled kernel") == 2


def test_publish_with_a_gpu_runs_the_collected_source(roles, monkeypatch, capsys):
    path = roles.collect()
    checks.check_mailbox_publish(MY_PUBLISH)
    roles.judge(path, gpu=True)
    ran = []

    def rounds(source, n):
        ran.append(source)
        good = {"flag_seen": True, "payload_ok": True, "running_when_read": True, "timed_out": False, "acked": True}
        return [{"round": k, "flag_seen_ms": 0.02, **good} for k in range(1, n + 1)]

    monkeypatch.setattr(mailbox, "mailbox_rounds", rounds)
    checks.check_mailbox_publish(answers.Answer("MY_PUBLISH"), rounds=4)
    assert ran == [MY_PUBLISH] and "[check] live:" in capsys.readouterr().out


def test_publish_without_the_fence_fails_in_the_judge(roles):
    path = roles.collect()
    checks.check_mailbox_publish(MY_PUBLISH.replace("__threadfence_system();", ""))
    roles.judge(path)
    with pytest.raises(AssertionError, match=r"no system-scope fence comes between the payload store"):
        checks.check_mailbox_publish(answers.Answer("MY_PUBLISH"))


def test_publish_with_no_answers_fails_with_no_answer(roles):
    roles.judge(roles.empty())
    with pytest.raises(answers.NoAnswer, match=r"your publish\(\) source: no answer came back"):
        checks.check_mailbox_publish(answers.Answer("MY_PUBLISH"))


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (42, r"expected CUDA source as a str, got int"),
        (["__device__ void publish"], r"expected CUDA source as a str, got list"),
        ("x" * 200_000, r"MY_PUBLISH holds 200,000 characters"),
        ("int main() { return 0; }", r"your publish step does not compile"),
    ],
    ids=["int", "list", "huge", "not-a-publish"],
)
def test_publish_forged_answers_fail_clearly(roles, value, needle):
    path = roles.collect()
    checks.check_mailbox_publish(MY_PUBLISH)
    roles.judge(forged(path, "your publish() source", value))
    with pytest.raises(AssertionError, match=needle):
        checks.check_mailbox_publish(answers.Answer("MY_PUBLISH"))


def test_a_raised_line_is_judged_as_the_students_error(roles):
    path = roles.collect()
    checks.check_mailbox_publish(MY_PUBLISH)
    key = lines_of(path)[0]["key"]
    forged_path = path.with_name("raised.jsonl")
    forged_path.write_text(json.dumps({"key": key, "raised": "NameError: name 'MY_PUBLISH' is not defined"}) + "\n")
    roles.judge(forged_path)
    with pytest.raises(answers.AnswerRaised, match=r"your publish\(\) source: your code raised NameError"):
        checks.check_mailbox_publish(answers.Answer("MY_PUBLISH"))


# -- what the sandbox withholds -----------------------------------------------------------------------------------


def test_the_references_are_marked_and_still_answer_outside_the_sandbox():
    assert model.crossover_reads(55.0, 3350.0) == pytest.approx(break_even_reads(55.0, 3350.0))
    for n in checks.LAUNCH_SIZES:
        assert kernel.gather_grid(n) == gather_launch(n)
    ids = np.random.default_rng(1).integers(0, 100, 1000)
    mine, theirs = gather.sorted_order(ids), order_ids(ids)
    np.testing.assert_array_equal(mine[0], theirs[0])
    np.testing.assert_array_equal(mine[1], theirs[1])
    for path, name in (
        (Path(model.__file__), "crossover_reads"),
        (Path(kernel.__file__), "gather_grid"),
        (Path(gather.__file__), "sorted_order"),
    ):
        assert f"@reference\ndef {name}(" in path.read_text()


REGION = re.compile(r"^[ \t]*// BEGIN REFERENCE\n.*?^[ \t]*// END REFERENCE\n", re.S | re.M)


def test_the_kernels_reference_region_is_the_publish_step_and_the_rest_compiles_without_it():
    """The sandbox's copy of kernels/zero_copy.cu has the marked publish step replaced by a comment: what is left,
    and the mailbox exercise built on it, still compile; the lesson's file with the region passes its own rule."""
    text = KERNEL_PATH.read_text()
    regions = REGION.findall(text)
    assert len(regions) == 1
    assert "__threadfence_system();" in regions[0] and "box[MB_FLAG] = round;" in regions[0]
    assert "MB_PAYLOAD + w" in regions[0] and "wait_for_release" not in regions[0]
    withheld = REGION.sub("    // (withheld while grading)\n", text)
    options = [*compile_options(), "-lineinfo"]
    lesson = ptx.compile_ptx(text, options, name=KERNEL_PATH.name)
    assert mailbox.ptx_verdict(lesson, "publish_and_wait").problem is None
    sandbox = ptx.compile_ptx(withheld, options, name=KERNEL_PATH.name)
    assert "never stores the flag" in mailbox.ptx_verdict(sandbox, "publish_and_wait").problem
    exercise = withheld + mailbox.mailbox_source(MY_PUBLISH)[len(text) :]
    compiled = ptx.compile_ptx(exercise, options, name=KERNEL_PATH.name)
    assert mailbox.ptx_verdict(compiled, mailbox.EXERCISE_KERNEL).problem is None


def test_a_record_passed_outside_grading_is_still_the_notebooks(monkeypatch, capsys):
    """In the student's own kernel the record given is used (a rescaled one gives its own L and H)."""
    monkeypatch.setattr(answers, "role", answers.OWN)
    record = copy.deepcopy(replay.load_profile())
    record.extra["probes"]["rates"]["h2d_gbps"] = 100.0
    checks.check_break_even(break_even_reads, record)
    assert "on the record's L = 100.0 and H = 4077 GB/s" in capsys.readouterr().out
