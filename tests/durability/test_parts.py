"""The durability parts in-process: safe checkpoint serde, marked node writes, lease release,
retention and the task listing (real SQLite, real Redis, real LangGraph checkpointers)."""

from __future__ import annotations

import asyncio
import contextlib
import pickle
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from arq.connections import ArqRedis
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph
from pydantic import SecretStr
from typing_extensions import TypedDict

from bot.cli.main import build_parser
from bot.cli.tasks_cli import collect, render, run
from bot.tasks.checkpoints import open_checkpointer, safe_serializer
from bot.tasks.inbox import Inbox, open_inbox
from bot.tasks.leases import LEASE_PREFIX, lease
from bot.tasks.queue import open_pool
from bot.worker.idempotency import task_forge
from bot.worker.jobs import build_worker
from bot.worker.recovery import fail_orphans, reap, release_abandoned
from bot.worker.retention import clean
from foundation.forge import IssueRef, RepoRef
from foundation.forge.inmemory import MemoryForge
from foundation.settings import Settings
from graph.runtime.trace import trace_path
from graph.schemas import Analysis
from tests.durability.harness import analyze_event, drop_schema, seed_forge
from tests.fakes.forge_http import FakeForgeState


@dataclass
class Foreign:
    command: str


def test_checkpoint_serde_never_unpickles_and_builds_only_allowed_types() -> None:
    serde = safe_serializer()
    with pytest.raises(NotImplementedError):
        serde.loads_typed(("pickle", pickle.dumps(Foreign("rm -rf /"))))
    permissive = JsonPlusSerializer(allowed_msgpack_modules=True)  # what a writer of the database could store
    loaded = serde.loads_typed(permissive.dumps_typed({"f": Foreign("x")}))
    assert loaded == {"f": {"command": "x"}}  # data, never an instance of an unlisted class
    analysis = Analysis(summary="kept")
    assert serde.loads_typed(serde.dumps_typed({"a": analysis})) == {"a": analysis}  # the product's contracts


class Flow(TypedDict, total=False):
    n: int


async def test_a_node_replayed_after_a_crash_edits_its_comment_instead_of_posting_again(tmp_path: Path) -> None:
    forge, ref = MemoryForge(), IssueRef(repo=RepoRef(forge="gitlab", project="1", path="g/p"), number=1)
    crash = {"armed": True}

    async def publish(state: Flow) -> Flow:
        wrapped = task_forge(forge, "task1")
        await wrapped.post_comment(ref, "report")
        await wrapped.post_comment(ref, "second note of the same node")
        if crash.pop("armed", False):
            raise RuntimeError("worker died before the checkpoint")
        return {"n": 1}

    graph: StateGraph[Flow] = StateGraph(Flow)
    graph.add_node("publish", publish)
    graph.add_edge(START, "publish")
    graph.add_edge("publish", END)
    config: Any = {"configurable": {"thread_id": "task1"}}
    # the product's checkpointer, opened again after the crash as a restarted worker opens it
    settings = Settings(_env_file=None, data_dir=tmp_path / "data")  # type: ignore[call-arg]
    async with open_checkpointer(settings) as saver:
        with pytest.raises(RuntimeError):
            await graph.compile(checkpointer=saver).ainvoke({"n": 0}, config, durability="sync")
    async with open_checkpointer(settings) as saver:
        assert await graph.compile(checkpointer=saver).ainvoke(None, config, durability="sync") == {"n": 1}
    bodies = [c.body for c in forge.posted[ref]]
    assert len(bodies) == 2 and bodies[0].startswith("report") and bodies[1].startswith("second note"), bodies
    # outside a graph the caller owns idempotency: nothing is added
    await task_forge(forge, "task1").post_comment(ref, "plain")
    assert forge.posted[ref][-1].body == "plain"


@pytest.fixture
async def pool(redis_url: str) -> Any:
    made: ArqRedis = await open_pool(redis_url)
    yield made
    await made.aclose()


async def test_release_frees_only_jobs_of_dead_workers(pool: ArqRedis) -> None:
    total = 70.0  # job_timeout + 10
    for job in ("dead", "alive", "fresh", "finished", "cron:sweep_inbox:1"):
        age = 0.5 if job == "fresh" else 5.0
        await pool.psetex(f"arq:in-progress:{job}", int((total - age) * 1000), b"1")
        if job != "finished":
            await pool.zadd("arq:queue", {job: 1})
    await pool.psetex(LEASE_PREFIX + "alive", 3000, b"1")
    assert await release_abandoned(pool, lease_seconds=2.0, in_progress_seconds=total) == ["dead"]
    assert not await pool.exists("arq:in-progress:dead")
    assert await pool.exists("arq:in-progress:alive", "arq:in-progress:fresh", "arq:in-progress:finished") == 3


