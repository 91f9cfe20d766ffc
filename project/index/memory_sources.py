"""Where project memory comes from: the repository's documents and its default branch's history.

Both are read with the hardened git runner from the checkout the index describes, and both are
incremental: a document is re-read only when its blob changed (removed documents leave the memory),
and history is read from the last indexed commit to HEAD (a rewritten history is read again whole).
Symbols are resolved against the code graph already in the same index file, so every item carries
entry points that exist there.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from foundation.gitrunner import GitError, git
from project.index import memory, memory_history
from project.index.db import Connection
from project.index.embed import Embedder
from project.index.memory import MemoryItem
from project.index.memory_history import MAX_COMMITS, HistoryReport
from project.index.mentions import SymbolIndex

DOC_DIRS = ("docs/", "doc/", "adr/", "docs/adr/", "doc/adr/", "doc/decisions/", "decisions/", "architecture/")
DOC_NAMES = re.compile(r"(?i)^(readme|changelog|history|changes|contributing|upgrad(e|ing)|security|architecture)\b")
DOC_SUFFIXES = (".md", ".markdown", ".rst", ".adoc", ".txt")
SKIP_DIRS = ("vendor/", "node_modules/", ".git/", "tests/fixtures/")
MAX_DOC_BYTES = 512 * 1024
SECTION_CHARS = 3000
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")


@dataclass
class MemoryReport:
    documents: int = 0
    adopted: bool = False  # started from an older index's memory
    sections_added: int = 0
    documents_removed: int = 0
    commits_added: int = 0
    rebuilt_history: bool = False  # remembered commits left the history (rewritten, or past the window)
    embedded: int = 0
    notes: list[str] = field(default_factory=list)
    history: HistoryReport = field(default_factory=HistoryReport)


def is_document(path: str, extra_dirs: tuple[str, ...] = ()) -> bool:
    if path.startswith(SKIP_DIRS) or "/vendor/" in path:
        return False
    name = PurePosixPath(path).name
    if DOC_NAMES.match(name):
        return True
    in_docs = path.startswith(DOC_DIRS + extra_dirs)
    return name.lower().endswith(DOC_SUFFIXES[:4]) or (in_docs and name.lower().endswith(DOC_SUFFIXES))


def sections(path: str, text: str) -> list[tuple[str, str]]:
    """(heading, text) pieces of a Markdown or reStructuredText document, each at most SECTION_CHARS."""
    lines = text.splitlines()
    found: list[tuple[str, list[str]]] = [(PurePosixPath(path).name, [])]
    for index, line in enumerate(lines):
        atx = _HEADING.match(line)
        setext = index + 1 < len(lines) and line.strip() and _RST_UNDERLINE.match(lines[index + 1])
        if atx:
            found.append((atx.group(2), []))
        elif setext:
            found.append((line.strip(), []))
        elif not (_RST_UNDERLINE.match(line) and index and found[-1][0] == lines[index - 1].strip()):
            found[-1][1].append(line)
    out: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for heading, body in found:
        content = "\n".join(body).strip()
        if not content:
            continue
        for piece in _pieces(content):
            name = heading if heading not in seen else f"{heading} ({seen[heading] + 1})"
            seen[heading] = seen.get(heading, 0) + 1
            out.append((name, piece))
    return out


def _pieces(content: str) -> list[str]:
    """`content` in pieces of at most SECTION_CHARS, cut at line ends (a word cut in two names nothing)."""
    pieces: list[str] = []
    while len(content) > SECTION_CHARS:
        cut = content.rfind("\n", 0, SECTION_CHARS)
        cut = cut if cut > SECTION_CHARS // 2 else SECTION_CHARS
        pieces.append(content[:cut].strip())
        content = content[cut:].strip()
    return [*pieces, content] if content else pieces


class _Names:
    """The code graph's name index, built the first time a section needs its symbols resolved."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._index: SymbolIndex | None = None

    def resolve(self, text: str) -> tuple[str, ...]:
        if self._index is None:
            self._index = SymbolIndex.of(self._conn)
        return self._index.resolve(text)


