"""The zero-copy lesson: mapped pinned host memory, what a load over the link costs, and when it beats copying.

The shape every lesson shares: `config` (options, the Config, typed pass keys and planned rows), `kernel`
(kernels/zero_copy.cu compiled and launched), `model` (the arithmetic the measurements are judged by), `live`
(the measured run), `replay` (a record from a recorded profile), `verify` (bit-exact checks, poison, references),
`report` (tables and verdicts) and `plots` (figures) from a record, `notebook` (what lesson cells call), `checks`
(what graded cells call), `__main__` (`python -m zero_copy`). Zero-copy's own: `mapped` (the API layer: allocate
or register, the device pointer, free after the streams; what the device supports), `hostmem` (how much may be
pinned), `harness` (timing and checks for the live experiments), `experiments` (the dense ones), `gather` and
`mailbox` (each an experiment and its graded exercise).
"""

LESSON = "zero_copy"
# The earlier lessons whose answers this lesson's shipped code holds (grader.bundle): `experiments.pipelined` is day
# 54's double-buffered pipeline, which this lesson's live measurement times. A bundle holds it once day 54 has closed.
BUILDS_ON = ("day54",)
DOMAIN = "zero_copy"  # the NVTX domain of every timed range
