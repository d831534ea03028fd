"""The day-54 lesson: double buffering, a 1 GiB array through copy in, kernel and copy out in chunks.

The shape every lesson shares: `config` (options and typed pass keys), `model` (the cost model), `live` (the
measured run), `replay` (a record from a recorded profile), `report` and `plots` (from a record), `notebook` (what
lesson cells call), `checks` (what graded cells call), `__main__` (`python -m day54`). Its kernel, correctness
verdicts, the CuPy context schedules run against, the CPU fake and the simulator are the pipeline's, which later
lessons share: `labcore.pipeline`. Day 54's own: `schedules`, `pitfalls` and `student` (a student's run recorded
under Nsight Systems).
"""

LESSON = "day54"
DOMAIN = "day54"  # the NVTX domain of every timed range
