"""create_app(): the Starlette receiver, with its queue opened in the lifespan.

The receiver verifies, parses and queues, and that is all (a label delivery first learns its
repository's trigger labels, `bot.intake.repolabels`); the read-only task console
(`bot.console`, docs/console.md) is mounted beside it under `/console` when configured.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import redis.asyncio as aioredis
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bot.console.pages import routes as console_routes
from bot.console.records import Records
from bot.console.throttle import Throttle
from bot.intake.bodies import BodyLimits
from bot.intake.identity import Identities
from bot.intake.repolabels import RepoLabels
from bot.intake.webhooks import Metrics, github_webhook, gitlab_webhook
from bot.tasks.inbox import Inbox, open_inbox
from bot.tasks.queue import ArqQueue, JobQueue
from bot.web.prefixes import PublicPaths, public_paths
from bot.web.readiness import gaps, readiness
from foundation.metrics import register_collectors
from foundation.settings import Settings

log = logging.getLogger(__name__)


async def healthz(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


async def _reachable(check: Callable[[], Awaitable[bool]]) -> bool:
    try:
        return bool(await asyncio.wait_for(check(), timeout=2.0))
    except Exception:  # readiness is a yes/no question; the reason is in the dependency's own logs
        return False


async def readyz(request: Request) -> JSONResponse:
    """200 when deliveries can be taken (Redis and the store answer); the body names what else is missing."""
    queue: JobQueue = request.state.queue
    inbox: Inbox = request.state.inbox
    redis_ok = await _reachable(queue.ping)
    store_ok = await _reachable(inbox.ping)
    status, body = readiness(request.state.settings, request.state.gaps, request.state.identities, redis_ok, store_ok)
    return JSONResponse(body, status_code=status)


async def metrics(request: Request) -> Response:
    registry: CollectorRegistry = request.state.registry
    # collecting may wait on Redis or serve's worker (a second at most each): not on the event loop
    return Response(await asyncio.to_thread(generate_latest, registry), media_type=CONTENT_TYPE_LATEST)


async def _console(stack: contextlib.AsyncExitStack, settings: Settings, inbox: Inbox) -> Records:
    """The console's read access: the task store (shared), the checkpointer and a Redis client."""
    from bot.tasks.checkpoints import open_checkpointer

    saver = await stack.enter_async_context(open_checkpointer(settings))
    client = None
    if settings.redis_url:
        client = aioredis.Redis.from_url(settings.redis_url)
        stack.push_async_callback(client.aclose)
    return Records(settings, inbox, saver, client)


async def _stopped(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def create_app(
    settings: Settings | None = None, queue: JobQueue | None = None, identities: Identities | None = None,
    worker_metrics: str | None = None,
) -> Starlette:
    """Build the receiver; `uvicorn --factory bot.web.app:create_app` calls this with no arguments.

    With `identities` (always when built from the environment) the bot's identity on each forge is
    learned in the background while the receiver serves (`bot.intake.identity`). `worker_metrics` is the
    metrics URL of serve's worker child, whose task families `/metrics` then reports.
    """
    resolved = settings or Settings.load()
    learning = identities if identities is not None or settings is not None else Identities(resolved)
    registry = CollectorRegistry()
    app_metrics = Metrics.create(registry)
    register_collectors(registry, resolved.redis_url, tasks_from=worker_metrics)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        async with contextlib.AsyncExitStack() as stack:
            inbox = await open_inbox(resolved)
            stack.push_async_callback(inbox.close)
            active = queue
            if active is None:
                if not resolved.redis_url:
                    raise RuntimeError("FORGEBOT_REDIS_URL is not set (use `forgebot serve` for a private Redis)")
                opened = await ArqQueue.connect(resolved.redis_url)
                stack.push_async_callback(opened.close)
                await opened.eviction_policy()
                active = opened
            console = await _console(stack, resolved, inbox) if resolved.console.enabled else None
            throttle = Throttle(resolved.console.failed_logins_per_client, resolved.console.failed_logins_overall)
            repo_labels = RepoLabels(resolved)
            stack.push_async_callback(repo_labels.close)
            repo_labels.start()
            if learning is not None and learning.pending():
                stack.push_async_callback(_stopped, asyncio.create_task(learning.learn()))
            missing = await asyncio.to_thread(gaps, resolved)  # the model check builds clients: off the loop
            for gap in missing:
                log.warning("not configured: %s", gap)
            yield {"settings": resolved, "queue": active, "inbox": inbox, "registry": registry, "metrics": app_metrics,
                   "console": console, "repo_labels": repo_labels, "throttle": throttle, "gaps": missing,
                   "identities": learning}

    routes = [
        Route("/webhooks/gitlab/{project_id:int}", gitlab_webhook, methods=["POST"]),
        Route("/webhooks/github/{project_id:int}", github_webhook, methods=["POST"]),
        Route("/webhooks/gitlab", gitlab_webhook, methods=["POST"]),  # unscoped: refused unless migrating
        Route("/webhooks/github", github_webhook, methods=["POST"]),  # the GitHub App's URL
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        *console_routes(),
    ]
    # every body any route reads is bounded in size and time (bot.intake.bodies), routes added later included
    limits = Middleware(BodyLimits, max_bytes=resolved.max_body_bytes, timeout=resolved.body_timeout_seconds)
    # also under the path of the public addresses, for a proxy that forwards it (bot.web.prefixes)
    paths = Middleware(PublicPaths, prefixes=public_paths(resolved.intake.public_url, resolved.console.public_url))
    return Starlette(routes=routes, lifespan=lifespan, middleware=[paths, limits])
