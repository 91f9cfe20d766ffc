"""Signed deliveries as the forges send them: body bytes plus the headers of HEADERS.md."""

from __future__ import annotations

import json
import uuid
from typing import Any

from bot.webhooks import github_signature
from tests.conftest import GITHUB_SECRET, GITLAB_SECRET


def body_of(payload: dict[str, Any] | bytes) -> bytes:
    return payload if isinstance(payload, bytes) else json.dumps(payload, separators=(",", ":")).encode()


def github(payload: dict[str, Any] | bytes, event: str, delivery: str | None = None) -> tuple[bytes, dict[str, str]]:
    body = body_of(payload)
    headers = {
        "content-type": "application/json",
        "user-agent": "GitHub-Hookshot/044aadd",
        "x-github-event": event,
        "x-github-delivery": delivery or str(uuid.uuid4()),
        "x-github-hook-id": "292430182",
        "x-hub-signature-256": github_signature(GITHUB_SECRET.encode(), body),
    }
    return body, headers


def gitlab(payload: dict[str, Any] | bytes, event: str, key: str | None = None) -> tuple[bytes, dict[str, str]]:
    body = body_of(payload)
    headers = {
        "content-type": "application/json",
        "user-agent": "GitLab/17.1.0-pre",
        "idempotency-key": key or str(uuid.uuid4()),
        "x-gitlab-event": event,
        "x-gitlab-webhook-uuid": str(uuid.uuid4()),
        "x-gitlab-event-uuid": str(uuid.uuid4()),
        "x-gitlab-instance": "https://gitlab.example.com",
        "x-gitlab-token": GITLAB_SECRET,
    }
    return body, headers
