"""The zero-copy notebook's checks: each passes the reference answer and fails concrete wrong answers, saying why.

CPU tests force the offline path (as on a grader without a GPU); the `gpu` tests at the end run the live
path and skip without a GPU.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import nbformat
import numpy as np
import pytest

from labcore import mode, nvrtc, ptx, reuse
from labcore.pending import PENDING_GPU, PendingGPU
from labcore.predictions import Ledger
from zero_copy import checks, gather, mailbox, model, notebook, replay, report
from zero_copy.kernel import KERNEL_PATH, compile_options, launch_gather_rows

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
        ([256, 6250], r"should return \(threads_per_block, blocks\); got \[256, 6250\]: a list, where a tuple"),
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


@pytest.mark.parametrize("threads, blocks", [(256, 97), (64, 388), (96, 259), (40, 600), (256, 96), (33, 1)])
def test_the_per_warp_model_is_the_per_thread_model(threads, blocks):
    """gather.written_from, which the offline checks use, says what simulate_gather writes, word by word."""
    rng = np.random.default_rng(5)
    ids, row_vecs = rng.integers(0, 500, 777), 70  # 70 words: a lane copies two or three of them
    h_table = np.repeat(np.arange(500, dtype=np.uint32)[:, None], row_vecs * 4, axis=1)  # each word its row id
    out = np.full((777, row_vecs * 4), gather.POISON, dtype=np.uint32)
    gather.simulate_gather(h_table, ids, threads, blocks, out)
    by_word = out.reshape(777, row_vecs, 4)[:, :, 0].astype(np.int64)
    by_word[by_word == gather.POISON] = -1
    np.testing.assert_array_equal(gather.written_from(ids, threads, blocks, row_vecs), by_word)


@pytest.mark.parametrize("threads, blocks", [(256, 97), (64, 388), (96, 259), (40, 600), (256, 96), (33, 1), (32, 0)])
@pytest.mark.parametrize("row_vecs", [70, 64, 8, 1])
def test_rows_written_whole_are_the_rows_of_written_from_without_a_gap(threads, blocks, row_vecs):
    """The offline check's fast verdict (gather.rows_written_whole) is the whole array's, row by row."""
    ids = np.random.default_rng(6).integers(0, 500, 777)
    expected = (gather.written_from(ids, threads, blocks, row_vecs) >= 0).all(axis=1)
    np.testing.assert_array_equal(gather.rows_written_whole(ids.size, threads, blocks, row_vecs), expected)


@pytest.mark.parametrize(
    "threads, blocks, spoil, passes",
    [
        (256, 98, None, True),
        (96, 259, None, True),  # 96 threads a block: warps still whole
        (256, 97, None, False),  # one warp short
        (40, 700, None, False),  # lanes 8..31 of most warps never run
        (96, 259, "swap", False),
        (96, 259, "restore", False),
    ],
)
def test_the_offline_gather_verdict_is_the_word_by_word_one(threads, blocks, spoil, passes):
    """_simulated's verdict and message match comparing every word: grids short of rows, wrong orders."""
    rng = np.random.default_rng(7)
    ids = rng.integers(0, 10_000, 777)
    restore = np.argsort(np.argsort(ids, kind="stable"), kind="stable")
    sorted_ids = np.sort(ids, kind="stable")
    if spoil == "swap":
        sorted_ids[[3, 500]] = sorted_ids[[500, 3]]
    elif spoil == "restore":
        restore = np.roll(restore, 1)
    ok, detail = checks._simulated(ids, threads, blocks, sorted_ids, restore, 1024)
    written = gather.written_from(sorted_ids, threads, blocks, 64)[restore]
    assert ok == bool((written == ids[:, None]).all()) == passes
    assert detail.startswith("bit-exact, 49,728 values") if ok else "values differ" in detail


def test_reference_gather_bandwidth_offline_uses_the_recorded_sorted_gather(offline, capsys):
    checks.check_gather_bandwidth(gather_launch, order_ids)
    out = capsys.readouterr().out
    assert "offline, from the recorded NVIDIA H200 run" in out
    assert "its gather with sorted ids moved 49.5 GB/s = 0.91 of the pinned copy" in out


