"""Forge adapters: one module per forge behind the `Forge` protocol.

`open_forge()` is the only place that builds SDK clients from `Settings`; the SDK modules are
imported there lazily so the web process never loads them.
"""

from __future__ import annotations

from bot.forge.errors import (
    ForgeAuthError,
    ForgeConflict,
    ForgeError,
    ForgeNotFound,
    ForgeRateLimited,
    ForgeUnavailable,
)
from bot.forge.models import AccessLevel, CommentRef, ForgeKind, ForgeUser, Issue, IssueRef, RepoRef
from bot.forge.protocol import Forge
from bot.settings import Settings

__all__ = [
    "AccessLevel",
    "ForgeUser",
    "CommentRef",
    "Forge",
    "ForgeAuthError",
    "ForgeConflict",
    "ForgeError",
    "ForgeKind",
    "ForgeNotFound",
    "ForgeRateLimited",
    "ForgeUnavailable",
    "Issue",
    "IssueRef",
    "RepoRef",
    "open_forge",
]


def open_forge(settings: Settings, kind: ForgeKind) -> Forge:
    """Build the adapter for `kind` from settings; fails when the forge has no credentials."""
    if kind == "gitlab":
        return _open_gitlab(settings)
    return _open_github(settings)


def _open_gitlab(settings: Settings) -> Forge:
    import gitlab

    from bot.forge.gitlab import GitLabForge

    conf = settings.gitlab
    if conf.token is None:
        raise ForgeAuthError("FORGEBOT_GITLAB__TOKEN is not set")
    client = gitlab.Gitlab(conf.url, private_token=conf.token.get_secret_value(), timeout=conf.timeout)
    return GitLabForge(client)


def _open_github(settings: Settings) -> Forge:
    import github

    from bot.forge.github import GitHubForge

    conf = settings.github
    if conf.token is None:
        raise ForgeAuthError("FORGEBOT_GITHUB__TOKEN is not set")
    client = github.Github(
        auth=github.Auth.Token(conf.token.get_secret_value()),
        base_url=conf.api_url,
        timeout=int(conf.timeout),
        retry=conf.max_retries or None,
        seconds_between_requests=0,
        seconds_between_writes=conf.min_write_interval,
        lazy=True,  # no GET for objects we only write to; reads complete on attribute access
    )
    return GitHubForge(client)
