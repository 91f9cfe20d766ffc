"""The issue's text as a task sees it: snapshotted once, and only what project members wrote.

Issue and comment text from users without write access (GitLab Developer, GitHub write) never
reaches a model prompt: anyone can comment on a public issue, and a comment is an easy place to
hide instructions. Access is asked of the forge (`Forge.user_access`), never read from the payload.
The snapshot is taken when the task starts and kept in the checkpoint, so a comment edited later
does not change the task, and a resumed run does not read the issue again.

A GitLab internal note is left out too, whoever wrote it: only members (Reporter and up) read it,
while what the task writes from its snapshot (an analysis, a plan, a merge request's criteria) is
read by everyone who sees the issue or the project. It is named in `withheld`, without its text.

A long-running issue's thread can outgrow the model's context window (forty comments of logs fill a
local model's 8,000 tokens): the snapshot keeps the newest comments that fit half of the window's
prompt (`fitted`, which cuts the first that does not fit), the rest of the request being the roles'
own, and names how many earlier ones it left out. Before, the decomposer's first request stopped the
task as "window too small".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from foundation.forge import AccessLevel, ChangeRef, Forge, ForgeUser, IssueRef
from graph.runtime.budget import estimate_tokens

REQUIRED = AccessLevel.DEVELOPER
WITHHELD_QUESTION = (
    "This issue was written by someone without write access to the repository, so I do not use its "
    "text. Could a project member restate the task in a reply?"
)


MIN_CUT_TOKENS = 200  # room below which a comment that does not fit is left out rather than cut


def fitted(discussion: list[dict[str, Any]], tokens: int) -> tuple[list[dict[str, Any]], int]:
    """The newest comments whose text fits `tokens`, in their order, and how many earlier ones are left out.

    The first comment (from the newest) that does not fit is cut to the room left, its beginning and its
    end kept (a pasted log's last lines are its error): a giant newest comment would otherwise leave
    out the whole thread, itself included."""
    kept: list[dict[str, Any]] = []
    room = tokens
    for comment in reversed(discussion):
        size = estimate_tokens(f"@{comment['author']}: {comment['body']}\n")
        if size <= room:
            kept.append(comment)
            room -= size
            continue
        if room >= MIN_CUT_TOKENS:
            kept.append({**comment, "body": _cut(comment["body"], room - estimate_tokens(comment["author"]) - 40)})
        break
    return kept[::-1], len(discussion) - len(kept)


def _cut(text: str, tokens: int) -> str:
    """`text` within `tokens` (3 UTF-8 bytes each): its beginning and its end, and how much is gone between."""
    half = max(0, tokens * 3 // 2 - 60)
    data = text.encode("utf-8")
    head = data[:half].decode("utf-8", "ignore")
    tail = data[-half:].decode("utf-8", "ignore") if half else ""
    gone = len(data) - len(head.encode("utf-8")) - len(tail.encode("utf-8"))
    return f"{head}\n[… {gone} bytes cut to fit the model's context window …]\n{tail}"


@dataclass
class Snapshot:
    """What the decomposer and analyzer may read of the issue."""

    title: str
    body: str
    discussion: list[dict[str, Any]] = field(default_factory=list)  # {"author", "body"} by members
    withheld: list[str] = field(default_factory=list)  # what was left out and why (no text)

    def state(self) -> dict[str, Any]:
        return {"title": self.title, "body": self.body, "discussion": self.discussion, "withheld": self.withheld}


class _Access:
    """Access levels of authors, asked once per author per snapshot."""

    def __init__(self, forge: Forge, ref: IssueRef | ChangeRef) -> None:
        self._forge, self._ref, self._seen = forge, ref, dict[tuple[int, str], AccessLevel]()

    async def member(self, author: str, author_id: int) -> bool:
        key = (author_id, author)
        if key not in self._seen:
            user = ForgeUser(id=author_id, username=author)
            self._seen[key] = await self._forge.user_access(self._ref.repo, user)
        return self._seen[key] >= REQUIRED


async def is_member(forge: Forge, ref: IssueRef | ChangeRef, author: str, author_id: int) -> bool:
    """Whether `author` has write access to the repository of `ref` (the same rule as the snapshot)."""
    return await _Access(forge, ref).member(author, author_id)


async def take_snapshot(forge: Forge, ref: IssueRef, title: str, body: str, tokens: int) -> Snapshot:
    """Read the issue's comments and keep the text only of authors with write access, the newest that
    fit `tokens` (`fitted`).

    `title` and `body` are the ones the trigger carried (the issue as the user saw it then).
    """
    issue = await forge.get_issue(ref)
    access = _Access(forge, ref)
    snapshot = Snapshot(title=title, body=body)
    if not await access.member(issue.author, issue.author_id):
        snapshot.title, snapshot.body = "", ""
        snapshot.withheld.append(f"issue title and description: @{issue.author} has no write access")
    for comment in issue.comments:
        if comment.system or forge.bot.wrote(comment):  # the bot's own text, known by its author
            continue
        if comment.internal:
            snapshot.withheld.append(f"comment {comment.ref.id}: an internal note, and what forgebot writes here is "
                                     "not internal")
        elif await access.member(comment.author, comment.author_id):
            snapshot.discussion.append({"author": comment.author, "body": comment.body})
        else:
            snapshot.withheld.append(f"comment {comment.ref.id}: @{comment.author} has no write access")
    snapshot.discussion, left = fitted(snapshot.discussion, tokens)
    if left:
        snapshot.withheld.append(f"the {left} earliest comment(s) by members: the model's context window "
                                 "holds only the newest")
    return snapshot
