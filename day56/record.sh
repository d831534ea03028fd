#!/usr/bin/env bash
# Record day 56's profile on a GPU machine (profiles/record.sh: the GPU tests, a plain timed run, the same run under
# Nsight Systems with --json, the nsys stats CSV exports a replay reads (day56.replay), and their replay).
#   usage: bash day56/record.sh OUTDIR        (the shipped one: day56/profiles/h200)
# What differs for day 56: nsys traces a graph's nodes one by one (--cuda-graph-trace=node; by default a graph is one
# row and its copies cannot be replayed); and the exports are the ranges and the GPU trace only: cuda_api_sum counts
# no per-copy calls for a graph's nodes, so labcore.exports' cross-check of calls against copies would refuse a
# graph's profile.
# Needs: python3 with CuPy and this checkout importable; nsys on PATH or NSYS=path.
out=${1:?usage: bash day56/record.sh OUTDIR}
REPORTS=nvtx_sum,nvtx_pushpop_trace,cuda_gpu_trace NSYS_FLAGS=--cuda-graph-trace=node \
  exec bash "$(dirname "$0")/../profiles/record.sh" day56 "$out"
