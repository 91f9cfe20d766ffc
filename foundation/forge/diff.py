"""The one model of a unified diff: review, patching, inline positions, evaluation and local runs.

Parsing is the maintained `unidiff` package's (git's extended headers, renames, binary files,
"no newline" markers, hunk counts validated). What it leaves to its callers is done here, once:

- git's C-quoted paths (`"a/caf\\303\\251.php"`, `"b/say\\"hi\\".php"`) are decoded as `git apply`
  reads them, and the `a/`/`b/` prefixes removed, so every reader sees `café.php`;
- every path is put in one canonical spelling, NUL and control characters refused;
- hunks become the forge-neutral `Hunk`/`DiffLine` with both position counters (GitLab's
  `line_code` needs both), so a note anchors on the same line whichever forge receives it.

Lines are split on `\\n` only: a form feed or U+2028 inside a line of code is part of that line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from unidiff.errors import UnidiffParseError
from unidiff.patch import Hunk as UnidiffHunk
from unidiff.patch import PatchedFile, PatchSet

from foundation.forge.models import DiffLine, FileChange, FileStatus, Hunk, LineKind

_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_QUOTED = r'"(?:[^"\\]|\\.)*"'
_DIFF_GIT = re.compile(rf"^diff --git ({_QUOTED}|\S+) ({_QUOTED}|\S+)$")
_NAMING = re.compile(r"^(rename from |rename to |copy from |copy to )(.*)$")
_KINDS = {"+": LineKind.ADDED, "-": LineKind.REMOVED, " ": LineKind.CONTEXT}
DEV_NULL = "/dev/null"


class DiffError(ValueError):
    """The text is not a diff this model accepts (malformed, a path it refuses)."""


def unquote(raw: str) -> str:
    """git's C-quoted path decoded as `git apply` reads it; an unquoted path as it is."""
    if not (len(raw) >= 2 and raw.startswith('"') and raw.endswith('"')):
        if raw.startswith('"'):
            raise DiffError(f"{raw[:200]!r}: unterminated quoted path")
        return raw
    body, out, i = raw[1:-1], bytearray(), 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            out += char.encode("utf-8")
            i += 1
            continue
        nxt = body[i + 1:i + 2]
        if nxt in _C_ESCAPES:
            out.append(_C_ESCAPES[nxt])
            i += 2
        elif re.fullmatch(r"[0-3][0-7]{2}", body[i + 1:i + 4]):
            out.append(int(body[i + 1:i + 4], 8))
            i += 4
        else:
            raise DiffError(f"{raw[:200]!r}: invalid escape in a quoted path")
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DiffError(f"{raw[:200]!r}: a quoted path that is not UTF-8") from exc


MAX_PATH_BYTES = 1024  # a repository path longer than this is no real file: refused, never tried
MAX_NAME_BYTES = 255  # Linux's NAME_MAX: a longer part would fail in the kernel (ENAMETOOLONG)


def too_long(path: str) -> str:
    """Why `path` is too long to be a file name ("" when it is not).

    Refused up front, as the caller's own error: a model's 5,000-character path must be a tool error
    it can act on, never an OSError that reads as a failure of the bot's machinery.
    """
    if len(path.encode()) > MAX_PATH_BYTES:
        return f"a path of {len(path.encode())} bytes is longer than {MAX_PATH_BYTES}"
    longest = max((len(part.encode()) for part in path.split("/")), default=0)
    if longest > MAX_NAME_BYTES:
        return f"a path part of {longest} bytes is longer than {MAX_NAME_BYTES}"
    return ""


def canonical(path: str) -> str:
    """The one spelling every check compares: no NUL or control characters, no `.` or empty parts.

    `..` is kept so that a path check can refuse it by name; a backslash is refused because git
    and the file tools would read it differently. An absolute path is returned as it is (a path
    check refuses it, with that reason).
    """
    bad = next((c for c in path if ord(c) < 0x20 or ord(c) == 0x7F), None)
    if bad is not None:
        raise DiffError(f"{path!r}: NUL or control character {bad!r} in a path")
    if "\\" in path:
        raise DiffError(f"{path!r}: backslashes are not allowed in paths")
    if too_long(path):
        raise DiffError(f"{path[:80]!r}…: {too_long(path)}")
    if path.startswith("/"):
        return path
    return "/".join(part for part in path.split("/") if part not in ("", "."))


def side_path(raw: str) -> str:
    """A `---`/`+++`/`diff --git` path: unquoted, its `a/`/`b/` prefix removed, canonical; "" for /dev/null.

    `git apply` strips one component (-p1), so a name without the prefix would be written somewhere
    else than it says: refused rather than guessed.
    """
    raw = raw.strip() if raw.startswith('"') else raw.split("\t")[0].rstrip()
    if raw == DEV_NULL:
        return ""
    raw = unquote(raw)
    canonical(raw)  # control characters are refused before anything else reads the name
    if raw.startswith("/"):
        return raw
    if raw[:2] not in ("a/", "b/"):
        raise DiffError(f"{raw!r}: file headers must be `--- a/<path>` and `+++ b/<path>`")
    return canonical(raw[2:])


