"""Wrong answers to every exercise of day57 at once, as a student might write them: each graded cell must fail on
them in the student's own kernel with a verdict that helps (tests/test_student_side.py reads WRONG)."""

WRONG = {  # the advice forgotten: the input counted as moved again on every run, as without it
    "bytes_moved": "def bytes_moved(total_bytes, runs, advised):\n    return 2 * total_bytes * runs",
}
