"""Sphinx configuration of the course's website: MyST pages from site/, the release notebooks executed offline.

`python site/build.py OUT` is the one command (it lays out the sources and calls Sphinx with this folder as its
configuration); see site/build.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "_ext"), str(HERE.parent)]  # the site's extensions; the course's own packages

project = "CUDA data movement, measured"
author = "the course's authors"
copyright = "the course's authors; text and figures CC BY 4.0, code MIT"
extensions = ["myst_nb", "course_figures", "course_lessons"]
root_doc = "site/index"
exclude_patterns = ["_build", "site/_static", "site/_ext", "**/.ipynb_checkpoints"]
html_static_path = [str(HERE / "_static")]
html_theme = "alabaster"
html_theme_options = {"description": "moving data between host memory and a GPU, measured"}
html_title = project
html_show_sourcelink = False  # the notebooks' sources are the release; the site shows them executed
html_copy_source = False
myst_enable_extensions = ["colon_fence"]
smartquotes = False  # a quote on a page is the one in the source (and in what the commands print)
myst_heading_anchors = 3  # README-style links to a page's sections (#section) resolve

# The release notebooks run at build time, offline: every measurement replays the shipped profile. Exercise cells
# hold stubs that raise; they fail quietly (build.py removes their outputs) and the build goes on.
nb_execution_mode = "force"
nb_execution_timeout = 600
nb_execution_allow_errors = True
nb_execution_raise_on_error = False
nb_execution_show_tb = True  # a lesson cell that raises shows its traceback in the build log
nb_merge_streams = True
suppress_warnings = ["mystnb.unknown_mime_type"]
