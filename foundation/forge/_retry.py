"""Retries and pacing shared by both adapters: backoff with jitter, honoured rate limits, write spacing.

Reads are retried on `ForgeUnavailable` (5xx, timeouts) and on short `ForgeRateLimited` waits.
A write that failed with `ForgeUnavailable` may have landed anyway (the forge committed it and the
response was lost), so it is retried only after `landed()` — a read keyed by the bot's marker or
the branch — finds nothing. A rate limit longer than `max_wait` is raised, so the job defers
itself (arq `Retry`) instead of holding a worker asleep.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from foundation.forge.errors import ForgeRateLimited, ForgeUnavailable
from foundation.metrics import record_rate_limit_wait

T = TypeVar("T")
L = TypeVar("L")
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_wait: float = 30.0
    sleep: Sleep = asyncio.sleep
    jitter: Callable[[], float] = random.random
    forge: str = ""  # the adapter's kind, for the rate-limit metrics ("" counts nothing)

    def backoff(self, attempt: int) -> float:
        """Exponential delay for `attempt` (0-based), with 50-100 % jitter so workers spread out."""
        return min(self.max_delay, math.ldexp(self.base_delay, attempt)) * (0.5 + self.jitter() / 2)


async def _pause(policy: RetryPolicy, exc: Exception, attempt: int) -> None:
    if isinstance(exc, ForgeRateLimited) and policy.forge:
        # the bot waits either way: asleep here, or (a long or last wait) as the job's deferred retry
        record_rate_limit_wait(policy.forge, exc.retry_after)
    if attempt + 1 >= policy.attempts:
        raise exc
    if isinstance(exc, ForgeRateLimited):
        if exc.retry_after > policy.max_wait:
            raise exc
        await policy.sleep(exc.retry_after)
    else:
        await policy.sleep(policy.backoff(attempt))


async def read(policy: RetryPolicy, op: Callable[[], Awaitable[T]]) -> T:
    """Run a read, retrying transient failures and short rate limits."""
    for attempt in range(policy.attempts):
        try:
            return await op()
        except (ForgeUnavailable, ForgeRateLimited) as exc:
            await _pause(policy, exc, attempt)
    raise AssertionError("unreachable: the last attempt returns or raises")


async def write(
    policy: RetryPolicy, op: Callable[[], Awaitable[T]], landed: Callable[[], Awaitable[L | None]] | None
) -> T | L:
    """Run a write; after an unavailable answer, look for it (`landed`) before trying again.

    Without `landed` there is no way to tell, so an unavailable answer is raised, never retried.
    """
    for attempt in range(policy.attempts):
        try:
            return await op()
        except ForgeRateLimited as exc:  # refused before processing: nothing can have landed
            await _pause(policy, exc, attempt)
        except ForgeUnavailable as exc:
            if landed is None:
                raise
            await _pause(policy, exc, attempt)
            found = await read(policy, landed)
            if found is not None:
                return found
    raise AssertionError("unreachable: the last attempt returns or raises")


@dataclass
class WritePacer:
    """Keeps writes at least `interval` seconds apart (GitHub's secondary rate limits)."""

    interval: float
    clock: Callable[[], float] = time.monotonic
    sleep: Sleep = asyncio.sleep
    _last: float | None = None
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def wait(self) -> None:
        async with self._lock:
            if self._last is not None:
                delay = self._last + self.interval - self.clock()
                if delay > 0:
                    await self.sleep(delay)
            self._last = self.clock()
