"""Wrong answers to every exercise of day54 at once, as a student might write them: each graded cell must fail on
them in the student's own kernel with a verdict that helps (tests/test_student_side.py reads WRONG)."""

from day54.tests.corpus import RACY_STREAMS  # a pair's next chunk on another stream, nothing ordering it after the last

WRONG = {
    "my_pipelined": RACY_STREAMS,
    "sweep_ratios": "def sweep_ratios(record, buffers):\n    return {w: 1.0 for w in report.windows(record)}",
    "predict_pipelined": "def predict_pipelined_ms(h2d_ms, kernel_ms, d2h_ms, n_chunks, n_buffers, link_floor_ms):"
    "\n    return h2d_ms + kernel_ms + d2h_ms",
    "my_pitfall_names": 'my_pitfall_names = dict.fromkeys("ABCDE", "pageable")',
    "my_fastest": RACY_STREAMS.replace("my_pipelined", "my_fastest")
    + '\n\n\nMY_CHALLENGE = {"window": 16 * MiB, "buffers": 4, "streams": 4}',
}