async def _finished_task(settings: Settings, clock: list[float], number: int, state: str) -> str:
    inbox = await Inbox.open(sqlite_path=settings.inbox_path, clock=lambda: clock[0])
    try:
        event = analyze_event(number, f"retention-{number}")
        await inbox.record("gitlab", event.delivery_id, "Issue Hook", event)
        await inbox.set_state(event.task_id, state, "finished")  # type: ignore[arg-type]
    finally:
        await inbox.close()
    async with open_checkpointer(settings) as saver:
        graph: StateGraph[Flow] = StateGraph(Flow)
        graph.add_node("count", lambda s: {"n": 1})
        graph.add_edge(START, "count")
        compiled = graph.compile(checkpointer=saver)
        await compiled.ainvoke({"n": 0}, {"configurable": {"thread_id": event.task_id}}, durability="sync")
    trace = trace_path(settings.data_dir, event.task_id)
    trace.parent.mkdir(parents=True, exist_ok=True)
    trace.write_text("{}\n")
    return event.task_id


async def _has_checkpoint(settings: Settings, task: str) -> bool:
    async with open_checkpointer(settings) as saver:
        return await saver.aget_tuple({"configurable": {"thread_id": task, "checkpoint_ns": ""}}) is not None


async def test_retention_drops_checkpoints_and_traces_of_old_finished_tasks_only(tmp_path: Path) -> None:
    settings = Settings(_secrets_dir=None, data_dir=tmp_path / "data")  # type: ignore[call-arg]
    settings.data_dir.mkdir(parents=True)
    clock = [1_000_000.0]
    old = await _finished_task(settings, clock, 1, "done")
    clock[0] += 20 * 86400
    recent = await _finished_task(settings, clock, 2, "failed")
    running = await _finished_task(settings, clock, 3, "running")
    inbox = await Inbox.open(sqlite_path=settings.inbox_path)
    try:
        cleaned = await clean(settings, inbox, now=clock[0] + 86400)
    finally:
        await inbox.close()
    assert (cleaned.tasks, cleaned.traces) == (1, 1)
    assert not await _has_checkpoint(settings, old) and not trace_path(settings.data_dir, old).exists()
    for kept in (recent, running):
        assert await _has_checkpoint(settings, kept) and trace_path(settings.data_dir, kept).exists()
    lines = await collect(settings)
    assert [(t.task, t.state) for t in lines] == [(old, "done"), (recent, "failed"), (running, "running")]
    assert lines[0].link == "https://gitlab.com/group/project/-/issues/1"
    table = render(lines)
    assert table.splitlines()[0].split()[:6] == ["TASK", "STATE", "MODE", "TIME", "TOKENS", "COST"]
    assert "(finished)" in table.splitlines()[2]  # a failed task shows why
    args = build_parser().parse_args(["tasks", "--state", "failed", "--json"])
    assert args.handler is run and args.state == ["failed"]


async def test_lease_survives_a_blocked_event_loop_and_ends_with_the_block(redis_url: str, pool: ArqRedis) -> None:
    async with lease(redis_url, "busy-job", seconds=0.6):
        time.sleep(1.5)  # a node hogging the loop for longer than a lease: the worker is still alive
        assert await pool.exists(LEASE_PREFIX + "busy-job")
    assert not await pool.exists(LEASE_PREFIX + "busy-job")


@pytest.mark.postgres
async def test_workers_starting_together_migrate_the_postgres_checkpointer_once() -> None:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    from bot.tasks import checkpoints
    from tests.durability.conftest import postgres_schema

    url = postgres_schema()
    try:
        async with contextlib.AsyncExitStack() as stack:
            savers = [await stack.enter_async_context(AsyncPostgresSaver.from_conn_string(url)) for _ in range(4)]
            await asyncio.gather(*(checkpoints._migrate(saver, url) for saver in savers))  # no duplicate migration
        settings = Settings(_secrets_dir=None, database_url=SecretStr(url))  # type: ignore[call-arg]
        async with open_checkpointer(settings) as saver:
            assert await saver.aget_tuple({"configurable": {"thread_id": "none", "checkpoint_ns": ""}}) is None
    finally:
        drop_schema(url)


