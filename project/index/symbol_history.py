"""A symbol's history: the commits that changed it, followed across edits, moves and renames.

This is what answers "why is this here" and "when did this change": the answer is in the symbol's
history, which git knows exactly, not in text similarity. Memory already holds, for every commit, the
declarations it touched on the file as of that commit (`memory_touches`) and the names that moved
where (`memory_moves`), so a symbol's history is a lookup: its name today, every name it had before
(a method renamed, a class whose file moved to another namespace, a method moved from another class),
and the commits that touched any of them, newest first. Each comes with its message, the merge
request or issue it belongs to (with its title when memory has the discussion), and the hunk, read
from git for the commits shown.

Merge commits are left out: the commits they brought in are listed themselves, each linked to the
merge request that brought it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from foundation.gitrunner import GitError
from project.index import history as git_history
from project.index.db import Connection
from project.index.entrypoints import words
from project.index.mentions import SymbolIndex, has_graph
from project.index.queries import canonical

MAX_SYMBOLS = 3  # the symbols of a question whose histories are searched
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class Step:
    """One commit in a symbol's history."""

    sha: str
    time: float
    subject: str
    body: str
    name: str  # the symbol's name at that commit
    path: str  # its file at that commit
    change: str  # "added", "removed" or "changed"
    lines: int  # changed lines inside it
    links: tuple[str, ...]  # "change 12: Speed up the cache", "issue 7", "#9"
    hunk: str  # the diff's hunks that touch it ("" when not read)

    def as_dict(self) -> dict[str, object]:
        return {"sha": self.sha, "time": self.time, "subject": self.subject, "body": self.body, "name": self.name,
                "path": self.path, "change": self.change, "lines": self.lines, "links": list(self.links),
                "hunk": self.hunk}


@dataclass(frozen=True)
class SymbolHistory:
    asked: str
    name: str  # the fully qualified name the question resolved to
    exists: bool  # whether the code graph has it today
    names: tuple[str, ...]  # every name it had: today's first, then older ones
    steps: tuple[Step, ...]
    notes: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        return {"asked": self.asked, "name": self.name, "exists": self.exists, "names": list(self.names),
                "steps": [s.as_dict() for s in self.steps], "notes": list(self.notes)}


def resolve(conn: Connection, asked: str) -> tuple[str, list[str]]:
    """The fully qualified name `asked` means (a full name, `Class::member`, a class or method name) and
    the other candidates when it is ambiguous; "" when it names nothing the graph or history knows."""
    name = asked.strip().lstrip("\\").replace("->", "::")
    if _known(conn, name):
        return name, []
    if has_graph(conn):  # Python's and TypeScript's `Ledger.close`, `pkg.mod.Ledger.close`, a re-export
        read = canonical(conn, name)
        if read != name and _known(conn, read):
            return read, []
    index = SymbolIndex.live(conn, question=True)
    found: list[str] = []
    for form, token in _forms(name):
        found = index.lookup(form, token, ambiguous=None)
        if found:
            break
    return (found[0], []) if len(found) == 1 else ("", found)


def _forms(name: str) -> list[tuple[str, str]]:
    if "\\" in name:
        return [("qualified", name)]
    if "::" in name:
        return [("member", name)]
    return [("camel", name), ("call", name)] if name[:1].isupper() else [("call", name)]


def _known(conn: Connection, name: str) -> bool:
    if has_graph(conn) and conn.execute("SELECT 1 FROM symbols WHERE fqn = ? LIMIT 1", (name,)).fetchone() is not None:
        return True
    return conn.execute("SELECT 1 FROM memory_touches WHERE fqn = ? LIMIT 1", (name,)).fetchone() is not None


def names(conn: Connection, fqn: str) -> list[str]:
    """`fqn` and every name it had before: renames and moves recorded by history, followed backwards;
    a member of a class that moved had the class's old name too."""
    found = [fqn]
    frontier = [fqn]
    while frontier and len(found) < 64:
        name = frontier.pop()
        older = [str(r[0]) for r in conn.execute("SELECT old_fqn FROM memory_moves WHERE new_fqn = ?", (name,))]
        if "::" in name:
            owner, member = name.split("::", 1)
            older += [f"{r[0]}::{member}" for r in conn.execute("SELECT old_fqn FROM memory_moves WHERE new_fqn = ?",
                                                                 (owner,))]
        for old in older:
            if old not in found:
                found.append(old)
                frontier.append(old)
    return found


