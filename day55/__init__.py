"""The day-55 lesson: stream-ordered allocation, day 54's pipeline with each chunk's device buffers allocated inside
the loop.

The shape every lesson shares: `config` (options and typed pass keys), `model` (the cost model), `live` (the
measured run), `replay` (a record from a recorded profile), `report` and `plots` (from a record), `notebook` (what
lesson cells call), `checks` (what graded cells call), `__main__` (`python -m day55`). The kernel, the verdicts, the
CuPy context (which allocates on the GPU), the recording fake (which knows allocation's ordering rules) and the
simulator are the pipeline's: `labcore.pipeline`. Day 55's own: `schedules` (the ways to allocate) and `pool` (the
device's default memory pool and its release threshold).
"""

LESSON = "day55"
# The earlier lessons whose answers this lesson's shipped code holds (grader.bundle): `schedules.once` and
# `per_chunk_malloc` are day 54's pipeline with cudaMalloc and cudaFree around it, and the recorded profile's trace
# lists that pipeline op by op. A bundle holds it once day 54 has closed.
BUILDS_ON = ("day54",)
DOMAIN = "day55"  # the NVTX domain of every timed range
