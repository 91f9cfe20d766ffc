"""Webhook routes: verify → parse → enqueue → 202, before any forge, git or model call.

Fail closed: a forge whose secret is not configured accepts nothing. Secrets are compared in
constant time. Authentic deliveries that are not triggers get 200 `ignored` (GitLab disables hooks
that keep failing); bad input gets a 4xx and never a 500.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from pydantic import SecretStr
from starlette.requests import Request
from starlette.responses import JSONResponse

from bot.events import ForgeEvent, ForgeKind, PayloadError, parse_github, parse_gitlab
from bot.queue import JobQueue
from bot.settings import Settings

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


def github_signature(secret: bytes, body: bytes) -> str:
    """Return the `X-Hub-Signature-256` value GitHub sends for `body`."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def _verify_github(secret: SecretStr | None, headers: Any, body: bytes) -> None:
    if secret is None:
        raise Rejection(401, "unauthorized", "github webhook secret is not configured")
    sent = headers.get("x-hub-signature-256", "")
    expected = github_signature(secret.get_secret_value().encode(), body)
    if not hmac.compare_digest(sent.encode(), expected.encode()):
        raise Rejection(401, "unauthorized", "signature missing or wrong")


def _verify_gitlab(secret: SecretStr | None, headers: Any) -> None:
    if secret is None:
        raise Rejection(401, "unauthorized", "gitlab webhook secret is not configured")
    sent = headers.get("x-gitlab-token", "")
    if not hmac.compare_digest(sent.encode(), secret.get_secret_value().encode()):
        raise Rejection(401, "unauthorized", "token missing or wrong")


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise Rejection(413, "rejected", "body too large")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Rejection(413, "rejected", "body too large")
        chunks.append(chunk)
    return b"".join(chunks)


def _delivery_id(forge: ForgeKind, headers: Any, body: bytes) -> str:
    if forge == "github":
        found = headers.get("x-github-delivery")
    else:
        found = headers.get("idempotency-key") or headers.get("x-gitlab-event-uuid")
    if found:
        return f"{forge}:{found}"
    return f"{forge}:body:{hashlib.sha256(body).hexdigest()}"


async def _accept(request: Request, forge: ForgeKind) -> tuple[str, str, ForgeEvent | None]:
    settings: Settings = request.state.settings
    if not request.headers.get("content-type", "").startswith("application/json"):
        raise Rejection(415, "rejected", "content type must be application/json")
    body = await _read_body(request, settings.max_body_bytes)
    headers = request.headers
    if forge == "github":
        _verify_github(settings.github.webhook_secret, headers, body)
        event_name = headers.get("x-github-event")
    else:
        _verify_gitlab(settings.gitlab.webhook_secret, headers)
        event_name = headers.get("x-gitlab-event")
    if not event_name:
        raise Rejection(400, "rejected", "event header missing")
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Rejection(400, "rejected", "malformed JSON") from exc
    if not isinstance(payload, dict):
        raise Rejection(400, "rejected", "payload is not a JSON object")
    delivery = _delivery_id(forge, headers, body)
    parse = parse_github if forge == "github" else parse_gitlab
    try:
        event = parse(headers, payload, delivery, settings.triggers)
    except PayloadError as exc:
        raise Rejection(400, "rejected", str(exc)) from exc
    return delivery, event_name, event


async def receive(request: Request, forge: ForgeKind) -> JSONResponse:
    """Answer one delivery; the only place its outcome is decided and counted."""
    metrics: Metrics = request.state.metrics
    queue: JobQueue = request.state.queue
    started = time.perf_counter()
    delivery = "-"
    try:
        delivery, event_name, event = await _accept(request, forge)
        if event is None:
            result, status, body = "ignored", 200, {"result": "ignored"}
        elif await queue.enqueue(event):
            result, status, body = "accepted", 202, {"result": "accepted", "delivery": delivery}
        else:
            result, status, body = "duplicate", 200, {"result": "duplicate", "delivery": delivery}
    except Rejection as rej:
        result, status, body, event_name = rej.result, rej.status, {"error": rej.reason}, "-"
    metrics.deliveries.labels(forge=forge, result=result).inc()
    metrics.ack_seconds.labels(forge=forge).observe(time.perf_counter() - started)
    log.info("webhook forge=%s delivery=%s event=%s result=%s status=%s", forge, delivery, event_name, result, status)
    return JSONResponse(body, status_code=status)


async def gitlab_webhook(request: Request) -> JSONResponse:
    return await receive(request, "gitlab")


async def github_webhook(request: Request) -> JSONResponse:
    return await receive(request, "github")
