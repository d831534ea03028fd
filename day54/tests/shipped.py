"""What day 54's shipped code and solutions mean to the student bundle's tests (tests/test_bundle.py reads each
lesson's tests/shipped.py through the list of lessons): its solution cells that are the shared pipeline's loop, and
what the bundle runs live once the student's answer is written."""

from __future__ import annotations

# Solution cells whose region is the pipeline's loop (the region scan's needle for it must name them)
PIPELINE_CELLS = ("my_pipelined",)

_MY_PIPELINED = """
def my_pipelined(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
"""

# On a GPU, once my_pipelined is written, the bundle's live measurement runs it as the pipeline, says so, and checks
# it bit for bit against naive like the reference: (script on the bundle's packages, what it must print)
BUNDLE_LIVE = (
    (
        _MY_PIPELINED
        + "from day54 import notebook\n"
        + "record = notebook.measure(total='256MiB', windows='64MiB', buffers='2', repeats=1)\n"
        + "print('MODE', record.mode, all(c.ok for c in record.checks))\n",
        ("the pipelined passes run your my_pipelined", "MODE live True"),
    ),
)
