"""Wrong answers to every exercise of zero_copy at once, as a student might write them: each graded cell must fail on
them in the student's own kernel with a verdict that helps (tests/test_student_side.py reads WRONG)."""

WRONG = {
    "break_even_reads": "def break_even_reads(link_gbps, hbm_gbps):\n    return link_gbps / hbm_gbps",
    "gather_exercise": "def gather_launch(n_rows):\n    return 256, max(1, n_rows // 64)\n\n\n"
    "def order_ids(ids):\n    return ids, np.arange(ids.size)",
    "my_publish": 'MY_PUBLISH = r"""\n__device__ void publish(volatile int* box, int round) {\n'
    "    box[MB_FLAG] = round;\n"
    '    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) box[MB_PAYLOAD + w] = round * 1000003 + w;\n}\n"""',
}
