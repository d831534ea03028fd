"""The feedback scan finds hidden-test lines encoded on a page, not only verbatim ones, and the inputs of questions only
hidden tests ask (grader.feedback)."""

from __future__ import annotations

import base64
import codecs
import gzip
import random
import zlib
from collections import Counter

import pytest

from grader import checker, feedback
from grader.feedback import decodings, quoted_lines, quoted_values

HIDDEN = {
    "checks.check_prediction(predict_pipelined_ms, cases=[(10.0, 30.0, 10.0, 8, 2, None)])",
    "checks.check_gather_correct(gather_launch, order_ids, n_rows=3001, row_bytes=48)",
}
REGION = "\n".join(sorted(HIDDEN))
LINE = sorted(HIDDEN)[0]
PAGE = "<p>Your test cell printed:</p>\n<pre>{}</pre>\n<p>test_prediction: passed (2 / 2)</p>"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


ENCODINGS = {
    "verbatim": LINE,
    "whitespace changed": LINE.replace(", ", ",   ").replace("(", "( "),
    "base64 of the line": b64(LINE.encode()),
    "base64 of the region": b64(REGION.encode()),
    # the line at each byte offset of its region's three, the copy after other base64-like characters
    **{f"base64, line at offset {k}, after other text": "xyz" + b64(("#" * k + REGION).encode()) for k in range(3)},
    "base64 wrapped at 76": "\n".join(
        b64(REGION.encode())[i : i + 76] for i in range(0, len(b64(REGION.encode())), 76)
    ),
    "URL-safe base64": base64.urlsafe_b64encode(REGION.encode()).decode(),
    "hex": REGION.encode().hex(),
    "rot13": codecs.encode(REGION, "rot13"),
    "reversed": REGION[::-1],
    "zlib + base64": b64(zlib.compress(REGION.encode())),
    "gzip + base64": b64(gzip.compress(REGION.encode())),
    "base64 of the reversed line": b64(LINE[::-1].encode()),
}


@pytest.mark.parametrize("how", sorted(ENCODINGS))
def test_a_page_embedding_a_hidden_line_in_any_encoding_is_caught(how):
    """Each encoding of a hidden line (or of its region) on a page is found; the page would be deleted."""
    found = quoted_lines(PAGE.format(ENCODINGS[how]), HIDDEN)
    assert LINE in found, how


def test_a_page_without_hidden_lines_is_clean():
    """The visible feedback, base64 of other text and hex of other bytes: nothing found (no false alarm)."""
    other = "checks.check_prediction(predict_pipelined_ms)  # the visible test"
    page = PAGE.format(other + "\n" + b64(other.encode()) + "\n" + other.encode().hex() + "\n" + "A" * 400)
    assert quoted_lines(page, HIDDEN) == []


def test_decodings_of_a_page_are_bounded_for_a_zip_bomb():
    """A deflate stream that inflates to a gigabyte is read only up to MAX_INFLATED."""
    bomb = b64(zlib.compress(b"\0" * (1 << 26), 9))
    assert max(len(t) for t in decodings(PAGE.format(bomb))) <= (1 << 21) + 10


# -- the hidden questions' inputs (printed by a student's cell, they reached the feedback pages) ---------

DRAWN = [[3.942, 0.1547, 0.1791], [55.082394974445265, 4076.8400841968532], [10.0, 30.0, 10.0, 8, 2], [762246535]]
SHOWN = {
    "a drawn float alone": "your break-even got 175.3592 -> 3.942",
    "a float rounded as printed": "reads: 55.08 per launch",
    "a question's inputs in a row": "predict_pipelined_ms called with (10.0, 30.0, 10.0, 8, 2, None)",
    "in a row, other separators": "args 10 | 30 | 10 | 8 | 2",
    "a seed alone": "seed=762246535",
    "base64 of printed inputs": b64(b"(3.942, 0.1547, 0.1791)"),
    "hex of printed inputs": b"inputs 0.1547".hex(),
    "reversed": "0.1547 1791.0"[::-1],
    "zlib + base64": b64(zlib.compress(b"called with 4076.84")),
}


@pytest.mark.parametrize("how", sorted(SHOWN))
def test_a_page_showing_a_hidden_questions_inputs_is_caught(how):
    assert quoted_values(PAGE.format(SHOWN[how]), DRAWN), how


@pytest.mark.parametrize(
    "text",
    [
        "pipelined/naive = 0.562 at 64 MiB with 2 buffers; 16 chunks; score 1 / 2",
        "10.0 30.0 and later 8 2",  # the row broken up
        "3.94 and 0.15",  # too few digits to be a drawn input rounded
        "100 / 100 rows, 4194304 bytes, 100000 ids",  # plain numbers, a round size
        "A" * 400,
    ],
)
def test_a_page_without_hidden_inputs_is_clean(text):
    assert quoted_values(PAGE.format(text), [*DRAWN, [100.0, 100.0], [4194304], [100000]]) == []


def test_inputs_the_notebook_shows_itself_are_not_hidden():
    """A number the visible text holds (a visible test's case, the lesson's own) is nobody's secret."""
    page = PAGE.format("break_even_launches(3.942, 0.1547, 0.1791) -> 17")
    assert quoted_values(page, DRAWN) == ["0.1547", "0.1791", "3.942", "3.942, 0.1547, 0.1791"]
    assert quoted_values(page, DRAWN, visible="cases = [(3.942, 0.1547, 0.1791)]") == []


