"""The durable inbox: every authentic delivery and every task, recorded before the forge gets a 2xx.

Redis is a work queue, not a record: it can be down, flushed or evicting. The inbox is the record.
A delivery id is remembered for `dedupe_hours` (≥ 72 h) whatever arq forgets; a semantic key
(issue or change, trigger, state) absorbs the same event sent by a group and a project hook; a
partial unique index allows one running or waiting task per issue or change, race-free on both
SQLite and Postgres. The sweeper re-enqueues accepted rows that no job has handled.

Postgres statements run on one thread per inbox, so the event loop never waits on the network;
SQLite statements run inline under a lock (microseconds each, with one sync per group commit).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeVar

from bot.tasks.batching import Batcher
from bot.tasks.events import ForgeEvent
from bot.tasks.inboxsql import Connection, connect_postgres, connect_sqlite, upgrade
from foundation.settings import Settings

IntakeResult = Literal["accepted", "duplicate", "ignored"]
TaskStatus = Literal["queued", "running", "waiting", "done", "failed", "cancelled"]
ACTIVE: tuple[TaskStatus, ...] = ("queued", "running", "waiting")
T = TypeVar("T")
CHECKPOINT_EVERY = 100  # commits between two WAL checkpoints on the inbox's thread


@dataclass(frozen=True)
class Intake:
    result: IntakeResult
    task_id: str | None = None
    reason: str = ""


@dataclass(frozen=True)
class TaskRow:
    task_id: str
    task_key: str
    state: TaskStatus
    mode: str
    delivery_id: str
    job_id: str  # the arq job running it: its own delivery's, or a reply's while it resumes
    detail: str
    event_json: str
    failure: str = ""  # a failed task's record (`graph.failure.TaskFailure` as JSON), "" otherwise
    link: str = ""  # the issue or change's web address, written by the service (its forge URL, then the forge's)


class _Record(NamedTuple):
    forge: str
    delivery_id: str
    event_name: str
    event: ForgeEvent | None
    now: float
    link: str = ""


@dataclass(frozen=True)
class Pending:
    """An accepted delivery that no job has handled yet."""

    delivery_id: str
    event_json: str


@dataclass(frozen=True)
class TaskFilter:
    """What the console's task list asks for: each field narrows the list when set."""

    state: str = ""
    mode: str = ""
    repo: str = ""  # "<forge>:<project>", the start of the task key
    offset: int = 0
    limit: int = 50


@dataclass(frozen=True)
class FailureGroup:
    """Failed tasks of one kind (the failure record's `kind`, kept as the task's detail) since a time."""

    kind: str
    count: int
    last_at: float
    latest: TaskRow  # the newest of them, whose record says what to do


@dataclass(frozen=True)
class ListedTask:
    row: TaskRow
    created_at: float
    updated_at: float
    tokens: int = 0  # what the finished task spent, recorded with its final state (0 until then)
    cost_usd: float = 0.0
    unpriced: tuple[str, ...] = ()  # models it called that have no price (its cost leaves them out)


_TASK_COLUMNS = ("t.task_id, t.task_key, t.state, t.mode, t.delivery_id, t.job_id, t.detail, d.event_json, t.failure,"
                 " t.link")
_TASK_FROM = "tasks t JOIN deliveries d ON d.delivery_id = t.delivery_id"


