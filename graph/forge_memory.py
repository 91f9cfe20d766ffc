"""Project memory from the forge: merged changes, closed issues, and the bot's findings with their answers.

Discussions say why a change was made and what was decided on the way. They are read through the
Forge protocol (`list_closed`, `list_comments`) at each task start, incrementally (from the last
update seen, at most `memory.discussions_per_sync` of each kind), and kept in a per-repository store
under the data directory so the next task reads only what is new. Every task's index then takes
the store's items into its memory (`remember`).

A GitLab confidential issue and an internal note are never stored: they are for the project's
members only, and memory text reaches comments anyone may read (an analysis report on a public
issue). Only members' text is stored, by the decomposer's rule (`graph.discussion.is_member`: write access,
asked of the forge): a title or description by a non-member is left out with its item, a non-member's
comment is dropped. Anyone can comment on a public issue, and memory text reaches model prompts
through `search_memory` and the context engine. The bot's own review findings on a merged change are
kept with the members' replies in their thread ("the authors' answers"), as items of kind `finding`;
a comment is the bot's by its author (`Forge.bot`), never by the hidden marker in its text, which
anyone can type: a non-member's note carrying one passes the member check like any other.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from foundation.forge import BotIdentity, ChangeRef, Closed, Comment, Forge, ForgeError, IssueRef, RepoRef
from foundation.workspace import repo_key
from graph.discussion import is_member
from project.index import memory
from project.index.db import Connection, connect
from project.index.memory import MemoryItem
from project.index.mentions import SymbolIndex

log = logging.getLogger(__name__)

KINDS = ("discussion", "finding")
MAX_TEXT = 6000
_MARKER = re.compile(r"<!--\s*forgebot:.*?-->", re.S)


@dataclass
class Fetched:
    """What one read of the forge brought: items to remember and where the next read starts."""

    items: list[MemoryItem] = field(default_factory=list)
    cursors: dict[str, str] = field(default_factory=dict)  # "issue"/"change" → last `updated_at` seen
    withheld: int = 0  # texts left out because their author has no write access
    notes: list[str] = field(default_factory=list)


def store_path(data_dir: Path, repo: RepoRef) -> Path:
    """`<data_dir>/memory/<forge>--<project>.sqlite`: the repository's remembered discussions."""
    return data_dir / "memory" / f"{repo_key(repo.forge, repo.project)}.sqlite"


def _source(ref: IssueRef | ChangeRef) -> str:
    return f"{ref.kind} {ref.number}"


def _item(kind: str, source: str, anchor: str, title: str, body: str) -> MemoryItem:
    text = body[:MAX_TEXT]
    digest = hashlib.sha256(f"{title}\n{text}".encode()).hexdigest()[:24]
    return MemoryItem(kind, source, anchor, title, text, (), (), 0.0, digest)


class _Members:
    """Authors' write access, asked of the forge once per author per read; unknown access is no access."""

    def __init__(self, forge: Forge) -> None:
        self._forge, self._seen = forge, dict[tuple[str, int], bool]()

    async def __call__(self, ref: IssueRef | ChangeRef, author: str, author_id: int) -> bool:
        if (author, author_id) not in self._seen:
            try:
                self._seen[(author, author_id)] = await is_member(self._forge, ref, author, author_id)
            except ForgeError:  # fail closed
                self._seen[(author, author_id)] = False
        return self._seen[(author, author_id)]


async def _members_text(
    members: _Members, closed: Closed, comments: list[Comment], bot: BotIdentity, fetched: Fetched
) -> list[MemoryItem]:
    """The discussion item (members' title, description and comments) and the bot's findings with answers."""
    ref = closed.ref

    async def member(author: str, author_id: int) -> bool:
        return await members(ref, author, author_id)

    source, word = _source(ref), "merged change" if ref.kind == "change" else "closed issue"
    lines: list[str] = []
    title = f"{word} {ref.number}"
    if await member(closed.author, closed.author_id):
        title = f"{word} {ref.number}: {closed.title}"
        lines.append(closed.body)
    else:
        fetched.withheld += 1
    findings: dict[str, list[str]] = {}
    for comment in comments:
        # an internal note is for members only, and memory text reaches public comments
        if comment.system or comment.internal:
            continue
        if bot.wrote(comment):  # by its author: a marker anyone can type makes no finding
            # a finding is a diff note; status and summary comments are not kept
            if ref.kind == "change" and comment.path and comment.ref.thread:
                findings.setdefault(comment.ref.thread, []).append(_MARKER.sub("", comment.body).strip())
            continue
        if not await member(comment.author, comment.author_id):
            fetched.withheld += 1
            continue
        if comment.ref.thread in findings:
            findings[comment.ref.thread].append(f"@{comment.author} answered: {comment.body}")
        else:
            lines.append(f"@{comment.author}: {comment.body}")
    items = []
    body = "\n\n".join(line for line in lines if line.strip())
    if body or title != f"{word} {ref.number}":
        items.append(_item("discussion", source, "", title, body or title))
    for thread, texts in findings.items():
        items.append(_item("finding", source, thread, f"review finding on {word} {ref.number}", "\n\n".join(texts)))
    return items


