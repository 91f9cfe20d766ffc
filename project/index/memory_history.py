"""The history part of project memory: every commit with its exact entry points, read so it always finishes.

Commits are read from git (`history`) in batches, oldest first, while the previous batch's files are
parsed (`entrypoints`): git runs in a second thread, so the two cores both work. Each batch is stored
in one transaction, so the commits already stored are the cursor: an interrupted build (a killed
worker, a Ctrl-C) starts again where it stopped, and a commit is never read twice. What could not be
read is recorded with its reason (`memory_skipped`) and said in the memory's notes: "2 commits read
without their diff (object 1a2b3c unreadable)" instead of no memory at all.

Tables (beside `memory_items`, in the same index file):
    memory_touches  what each commit touched: name and kind at that commit, its file, changed lines,
                    its line spans before and after, the identifiers on its added lines
    memory_moves    a declaration renamed or moved by a commit: old name → new name, and when
    memory_links    merge requests and issues a commit belongs to, from its message or the merge that
                    brought it in ("Merge pull request #12", "See merge request group/app!12")
    memory_skipped  commits, or parts of them, that git could not read, with the reason
"""

from __future__ import annotations

import queue
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from foundation.gitrunner import GitError, git
from project.index import history, memory
from project.index.db import Connection, connect
from project.index.declarations import READERS
from project.index.entrypoints import CACHED_VERSIONS, MAX_SYMBOLS, Touch, Touches
from project.index.history import Commit, Unread
from project.index.memory import MemoryItem

MAX_PATHS = 100
MAX_COMMITS = 20_000  # the newest commits remembered: a 10,000-commit history whole, with room
_CHANGE_REF = re.compile(r"(?m)Merge pull request #(\d+)|See merge request \S*!(\d+)|\(#(\d+)\)\s*$|(?<![\w/])!(\d+)\b")
_ISSUE_REF = re.compile(r"(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s+#(\d+)")
_ANY_REF = re.compile(r"(?<![\w&/])#(\d+)\b")


@dataclass
class HistoryReport:
    commits_added: int = 0
    dropped: int = 0  # stored commits no longer in the remembered history (rewritten, or past the window)
    from_journal: int = 0  # commits taken from the journal of an earlier, interrupted build
    unread: int = 0  # commits whose object git could not read
    partial: int = 0  # commits read without some of their diff
    reasons: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def refresh(conn: Connection, root: Path, max_commits: int, journal: Path | None = None,
            progress: Callable[[int, int], None] | None = None) -> HistoryReport:
    """Remember the commits of HEAD's newest `max_commits` that are not remembered yet.

    `journal`: a file where each batch is also kept, durably, when `conn` is not (a base index is built
    in a throw-away file): commits found there are taken from it, so a killed build resumes.
    `progress(done, total)` after each batch stored: a first read of a long history takes minutes."""
    report = HistoryReport()
    head = git(root, "rev-parse", "HEAD").strip()
    if memory.read_meta(conn).get("last_commit") == head:
        return report
    shas, parents, note = history.listing(root, max_commits)
    if note:
        report.notes.append(note)
    stored = _remembered(conn)
    _drop(conn, stored - set(shas), report)
    todo = [sha for sha in shas if sha not in stored]
    kept = _journal(journal)
    try:
        unread = todo
        if kept is not None and journal is not None:
            report.from_journal = _take_over(conn, journal, todo)
            unread = [sha for sha in todo if sha not in _remembered(conn)]
        touches = Touches(partial(_contents, root))
        done = 0
        for batch, contents in _prefetched(root, unread, tuple(READERS)):
            rows = _rows(batch, touches, contents, report)
            if kept is not None:
                rows.write(kept)  # first where it lasts: a killed build starts again from here
            report.commits_added += rows.write(conn)
            done += len(batch)
            if progress is not None:
                progress(done, len(unread))
    finally:
        if kept is not None:
            kept.close()
    with conn:
        _link_merges(conn, [sha for sha in todo if len(parents.get(sha, ())) > 1], parents, shas[-1:])
        # both go with every answer: what could not be read, and where the listing of history was cut
        memory.write_meta(conn, last_commit=head, history_skipped=_summary(conn), history_listing=note)
    skipped = _summary(conn)
    if skipped:
        report.notes.append(skipped)
    return report


