"""The chunked copy-in, kernel, copy-out pipeline that several lessons share (day 54 builds it by hand; later
lessons allocate inside it or capture it as a graph).

`kernel` (the FMA chain and its closed form), `verify` (bit-exact verdicts, poison), `context` (the CuPy context
a schedule runs against), `trace` (a schedule as data), `recording` (the CPU fake with vector clocks and races),
`stages` (a pipeline's stage times) and `simulate` (copy engines and SMs, offline).
"""
