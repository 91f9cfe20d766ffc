"""Forge writes that survive a replayed node: every comment a node posts carries a hidden marker.

LangGraph checkpoints after a node returns, so a worker killed between a node's forge write and
that checkpoint replays the whole node on the next try. A node that posts without a marker would
post twice. `TaskForge` wraps the task's forge and gives each unmarked `post_comment`/`reply` a
marker derived from where it is made: the task id, the node's checkpoint namespace (LangGraph
derives it deterministically from the step, so the replay sees the same one) and the write's
ordinal inside that node run. The forge's lookup-before-create then edits the first copy in place.
Writes that pass their own marker are left alone.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import Any, cast

from langgraph.config import get_config

from foundation.forge import CommentRef, Forge, Marker
from foundation.forge.models import Target


class TaskForge:
    """Delegates to a forge; marks unmarked comments made inside a graph node."""

    def __init__(self, forge: Forge, task_id: str) -> None:
        self._forge = forge
        self._task = task_id
        self._ordinals: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._forge, name)

    def _marker(self, kind: str) -> Marker | None:
        try:
            metadata = get_config().get("metadata", {})
        except RuntimeError:  # outside a graph run: the caller owns its idempotency
            return None
        namespace = str(metadata.get("langgraph_checkpoint_ns") or metadata.get("langgraph_node") or "")
        if not namespace:
            return None
        node = re.sub(r"[^A-Za-z0-9_]", "_", str(metadata.get("langgraph_node", "")))[:40]
        key = f"{kind}.{node}.{hashlib.sha256(namespace.encode()).hexdigest()[:16]}"
        ordinal = self._ordinals[key]
        self._ordinals[key] += 1
        return Marker(task=self._task, purpose=f"{key}.{ordinal}")

    async def post_comment(self, target: Target, body: str, marker: Marker | None = None) -> CommentRef:
        return await self._forge.post_comment(target, body, marker or self._marker("comment"))

    async def reply(self, comment: CommentRef, body: str, marker: Marker | None = None) -> CommentRef:
        return await self._forge.reply(comment, body, marker or self._marker("reply"))


def task_forge(forge: Forge, task_id: str) -> Forge:
    """The task's forge as the `Forge` protocol the graph's `Deps` expects."""
    return cast(Forge, TaskForge(forge, task_id))
