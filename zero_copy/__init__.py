"""The zero-copy lesson: mapped pinned host memory, what a load over the link costs, and when it beats copying.

`zero_copy.mapped` is the API layer (allocate or register, ask for the device
pointer, free only after the streams finish); `zero_copy.model` holds the
arithmetic the experiments are judged by; `python -m zero_copy` runs the
experiments live, or replays a recorded profile where there is no GPU.
"""

LESSON = "zero_copy"
DOMAIN = "zero_copy"  # the NVTX domain of every timed range
