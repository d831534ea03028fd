"""The lesson kit: what every lesson shares, written once and called (a lesson holds only what is its own).

- `keys`: typed pass keys ('pipelined w=64MiB b=2', 'graph n=16'), each with one `format`/`parse`.
- `cli`: the command line: one parser with options that mean one thing in every lesson, the checks made before any
  work, the mode line, the replay's notes, the record written and its correctness verdicts.
- `replay`: loading a recorded profile (nsys exports, else results.json), the shipped one parsed once, the
  consistency check of each pass's operations, a window sweep's totals, the replay record.
- `measure`: the measure loop's steps: a schedule run untimed, a traced run for the timeline, the component passes.
- `memory`: the memory check made before allocating anything.
- `schedules`: the schedules every pipeline lesson measures as yardsticks (naive, the components, the duplex probe),
  and `chunk`, one chunk through a buffer pair, which a lesson's own schedules are written with.
- `verdicts`: a lesson's predictions judged on a run's numbers (`Verdict`) and its correctness lines.
- `cells`: what a lesson's notebook cells share (an exercise still its stub stops the cell with one line).

Predictions and their verdicts are `labcore.predictions`; timing a pass is `labcore.timing`.
"""
