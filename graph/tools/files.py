"""Read-only file tools: read a line range, list a directory, outline a file.

These are the fallback investigation tools and the ones the runtime tests drive; the code-graph
and search tools plug in beside them by name through `graph.tools.tools_for`.
"""

from __future__ import annotations

import re
from pathlib import Path

from langchain_core.tools import BaseTool

from graph.tools.functiontool import function_tool
from graph.tools.paths import PathRejected, resolve_in_worktree
from project import filetext

MAX_READ_LINES = 400
# A read shows whole lines up to these: a minified bundle is one line of megabytes, and 400 lines of
# generated data can be as large; either would fill a small model's context with one answer.
MAX_LINE_CHARS = 2_000
MAX_READ_CHARS = 40_000
_OUTLINE = re.compile(
    r"^\s*(?:(?:abstract|final|public|protected|private|static|readonly)\s+)*"
    r"(?:class|interface|trait|enum|function|def|namespace)\b.*"
)


def read_lines(root: Path, path: str, start_line: int = 1, end_line: int | None = None) -> str:
    """Numbered lines `start_line..end_line` (1-based, inclusive), at most MAX_READ_LINES."""
    target = resolve_in_worktree(root, path)
    if not target.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    lines = filetext.read(target).splitlines()
    if start_line < 1 or (end_line is not None and end_line < start_line):
        raise ValueError(f"bad line range {start_line}-{end_line}")
    last = min(len(lines), end_line or len(lines), start_line + MAX_READ_LINES - 1)
    body, last = numbered(lines, start_line, last, "{:>5}| ")
    more = f"\n[{len(lines) - last} more lines; read from {last + 1}]" if last < len(lines) else ""
    return body + more


def numbered(lines: list[str], start: int, last: int, prefix: str) -> tuple[str, int]:
    """Lines `start..last` (1-based) each after `prefix` formatted with its number, a line longer than
    `MAX_LINE_CHARS` cut (saying how long it was), stopping before `MAX_READ_CHARS` in all (at least
    one line); and the number of the last line shown."""
    shown: list[str] = []
    size = 0
    for n in range(start, last + 1):
        line = lines[n - 1]
        if len(line) > MAX_LINE_CHARS:
            line = f"{line[:MAX_LINE_CHARS]} [line cut: {len(line):,} characters]"
        entry = prefix.format(n) + line
        if shown and size + len(entry) > MAX_READ_CHARS:
            return "\n".join(shown), n - 1
        shown.append(entry)
        size += len(entry) + 1
    return "\n".join(shown), last


def outline(root: Path, path: str) -> str:
    """Declarations with line numbers: the structure of a file too large to inject in full."""
    target = resolve_in_worktree(root, path)
    text = filetext.read(target)
    rows = [f"{n:>5}| {line.strip()[:MAX_LINE_CHARS]}" for n, line in enumerate(text.splitlines(), 1)
            if _OUTLINE.match(line)]
    return _capped(rows, "declarations") or "(no declarations found)"


def _capped(rows: list[str], what: str) -> str:
    """`rows` up to MAX_READ_CHARS in all, then how many more there were (a generated file can declare
    50,000 functions, a directory can hold 100,000 files)."""
    size = 0
    for count, row in enumerate(rows):
        size += len(row) + 1
        if size > MAX_READ_CHARS and count:
            return "\n".join(rows[:count]) + f"\n[{len(rows) - count} more {what}]"
    return "\n".join(rows)


def list_dir(root: Path, directory: str = ".") -> str:
    target = root.resolve() if directory in ("", ".") else resolve_in_worktree(root, directory)
    if not target.is_dir():
        raise NotADirectoryError(f"{directory}: not a directory")
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in target.iterdir() if p.name != ".git")
    return _capped(names, "entries")


def file_tools(root: Path) -> dict[str, BaseTool]:
    """The read-only file tools bound to one worktree, by tool name."""

    def read_file(path: str, start_line: int = 1, end_line: int | None = None) -> str:
        """Read numbered lines of a repository file (relative path; optional 1-based line range)."""
        return read_lines(root, path, start_line, end_line)

    def get_file_outline(path: str) -> str:
        """List the declarations (classes, functions, methods) of a file with their line numbers."""
        return outline(root, path)

    def list_files(directory: str = ".") -> str:
        """List a repository directory (relative path)."""
        return list_dir(root, directory)

    return {
        f.__name__: function_tool(f)
        for f in (read_file, get_file_outline, list_files)
    }


__all__ = ["MAX_READ_LINES", "PathRejected", "file_tools", "list_dir", "outline", "read_lines"]