def _contents(root: Path, blobs: list[str]) -> dict[str, bytes | None]:
    """The blobs' contents; when git cannot even list them, none (each change is then skipped as unreadable)."""
    try:
        return history.blobs(root, blobs)
    except GitError:
        return dict.fromkeys(blobs)


def _journal(path: Path | None) -> Connection | None:
    if path is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = connect(path, vectors=False)
    memory.ensure_schema(kept, None)
    return kept


def _take_over(conn: Connection, journal: Path, todo: Sequence[str]) -> int:
    """Copy the commits of `todo` the journal holds (with what they touched, moved and link to)."""
    conn.execute("ATTACH DATABASE ? AS journal", (f"file:{journal}?mode=ro",))
    try:
        with conn:
            conn.execute("CREATE TEMP TABLE IF NOT EXISTS wanted (sha TEXT PRIMARY KEY)")
            conn.execute("DELETE FROM temp.wanted")
            conn.executemany("INSERT OR IGNORE INTO temp.wanted (sha) VALUES (?)", [(sha,) for sha in todo])
            last = conn.execute("SELECT coalesce(max(id), 0) FROM memory_items").fetchone()[0]
            conn.execute(
                "INSERT INTO memory_items (kind, source, anchor, title, body, symbols, paths, ts, content_hash)"
                " SELECT kind, source, anchor, title, body, symbols, paths, ts, content_hash FROM journal.memory_items"
                " WHERE kind = 'commit' AND source IN (SELECT sha FROM temp.wanted)")
            conn.execute("INSERT INTO memory_fts (rowid, title, body) SELECT id, title, body FROM memory_items"
                         " WHERE id > ?", (last,))
            for table in memory.HISTORY_TABLES:
                conn.execute(f"INSERT OR IGNORE INTO {table} SELECT * FROM journal.{table}"
                             f" WHERE commit_sha IN (SELECT sha FROM temp.wanted)")
            taken = int(conn.execute("SELECT count(*) FROM memory_items WHERE id > ?", (last,)).fetchone()[0])
    finally:
        conn.execute("DETACH DATABASE journal")
    return taken


def _remembered(conn: Connection) -> set[str]:
    stored = {str(r[0]) for r in conn.execute("SELECT source FROM memory_items WHERE kind = 'commit'")}
    return stored | {str(r[0]) for r in conn.execute("SELECT commit_sha FROM memory_skipped WHERE whole = 1")}


def _drop(conn: Connection, shas: set[str], report: HistoryReport) -> None:
    if not shas:
        return
    report.dropped = len(shas)
    with conn:
        memory.remove_sources(conn, "commit", shas)
        for table in ("memory_touches", "memory_moves", "memory_links", "memory_skipped"):
            conn.executemany(f"DELETE FROM {table} WHERE commit_sha = ?", [(sha,) for sha in shas])


