"""The sweeper: accepted deliveries that never became a job get queued again.

Redis can be down when a delivery arrives (the request path answers 202 from the inbox alone),
can lose its data on a restart without persistence, or can evict keys under an eviction policy.
The inbox knows every accepted delivery and whether a job handled it; the sweeper closes the gap.
Re-enqueueing is safe: arq refuses a job id (= delivery id) that is still queued or running.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from bot.tasks.inbox import Inbox

log = logging.getLogger(__name__)

EnqueueJson = Callable[[str, str], Awaitable[bool]]  # (delivery id, event json) → newly queued


async def sweep(inbox: Inbox, enqueue: EnqueueJson, grace: float, keep_hours: float) -> int:
    """Queue every accepted, unhandled delivery older than `grace` seconds; returns how many were new."""
    requeued = 0
    for pending in await inbox.unhandled(grace):
        if await enqueue(pending.delivery_id, pending.event_json):
            requeued += 1
            log.warning("sweeper re-enqueued delivery=%s", pending.delivery_id)
    pruned = await inbox.prune(keep_hours)
    if requeued or pruned:
        log.info("sweep requeued=%d pruned=%s", requeued, pruned)
    return requeued
