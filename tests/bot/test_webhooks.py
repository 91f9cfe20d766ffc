"""The receiver: fail-closed verification, bad input, and enqueueing on a real Redis."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from starlette.testclient import TestClient

from bot.intake.webhooks import github_signature
from bot.web.app import create_app
from foundation.settings import Settings
from tests.fakes.samples import sample_bytes
from tests.intake.deliveries import path, project_of, secret

GITHUB_LABELED = sample_bytes("github/issues.labeled.json")
GITLAB_LABELED = sample_bytes("gitlab/issue.labels-changed.json")
GITHUB_HOOK = path("github", GITHUB_LABELED)  # each project's own hook URL and secret
GITLAB_HOOK = path("gitlab", GITLAB_LABELED)
GITLAB_SECRET = secret("gitlab", project_of("gitlab", GITLAB_LABELED))


def _queued(redis_url: str) -> int:
    return int(redis.Redis.from_url(redis_url).zcard("arq:queue"))


@pytest.fixture
def client(settings: Settings, redis_url: str) -> Iterator[TestClient]:
    settings.redis_url = redis_url
    settings.triggers.analyze_label = "bug"
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def _github_headers(body: bytes, event: str = "issues", key: str | None = None) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "x-github-event": event,
        "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
        "x-hub-signature-256": github_signature((key or secret("github", project_of("github", body))).encode(), body),
    }


def test_signed_github_label_is_accepted_and_queued(client: TestClient, redis_url: str) -> None:
    response = client.post(GITHUB_HOOK, content=GITHUB_LABELED, headers=_github_headers(GITHUB_LABELED))
    assert response.status_code == 202
    assert _queued(redis_url) == 1


def test_same_delivery_twice_is_a_duplicate(client: TestClient, redis_url: str) -> None:
    headers = _github_headers(GITHUB_LABELED)
    assert client.post(GITHUB_HOOK, content=GITHUB_LABELED, headers=headers).status_code == 202
    second = client.post(GITHUB_HOOK, content=GITHUB_LABELED, headers=headers)
    assert second.status_code == 200 and second.json() == {
        "result": "duplicate",
        "delivery": "github:72d3162e-cc78-11e3-81ab-4c9367dc0958",
    }
    assert _queued(redis_url) == 1


@pytest.mark.parametrize("secret", ["wrong secret", None])
def test_github_wrong_or_missing_signature_is_401_and_not_queued(
    client: TestClient, redis_url: str, secret: str | None
) -> None:
    headers = _github_headers(GITHUB_LABELED, key=secret or "x")
    if secret is None:
        del headers["x-hub-signature-256"]
    response = client.post(GITHUB_HOOK, content=GITHUB_LABELED, headers=headers)
    assert response.status_code == 401
    assert _queued(redis_url) == 0


def test_signed_ping_is_2xx(client: TestClient) -> None:
    body = sample_bytes("github/ping.json")
    response = client.post(path("github", body), content=body, headers=_github_headers(body, event="ping"))
    assert response.status_code == 200 and response.json()["result"] == "ignored"


@pytest.mark.parametrize("token", ["wrong", None])
def test_gitlab_wrong_or_missing_token_is_401(client: TestClient, redis_url: str, token: str | None) -> None:
    headers = {"content-type": "application/json", "x-gitlab-event": "Issue Hook"}
    if token is not None:
        headers["x-gitlab-token"] = token
    assert client.post(GITLAB_HOOK, content=GITLAB_LABELED, headers=headers).status_code == 401
    assert _queued(redis_url) == 0


def test_forge_without_configured_secret_accepts_nothing(settings: Settings, redis_url: str) -> None:
    settings.redis_url = redis_url
    settings.gitlab.webhook_secret = None
    headers = {"content-type": "application/json", "x-gitlab-event": "Issue Hook", "x-gitlab-token": ""}
    with TestClient(create_app(settings)) as client:
        assert client.post(GITLAB_HOOK, content=GITLAB_LABELED, headers=headers).status_code == 401
    assert _queued(redis_url) == 0


def test_bad_input_gets_4xx(client: TestClient) -> None:
    headers = _github_headers(b"{not json")
    assert client.post(GITHUB_HOOK, content=b"{not json", headers=headers).status_code == 400
    headers = _github_headers(b"x") | {"content-type": "text/plain"}
    assert client.post(GITHUB_HOOK, content=b"x", headers=headers).status_code == 415
    headers = {"content-type": "application/json", "x-gitlab-token": GITLAB_SECRET}
    assert client.post(GITLAB_HOOK, content=GITLAB_LABELED, headers=headers).status_code == 400


def test_oversized_body_is_413(settings: Settings, redis_url: str) -> None:
    settings.redis_url = redis_url
    settings.max_body_bytes = 1024
    body = b"[" + b"0," * 2000 + b"0]"
    with TestClient(create_app(settings)) as client:
        response = client.post(GITHUB_HOOK, content=body, headers=_github_headers(body))
    assert response.status_code == 413


def test_health_ready_and_metrics(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").status_code == 200
    client.post(GITHUB_HOOK, content=GITHUB_LABELED, headers=_github_headers(GITHUB_LABELED))
    text = client.get("/metrics").text
    assert 'forgebot_webhook_deliveries_total{forge="github",result="accepted"} 1.0' in text
