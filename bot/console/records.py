"""What the console shows, read from the stores the bot already keeps.

Task rows, states and times come from the task store (the inbox); tokens, cost, gates, findings,
questions and answers from the task's last checkpoint (the graph's own record); the story from the
task's trace file in the data directory; queue health from Redis. Every text that came from a
repository, a model or a check passes through `redact` before it reaches a page, and nothing here
writes.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from arq.constants import default_queue_name
from pydantic import ValidationError

from bot.console import timeline
from bot.tasks.events import ForgeEvent, web_link
from bot.tasks.inbox import FailureGroup, Inbox, ListedTask, TaskFilter, TaskRow
from bot.tasks.leases import LEASE_PREFIX
from bot.tasks.presence import MISSED, Presence, workers
from foundation.redact import redact, secrets_of
from foundation.settings import Settings
from graph.failure import TaskFailure, failure_of_state
from graph.runtime.accounting import cost_text
from graph.runtime.trace import read_trace, trace_path

REPOS_SECONDS = 30.0  # the repository filter's choices: a new repository shows up within this
TRACE_EVENTS_SHOWN = 2000  # a page stays readable and fast; the rest is in `forgebot trace`
FAILURE_HOURS = 24.0  # the health page groups the failures of this many hours by reason


@dataclass(frozen=True)
class TaskSummary:
    task_id: str
    state: str
    mode: str
    repo: str
    target: str  # "issue #12" / "merge request !3" / "pull request #3"
    link: str
    started: float
    seconds: float
    tokens: int
    cost_usd: float
    detail: str
    failure: TaskFailure | None = None  # a failed task's record (redacted for the page)
    unpriced: tuple[str, ...] = ()  # models it called that have no price

    @property
    def cost(self) -> str:
        """The cost as the pages show it: "$0.0123", "free", "no price" or "—" (`cost_text`)."""
        return cost_text(self.cost_usd, self.tokens, self.unpriced)

    @property
    def why(self) -> str:
        """What the list says under a failed or cancelled task's state."""
        return self.failure.reason if self.failure is not None else self.detail


@dataclass(frozen=True)
class RoleCost:
    role: str
    calls: int
    tokens: int
    cost_usd: float


@dataclass
class TaskDetail:
    summary: TaskSummary
    roles: list[RoleCost]
    unpriced: list[str]
    gates: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    verdict: str
    questions: list[str]
    answers: list[dict[str, Any]]
    failure: TaskFailure | None
    change: dict[str, Any]
    bars: list[timeline.Drawn]
    total_seconds: float
    groups: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)  # trace events by node
    trace_note: str = ""


@dataclass(frozen=True)
class Lease:
    job_id: str
    task_id: str
    worker: str
    seconds_left: float


@dataclass(frozen=True)
class FailureKind:
    """Failed tasks of one kind for the health page, with the newest one's record."""

    kind: str
    count: int
    last_at: float
    task_id: str
    failure: TaskFailure | None


@dataclass
class Health:
    queue_ok: bool
    depth: int = 0
    oldest_seconds: float | None = None
    leases: list[Lease] = field(default_factory=list)
    workers: list[Presence] = field(default_factory=list)
    failures: list[TaskSummary] = field(default_factory=list)
    by_kind: list[FailureKind] = field(default_factory=list)
    failure_hours: float = FAILURE_HOURS
    silence: float = 0.0  # seconds after which a worker that stopped announcing itself is gone


