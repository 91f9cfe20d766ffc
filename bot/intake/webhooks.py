"""Webhook routes: verify → parse → record in the inbox → enqueue → 202.

The one forge call a delivery can cost is for a label added to an issue: which labels trigger is the
repository's own setting (`.forgebot.yml`), read through the forge's API, cached and bounded in
time (`bot.intake.repolabels`). Everything else is answered before any forge call.

Fail closed: a forge whose secret is not configured accepts nothing. Secrets are compared in
constant time. Authentic deliveries that are not triggers get 200 `ignored` (GitLab disables hooks
that keep failing); bad input gets a 4xx. A bug of the receiver's own gets a 500: a 4xx would tell the
forge the delivery is bad and not to send it again, and the delivery would be lost once the bug is fixed.

Each project's hook has its own secret, derived from the master secret and the project id in the
hook's URL (`/webhooks/gitlab/{project_id}`, `/webhooks/github/{repo_id}`; see `project_secret`),
and the payload must name that same project: a maintainer who knows their project's secret can
forge nothing for another. A GitHub App's deliveries (`/webhooks/github`) keep the App's secret;
the project-less URLs accept the master secret only with `intake.unscoped_hooks` (migration).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from prometheus_client import CollectorRegistry, Counter, Histogram
from pydantic import SecretStr
from starlette.requests import Request
from starlette.responses import JSONResponse

from bot.intake.bodies import BodyRefused, read_body
from bot.intake.repolabels import RepoLabels
from bot.tasks.events import (
    ForgeEvent,
    ForgeKind,
    PayloadError,
    adds_labels,
    claimed_id,
    installation_of,
    parse_github,
    parse_gitlab,
    web_link,
)
from bot.tasks.inbox import Inbox
from bot.tasks.queue import JobQueue
from foundation.settings import Settings, TriggerSettings

log = logging.getLogger(__name__)


class Rejection(Exception):
    """A delivery answered with a 4xx; `result` is the metrics label."""

    def __init__(self, status: int, result: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.result = result
        self.reason = reason


@dataclass
class Metrics:
    deliveries: Counter
    ack_seconds: Histogram

    @classmethod
    def create(cls, registry: CollectorRegistry) -> Metrics:
        return cls(
            deliveries=Counter(
                "forgebot_webhook_deliveries",
                "Webhook deliveries by outcome",
                ["forge", "result"],
                registry=registry,
            ),
            ack_seconds=Histogram(
                "forgebot_webhook_ack_seconds",
                "Time to answer a webhook delivery",
                ["forge"],
                registry=registry,
                buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
            ),
        )


def project_secret(master: bytes, forge: ForgeKind, project_id: int) -> str:
    """The hook secret of one project: HMAC-SHA256(master, "forge:id") in hex.

    Knowing it reveals neither the master secret nor any other project's secret.
    """
    return hmac.new(master, f"{forge}:{project_id}".encode(), hashlib.sha256).hexdigest()


def github_signature(secret: bytes, body: bytes) -> str:
    """Return the `X-Hub-Signature-256` value GitHub sends for `body`."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def _configured(secret: SecretStr | None) -> bytes | None:
    """The secret's bytes, or None when it is unset, empty or whitespace: such a key authenticates nothing.

    Settings already turns a blank secret into None; this also covers one assigned after validation.
    """
    if secret is None or not secret.get_secret_value().strip():
        return None
    return secret.get_secret_value().encode()


def _hook_key(settings: Settings, forge: ForgeKind, project_id: int | None) -> bytes:
    """The key this hook URL's deliveries are verified with; 401 when there is none.

    With a project id: that project's derived secret. Without: the GitHub App's secret when an
    App is configured, the master secret when `intake.unscoped_hooks` allows it, else nothing.
    """
    conf = settings.gitlab if forge == "gitlab" else settings.github
    master = _configured(conf.webhook_secret)
    if master is None:
        raise Rejection(401, "unauthorized", f"{forge} webhook secret is not configured")
    if project_id is not None:
        return project_secret(master, forge, project_id).encode()
    app = forge == "github" and settings.github.app_id is not None and settings.github.private_key is not None
    if app or settings.intake.unscoped_hooks:
        return master
    raise Rejection(401, "unauthorized", f"hook URL names no project: use /webhooks/{forge}/<project id>")


