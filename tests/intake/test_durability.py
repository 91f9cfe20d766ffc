"""Durability over real HTTP (uvicorn), a real Redis and the SQLite inbox: a duplicate storm gives
one task, one event through two hooks gives one task, and a Redis outage loses no delivery."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from bot.cli.redisserver import PrivateRedis
from bot.tasks.inbox import Inbox
from bot.web.app import create_app
from bot.worker.jobs import build_worker
from foundation.forge import AccessLevel
from foundation.settings import Settings
from tests.fakes.checkout import local_checkout, php_project
from tests.fakes.forge import FakeForge
from tests.fakes.samples import sample
from tests.fakes.server import serving
from tests.intake import deliveries
from tests.intake.payloads import github_comment, gitlab_note, sample_repo
from tests.intake.test_jobs import blocked_model


async def _post_all(url: str, sent: list[tuple[bytes, dict[str, str]]], concurrency: int) -> list[httpx.Response]:
    """Post each delivery to its project's hook URL on the receiver at `url`."""
    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(timeout=30) as client:

        async def one(body: bytes, headers: dict[str, str]) -> httpx.Response:
            forge = "github" if "x-github-event" in headers else "gitlab"
            async with gate:
                return await client.post(url + deliveries.path(forge, body), content=body, headers=headers)

        return list(await asyncio.gather(*(one(b, h) for b, h in sent)))


def _queued(url: str) -> int:
    count: int = redis.Redis.from_url(url).zcard("arq:queue")  # type: ignore[assignment]
    return count


async def _tasks(settings: Settings) -> int:
    inbox = await Inbox.open(sqlite_path=settings.inbox_path)
    try:
        return len(await inbox.tasks())
    finally:
        await inbox.close()


@pytest.mark.parametrize("forge", ["gitlab", "github"])
async def test_duplicate_delivered_50_times_20_at_once_is_one_task(
    settings: Settings, redis_url: str, forge: str
) -> None:
    settings.redis_url = redis_url
    if forge == "gitlab":
        one = deliveries.gitlab(gitlab_note("/implement"), "Note Hook", key="3a427872-00df-429c-9bc9-a9475de2efe4")
    else:
        one = deliveries.github(github_comment("/implement"), "issue_comment", delivery="72d3162e-cc78-11e3")
    with serving(create_app(settings)) as server:
        responses = await _post_all(server.url, [one] * 50, concurrency=20)
    results = sorted((r.status_code, r.json()["result"]) for r in responses)
    assert results == [(200, "duplicate")] * 49 + [(202, "accepted")]
    assert await _tasks(settings) == 1
    assert _queued(redis_url) == 1


async def test_same_event_through_two_hooks_is_one_task(settings: Settings, redis_url: str) -> None:
    settings.redis_url = redis_url
    settings.triggers.analyze_label = "Platform"
    label = sample("gitlab/issue.labels-changed.json")
    sent = [
        deliveries.gitlab(label, "Issue Hook", key="group-hook-key"),  # the group hook
        deliveries.gitlab(label, "Issue Hook", key="project-hook-key"),  # the project hook
        deliveries.github(github_comment("/implement"), "issue_comment", delivery="repo-hook"),
        deliveries.github(github_comment("/implement"), "issue_comment", delivery="org-hook"),
    ]
    with serving(create_app(settings)) as server:
        gitlab = await _post_all(server.url, sent[:2], concurrency=2)
        github = await _post_all(server.url, sent[2:], concurrency=2)
    for pair in (gitlab, github):
        assert sorted(r.json()["result"] for r in pair) == ["accepted", "duplicate"]
    assert await _tasks(settings) == 2
    assert _queued(redis_url) == 2


@pytest.fixture
def own_redis() -> Iterator[PrivateRedis]:
    """A Redis this test may stop and restart (short path: Unix socket names are limited)."""
    directory = Path(tempfile.mkdtemp(prefix="fb-out-"))
    server = PrivateRedis(directory)
    server.start()
    yield server
    server.stop()
    shutil.rmtree(directory, ignore_errors=True)


def _note_on_issue(n: int) -> tuple[bytes, dict[str, str]]:
    payload = gitlab_note("/analyze", id=5000 + n)
    payload["issue"]["iid"] = 100 + n  # one issue each: no task waits behind another
    return deliveries.gitlab(payload, "Note Hook")


async def test_redis_outage_loses_no_accepted_delivery(
    settings: Settings, own_redis: PrivateRedis, tmp_path: Path
) -> None:
    settings.redis_url = own_redis.url
    settings.questions.max_rounds = 0  # each task ends with its blocked report
    settings.intake.enqueue_timeout = 0.5
    settings.intake.sweep_grace = 0
    sent = [_note_on_issue(n) for n in range(30)]
    with serving(create_app(settings)) as server:
        url = server.url
        before = await _post_all(url, sent[:10], concurrency=5)
        await asyncio.to_thread(own_redis.kill)  # abrupt: no shutdown save
        during = await _post_all(url, sent[10:20], concurrency=5)
        async with httpx.AsyncClient() as client:
            ready = await client.get(f"{server.url}/readyz")
        await asyncio.to_thread(own_redis.start)
        after = await _post_all(url, sent[20:], concurrency=5)
    assert (ready.status_code, ready.json()["redis"], ready.json()["store"]) == (503, False, True)
    assert [r.status_code for r in before + during + after] == [202] * 30
    assert _queued(own_redis.url) < 30  # the deliveries of the outage never reached Redis

    forge = FakeForge()
    forge.access[("5", 1)] = AccessLevel.DEVELOPER
    forge.add_repo(sample_repo(settings))
    worker = build_worker(
        settings,
        own_redis.url,
        forge_factory=lambda kind: forge,
        model_factory=blocked_model,
        burst=True,
        handle_signals=False,
        checkout=local_checkout(php_project(tmp_path)),
    )
    try:
        await worker.main()  # its start-up sweep re-enqueues what Redis never got
    finally:
        await worker.close()
    inbox = await Inbox.open(sqlite_path=settings.inbox_path)
    try:
        tasks = await inbox.tasks()
        assert len(tasks) == 30 and {t.state for t in tasks} == {"done"}
        assert await inbox.unhandled(grace=-1) == []
    finally:
        await inbox.close()
    assert sum(len(notes) for notes in forge.comments.values()) == 60  # a report and a status comment each
