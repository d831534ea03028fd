"""What day 57's shipped code means to the student bundle's tests (tests/test_bundle.py reads each lesson's
tests/shipped.py through the list of lessons): the earlier lesson's answer its yardstick makes."""

from __future__ import annotations

# An earlier lesson's exercise answer (its key: "<lesson> <cell>: <function>") -> the functions of this lesson's
# package that make its schedule (as BUILDS_ON says): day 54's pipeline, timed here as the yardstick
HOLDS = {"day54 my_pipelined: my_pipelined": ("managed.pipelined",)}
