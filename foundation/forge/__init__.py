"""Forge adapters: one module per forge behind the `Forge` protocol.

`open_forge()` is the only place that builds SDK clients from `Settings`; the SDK modules are
imported there lazily so the web process never loads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from foundation.forge.errors import (
    ForgeAuthError,
    ForgeConflict,
    ForgeError,
    ForgeNotFound,
    ForgeRateLimited,
    ForgeUnavailable,
    ForgeUnsupported,
    ForgeUntrusted,
)
from foundation.forge.models import (
    AccessLevel,
    BotIdentity,
    Capability,
    Change,
    ChangeRef,
    ChangeRequest,
    Closed,
    Comment,
    CommentRef,
    DiffLine,
    FileChange,
    ForgeKind,
    ForgeUser,
    GitCredentials,
    Hook,
    Hunk,
    InlineNote,
    Issue,
    IssueRef,
    LineKind,
    Marker,
    Reaction,
    Redelivery,
    RepoRef,
    item_url,
    where_task_speaks,
)
from foundation.forge.protocol import Changes, Conversations, Forge
from foundation.settings import GitHubSettings, Settings

if TYPE_CHECKING:
    from github.Auth import Auth

__all__ = [
    "AccessLevel",
    "BotIdentity",
    "Capability",
    "Change",
    "ChangeRef",
    "ChangeRequest",
    "Changes",
    "Closed",
    "Comment",
    "CommentRef",
    "Conversations",
    "DiffLine",
    "FileChange",
    "Forge",
    "ForgeAuthError",
    "ForgeConflict",
    "ForgeError",
    "ForgeKind",
    "ForgeNotFound",
    "ForgeRateLimited",
    "ForgeUnavailable",
    "ForgeUnsupported",
    "ForgeUntrusted",
    "ForgeUser",
    "GitCredentials",
    "Hook",
    "Hunk",
    "InlineNote",
    "Issue",
    "IssueRef",
    "LineKind",
    "Marker",
    "Reaction",
    "Redelivery",
    "RepoRef",
    "bot_identity",
    "item_url",
    "open_forge",
    "where_task_speaks",
]


def open_forge(settings: Settings, kind: ForgeKind, installation: int | None = None) -> Forge:
    """Build the adapter for `kind` from settings; fails when the forge has no credentials.

    `installation` (GitHub App only) overrides `settings.github.installation_id`; it comes from the
    webhook payload's `installation.id`.
    """
    if kind == "gitlab":
        return _open_gitlab(settings)
    return _open_github(settings, installation)


async def bot_identity(settings: Settings, kind: ForgeKind) -> BotIdentity:
    """Who the configured credentials act as: the token's user, or a GitHub App's `<slug>[bot]`.

    An App is asked with its own JWT (`GET /app`), so no installation is needed at start-up.
    """
    conf = settings.github
    if kind == "github" and conf.app_id is not None and conf.private_key is not None:
        import github

        from foundation.forge.github import GitHubForge

        app = github.Auth.AppAuth(conf.app_id, conf.private_key.get_secret_value())
        client = github.Github(base_url=conf.api_url, timeout=int(conf.timeout), retry=None)
        return await GitHubForge(client, app=app).whoami()
    return await open_forge(settings, kind).whoami()


def _open_gitlab(settings: Settings) -> Forge:
    from foundation.forge._retry import RetryPolicy
    from foundation.forge.gitlab import GitLabClient, GitLabForge

    conf = settings.gitlab
    if conf.token is None:
        raise ForgeAuthError("FORGEBOT_GITLAB__TOKEN is not set")
    # personal, project and group access tokens all authenticate as PRIVATE-TOKEN
    client = GitLabClient(conf.url, private_token=conf.token.get_secret_value(), timeout=conf.timeout)
    policy = RetryPolicy(attempts=conf.max_retries + 1, max_wait=conf.max_rate_limit_wait)
    return GitLabForge(client, policy, BotIdentity(id=conf.bot_user_id))


def _github_auth(conf: GitHubSettings, installation: int | None) -> Auth:
    import github

    if conf.app_id is not None and conf.private_key is not None:
        installation = installation or conf.installation_id
        if installation is None:
            raise ForgeAuthError(
                "GitHub App auth needs an installation id (payload or FORGEBOT_GITHUB__INSTALLATION_ID)"
            )
        # AppInstallationAuth signs a JWT and swaps it for an installation token, refreshed before expiry
        app = github.Auth.AppAuth(conf.app_id, conf.private_key.get_secret_value())
        return app.get_installation_auth(installation)
    if conf.token is not None:
        return github.Auth.Token(conf.token.get_secret_value())
    raise ForgeAuthError("set FORGEBOT_GITHUB__TOKEN, or FORGEBOT_GITHUB__APP_ID and FORGEBOT_GITHUB__PRIVATE_KEY")


def _open_github(settings: Settings, installation: int | None) -> Forge:
    import github

    from foundation.forge._retry import RetryPolicy, WritePacer
    from foundation.forge.github import GitHubForge

    conf = settings.github
    client = github.Github(
        auth=_github_auth(conf, installation),
        base_url=conf.api_url,
        timeout=int(conf.timeout),
        retry=None,  # retries and waits are the adapter's policy (foundation/forge/_retry.py)
        seconds_between_requests=0,
        seconds_between_writes=0,  # spacing is the adapter's WritePacer
        lazy=True,  # no GET for objects we only write to; reads complete on attribute access
    )
    policy = RetryPolicy(attempts=conf.max_retries + 1, max_wait=conf.max_rate_limit_wait)
    app = None
    if conf.app_id is not None and conf.private_key is not None:
        app = github.Auth.AppAuth(conf.app_id, conf.private_key.get_secret_value())
    return GitHubForge(client, policy, WritePacer(interval=conf.min_write_interval), app,
                       BotIdentity(login=conf.bot_login or ""))
