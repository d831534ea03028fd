"""Wrong answers to every exercise of day56 at once, as a student might write them: each graded cell must fail on
them in the student's own kernel with a verdict that helps (tests/test_student_side.py reads WRONG)."""

WRONG = {
    "break_even_launches": "def break_even_launches(one_off_ms, enqueue_ms, launch_ms):\n"
    "    return one_off_ms / enqueue_ms",
    "my_capturable": "def my_capturable(ctx):\n    for k in range(ctx.n_chunks):\n"
    "        pair = k % ctx.n_buffers\n        ctx.copy_in(k, pair)\n        ctx.launch(k, pair)\n"
    "        ctx.copy_out(k, pair)\n        ctx.synchronize()",
    "my_capture_answers": 'my_capture_answers = dict.fromkeys(["sync", "host_read", "new_input", "gpu_time"], "x")',
}
