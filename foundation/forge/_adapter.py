"""What the GitHub and GitLab adapters share: who the bot is, every SDK call through the retry policy,
and finding a marked write again when its answer was lost on the way back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import TypeVar

from foundation.forge import _retry
from foundation.forge._text import marked
from foundation.forge.models import BotIdentity, ChangeRef, Comment, CommentRef, IssueRef, Marker

T = TypeVar("T")
L = TypeVar("L")
Finder = Callable[[], Awaitable[CommentRef | None]]


class SdkAdapter:
    """The plumbing of an adapter over a forge's SDK; the subclass sets `_bot` and `_calls`."""

    _bot: BotIdentity
    _calls: _retry.Calls

    @property
    def bot(self) -> BotIdentity:
        return self._bot

    async def list_comments(self, target: IssueRef | ChangeRef) -> list[Comment]:
        raise NotImplementedError

    async def _read(self, fn: Callable[[], T]) -> T:
        return await self._calls.read(fn)

    async def _write(self, fn: Callable[[], T], landed: Callable[[], Awaitable[L | None]] | None) -> T | L:
        return await self._calls.write(fn, landed)

    def _finder(self, target: IssueRef | ChangeRef, marker: Marker | None) -> Finder | None:
        """How a write keyed by `marker` is found if its answer was lost; None: it cannot be."""
        return None if marker is None else partial(self._find, target, marker)

    async def _find(self, target: IssueRef | ChangeRef, marker: Marker) -> CommentRef | None:
        return marked(await self.list_comments(target), marker, self._bot)
