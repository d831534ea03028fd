"""What `finish_pages` (grader.feedback) does to the HTML of each feedback page nbgrader wrote.

- Lines wrap inside their box: a long `[check] ...` verdict or error message in an output is wrapped rather than
  running out of the output area (a style rule added to the page's head).
- A cell pending a GPU (labcore.pending) is labelled so beside its score, in the list at the top and in the
  cell's heading: nbgrader shows "Score: 0.0 / 2.0" there, which alone reads as a wrong answer. (Its outputs are
  already one line, written by grader.preprocessors.HideHiddenTests.)
- Nothing is fetched from the network when the page is viewed: nbgrader's template loads MathJax from a CDN
  (its feedback template calls nbconvert's `mathjax()` macro without an address, so HTMLExporter.mathjax_url does
  not reach it), which in a lab without network leaves formulas as raw TeX. The script is removed and each formula
  of the page is drawn when the page is made, by matplotlib's mathtext (a dependency already: no MathJax to ship,
  nothing to install), as an SVG image inside the page, its TeX as the image's text alternative; the page stays
  one self-contained file, as nbgrader's release_feedback copies only the .html. TeX that mathtext cannot read
  (an environment such as `align`, a command it lacks) stays as its source text.
"""

from __future__ import annotations

import base64
import html
import io
import re
from collections.abc import Iterable

PENDING_LABEL = "pending a GPU"
WRAP_STYLE = """<style type="text/css">
/* long verdict lines and error messages wrap inside their output box instead of running out of it: at spaces,
   within a word only where it is longer than the box (bootstrap's pre breaks words anywhere) */
div.output_area pre, div.output_subarea pre { white-space: pre-wrap; word-break: normal; overflow-wrap: anywhere; }
/* readable on the list's grey and on a cell heading's blue alike */
span.pending-gpu-label { background: #fcf8e3; color: #8a6d3b; font-weight: bold; padding: 0 0.4em; border-radius: 3px; }
</style>
"""
MATHJAX = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.S)
MATH_NOTE = "<!-- math drawn when this page was made (grader.feedback_page): nothing is fetched -->"
# what nbconvert's markdown renderer leaves for MathJax: $$display$$ and $inline$ (and \begin{env}...\end{env},
# which mathtext cannot draw: left as it is)
MATH = re.compile(r"\$\$(?P<block>.+?)\$\$|\$(?P<inline>[^$]+?)\$", re.S)
# MathJax leaves the text of these elements alone (its skipTags); tags themselves are never text
NOT_MATH = re.compile(r"(<(script|style|pre|code|textarea)\b[^>]*>.*?</\2\s*>|<[^>]*>)", re.S | re.I)
# common TeX spellings mathtext lacks, as the ones it has
ALIASES = {"le": r"\leq", "ge": r"\geq", "lt": "<", "gt": ">", "gets": r"\leftarrow", "land": r"\wedge", "lor": r"\vee"}
ALIASES |= {"lnot": r"\neg", "iff": r"\Leftrightarrow", "implies": r"\Rightarrow", "lvert": "|", "rvert": "|"}
ALIASES |= {"tfrac": r"\frac", "textrm": r"\mathrm", "bmod": r"\,\mathrm{mod}\,"}
ALIAS = re.compile(r"\\(" + "|".join(ALIASES) + r")(?![A-Za-z])")
MATH_PT = 13  # mathtext's size in points: Computer Modern drawn at it matches the page's 14 px text


def with_wrap_style(page: str) -> str:
    """The page with the style rule that wraps output lines, last in its head so that it wins."""
    return page.replace("</head>", WRAP_STYLE + "</head>", 1)


def label_pending(page: str, cells: Iterable[str]) -> str:
    """The page with 'pending a GPU' beside the score of each of these grade cells, in the list and the heading."""
    label = f'<span class="pending-gpu-label">{PENDING_LABEL}</span>'
    for cell in cells:
        anchor = re.escape(cell)
        # the list at the top: <li><a href="#ID">Test cell</a> (Score: 0.0 / 2.0)</li>
        page = re.sub(rf'(<li><a href="#{anchor}">[^<]*</a> \(Score: [^)<]*)\)', rf"\1, {label})", page, count=1)
        # the cell's heading: <a name="ID"></a><div class="panel-heading">... Score: 0.0 / 2.0 <a href="#top">
        heading = rf'(<a name="{anchor}"></a><div class="panel-heading">(?:(?!</div>).)*?Score: [^<]*?)'
        page = re.sub(heading + '( <a href="#top">)', rf"\1, {label}\2", page, count=1, flags=re.S)
    return page


def math_image(tex: str, display: bool) -> str | None:
    """TeX (HTML-escaped, as the page holds it) drawn by mathtext as an SVG image in the page, or None where
    mathtext cannot read it."""
    import matplotlib  # only for a page with math in it
    from matplotlib.font_manager import FontProperties
    from matplotlib.mathtext import math_to_image

    source = html.unescape(tex).strip()
    drawn = io.BytesIO()
    try:
        with matplotlib.rc_context({"mathtext.fontset": "cm", "svg.fonttype": "path", "svg.hashsalt": "math"}):
            depth = math_to_image(
                f"${ALIAS.sub(lambda m: ALIASES[m[1]], ' '.join(source.split()))}$",
                drawn,
                prop=FontProperties(size=MATH_PT),
                format="svg",
            )
    except Exception:  # any TeX it cannot read stays text, as MathJax shows what it cannot read
        return None
    # an inline formula sits on the text's baseline (depth: points below it); a display one centred on its own line
    place = "display: block; margin: 0.5em auto" if display else f"vertical-align: -{depth:.2f}pt"
    data = base64.b64encode(drawn.getvalue()).decode("ascii")
    return f'<img class="math" alt="{html.escape(source)}" style="{place}" src="data:image/svg+xml;base64,{data}">'


def _math_in_text(text: str) -> str:
    """A run of page text with each formula drawn."""

    def one(m: re.Match[str]) -> str:
        inline = m["inline"] is not None
        return math_image(m["inline"] if inline else m["block"], not inline) or m[0]

    return MATH.sub(one, text) if "$" in text else text


def with_math_drawn(page: str) -> str:
    """The page without nbgrader's MathJax script, the math of its body drawn."""
    page = MATHJAX.sub(MATH_NOTE, page, count=1)
    start = page.find("<body")
    if start < 0:
        return page
    parts = NOT_MATH.split(page[start:])
    # split keeps each skipped element and its tag name: text, element, name, text, element, name, ...
    out = [_math_in_text(part) if i % 3 == 0 else part for i, part in enumerate(parts) if i % 3 != 2]
    return page[:start] + "".join(out)


def finished(page: str, pending_cells: Iterable[str]) -> str:
    """A feedback page as students get it: wrapped lines, its cells pending a GPU labelled, its math drawn."""
    return with_math_drawn(label_pending(with_wrap_style(page), pending_cells))