def _prefetched(root: Path, todo: Sequence[str], patterns: Sequence[str]
                ) -> Iterator[tuple[list[Commit | Unread], dict[str, bytes | None]]]:
    """Batches with their blobs' contents, read by a second thread one batch ahead of the parsing."""
    ahead: queue.Queue[object] = queue.Queue(maxsize=1)
    stop = threading.Event()

    supplied: OrderedDict[str, None] = OrderedDict()  # blobs sent lately: the parser has them cached

    def read() -> None:
        try:
            for batch in history.read(root, todo, patterns):
                changes = [change for c in batch if isinstance(c, Commit) for change in c.changes]
                blobs = [b for change in changes for b in (change.old_blob, change.new_blob)
                         if b and b not in supplied]
                for change in changes:
                    supplied[change.new_blob] = None
                    supplied.move_to_end(change.new_blob)
                while len(supplied) > CACHED_VERSIONS // 4:  # well inside what the parser keeps
                    supplied.popitem(last=False)
                item: object = (batch, _contents(root, blobs))
                while not stop.is_set():
                    try:
                        ahead.put(item, timeout=0.5)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
        except BaseException as exc:  # handed to the consumer, which raises it
            ahead.put(exc)
        ahead.put(None)

    reader = threading.Thread(target=read, name="memory-history", daemon=True)
    reader.start()
    try:
        while (item := ahead.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        reader.join(timeout=5)


@dataclass
class _Rows:
    """What a batch of commits adds to memory, to be written to the index (and the journal)."""

    items: list[MemoryItem] = field(default_factory=list)
    touches: list[tuple[object, ...]] = field(default_factory=list)
    moves: list[tuple[object, ...]] = field(default_factory=list)
    links: list[tuple[object, ...]] = field(default_factory=list)
    skipped: list[tuple[object, ...]] = field(default_factory=list)

    def write(self, conn: Connection) -> int:
        """Store the rows in one transaction (a batch already there is replaced, so writing twice is harmless)."""
        shas = list(dict.fromkeys([item.source for item in self.items] + [str(row[0]) for row in self.skipped]))
        with conn:
            there = _present(conn, shas)
            if there:
                memory.remove_sources(conn, "commit", there)
                for table in memory.HISTORY_TABLES:
                    conn.executemany(f"DELETE FROM {table} WHERE commit_sha = ?", [(sha,) for sha in there])
            conn.executemany(
                "INSERT INTO memory_touches (commit_sha, fqn, kind, path, old_path, lines, change, old_start, old_end,"
                " new_start, new_end, words, ts, merge) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                self.touches)
            conn.executemany("INSERT INTO memory_moves (commit_sha, old_fqn, new_fqn, ts) VALUES (?, ?, ?, ?)",
                             self.moves)
            conn.executemany("INSERT OR IGNORE INTO memory_links (commit_sha, ref, via) VALUES (?, ?, ?)", self.links)
            conn.executemany("INSERT INTO memory_skipped (commit_sha, reason, whole) VALUES (?, ?, ?)", self.skipped)
            return memory.add_items(conn, self.items)


def _present(conn: Connection, shas: list[str]) -> list[str]:
    """Which of `shas` `conn` already holds (a journal written by an earlier build of the same commits)."""
    found: list[str] = []
    for start in range(0, len(shas), 500):
        part = shas[start:start + 500]
        marks = ",".join("?" * len(part))
        found += [str(r[0]) for r in conn.execute(
            f"SELECT source FROM memory_items WHERE kind = 'commit' AND source IN ({marks}) UNION "
            f"SELECT commit_sha FROM memory_skipped WHERE commit_sha IN ({marks})", (*part, *part))]
    return found


def _rows(batch: list[Commit | Unread], touches: Touches, contents: dict[str, bytes | None],
          report: HistoryReport) -> _Rows:
    """The rows of a batch: each commit's item, what it touched and moved, its links, what was not read."""
    rows = _Rows()
    for commit in batch:
        if isinstance(commit, Unread):
            report.unread += 1
            rows.skipped.append((commit.sha, commit.reason, 1))
            _count(report, commit.reason)
            continue
        found, moves = touches.of(commit, contents)
        rows.touches += [_touch_row(commit, t) for t in found]
        rows.moves += [(commit.sha, m.old_fqn, m.new_fqn, commit.time) for m in dict.fromkeys(moves)]
        rows.links += [(commit.sha, ref, "") for ref in refs(f"{commit.subject}\n\n{commit.body}")]
        if commit.skipped:
            report.partial += 1
        for reason in commit.skipped:
            rows.skipped.append((commit.sha, reason, 0))
            _count(report, reason)
        rows.items.append(MemoryItem(
            "commit", commit.sha, "", commit.subject, commit.body or commit.subject,
            tuple(t.fqn for t in found[:MAX_SYMBOLS]), commit.paths[:MAX_PATHS], commit.time, commit.sha))
    return rows


def _touch_row(commit: Commit, t: Touch) -> tuple[object, ...]:
    old = t.old_span or (None, None)
    new = t.new_span or (None, None)
    return (commit.sha, t.fqn, t.kind, t.path, t.old_path, t.lines, t.change, old[0], old[1], new[0], new[1], t.words,
            commit.time, int(len(commit.parents) > 1))


def _count(report: HistoryReport, reason: str) -> None:
    kind = _reason_kind(reason)
    report.reasons[kind] = report.reasons.get(kind, 0) + 1


def _reason_kind(reason: str) -> str:
    """A reason without the path or object it names, to count alike ones together."""
    text = reason.split(": ", 1)[1] if ": " in reason and not reason.startswith(("diff", "files")) else reason
    return re.sub(r"\b[0-9a-f]{7,40}\b", "…", re.sub(r"\d+(\.\d+)? MiB", "N MiB", text))


def _summary(conn: Connection) -> str:
    """"history: 3 commits unreadable (commit object unreadable); 2 read without part of their diff (…)"."""
    rows = conn.execute("SELECT commit_sha, reason, whole FROM memory_skipped").fetchall()
    if not rows:
        return ""
    whole = {str(r[0]) for r in rows if r[2]}
    partial = {str(r[0]) for r in rows if not r[2]} - whole
    kinds: dict[str, int] = {}
    for row in rows:
        kinds[_reason_kind(str(row[1]))] = kinds.get(_reason_kind(str(row[1])), 0) + 1
    top = "; ".join(f"{reason}: {n}" for reason, n in sorted(kinds.items(), key=lambda kv: -kv[1])[:4])
    parts = []
    if whole:
        parts.append(f"{len(whole)} commit{'s' * (len(whole) != 1)} skipped (unreadable)")
    if partial:
        parts.append(f"{len(partial)} commit{'s' * (len(partial) != 1)} remembered without part of their diff")
    return f"history: {', '.join(parts)} ({top})"


def refs(message: str) -> list[str]:
    """Merge requests and issues a commit message names: "change 12", "issue 7", or "#9" (either)."""
    found: dict[str, None] = {}
    for match in _CHANGE_REF.finditer(message):
        found[f"change {next(g for g in match.groups() if g)}"] = None
    for match in _ISSUE_REF.finditer(message):
        found.setdefault(f"issue {match.group(1)}", None)
    for match in _ANY_REF.finditer(message):
        if f"change {match.group(1)}" not in found and f"issue {match.group(1)}" not in found:
            found[f"#{match.group(1)}"] = None
    return list(found)


def _link_merges(conn: Connection, merges: Sequence[str], parents: dict[str, tuple[str, ...]],
                 head: Sequence[str]) -> None:
    """The commits a merge of a change brought in belong to that change too."""
    if not merges or not head:
        return
    brought = _brought(parents, head[0])
    for merge in merges:
        row = conn.execute("SELECT title, body FROM memory_items WHERE kind = 'commit' AND source = ?",
                           (merge,)).fetchone()
        if row is None:
            continue
        changes = [r for r in refs(f"{row[0]}\n\n{row[1]}") if r.startswith("change ")]
        conn.executemany("INSERT OR IGNORE INTO memory_links (commit_sha, ref, via) VALUES (?, ?, ?)",
                         [(sha, ref, merge) for sha in brought.get(merge, ()) for ref in changes[:1]])


def _brought(parents: dict[str, tuple[str, ...]], head: str) -> dict[str, list[str]]:
    """For each merge on HEAD's first-parent line, the commits it brought in (not reachable before it)."""
    wanted = parents.keys()
    mainline: list[str] = []
    sha = head
    while sha in wanted:
        mainline.append(sha)
        first = parents.get(sha, ())
        sha = first[0] if first else ""
    seen: set[str] = set(mainline)
    brought: dict[str, list[str]] = {}
    for merge in reversed(mainline):
        frontier = [p for p in parents.get(merge, ())[1:] if p in wanted and p not in seen]
        found: list[str] = []
        while frontier:
            sha = frontier.pop()
            if sha in seen or sha not in wanted:
                continue
            seen.add(sha)
            found.append(sha)
            frontier += parents.get(sha, ())
        if found:
            brought[merge] = found
    return brought
