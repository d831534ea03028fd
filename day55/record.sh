#!/usr/bin/env bash
# Record day 55's shipped profile on a GPU machine (profiles/record.sh: its GPU tests, a plain timed run, the same
# command under Nsight Systems with --json, the nsys stats CSV exports the replay reads, and their replay).
#   usage: bash day55/record.sh [OUTDIR]        (default: day55/profiles/h200, the shipped profile's folder)
# Needs: python3 with CuPy and this checkout importable (run from the checkout's root); nsys on PATH or NSYS=path.
exec bash "$(dirname "$0")/../profiles/record.sh" day55 "${1:-day55/profiles/h200}"