def _doc_items(conn: Connection, path: str, text: str, names: _Names) -> list[MemoryItem]:
    """The document's sections; only a section whose text is new has its symbols resolved (an
    unchanged one is kept as stored, with its vector)."""
    stored = {(a, h) for (_, a), h in memory.hashes(conn, "document", path).items()}
    items = []
    for heading, body in sections(path, text):
        digest = hashlib.sha256(f"{heading}\n{body}".encode()).hexdigest()[:24]
        symbols = () if (heading, digest) in stored else names.resolve(f"{heading}\n{body}")
        items.append(MemoryItem("document", path, heading, f"{path} — {heading}", body, symbols, (path,), 0.0,
                                digest))
    return items


def _tracked_documents(root: Path, extra_dirs: tuple[str, ...]) -> dict[str, str]:
    """path → blob id of every tracked document at HEAD."""
    out = git(root, "ls-tree", "-r", "-z", "HEAD")
    found: dict[str, str] = {}
    for entry in filter(None, out.split("\0")):
        meta, _, path = entry.partition("\t")
        mode, kind, blob = meta.split()
        if kind == "blob" and mode != "120000" and is_document(path, extra_dirs):
            found[path] = blob
    return found


def refresh_documents(conn: Connection, root: Path, report: MemoryReport, extra_dirs: tuple[str, ...] = ()) -> None:
    """Bring document sections in line with HEAD: changed blobs re-read, removed documents dropped."""
    current = _tracked_documents(root, extra_dirs)
    stored = memory.read_meta(conn).get("documents", "")
    known = dict(line.split(" ", 1)[::-1] for line in stored.splitlines() if " " in line)  # path -> blob
    removed = [path for path in known if path not in current]
    names = _Names(conn)
    with conn:
        report.documents_removed = len(removed)
        memory.remove_sources(conn, "document", removed)
        for path, blob in current.items():
            if known.get(path) == blob:
                continue
            try:
                text = git(root, "cat-file", "blob", blob)
            except GitError as exc:  # an unreadable blob costs its document only
                report.notes.append(f"{path}: not read ({exc})")
                continue
            if len(text) > MAX_DOC_BYTES or "\0" in text[:1024]:
                report.notes.append(f"{path}: not a readable document (binary or over {MAX_DOC_BYTES} bytes)")
                continue
            items = _doc_items(conn, path, text, names)
            report.sections_added += memory.replace_source(conn, "document", path, items)
        memory.write_meta(conn, documents="\n".join(f"{blob} {path}" for path, blob in sorted(current.items())))
    report.documents = len(current)


def refresh(conn: Connection, root: Path, *, embedder: Embedder | None, max_commits: int = MAX_COMMITS,
            extra_dirs: tuple[str, ...] = (), previous: Path | None = None, journal: Path | None = None,
            progress: Callable[[str], None] | None = None) -> MemoryReport:
    """Bring the whole memory of the checkout at `root` up to date (documents, history, vectors).

    `previous`: an older index of the same repository whose memory an empty one starts from.
    `journal`: where history is also kept durably while `conn` is a throw-away file (`memory_history`).
    `progress`: told how far the history and the vectors are, batch by batch (a first run on a long
    history takes minutes: the command line says so instead of falling silent).
    """
    memory.ensure_schema(conn, embedder)
    report = MemoryReport()
    if previous is not None:
        try:
            report.adopted = memory.adopt(conn, previous)
        except Exception as exc:  # a broken older index: remember from nothing instead
            report.notes.append(f"memory of {previous.name} not taken over: {exc}")
        if report.adopted:
            memory.ensure_schema(conn, embedder)  # the older index's vectors may be of another model
    try:
        refresh_documents(conn, root, report, extra_dirs)
    except GitError as exc:  # a damaged tree at HEAD: the history is still worth remembering
        report.notes.append(f"documents not read: {exc}")
    report.history = memory_history.refresh(
        conn, root, max_commits, journal,
        None if progress is None else lambda done, total: progress(f"history: {done:,} of {total:,} commits read"))
    report.commits_added = report.history.commits_added
    report.rebuilt_history = report.history.dropped > 0
    report.notes += report.history.notes
    if embedder is not None:
        pending = memory.pending(conn)
        report.embedded = memory.embed_pending(
            conn, embedder,
            progress=None if progress is None else lambda done: progress(f"vectors: {done:,} of {pending:,} items"))
    return report