def test_unsorted_ids_fail_the_bandwidth_check_offline(offline):
    def keep_order(ids):
        return ids, np.arange(ids.size)

    checks.check_gather_correct(gather_launch, keep_order)  # right rows: only the speed is wrong
    with pytest.raises(
        AssertionError,
        match=r"your ids are not in ascending order \(ids\[\d+\] > ids\[\d+\]\); "
        r".*unsorted ids moved 36.8 GB/s = 0.67 of the pinned copy.*below 0.85",
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


def test_reference_break_even_passes_on_the_record_and_other_links(record, capsys, as_graded):
    checks.check_break_even(break_even_reads, record)
    checks.check_break_even(break_even_reads, cases=[(100.0, 100.0), (200.0, 150.0), (900.0, 4800.0)])
    out = capsys.readouterr().out
    assert "[check] 4 (L, H) pairs match the model; on the record's L = 55.1 and H = 4077 GB/s" in out
    assert "r* = 1.014" in out


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
    with pytest.raises(AssertionError, match=r"L = 55.08\d*, H = 4076.\d* GB/s: you give r\* = .*, the model 1.0137"):
        checks.check_break_even(wrong, record)


def test_copying_that_never_wins_must_be_infinite(as_graded):
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


# -- the mailbox: judged on the PTX that NVRTC compiles from the publish step, offline as live ----------------------


def publish(body: str) -> str:
    """A publish step with `body` (lines after the signature, which is line 2)."""
    return "\n__device__ void publish(volatile int* box, int round) {\n" + body.strip("\n") + "\n}\n"


PAYLOAD_LOOP = "    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) box[MB_PAYLOAD + w] = round * 1000003 + w;"
FENCE = "    __threadfence_system();"
ROLLED = "#pragma unroll 1\n" + PAYLOAD_LOOP  # NVRTC keeps the loop: one store instruction, four turns
PUT = "__device__ __noinline__ void put(volatile int* p, int v) { *p = v; }\n"
TWO_HELPERS = (
    "__device__ __noinline__ void low(volatile int* b, int r) { b[MB_PAYLOAD] = r * 1000003; "
    "b[MB_PAYLOAD + 1] = r * 1000003 + 1; }\n"
    "__device__ __noinline__ void high(volatile int* b, int r) { b[MB_PAYLOAD + 2] = r * 1000003 + 2; "
    "b[MB_PAYLOAD + 3] = r * 1000003 + 3; }\n"
    + "\n__device__ void publish(volatile int* box, int round) {\n    low(box, round);\n    high(box, round);\n"
    + "    __threadfence_system();\n    box[MB_FLAG] = round;\n}\n"
)
FLAG = "    box[MB_FLAG] = round;"
STORE = r"st\.volatile\.global\.u32 \[%rd\d+\], %r\d+"  # the flag store as NVRTC emits it
LOCAL_ARRAY = publish(
    "    int v[MB_PAYLOAD_WORDS];\n    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) v[w] = round * 1000003 + w;\n"
    "#pragma unroll 1\n    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) box[MB_PAYLOAD + w] = v[w];\n"
    f"{FENCE}\n{FLAG}"
)  # the values go through the local stack: its words are followed as the mailbox's are
RIGHT = {
    "reference": REFERENCE_PUBLISH,
    "payload-through-an-alias": publish(
        """
    volatile unsigned int* p = reinterpret_cast<volatile unsigned int*>(box) + MB_PAYLOAD;
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) p[w] = round * 1000003 + w;
    __threadfence_system();
    volatile int* flag = box + MB_FLAG;
    *flag = round;"""
    ),
    "payload-as-one-int4": publish(
        """
    int b = round * 1000003;
    *reinterpret_cast<int4*>(const_cast<int*>(box) + MB_PAYLOAD) = make_int4(b, b + 1, b + 2, b + 3);
    __threadfence_system();
    box[MB_FLAG] = round;"""
    ),
    "seq-cst-fence-builtin": publish(
        f"{PAYLOAD_LOOP}\n    __nv_atomic_thread_fence(__NV_ATOMIC_SEQ_CST, __NV_THREAD_SCOPE_SYSTEM);\n{FLAG}"
    ),
    "release-fence-builtin": publish(
        f"{PAYLOAD_LOOP}\n    __nv_atomic_thread_fence(__NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_SYSTEM);\n{FLAG}"
    ),
    "release-store-of-the-flag": publish(
        f"{PAYLOAD_LOOP}\n    __nv_atomic_store_n(const_cast<int*>(box) + MB_FLAG, round, __NV_ATOMIC_RELEASE, "
        "__NV_THREAD_SCOPE_SYSTEM);"
    ),
    "release-store-in-inline-asm": publish(
        f'{PAYLOAD_LOOP}\n    asm volatile("st.release.sys.global.u32 [%0], %1;" :: "l"(box + MB_FLAG), "r"(round) '
        ': "memory");'
    ),
    "atomicExch-flag-after-the-fence": publish(
        f"{PAYLOAD_LOOP}\n{FENCE}\n    atomicExch(const_cast<int*>(box), round);"
    ),
    "not-inlined": REFERENCE_PUBLISH.replace("__device__ void", "__device__ __noinline__ void"),
    "rolled-loop": publish(f"{ROLLED}\n{FENCE}\n{FLAG}"),
    "rolled-loop-through-a-noinline-helper": PUT
    + publish(
        "#pragma unroll 1\n    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w)\n"
        f"        put(box + MB_PAYLOAD + w, round * 1000003 + w);\n{FENCE}\n{FLAG}"
    ),
    "loop-written-backwards": publish(
        "#pragma unroll 1\n    for (int w = MB_PAYLOAD_WORDS - 1; w >= 0; --w)\n"
        f"        box[MB_PAYLOAD + w] = round * 1000003 + w;\n{FENCE}\n{FLAG}"
    ),
    "payload-split-across-two-helpers": TWO_HELPERS,
    "atomics-at-system-scope": publish(
        "    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w)\n"
        "        atomicExch_system(const_cast<int*>(box) + MB_PAYLOAD + w, round * 1000003 + w);\n"
        f"{FENCE}\n    atomicExch_system(const_cast<int*>(box) + MB_FLAG, round);"
    ),
    "red-add-onto-the-cleared-mailbox": publish(
        "#pragma unroll 1\n    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w)\n"
        f"        atomicAdd_system(const_cast<int*>(box) + MB_PAYLOAD + w, round * 1000003 + w);\n{FENCE}\n{FLAG}"
    ),
    "inline-asm-fence-sc-sys": publish(f'{ROLLED}\n    asm volatile("fence.sc.sys;" ::: "memory");\n{FLAG}'),
    "inline-asm-fence-acq-rel-sys": publish(
        f'{PAYLOAD_LOOP}\n    asm volatile("fence.acq_rel.sys;" ::: "memory");\n{FLAG}'
    ),
    "inline-asm-membar-sys": publish(f'{ROLLED}\n    asm volatile("membar.sys;" ::: "memory");\n{FLAG}'),
    "values-kept-in-a-local-array": LOCAL_ARRAY,
    "extra-local-computation": publish(
        """
    int base = round * 1000003, sum = 0;
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) { int v = base + w; sum += v; box[MB_PAYLOAD + w] = v; }
    if (sum == 42) base = 0;  // no store depends on it
    __threadfence_system();
    box[MB_FLAG] = round;"""
    ),
}


@pytest.mark.parametrize("name", RIGHT)
def test_correct_publish_forms_pass_offline(offline, name, capsys):
    checks.check_mailbox_publish(RIGHT[name])
    out = capsys.readouterr().out
    assert out.startswith("[check] offline: on every path of your compiled kernel (PTX for compute_90 from NVRTC 1"), (
        out
    )
    assert (
        "the payload words are stored, then fenced at system scope, then the flag is stored, and nothing after it, "
        "and for every round the flag holds round and payload word k round * 1000003 + k when it is raised" in out
    )
    assert "read the exact payload while the kernel ran in 4 of 4 rounds" in out


WRONG = {
    "flag-first": (
        publish(f"{FLAG}\n{FENCE}\n{PAYLOAD_LOOP}"),
        rf"the host can see the flag \(box\[MB_FLAG\]\) before payload word 0 \(box\[MB_PAYLOAD \+ 0\]\): the flag "
        rf"store at your line 3 \({STORE}\) comes before any store of payload word 0; expected on every path",
    ),
    "flag-through-an-alias-first": (
        publish(f"    volatile int* ready = box;\n    *ready = round;\n{PAYLOAD_LOOP}\n{FENCE}"),
        rf"can see the flag .* before payload word 0 .*: the flag store at your line 4 \({STORE}\) comes before "
        r"any store",
    ),
    "flag-twice-the-first-early": (
        publish(f"{FLAG}\n{PAYLOAD_LOOP}\n{FENCE}\n{FLAG}"),
        rf"the flag store at your line 3 \({STORE}\) comes before any store of payload word 0",
    ),
    "no-fence": (
        publish(f"{PAYLOAD_LOOP}\n{FLAG}"),
        r"payload word 0 \(box\[MB_PAYLOAD \+ 0\]\): no system-scope fence comes between the payload store at your "
        r"line 3 \(st\.volatile\.global\.u32 \[%rd\d+\+16\], %r\d+\) and the flag store at your line 4",
    ),
    "fence-in-a-comment": (
        REFERENCE_PUBLISH.replace("__threadfence_system();", "// __threadfence_system();"),
        r"no system-scope fence comes between the payload store at your line 4 .* and the flag store at your line 7",
    ),
    "fence-that-never-runs": (
        publish(f"{PAYLOAD_LOOP}\n    if (false) __threadfence_system();\n{FLAG}"),
        r"no system-scope fence comes between the payload store at your line 3",
    ),
    "fence-on-one-branch": (
        publish(f"{PAYLOAD_LOOP}\n    if (round > 1000) __threadfence_system();\n{FLAG}"),
        rf"payload word 0 \(box\[MB_PAYLOAD \+ 0\]\): the system-scope fence at your line 4 \(membar\.sys\) is on one "
        rf"branch only; on a path that skips it, nothing orders payload word 0 before the flag store at your line 5 "
        rf"\({STORE}\)",
    ),
    "gpu-scope-fence": (
        REFERENCE_PUBLISH.replace("__threadfence_system();", "__threadfence();"),
        r"the ordering between them, at your line 6 \(membar\.gl\), has GPU or block scope only: it orders the "
        r"stores for the GPU's threads, not for the host, which needs __threadfence_system\(\)",
    ),
    "gpu-scope-release-store": (
        publish(
            f"{PAYLOAD_LOOP}\n    __nv_atomic_store_n(const_cast<int*>(box) + MB_FLAG, round, __NV_ATOMIC_RELEASE, "
            "__NV_THREAD_SCOPE_DEVICE);"
        ),
        r"at your line 4 \(st\.release\.gpu\.b32 \[%rd\d+\], %r\d+\), has GPU or block scope only",
    ),
    "payload-on-one-branch": (
        publish(f"    if (round % 2) {{\n{PAYLOAD_LOOP}\n    }}\n{FENCE}\n{FLAG}"),
        r"payload word 0 \(box\[MB_PAYLOAD \+ 0\]\): the payload store at your line 4 \(st\.volatile\.global\.u32 "
        rf"\[%rd\d+\+16\], %r\d+\) is on one branch only, and the flag store at your line 7 \({STORE}\) can be "
        r"reached without it",
    ),
    "fence-after-the-flag": (
        publish(f"{PAYLOAD_LOOP}\n{FLAG}\n{FENCE}"),
        r"no system-scope fence comes between the payload store at your line 3 .* and the flag store at your line 4",
    ),
    "payload-word-stored-again-after-the-fence": (
        publish(f"{PAYLOAD_LOOP}\n{FENCE}\n    box[MB_PAYLOAD + 3] = round * 1000003 + 3;\n{FLAG}"),
        r"before payload word 3 \(box\[MB_PAYLOAD \+ 3\]\): payload word 3 is stored again at your line 5 .*, after "
        r"the system-scope fence at your line 4 \(membar\.sys\)",
    ),
    "index-known-only-at-run-time": (
        publish(f"{PAYLOAD_LOOP}\n    box[MB_PAYLOAD + (round & 3)] = round * 1000003 + (round & 3);\n{FENCE}\n{FLAG}"),
        r"^cannot tell which word of the mailbox your line 4 \(st\.volatile\.global\.u32 \[%rd\d+\+16\], %r\d+\) "
        r"writes: its address is not box plus a number known at compile time",
    ),
    "stores-the-release-word": (
        publish(f"{PAYLOAD_LOOP}\n{FENCE}\n{FLAG}\n    box[MB_RELEASE] = round;"),
        r"^your line 6 \(st\.volatile\.global\.u32 \[%rd\d+\+4\], %r\d+\) stores box\[1\]: publish stores only the "
        r"payload",
    ),
    "flag-on-one-branch": (
        publish(f"{PAYLOAD_LOOP}\n{FENCE}\n    if (round > 2) box[MB_FLAG] = round;"),
        r"^on some path the kernel waits for the host's release \(box\[MB_RELEASE\]\) without having stored the flag",
    ),
    "wrong-signature": (
        REFERENCE_PUBLISH.replace("void publish(volatile int* box", "void publish(int* box"),
        r"^your publish step does not compile: exercise_kernel\(8\): error: argument of type \"volatile int \*\" is "
        r"incompatible .*; define __device__ void publish\(volatile int\* box, int round\)",
    ),
    "flag-raised-then-lowered": (
        publish(f"{PAYLOAD_LOOP}\n{FENCE}\n{FLAG}\n    box[MB_FLAG] = 0;"),
        rf"^your line 6 \({STORE}\) stores box\[0\] after the flag store at your line 5 \({STORE}\) \(once the "
        r"flag is up the host may read the payload at any moment\); expected on every path",
    ),
    "payload-cleared-after-the-flag": (
        publish(
            f"{PAYLOAD_LOOP}\n{FENCE}\n{FLAG}\n#pragma unroll 1\n{PAYLOAD_LOOP.replace('round * 1000003 + w', '0')}"
        ),
        rf"^your line 7 \(st\.volatile\.global\.u32 \[%rd\d+\+16\], %r\d+\) stores box\[4\] after the flag store at "
        rf"your line 5 \({STORE}\)",
    ),
    "payload-stored-after-the-flag-on-one-branch": (
        publish(f"{PAYLOAD_LOOP}\n{FENCE}\n{FLAG}\n    if (round & 1) box[MB_PAYLOAD + 2] = 0;"),
        r"^your line 6 \(st\.volatile\.global\.u32 \[%rd\d+\+24\], %r\d+\) stores box\[6\] after the flag store",
    ),
    "wrong-payload-value": (
        publish(ROLLED.replace("round * 1000003 + w", "round * 1000003 + 2 * w") + f"\n{FENCE}\n{FLAG}"),
        rf"^when the flag store at your line 6 \({STORE}\) raises the flag, payload word 1 \(box\[MB_PAYLOAD \+ 1\]\) "
        r"holds round \* 1000003 \+ 2; expected round \* 1000003 \+ 1$",
    ),
    "wrong-flag-value": (
        publish(f"{PAYLOAD_LOOP}\n{FENCE}\n    box[MB_FLAG] = round + 1;"),
        rf"^the flag store at your line 5 \({STORE}\) stores round \+ 1, but the host waits for the flag to equal "
        r"round",
    ),
    "flag-before-the-fence-on-one-branch": (
        publish(f"{PAYLOAD_LOOP}\n    if (round & 1) {{\n{FLAG}\n{FENCE}\n    }} else {{\n{FENCE}\n{FLAG}\n    }}"),
        rf"before payload word 0 .*: no system-scope fence comes between the payload store at your line 3 .* and the "
        rf"flag store at your line 5 \({STORE}\)",
    ),
    "rolled-loop-one-word-short": (
        publish(ROLLED.replace("w < MB_PAYLOAD_WORDS", "w < MB_PAYLOAD_WORDS - 1") + f"\n{FENCE}\n{FLAG}"),
        rf"before payload word 3 .*: the flag store at your line 6 \({STORE}\) comes before any store of payload "
        r"word 3",
    ),
    "rolled-loop-gpu-scope-fence": (
        publish(f"{ROLLED}\n    __threadfence();\n{FLAG}"),
        r"the ordering between them, at your line 5 \(membar\.gl\), has GPU or block scope only",
    ),
    "noinline-helper-raises-the-flag-first": (
        "__device__ __noinline__ void raise_flag(volatile int* b, int r) { b[MB_FLAG] = r; }\n"
        + publish(f"    raise_flag(box, round);\n{ROLLED}\n{FENCE}"),
        rf"the flag store at your line 1 \({STORE}\) comes before any store of payload word 0",
    ),
    "fence-skipped-for-one-round": (
        publish(f"{PAYLOAD_LOOP}\n    if (round != 77777) __threadfence_system();\n{FLAG}"),
        r"the system-scope fence at your line 4 \(membar\.sys\) is on one branch only",
    ),
    "spins-for-ever-before-the-flag": (
        publish(f"{PAYLOAD_LOOP}\n{FENCE}\n    if (round == 123457) for (;;) {{}}\n{FLAG}"),
        r"^the loop at your line 5 \(bra\.uni \$L__BB\d+_\d+\) comes back to the same state before the kernel waits",
    ),
    "spins-for-ever-after-the-flag": (
        publish(f"{PAYLOAD_LOOP}\n{FENCE}\n{FLAG}\n    while (round > 0) {{}}"),
        r"^the loop at your line 6 \(.*\) comes back to the same state before the kernel waits for the host's release",
    ),
    "exits-after-the-flag": (
        publish(f'{PAYLOAD_LOOP}\n{FENCE}\n{FLAG}\n    asm volatile("exit;");'),
        r"^your line 6 \(exit\) ends the kernel before the host has read the payload and released it",
    ),
    "returns-from-the-kernel-after-the-flag": (
        publish(f'{PAYLOAD_LOOP}\n{FENCE}\n{FLAG}\n    asm volatile("ret;");'),
        r"^your line 6 \(ret\) ends the kernel before the host has read the payload and released it",
    ),
    "traps-after-the-flag": (
        publish(f"{PAYLOAD_LOOP}\n{FENCE}\n{FLAG}\n    __trap();"),
        r"^your line 6 \(trap\) ends the kernel before the host has read the payload",
    ),
    "pointer-handed-to-printf": (
        publish(f'{PAYLOAD_LOOP}\n{FENCE}\n    printf("%p", box);\n{FLAG}'),
        r"^cannot analyse the compiled kernel: the box pointer reaches vprintf, a function the PTX does not define",
    ),
    "local-array-word-overwritten": (
        LOCAL_ARRAY.replace("+ w;\n#pragma", "+ w;\n    v[1] = 5;\n#pragma"),
        r"payload word 1 \(box\[MB_PAYLOAD \+ 1\]\) holds 5; expected round \* 1000003 \+ 1$",
    ),
    "does-not-compile": (
        REFERENCE_PUBLISH.replace("box[MB_FLAG] = round;", "box[MB_FLAG] = round; undefined_name = 1;"),
        r'^your publish step does not compile: your_publish\(7\): error: identifier "undefined_name" is undefined$',
    ),
}


@pytest.mark.parametrize("name", WRONG)
def test_wrong_publish_forms_fail_offline_saying_which_word_which_store_and_why(offline, name):
    source, needle = WRONG[name]
    with pytest.raises(AssertionError, match=needle):
        checks.check_mailbox_publish(source)


def test_the_notebooks_first_attempt_fails_on_its_flag_line(offline):
    """The section 8 prose's first attempt: flag, then payload, no fence; the flag store is its line 3."""
    attempt = publish(f"{FLAG}\n    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w)\n        box[MB_PAYLOAD + w] = 1;")
    with pytest.raises(AssertionError, match=r"the flag store at your line 3 \(st\.volatile"):
        checks.check_mailbox_publish(attempt)


def test_the_lessons_own_kernel_keeps_the_rule_it_teaches():
    """publish_and_wait of kernels/zero_copy.cu, compiled with the lesson's options, passes the same analysis, its
    values verified; its paths: the release seen at once, after waiting, the timeout (and the wait's loop)."""
    text = ptx.compile_ptx(KERNEL_PATH.read_text(), [*compile_options(), "-lineinfo"], name=KERNEL_PATH.name)
    verdict = mailbox.ptx_verdict(text, "publish_and_wait")
    assert (verdict.problem, verdict.unverified) == (None, [])
    assert verdict.paths == 4


# The order is right, but the values go through an instruction the analysis does not compute (xor in inline asm):
# correct, and offline neither passed nor failed.
OPAQUE_VALUES = publish(
    "    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) {\n        int v;\n"
    '        asm volatile("xor.b32 %0, %1, 0;" : "=r"(v) : "r"(round * 1000003 + w));\n'
    f"        box[MB_PAYLOAD + w] = v;\n    }}\n{FENCE}\n{FLAG}"
)


def test_a_store_to_a_local_word_it_cannot_place_leaves_the_values_unverified():
    """v[round & 3] = 0 may have overwritten any word of the array: the order still proved, the values pending."""
    verdict = mailbox.publish_verdict(LOCAL_ARRAY.replace("+ w;\n#pragma", "+ w;\n    v[round & 3] = 0;\n#pragma"))
    assert verdict.problem is None and len(verdict.unverified) == 4, verdict


def test_values_the_analysis_cannot_compute_are_pending_a_gpu_offline(offline):
    """The order is proved on every path; the stored values are not: PendingGPU, by its name, saying what is left."""
    verdict = mailbox.publish_verdict(OPAQUE_VALUES)
    assert verdict.problem is None
    assert verdict.unverified[0].startswith("payload word 0's value when your line 9 (st.volatile.global.u32")
    with pytest.raises(PendingGPU) as caught:
        checks.check_mailbox_publish(OPAQUE_VALUES)
    assert type(caught.value).__name__ == PENDING_GPU
    assert str(caught.value).startswith("pending a GPU: offline, on every path of your compiled kernel")
    assert "but the analysis could not compute payload word 0's value when your line 9" in str(caught.value)
    assert str(caught.value).endswith("this cell counts 0 until it is graded on a GPU")


def test_verified_values_hold_for_every_round():
    """The stored values are affine forms of the round: the reference's are exactly round * 1000003 + k, for any
    round (a form that only matches rounds 1 to 3 would not be)."""
    verdict = mailbox.publish_verdict(REFERENCE_PUBLISH)
    assert (verdict.problem, verdict.unverified) == (None, [])
    for k in range(4):
        assert str(mailbox.expected_word(k)) == f"round * 1000003 + {k}" if k else "round * 1000003"
    only_small = publish(f"{PAYLOAD_LOOP}\n    if (round > 3) box[MB_PAYLOAD] = 7;\n{FENCE}\n{FLAG}")
    assert "holds 7; expected round * 1000003 + 0" in mailbox.publish_problem(only_small)


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
    assert f'#line 1 "{mailbox.STUDENT_FILE}"\n' + REFERENCE_PUBLISH + "\n" in source
    assert f'extern "C" __global__ void {mailbox.EXERCISE_KERNEL}(volatile int* box' in source


# a publish step NVRTC takes over a minute on (2^24 inlined calls) and one that makes it allocate gigabytes
SLOW_PUBLISH = publish(
    """
    box[MB_PAYLOAD] = T<24>::f(box, round);
    __threadfence_system();
    box[MB_FLAG] = round;"""
).replace(
    "\n__device__ void publish",
    "\ntemplate <int N> struct T { __device__ static int f(volatile int* b, int r) "
    "{ return T<N - 1>::f(b, r) + T<N - 1>::f(b, r + 1); } };\n"
    "template <> struct T<0> { __device__ static int f(volatile int* b, int r) { b[MB_PAYLOAD + 1] = r; return r; } };"
    "\n__device__ void publish",
)
BIG_PUBLISH = "__device__ char big[1ull << 31] = {1};\n" + REFERENCE_PUBLISH.replace(
    "__threadfence_system();", "box[MB_PAYLOAD] = big[round];\n    __threadfence_system();"
)


@pytest.mark.parametrize(
    ("source", "limit_s", "expected"),
    [
        (SLOW_PUBLISH, 2.0, "your publish step was not compiled: your source took over 2 s to compile"),
        (BIG_PUBLISH, 60.0, "your publish step was not compiled: compiling your source needed over 512MiB of memory"),
    ],
    ids=["slow", "big"],
)
def test_a_publish_step_past_the_compile_limits_fails_and_the_next_is_judged(
    offline, monkeypatch, source, limit_s, expected
):
    """NVRTC stopped at the limits (lowered here: 2 s, or 512 MiB within a minute) fails the check in one line; the
    reference publish step checked next, in the same process, passes."""
    monkeypatch.setattr(nvrtc, "COMPILE_LIMIT_S", limit_s)
    monkeypatch.setattr(nvrtc, "COMPILE_MEMORY_BYTES", 512 << 20)
    with pytest.raises(AssertionError, match=f"^{expected}"):
        checks.check_mailbox_publish(source)
    checks.check_mailbox_publish(REFERENCE_PUBLISH)


def test_publish_must_be_source_text(offline):
    with pytest.raises(AssertionError, match=r"expected CUDA source as a str, got NoneType"):
        checks.check_mailbox_publish(None)


# -- the notebook helpers the lesson cells call --------------------------------------------------------------------


def test_offline_measure_says_it_replays_and_compare_puts_predictions_beside_measurements(monkeypatch, capsys):
    monkeypatch.setattr(mode, "gpu_available", lambda: False)
    monkeypatch.setattr(notebook, "LEDGER", Ledger())
    run = notebook.measure("gather")
    notebook.compare({"gather_fraction_of_copy": 0.5, "unsorted_over_sorted": None, "gather_gbps": 40.0}, run)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("zero_copy: replay of zero_copy/profiles/h200/results.json, recorded ")
    assert lines[0].endswith("no GPU here, so these are recorded numbers")
    assert lines[2].split()[0] == "gather_fraction_of_copy" and lines[2].split()[-3:] == ["0.5", "0.908", "1.82"]
    assert lines[3].split()[-3:] == ["-", "1.35", "-"]
    assert lines[4].startswith("no measured quantity is called 'gather_gbps'")
    notebook.closing_table()
    closing = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in closing[1:-1]] == ["gather_fraction_of_copy", "unsorted_over_sorted"]
    assert closing[-1] == "1 of 2 predicted"