async def test_the_reaper_reads_running_tasks_only_and_through_an_index(tmp_path: Path, pool: ArqRedis) -> None:
    """The reaper runs every few seconds in every worker: its cost must follow what is running,
    not every task ever created. Each query it sends is checked with SQLite's own query plan."""
    inbox = await Inbox.open(sqlite_path=tmp_path / "inbox.sqlite")
    try:
        for number in range(40):
            old = analyze_event(number, f"old-{number}")
            await inbox.record("gitlab", old.delivery_id, "Issue Hook", old)
            await inbox.set_state(old.task_id, "done", "reported")
        orphan = analyze_event(99, "orphan")
        await inbox.record("gitlab", orphan.delivery_id, "Issue Hook", orphan)
        assert await inbox.claim(orphan.task_id, orphan.delivery_id) is not None  # its job is gone from Redis
        statements: list[str] = []
        raw = inbox._db._raw
        raw.set_trace_callback(statements.append)
        forge = MemoryForge()
        try:
            failed = await fail_orphans(inbox, pool, lambda kind: forge, tries=3)
        finally:
            raw.set_trace_callback(None)
        assert failed == [orphan.task_id]
        reads = [sql for sql in statements if sql.lstrip().upper().startswith("SELECT")]
        assert reads
        for sql in reads:
            plan = [str(row[-1]) for row in raw.execute("EXPLAIN QUERY PLAN " + sql).fetchall()]
            assert all(step.startswith("SEARCH") for step in plan), (sql, plan)  # no full SCAN of tasks
            assert any("tasks_state" in step for step in plan), plan
    finally:
        await inbox.close()


async def test_the_reaper_settles_a_finished_task_from_its_jobs_outcome(tmp_path: Path, redis_url: str,
                                                                      pool: ArqRedis) -> None:
    """A job that finished its task but could not record it (the store away through every retry) left
    the outcome as its result: the reaper finishes the task from it, never fails it or comments."""
    from arq.worker import Worker, func

    from bot.tasks.jobcodec import PLAIN
    from bot.tasks.queue import RUN_TASK

    inbox = await Inbox.open(sqlite_path=tmp_path / "inbox.sqlite")
    try:
        event = analyze_event(42, "finished-unrecorded")
        await inbox.record("gitlab", event.delivery_id, "Issue Hook", event)
        assert await inbox.claim(event.task_id, event.delivery_id) is not None

        async def finished(ctx: dict[str, Any], event_json: str) -> str:
            return "blocked"  # what run_task returns for a task it finished

        await pool.enqueue_job(RUN_TASK, event.model_dump_json(), _job_id=event.delivery_id)
        worker = Worker(functions=[func(finished, name=RUN_TASK)], redis_pool=pool, burst=True, poll_delay=0.01,
                        handle_signals=False, job_serializer=PLAIN.dumps, job_deserializer=PLAIN.loads)
        await worker.main()
        forge = MemoryForge()
        assert await fail_orphans(inbox, pool, lambda kind: forge, tries=3) == []
        task = await inbox.task(event.task_id)
        assert task is not None and (task.state, task.detail) == ("done", "blocked")
        assert not forge.comments
    finally:
        await inbox.close()


async def test_the_workers_own_reaper_posts_the_failure_note_on_the_forge(
    settings: Settings, redis_url: str, pool: ArqRedis, fake_forge: FakeForgeState
) -> None:
    """The worker as `forgebot worker` builds it (no injected forge factory): the reaper opens the
    forge the task's event names and its failure note reaches the forge over HTTP."""
    seed_forge(fake_forge, [41])
    inbox = await open_inbox(settings)
    try:
        event = analyze_event(41, "orphan-in-production")
        await inbox.record("gitlab", event.delivery_id, "Issue Hook", event)
        assert await inbox.claim(event.task_id, event.delivery_id) is not None  # its job is gone from Redis
        worker = build_worker(settings, redis_url, inbox=inbox)
        worker.ctx["redis"] = pool
        assert await reap(worker.ctx) == 1
    finally:
        await inbox.close()
    bodies = [c.body for c in fake_forge.comments_on("gitlab", "1", 41)]
    assert len(bodies) == 1 and bodies[0].startswith("forgebot could not finish this task"), bodies


@pytest.mark.postgres
async def test_workers_starting_together_create_the_postgres_inbox_tables_once() -> None:
    from tests.durability.conftest import postgres_schema

    url = postgres_schema()
    try:
        inboxes = await asyncio.gather(*(Inbox.open(postgres_url=url) for _ in range(8)))  # no duplicate CREATE
        try:
            assert await inboxes[0].tasks() == []
        finally:
            await asyncio.gather(*(inbox.close() for inbox in inboxes))
    finally:
        drop_schema(url)
