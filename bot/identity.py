"""Identities from the forge, never from a payload: the event's repository, and the bot itself.

A signed payload is still untrusted text: whoever knows a hook's secret can write any clone URL,
path or branch into it. The worker therefore takes only the repository's numeric id from the
event and asks the forge at the configured base URL for everything else (`Forge.resolve_repo`).
The answer must agree with the path the payload claimed (else the payload names one project and
the id another: refused), and its clone URL must point at the configured forge's own host, so the
bot's git credentials never leave it (`foundation.workspace` checks again before git runs).

The bot's own user is likewise asked of the forge at start-up (`learn_bot_identity`), so its own
comments never trigger it even when no bot id or login is configured.
"""

from __future__ import annotations

import logging
from typing import Literal

from bot.events import ForgeEvent
from foundation.forge import Forge, RepoRef, bot_identity
from foundation.settings import Settings
from foundation.workspace import forge_origins, origin_of

log = logging.getLogger(__name__)
ForgeKind = Literal["gitlab", "github"]


class IdentityRefused(Exception):
    """The event's repository cannot be acted on; the message says why (it is logged and recorded)."""


def _local(url: str) -> bool:
    return url.startswith(("/", "file://"))


def check_clone_url(settings: Settings, url: str) -> None:
    """Refuse a clone URL that is not on the configured forge's host.

    A local path is accepted only where the `file` transport is allowed (`forgebot run`, tests):
    a real forge never answers one, and git would not fetch it otherwise.
    """
    if _local(url):
        if "file" not in settings.workspace.allowed_protocols:
            raise IdentityRefused("the forge answered a local clone path and the file transport is not allowed")
        return
    origin = origin_of(url)
    if origin is None or origin not in forge_origins(settings):
        where = f"{origin[0]}://{origin[1]}:{origin[2]}" if origin else "a non-HTTP URL"
        raise IdentityRefused(f"the clone URL is on {where}, not the configured forge")


async def resolve(settings: Settings, forge: Forge, event: ForgeEvent) -> RepoRef:
    """The forge's own record of the event's repository; `IdentityRefused` when it disagrees.

    Forge errors (not found, rate limited, unavailable) propagate for the job to map.
    """
    claimed: int | str = event.repo_id or event.repo.project  # events queued before ids were recorded
    repo = await forge.resolve_repo(claimed)
    if event.repo_id and repo.id != event.repo_id:
        raise IdentityRefused(f"project {event.repo_id} resolved to project {repo.id}")
    if repo.path.lower() != event.repo.path.lower() or repo.project.lower() != event.repo.project.lower():
        raise IdentityRefused(
            f"the payload names {event.repo.path!r} but project {claimed} is {repo.path!r} on the forge"
        )
    if not repo.clone_url:
        raise IdentityRefused(f"the forge gives project {repo.path} no clone URL")
    check_clone_url(settings, repo.clone_url)
    return repo


def _configured(settings: Settings, kind: ForgeKind) -> bool:
    if kind == "gitlab":
        return settings.gitlab.token is not None
    conf = settings.github
    return conf.token is not None or (conf.app_id is not None and conf.private_key is not None)


async def learn_bot_identity(settings: Settings) -> None:
    """Fill in the bot's own GitLab user id and GitHub login from the forge, where they are unset.

    "Ignore the bot's own events" must not depend on an optional setting: without it the bot
    answers its own comments. Asked once at start-up of `serve`, `web` and `worker`; a forge that
    cannot say who the token is raises (the process does not start half-blind). A configured
    value is kept (an operator may pin it).
    """
    for kind in ("gitlab", "github"):
        if not _configured(settings, kind):
            continue
        if kind == "gitlab" and settings.gitlab.bot_user_id is None:
            found = await bot_identity(settings, "gitlab")
            settings.gitlab.bot_user_id = found.id
            log.info("gitlab bot user: %s (id %s)", found.login, found.id)
        elif kind == "github" and not settings.github.bot_login:
            found = await bot_identity(settings, "github")
            settings.github.bot_login = found.login
            log.info("github bot login: %s", found.login)
