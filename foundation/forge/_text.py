"""Forge-neutral text rules: the hidden bot marker, truncation to a forge's limit, inline anchors.

Both adapters and the in-memory fake use these, so a marker written by one is found by all and an
inline note anchors on the same line whichever forge receives it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from foundation.forge.limits import GITHUB_COMMENT_LIMIT as GITHUB_COMMENT_LIMIT
from foundation.forge.limits import GITLAB_COMMENT_LIMIT as GITLAB_COMMENT_LIMIT
from foundation.forge.models import BotIdentity, Comment, CommentRef, DiffLine, FileChange, InlineNote, Marker

_TRUNCATED = "\n\n*… truncated to fit the forge's comment limit.*"
_SAFE = re.compile(r"[A-Za-z0-9._/@#=+-]+")


def render_marker(marker: Marker) -> str:
    """The hidden HTML comment identifying a bot write; invisible in rendered Markdown."""
    for value in (marker.task, marker.purpose):
        # `--` would end the HTML comment early and `:` separates the fields.
        if not _SAFE.fullmatch(value) or "--" in value:
            raise ValueError(f"marker field {value!r} must match {_SAFE.pattern} without '--'")
    return f"<!-- forgebot:task={marker.task}:purpose={marker.purpose} -->"


def has_marker(body: str, marker: Marker) -> bool:
    return render_marker(marker) in body


def marked(comments: Iterable[Comment], marker: Marker, bot: BotIdentity) -> CommentRef | None:
    """The first of the bot's `comments` that carries `marker`: where a write keyed by it already
    stands. Anyone can type a marker; only a comment the bot authored counts."""
    return next((c.ref for c in comments if bot.wrote(c) and has_marker(c.body, marker)), None)


def with_marker(body: str, marker: Marker | None, limit: int) -> str:
    """Append the marker (if any) and truncate the body so the whole still fits `limit`."""
    tail = f"\n\n{render_marker(marker)}" if marker is not None else ""
    return truncate(body, limit - len(tail)) + tail


def truncate(body: str, limit: int) -> str:
    """Cut `body` to at most `limit` characters, saying so at the end."""
    if limit <= len(_TRUNCATED):
        raise ValueError(f"limit {limit} leaves no room for text")
    if len(body) <= limit:
        return body
    return body[: limit - len(_TRUNCATED)] + _TRUNCATED


def find_file(files: tuple[FileChange, ...], path: str) -> FileChange | None:
    """The file whose new path (or, for deletions and renames, old path) is `path`."""
    for file in files:
        if file.new_path == path:
            return file
    for file in files:
        if file.old_path == path:
            return file
    return None


def find_line(file: FileChange, line: int, side: str) -> DiffLine | None:
    """The diff line shown at `line` on `side`; None when the diff does not show that line."""
    for hunk in file.hunks:
        for diff_line in hunk.lines:
            number = diff_line.new_line if side == "new" else diff_line.old_line
            if number == line:
                return diff_line
    return None


def anchor(files: tuple[FileChange, ...], note: InlineNote) -> tuple[FileChange, DiffLine, DiffLine] | None:
    """Resolve a note to (file, first line, last line) on the diff, or None when it cannot anchor."""
    file = find_file(files, note.path)
    if file is None:
        return None
    last = find_line(file, note.line, note.side)
    first = last if note.start_line is None else find_line(file, note.start_line, note.side)
    if last is None or first is None or (note.start_line is not None and note.start_line > note.line):
        return None
    return file, first, last


def line_code(path: str, line: DiffLine) -> str:
    """GitLab's `line_code`: `<sha1 of the file path>_<old counter>_<new counter>`."""
    return f"{hashlib.sha1(path.encode()).hexdigest()}_{line.old_pos}_{line.new_pos}"


def inline_marker(task: str, note: InlineNote) -> Marker:
    """A marker per inline note, stable across retries of the same task (same note → same purpose)."""
    digest = hashlib.sha1(f"{note.path}\0{note.side}\0{note.line}\0{note.body}".encode()).hexdigest()[:12]
    return Marker(task=task, purpose=f"inline.{digest}")
