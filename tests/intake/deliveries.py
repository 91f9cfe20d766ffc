"""Signed deliveries as the forges send them: body bytes plus the headers of HEADERS.md.

Each is signed with its project's own hook secret (derived from the master secret and the id
the body names) and belongs at that project's hook URL, `path(forge, body)`.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from bot.intake.webhooks import github_signature, project_secret
from tests.conftest import GITHUB_SECRET, GITLAB_SECRET

# the samples' projects: GitLab note samples name project 5, GitHub's Codertocat/Hello-World
DEFAULT_IDS = {"gitlab": 5, "github": 186853002}
MASTER = {"gitlab": GITLAB_SECRET, "github": GITHUB_SECRET}


def project_of(forge: str, body: bytes) -> int:
    """The project id `body` names, or the samples' project when it names none (or is not JSON)."""
    try:
        payload = json.loads(body)
        found = payload["project" if forge == "gitlab" else "repository"]["id"]
    except (ValueError, LookupError, TypeError, RecursionError):
        return DEFAULT_IDS[forge]
    return int(found) if isinstance(found, int) else DEFAULT_IDS[forge]


def secret(forge: str, project_id: int) -> str:
    """What `forgebot hooks` prints as the project's hook secret."""
    return project_secret(MASTER[forge].encode(), forge, project_id)  # type: ignore[arg-type]


def path(forge: str, body: bytes) -> str:
    """The hook URL path of the project `body` names."""
    return f"/webhooks/{forge}/{project_of(forge, body)}"


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
        "x-hub-signature-256": github_signature(secret("github", project_of("github", body)).encode(), body),
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
        "x-gitlab-token": secret("gitlab", project_of("gitlab", body)),
    }
    return body, headers
