"""What day 56's solutions mean to the student bundle's tests (tests/test_bundle.py reads each lesson's
tests/shipped.py through the list of lessons): the solution cell that is the shared pipeline's loop, and the exercise
whose answer is an earlier, closed exercise's."""

from __future__ import annotations

# Solution cells whose region is the pipeline's loop (the region scan's needle for it must name them)
PIPELINE_CELLS = ("my_capturable",)

# This lesson's exercise answer -> the earlier exercise's answer it is: my_capturable asks for day 54's pipeline (the
# point is that the plain pipeline, waiting for nothing, is what a capture can hold), no secret once day 54 has
# closed, so a cut through this lesson may ship it where the earlier lessons' code makes it
CLOSED_ANSWERS = {"day56 my_capturable: my_capturable": "day54 my_pipelined: my_pipelined"}