def test_every_quantity_is_the_number_its_verdict_prints(capsys):
    """A prediction is compared with the same median the report's verdict prints, not a number of its own."""
    record = replay.load_profile()
    measured = {key: q.read(record) for key, q in notebook.QUANTITIES.items()}
    print(report.report(record))
    text = capsys.readouterr().out
    for key, shown in {
        "scattered_over_coalesced": f"delivered {measured['scattered_over_coalesced']:.3f} of the coalesced rate",
        "breakeven_reads": f"measured r* = {measured['breakeven_reads']:.2f}",
        "gather_fraction_of_copy": f"= {measured['gather_fraction_of_copy']:.2f} of the pinned copy",
        "unsorted_over_sorted": f"unsorted ids took {measured['unsorted_over_sorted']:.2f}x as long",
        "gather_speedup_over_cpu": f"{measured['gather_speedup_over_cpu']:.1f}x faster than CPU take + copy",
        "flag_latency_us": f"the host saw the flag a median {measured['flag_latency_us']:.0f} us",
        "reread_mapped_over_hbm": f"{measured['reread_mapped_over_hbm']:.0f}x slower than from HBM",
        "near_reread_buffers": f"took the time of {measured['near_reread_buffers']:.1f} x B over the link",
        "saxpy_sync_over_mapped": f"synchronous copies {measured['saxpy_sync_over_mapped']:.2f}x",
        "saxpy_async_over_mapped": f"asynchronous copies {measured['saxpy_async_over_mapped']:.2f}x",
        "pipeline_fraction_of_link": f"pipeline {measured['pipeline_fraction_of_link']:.2f} of L",
        "write_combined_over_mapped": f"write-combined pages {measured['write_combined_over_mapped']:.2f}x",
        "link_gbps": f"(L {measured['link_gbps']:.1f}, H",
    }.items():
        assert shown in text, (key, shown)
    assert measured["read_while_running"] == "yes"
    rows = {
        line.split("  ")[1]: line.split() for line in text.splitlines() if line.startswith("  ") and "  " in line[2:]
    }
    assert f"{measured['zero_copy_read_once_gbps']:.1f}" in rows["zero-copy: kernel reads mapped memory"]
    assert f"{measured['link_gbps']:.1f}" in rows["pinned H2D copy (L)"]
    hbm = float(rows["HBM device copy (H, read+write)"][-1])
    assert measured["hbm_over_link"] == pytest.approx(hbm / measured["link_gbps"], rel=1e-3)


