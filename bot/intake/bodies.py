"""Request bodies: every body the web app reads arrives within a size and a time limit.

The receiver faces the internet (webhooks, the console's login form), and an unauthenticated
client must not make it hold a large body or wait for a slow one: a 300 MB login POST once grew the
web process by 570 MB. `BodyLimits` is middleware, so the rule holds for every route, those added
later and Starlette's own included: it wraps the ASGI `receive` of each request so that reading
the body raises `BodyRefused` — 413 once more than `max_bytes` is declared or has arrived, 408 once
`timeout` seconds have passed since the request began. Nothing is buffered here; a route that
reads nothing costs nothing. A route may ask for less than the app-wide ceiling with `read_body`
(the login form takes 4 KiB). `BodyRefused` is an HTTPException, so a route that does not catch it
still answers 413 or 408.
"""

from __future__ import annotations

import asyncio

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyRefused(HTTPException):
    """A body past its size (413) or time (408) limit; nothing of it is kept."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(status_code=status, detail=reason)
        self.reason = reason


TOO_LARGE = "body too large"
TOO_SLOW = "body not received in time"


def _declared(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


class _BoundedReceive:
    """One request's `receive`: the body messages counted against the size and the deadline."""

    def __init__(self, receive: Receive, declared: int | None, max_bytes: int, deadline: float) -> None:
        self._receive, self._declared, self._max, self._deadline = receive, declared, max_bytes, deadline
        self._size = 0
        self._done = False

    async def __call__(self) -> Message:
        if self._done:  # after the body: disconnect notices, waited for as long as the app likes
            return await self._receive()
        if self._declared is not None and self._declared > self._max:
            raise BodyRefused(413, TOO_LARGE)
        remaining = self._deadline - asyncio.get_running_loop().time()
        try:
            message = await asyncio.wait_for(self._receive(), max(remaining, 0.0))
        except TimeoutError:
            raise BodyRefused(408, TOO_SLOW) from None
        if message["type"] != "http.request":
            self._done = True
            return message
        self._size += len(message.get("body", b""))
        if self._size > self._max:
            raise BodyRefused(413, TOO_LARGE)
        self._done = not message.get("more_body", False)
        return message


class BodyLimits:
    """ASGI middleware: no request body past `max_bytes`, none still arriving after `timeout` seconds."""

    def __init__(self, app: ASGIApp, max_bytes: int, timeout: float) -> None:
        self.app, self.max_bytes, self.timeout = app, max_bytes, timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline = asyncio.get_running_loop().time() + self.timeout
        await self.app(scope, _BoundedReceive(receive, _declared(scope), self.max_bytes, deadline), send)


async def read_body(request: Request, limit: int) -> bytes:
    """The whole body, at most `limit` bytes (below the app's ceiling); `BodyRefused` past it."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyRefused(413, TOO_LARGE)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyRefused(413, TOO_LARGE)
        chunks.append(chunk)
    return b"".join(chunks)

