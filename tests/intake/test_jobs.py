"""The job's side of the intake on a real inbox, a real Redis and the real graph (scripted model):
authorization before the graph, the one-active-task rule, /cancel, replies resuming a waiting task."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from arq.worker import Retry
from langchain_core.language_models import BaseChatModel

import bot.worker.jobs
from bot.intake.authz import Authorizer
from bot.tasks.events import ForgeEvent, parse_gitlab
from bot.tasks.inbox import Inbox
from bot.tasks.queue import open_pool
from bot.worker.jobcontext import WorkerContext
from bot.worker.jobs import run_task
from foundation.forge import AccessLevel, ForgeUnavailable, Issue, IssueRef
from foundation.settings import Settings, TriggerSettings
from graph.schemas import AcceptanceCriterion, Analysis, Decomposition
from tests.fakes.checkout import local_checkout, php_project
from tests.fakes.forge import FakeForge
from tests.fakes.model_server import answer, scripted
from tests.graph.runtime.script import call
from tests.intake.payloads import gitlab_note, sample_repo, serve_samples

TRIGGERS = TriggerSettings()
ROOT = 1  # the note sample's author
CRITERIA = Decomposition(criteria=[AcceptanceCriterion(id=1, text="The client calls the v2 endpoint")])


def blocked_model(role: str) -> BaseChatModel:
    """The decomposer asks a question, so the analyze route ends with a blocked report (one call)."""
    return scripted([answer(Decomposition, Decomposition(questions=["Which endpoint?"]))])


@pytest.fixture
async def ctx(settings: Settings, tmp_path: Path, redis_url: str) -> AsyncIterator[dict[str, Any]]:
    inbox = await Inbox.open(sqlite_path=tmp_path / "inbox.sqlite")
    settings.questions.max_rounds = 0  # questions end the analyze route with a blocked report
    forge = FakeForge()
    forge.access[("5", ROOT)] = AccessLevel.DEVELOPER
    repo = forge.add_repo(sample_repo(settings))
    pool = await open_pool(redis_url)
    worker = WorkerContext(
        settings=settings, model_factory=blocked_model, forge_for_event=lambda event: forge,
        authorizer=Authorizer(settings), forge_factory=lambda kind: forge,
        checkout=local_checkout(php_project(tmp_path)), inbox=inbox,
    )
    # arq's context as a job sees it (the worker's object, arq's pool and try), with the test's own keys
    yield {"worker": worker, "redis": pool, "job_try": 1, "repo": repo, "forge": forge}
    await pool.aclose()
    await inbox.close()


async def deliver(ctx: dict[str, Any], text: str, comment_id: int) -> ForgeEvent:
    """What the receiver does: parse and record; returns the event the job gets."""
    delivery = f"gitlab:{comment_id}"
    event = parse_gitlab({"x-gitlab-event": "Note Hook"}, gitlab_note(text, id=comment_id), delivery, TRIGGERS)
    assert event is not None
    intake = await ctx["worker"].inbox.record("gitlab", delivery, "Note Hook", event)
    assert intake.result == "accepted", intake
    return event


def comments(ctx: dict[str, Any], event: ForgeEvent) -> list[str]:
    forge: FakeForge = ctx["forge"]
    notes = forge.comments.get(IssueRef(repo=ctx["repo"], number=event.number), [])
    return [note for note in notes if ":purpose=status -->" not in note]


def status_of(ctx: dict[str, Any], event: ForgeEvent) -> str:
    """The first line of the task's one status comment."""
    forge: FakeForge = ctx["forge"]
    notes = forge.comments.get(IssueRef(repo=ctx["repo"], number=event.number), [])
    (note,) = [note for note in notes if ":purpose=status -->" in note]
    return note.splitlines()[0]


async def state_of(ctx: dict[str, Any], task_id: str) -> tuple[str, str]:
    row = await ctx["worker"].inbox.task(task_id)
    assert row is not None
    return row.state, row.detail


