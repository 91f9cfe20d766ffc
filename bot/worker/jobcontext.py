"""What a worker's jobs share, typed: one `WorkerContext` in arq's context dict, and a `Job` per run.

arq passes every job, start-up and cron function a dict; each job gets a *copy* of the worker's
dict with its own `job_id` and `job_try` beside the pool under `redis`. Everything of ours lives in
one object under the key `"worker"`: the copy shares it, so what a job writes there (what it is
doing, for the console's health page) is what the worker's announcer reads, and every read is
typed. arq's own keys are read in one place, `Job.of`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from arq.connections import ArqRedis
from langchain_core.language_models import BaseChatModel

from bot.intake.authz import Authorizer
from bot.intake.identity import Identities
from bot.tasks.events import ForgeEvent
from bot.tasks.inbox import Inbox
from bot.tasks.jobcodec import PLAIN, JobCodec
from foundation.forge import Forge
from foundation.settings import Settings
from graph.checkout import Checkout, prepare

KEY = "worker"  # where arq's context dict holds the WorkerContext
ForgeFactory = Callable[[str], Forge]
ModelFactory = Callable[[str], BaseChatModel]
ForgeForEvent = Callable[[ForgeEvent], Forge]  # the forge a task's notes go to (GitHub App: its installation)


@dataclass
class WorkerContext:
    """The worker's settings, clients and factories, and what it is doing now."""

    settings: Settings
    model_factory: ModelFactory
    forge_for_event: ForgeForEvent  # the reaper's and the expiry's notes
    authorizer: Authorizer
    forge_factory: ForgeFactory | None = None  # None: open_forge per event (a GitHub App's installation)
    configured_models: bool = False  # the settings' models: checked before each task
    checkout: Checkout = prepare
    identities: Identities | None = None
    codec: JobCodec = PLAIN
    redis_url: str = ""  # the lease's heartbeat thread opens its own connection; "" when run directly
    inbox: Inbox | None = None  # opened at start-up when not given
    own_inbox: bool = False  # opened at start-up, so closed at shutdown
    presence: str = "idle"  # what the console's health page says this worker does
    loops: list[asyncio.Task[None]] = field(default_factory=list)  # reaper, sweeper, announcer

    def store(self) -> Inbox:
        """The inbox; start-up opens it before any job or loop runs."""
        if self.inbox is None:
            raise RuntimeError("the worker's inbox is not open (start-up opens it)")
        return self.inbox


@dataclass(frozen=True)
class Job:
    """One call from arq: the worker's context and arq's own keys for this run."""

    worker: WorkerContext
    redis: ArqRedis | None = None  # None when called directly (tests, `forgebot run`): nothing to abort
    job_id: str = ""  # "" when called directly: no lease
    job_try: int = 1

    @classmethod
    def of(cls, ctx: Mapping[str, Any]) -> Job:
        worker = ctx[KEY]
        if not isinstance(worker, WorkerContext):
            raise TypeError(f"arq context key {KEY!r} holds {type(worker).__name__}, not a WorkerContext")
        return cls(worker=worker, redis=ctx.get("redis"), job_id=str(ctx.get("job_id") or ""),
                   job_try=int(ctx.get("job_try") or 1))

    def pool(self) -> ArqRedis:
        """arq's Redis pool (every worker function but a direct call has one)."""
        if self.redis is None:
            raise RuntimeError("no Redis pool in this context (called outside a worker)")
        return self.redis
