"""RepoLabels: which labels trigger the bot in one repository (`.forgebot.yml` `labels`).

A label delivery's mode is decided in the receiver, so the receiver must know the repository's own
labels before it answers; deciding later would turn every unrelated label in every repository into
a task row and a job. The payload is not trusted for this: the receiver asks the forge at the
configured base URL for the repository by the numeric id the (verified) payload names, and for
`.forgebot.yml` on the default branch the forge reports (streamed, at most 64 KiB), validated by
`project.repoconfig` in a child process (`project.configchild`, started with the receiver): never on
the event loop, and killed when the validation outlasts the look-up's time.

Only label deliveries ask, each repository's answer is reused for `repo_labels_cache_seconds`, a
burst for one repository waits on a single lookup, and the lookup is bounded by
`repo_labels_timeout`: the hook's answer stays fast and the forge sees at most two calls per
repository per minute.

Semantics: a key set in `labels` replaces the server's label for that mode in that repository (the
server's label then starts nothing there); a key left unset keeps the server's label. No file
gives the server's labels; an invalid file, a forge error or a timeout also gives the server's
labels, logged with the reason (the repository's overrides are not guessed).
"""

from __future__ import annotations

import asyncio
import logging
import time

from foundation.forge import Forge, ForgeError, ForgeKind, RepoRef, open_forge
from foundation.settings import Settings, TriggerSettings
from project.configchild import ConfigChild
from project.repoconfig import CONFIG_PATH, CONFIG_PATHS, MAX_CONFIG_BYTES, RepoConfigError

log = logging.getLogger(__name__)
_MAX_REPOS = 10_000  # cached repositories; past this, expired answers are dropped, then the oldest
Key = tuple[ForgeKind, int]


class RepoLabels:
    """The receiver's per-repository trigger labels, looked up through the forge and cached."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._cache: dict[Key, tuple[float, TriggerSettings]] = {}
        self._pending: dict[Key, asyncio.Future[TriggerSettings]] = {}
        # validation runs in a child process, off the event loop, and is killed past the time limit
        self._child = ConfigChild(timeout=settings.intake.repo_labels_timeout)

    def start(self) -> None:
        """Start the validating child now, so a first label delivery does not wait for Python to start."""
        self._child.start()

    async def close(self) -> None:
        """Stop the validating child process (the receiver's shutdown)."""
        await self._child.close()

    async def triggers(self, kind: ForgeKind, repo_id: int, installation: int | None = None) -> TriggerSettings:
        """The trigger settings a label delivery on repository `repo_id` is parsed with."""
        key = (kind, repo_id)
        cached = self._cache.get(key)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        pending = self._pending.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._fetch(kind, repo_id, installation))
            self._pending[key] = pending
            pending.add_done_callback(lambda _: self._pending.pop(key, None))
        return await asyncio.shield(pending)

    async def _fetch(self, kind: ForgeKind, repo_id: int, installation: int | None) -> TriggerSettings:
        intake = self._settings.intake
        try:
            found = await self._read(kind, repo_id, installation, intake.repo_labels_timeout)
        except Exception as exc:  # fail closed to the server's labels; the reason goes to the log
            reason = " ".join(str(exc).split()) if isinstance(exc, RepoConfigError | ForgeError) else type(exc).__name__
            log.warning("repository labels unavailable, the server's labels apply forge=%s repo=%s reason=%s",
                        kind, repo_id, reason[:300])
            found = self._settings.triggers
        self._remember((kind, repo_id), found)
        return found

    async def _read(self, kind: ForgeKind, repo_id: int, installation: int | None, timeout: float) -> TriggerSettings:
        """The forge's answers within `timeout`, then the file validated within the child's own limit."""
        forge = open_forge(self._settings, kind, installation)
        repo, name, content = await asyncio.wait_for(self._fetch_file(forge, repo_id), timeout)
        server = self._settings.triggers
        if content is None:
            return server
        source = f"{name}` of {repo.path} on `{repo.default_branch}"
        labels = await self._child.labels(content.decode(errors="replace"), source)
        update = {"implement_label": labels.implement, "analyze_label": labels.analyze}
        return server.model_copy(update={k: v for k, v in update.items() if v is not None})

    @staticmethod
    async def _fetch_file(forge: Forge, repo_id: int) -> tuple[RepoRef, str, bytes | None]:
        """The repository, and the name and content of its settings file (None: it has none)."""
        repo = await forge.resolve_repo(repo_id)
        for name in CONFIG_PATHS:
            content = await forge.read_file(repo, name, repo.default_branch, MAX_CONFIG_BYTES)
            if content is not None:
                return repo, name, content
        return repo, CONFIG_PATH, None

    def _remember(self, key: Key, found: TriggerSettings) -> None:
        now = time.monotonic()
        if len(self._cache) >= _MAX_REPOS:
            for stale in [k for k, (until, _) in self._cache.items() if until <= now]:
                del self._cache[stale]
            while len(self._cache) >= _MAX_REPOS:
                del self._cache[next(iter(self._cache))]
        self._cache[key] = (now + self._settings.intake.repo_labels_cache_seconds, found)
