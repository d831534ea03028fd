"""Wrong answers to every exercise of day55 at once, as a student might write them: each graded cell must fail on
them in the student's own kernel with a verdict that helps (tests/test_student_side.py reads WRONG)."""

WRONG = {
    "predict_malloc": "def predict_malloc_ms(h2d_ms, kernel_ms, d2h_ms, n_chunks, malloc_ms, free_ms):\n"
    "    return h2d_ms + kernel_ms + d2h_ms + n_chunks * malloc_ms",
    "my_stream_ordered": "def my_stream_ordered(ctx):\n    for k in range(ctx.n_chunks):\n"
    "        pair = k % ctx.n_buffers\n        ctx.malloc_async(k, pair)\n        ctx.copy_in(k, pair)\n"
    "        ctx.free_async(k, pair)\n        ctx.launch(k, pair)\n        ctx.copy_out(k, pair)",
    "my_verdicts": 'my_verdicts = dict.fromkeys("ABCDE", "fine")',
}
