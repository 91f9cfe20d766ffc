"""The forges' side of webhooks: a delivery sent to a hook's URL, signed with the hook's own secret, and
what each forge keeps of the answer.

GitLab (doc/user/project/integrations/webhooks.md, "Auto-disabled webhooks", 17.11 and later): a hook
whose deliveries fail 4 times in a row is disabled for a minute, a back-off that doubles with each further
failure up to a day (`alert_status` `temporarily_disabled`, `disabled_until`), and for good after 40
(`disabled`); a delivery answered 2xx, also a test one, enables it again. A disabled hook is sent nothing.
GitHub disables no hook; it keeps the last delivery's answer as the hook's `last_response`. The status word
GitHub gives a refused delivery is not documented (`timeout` when none came, `active` for a success): the
product shows it as GitHub says it, and relies on the code alone.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from tests.fakes.forge_state import FakeDelivery, FakeForgeState, FakeHook

TEMPORARILY_AFTER = 4  # failures in a row
FOR_GOOD_AFTER = 40
_FIRST_BACKOFF = timedelta(minutes=1)
_LONGEST_BACKOFF = timedelta(days=1)


def deliver(state: FakeForgeState, forge: str, project_id: int, event: str, payload: dict[str, Any],
            now: datetime | None = None) -> list[int | None]:
    """Send `payload` (GitLab's `X-Gitlab-Event`, GitHub's `X-GitHub-Event` named `event`) to each hook of
    the project the forge would send it to; each hook's answer status (None: nothing sent, or no answer)."""
    with state.lock:
        hooks = list(state.hooks.get((forge, str(project_id)), []))
    return [send(hook, forge, event, payload, now) if sendable(hook, forge, now) else None for hook in hooks]


def deliver_to_app(state: FakeForgeState, event: str, payload: dict[str, Any]) -> int | None:
    """Send `payload` through the GitHub App's own webhook (None: no App hook, or no answer)."""
    hook = state.app_hook
    return send(hook, "github", event, payload) if hook is not None and hook.active else None


def sendable(hook: FakeHook, forge: str, now: datetime | None = None) -> bool:
    if forge == "github":
        return hook.active
    if hook.alert_status == "disabled":
        return False
    until = hook.disabled_until
    return until is None or datetime.fromisoformat(until) <= (now or datetime.now(UTC))


def send(hook: FakeHook, forge: str, event: str, payload: dict[str, Any], now: datetime | None = None,
         again: FakeDelivery | None = None) -> int | None:
    """One delivery, whatever the hook's state (a test delivery is sent so), its answer kept, and the delivery
    logged as the forge lists it; `again`: a logged one sent again (its id for the receiver is the same)."""
    body = json.dumps(payload, separators=(",", ":")).encode()
    key = again.key if again is not None else str(uuid.uuid4())
    headers = {"content-type": "application/json"}
    if forge == "gitlab":
        headers.update({"user-agent": "GitLab/17.11.0", "x-gitlab-event": event, "x-gitlab-token": hook.secret,
                        "x-gitlab-event-uuid": str(uuid.uuid4()), "idempotency-key": key})
    else:
        signature = hmac.new(hook.secret.encode(), body, hashlib.sha256).hexdigest()
        headers.update({"user-agent": "GitHub-Hookshot/044aadd", "x-github-event": event,
                        "x-github-delivery": key, "x-github-hook-id": str(hook.id),
                        "x-hub-signature-256": f"sha256={signature}"})
    try:
        status: int | None = httpx.post(hook.url, content=body, headers=headers, timeout=10).status_code
    except httpx.HTTPError:
        status = None
    when = now or datetime.now(UTC)
    _kept(hook, forge, status, when)
    hook.log.append(FakeDelivery(id=next(_ids), key=key, event=event, payload=payload, status=status,
                                 at=when.isoformat(timespec="seconds").replace("+00:00", "Z"),
                                 again=again is not None))
    return status


_ids = itertools.count(7000)


def _kept(hook: FakeHook, forge: str, status: int | None, now: datetime) -> None:
    ok = status is not None and 200 <= status < 300
    if forge == "github":
        hook.last_response = (status, "active", "OK") if ok else \
            (status, "failed" if status else "timeout", f"Invalid HTTP Response: {status}" if status else "")
        return
    if ok:
        hook.failures, hook.alert_status, hook.disabled_until = 0, "executable", None
        return
    hook.failures += 1
    if hook.failures >= FOR_GOOD_AFTER:
        hook.alert_status, hook.disabled_until = "disabled", None
    elif hook.failures >= TEMPORARILY_AFTER:
        backoff = min(_FIRST_BACKOFF * 2 ** (hook.failures - TEMPORARILY_AFTER), _LONGEST_BACKOFF)
        hook.alert_status = "temporarily_disabled"
        hook.disabled_until = (now + backoff).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_push(project_id: int, path: str) -> dict[str, Any]:
    """The push GitLab's "Test" sends (Gitlab::DataBuilder::Push sample data, abridged to what names the
    project): a hook test of `push_events` carries it."""
    return {"object_kind": "push", "event_name": "push", "before": "0" * 40, "after": "1" * 40,
            "ref": "refs/heads/main", "user_username": "root", "project_id": project_id,
            "project": {"id": project_id, "path_with_namespace": path}, "commits": [], "total_commits_count": 0}
