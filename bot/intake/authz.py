"""Who may trigger the bot: Developer or more (GitLab), write or more (GitHub), asked of the forge.

The answer comes from the forge's permission API through `Forge.user_access`, never from
`author_association`, a display name or anything else in the payload, and is cached briefly so a
burst of comments costs one API call. The bot's own account is refused before any call, and an
optional allow-list restricts the projects the bot serves at all; the job resolves the event's
repository through the forge before asking (`bot.intake.identity`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from bot.tasks.events import ForgeEvent
from foundation.forge import AccessLevel, Forge, ForgeUser
from foundation.settings import Settings

REQUIRED = AccessLevel.DEVELOPER


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str
    access: AccessLevel = AccessLevel.NONE


class Authorizer:
    """The authorization policy the job applies before running the graph."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = settings.intake.access_cache_seconds
        self._settings = settings  # the bot's identity is read at each decision: it may be learned after start
        self._allowed = {name.lower() for name in settings.intake.allowed_projects}
        self._clock = clock
        self._cache: dict[tuple[str, str, int], tuple[float, AccessLevel]] = {}

    def _is_bot(self, event: ForgeEvent) -> bool:
        if event.forge == "gitlab":
            bot_id = self._settings.gitlab.bot_user_id
            return bot_id is not None and event.actor.id == bot_id
        login = (self._settings.github.bot_login or "").lower()
        return bool(login) and event.actor.username.lower() == login

    def _project_allowed(self, event: ForgeEvent) -> bool:
        """Compare the repository the forge resolved (`bot.intake.identity`): its id and its path, never
        the payload's text, so an allowed path beside another project's id matches nothing."""
        if not self._allowed:
            return True
        names = {event.repo.project.lower(), event.repo.path.lower()}
        if event.repo_id:
            names.add(str(event.repo_id))
        return bool(names & self._allowed)

    async def access(self, forge: Forge, event: ForgeEvent) -> AccessLevel:
        """The actor's access level, from the cache while it is fresh, else from the forge."""
        key = (event.forge, event.repo.project, event.actor.id)
        now = self._clock()
        cached = self._cache.get(key)
        if cached is not None and now - cached[0] < self._ttl:
            return cached[1]
        level = await forge.user_access(event.repo, ForgeUser(id=event.actor.id, username=event.actor.username))
        self._cache[key] = (now, level)
        return level

    async def decide(self, forge: Forge, event: ForgeEvent) -> Decision:
        """Allow or refuse `event`; forge errors propagate so the job retries rather than refuses."""
        if self._is_bot(event):
            return Decision(False, "the bot's own event")
        if not self._project_allowed(event):
            return Decision(False, f"project {event.repo.path} is not in the allow-list")
        level = await self.access(forge, event)
        if level < REQUIRED:
            reason = f"{event.actor.username} has {level.name.lower()} access; triggering needs developer/write"
            return Decision(False, reason, level)
        return Decision(True, "allowed", level)
