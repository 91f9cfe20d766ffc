"""FakeForge: an in-memory implementation of the Forge protocol for tests above the adapters."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from bot.forge import AccessLevel, CommentRef, ForgeKind, ForgeNotFound, ForgeUser, Issue, IssueRef, RepoRef


@dataclass
class FakeForge:
    kind: ForgeKind = "gitlab"
    issues: dict[IssueRef, Issue] = field(default_factory=dict)
    comments: dict[IssueRef, list[str]] = field(default_factory=dict)
    access: dict[tuple[str, int], AccessLevel] = field(default_factory=dict)  # (project, user id)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def get_issue(self, ref: IssueRef) -> Issue:
        if ref not in self.issues:
            raise ForgeNotFound(f"issue {ref.number}")
        return self.issues[ref]

    async def post_comment(self, ref: IssueRef, body: str) -> CommentRef:
        self.comments.setdefault(ref, []).append(body)
        return CommentRef(issue=ref, id=next(self._ids))

    async def user_access(self, repo: RepoRef, user: ForgeUser) -> AccessLevel:
        return self.access.get((repo.project, user.id), AccessLevel.NONE)
