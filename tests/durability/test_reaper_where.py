"""The reaper's failure note lands where the task speaks: a dead `/review` task's on the merge request.

A `/review` task is running in the store, but its arq job is gone from the real Redis (its worker
died and the job's keys expired). One reaper pass fails it and posts the note through the real
python-gitlab client on the fake GitLab: on merge request !7, not on issue #7 (which it used to).
"""

from __future__ import annotations

from typing import Any

from arq.connections import ArqRedis
from langchain_core.language_models import BaseChatModel

from bot.intake.authz import Authorizer
from bot.tasks.events import Actor, ForgeEvent
from bot.tasks.inbox import Inbox
from bot.tasks.queue import open_pool
from bot.worker.jobcontext import WorkerContext
from bot.worker.recovery import reap
from foundation.forge import RepoRef, open_forge
from foundation.settings import Settings
from tests.fakes.forge_http import FakeChange, FakeForgeState, FakeIssue


def _no_model(role: str) -> BaseChatModel:
    raise AssertionError("the reaper calls no model")


def _event(mode: str, target: str, number: int, delivery: str) -> ForgeEvent:
    return ForgeEvent(
        forge="gitlab", delivery_id=delivery, repo=RepoRef(forge="gitlab", project="1", path="group/project"),
        target=target, number=number, actor=Actor(id=1, username="root"), trigger="command",  # type: ignore[arg-type]
        mode=mode, title="t", body="b",  # type: ignore[arg-type]
    )


async def test_a_dead_review_task_fails_with_its_note_on_the_merge_request(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState
) -> None:
    fake_forge.add_issue("gitlab", "1", 7, FakeIssue(title="an issue with the same number", body=""))
    fake_forge.add_change("gitlab", "1", 7, FakeChange(title="Double totals", body="", source_branch="feature"))
    fake_forge.add_issue("gitlab", "1", 8, FakeIssue(title="an analysis", body=""))
    inbox = await Inbox.open(sqlite_path=settings.inbox_path)
    pool: ArqRedis = await open_pool(redis_url)
    try:
        for event in (_event("review", "change", 7, "review-7"), _event("analyze", "issue", 8, "analyze-8")):
            await inbox.record("gitlab", event.delivery_id, "Note Hook", event)
            assert await inbox.claim(event.task_id, event.delivery_id) is not None  # running; no arq job exists
        worker = WorkerContext(settings=settings, model_factory=_no_model, authorizer=Authorizer(settings),
                               forge_for_event=lambda event: open_forge(settings, event.forge), inbox=inbox)
        ctx: dict[str, Any] = {"worker": worker, "redis": pool}
        assert await reap(ctx) == 2
    finally:
        await pool.aclose()
        await inbox.close()
    on_change = [c.body for c in fake_forge.comments_on("gitlab", "1", 7, "change")]
    on_issue = [c.body for c in fake_forge.comments_on("gitlab", "1", 7, "issue")]
    assert len(on_change) == 1 and "could not finish this task" in on_change[0]
    assert on_issue == []
    (analysis,) = fake_forge.comments_on("gitlab", "1", 8, "issue")  # an issue's task still speaks on its issue
    assert "could not finish this task" in analysis.body
