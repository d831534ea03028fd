"""What zero-copy's shipped code means to the student bundle's tests (tests/test_bundle.py reads each lesson's
tests/shipped.py through the list of lessons): a solution line its own code holds, the earlier lesson's answer its
pipeline makes, and what the bundle runs live once the student's answer is written."""

from __future__ import annotations

# Solution lines the lesson's code itself holds, as (file in the lesson's folder, stripped line): each allowed in that
# file only, for the reason given
BUNDLE_ALLOWS = {
    ("checks.py", "return math.inf"): (
        "the break-even check's failure message tells the student to `return math.inf` when copying never wins"
    ),
}

# An earlier lesson's exercise answer (its key: "<lesson> <cell>: <function>") -> the functions of this lesson's
# package that make its schedule (as BUILDS_ON says): day 54's double-buffered pipeline, run against mapped memory
HOLDS = {"day54 my_pipelined: my_pipelined": ("experiments.pipelined",)}

# On a GPU, once gather_launch and order_ids are written, the live gather experiment runs with them, saying so
BUNDLE_LIVE = (
    (
        "import numpy as np\n"
        "def gather_launch(n_rows):\n    return 256, (32 * n_rows + 255) // 256\n"
        "def order_ids(ids):\n    order = np.argsort(ids, kind='stable')\n    restore = np.empty_like(order)\n"
        "    restore[order] = np.arange(order.size)\n    return ids[order], restore\n"
        "from zero_copy import notebook\n"
        "run = notebook.measure('gather', repeats=1)\n"
        "print('MODE', run.mode)\n",
        ("with your gather_launch, order_ids", "MODE live"),
    ),
)
