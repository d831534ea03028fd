"""nbgrader configuration of the course checkout: `course/` is the student release.

Each lesson's nbgrader source is its own folder's `<lesson>/solutions/<lesson>.ipynb`; `python -m grader generate`
hands nbgrader a copy of those under the names it expects (`--CourseDirectory.source_directory`) and writes
course/<lesson>/ for every lesson of lessons.txt. Nothing is written to a gradebook:
the release needs none, and instructors grade in a directory outside the repository made by
`python -m grader setup DIR`, which has its own nbgrader_config.py and gradebook.
"""

import os
import tempfile

c = get_config()  # noqa: F821 (nbgrader defines get_config when it runs this file)

c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.release_directory = "course"

# No gradebook for the release: generate_assignment neither records the assignment nor saves its cells.
c.GenerateAssignment.no_database = True
c.SaveCells.enabled = False
# Any other nbgrader command started here by mistake writes its gradebook to a temp file, not the checkout.
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(tempfile.gettempdir(), "datamove-course-scratch-gradebook.db")
