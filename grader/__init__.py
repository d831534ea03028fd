"""nbgrader configuration, the checks autograded cells call, and `python -m grader` (issue 5)."""
