"""End to end per forge: a real label delivery over HTTP → 202 → arq worker on a real Redis → the
analyze graph with a SQLite checkpointer → the report comment on the fake forge, posted through the
real python-gitlab / PyGithub client."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
import redis
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage

from bot.intake.identity import Identities
from bot.intake.webhooks import github_signature
from bot.web.app import create_app
from bot.worker.jobs import build_worker
from foundation.settings import Settings
from graph.schemas import AcceptanceCriterion, Analysis, Decomposition, Evidence
from tests.e2e.conftest import allow_http_git, pointed_at
from tests.fakes.forge_http import FakeForgeState, FakeIssue
from tests.fakes.model_server import answer, scripted
from tests.fakes.samples import sample_bytes
from tests.fakes.server import serving
from tests.intake import deliveries

DECOMPOSITION = Decomposition(
    criteria=[AcceptanceCriterion(id=1, text="The API can create, update and delete a file")],
    assumptions=["Files are addressed by repository path"],
)
ANALYSIS = Analysis(
    summary="The file API lives in the repository service.",
    affected_files=["src/Calculator.php"],
    evidence=[Evidence(path="src/Calculator.php", start_line=9, end_line=12, note="current read-only API")],
    impact="Callers of Api::read are unaffected.",
    risks=["Path traversal in file names"],
)


def _models() -> Callable[[str], BaseChatModel]:
    script = {
        "decomposer": scripted([answer(Decomposition, DECOMPOSITION, tokens=120)]),
        "analyzer": scripted([AIMessage(content="nothing to look up"), answer(Analysis, ANALYSIS, tokens=300)]),
    }
    return lambda role: script[role]


async def _run_worker(settings: Settings, redis_url: str, models: Callable[[str], BaseChatModel]) -> None:
    worker = build_worker(settings, redis_url, model_factory=models, burst=True, handle_signals=False,
                          identities=Identities(settings))  # as `forgebot worker`: the bot's identity first
    try:
        await worker.main()
    finally:
        await worker.close()
    assert worker.jobs_failed == 0  # the job and the start-up sweep of the inbox


def _assert_report(comments: list[str]) -> None:
    assert len(comments) == 1
    report = comments[0]
    assert "### Analysis" in report
    assert "1. The API can create, update and delete a file" in report
    assert "`src/Calculator.php:9-12` current read-only API" in report
    assert "Path traversal in file names" in report
    assert "mode analyze" in report and "420 tokens" in report  # the footer


async def test_gitlab_label_to_report(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin_url: str
) -> None:
    settings.redis_url = redis_url
    allow_http_git(settings)
    fake_forge.members[("gitlab", "1", "7")] = "30"  # the issue's author is a developer
    settings.triggers.analyze_label = "Platform"  # the sample adds "Platform"
    fake_forge.grant("gitlab", "1", "1", 30)  # the sample's actor, root (id 1), is a Developer
    fake_forge.add_issue("gitlab", "1", 23, FakeIssue(title="New API: create/update/delete file", body="..."))
    body = pointed_at(sample_bytes("gitlab/issue.labels-changed.json"), origin_url)
    headers = {
        "content-type": "application/json",
        "x-gitlab-event": "Issue Hook",
        "x-gitlab-token": deliveries.secret("gitlab", 1),
        "idempotency-key": "3a427872-00df-429c-9bc9-a9475de2efe4",
    }
    with serving(create_app(settings)) as receiver:
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{receiver.url}/webhooks/gitlab/1", content=body, headers=headers)
    assert response.status_code == 202
    await _run_worker(settings, redis_url, _models())
    _assert_report([c.body for c in fake_forge.comments_on("gitlab", "1", 23)])


async def test_github_label_to_report(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin_url: str
) -> None:
    settings.redis_url = redis_url
    allow_http_git(settings)
    fake_forge.members[("github", "Codertocat/Hello-World", "alice")] = "write"
    settings.triggers.analyze_label = "bug"  # the sample adds "bug"
    fake_forge.grant("github", "Codertocat/Hello-World", "Codertocat", "write")
    fake_forge.add_issue(
        "github",
        "Codertocat/Hello-World",
        1,
        FakeIssue(title="Spelling error in the README file", body="It looks like you accidently..."),
    )
    body = pointed_at(sample_bytes("github/issues.labeled.json"), origin_url)
    headers = {
        "content-type": "application/json",
        "x-github-event": "issues",
        "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
        "x-hub-signature-256": github_signature(deliveries.secret("github", 186853002).encode(), body),
    }
    with serving(create_app(settings)) as receiver:
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{receiver.url}/webhooks/github/186853002", content=body, headers=headers)
    assert response.status_code == 202
    await _run_worker(settings, redis_url, _models())
    _assert_report([c.body for c in fake_forge.comments_on("github", "Codertocat/Hello-World", 1)])


@pytest.mark.parametrize("forge", ["gitlab", "github"])
async def test_wrong_secret_over_http_is_401_and_nothing_queued(settings: Settings, redis_url: str, forge: str) -> None:
    settings.redis_url = redis_url
    body = sample_bytes("github/issues.labeled.json" if forge == "github" else "gitlab/issue.labels-changed.json")
    headers = {
        "content-type": "application/json",
        "x-github-event": "issues",
        "x-gitlab-event": "Issue Hook",
        "x-hub-signature-256": github_signature(b"not the secret", body),
        "x-gitlab-token": "nope",
    }
    with serving(create_app(settings)) as receiver:
        async with httpx.AsyncClient() as client:
            response = await client.post(receiver.url + deliveries.path(forge, body), content=body, headers=headers)
    assert response.status_code == 401
    assert redis.Redis.from_url(redis_url).zcard("arq:queue") == 0