def history(conn: Connection, root: Path | None, asked: str, *, limit: int = 20, hunk_lines: int = 40
            ) -> SymbolHistory:
    """The commits that changed the symbol `asked` names, newest first, with their hunks read from the
    checkout at `root` (none when `root` is None)."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_touches'").fetchone() is None:
        return SymbolHistory(asked, "", False, (), (), ("no project memory in this index (built before memory "
                                                        "existed, or memory is still being built)",))
    name, others = resolve(conn, asked)
    if not name:
        why = f"ambiguous: {', '.join(others[:8])}" if others else "no such symbol in the code graph or the history"
        return SymbolHistory(asked, "", False, (), (), (f"{asked}: {why}",))
    all_names = names(conn, name)
    rows = _touches(conn, all_names, limit)
    order = {n: i for i, n in enumerate(all_names)}
    once: dict[str, tuple[object, ...]] = {}
    for row in rows:  # a rename touches the old and the new name in one commit: it is one step
        if str(row[0]) not in once or order[str(row[1])] < order[str(once[str(row[0])][1])]:
            once[str(row[0])] = row
    rows = list(once.values())
    notes: list[str] = []
    hunks: dict[str, dict[str, bytes]] = {}
    if root is not None and rows:
        paths = [p for r in rows for p in (str(r[2]), str(r[3])) if p]
        try:
            hunks = git_history.patches(root, [str(r[0]) for r in rows], paths)
        except GitError as exc:
            notes.append(f"hunks not read: {exc}")
    steps = tuple(_step(conn, row, hunks, hunk_lines) for row in rows)
    exists = has_graph(conn) and conn.execute("SELECT 1 FROM symbols WHERE fqn = ? LIMIT 1",
                                              (name,)).fetchone() is not None
    if not steps:
        notes.append(f"{name}: no remembered commit touched it")
    shown = [n for n in all_names if n == name or conn.execute(
        "SELECT 1 FROM memory_touches WHERE fqn = ? LIMIT 1", (n,)).fetchone() is not None]
    return SymbolHistory(asked, name, exists, tuple(shown), steps, tuple(notes))


def _touches(conn: Connection, fqns: Sequence[str], limit: int) -> list[tuple[object, ...]]:
    marks = ",".join("?" * len(fqns))
    return [tuple(r) for r in conn.execute(
        f"SELECT t.commit_sha, t.fqn, t.path, t.old_path, t.change, t.lines, t.old_start, t.old_end, t.new_start,"
        f" t.new_end, t.ts, i.title, i.body FROM memory_touches t JOIN memory_items i"
        f" ON i.kind = 'commit' AND i.source = t.commit_sha"
        f" WHERE t.fqn IN ({marks}) AND t.merge = 0 ORDER BY t.ts DESC LIMIT ?", (*fqns, limit))]


def _step(conn: Connection, row: tuple[object, ...], hunks: dict[str, dict[str, bytes]], hunk_lines: int) -> Step:
    sha, fqn, path, _old_path, change, lines, old_start, old_end, new_start, new_end, ts, subject, body = row
    part = hunks.get(str(sha), {}).get(str(path), b"")
    span = (new_start, new_end) if new_start is not None else (old_start, old_end)
    hunk = _hunks(part.decode("utf-8", "replace"), span, new_start is not None, hunk_lines)
    body_text = str(body) if str(body) != str(subject) else ""
    return Step(str(sha), float(str(ts)), str(subject), body_text, str(fqn), str(path), str(change),
                int(str(lines)), tuple(links(conn, str(sha))), hunk)


def _hunks(patch: str, span: tuple[object, object], new_side: bool, limit: int) -> str:
    """The hunks of `patch` whose lines (new side, or old side for a removed symbol) meet `span`."""
    if span[0] is None or not patch:
        return ""
    first, last = int(str(span[0])), int(str(span[1]))
    kept: list[str] = []
    current: list[str] = []
    keep = False
    for line in patch.splitlines():
        header = _HUNK.match(line)
        if header:
            if keep:
                kept += current
            start = int(header[3] if new_side else header[1])
            count = int((header[4] if new_side else header[2]) or 1)
            keep = start <= last and first <= start + max(count, 1) - 1
            current = [line]
        elif current:
            current.append(line)
    if keep:
        kept += current
    if len(kept) > limit:
        kept = [*kept[:limit], f"… {len(kept) - limit} more lines"]
    return "\n".join(kept)


# links shown in a commit's line of the text: a squash merge can name a hundred changes in its message (zod's
# "Zod 4" commit: 99), which made one line of 1,300 characters in a tool answer that a small context pays for
MAX_LINKS = 8


def links(conn: Connection, sha: str) -> list[str]:
    """The merge requests and issues a commit belongs to, titled when memory has their discussion; in the
    order its message names them (the subject's first)."""
    out = []
    for (ref,) in conn.execute("SELECT ref FROM memory_links WHERE commit_sha = ? GROUP BY ref "
                               "ORDER BY min(via), min(rowid)", (sha,)):
        ref = str(ref)
        sources = [f"change {ref[1:]}", f"issue {ref[1:]}"] if ref.startswith("#") else [ref]
        row = next((r for s in sources for r in conn.execute(
            "SELECT source, title FROM memory_items WHERE kind = 'discussion' AND source = ? LIMIT 1", (s,))), None)
        out.append(f"{row[0]}: {row[1]}" if row is not None else ref)
    return out


def named(conn: Connection, query: str) -> list[str]:
    """The symbols a question is about, at most MAX_SYMBOLS: the ones it names in full (`Class::method`,
    a namespaced name) first, then bare class or method names."""
    index = SymbolIndex.live(conn, question=True)
    explicit: dict[str, None] = {}
    bare: dict[str, None] = {}
    for form, fqns in index.named(query):
        for fqn in fqns:
            (explicit if form in ("member", "qualified", "dotted") else bare)[fqn] = None
    return list({**explicit, **bare})[:MAX_SYMBOLS]


def ranked_commits(conn: Connection, query: str, limit: int = 50) -> list[str]:
    """Commits in the history of the symbols a question names, best first: those whose added lines in
    the symbol share the most of the question's other words (the line asked about), then the newest."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_touches'").fetchone() is None:
        return []
    symbols = named(conn, query)
    if not symbols:
        return []
    asked = set(words(query)) - {w for s in symbols for w in words(s.replace("\\", " ").replace("::", " "))}
    scored: dict[str, tuple[int, float]] = {}
    for symbol in symbols:
        every = names(conn, symbol)
        marks = ",".join("?" * len(every))
        for sha, said, ts in conn.execute(
                f"SELECT commit_sha, words, ts FROM memory_touches WHERE fqn IN ({marks}) AND merge = 0", every):
            score = (len(asked & set(str(said).split())), float(ts))
            scored[str(sha)] = max(scored.get(str(sha), score), score)
    return [sha for sha, _ in sorted(scored.items(), key=lambda item: item[1], reverse=True)[:limit]]


def render(answer: SymbolHistory, notes: Sequence[str] = ()) -> str:
    """The history as text: the symbol and its former names, then one block per commit."""
    lines: list[str] = []
    if answer.name:
        today = answer.name if answer.exists else f"{answer.name} (no longer in the code)"
        lines.append(f"{today}" + (f"  — formerly {', '.join(answer.names[1:])}" if len(answer.names) > 1 else ""))
    for step in answer.steps:
        when = datetime.fromtimestamp(step.time, UTC).strftime("%Y-%m-%d")
        lines.append("")
        lines.append(f"{step.sha[:12]}  {when}  {step.subject}")
        detail = f"  {step.change} {step.name} in {step.path} ({step.lines} lines)"
        shown = [*step.links[:MAX_LINKS], f"{len(step.links) - MAX_LINKS} more"] \
            if len(step.links) > MAX_LINKS + 1 else step.links
        lines.append(detail + (f"; {'; '.join(shown)}" if shown else ""))
        if step.body:
            lines += [f"  {line}" for line in step.body.splitlines()[:6]]
        if step.hunk:
            lines += [f"    {line}" for line in step.hunk.splitlines()]
    lines += [f"# {note}" for note in [*notes, *answer.notes]]
    return "\n".join(lines) + "\n"
