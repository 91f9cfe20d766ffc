"""The Forge protocol: what the bot does on a forge, in forge-neutral words."""

from __future__ import annotations

from typing import Protocol

from bot.forge.models import AccessLevel, CommentRef, ForgeKind, ForgeUser, Issue, IssueRef, RepoRef


class Forge(Protocol):
    kind: ForgeKind

    async def get_issue(self, ref: IssueRef) -> Issue:
        """Read an issue's title, body, labels and author."""
        ...

    async def post_comment(self, ref: IssueRef, body: str) -> CommentRef:
        """Post a new comment on the issue."""
        ...

    async def user_access(self, repo: RepoRef, user: ForgeUser) -> AccessLevel:
        """The user's effective access to the repository, read through the forge's permission API."""
        ...
