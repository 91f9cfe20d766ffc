"""The error tree's mapping from HTTP answers, and the retry policy's arithmetic."""

from __future__ import annotations

import pytest

from foundation.forge._retry import RetryPolicy, WritePacer, read
from foundation.forge.errors import (
    ForgeAuthError,
    ForgeConflict,
    ForgeError,
    ForgeNotFound,
    ForgeRateLimited,
    ForgeUnavailable,
    error_for_status,
    retry_after_from,
)


@pytest.mark.parametrize(
    ("status", "kind"),
    [(401, ForgeAuthError), (403, ForgeAuthError), (404, ForgeNotFound), (409, ForgeConflict),
     (422, ForgeConflict), (429, ForgeRateLimited), (500, ForgeUnavailable), (503, ForgeUnavailable)],
)
def test_status_maps_onto_the_tree(status: int, kind: type[ForgeError]) -> None:
    assert type(error_for_status(status, "m")) is kind


def test_a_malformed_request_is_not_transient() -> None:
    error = error_for_status(400, "bad position")
    assert type(error) is ForgeError and not isinstance(error, ForgeUnavailable)


def test_retry_after_sources() -> None:
    assert retry_after_from({"Retry-After": "7"}) == 7.0
    assert retry_after_from({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1060"}, now=1000) == 60.0
    assert retry_after_from({"RateLimit-Remaining": "0", "RateLimit-Reset": "1010"}, now=1000) == 10.0  # GitLab
    assert retry_after_from({"x-ratelimit-remaining": "12", "x-ratelimit-reset": "1060"}, now=1000) is None
    assert retry_after_from({"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}) == 60.0
    assert retry_after_from({}) is None


def test_backoff_grows_exponentially_with_bounded_jitter() -> None:
    low, high = RetryPolicy(jitter=lambda: 0.0), RetryPolicy(jitter=lambda: 1.0)
    assert [high.backoff(n) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert [low.backoff(n) for n in range(3)] == [0.25, 0.5, 1.0]


async def test_a_non_transient_error_is_not_retried() -> None:
    calls: list[int] = []

    async def failing() -> None:
        calls.append(1)
        raise ForgeNotFound("gone")

    with pytest.raises(ForgeNotFound):
        await read(RetryPolicy(), failing)
    assert calls == [1]


async def test_pacer_waits_only_what_is_left_of_the_interval() -> None:
    now, sleeps = [0.0], []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    pacer = WritePacer(interval=1.0, clock=lambda: now[0], sleep=sleep)
    await pacer.wait()
    now[0] += 0.25
    await pacer.wait()
    assert sleeps == [0.75]
