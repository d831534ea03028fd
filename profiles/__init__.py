"""Recorded real runs, installed as the package `course_profiles` so that every install carries them.

This file is the only one here not written by a recorded run: each profiles/<gpu>/<lesson>/ folder holds
that run's nsys exports, results.json and a README with the commands that made them.
"""