def test_the_plan_marks_what_only_hidden_tests_ask_and_their_inputs_are_what_the_scan_looks_for():
    """grader.checker plans a test cell's visible part alone first: a question it asks is visible, the rest hidden;
    hidden_inputs keeps the numbers of hidden questions no visible part asks, and none too plain to look for."""
    source = "check(a)\n### BEGIN HIDDEN TESTS\ncheck(b)\n### END HIDDEN TESTS\ncheck(c)"
    assert checker.visible_part(source) == "check(a)\ncheck(c)" and checker.visible_part("check(a)") is None
    visible = Counter({"k1": 1})
    asked = [checker._marked({"key": k, "args": a}, visible, "x") for k, a in QUESTIONS]
    assert [q.get("hidden", False) for q in asked] == [False, True, True, True, True]
    assert checker.hidden_inputs({"3": asked}) == [[3.942, 0.1547, 0.1791], [762246535]]


QUESTIONS = [
    ("k1", [{"student": "f"}, 19.56, 5.4]),  # the visible part asked it
    ("k1", [{"student": "f"}, 19.56, 5.4]),  # asked again by the hidden part: the visible one's inputs, no secret
    ("k2", [{"student": "f"}, 3.942, 0.1547, 0.1791]),
    ("k3", [{"student": "f"}, 1.0, 2]),  # too plain to look for
    ("k4", [{"student": "order"}, {"list": [762246535]}]),
]


def test_leaks_deletes_a_page_showing_a_hidden_input_and_keeps_a_clean_one(tmp_path):
    """grader.feedback.leaks on a grading directory's layout: the stored result's drawn inputs, the page, the
    autograded notebook's visible text."""
    import json

    import nbformat

    from grader.feedback import leaks
    from grader.grading import GradingDir
    from grader.layout import STORE

    for student, printed in (("ann", "175.3592 0.6663"), ("bob", "all good")):
        page = tmp_path / "feedback" / student / "a1" / "a1.html"
        page.parent.mkdir(parents=True)
        page.write_text(f"<html><body><pre>{printed}</pre></body></html>")
        notebook = tmp_path / "autograded" / student / "a1" / "a1.ipynb"
        notebook.parent.mkdir(parents=True)
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('hello')")]), notebook)
        stored = tmp_path / STORE / "a1" / student / "a1.json"
        stored.parent.mkdir(parents=True)
        stored.write_text(json.dumps({"key": "k", "seed": 5, "result": {"extracted": {"drawn": [[175.3592, 0.6663]]}}}))
    found = leaks(GradingDir(tmp_path, must_exist=False), "a1")
    assert found == ["feedback/ann/a1/a1.html showed a hidden test's inputs (0.6663); deleted it"]
    assert not (tmp_path / "feedback/ann/a1/a1.html").exists() and (tmp_path / "feedback/bob/a1/a1.html").exists()


def _in_row_everywhere(numbers: list[str], inputs: list[float]) -> bool:
    """The scan as first written: the inputs tried from every number of the page."""
    return any(
        all(feedback._same(numbers[at + i], value) for i, value in enumerate(inputs))
        for at in range(len(numbers) - len(inputs) + 1)
    )


def test_the_indexed_scan_finds_what_trying_every_number_finds():
    """The feedback scan looks drawn inputs up by value (a lesson's page holds tens of thousands of numbers): over
    pages of random numbers written plain, rounded, truncated and padded, it finds a row exactly where trying it from
    every number of each of its texts does (a row split between two texts is in neither), found and not found both
    many times."""
    rng = random.Random(7)
    found = {True: 0, False: 0}
    for _ in range(400):
        drawn = [rng.choice([rng.uniform(0, 5000), float(rng.randrange(1, 10**7)), round(rng.uniform(0, 99), 2)])]
        drawn += [rng.uniform(0, 10 ** rng.randrange(1, 6)) for _ in range(rng.randrange(0, 3))]
        written = []
        for _ in range(rng.randrange(0, 40)):
            value = rng.choice([*drawn, rng.uniform(0, 10**4), 3.0, 1024.0])
            form = rng.choice(["{:g}", "{:.1f}", "{:.2f}", "{:.4f}", "{:.0f}", "{}", "{:.6f}"])
            written.append(form.format(value))
        if rng.random() < 0.5:  # the row itself, rounded, somewhere in the page
            at = rng.randrange(0, len(written) + 1)
            written[at:at] = [f"{v:.4f}" if rng.random() < 0.5 else repr(v) for v in drawn]
        cut = rng.randrange(0, len(written) + 1)  # two texts: a row across the cut is in neither
        texts = [" x ".join(written[:cut]), " x ".join(written[cut:])]
        for inputs in (drawn, drawn[:1]):
            expected = any(_in_row_everywhere(feedback.NUMBER.findall(t), inputs) for t in texts)
            assert feedback._Numbers(texts).in_row(inputs) == expected, (texts, inputs)
            found[expected] += 1
    assert min(found.values()) > 50, found


def test_an_infinite_or_nan_input_is_found_nowhere_and_breaks_nothing():
    """A drawn input that is infinite or NaN matches no number on a page (rounding one would raise), and the others of
    its question are still looked for."""
    inf, nan = float("inf"), float("nan")
    assert quoted_values("shown: 1.2345 inf nan 3.5", [[inf, 1.2345, nan], [nan]]) == ["1.2345"]
    assert not feedback._Numbers(["1.2345 inf 3.5"]).in_row([inf])