class Records:
    """Read access for the pages: one inbox, one checkpointer and one Redis client, opened by the app."""

    def __init__(self, settings: Settings, inbox: Inbox, saver: Any, redis: Any | None) -> None:
        self.settings = settings
        self.inbox = inbox
        self.saver = saver
        self.redis = redis
        self._secrets = secrets_of(settings)
        self._repos: tuple[float, list[tuple[str, str]]] | None = None

    def clean(self, text: Any) -> str:
        return redact(str(text), self._secrets)

    def failure(self, row: TaskRow, values: dict[str, Any] | None = None) -> TaskFailure | None:
        """A failed task's record, every text redacted; a route's own failure from its state when none is stored."""
        found = TaskFailure.from_json(row.failure)
        if found is None and row.state == "failed" and values and values.get("failure"):
            found = failure_of_state(values, self._secrets)
        if found is None:
            return None
        return found.cleaned(self.clean)

    async def values(self, task_id: str) -> dict[str, Any]:
        """The task's last checkpointed state ({} when it has none: queued, or pruned)."""
        found = await self.saver.aget_tuple({"configurable": {"thread_id": task_id, "checkpoint_ns": ""}})
        return dict(found.checkpoint.get("channel_values", {})) if found else {}

    async def page(self, query: TaskFilter) -> tuple[list[TaskSummary], int]:
        listed, total = await self.inbox.task_page(query)
        return [self.summary(item, await self._spending(item)) for item in listed], total

    async def _spending(self, item: ListedTask) -> dict[str, Any]:
        """Tokens and cost: recorded with a task's final state; a live (or older-release) one's from its checkpoint."""
        if item.tokens or item.row.state == "queued":
            return {"tokens": item.tokens, "usage": {"cost_usd": item.cost_usd, "unpriced": list(item.unpriced)}}
        return await self.values(item.row.task_id)

    async def repos(self) -> list[tuple[str, str]]:
        """(filter value, label) of every repository that has tasks; re-read at most every `REPOS_SECONDS`."""
        if self._repos is not None and time.monotonic() - self._repos[0] < REPOS_SECONDS:
            return self._repos[1]
        found = await self.inbox.task_repos()
        out = []
        for key, event_json in found.items():
            label = key
            with contextlib.suppress(ValidationError, ValueError):
                event = ForgeEvent.model_validate_json(event_json)
                label = event.repo.path or event.repo.project
            out.append((key, self.clean(label)))
        self._repos = (time.monotonic(), sorted(out, key=lambda pair: pair[1]))
        return self._repos[1]

    async def repo_key(self, named: str) -> str | None:
        """The filter value of the repository `named`: its key, its path (`group/app`) or `forge:path`,
        compared without case; None when no repository with tasks has that name."""
        wanted = named.strip().lower()
        for key, label in await self.repos():
            forge = key.split(":", 1)[0]
            if wanted in (key.lower(), label.lower(), f"{forge}:{label}".lower()):
                return key
        return None

    def summary(self, item: ListedTask, values: dict[str, Any]) -> TaskSummary:
        row, now = item.row, time.time()
        event = ForgeEvent.model_validate_json(row.event_json)
        end = now if row.state in ("queued", "running") else item.updated_at
        usage = values.get("usage") or {}
        word = {"issue": "issue #", "change": "merge request !" if event.forge == "gitlab" else "pull request #"}
        return TaskSummary(
            task_id=row.task_id, state=row.state, mode=row.mode or "-",
            repo=self.clean(event.repo.path or event.repo.project),
            target=self.clean(f"local run #{event.number} in {event.repo.clone_url}") if event.forge == "local"
            else f"{word.get(event.target, '#')}{event.number}",
            link="" if event.forge == "local" else row.link or web_link(self.settings, event),  # a checkout has none
            started=item.created_at, seconds=max(end - item.created_at, 0.0),
            tokens=int(values.get("tokens") or usage.get("tokens") or 0),
            cost_usd=float(usage.get("cost_usd") or 0.0), detail=self.clean(row.detail),
            failure=self.failure(row), unpriced=tuple(self.clean(m) for m in usage.get("unpriced") or ()),
        )

    async def detail(self, task_id: str) -> TaskDetail | None:
        item = await self.inbox.listed(task_id)
        if item is None:
            return None
        row, values = item.row, await self.values(task_id)
        # tokens and cost as the list shows them: a failed node's calls are in the task's row, in no checkpoint
        summary = self.summary(item, values if not item.tokens else await self._spending(item))
        usage = values.get("usage") or {}
        gates = [{**g, "detail": self.clean(g.get("detail", ""))} for g in values.get("gates") or []]
        failure = self.failure(row, values)
        events, note = self._trace(task_id, row.state, failure)
        gates_failed = any(g.get("status") == "failed" for g in gates)
        end = time.time() if row.state in ("queued", "running") else item.updated_at
        found = timeline.bars(await self.steps(task_id), end, events, state=row.state, gates_failed=gates_failed)
        drawn, total = timeline.layout(found)
        review = values.get("review") or {}
        return TaskDetail(
            summary=summary,
            roles=[RoleCost(role, int(u.get("calls", 0)), int(u.get("input", 0)) + int(u.get("output", 0)),
                            float(u.get("cost_usd", 0.0))) for role, u in sorted((usage.get("roles") or {}).items())],
            unpriced=[self.clean(m) for m in usage.get("unpriced") or []],
            gates=gates,
            findings=[{k: self.clean(v) for k, v in f.items()} for f in review.get("findings") or []],
            verdict=self.clean(values.get("verdict") or review.get("verdict") or ""),
            questions=[self.clean(q) for q in values.get("questions") or []],
            answers=[self._answer(a) for a in values.get("answers") or []],
            failure=failure,
            change=dict(values.get("change") or {}),
            bars=drawn, total_seconds=total, groups=self._grouped(found, events), trace_note=note,
        )

    async def steps(self, task_id: str) -> list[timeline.Step]:
        """The task's checkpoint history (every thread namespace of the root graph), oldest first."""
        steps = []
        async for item in self.saver.alist({"configurable": {"thread_id": task_id, "checkpoint_ns": ""}}):
            with contextlib.suppress(KeyError, ValueError, TypeError):
                when = datetime.fromisoformat(item.checkpoint["ts"]).timestamp()
                steps.append(timeline.Step(when, timeline.scheduled(item.checkpoint.get("updated_channels"))))
        return sorted(steps, key=lambda step: step.ts)

    def _grouped(self, found: list[timeline.Bar], events: list[dict[str, Any]]) -> list[tuple[str, list[Any]]]:
        shown = [{"seq": e.get("seq"), "ts": e.get("ts", -1), "kind": e.get("kind", "?"), "text": self.clean(_line(e))}
                 for e in events]
        return timeline.grouped(found, shown)

    def _answer(self, answer: dict[str, Any]) -> dict[str, Any]:
        return {"author": self.clean(answer.get("author", "")), "body": self.clean(answer.get("body", "")),
                "questions": [self.clean(q) for q in answer.get("questions", [])]}

    def _trace(self, task_id: str, state: str, failure: TaskFailure | None) -> tuple[list[dict[str, Any]], str]:
        try:
            events = read_trace(trace_path(self.settings.data_dir, task_id))
        except FileNotFoundError:
            return [], self._no_trace(state, failure)
        if len(events) > TRACE_EVENTS_SHOWN:
            note = f"showing the first {TRACE_EVENTS_SHOWN} of {len(events)} events; `forgebot trace {task_id}`"
            return events[:TRACE_EVENTS_SHOWN], note
        return events, ""

    @staticmethod
    def _no_trace(state: str, failure: TaskFailure | None) -> str:
        """Why a task has no trace here: said from what is known of it, never guessed at the deployment."""
        if state == "queued":
            return "the task has not started yet: nothing is traced before it does"
        if state == "cancelled":
            return "the task never ran (see its outcome): nothing was traced"
        if failure is not None and failure.phase in ("authorize", "start", "worker", ""):
            return (f"the task failed before its first step ({failure.phase or 'start'}): nothing was traced; "
                    "the failure above says why")
        return ("no trace for this task in this server's data directory: traces are written where the worker "
                "runs and kept FORGEBOT_DURABILITY__RETENTION_DAYS days")

    async def health(self) -> Health:
        failures, _ = await self.page(TaskFilter(state="failed", limit=10))
        groups = await self.inbox.failure_groups(time.time() - FAILURE_HOURS * 3600)
        by_kind = [self._kind(group) for group in groups]
        if self.redis is None:
            return Health(queue_ok=False, failures=failures, by_kind=by_kind)
        try:
            return await self._queue(self.redis, failures, by_kind)
        except Exception:  # Redis away: the page says so instead of failing
            return Health(queue_ok=False, failures=failures, by_kind=by_kind)

    def _kind(self, group: FailureGroup) -> FailureKind:
        return FailureKind(self.clean(group.kind), group.count, group.last_at, group.latest.task_id,
                           self.failure(group.latest))

    async def _queue(self, redis: Any, failures: list[TaskSummary], by_kind: list[FailureKind]) -> Health:
        depth = int(await redis.zcard(default_queue_name))
        oldest = await redis.zrange(default_queue_name, 0, 0, withscores=True)
        now_ms = time.time() * 1000
        age = max(now_ms - float(oldest[0][1]), 0.0) / 1000 if oldest else None
        leases = []
        async for raw in redis.scan_iter(match=LEASE_PREFIX + "*", count=200):
            key = raw.decode() if isinstance(raw, bytes) else str(raw)
            value, ttl = await redis.get(key), await redis.pttl(key)
            job_id = key.removeprefix(LEASE_PREFIX)
            worker = value.decode(errors="replace") if isinstance(value, bytes) else str(value or "")
            leases.append(Lease(job_id, await self._task_of(job_id), self.clean(worker), max(ttl, 0) / 1000))
        return Health(queue_ok=True, depth=depth, oldest_seconds=age, leases=leases, failures=failures,
                      by_kind=by_kind, workers=[self._worker(p) for p in await workers(redis)],
                      silence=MISSED * self.settings.durability.reap_interval)

    def _worker(self, found: Presence) -> Presence:
        return Presence(self.clean(found.worker), self.clean(found.doing), found.seconds_ago, found.seconds_up)

    async def _task_of(self, job_id: str) -> str:
        listed, _ = await self.inbox.task_page(TaskFilter(state="running", limit=500))
        return next((item.row.task_id for item in listed if item.row.job_id == job_id), "")


def _line(event: dict[str, Any]) -> str:
    from graph.runtime.trace import format_event

    try:
        return format_event(event).strip()
    except (KeyError, TypeError, AttributeError):  # an event of an older or newer shape: its raw fields
        return ", ".join(f"{k}={v}" for k, v in event.items() if k not in ("seq", "ts", "task"))