@dataclass(frozen=True)
class FilePatch:
    """One file of a diff: where it was and is, what happened to it, its hunks and its text."""

    path: str  # the new path (the old one for a deletion)
    old_path: str
    status: FileStatus
    binary: bool
    hunks: tuple[Hunk, ...]
    text: str  # this file's part of the diff, headers included (git's quoting kept)
    named: tuple[str, ...]  # every path any of its header lines names, canonical (the patch guard reads it)

    @property
    def lines(self) -> int:
        return self.text.count("\n")

    def change(self) -> FileChange:
        """The file as the forges describe a change's file."""
        return FileChange(old_path=self.old_path, new_path=self.path, status=self.status, hunks=self.hunks)


def _lines(text: str) -> list[str]:
    parts = text.split("\n")
    return [line + "\n" for line in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _patch_set(text: str) -> PatchSet:
    if "\x00" in text:
        raise DiffError("the diff contains a NUL byte")
    try:
        return PatchSet(_lines(text))
    except UnidiffParseError as exc:
        raise DiffError(f"not a unified diff: {exc}") from exc


def _hunk(hunk: UnidiffHunk) -> Hunk:
    old, new, lines = hunk.source_start, hunk.target_start, []
    for line in hunk:
        kind = _KINDS.get(line.line_type)
        if kind is None:  # "\ No newline at end of file"
            continue
        text = line.value.removesuffix("\n").removesuffix("\r")
        lines.append(DiffLine(kind=kind, old_pos=old, new_pos=new, text=text))
        old += kind is not LineKind.ADDED
        new += kind is not LineKind.REMOVED
    return Hunk(old_start=hunk.source_start, old_count=hunk.source_length, new_start=hunk.target_start,
                new_count=hunk.target_length, lines=tuple(lines))


def _named(file: PatchedFile, strict: bool) -> Iterator[str]:
    """The paths of the `diff --git`, rename and copy lines unidiff keeps in the file's header."""
    for line in str(file.patch_info).splitlines():
        if line.startswith("diff --git "):
            match = _DIFF_GIT.match(line)
            names = line.removeprefix("diff --git ")
            sides = (match.group(1), match.group(2)) if match is not None else _same_path(names)
            if sides is not None:
                yield from (side_path(sides[0]), side_path(sides[1]))
            elif strict:  # `a/x y b/z w` is ambiguous; git's own diffs are read through the other headers
                raise DiffError(f"{line[:200]!r}: unreadable `diff --git` header")
        elif (named := _NAMING.match(line)) is not None:
            yield canonical(unquote(named.group(2).strip()))


def _same_path(names: str) -> tuple[str, str] | None:
    """`a/My File.md b/My File.md`: the two sides of a `diff --git` line whose unquoted path holds a space,
    when both name the same path, else None.

    git writes a name with spaces unquoted there (it quotes only control characters, `"` and `\\`), and
    `git apply` reads such a line the same way: as the one split whose halves name the same path. Only
    one split can (the halves' lengths are fixed by the line's), so nothing is guessed.
    """
    half, odd = divmod(len(names), 2)
    old, new = names[:half], names[half + 1:]
    if not odd or names[half] != " " or old[:2] != "a/" or new[:2] != "b/" or old[2:] != new[2:]:
        return None
    return old, new


def _file(file: PatchedFile, strict: bool) -> FilePatch:
    old, new = side_path(file.source_file), side_path(file.target_file)
    status: FileStatus = "modified"
    if file.is_added_file or (not old and new):
        status = "added"
    elif file.is_removed_file or (old and not new):
        status = "deleted"
    elif file.is_rename or old != new:
        status = "renamed"
    named = tuple(p for p in dict.fromkeys([*_named(file, strict), old, new]) if p)
    return FilePatch(path=new or old, old_path=old or new, status=status, binary=bool(file.is_binary_file),
                     hunks=tuple(_hunk(h) for h in file), text=str(file), named=named)


def parse(text: str, *, strict: bool = False) -> list[FilePatch]:
    """The files of a (git or plain) unified diff; DiffError when it is not one.

    `strict` (patches written by a model): an ambiguous `diff --git` line is refused instead of
    being read through the file's other headers.
    """
    return [_file(file, strict) for file in _patch_set(text)]


def parse_hunks(patch: str) -> tuple[Hunk, ...]:
    """The hunks of one file's diff as the forge APIs give it (`@@` headers onward, no file headers)."""
    if not patch.strip():
        return ()
    start = patch.find("@@")
    if start < 0:
        return ()
    files = parse(f"--- a/file\n+++ b/file\n{patch[start:]}")
    return files[0].hunks if files else ()


_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$")


def recount(text: str) -> str:
    """`text` with every hunk header's counts recomputed from the lines that follow it.

    The rule is `git apply --recount`'s: a hunk runs until a line that is not context (` ` or
    empty), removed, added or `\\`, or until `@@ ` or `diff `. A patch whose counts a model got
    wrong is recounted here and then both parsed and applied *as recounted*, so the guard and git
    read the same text the same way.
    """
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = _HUNK_HEADER.match(lines[i])
        if match is None:
            out.append(lines[i])
            i += 1
            continue
        old = new = 0
        j = i + 1
        while j < len(lines):
            line = lines[j]
            if line.startswith(("@@ ", "diff ")) or (line == "" and j == len(lines) - 1):
                break
            first = line[:1]
            if first in (" ", ""):
                old, new = old + 1, new + 1
            elif first == "-":
                old += 1
            elif first == "+":
                new += 1
            elif first != "\\":
                break
            j += 1
        out.append(f"@@ -{match.group(1)},{old} +{match.group(2)},{new} @@{match.group(3)}")
        out.extend(lines[i + 1:j])
        i = j
    return "\n".join(out)
