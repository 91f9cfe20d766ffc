"""Signed, expiring per-task links and the operator's session cookie.

A status comment is visible to everyone who can see the issue, so its link must open that one task
and nothing else, and stop working after `console.link_hours`. The link carries its expiry and an
HMAC over `task id + expiry`; the key is derived from `console.link_secret` (or the operator token),
never the secret itself, so a leaked link reveals nothing that signs another.

The operator logs in once with the token; the cookie holds an expiry and an HMAC, not the token.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from urllib.parse import quote

from foundation.settings import ConsoleSettings

SESSION_COOKIE = "forgebot_console"
SESSION_SECONDS = 12 * 3600


def _key(console: ConsoleSettings, purpose: str) -> bytes | None:
    secret = console.link_secret if purpose == "link" else console.operator_token
    if purpose == "link" and secret is None:
        secret = console.operator_token
    if secret is None:
        return None
    return hmac.new(secret.get_secret_value().encode(), f"forgebot-console:{purpose}".encode(), hashlib.sha256).digest()


def _mac(key: bytes, message: str) -> str:
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


def sign_task(console: ConsoleSettings, task_id: str, expires: int) -> str | None:
    key = _key(console, "link")
    return None if key is None else _mac(key, f"task:{task_id}:{expires}")


def task_link(console: ConsoleSettings, task_id: str, now: float | None = None) -> str:
    """The address of the task's page for a status comment; "" when the console has no public URL or key."""
    if not console.public_url:
        return ""
    expires = int((time.time() if now is None else now) + console.link_hours * 3600)
    signature = sign_task(console, task_id, expires)
    if signature is None:
        return ""
    base = console.public_url.rstrip("/")
    return f"{base}/console/tasks/{quote(task_id, safe='')}?expires={expires}&sig={signature}"


def link_valid(console: ConsoleSettings, task_id: str, expires: str, signature: str, now: float | None = None) -> bool:
    """True for an unexpired link signed for exactly this task (compared in constant time)."""
    if not expires.isdigit() or len(expires) > 12:
        return False
    if int(expires) < (time.time() if now is None else now):
        return False
    expected = sign_task(console, task_id, int(expires))
    return expected is not None and hmac.compare_digest(expected, signature)


def token_valid(console: ConsoleSettings, offered: str) -> bool:
    token = console.operator_token
    return token is not None and hmac.compare_digest(token.get_secret_value().encode(), offered.encode())


def session_cookie(console: ConsoleSettings, now: float | None = None) -> str:
    key = _key(console, "session")
    if key is None:
        raise ValueError("no operator token is configured")
    expires = int((time.time() if now is None else now) + SESSION_SECONDS)
    return f"{expires}.{_mac(key, f'session:{expires}')}"


def session_valid(console: ConsoleSettings, cookie: str, now: float | None = None) -> bool:
    key = _key(console, "session")
    expires, _, mac = cookie.partition(".")
    if key is None or not expires.isdigit() or len(expires) > 12:
        return False
    if int(expires) < (time.time() if now is None else now):
        return False
    return hmac.compare_digest(_mac(key, f"session:{expires}"), mac)
