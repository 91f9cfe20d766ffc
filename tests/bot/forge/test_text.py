"""Forge-neutral text rules: markers, truncation, hunk parsing, anchoring."""

from __future__ import annotations

import hashlib

import pytest

from foundation.forge import FileChange, InlineNote, LineKind, Marker
from foundation.forge._text import anchor, has_marker, line_code, render_marker, truncate, with_marker
from foundation.forge.diff import parse_hunks


def test_marker_is_a_hidden_comment_and_rejects_what_would_break_it() -> None:
    marker = Marker(task="a1b2", purpose="status")
    assert render_marker(marker) == "<!-- forgebot:task=a1b2:purpose=status -->"
    assert has_marker(f"text\n\n{render_marker(marker)}", marker)
    assert not has_marker(render_marker(marker), Marker(task="a1b2", purpose="report"))
    for bad in ("x-->y", "a b", "a:b", "a--b", ""):
        with pytest.raises(ValueError):
            render_marker(Marker(task=bad, purpose="status"))


def test_truncation_keeps_the_limit_and_says_so() -> None:
    assert truncate("short", 100) == "short"
    cut = truncate("y" * 500, 100)
    assert len(cut) == 100 and cut.endswith("comment limit.*")
    marked = with_marker("z" * 500, Marker(task="t", purpose="p"), 200)
    assert len(marked) <= 200 and marked.endswith("-->")
    with pytest.raises(ValueError):
        truncate("x", 5)


def test_hunks_count_both_sides_and_skip_headers_and_no_newline_notes() -> None:
    patch = "\n".join([
        "diff --git a/f b/f", "--- a/f", "+++ b/f",
        "@@ -10,3 +10,3 @@ def f():", " a", "-b", "+c", " d", "\\ No newline at end of file",
        "@@ -40 +40,2 @@", "-e", "+f", "+g",
    ])
    first, second = parse_hunks(patch)
    assert (first.old_start, first.old_count, first.new_start, first.new_count) == (10, 3, 10, 3)
    assert [(ln.kind, ln.old_line, ln.new_line) for ln in first.lines] == [
        (LineKind.CONTEXT, 10, 10), (LineKind.REMOVED, 11, None), (LineKind.ADDED, None, 11),
        (LineKind.CONTEXT, 12, 12)]
    assert second.old_count == 1 and [ln.new_line for ln in second.lines] == [None, 40, 41]


def test_anchor_and_line_code() -> None:
    file = FileChange(old_path="a.php", new_path="b.php", status="renamed",
                      hunks=parse_hunks("@@ -1,2 +1,2 @@\n x\n-y\n+z\n"))
    assert anchor((file,), InlineNote(path="b.php", line=2, body="n")) is not None
    assert anchor((file,), InlineNote(path="a.php", line=2, side="old", body="n")) is not None  # old path works
    assert anchor((file,), InlineNote(path="b.php", line=3, body="n")) is None
    assert anchor((file,), InlineNote(path="b.php", line=1, start_line=2, body="n")) is None  # range backwards
    located = anchor((file,), InlineNote(path="b.php", line=1, body="n"))
    assert located is not None
    assert line_code("b.php", located[2]) == hashlib.sha1(b"b.php").hexdigest() + "_1_1"