async def test_allowed_command_runs_the_graph_and_finishes(ctx: dict[str, Any]) -> None:
    event = await deliver(ctx, "/analyze", 1)
    assert await run_task(ctx, event.model_dump_json()) == "blocked"
    assert await state_of(ctx, event.task_id) == ("done", "blocked")
    assert "Analysis blocked" in comments(ctx, event)[0]
    assert status_of(ctx, event) == "**Status: done (blocked)**"
    assert await ctx["worker"].inbox.unhandled(grace=-1) == []


@pytest.mark.parametrize("level", [AccessLevel.NONE, AccessLevel.GUEST, AccessLevel.REPORTER])
async def test_refused_actor_never_reaches_the_graph(ctx: dict[str, Any], level: AccessLevel) -> None:
    ctx["forge"].access[("5", ROOT)] = level
    ctx["worker"].model_factory = lambda role: pytest.fail("the graph ran for an unauthorized actor")
    event = await deliver(ctx, "/analyze", 2)
    assert await run_task(ctx, event.model_dump_json()) == "refused"
    state, detail = await state_of(ctx, event.task_id)
    assert state == "cancelled" and detail.startswith("refused: root has")
    assert comments(ctx, event) == []
    assert await ctx["worker"].inbox.unhandled(grace=-1) == []


async def test_second_trigger_while_one_runs_gets_a_busy_reply(ctx: dict[str, Any]) -> None:
    first = await deliver(ctx, "/implement", 3)
    await ctx["worker"].inbox.claim(first.task_id, first.delivery_id)  # a worker is running it
    second = await deliver(ctx, "/analyze", 4)
    assert await run_task(ctx, second.model_dump_json()) == "skipped"
    assert await state_of(ctx, second.task_id) == ("cancelled", f"busy: task {first.task_id} is active")
    (note,) = comments(ctx, second)
    assert f"Task {first.task_id} is already running here" in note and "/cancel" in note
    assert (await state_of(ctx, first.task_id))[0] == "running"


