"""Forge errors, one tree for both adapters.

    ForgeError
     ├── ForgeAuthError       401/403: token wrong or lacking scope
     ├── ForgeNotFound        404: project, issue or change gone
     ├── ForgeConflict        409/422: already exists, stale sha
     ├── ForgeRateLimited     429 or a rate-limit 403; carries retry_after seconds
     ├── ForgeUnavailable     5xx, timeouts, connection errors (the only ones retried as transient)
     ├── ForgeUntrusted       the forge's TLS certificate is not trusted here: configuration, never retried
     └── ForgeUnsupported     the forge cannot do this; callers should have checked `capabilities`

Other 4xx answers (a malformed request) are a plain `ForgeError`.
Each adapter maps its SDK's exceptions into this tree in one helper; jobs map the tree to arq
retries at their edge. Messages never carry a token.
"""

from __future__ import annotations

import time
from collections.abc import Mapping


class ForgeError(Exception):
    """Base of every forge failure."""


class ForgeAuthError(ForgeError):
    # the permission GitHub says the refused call needs (`X-Accepted-GitHub-Permissions`), "" when unknown
    permission: str = ""


class ForgeNotFound(ForgeError):
    pass


class ForgeConflict(ForgeError):
    pass


class ForgeUnavailable(ForgeError):
    pass


class ForgeUntrusted(ForgeError):
    """No CA this machine trusts signed the forge's certificate (a private CA no bundle names).

    Not an outage: every try is refused the same way until the operator names the CA, so a task fails at
    once saying which variable (`foundation.cabundle.HINT`) instead of waiting out its retries.
    """


class ForgeUnsupported(ForgeError):
    pass


class ForgeRateLimited(ForgeError):
    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def retry_after_from(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from `Retry-After` or, when the quota is spent, `x-ratelimit-reset` (epoch).

    GitHub documents both (primary limits: remaining 0 + reset; secondary: retry-after); GitLab sends
    `Retry-After` and `RateLimit-Reset` on 429.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    value = lowered.get("retry-after")
    if value is not None:
        try:
            return max(0.0, float(value))
        except ValueError:
            return 60.0  # an HTTP date; rare enough that the documented minimum wait will do
    reset = lowered.get("x-ratelimit-reset") or lowered.get("ratelimit-reset")
    remaining = lowered.get("x-ratelimit-remaining") or lowered.get("ratelimit-remaining")
    if reset is not None and remaining == "0":
        current = time.time() if now is None else now
        return max(0.0, float(reset) - current)
    return None


def error_for_status(status: int, message: str, retry_after: float | None = None) -> ForgeError:
    """Map an HTTP status to the tree; shared by both adapters."""
    if status == 429 or retry_after is not None:
        return ForgeRateLimited(message, retry_after if retry_after is not None else 60.0)
    if status in (401, 403):
        return ForgeAuthError(message)
    if status == 404:
        return ForgeNotFound(message)
    if status in (409, 422):
        return ForgeConflict(message)
    if 400 <= status < 500:
        return ForgeError(message)  # the request itself is wrong: retrying cannot help
    return ForgeUnavailable(message)
