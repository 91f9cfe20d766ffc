"""Identities from the forge, never from a payload: the event's repository, and the bot itself.

A signed payload is still untrusted text: whoever knows a hook's secret can write any clone URL,
path or branch into it. The worker therefore takes only the repository's numeric id from the
event and asks the forge at the configured base URL for everything else (`Forge.resolve_repo`).
The answer must agree with the path the payload claimed (else the payload names one project and
the id another: refused), and its clone URL must point at the configured forge's own host, so the
bot's git credentials never leave it (`foundation.workspace` checks again before git runs).

The bot's own user is likewise asked of the forge (`Identities`), so its own comments never
trigger it even when no bot id or login is configured. A service does not wait for that answer to
start: a forge that is down while a pod restarts would otherwise become a crash loop, and the
deliveries sent meanwhile would be lost. `Identities` asks in the background, with growing pauses,
until every configured forge has answered; the worker takes no job before then (tasks wait in the
queue, neither failed nor run), and `/readyz` says which forge has not answered and why.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Literal

from bot.tasks.events import ForgeEvent
from foundation import cabundle
from foundation.forge import BotIdentity, Forge, RepoRef, bot_identity
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


def configured(settings: Settings, kind: ForgeKind) -> bool:
    """True when `kind` has credentials to act with (a token, or a GitHub App's id and key)."""
    if kind == "gitlab":
        return settings.gitlab.token is not None
    conf = settings.github
    return conf.token is not None or (conf.app_id is not None and conf.private_key is not None)


def known(settings: Settings, kind: ForgeKind) -> bool:
    """True when the bot's identity on `kind` is set (learned, or pinned by the operator)."""
    return settings.gitlab.bot_user_id is not None if kind == "gitlab" else bool(settings.github.bot_login)


class Identities:
    """The bot's identity on each configured forge, learned in the background until every one answered.

    The learned values go into the shared `settings` (the receiver's parser and the worker's
    authorizer read them there). `problems` holds, per forge still unknown, why the last attempt
    failed, for `/readyz`.
    """

    def __init__(self, settings: Settings, first_pause: float = 1.0, max_pause: float = 60.0) -> None:
        self.settings = settings
        self.first_pause, self.max_pause = first_pause, max_pause
        self.problems: dict[str, str] = {}
        self.cannot_write: dict[str, str] = {}  # per forge whose token's scopes say it cannot write, why

    def pending(self) -> list[ForgeKind]:
        """The configured forges whose bot identity is not known yet."""
        kinds: tuple[ForgeKind, ...] = ("gitlab", "github")
        return [k for k in kinds if configured(self.settings, k) and not known(self.settings, k)]

    async def learn(self) -> None:
        """Ask until every configured forge has said who the bot is; pauses double up to `max_pause`."""
        pause = self.first_pause
        while True:
            for kind in self.pending():
                try:
                    found = await _learn_one(self.settings, kind)
                except Exception as exc:  # an outage, a refused token, a broken App key: asked again
                    self.problems[kind] = " ".join(str(exc).split())[:300] or type(exc).__name__
                    if cabundle.untrusted(exc):  # asking again will not help: say what will
                        self.problems[kind] += f"; {cabundle.hint(cabundle.REQUESTS)}"
                    log.warning("cannot ask %s who the bot is (asking again in %.0f s): %s", kind, pause,
                                self.problems[kind])
                else:
                    self.problems.pop(kind, None)
                    if why := write_scope_problem(kind, found):
                        self.cannot_write[kind] = why
                        log.warning("the %s token cannot write: %s", kind, why)
            if not self.pending():
                return
            await asyncio.sleep(pause)
            pause = min(pause * 2, self.max_pause)


# the scope a token needs to write (comments, branches, changes), where the forge names its scopes
_WRITE_SCOPES = {"gitlab": ({"api"}, "`api`"),
                 "github": ({"repo", "public_repo"}, "`repo` (`public_repo` for public repositories only)")}


def write_scope_problem(kind: str, found: BotIdentity) -> str:
    """Why the token cannot write, when the forge says its scopes ("" when it can, or does not say).

    `GET /user` answers for a read-only token (GitLab's `read_api`, a classic GitHub token without
    `repo`): the bot started, and failed at its first comment, where it could not even say why."""
    if found.scopes is None or kind not in _WRITE_SCOPES:
        return ""
    wanted, named = _WRITE_SCOPES[kind]
    if wanted & set(found.scopes):
        return ""
    has = ", ".join(f"`{scope}`" for scope in found.scopes) or "none"
    return f"the token's scopes are {has}: forgebot comments, pushes branches and opens changes, which needs {named}"


async def _learn_one(settings: Settings, kind: ForgeKind) -> BotIdentity:
    """Ask one forge who the configured credentials act as, and keep the answer in `settings`.

    "Ignore the bot's own events" must not depend on an optional setting: without it the bot would
    answer its own comments. A configured value is never asked for (an operator may pin it).
    """
    found = await bot_identity(settings, kind)
    if kind == "gitlab":
        settings.gitlab.bot_user_id = found.id
        log.info("gitlab bot user: %s (id %s)", found.login, found.id)
        keep_author(settings, kind, found)
    else:
        settings.github.bot_login = found.login
        log.info("github bot login: %s", found.login)
    return found


def keep_author(settings: Settings, kind: str, found: BotIdentity) -> None:
    """The bot account's name and commit email, where the forge shows an email (GitLab, its commit email
    first: the one its push rules on authors accept), for the commits of an unset author
    (`WorkspaceSettings.author`)."""
    if found.emails:
        settings.workspace.learn_author(kind, found.name or found.login, found.emails[0])