async def test_cancel_stops_a_running_task(ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    task = await deliver(ctx, "/analyze", 5)
    await ctx["worker"].inbox.claim(task.task_id, task.delivery_id)
    cancel = await deliver(ctx, "/cancel", 6)
    assert await run_task(ctx, cancel.model_dump_json()) == "cancelled"
    assert await state_of(ctx, task.task_id) == ("cancelled", "cancelled by root")
    assert f"Cancelled task {task.task_id}" in comments(ctx, cancel)[0]
    assert status_of(ctx, task) == "**Status: cancelled**"


async def test_cancelled_queued_task_never_starts(ctx: dict[str, Any]) -> None:
    task = await deliver(ctx, "/analyze", 7)
    cancel = await deliver(ctx, "/cancel", 8)
    await run_task(ctx, cancel.model_dump_json())
    ctx["worker"].model_factory = lambda role: pytest.fail("a cancelled task ran")
    assert await run_task(ctx, task.model_dump_json()) == "skipped"
    assert (await state_of(ctx, task.task_id))[0] == "cancelled"


async def test_reply_resumes_the_waiting_task_on_its_own_thread(ctx: dict[str, Any]) -> None:
    """Through the real `execute` and checkpointer: the decomposer asks, the task waits, the reply's
    job resumes the same thread with the answer, and the analysis is reported."""
    ctx["worker"].settings.questions.max_rounds = 1
    models = {
        "decomposer": scripted([answer(Decomposition, Decomposition(questions=["Which endpoint?"])),
                                answer(Decomposition, CRITERIA)]),
        "analyzer": scripted([call("finish_exploration", files=["src/Calculator.php"], reason="seen"),
                              answer(Analysis, Analysis(summary="Use the v2 endpoint in the client."))]),
    }
    ctx["worker"].model_factory = models.__getitem__
    task = await deliver(ctx, "/analyze", 9)
    issue = IssueRef(repo=ctx["repo"], number=task.number)  # the forge's own record; by a member: it reaches the model
    ctx["forge"].issues[issue] = Issue(ref=issue, title="Client", body="Move the client to the new API.",
                                       author="root", author_id=ROOT)
    assert await run_task(ctx, task.model_dump_json()) == "need_info"
    assert (await state_of(ctx, task.task_id))[0] == "waiting"
    (questions,) = comments(ctx, task)
    assert "Which endpoint?" in questions

    reply = await deliver(ctx, "Use the v2 endpoint.", 10)
    assert reply.trigger == "reply"
    assert await run_task(ctx, reply.model_dump_json()) == "reported"
    assert await state_of(ctx, task.task_id) == ("done", "reported")
    assert (await ctx["worker"].inbox.task(task.task_id)).job_id == reply.delivery_id
    # resumed from the checkpoint, not started again: the question is asked once, the decomposer's
    # second (and last) call carries the answer, and the analyzer sees it too
    asked, resumed = models["decomposer"].received
    assert "Use the v2 endpoint." not in str(asked[-1].content)
    assert "Use the v2 endpoint." in str(resumed[-1].content)
    assert "Use the v2 endpoint." in str(models["analyzer"].received[0][-1].content)
    posted = comments(ctx, task)
    assert posted[0] == questions and len(posted) == 2 and "### Analysis" in posted[1], posted


@pytest.fixture
def forge_down(monkeypatch: pytest.MonkeyPatch) -> None:
    """The task's run meets a forge outage (a 502)."""

    async def execute(settings: Settings, deps: Any, event: ForgeEvent, answer: Any, *_: Any) -> dict[str, Any]:
        raise ForgeUnavailable("502 from the forge")

    monkeypatch.setattr(bot.worker.jobs, "execute", execute)


@pytest.mark.usefixtures("forge_down")
async def test_forge_outage_on_the_last_try_fails_the_task_visibly(ctx: dict[str, Any]) -> None:
    task = await deliver(ctx, "/analyze", 11)
    ctx["job_try"] = ctx["worker"].settings.max_tries
    assert await run_task(ctx, task.model_dump_json()) == "failed"
    assert await state_of(ctx, task.task_id) == ("failed", "forge unavailable")
    (note,) = comments(ctx, task)
    assert f"task {task.task_id}" in note and "the forge did not answer, and retrying did not help" in note
    assert status_of(ctx, task) == "**Status: failed**"
    assert await ctx["worker"].inbox.unhandled(grace=-1) == []


@pytest.mark.usefixtures("forge_down")
async def test_a_forge_outage_before_the_last_try_defers_the_job_by_the_configured_back_off(
    ctx: dict[str, Any],
) -> None:
    ctx["worker"].settings.durability.retry_seconds = 7.0
    task = await deliver(ctx, "/analyze", 14)
    ctx["job_try"] = 2
    with pytest.raises(Retry) as deferred:
        await run_task(ctx, task.model_dump_json())
    assert deferred.value.defer_score == 28_000  # ms: 7 s, four times longer at the second try
    assert await state_of(ctx, task.task_id) == ("running", "")  # the next try carries on
    assert comments(ctx, task) == []


class StoreAwayAtTheEnd:
    """The real inbox, except that the first `failures` writes of a final state fail (the store is busy)."""

    def __init__(self, inner: Inbox, failures: int) -> None:
        self.inner, self.failures = inner, failures

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def set_state(self, task_id: str, state: str, *args: Any, **kwargs: Any) -> bool:
        if state in ("done", "failed", "waiting") and self.failures > 0:
            self.failures -= 1
            raise sqlite3.OperationalError("database is locked")
        return await self.inner.set_state(task_id, state, *args, **kwargs)  # type: ignore[arg-type]


async def test_a_finished_task_whose_end_cannot_be_written_at_first_is_still_done(ctx: dict[str, Any]) -> None:
    """Recording the end is retried: the task is done, not a failed job (on main the job raised, and the
    reaper later failed the finished task with a failure comment)."""
    event = await deliver(ctx, "/analyze", 15)
    ctx["worker"].inbox = StoreAwayAtTheEnd(ctx["worker"].inbox, failures=2)
    assert await run_task(ctx, event.model_dump_json()) == "blocked"
    assert await state_of(ctx, event.task_id) == ("done", "blocked")
    assert not any("could not finish" in note for note in comments(ctx, event))


async def test_a_retried_job_carries_on_with_its_own_running_task(ctx: dict[str, Any]) -> None:
    event = await deliver(ctx, "/analyze", 12)
    await ctx["worker"].inbox.claim(event.task_id, event.delivery_id)  # the first try claimed it, then was deferred
    assert await run_task(ctx, event.model_dump_json()) == "blocked"
    assert await state_of(ctx, event.task_id) == ("done", "blocked")


async def test_a_task_running_under_another_job_is_not_run_twice(ctx: dict[str, Any]) -> None:
    event = await deliver(ctx, "/analyze", 13)
    await ctx["worker"].inbox.claim(event.task_id, "gitlab:a-reply")  # resumed by a reply's job
    ctx["worker"].model_factory = lambda role: pytest.fail("ran twice")
    assert await run_task(ctx, event.model_dump_json()) == "skipped"
    assert (await state_of(ctx, event.task_id))[0] == "running"


async def test_no_token_or_secret_in_any_log_line_of_a_job(
    settings: Settings, redis_url: str, fake_forge: Any, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """The job path with the real python-gitlab adapter over HTTP, every logger at DEBUG."""
    settings.questions.max_rounds = 0
    from bot.tasks.queue import ArqQueue
    from bot.worker.jobs import build_worker
    from tests.conftest import GITHUB_SECRET, GITHUB_TOKEN, GITLAB_SECRET, GITLAB_TOKEN
    from tests.fakes.forge_http import FakeIssue

    caplog.set_level(logging.DEBUG)
    fake_forge.grant("gitlab", "5", "1", 30)
    fake_forge.add_issue("gitlab", "5", 17, FakeIssue(title="t", body="b"))
    serve_samples(fake_forge, settings)
    inbox = await Inbox.open(sqlite_path=settings.inbox_path)
    queue = await ArqQueue.connect(redis_url)
    try:
        event = parse_gitlab({"x-gitlab-event": "Note Hook"}, gitlab_note("/analyze", id=31), "gitlab:l1", TRIGGERS)
        assert event is not None
        await inbox.record("gitlab", event.delivery_id, "Note Hook", event)
        await queue.enqueue(event)
        worker = build_worker(
            settings, redis_url, model_factory=blocked_model, inbox=inbox, burst=True, handle_signals=False,
            checkout=local_checkout(php_project(tmp_path)),
        )
        try:
            await worker.main()
        finally:
            await worker.close()
        assert (await inbox.tasks())[0].state == "done"
    finally:
        await queue.close()
        await inbox.close()
    everything = "\n".join(f"{r.getMessage()} {r.args} {r.exc_text}" for r in caplog.records)
    assert "gitlab:l1" in everything
    for secret in (GITLAB_SECRET, GITHUB_SECRET, GITLAB_TOKEN, GITHUB_TOKEN):
        assert secret not in everything


async def test_the_production_worker_posts_expiry_notes_through_its_own_forge(
    settings: Settings, redis_url: str, fake_forge: Any, tmp_path: Path
) -> None:
    """`forgebot worker` has no injected forge factory (`forge_factory` is None): the sweeper's
    expiry note and the reaper's failure note open the forge from the settings instead of failing."""
    from bot.worker.jobs import build_worker, sweep_inbox
    from tests.fakes.forge_http import FakeIssue

    fake_forge.add_issue("gitlab", "5", 17, FakeIssue(title="t", body="b"))
    now = [1_000_000.0]
    inbox = await Inbox.open(sqlite_path=tmp_path / "inbox.sqlite", clock=lambda: now[0])
    pool = await open_pool(redis_url)
    try:
        event = parse_gitlab({"x-gitlab-event": "Note Hook"}, gitlab_note("/analyze", id=41), "gitlab:e1", TRIGGERS)
        assert event is not None
        await inbox.record("gitlab", event.delivery_id, "Note Hook", event)
        assert await inbox.claim(event.task_id, event.delivery_id) is not None
        assert await inbox.set_state(event.task_id, "waiting", "need_info")
        worker = build_worker(settings, redis_url, inbox=inbox, burst=True, handle_signals=False)
        assert worker.ctx["worker"].forge_factory is None  # as `forgebot worker` builds it
        now[0] += settings.questions.wait_hours * 3600 + 1
        await sweep_inbox({**worker.ctx, "redis": pool})
        assert (await inbox.task(event.task_id)).state == "cancelled"  # type: ignore[union-attr]
        (note,) = fake_forge.comments_on("gitlab", "5", 17)
        assert "No answer arrived within" in note.body
    finally:
        await pool.aclose()
        await inbox.close()


@pytest.mark.timeout(180)
async def test_the_sweeper_queues_a_stranded_delivery_while_the_only_job_slot_runs_a_task(
    settings: Settings, redis_url: str, tmp_path: Path
) -> None:
    """The sweeper is beside the job slot, not an arq cron job queued behind it: a delivery that never
    reached Redis is queued again within a sweep interval while a long task holds `max_jobs=1` (on main
    it waited for the running task to end)."""
    import asyncio

    import redis.asyncio as aioredis

    from bot.tasks.queue import ArqQueue
    from bot.worker.jobs import build_worker

    settings.questions.max_rounds = 0
    settings.intake.sweep_interval, settings.intake.sweep_grace = 5, 0
    forge = FakeForge()
    forge.access[("5", ROOT)] = AccessLevel.DEVELOPER
    forge.add_repo(sample_repo(settings))
    entered, release = asyncio.Event(), asyncio.Event()
    checkout = local_checkout(php_project(tmp_path))

    async def slow_checkout(*args: Any) -> dict[str, Any]:  # the running task's long first step
        entered.set()
        await release.wait()
        return await checkout(*args)

    inbox = await Inbox.open(sqlite_path=settings.inbox_path)
    queue = await ArqQueue.connect(redis_url)
    client = aioredis.Redis.from_url(redis_url)
    worker = build_worker(settings, redis_url, forge_factory=lambda kind: forge, model_factory=blocked_model,
                          inbox=inbox, checkout=slow_checkout, handle_signals=False)
    running = asyncio.create_task(worker.main())
    try:
        events = [parse_gitlab({"x-gitlab-event": "Note Hook"}, gitlab_note("/analyze", id=n, noteable_id=n),
                               f"gitlab:s{n}", TRIGGERS) for n in (41, 42)]
        first, stranded = [e for e in events if e is not None]
        stranded = stranded.model_copy(update={"number": 99})  # another issue: no busy answer
        assert (await inbox.record("gitlab", first.delivery_id, "Note Hook", first)).result == "accepted"
        await queue.enqueue(first)
        await asyncio.wait_for(entered.wait(), 60)  # the only slot is taken, the start-up sweep long done
        # a delivery recorded while Redis was away: in the task store, never queued
        assert (await inbox.record("gitlab", stranded.delivery_id, "Note Hook", stranded)).result == "accepted"
        deadline = asyncio.get_running_loop().time() + 30
        while await client.zscore("arq:queue", stranded.delivery_id) is None:
            assert asyncio.get_running_loop().time() < deadline, "the sweeper waited for the job slot"
            assert not running.done()
            await asyncio.sleep(0.2)
        assert (await inbox.task(first.task_id)).state == "running"  # type: ignore[union-attr]
    finally:
        release.set()
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
        await worker.close()
        await client.aclose()
        await queue.close()
        await inbox.close()