def _verify_github(key: bytes, headers: Any, body: bytes) -> None:
    sent = headers.get("x-hub-signature-256", "")
    expected = github_signature(key, body)
    if not hmac.compare_digest(sent.encode(), expected.encode()):
        raise Rejection(401, "unauthorized", "signature missing or wrong")


def _verify_gitlab(key: bytes, headers: Any) -> None:
    sent = headers.get("x-gitlab-token", "")
    if not hmac.compare_digest(sent.encode(), key):
        raise Rejection(401, "unauthorized", "token missing or wrong")


def _same_project(forge: ForgeKind, payload: dict[str, Any], project_id: int | None) -> None:
    """A scoped hook's payload must name the hook's own project (or none, like a ping)."""
    if project_id is None:
        return
    named = claimed_id(forge, payload)
    if named is not None and named != project_id:
        raise Rejection(401, "unauthorized", f"the payload names project {named}, the hook is for {project_id}")


async def _read_body(request: Request, limit: int) -> bytes:
    """The body through the app's one bounded reader (`bot.intake.bodies`): past `limit` bytes 413, past
    the body time limit 408, answered like every other rejection (counted and logged)."""
    try:
        return await read_body(request, limit)
    except BodyRefused as exc:
        raise Rejection(exc.status_code, "rejected", exc.reason) from None


def _sent_id(forge: ForgeKind, headers: Any, event_name: str) -> str:
    """The forge's retry-stable id: `X-GitHub-Delivery`, GitLab's `Idempotency-Key` (≥ 17.4).

    Older GitLab has only `X-Gitlab-Event-UUID`, shared by the events one request fires, so it is
    paired with the event name.
    """
    if forge == "github":
        return str(headers.get("x-github-delivery", ""))
    found = str(headers.get("idempotency-key", ""))
    if not found and headers.get("x-gitlab-event-uuid"):
        found = f"{event_name}:{headers.get('x-gitlab-event-uuid')}"
    return found


def _usable(sent: str) -> bool:
    return bool(sent) and len(sent) <= 200 and sent.isprintable()


def _delivery_id(forge: ForgeKind, headers: Any, event_name: str, body: bytes) -> str:
    """The dedupe key: the forge's id, or a hash of the body when there is none (or it is unusable)."""
    found = _sent_id(forge, headers, event_name)
    if not _usable(found):
        found = "body:" + hashlib.sha256(found.encode(errors="replace") + body).hexdigest()
    return f"{forge}:{found}"


def _decode(body: bytes) -> dict[str, Any]:
    """Decode with orjson: several times faster than `json` on a forge's 10-30 KB payloads, strict
    UTF-8, no NaN/Infinity, and a nesting limit instead of a RecursionError."""
    try:
        payload = orjson.loads(body)
    except (ValueError, RecursionError) as exc:  # orjson.JSONDecodeError is a ValueError
        raise Rejection(400, "rejected", "malformed JSON") from exc
    if not isinstance(payload, dict):
        raise Rejection(400, "rejected", "payload is not a JSON object")
    return payload


# where each forge puts the times of the thing that happened; the newest one found dates the event
_TIMESTAMPS = {
    "github": (("comment", "updated_at"), ("comment", "created_at"), ("review", "submitted_at"),
               ("issue", "updated_at"), ("pull_request", "updated_at")),
    "gitlab": (("object_attributes", "updated_at"), ("object_attributes", "created_at")),
}