async def fetch(forge: Forge, repo: RepoRef, store: Path, *, limit: int) -> Fetched:
    """Merged changes and closed issues updated since the store's cursors, as members-only items.

    A forge error ends the read where it is (the items read so far are kept): memory is an aid, and a
    task must not fail because the forge's listing is unavailable.
    """
    fetched = Fetched()
    if limit <= 0:
        return fetched
    cursors, members = _cursors(store), _Members(forge)
    kinds: tuple[Literal["change", "issue"], ...] = ("change", "issue")
    for kind in kinds:
        try:
            listed = await forge.list_closed(repo, kind, cursors.get(kind, ""), limit)
            for closed in listed:
                comments = await forge.list_comments(closed.ref)
                fetched.items += await _members_text(members, closed, comments, forge.bot, fetched)
                fetched.cursors[kind] = max(fetched.cursors.get(kind, ""), closed.updated_at)
        except ForgeError as exc:
            fetched.notes.append(f"{kind} discussions not read: {exc}")
            log.warning("memory: %s discussions of %s not read: %s", kind, repo.path, exc)
    return fetched


def _open_store(store: Path) -> Connection:
    store.parent.mkdir(parents=True, exist_ok=True)
    conn = connect(store, vectors=False)
    memory.ensure_schema(conn, None)
    return conn


def _cursors(store: Path) -> dict[str, str]:
    if not store.is_file():
        return {}
    with closing(_open_store(store)) as conn:
        meta = memory.read_meta(conn)
    return {kind: meta[f"since:{kind}"] for kind in ("change", "issue") if f"since:{kind}" in meta}


def remember(store: Path, index: Path, fetched: Fetched) -> int:
    """Keep `fetched` in the store (symbols resolved against `index`'s graph), then bring the task
    index's discussions in line with the store; returns how many items the index took in."""
    with closing(_open_store(store)) as kept, closing(connect(index)) as conn:
        memory.ensure_schema(conn, None)
        by_source: dict[str, list[MemoryItem]] = {}
        names = SymbolIndex.of(conn) if fetched.items else SymbolIndex.live(conn)
        for item in fetched.items:
            symbols = names.resolve(f"{item.title}\n{item.body}")
            by_source.setdefault(item.source, []).append(
                MemoryItem(item.kind, item.source, item.anchor, item.title, item.body, symbols, item.paths, item.ts,
                           item.content_hash))
        with kept:
            for source, items in by_source.items():  # a re-read source replaces all its items, of each kind
                for kind in KINDS:
                    memory.replace_source(kept, kind, source, [i for i in items if i.kind == kind])
            memory.write_meta(kept, **{f"since:{k}": v for k, v in fetched.cursors.items()})
        return _sync(kept, conn)


def _sync(kept: Connection, conn: Connection) -> int:
    """Copy the store's items whose text the index lacks, drop the ones the store no longer has."""
    added = 0
    with conn:
        for kind in KINDS:
            wanted, have = _by_source(memory.hashes(kept, kind)), _by_source(memory.hashes(conn, kind))
            memory.remove_sources(conn, kind, set(have) - set(wanted))
            for source in sorted(s for s, versions in wanted.items() if have.get(s) != versions):
                items = [_row_item(row) for row in kept.execute(
                    "SELECT kind, source, anchor, title, body, symbols, paths, ts, content_hash FROM memory_items "
                    "WHERE kind = ? AND source = ?", (kind, source))]
                added += memory.replace_source(conn, kind, source, items)
    return added


def _by_source(hashes: dict[tuple[str, str], str]) -> dict[str, set[tuple[str, str]]]:
    grouped: dict[str, set[tuple[str, str]]] = {}
    for (source, anchor), digest in hashes.items():
        grouped.setdefault(source, set()).add((anchor, digest))
    return grouped


def _row_item(row: tuple[object, ...]) -> MemoryItem:
    return MemoryItem(str(row[0]), str(row[1]), str(row[2]), str(row[3]), str(row[4]),
                      tuple(json.loads(str(row[5]))), tuple(json.loads(str(row[6]))), float(str(row[7])), str(row[8]))
