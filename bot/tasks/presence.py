"""Which workers are alive and what each is doing, for the console's health page.

A lease exists only while a job runs, so with leases alone an idle worker and a dead one look the
same: no row. Each worker therefore announces itself in Redis every `durability.reap_interval`
seconds under `forgebot:worker:<host>:<pid>`, with what it is doing (idle, running a job, waiting
for a forge to say who the bot is); the key expires after three missed announcements, so a killed
worker disappears from the page within that time, and a stopped one removes its key on the way out.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

PREFIX = "forgebot:worker:"
MISSED = 3  # announcements a worker may miss before it counts as gone


def worker_name() -> str:
    """This process as the health page names it (the lease holder's name too)."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class Presence:
    """One worker's last announcement."""

    worker: str
    doing: str  # "idle", "running job <id>", "waiting for gitlab to say who the bot is"
    seconds_ago: float
    seconds_up: float  # since the worker started, as of the read


async def announce(redis: Any, doing: Callable[[], str], interval: float) -> None:
    """Announce this worker and what it is `doing()` every `interval` seconds until cancelled; the key
    goes with it."""
    key = PREFIX + worker_name()
    started = time.time()
    try:
        while True:
            record = json.dumps({"doing": doing() or "idle", "seen": time.time(), "started": started})
            try:
                await redis.set(key, record, px=int(interval * MISSED * 1000))
            except Exception as exc:  # Redis briefly away: the next announcement tries again
                log.warning("presence not announced: %s", type(exc).__name__)
            await asyncio.sleep(interval)
    finally:
        with contextlib.suppress(Exception):
            await redis.delete(key)


async def workers(redis: Any) -> list[Presence]:
    """Every worker that announced itself recently, the longest-running first."""
    found: list[Presence] = []
    now = time.time()
    async for raw in redis.scan_iter(match=PREFIX + "*", count=200):
        key = raw.decode() if isinstance(raw, bytes) else str(raw)
        value = await redis.get(key)
        try:
            record = json.loads(value) if value else {}
            found.append(Presence(key.removeprefix(PREFIX), str(record["doing"]), max(now - float(record["seen"]), 0.0),
                                  max(now - float(record["started"]), 0.0)))
        except (ValueError, KeyError, TypeError):  # written by another release: shown as unknown
            found.append(Presence(key.removeprefix(PREFIX), "?", 0.0, 0.0))
    return sorted(found, key=lambda p: -p.seconds_up)
