"""GitHubForge: the Forge protocol over PyGithub."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

import github
import requests
from github import GithubException

from bot.forge.errors import ForgeError, ForgeUnavailable, error_for_status
from bot.forge.models import AccessLevel, CommentRef, ForgeKind, ForgeUser, Issue, IssueRef, RepoRef

T = TypeVar("T")


def _mapped(exc: Exception) -> ForgeError:
    if isinstance(exc, GithubException):
        headers = exc.headers or {}
        retry = headers.get("retry-after") or headers.get("Retry-After")
        return error_for_status(exc.status, f"github: {exc.status}", float(retry) if retry else None)
    return ForgeUnavailable(f"github: {type(exc).__name__}")


class GitHubForge:
    """GitHub or GitHub Enterprise reached through an injected `github.Github` client."""

    kind: ForgeKind = "github"

    def __init__(self, client: github.Github) -> None:
        self._gh = client

    async def _call(self, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(fn)
        except (GithubException, requests.RequestException) as exc:
            raise _mapped(exc) from None

    async def get_issue(self, ref: IssueRef) -> Issue:
        def fetch() -> Issue:
            issue = self._gh.get_repo(ref.repo.project).get_issue(ref.number)
            return Issue(
                ref=ref,
                title=issue.title,
                body=issue.body or "",
                labels=tuple(label.name for label in issue.labels),
                author=issue.user.login,
            )

        return await self._call(fetch)

    async def post_comment(self, ref: IssueRef, body: str) -> CommentRef:
        def create() -> CommentRef:
            issue = self._gh.get_repo(ref.repo.project).get_issue(ref.number)
            comment = issue.create_comment(body)
            return CommentRef(issue=ref, id=comment.id, url=comment.html_url or "")

        return await self._call(create)

    async def user_access(self, repo: RepoRef, user: ForgeUser) -> AccessLevel:
        """The collaborator's role (`role_name` distinguishes triage and maintain); 404 → none."""

        def fetch() -> AccessLevel:
            try:
                role = self._gh.get_repo(repo.project).get_collaborator_role_name(user.username)
            except GithubException as exc:
                if exc.status == 404:
                    return AccessLevel.NONE
                raise
            return _GITHUB_ROLES.get(role, AccessLevel.NONE)

        return await self._call(fetch)


_GITHUB_ROLES = {
    "read": AccessLevel.REPORTER,
    "triage": AccessLevel.TRIAGE,
    "write": AccessLevel.DEVELOPER,
    "maintain": AccessLevel.MAINTAINER,
    "admin": AccessLevel.OWNER,
}
