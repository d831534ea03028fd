"""The feedback scan finds hidden-test lines encoded on a page, not only verbatim ones (grader.feedback)."""

from __future__ import annotations

import base64
import codecs
import gzip
import zlib

import pytest

from grader.feedback import decodings, quoted_lines

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
