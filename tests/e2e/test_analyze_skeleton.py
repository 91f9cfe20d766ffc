"""End to end per forge: a real label delivery over HTTP → 202 → arq worker on a real Redis → the
analyze graph with a SQLite checkpointer → the report comment on the fake forge, posted through the
real python-gitlab / PyGithub client."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
import redis
from langchain_core.language_models import BaseChatModel

from bot.app import create_app
from bot.jobs import build_worker
from bot.settings import Settings
from bot.webhooks import github_signature
from graph.schemas import AcceptanceCriterion, Analysis, Decomposition, Evidence
from tests.conftest import GITHUB_SECRET, GITLAB_SECRET
from tests.fakes.chat import answer, scripted
from tests.fakes.forge_http import FakeForgeState, FakeIssue
from tests.fakes.samples import sample_bytes
from tests.fakes.server import serving

DECOMPOSITION = Decomposition(
    criteria=[AcceptanceCriterion(id=1, text="The API can create, update and delete a file")],
    assumptions=["Files are addressed by repository path"],
)
ANALYSIS = Analysis(
    summary="The file API lives in the repository service.",
    affected_files=["src/Files/Api.php"],
    evidence=[Evidence(path="src/Files/Api.php", start_line=10, end_line=30, note="current read-only API")],
    impact="Callers of Api::read are unaffected.",
    risks=["Path traversal in file names"],
)


def _models() -> Callable[[str], BaseChatModel]:
    script = {
        "decomposer": scripted([answer(Decomposition, DECOMPOSITION, tokens=120)]),
        "analyzer": scripted([answer(Analysis, ANALYSIS, tokens=300)]),
    }
    return lambda role: script[role]


async def _run_worker(settings: Settings, redis_url: str, models: Callable[[str], BaseChatModel]) -> None:
    worker = build_worker(settings, redis_url, model_factory=models, burst=True, handle_signals=False)
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
    assert "`src/Files/Api.php:10-30` current read-only API" in report
    assert "Path traversal in file names" in report
    assert "mode analyze" in report and "420 tokens" in report  # the footer


async def test_gitlab_label_to_report(settings: Settings, redis_url: str, fake_forge: FakeForgeState) -> None:
    settings.redis_url = redis_url
    settings.triggers.analyze_label = "Platform"  # the sample adds "Platform"
    fake_forge.grant("gitlab", "1", "1", 30)  # the sample's actor, root (id 1), is a Developer
    fake_forge.add_issue("gitlab", "1", 23, FakeIssue(title="New API: create/update/delete file", body="..."))
    body = sample_bytes("gitlab/issue.labels-changed.json")
    headers = {
        "content-type": "application/json",
        "x-gitlab-event": "Issue Hook",
        "x-gitlab-token": GITLAB_SECRET,
        "idempotency-key": "3a427872-00df-429c-9bc9-a9475de2efe4",
    }
    with serving(create_app(settings)) as receiver:
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{receiver.url}/webhooks/gitlab", content=body, headers=headers)
    assert response.status_code == 202
    await _run_worker(settings, redis_url, _models())
    _assert_report([c.body for c in fake_forge.comments_on("gitlab", "1", 23)])


async def test_github_label_to_report(settings: Settings, redis_url: str, fake_forge: FakeForgeState) -> None:
    settings.redis_url = redis_url
    settings.triggers.analyze_label = "bug"  # the sample adds "bug"
    fake_forge.grant("github", "Codertocat/Hello-World", "Codertocat", "write")
    fake_forge.add_issue(
        "github",
        "Codertocat/Hello-World",
        1,
        FakeIssue(title="Spelling error in the README file", body="It looks like you accidently..."),
    )
    body = sample_bytes("github/issues.labeled.json")
    headers = {
        "content-type": "application/json",
        "x-github-event": "issues",
        "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
        "x-hub-signature-256": github_signature(GITHUB_SECRET.encode(), body),
    }
    with serving(create_app(settings)) as receiver:
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{receiver.url}/webhooks/github", content=body, headers=headers)
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
            response = await client.post(f"{receiver.url}/webhooks/{forge}", content=body, headers=headers)
    assert response.status_code == 401
    assert redis.Redis.from_url(redis_url).zcard("arq:queue") == 0
