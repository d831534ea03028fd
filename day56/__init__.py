"""The day-56 lesson: day 54's pipeline captured once as a CUDA graph and launched as one call.

The shape every lesson shares: `config` (options and typed pass keys), `model` (the break-even arithmetic),
`live` (the measured run), `replay` (a record from a recorded profile), `report` and `plots` (from a record),
`notebook` (what lesson cells call), `checks` (what graded cells call), `__main__` (`python -m day56`). Day 56's
own: `graph` (stream capture, instantiate, launch and update of a schedule, through CuPy and cuda-bindings) and
`schedules` (the pipeline it captures, written against labcore.pipeline). The kernel, the verdicts and the
context are labcore.pipeline's, the same as day 54's.
"""

LESSON = "day56"
# The earlier lessons whose answers this lesson ships (grader.bundle): it captures day 54's pipeline (its own copy,
# `schedules.pipelined`, is withheld), its recorded profile's trace lists that pipeline op by op (chunk, pair, stream)
# and its my_capturable exercise asks for it. A bundle holds it once day 54 has closed.
BUILDS_ON = ("day54",)
DOMAIN = "day56"  # the NVTX domain of every timed range (the GPU time of a pass)
HOST_DOMAIN = "day56 host"  # the NVTX domain of the host-side ranges: an enqueue loop, a launch, an instantiate
