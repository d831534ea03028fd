"""The zero-copy notebook's checks: each passes the reference answer and fails concrete wrong answers, saying why.

CPU tests force the offline path (as on a grader without a GPU); the `gpu` tests at the end run the live
path and skip without a GPU.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from labcore import mode
from zero_copy import checks, gather, mailbox, model, notebook, replay
from zero_copy.kernel import KERNEL_PATH, launch_gather_rows

REFERENCE_PUBLISH = r"""
__device__ void publish(volatile int* box, int round) {
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) {
        box[MB_PAYLOAD + w] = round * 1000003 + w;
    }
    __threadfence_system();  // payload before flag
    box[MB_FLAG] = round;
}
"""


def gather_launch(n_rows):
    threads = 256
    return threads, (32 * n_rows + threads - 1) // threads


def order_ids(ids):
    order = np.argsort(ids, kind="stable")
    restore = np.empty_like(order)
    restore[order] = np.arange(order.size)
    return ids[order], restore


def break_even_reads(link_gbps, hbm_gbps):
    return math.inf if hbm_gbps <= link_gbps else hbm_gbps / (hbm_gbps - link_gbps)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Grade as a machine without a GPU does, even where there is one."""
    monkeypatch.setattr(checks, "gpu_available", lambda: False)


@pytest.fixture(scope="module")
def record():
    return replay.load_profile()


# -- the gather -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n_rows", "row_bytes", "pattern"), [(50_000, 1024, "random"), (3001, 48, "descending"), (1, 2064, "repeated")]
)
def test_reference_gather_is_correct_offline(offline, capsys, n_rows, row_bytes, pattern):
    checks.check_gather_correct(gather_launch, order_ids, n_rows=n_rows, row_bytes=row_bytes, pattern=pattern)
    out = capsys.readouterr().out
    assert out.startswith("[check] offline:") and "bit-exact" in out and "no GPU" in out


def test_one_thread_per_row_leaves_rows_unwritten(offline):
    def one_thread_per_row(n_rows):
        return 256, (n_rows + 255) // 256

    with pytest.raises(
        AssertionError,
        match=r"values differ.*196 blocks x 256 threads = 50,176 threads = 1,568 "
        r"warps for 50,000 rows; one warp per row needs 1,600,000 threads",
    ):
        checks.check_gather_correct(one_thread_per_row, order_ids)


def test_blocks_that_straddle_warps_are_caught(offline):
    def forty_eight(n_rows):
        return 48, (32 * n_rows + 47) // 48

    with pytest.raises(AssertionError, match=r"values differ.*threads_per_block = 48 is not a multiple of 32"):
        checks.check_gather_correct(forty_eight, order_ids)


def test_an_idle_block_is_caught(offline):
    def one_block_too_many(n_rows):
        return 256, 32 * n_rows // 256 + 1

    with pytest.raises(
        AssertionError,
        match=r"6,251 blocks of 256 threads for 50,000 rows: 1 whole block\(s\) have "
        r"no row to copy; .* = 6,250",
    ):
        checks.check_gather_correct(one_block_too_many, order_ids)


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ((2048, 800), "threads_per_block = 2048 is outside"),
        ((256, 0), "blocks = 0 is outside"),
        ((256, 6250.0), "blocks must be a whole number"),
        ([256, 6250], r"should return \(threads_per_block, blocks\)"),
    ],
)
def test_launches_cuda_would_refuse_are_one_clear_message(offline, config, needle):
    with pytest.raises(AssertionError, match=needle):
        checks.check_gather_correct(lambda n_rows: config, order_ids)