def test_show_leaves_the_device_facts_to_the_demo_and_the_cli_keeps_them(monkeypatch, capsys):
    """The notebook prints the device facts once (api_demo); show prints tables, the probes once when asked."""
    monkeypatch.setattr(mode, "gpu_available", lambda: False)
    record = replay.load_profile()
    notebook.api_demo()
    notebook.show(record, "probes,streaming")
    notebook.show(record, "gather")
    out = capsys.readouterr().out
    assert out.count("device: NVIDIA H200") == 1 and out.count("mapping: canMapHostMemory=1") == 1
    assert out.count("link and HBM, the model's inputs") == 1
    assert out.count("this run's probes: L 55.1 GB/s") == 1
    cli = report.report(record)
    assert cli.count("device: NVIDIA H200") == 1 and "link and HBM, the model's inputs" in cli
    with pytest.raises(ValueError, match="unknown experiment probe;"):
        notebook.show(record, "probe")


@pytest.mark.parametrize(
    "answer, said",
    [
        (lambda link, hbm: (_ for _ in ()).throw(NotImplementedError()), "not written yet"),
        (lambda link, hbm: hbm / (hbm - link), "ZeroDivisionError"),
        (lambda link, hbm: None, "not a number: None"),
        (lambda link, hbm: (1.0, 2.0), "not a number: (1.0, 2.0)"),
    ],
)
def test_your_break_even_says_what_a_wrong_or_missing_answer_gives_and_never_raises(answer, said, capsys):
    """The exercise section's comparison cell runs whatever the student's function does."""
    notebook.your_break_even(answer, replay.load_profile())
    out = capsys.readouterr().out
    assert said in out and "the model's 1.014; measured 0.957" in out


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
def test_a_kept_table_judges_each_submission_afresh(monkeypatch, capsys):
    """As in a warm checker (labcore.reuse kept on): one 1 GiB table serves every check, every row size of the
    hidden tests included, and a wrong grid judged right after a right one still fails (its unwritten rows are
    poison, not the last submission's rows), and a right one after it still passes."""
    monkeypatch.setattr(reuse, "_keeping", False)
    monkeypatch.setattr(reuse, "_kept", {})
    reuse.keep()
    checks.check_gather_correct(gather_launch, order_ids)
    kept = {key: reuse._kept[key] for key in reuse.kept()}
    with pytest.raises(AssertionError, match=r"values differ"):
        checks.check_gather_correct(lambda n: (48, (32 * n + 47) // 48), order_ids)
    checks.check_gather_correct(gather_launch, order_ids)
    table = next(key for key in kept if key[0] == "gather table")
    assert reuse._kept[table] is kept[table], "the table was not kept from one check to the next"
    # the hidden tests' other row sizes view the same kept table: no submission pins a table of its own
    checks.check_gather_correct(gather_launch, order_ids, n_rows=3001, row_bytes=48, pattern="descending")
    checks.check_gather_correct(gather_launch, order_ids, n_rows=1, row_bytes=2064, pattern="repeated")
    checks.check_gather_correct(gather_launch, order_ids, n_rows=20_000, row_bytes=512, pattern="repeated")
    tables = [key for key in reuse.kept() if key[0] == "gather table"]
    assert tables == [table] and reuse._kept[table] is kept[table], tables
    assert capsys.readouterr().out.count("[check] live:") == 5
    for key in reuse.kept():
        reuse._kept.pop(key).close()


@pytest.mark.gpu
def test_live_reference_publish_is_read_while_the_kernel_runs(capsys):
    checks.check_mailbox_publish(REFERENCE_PUBLISH, rounds=5)
    assert "[check] live:" in capsys.readouterr().out


@pytest.mark.gpu
def test_live_publish_is_judged_on_its_ptx_before_any_round(monkeypatch):
    """Live, a fence on one branch fails on the PTX as offline, and no round runs."""
    monkeypatch.setattr(mailbox, "mailbox_rounds", lambda *args: pytest.fail("rounds ran"))
    source, needle = WRONG["fence-on-one-branch"]
    with pytest.raises(AssertionError, match=needle):
        checks.check_mailbox_publish(source)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "name", ["rolled-loop", "rolled-loop-through-a-noinline-helper", "payload-split-across-two-helpers",
             "atomics-at-system-scope", "inline-asm-fence-sc-sys", "not-inlined", "values-kept-in-a-local-array"],
)  # fmt: skip
def test_live_every_form_the_analysis_passes_is_read_right_by_the_host(name, capsys):
    """What the PTX analysis proves, the live rounds confirm: the host reads the exact payload while it runs."""
    checks.check_mailbox_publish(RIGHT[name], rounds=5)
    assert "in 5 of 5 rounds the host saw the flag" in capsys.readouterr().out


@pytest.mark.gpu
def test_live_values_the_analysis_cannot_compute_are_decided_by_the_rounds(capsys):
    """Offline pending a GPU; live the rounds read the values: the cell passes (the corpus's zc-values-pending)."""
    checks.check_mailbox_publish(OPAQUE_VALUES, rounds=5)
    assert "in 5 of 5 rounds the host saw the flag" in capsys.readouterr().out


@pytest.mark.gpu
def test_live_publish_that_does_not_compile_is_one_message():
    source = REFERENCE_PUBLISH.replace("box[MB_FLAG] = round;", "box[MB_FLAG] = round; undefined_name = 1;")
    line = next(n for n, text in enumerate(source.split("\n"), 1) if "undefined_name" in text)
    expected = rf"your publish step does not compile: your_publish\({line}\).*undefined_name"
    with pytest.raises(AssertionError, match=expected):
        checks.check_mailbox_publish(source)


@pytest.mark.gpu
def test_live_publish_is_compiled_in_a_child_under_the_limits(monkeypatch):
    """Live, the kernel that runs is a cubin compiled in the compile child: past the limit it stops, one line; the
    reference's runs its rounds right after."""
    monkeypatch.setattr(nvrtc, "COMPILE_LIMIT_S", 2.0)
    # whichever limit this machine's NVRTC meets first: the time limit here, offline; on the H200 (CUDA 13's NVRTC,
    # a cubin for sm_90) the child died of SIGSEGV in the template's recursion (2026-12-03): stopped all the same
    stops = (
        r"your source took over 2 s to compile \(NVRTC was stopped there\)",
        r"compiling your source needed over \S+ of memory \(NVRTC was stopped there\)",
        r"NVRTC died compiling your source \(killed by SIG[A-Z]+\)",
    )
    with pytest.raises(nvrtc.CompileStopped, match=f"^({'|'.join(stops)})$") as stopped:
        mailbox.compile_publish(SLOW_PUBLISH)
    print("stopped:", stopped.value)
    results = mailbox.mailbox_rounds(REFERENCE_PUBLISH, 2)
    assert [r["payload_ok"] and r["running_when_read"] for r in results] == [True, True], results


def test_the_untouched_publish_stub_fails_with_a_message():
    """The release's MY_PUBLISH cell defines the name before its stub raises; the check on it says what to write."""
    release = nbformat.read(
        Path(__file__).resolve().parents[2] / "course" / "zero_copy" / "zero_copy.ipynb", as_version=4
    )
    cell = next(c for c in release.cells if c.get("id") == "my_publish")
    names: dict[str, object] = {}
    with pytest.raises(NotImplementedError):
        exec(cell.source, names)  # the string, then nbgrader's stub
    assert "__device__ void publish(volatile int* box, int round) {" in names["MY_PUBLISH"]
    with pytest.raises(
        AssertionError, match="MY_PUBLISH still holds the exercise's stub, a publish\\(\\) that stores nothing"
    ):
        checks.check_mailbox_publish(names["MY_PUBLISH"])
