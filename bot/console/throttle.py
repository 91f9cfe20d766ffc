"""Throttling of operator-token guesses: per client, and a ceiling over all clients.

The login form and `Authorization: Bearer` compare an offered token with the operator's. Without a
limit a client could try hundreds a second (300 in 2 s were measured), so each wrong token costs
its client one of `per_client` attempts and the process one of `overall`, refilled evenly over a
minute (token buckets). A client with none left, or any client while the process has none left, is
answered 429 with `Retry-After` before its token is even compared, so a throttled guess reveals
nothing. Right tokens cost nothing; a signed-in operator's session cookie is never throttled (it
is an HMAC no one can guess), so the overall ceiling locks out guessing, not the operator.

Clients are told apart by the address uvicorn reports (behind a proxy it trusts, the forwarded
one). At most `MAX_CLIENTS` are remembered; past that the longest-untouched are forgotten, which
only ever gives a client back its full allowance while the overall ceiling still holds.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

MAX_CLIENTS = 10_000
WINDOW = 60.0


@dataclass
class _Bucket:
    tokens: float
    at: float


class Throttle:
    """Failed guesses of the operator token, counted per client and overall."""

    def __init__(self, per_client: int, overall: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._per_client, self._overall, self._clock = per_client, overall, clock
        self._clients: OrderedDict[str, _Bucket] = OrderedDict()
        self._all = _Bucket(float(overall), clock())

    def _refilled(self, bucket: _Bucket, capacity: int, now: float) -> _Bucket:
        bucket.tokens = min(float(capacity), bucket.tokens + (now - bucket.at) * capacity / WINDOW)
        bucket.at = now
        return bucket

    def _client(self, client: str, now: float) -> _Bucket:
        bucket = self._clients.pop(client, None) or _Bucket(float(self._per_client), now)
        self._clients[client] = bucket  # most recently used last
        while len(self._clients) > MAX_CLIENTS:
            self._clients.popitem(last=False)
        return self._refilled(bucket, self._per_client, now)

    def wait(self, client: str) -> int:
        """Seconds `client` must wait before its next guess; 0: it may guess now."""
        now = self._clock()
        mine = self._client(client, now)
        overall = self._refilled(self._all, self._overall, now)
        short = max(1.0 - mine.tokens, 0.0) * WINDOW / self._per_client
        short = max(short, max(1.0 - overall.tokens, 0.0) * WINDOW / self._overall)
        return math.ceil(short)

    def failed(self, client: str) -> None:
        """Count one wrong token offered by `client`."""
        now = self._clock()
        self._client(client, now).tokens -= 1
        self._refilled(self._all, self._overall, now).tokens -= 1