def test_reference_launch_passes_for_every_batch_size(capsys):
    checks.check_gather_launch(gather_launch)
    assert "for 11 batch sizes (1 to 50,000,000 rows)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("launch", "needle"),
    [
        (lambda n: (256, 32 * n // 256), r"gather_launch\(1\): blocks = 0 is outside"),
        (
            lambda n: (256, max(1, 32 * n // 256)),
            r"gather_launch\(9\): 1 blocks x 256 threads = 256 threads = 8 warps "
            r"for 9 rows",
        ),
        (lambda n: (32 * n, 1), r"gather_launch\(33\): threads_per_block = 1056 is outside"),
        (lambda n: (80, (32 * n + 79) // 80), r"gather_launch\(1\): threads_per_block = 80 is not a multiple of 32"),
    ],
    ids=["floor-division", "floor-division-min-1", "one-block", "80-threads"],
)
def test_wrong_launches_fail_for_the_first_batch_size_they_break(launch, needle):
    with pytest.raises(AssertionError, match=needle):
        checks.check_gather_launch(launch)


def test_sorted_ids_without_restore_come_back_in_the_wrong_order(offline):
    def no_restore(ids):
        return np.sort(ids), np.arange(ids.size)

    with pytest.raises(AssertionError, match=r"order_ids: .* rows come back in the wrong place.*restore must undo"):
        checks.check_gather_correct(gather_launch, no_restore)


def test_the_sorting_permutation_is_not_its_own_inverse(offline):
    def argsort_as_restore(ids):
        order = np.argsort(ids)
        return ids[order], order

    with pytest.raises(AssertionError, match=r"restore must undo the sort"):
        checks.check_gather_correct(gather_launch, argsort_as_restore)


def test_order_ids_gets_a_copy_so_sorting_in_place_cannot_fool_it(offline):
    def sorts_in_place(ids):
        ids.sort()
        return ids, np.arange(ids.size)

    with pytest.raises(AssertionError, match=r"restore must undo the sort"):
        checks.check_gather_correct(gather_launch, sorts_in_place)


@pytest.mark.parametrize("row_bytes", [16, 48, 1024, 2064])
def test_the_cpu_model_of_the_kernel_matches_numpy_take(row_bytes):
    rng = np.random.default_rng(3)
    h_table = rng.integers(0, 2**32, size=(500, row_bytes // 4), dtype=np.uint32)
    ids = rng.integers(0, 500, 777)
    out = np.full((777, row_bytes // 4), gather.POISON, dtype=np.uint32)
    gather.simulate_gather(h_table, ids, *gather_launch(777), out)
    np.testing.assert_array_equal(out, np.take(h_table, ids, axis=0))
    out[:] = gather.POISON
    gather.simulate_gather(h_table, ids, 64, (32 * 777 + 63) // 64 - 1, out)  # one block short
    assert (out[-1] == gather.POISON).all() and (out[0] == h_table[ids[0]]).all()


def test_reference_gather_bandwidth_offline_uses_the_recorded_sorted_gather(offline, capsys):
    checks.check_gather_bandwidth(gather_launch, order_ids)
    out = capsys.readouterr().out
    assert "offline, from the recorded NVIDIA H200 run" in out
    assert "its gather with sorted ids moved 49.7 GB/s = 0.91 of the pinned copy" in out


def test_unsorted_ids_fail_the_bandwidth_check_offline(offline):
    def keep_order(ids):
        return ids, np.arange(ids.size)

    checks.check_gather_correct(gather_launch, keep_order)  # right rows: only the speed is wrong
    with pytest.raises(
        AssertionError,
        match=r"your ids are not in ascending order \(ids\[\d+\] > ids\[\d+\]\); "
        r".*unsorted ids moved 36.9 GB/s = 0.68 of the pinned copy.*below 0.85",
    ):
        checks.check_gather_bandwidth(gather_launch, keep_order)


def test_the_bandwidth_check_refuses_a_wrong_gather_before_timing(offline):
    with pytest.raises(AssertionError, match=r"one warp per row needs"):
        checks.check_gather_bandwidth(lambda n_rows: (256, (n_rows + 255) // 256), order_ids)


def test_a_package_launch_is_not_an_answer():
    def borrowed(n_rows):
        launch_gather_rows(None, None, n_rows, 1024, None, None)

    with pytest.raises(AssertionError, match=r"calls launch_gather_rows from the package"):
        checks.check_gather_correct(borrowed, order_ids)


# -- the break-even ------------------------------------------------------------------------------------------------


def test_reference_break_even_passes_on_the_record_and_other_links(record, capsys):
    checks.check_break_even(break_even_reads, record)
    checks.check_break_even(break_even_reads, cases=[(100.0, 100.0), (200.0, 150.0), (900.0, 4800.0)])
    out = capsys.readouterr().out
    assert "[check] 4 (L, H) pairs match the model; on the record's L = 55.3 and H = 4197 GB/s" in out
    assert "r* = 1.013" in out


@pytest.mark.parametrize(
    "wrong",
    [
        lambda link, hbm: link / hbm,
        lambda link, hbm: hbm / link,
        lambda link, hbm: 1 + link / hbm,  # the first-order approximation: off by 2e-4 on the H200, 1.3% on C2C
        lambda link, hbm: (hbm - link) / hbm,
        lambda link, hbm: hbm / (hbm + link),
    ],
    ids=["L/H", "H/L", "1+L/H", "(H-L)/H", "H/(H+L)"],
)
def test_wrong_break_even_formulas_fail_with_both_numbers(record, wrong):
    with pytest.raises(AssertionError, match=r"L = 55.27\d*, H = 4197.\d* GB/s: you give r\* = .*, the model 1.01334"):
        checks.check_break_even(wrong, record)


def test_copying_that_never_wins_must_be_infinite():
    def no_inf(link, hbm):
        return hbm / (hbm - link) if hbm != link else 1e9

    with pytest.raises(
        AssertionError,
        match=r"L = 100, H = 100 GB/s: .*copying never wins: return math.inf; "
        r"you return 1000000000.0",
    ):
        checks.check_break_even(no_inf, cases=[(100.0, 100.0)])


def test_calling_the_models_crossover_is_refused():
    def borrowed(link, hbm):
        return model.crossover_reads(link, hbm)

    with pytest.raises(AssertionError, match=r"calls crossover_reads from the package"):
        checks.check_break_even(borrowed)


def test_a_break_even_that_returns_nothing_is_one_message():
    with pytest.raises(AssertionError, match=r"break_even_reads\(25, 1500\) should return a number, got None"):
        checks.check_break_even(lambda link, hbm: None)


# -- the mailbox -------------------------------------------------------------------------------------------------


def test_reference_publish_passes_offline_and_says_how(offline, capsys):
    checks.check_mailbox_publish(REFERENCE_PUBLISH)
    out = capsys.readouterr().out
    assert out.startswith(
        "[check] offline: your source stores the payload, then calls __threadfence_system(), "
        "then stores the flag (read from the source; no GPU to compile or run it)"
    )
    assert "read the exact payload while the kernel ran in 4 of 4 rounds" in out


FENCE_AFTER_FLAG = r"""
__device__ void publish(volatile int* box, int round) {
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) box[MB_PAYLOAD + w] = round * 1000003 + w;
    box[MB_FLAG] = round;
    __threadfence_system();
}
"""


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        (FENCE_AFTER_FLAG, r"__threadfence_system\(\) comes after the flag"),
        (REFERENCE_PUBLISH.replace("__threadfence_system();", ""), r"no __threadfence_system\(\) between the payload"),
        (
            REFERENCE_PUBLISH.replace("__threadfence_system();", "__threadfence();"),
            r"__threadfence\(\) orders the stores "
            "only as other threads of the GPU",
        ),
        (REFERENCE_PUBLISH.replace("__threadfence_system();", "// __threadfence_system();"), "no __threadfence_system"),
        (
            r"""
__device__ void publish(volatile int* box, int round) {
    box[MB_FLAG] = round;
    __threadfence_system();
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) box[MB_PAYLOAD + w] = round * 1000003 + w;
}""",
            "the flag is stored before the last payload store",
        ),
        (REFERENCE_PUBLISH.replace("box[MB_FLAG] = round;", ""), "no flag store found"),
        (
            REFERENCE_PUBLISH.replace("void publish(volatile int* box", "void publish(int* box"),
            "define __device__ void publish",
        ),
    ],
    ids=["fence-after-flag", "no-fence", "device-fence", "fence-in-comment", "flag-first", "no-flag", "signature"],
)
def test_wrong_publish_orders_fail_offline(offline, source, needle):
    with pytest.raises(AssertionError, match=needle):
        checks.check_mailbox_publish(source)


def test_pointer_arithmetic_stores_are_read_too():
    source = r"""
__device__ void publish(volatile int* box, int round) {
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) *(box + MB_PAYLOAD + w) = round * 1000003 + w;
    __threadfence_system();
    *(box + MB_FLAG) = round;
}"""
    assert mailbox.publish_order_problem(source) is None
    swapped = source.replace(
        "__threadfence_system();\n    *(box + MB_FLAG) = round;",
        "*(box + MB_FLAG) = round;\n    __threadfence_system();",
    )
    assert "after the flag" in mailbox.publish_order_problem(swapped)


def test_offline_mailbox_fails_when_the_recorded_rounds_failed(offline, monkeypatch, record):
    broken = copy.deepcopy(record)
    broken.extra["mailbox"]["results"][2]["running_when_read"] = False
    monkeypatch.setattr(replay, "load_profile", lambda path=None: broken)
    with pytest.raises(AssertionError, match=r"offline: the recorded mailbox failed in 1 of 4 rounds"):
        checks.check_mailbox_publish(REFERENCE_PUBLISH)


def test_exercise_kernel_reuses_the_lesson_wait_and_numbers_the_students_lines():
    source = mailbox.mailbox_source(REFERENCE_PUBLISH)
    lesson = KERNEL_PATH.read_text()
    assert source.startswith(lesson)
    assert source.count("__device__ void wait_for_release(") == 1
    assert source.count("wait_for_release(box, round, t_publish, timeout_ns);") == 2  # lesson kernel and exercise
    assert '#line 1 "your_publish"\n' + REFERENCE_PUBLISH + "\n" in source


def test_publish_must_be_source_text(offline):
    with pytest.raises(AssertionError, match=r"expected CUDA source as a str, got NoneType"):
        checks.check_mailbox_publish(None)


# -- the notebook helpers the lesson cells call --------------------------------------------------------------------


def test_offline_measure_says_it_replays_and_compare_puts_predictions_beside_measurements(monkeypatch, capsys):
    monkeypatch.setattr(mode, "gpu_available", lambda: False)
    run = notebook.measure("gather")
    notebook.compare({"gather_fraction_of_copy": 0.5, "unsorted_over_sorted": None}, run)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("zero_copy: replay of profiles/h200/zero_copy/results.json, recorded ")
    assert lines[0].endswith("no GPU here, so these are recorded numbers")
    assert lines[2].split()[0] == "gather_fraction_of_copy" and lines[2].split()[-3:] == ["0.5", "0.91", "1.82"]
    assert lines[3].split()[-3:] == ["-", "1.35", "-"]
    with pytest.raises(KeyError, match=r"no measurement called gather_gbps"):
        notebook.compare({"gather_gbps": 40.0}, run)


# -- live (GPU) --------------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_live_reference_gather_is_exact_and_near_the_copy(capsys):
    checks.check_gather_correct(gather_launch, order_ids)
    checks.check_gather_correct(gather_launch, order_ids, n_rows=3001, row_bytes=48, pattern="descending")
    checks.check_gather_bandwidth(gather_launch, order_ids)
    out = capsys.readouterr().out
    assert out.count("[check] live:") == 3


@pytest.mark.gpu
def test_live_wrong_warp_mapping_is_caught():
    with pytest.raises(AssertionError, match=r"values differ.*not a multiple of 32"):
        checks.check_gather_correct(lambda n: (48, (32 * n + 47) // 48), order_ids)


@pytest.mark.gpu
def test_live_reference_publish_is_read_while_the_kernel_runs(capsys):
    checks.check_mailbox_publish(REFERENCE_PUBLISH, rounds=5)
    assert "[check] live:" in capsys.readouterr().out


@pytest.mark.gpu
def test_live_publish_that_does_not_compile_is_one_message():
    source = REFERENCE_PUBLISH.replace("box[MB_FLAG] = round;", "box[MB_FLAG] = round; undefined_name = 1;")
    line = next(n for n, text in enumerate(source.split("\n"), 1) if "undefined_name" in text)
    expected = rf"your publish step does not compile: your_publish\({line}\).*undefined_name"
    with pytest.raises(AssertionError, match=expected):
        checks.check_mailbox_publish(source)
