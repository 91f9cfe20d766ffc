"""The receiver over HTTP with a real Redis and a real SQLite inbox: each trigger on each forge,
each ignored event, every bad-input case, dedupe, metrics and the delivery log line."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from bot.tasks.inbox import Inbox
from bot.web.app import create_app
from foundation.settings import Settings, TriggerSettings
from tests.conftest import GITHUB_SECRET, GITHUB_TOKEN, GITLAB_SECRET, GITLAB_TOKEN
from tests.fakes.samples import sample, sample_bytes
from tests.intake import deliveries
from tests.intake.payloads import GITHUB_BOT, GITLAB_BOT_ID, github_comment, gitlab_note


@pytest.fixture
def intake_settings(settings: Settings, redis_url: str) -> Settings:
    settings.redis_url = redis_url
    settings.triggers = TriggerSettings(analyze_label="Platform", implement_label="bug")
    settings.gitlab.bot_user_id = GITLAB_BOT_ID
    settings.github.bot_login = GITHUB_BOT
    return settings


@pytest.fixture
def client(intake_settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(intake_settings)) as test_client:
        yield test_client


def queued(redis_url: str) -> int:
    count: int = redis.Redis.from_url(redis_url).zcard("arq:queue")  # type: ignore[assignment]
    return count


def post(client: TestClient, forge: str, delivery: tuple[bytes, dict[str, str]]) -> Any:
    body, headers = delivery
    return client.post(deliveries.path(forge, body), content=body, headers=headers)


def inbox_of(client: TestClient) -> Inbox:
    inbox: Inbox = client.app_state["inbox"]
    return inbox


TRIGGERS = [
    ("gitlab", lambda: deliveries.gitlab(sample_bytes("gitlab/issue.labels-changed.json"), "Issue Hook"), "analyze"),
    ("gitlab", lambda: deliveries.gitlab(gitlab_note("/implement"), "Note Hook"), "implement"),
    ("gitlab", lambda: deliveries.gitlab(gitlab_note("/analyze"), "Confidential Note Hook"), "analyze"),
    ("gitlab", lambda: deliveries.gitlab(gitlab_note("/review", on="change"), "Note Hook"), "review"),
    ("github", lambda: deliveries.github(sample_bytes("github/issues.labeled.json"), "issues"), "implement"),
    ("github", lambda: deliveries.github(github_comment("/implement"), "issue_comment"), "implement"),
    ("github", lambda: deliveries.github(github_comment("/analyze"), "issue_comment"), "analyze"),
    ("github", lambda: deliveries.github(github_comment("/review", on="change"), "issue_comment"), "review"),
]


@pytest.mark.parametrize(("forge", "make", "mode"), TRIGGERS)
def test_each_trigger_is_recorded_and_queued(
    client: TestClient, redis_url: str, forge: str, make: Any, mode: str
) -> None:
    response = post(client, forge, make())
    assert response.status_code == 202, response.text
    assert response.json()["result"] == "accepted"
    tasks = asyncio.run(inbox_of(client).tasks())
    assert [(t.task_id, t.state, t.mode) for t in tasks] == [(response.json()["task"], "queued", mode)]
    assert queued(redis_url) == 1


@pytest.mark.parametrize(
    ("forge", "make"),
    [
        ("gitlab", lambda: deliveries.gitlab(gitlab_note("/cancel"), "Note Hook")),
        ("github", lambda: deliveries.github(github_comment("/cancel", on="change"), "issue_comment")),
        ("gitlab", lambda: deliveries.gitlab(gitlab_note("Use v2", discussion_id="abc"), "Note Hook")),
        ("github", lambda: deliveries.github(github_comment("Use v2"), "issue_comment")),
    ],
)
def test_cancel_and_reply_need_an_active_task(client: TestClient, redis_url: str, forge: str, make: Any) -> None:
    response = post(client, forge, make())
    assert (response.status_code, response.json()["result"]) == (200, "ignored")
    assert queued(redis_url) == 0


def test_cancel_with_a_queued_task_is_accepted(client: TestClient, redis_url: str) -> None:
    started = post(client, "gitlab", deliveries.gitlab(gitlab_note("/implement", id=1), "Note Hook"))
    cancel = post(client, "gitlab", deliveries.gitlab(gitlab_note("/cancel", id=2), "Note Hook"))
    assert cancel.status_code == 202 and cancel.json()["task"] == started.json()["task"]
    assert queued(redis_url) == 2 and len(asyncio.run(inbox_of(client).tasks())) == 1


@pytest.mark.parametrize("forge", ["gitlab", "github"])
def test_reply_to_a_waiting_task_is_accepted(client: TestClient, forge: str) -> None:
    if forge == "gitlab":
        ask = deliveries.gitlab(gitlab_note("/analyze", id=1), "Note Hook")
        reply = deliveries.gitlab(gitlab_note("Use v2", id=2, discussion_id="d1", type="DiscussionNote"), "Note Hook")
    else:
        ask = deliveries.github(github_comment("/analyze", id=1), "issue_comment")
        reply = deliveries.github(github_comment("Use v2", id=2), "issue_comment")
    task = post(client, forge, ask).json()["task"]
    inbox = inbox_of(client)
    asyncio.run(inbox.claim(task, "job-1"))
    asyncio.run(inbox.set_state(task, "waiting", "need_info"))
    response = post(client, forge, reply)
    assert (response.status_code, response.json()["task"]) == (202, task)


IGNORED = [
    ("gitlab", "Merge Request Hook", sample("gitlab/merge_request.open.json")),
    ("gitlab", "Push Hook", {"object_kind": "push"}),
    ("gitlab", "Note Hook", gitlab_note("/implement", action="update")),
    ("gitlab", "Note Hook", gitlab_note("/implement", noteable_type="Commit")),
    ("gitlab", "Note Hook", gitlab_note("/implement", author_id=GITLAB_BOT_ID)),
    ("gitlab", "Issue Hook", sample("gitlab/issue.labels-changed.json") | {"changes": {}}),
    ("github", "ping", sample("github/ping.json")),
    ("github", "issues", sample("github/issues.opened.json")),
    ("github", "issues", sample("github/issues.unlabeled.json")),
    ("github", "issue_comment", sample("github/issue_comment.edited.json")),
    ("github", "pull_request", sample("github/pull_request.opened.json")),
    ("github", "pull_request_review", sample("github/pull_request_review.submitted.json")),
    ("github", "pull_request_review_comment", sample("github/pull_request_review_comment.created.json")),
    ("github", "issue_comment", github_comment("/implement", user={"login": GITHUB_BOT, "id": 5})),
    ("github", "workflow_run", {"action": "completed"}),
]


@pytest.mark.parametrize(("forge", "event", "payload"), IGNORED)
def test_authentic_non_triggers_are_200_ignored(
    client: TestClient, redis_url: str, forge: str, event: str, payload: dict[str, Any]
) -> None:
    delivery = deliveries.gitlab(payload, event) if forge == "gitlab" else deliveries.github(payload, event)
    response = post(client, forge, delivery)
    assert (response.status_code, response.json()["result"]) == (200, "ignored")
    assert queued(redis_url) == 0


def _valid(forge: str, body: bytes | None = None) -> tuple[bytes, dict[str, str]]:
    if forge == "github":
        return deliveries.github(body or deliveries.body_of(github_comment("/implement")), "issue_comment")
    return deliveries.gitlab(body or deliveries.body_of(gitlab_note("/implement")), "Note Hook")


def _bad_cases(forge: str) -> list[tuple[str, dict[str, str], bytes | None, int]]:
    """(case, header changes ("" removes one), body (None: a valid one), expected status)."""
    wrong_shape = github_comment("/x") | {"comment": [1]} if forge == "github" else gitlab_note("/x") | {"issue": "17"}
    common = [
        ("text/plain", {"content-type": "text/plain"}, None, 415),
        ("form-encoded", {"content-type": "application/x-www-form-urlencoded"}, None, 415),
        ("no content type", {"content-type": ""}, None, 415),
        ("malformed JSON", {}, b'{"action": ', 400),
        ("not UTF-8", {}, b'{"a": "\xff"}', 400),
        ("deeply nested", {}, b"[" * 100_000 + b"]" * 100_000, 400),
        ("JSON array", {}, b"[1, 2]", 400),
        ("missing event header", {"x-github-event": "", "x-gitlab-event": ""}, None, 400),
        ("wrong shape", {}, deliveries.body_of(wrong_shape), 400),
    ]
    if forge == "github":
        return common + [
            ("wrong signature", {"x-hub-signature-256": "sha256=" + "0" * 64}, None, 401),
            ("missing signature", {"x-hub-signature-256": ""}, None, 401),
            ("sha1 only", {"x-hub-signature-256": "", "x-hub-signature": "sha1=00"}, None, 401),
        ]
    return common + [
        ("wrong token", {"x-gitlab-token": "guess"}, None, 401),
        ("missing token", {"x-gitlab-token": ""}, None, 401),
        ("token prefix", {"x-gitlab-token": GITLAB_SECRET[:-1]}, None, 401),
    ]


@pytest.mark.parametrize("forge", ["gitlab", "github"])
def test_every_bad_input_is_a_4xx_and_nothing_is_queued(client: TestClient, redis_url: str, forge: str) -> None:
    for case, changes, body, status in _bad_cases(forge):
        sent, headers = _valid(forge, body)
        headers = {k: v for k, v in (headers | changes).items() if v != ""}
        response = client.post(deliveries.path(forge, sent), content=sent, headers=headers)
        assert response.status_code == status, (case, response.text)
    assert queued(redis_url) == 0
    metrics = client.get("/metrics").text
    assert f'forgebot_webhook_deliveries_total{{forge="{forge}",result="unauthorized"}} 3.0' in metrics
    assert f'forgebot_webhook_deliveries_total{{forge="{forge}",result="rejected"}} 9.0' in metrics


@pytest.mark.parametrize("forge", ["gitlab", "github"])
def test_unconfigured_secret_accepts_nothing(intake_settings: Settings, forge: str) -> None:
    intake_settings.gitlab.webhook_secret = None
    intake_settings.github.webhook_secret = None
    with TestClient(create_app(intake_settings)) as client:
        assert post(client, forge, _valid(forge)).status_code == 401


def test_declared_oversized_body_is_413(intake_settings: Settings) -> None:
    intake_settings.max_body_bytes = 1024
    body, headers = deliveries.github(github_comment("x" * 5000), "issue_comment")
    with TestClient(create_app(intake_settings)) as client:
        assert client.post(deliveries.path("github", body), content=body, headers=headers).status_code == 413


def test_metrics_count_every_result(client: TestClient) -> None:
    accepted = deliveries.github(github_comment("/implement"), "issue_comment", delivery="d-1")
    assert post(client, "github", accepted).status_code == 202
    assert post(client, "github", accepted).json()["result"] == "duplicate"
    assert post(client, "github", deliveries.github(sample("github/ping.json"), "ping")).status_code == 200
    body, headers = deliveries.github(github_comment("/implement"), "issue_comment")
    hook = deliveries.path("github", body)
    assert client.post(hook, content=body, headers=headers | {"x-hub-signature-256": "x"}).status_code == 401
    malformed, signed = deliveries.github(b"{", "issue_comment")
    assert client.post(deliveries.path("github", malformed), content=malformed, headers=signed).status_code == 400
    text = client.get("/metrics").text
    for result in ("accepted", "duplicate", "ignored", "unauthorized", "rejected"):
        assert f'forgebot_webhook_deliveries_total{{forge="github",result="{result}"}} 1.0' in text
    assert 'forgebot_webhook_ack_seconds_count{forge="github"} 5.0' in text


def test_readyz_reports_redis_and_store(client: TestClient) -> None:
    response = client.get("/readyz")
    body = response.json()
    assert (response.status_code, body["redis"], body["store"]) == (200, True, True)
    assert body["bot"] == {"gitlab": "id 99", "github": "forgebot[bot]"}  # the test settings pin them


def test_one_structured_log_line_per_delivery_and_no_secret_anywhere(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    sent = [
        deliveries.github(github_comment("/implement"), "issue_comment", delivery="log-1"),
        deliveries.gitlab(gitlab_note("/implement"), "Note Hook", key="log-2"),
        deliveries.github(sample("github/ping.json"), "ping", delivery="log-3"),
    ]
    for (body, headers), forge in zip(sent, ["github", "gitlab", "github"], strict=True):
        client.post(deliveries.path(forge, body), content=body, headers=headers)
    body, headers = deliveries.gitlab(gitlab_note("/implement"), "Note Hook", key="log-4")
    wrong = headers | {"x-gitlab-token": GITLAB_SECRET + "x"}
    client.post(deliveries.path("gitlab", body), content=body, headers=wrong)
    lines = [
        r.getMessage() for r in caplog.records
        if r.name == "bot.intake.webhooks" and r.getMessage().startswith("webhook ")
    ]
    records = [json.loads(line.removeprefix("webhook ")) for line in lines]
    assert [(r["delivery"], r["result"]) for r in records] == [
        ("github:log-1", "accepted"),
        ("gitlab:log-2", "accepted"),
        ("github:log-3", "ignored"),
        ("gitlab:log-4", "unauthorized"),  # the id as claimed, unverified
    ]
    everything = "\n".join(r.getMessage() + str(r.args) + str(r.__dict__) for r in caplog.records)
    for secret in (GITLAB_SECRET, GITHUB_SECRET, GITLAB_TOKEN, GITHUB_TOKEN):
        assert secret not in everything


def test_eviction_policy_other_than_noeviction_is_reported_at_startup(
    intake_settings: Settings, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    server = redis.Redis.from_url(redis_url)
    server.config_set("maxmemory-policy", "allkeys-lru")
    try:
        with TestClient(create_app(intake_settings)):
            pass
    finally:
        server.config_set("maxmemory-policy", "noeviction")
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("maxmemory-policy is allkeys-lru" in message for message in errors)
    caplog.clear()
    with TestClient(create_app(intake_settings)):
        pass
    assert not [r for r in caplog.records if "maxmemory-policy" in r.getMessage()]


def test_a_receiver_bug_answers_500_so_the_forge_delivers_again(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An exception no rule expects (here: the parser breaks) is the receiver's fault, not the delivery's:
    500, which the forge retries (a 4xx would drop the delivery), and nothing recorded or queued."""
    import bot.intake.webhooks

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug in the parser")

    monkeypatch.setattr(bot.intake.webhooks, "parse_gitlab", broken)
    response = post(client, "gitlab", deliveries.gitlab(gitlab_note("/implement"), "Note Hook"))
    assert (response.status_code, response.json()) == (500, {"error": "delivery not understood"})
    assert queued(client.app_state["settings"].redis_url) == 0
    assert [r for r in caplog.records if r.exc_info and "delivery not understood" in r.getMessage()]