def _parse_time(value: Any) -> datetime | None:
    """GitHub's `2019-05-15T15:20:18Z`, GitLab's `2019-06-05T14:32:20.211Z` or `2015-05-17 17:06:40 UTC`."""
    if not isinstance(value, str) or len(value) > 40:
        return None
    text = value.strip().removesuffix(" UTC").replace("Z", "+00:00")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _event_time(forge: ForgeKind, payload: dict[str, Any]) -> datetime | None:
    found = []
    for section, key in _TIMESTAMPS[forge]:
        part = payload.get(section)
        if isinstance(part, dict) and (when := _parse_time(part.get(key))) is not None:
            found.append(when)
    return max(found) if found else None


def _is_stale(forge: ForgeKind, payload: dict[str, Any], max_age_hours: float | None) -> bool:
    """True when the payload's own newest timestamp is older than `max_age_hours`: a replay of a
    captured delivery under a new id, past the dedupe window. Undated payloads are not judged."""
    if not max_age_hours:  # None or 0: off
        return False
    when = _event_time(forge, payload)
    return when is not None and (datetime.now(UTC) - when).total_seconds() > max_age_hours * 3600


def _has_nul(value: Any) -> bool:
    """True when any string in the event holds U+0000: no forge sends one, and PostgreSQL's TEXT
    cannot store it (the inbox would fail and the delivery get a 503 instead of a 400)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_nul(v) for v in value)
    return False


class Stale(Exception):
    """An authentic delivery whose event is too old: answered 200 `ignored`, not recorded or queued."""

    def __init__(self, delivery: str) -> None:
        super().__init__(delivery)
        self.delivery = delivery


@dataclass(frozen=True)
class Delivery:
    """An authentic, decoded delivery and the event it carries, if it is a trigger."""

    id: str
    event_name: str
    event: ForgeEvent | None


@dataclass(frozen=True)
class Outcome:
    """How one delivery was answered: metrics label, status, body and what the log line says."""

    result: str
    status: int
    body: dict[str, Any]
    reason: str = ""
    task: str = ""
    queued: bool = False


def _project_in_url(request: Request) -> int | None:
    found = request.path_params.get("project_id")
    if found is None:
        return None
    if not isinstance(found, int) or not 0 < found < 2**63:
        raise Rejection(404, "rejected", "no such hook URL")
    return found


async def _accept(request: Request, forge: ForgeKind) -> Delivery:
    settings: Settings = request.state.settings
    if not request.headers.get("content-type", "").lower().startswith("application/json"):
        raise Rejection(415, "rejected", "content type must be application/json")
    headers = request.headers
    project_id = _project_in_url(request)
    key = _hook_key(settings, forge, project_id)  # before the body: no key, nothing is read
    if forge == "gitlab":
        # the token is a header: a stranger is refused before a byte of the body is read
        _verify_gitlab(key, headers)
    body = await _read_body(request, settings.max_body_bytes)
    if forge == "github":
        _verify_github(key, headers, body)  # the HMAC needs the body
        event_name = headers.get("x-github-event", "")
    else:
        event_name = headers.get("x-gitlab-event", "")
    if not event_name:
        raise Rejection(400, "rejected", "event header missing")
    payload = _decode(body)
    _same_project(forge, payload, project_id)
    delivery = _delivery_id(forge, headers, event_name, body)
    if _is_stale(forge, payload, settings.intake.max_event_age_hours):
        raise Stale(delivery)
    triggers = await _triggers(request, forge, payload)
    try:
        if forge == "github":
            event = parse_github(headers, payload, delivery, triggers, settings.github.bot_login)
        else:
            event = parse_gitlab(headers, payload, delivery, triggers, settings.gitlab.bot_user_id)
    except PayloadError as exc:
        raise Rejection(400, "rejected", str(exc)) from exc
    if event is not None and _has_nul(event.model_dump()):
        raise Rejection(400, "rejected", "a field contains a NUL character")
    if event is not None and project_id is not None and event.repo_id != project_id:
        raise Rejection(401, "unauthorized", f"the event is on project {event.repo_id}, the hook is for {project_id}")
    return Delivery(delivery, event_name, event)


async def _triggers(request: Request, forge: ForgeKind, payload: dict[str, Any]) -> TriggerSettings:
    """The labels and commands this delivery is read with: a label delivery gets its repository's
    labels from `.forgebot.yml` (looked up by the repository id the verified payload names)."""
    settings: Settings = request.state.settings
    repo_id = claimed_id(forge, payload)
    if repo_id is None or not adds_labels(forge, request.headers, payload):
        return settings.triggers
    labels: RepoLabels = request.state.repo_labels
    return await labels.triggers(forge, repo_id, installation_of(payload))


async def _enqueue(request: Request, event: ForgeEvent) -> bool:
    """Queue the job; a Redis outage is not the forge's problem: the inbox row is already durable
    and the sweeper queues it later, so the answer stays 202."""
    queue: JobQueue = request.state.queue
    settings: Settings = request.state.settings
    try:
        await asyncio.wait_for(queue.enqueue(event), settings.intake.enqueue_timeout)
    except Exception as exc:  # any queue failure is recoverable by the sweeper
        log.warning("enqueue deferred to the sweeper delivery=%s error=%s", event.delivery_id, type(exc).__name__)
        return False
    return True


async def _outcome(request: Request, forge: ForgeKind, delivery: Delivery) -> Outcome:
    inbox: Inbox = request.state.inbox
    try:
        known = web_link(request.state.settings, delivery.event) if delivery.event else ""  # the service's forge URL
        intake = await inbox.record(forge, delivery.id, delivery.event_name, delivery.event, known)
    except Exception as exc:  # the store is down: no 2xx for what we could not record
        log.error("inbox unavailable delivery=%s error=%s", delivery.id, type(exc).__name__)
        return Outcome("rejected", 503, {"error": "store unavailable"}, reason="store unavailable")
    body: dict[str, Any] = {"result": intake.result, "delivery": delivery.id}
    if intake.result != "accepted" or delivery.event is None:
        return Outcome(intake.result, 200, body, reason=intake.reason)
    queued = await _enqueue(request, delivery.event)
    body["task"] = intake.task_id
    return Outcome("accepted", 202, body, task=intake.task_id or "", queued=queued)


async def receive(request: Request, forge: ForgeKind) -> JSONResponse:
    """Answer one delivery; the only place its outcome is decided, counted and logged."""
    metrics: Metrics = request.state.metrics
    started = time.perf_counter()
    sent = _sent_id(forge, request.headers, request.headers.get(f"x-{forge}-event", ""))
    delivery = Delivery(f"{forge}:{sent}" if _usable(sent) else "-", "-", None)  # as claimed, for the log
    try:
        delivery = await _accept(request, forge)
        outcome = await _outcome(request, forge, delivery)
    except Stale as stale:  # 2xx so the forge does not retry it, like any other ignored event
        body = {"result": "ignored", "delivery": stale.delivery}
        outcome = Outcome("ignored", 200, body, reason="event older than max_event_age_hours")
    except Rejection as rej:
        outcome = Outcome(rej.result, rej.status, {"error": rej.reason}, reason=rej.reason)
    except Exception:  # our bug, not the delivery's fault: 500, so the forge delivers it again, and the trace
        log.exception("delivery not understood forge=%s delivery=%s", forge, delivery.id)
        outcome = Outcome("rejected", 500, {"error": "delivery not understood"}, reason="internal error")
    elapsed = time.perf_counter() - started
    metrics.deliveries.labels(forge=forge, result=outcome.result).inc()
    metrics.ack_seconds.labels(forge=forge).observe(elapsed)
    fields = {
        "forge": forge,
        "delivery": delivery.id,
        "event": delivery.event_name[:100],
        "result": outcome.result,
        "status": outcome.status,
        "reason": outcome.reason,
        "task": outcome.task,
        "queued": outcome.queued,
        "ms": round(elapsed * 1000, 2),
    }
    log.info("webhook %s", orjson.dumps(fields, option=orjson.OPT_SORT_KEYS).decode())
    return JSONResponse(outcome.body, status_code=outcome.status)


async def gitlab_webhook(request: Request) -> JSONResponse:
    return await receive(request, "gitlab")


async def github_webhook(request: Request) -> JSONResponse:
    return await receive(request, "github")
