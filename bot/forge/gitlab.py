"""GitLabForge: the Forge protocol over python-gitlab."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

import gitlab
import requests
from gitlab.exceptions import GitlabError, GitlabGetError

from bot.forge.errors import ForgeError, ForgeUnavailable, error_for_status
from bot.forge.models import AccessLevel, CommentRef, ForgeKind, ForgeUser, Issue, IssueRef, RepoRef

T = TypeVar("T")


def _mapped(exc: Exception) -> ForgeError:
    if isinstance(exc, GitlabError):
        status = exc.response_code or 0
        retry = None
        if status == 429 and exc.response_body:
            retry = 60.0
        return error_for_status(status, f"gitlab: {exc.error_message}", retry)
    return ForgeUnavailable(f"gitlab: {type(exc).__name__}")


class GitLabForge:
    """A GitLab instance reached through an injected `gitlab.Gitlab` client."""

    kind: ForgeKind = "gitlab"

    def __init__(self, client: gitlab.Gitlab) -> None:
        self._gl = client

    async def _call(self, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(fn)
        except (GitlabError, requests.RequestException) as exc:
            raise _mapped(exc) from None

    async def get_issue(self, ref: IssueRef) -> Issue:
        def fetch() -> Issue:
            issue = self._gl.projects.get(ref.repo.project, lazy=True).issues.get(ref.number)
            return Issue(
                ref=ref,
                title=str(issue.title),
                body=str(issue.description or ""),
                labels=tuple(str(label) for label in issue.labels),
                author=str(issue.author["username"]),
            )

        return await self._call(fetch)

    async def post_comment(self, ref: IssueRef, body: str) -> CommentRef:
        def create() -> CommentRef:
            issue = self._gl.projects.get(ref.repo.project, lazy=True).issues.get(ref.number, lazy=True)
            note = issue.notes.create({"body": body})
            return CommentRef(issue=ref, id=int(note.id))

        return await self._call(create)

    async def user_access(self, repo: RepoRef, user: ForgeUser) -> AccessLevel:
        """Effective access including inherited group membership (`members/all`); 404 → none."""

        def fetch() -> AccessLevel:
            project = self._gl.projects.get(repo.project, lazy=True)
            try:
                member = project.members_all.get(user.id)
            except GitlabGetError as exc:
                if exc.response_code == 404:
                    return AccessLevel.NONE
                raise
            return _gitlab_level(int(member.access_level))

        return await self._call(fetch)


def _gitlab_level(value: int) -> AccessLevel:
    for level in sorted(AccessLevel, reverse=True):
        if value >= level and level != AccessLevel.TRIAGE:
            return level
    return AccessLevel.NONE
