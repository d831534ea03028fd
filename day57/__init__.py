"""The day-57 lesson: day 54's 1 GiB job through managed memory (cudaMallocManaged).

The shape every lesson shares: `config`, `model` (the bytes a run moves), `live`, `replay`, `report`, `plots`,
`notebook`, `checks`, `__main__` (`python -m day57`), each a caller of the lesson kit (labcore.kit) for what lessons
share. Day 57's own: `managed` (a managed-memory context with the pipeline context's interface, prefetch and advice
through cuda-bindings, and the schedules that run on it).
"""

LESSON = DOMAIN = "day57"  # the package, and the NVTX domain of every timed range
# grader.bundle: managed.pipelined, the yardstick timed here, is day 54's pipeline, and so day 56's capturable schedule
BUILDS_ON = ("day54", "day56")
