"""How both adapters call their SDK: in a worker thread, errors mapped, reads retried, writes paced.

`Calls` is the one path every forge request of an adapter takes. Reads are retried on
`ForgeUnavailable` (5xx, timeouts) and on short `ForgeRateLimited` waits. A write — REST or a
GraphQL mutation alike — that failed with `ForgeUnavailable` may have landed anyway (the forge
committed it and the answer was lost), so it is retried only after `landed()` (a read keyed by the
bot's marker, the branch, or the state the write sets) finds nothing; without `landed` it is never
retried. A refused write (rate limit) cannot have landed and waits like a read. A rate limit longer
than `max_wait` is raised, so the job defers itself (arq `Retry`) instead of holding a worker asleep.

Rate limits are read from the answer as the forges document them (`errors.retry_after_from`):
`Retry-After`, or a spent quota's reset time (GitHub `x-ratelimit-*`, GitLab `RateLimit-*`); a
GitHub secondary limit without either waits the documented minute.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from foundation import cabundle
from foundation.forge.errors import (
    ForgeAuthError,
    ForgeError,
    ForgeRateLimited,
    ForgeUnavailable,
    ForgeUntrusted,
    error_for_status,
    retry_after_from,
)
from foundation.metrics import record_forge_error, record_rate_limit_wait

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


# (status, headers, message) of a failed call as the SDK reports it; status 0: no answer at all
Failure = tuple[int, Mapping[str, str], str]


def transport(exc: BaseException) -> str:
    """The message of a call that got no answer: the exception's type, and why a certificate was refused
    when it was (`mapped` makes that a `ForgeUntrusted`; the type alone said `SSLError`)."""
    why = cabundle.untrusted(exc)
    return f"{type(exc).__name__}: certificate verify failed: {why}" if why else type(exc).__name__


def _header(headers: Mapping[str, str], name: str) -> str:
    """A header's value whatever the case the server wrote its name in ("" when absent)."""
    return next((str(value) for key, value in headers.items() if key.lower() == name), "")


def mapped(forge: str, failure: Failure) -> ForgeError:
    """The `ForgeError` for a failed call, counted in `forgebot_forge_api_errors_total`.

    403 and 429 carry their wait (`retry_after_from`); a 403 naming GitHub's secondary rate limit
    without one waits a minute, as GitHub's documentation asks.
    """
    status, headers, message = failure
    error: ForgeError
    if not status:
        why = cabundle.untrusted(message)
        error = (ForgeUntrusted(f"{forge}: TLS certificate verify failed: {why}") if why
                 else ForgeUnavailable(f"{forge}: {message}"))
    else:
        retry = retry_after_from(headers) if status in (403, 429) else None
        if retry is None and status == 403 and "secondary rate limit" in message.lower():
            retry = 60.0
        said = message[:200]
        needs = _header(headers, "x-accepted-github-permissions")[:200] if status == 403 else ""
        if needs and retry is None:  # "Resource not accessible by personal access token" names nothing
            said += f" (GitHub: the call needs the permission {needs}, of the fine-grained token or the GitHub App)"
        error = error_for_status(status, f"{forge} {status}: {said}" if message else f"{forge} {status}", retry)
        if isinstance(error, ForgeAuthError):
            error.permission = needs
    record_forge_error(forge, error)
    return error


@dataclass
class Calls:
    """An adapter's one way to the forge: `read`, `write` (with its `landed` check), or a bare `call`.

    `failure` turns the SDK's own exception into a `Failure` (None: not the SDK's, re-raised as is);
    it runs in the worker thread, where a client may keep the last answer's headers.
    """

    forge: str
    failure: Callable[[Exception], Failure | None]
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    pacer: WritePacer | None = None

    def _guarded(self, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except ForgeError:
            raise
        except Exception as exc:
            found = self.failure(exc)
            if found is None:
                raise
            raise mapped(self.forge, found) from None

    async def call(self, fn: Callable[[], T]) -> T:
        """`fn` once, in a worker thread (the SDKs block), its failure mapped."""
        return await asyncio.to_thread(self._guarded, fn)

    async def read(self, fn: Callable[[], T]) -> T:
        return await read(self.policy, lambda: self.call(fn))

    async def write(self, fn: Callable[[], T], landed: Callable[[], Awaitable[L | None]] | None) -> T | L:
        """A write, paced; after a lost answer retried only when `landed` finds it did not land."""

        async def paced() -> T:
            if self.pacer is not None:
                await self.pacer.wait()
            return await self.call(fn)

        return await write(self.policy, paced, landed)