class Inbox:
    """Async facade over one SQL connection (SQLite file or Postgres)."""

    def __init__(self, connection: Connection, clock: Callable[[], float] = time.time) -> None:
        self._db = connection
        self._inline = connection.local
        self._lock = threading.Lock()
        self._clock = clock
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inbox")
        self._group: Batcher[_Record, Intake] = Batcher(self._commit)
        self._commits = 0
        self._checkpoint: asyncio.Future[None] | None = None

    @classmethod
    async def open(
        cls,
        sqlite_path: Path | None = None,
        postgres_url: str | None = None,
        clock: Callable[[], float] = time.time,
        sqlite_sync: Literal["normal", "full"] = "normal",
    ) -> Inbox:
        """Open (and create the tables of) the Postgres store if a URL is given, else the SQLite file."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inbox-open")
        loop = asyncio.get_running_loop()
        try:
            if postgres_url:
                conn = await loop.run_in_executor(executor, connect_postgres, postgres_url)
            elif sqlite_path is not None:
                conn = await loop.run_in_executor(executor, connect_sqlite, sqlite_path, sqlite_sync)
            else:
                raise ValueError("the inbox needs a SQLite path or a Postgres URL")
        finally:
            executor.shutdown()
        inbox = cls(conn, clock)
        await inbox._run(lambda: upgrade(conn))
        return inbox

    async def _run(self, fn: Callable[[], T]) -> T:
        if self._inline:
            # a local SQLite statement takes microseconds; a hop to a thread costs more than that
            # on a busy machine (GIL hand-over), so SQLite runs on the caller's thread, serialized
            with self._lock:
                return fn()
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    async def close(self) -> None:
        if self._checkpoint is not None:
            with contextlib.suppress(Exception):  # housekeeping; closing checkpoints anyway
                await self._checkpoint
        await self._run(self._db.close)
        self._executor.shutdown()

    async def ping(self) -> bool:
        return await self._run(lambda: self._db.one("SELECT 1") is not None)

    # --- the request path ------------------------------------------------------------------------

    async def record(
        self, forge: str, delivery_id: str, event_name: str, event: ForgeEvent | None, link: str = ""
    ) -> Intake:
        """Record one authentic delivery and decide its outcome; returns once it is committed.

        Group commit: deliveries arriving while a commit is in progress are written together in
        the next transaction, so a burst costs one disk sync per batch, not one per delivery.
        """
        return await self._group.submit(_Record(forge, delivery_id, event_name, event, self._clock(), link))

    async def _commit(self, records: list[_Record]) -> list[Intake]:
        results = await self._run(partial(self._write, records))
        self._commits += 1
        if self._commits >= CHECKPOINT_EVERY and (self._checkpoint is None or self._checkpoint.done()):
            self._commits = 0
            self._checkpoint = asyncio.get_running_loop().run_in_executor(self._executor, self._db.checkpoint)
        return results

    def _write(self, records: list[_Record]) -> list[Intake]:
        return self._db.transaction(lambda: [self._record(item) for item in records])

    def _record(self, item: _Record) -> Intake:
        forge, delivery_id, event_name, event, now, link = item
        fresh = self._db.execute(
            "INSERT INTO deliveries (delivery_id, forge, event_name, received_at, result) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT DO NOTHING",
            (delivery_id, forge, event_name[:100], now, "pending"),
        )
        if not fresh:
            return Intake("duplicate", reason="delivery id seen before")
        intake = self._decide(delivery_id, event, now, link)
        self._db.execute(
            "UPDATE deliveries SET result = ?, task_id = ?, event_json = ? WHERE delivery_id = ?",
            (
                intake.result,
                intake.task_id,
                event.model_dump_json() if intake.result == "accepted" and event else None,
                delivery_id,
            ),
        )
        return intake

    def _decide(self, delivery_id: str, event: ForgeEvent | None, now: float, link: str = "") -> Intake:
        if event is None:
            return Intake("ignored", reason="not a trigger")
        if not self._db.execute(
            "INSERT INTO semantic_keys (semantic_key, delivery_id, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (event.semantic_key, delivery_id, now),
        ):
            return Intake("duplicate", reason="same event through another hook")
        if event.trigger in ("reply", "cancel"):
            states: tuple[TaskStatus, ...] = ("waiting",) if event.trigger == "reply" else ACTIVE
            task = self._active(event.task_key, states)
            if task is None:
                return Intake("ignored", reason=f"no task to {event.trigger}")
            return Intake("accepted", task.task_id)
        self._db.execute(
            "INSERT INTO tasks (task_id, task_key, state, mode, delivery_id, job_id, detail, created_at, updated_at,"
            " link) VALUES (?, ?, 'queued', ?, ?, ?, '', ?, ?, ?) ON CONFLICT DO NOTHING",
            (event.task_id, event.task_key, event.mode or "", delivery_id, delivery_id, now, now, link[:1000]),
        )
        return Intake("accepted", event.task_id)

    def _active(self, task_key: str, states: tuple[TaskStatus, ...]) -> TaskRow | None:
        marks = ", ".join("?" for _ in states)
        row = self._db.one(
            f"SELECT {_TASK_COLUMNS} FROM {_TASK_FROM} WHERE t.task_key = ? AND t.state IN ({marks})"
            " ORDER BY t.created_at LIMIT 1",
            (task_key, *states),
        )
        return _task(row)

    # --- the job ---------------------------------------------------------------------------------

    async def active_task(self, task_key: str, states: tuple[TaskStatus, ...] = ACTIVE) -> TaskRow | None:
        return await self._run(lambda: self._active(task_key, states))

    async def task(self, task_id: str) -> TaskRow | None:
        return await self._run(
            lambda: _task(self._db.one(f"SELECT {_TASK_COLUMNS} FROM {_TASK_FROM} WHERE t.task_id = ?", (task_id,)))
        )

    async def tasks(self) -> list[TaskRow]:
        rows = await self._run(lambda: self._db.all(f"SELECT {_TASK_COLUMNS} FROM {_TASK_FROM} ORDER BY t.created_at"))
        return [row for row in map(_task, rows) if row is not None]

    async def tasks_in(self, state: TaskStatus) -> list[TaskRow]:
        """Tasks in one state, oldest change first; the `tasks_state` index keeps this as cheap
        as the number of such tasks (the reaper asks every few seconds, in every worker)."""
        rows = await self._run(lambda: self._db.all(
            f"SELECT {_TASK_COLUMNS} FROM {_TASK_FROM} WHERE t.state = ? ORDER BY t.updated_at", (state,)))
        return [row for row in map(_task, rows) if row is not None]

    async def waiting_longer_than(self, seconds: float) -> list[TaskRow]:
        """Tasks waiting for an answer whose last change is older than `seconds`."""
        cutoff = self._clock() - seconds
        rows = await self._run(lambda: self._db.all(
            f"SELECT {_TASK_COLUMNS} FROM {_TASK_FROM} WHERE t.state = 'waiting' AND t.updated_at < ?"
            " ORDER BY t.updated_at", (cutoff,)))
        return [row for row in map(_task, rows) if row is not None]

    async def claim(self, task_id: str, job_id: str, from_state: TaskStatus = "queued") -> TaskRow | None:
        """Move the task to `running` under arq job `job_id`; `None` when it is not in `from_state`
        or its item is busy.

        The partial unique index on running/waiting tasks makes a second claim on the same issue
        or change fail inside the database, so two workers cannot both win.
        """
        now = self._clock()

        def claim() -> bool:
            return self._db.execute(
                "UPDATE tasks SET state = 'running', job_id = ?, updated_at = ? WHERE task_id = ? AND state = ?",
                (job_id, now, task_id, from_state),
            )

        try:
            claimed = await self._run(lambda: self._db.transaction(claim))
        except self._db.integrity_errors:
            return None
        return await self.task(task_id) if claimed else None

    @property
    def integrity_errors(self) -> tuple[type[Exception], ...]:
        """What a write that breaks a uniqueness rule (one active task per item) raises."""
        return self._db.integrity_errors

    async def record_run(self, event: ForgeEvent, job_id: str) -> TaskRow:
        """Record a task this process runs itself (`forgebot run`), running under `job_id`.

        Its delivery is written as handled, so the sweeper never queues it for a worker; the task
        is listed like any other. Raises one of `integrity_errors` when the item has an active task.
        """
        now = self._clock()

        def write() -> None:
            self._db.execute(
                "INSERT INTO deliveries (delivery_id, forge, event_name, received_at, result, task_id, event_json,"
                " handled_at) VALUES (?, ?, 'run', ?, 'accepted', ?, ?, ?)",
                (event.delivery_id, event.forge, now, event.task_id, event.model_dump_json(), now),
            )
            self._db.execute(
                "INSERT INTO tasks (task_id, task_key, state, mode, delivery_id, job_id, detail, created_at,"
                " updated_at) VALUES (?, ?, 'running', ?, ?, ?, '', ?, ?)",
                (event.task_id, event.task_key, event.mode or "", event.delivery_id, job_id, now, now),
            )

        await self._run(lambda: self._db.transaction(write))
        found = await self.task(event.task_id)
        assert found is not None  # written above, in this transaction
        return found

    async def keyed(self, prefix: str, states: tuple[TaskStatus, ...] = ()) -> list[TaskRow]:
        """Tasks whose key starts with `prefix` (one repository's: `<forge>:<project>:`), newest first."""
        where, params = "substr(t.task_key, 1, ?) = ?", [len(prefix), prefix]
        if states:
            where += f" AND t.state IN ({', '.join('?' for _ in states)})"
            params += list(states)
        rows = await self._run(lambda: self._db.all(
            f"SELECT {_TASK_COLUMNS} FROM {_TASK_FROM} WHERE {where} ORDER BY t.created_at DESC", tuple(params)))
        return [row for row in map(_task, rows) if row is not None]

    async def set_state(
        self, task_id: str, state: TaskStatus, detail: str = "", only_from: tuple[TaskStatus, ...] = (),
        failure: str = "",
    ) -> bool:
        """Move a task to `state`; with `only_from`, only from one of those states (e.g. not over a cancel).

        `failure` is the failed task's record (JSON); any other state clears it.
        """
        now = self._clock()
        sql = "UPDATE tasks SET state = ?, detail = ?, updated_at = ?, failure = ? WHERE task_id = ?"
        params: tuple[Any, ...] = (state, detail[:500], now, failure if state == "failed" else "", task_id)
        if only_from:
            sql += f" AND state IN ({', '.join('?' for _ in only_from)})"
            params += only_from
        return await self._run(lambda: self._db.transaction(lambda: self._db.execute(sql, params)))

    async def set_link(self, task_id: str, link: str) -> None:
        """Keep the issue or change's web address as the forge gave it (the job, once it resolved the repository)."""
        sql = "UPDATE tasks SET link = ? WHERE task_id = ?"
        await self._run(lambda: self._db.transaction(lambda: self._db.execute(sql, (link[:1000], task_id))))

    async def handled(self, delivery_id: str) -> None:
        """The job is finished with this delivery: the sweeper leaves it alone from now on."""
        now = self._clock()
        sql = "UPDATE deliveries SET handled_at = ? WHERE delivery_id = ?"
        await self._run(lambda: self._db.transaction(lambda: self._db.execute(sql, (now, delivery_id))))

    async def task_times(self) -> dict[str, tuple[float, float]]:
        """task id → (created_at, updated_at) epoch seconds: durations for `forgebot tasks`, ages for retention."""
        rows = await self._run(lambda: self._db.all("SELECT task_id, created_at, updated_at FROM tasks"))
        return {str(r[0]): (float(r[1]), float(r[2])) for r in rows}

    # --- the console (read-only) ----------------------------------------------------------------

    async def task_page(self, query: TaskFilter) -> tuple[list[ListedTask], int]:
        """One page of tasks, newest first, and how many match in all (for the pager)."""
        where: list[str] = ["1 = 1"]
        params: list[Any] = []
        if query.state:
            where.append("t.state = ?")
            params.append(query.state)
        if query.mode:
            where.append("t.mode = ?")
            params.append(query.mode)
        if query.repo:  # exact key prefix, compared as text: no LIKE wildcards from the query string
            where.append("substr(t.task_key, 1, ?) = ?")
            params += [len(query.repo) + 1, query.repo + ":"]
        clause = " AND ".join(where)

        def page() -> tuple[list[tuple[Any, ...]], int]:
            total = self._db.one(f"SELECT COUNT(*) FROM tasks t WHERE {clause}", tuple(params))
            rows = self._db.all(
                f"SELECT {_TASK_COLUMNS}, {_SPENT_COLUMNS} FROM {_TASK_FROM}"
                f" WHERE {clause}"
                " ORDER BY t.created_at DESC, t.task_id LIMIT ? OFFSET ?",
                (*params, query.limit, query.offset),
            )
            return rows, int(total[0]) if total else 0

        rows, total = await self._run(page)
        listed = [found for r in rows if (found := _listed(r)) is not None]
        return listed, total

    async def task_repos(self) -> dict[str, str]:
        """`<forge>:<project>` → an event of that repository (its path is the label), for the filter."""

        def repos() -> dict[str, str]:
            keys = {":".join(str(r[0]).split(":")[:2]) for r in self._db.all("SELECT DISTINCT task_key FROM tasks")}
            found: dict[str, str] = {}
            for key in sorted(keys):
                row = self._db.one(
                    f"SELECT d.event_json FROM {_TASK_FROM} WHERE substr(t.task_key, 1, ?) = ? LIMIT 1",
                    (len(key) + 1, key + ":"),
                )
                found[key] = str(row[0]) if row else ""
            return found

        return await self._run(repos)

    async def failure_groups(self, since: float) -> list[FailureGroup]:
        """Tasks failed since `since` (epoch seconds), grouped by kind, the most frequent first."""

        def groups() -> list[FailureGroup]:
            counted = self._db.all(
                "SELECT detail, COUNT(*), MAX(updated_at) FROM tasks WHERE state = 'failed' AND updated_at >= ?"
                " GROUP BY detail ORDER BY COUNT(*) DESC, MAX(updated_at) DESC", (since,))
            found = []
            for kind, count, last in counted:
                row = _task(self._db.one(
                    f"SELECT {_TASK_COLUMNS} FROM {_TASK_FROM} WHERE t.state = 'failed' AND t.detail = ?"
                    " ORDER BY t.updated_at DESC LIMIT 1", (kind,)))
                if row is not None:
                    found.append(FailureGroup(str(kind), int(count), float(last), row))
            return found

        return await self._run(groups)

    async def listed(self, task_id: str) -> ListedTask | None:
        """One task as the console lists it."""
        row = await self._run(lambda: self._db.one(
            f"SELECT {_TASK_COLUMNS}, {_SPENT_COLUMNS} FROM {_TASK_FROM} WHERE t.task_id = ?", (task_id,)))
        return _listed(row) if row else None

    async def spent(self, task_id: str, tokens: int, cost_usd: float, unpriced: Sequence[str] = ()) -> None:
        """Record what a task spent (its final tokens and cost), so listing it needs no checkpoint read."""
        sql = "UPDATE tasks SET tokens = ?, cost_usd = ?, unpriced = ? WHERE task_id = ?"
        params = (tokens, cost_usd, ",".join(unpriced), task_id)
        await self._run(lambda: self._db.transaction(lambda: self._db.execute(sql, params)))

    # --- the sweeper -----------------------------------------------------------------------------

    async def unhandled(self, grace: float) -> list[Pending]:
        """Accepted deliveries older than `grace` seconds whose task is neither running nor finished."""
        rows = await self._run(
            lambda: self._db.all(
                "SELECT d.delivery_id, d.event_json FROM deliveries d LEFT JOIN tasks t ON t.task_id = d.task_id"
                " WHERE d.result = 'accepted' AND d.handled_at IS NULL AND d.received_at < ?"
                " AND (t.state IS NULL OR t.state IN ('queued', 'waiting')) ORDER BY d.received_at",
                (self._clock() - grace,),
            )
        )
        return [Pending(str(row[0]), str(row[1])) for row in rows]

    async def prune(self, keep_hours: float) -> bool:
        """Forget handled or non-accepted deliveries older than `keep_hours` (never below 72 h); True if any."""
        cutoff = self._clock() - max(keep_hours, 72.0) * 3600

        def prune() -> bool:
            self._db.execute("DELETE FROM semantic_keys WHERE created_at < ?", (cutoff,))
            return self._db.execute(
                "DELETE FROM deliveries WHERE received_at < ? AND (handled_at IS NOT NULL OR result <> 'accepted')"
                " AND delivery_id NOT IN (SELECT delivery_id FROM tasks)",
                (cutoff,),
            )

        return await self._run(lambda: self._db.transaction(prune))

    async def deliveries(self) -> list[tuple[str, str, str | None]]:
        """(delivery id, result, task id) of every remembered delivery, oldest first."""
        rows = await self._run(
            lambda: self._db.all("SELECT delivery_id, result, task_id FROM deliveries ORDER BY received_at")
        )
        return [(str(r[0]), str(r[1]), None if r[2] is None else str(r[2])) for r in rows]


_SPENT_COLUMNS = "t.created_at, t.updated_at, t.tokens, t.cost_usd, t.unpriced"


def _listed(row: tuple[Any, ...]) -> ListedTask | None:
    """A row of `_TASK_COLUMNS` then `_SPENT_COLUMNS`."""
    task = _task(row[:-5])
    if task is None:
        return None
    created, updated, tokens, cost, unpriced = row[-5:]
    return ListedTask(task, float(created), float(updated), int(tokens or 0), float(cost or 0.0),
                      tuple(name for name in str(unpriced or "").split(",") if name))


def _task(row: tuple[Any, ...] | None) -> TaskRow | None:
    if row is None:
        return None
    return TaskRow(*(str(value or "") for value in row))  # type: ignore[arg-type]


async def open_inbox(settings: Settings) -> Inbox:
    """The configured store: Postgres when `database_url` is set, else SQLite in the data dir."""
    url = settings.database_url.get_secret_value() if settings.database_url else None
    return await Inbox.open(sqlite_path=settings.inbox_path, postgres_url=url, sqlite_sync=settings.intake.inbox_sync)
