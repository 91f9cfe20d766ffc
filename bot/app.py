"""create_app(): the Starlette receiver, with its queue opened in the lifespan.

The web process never imports `graph`; it verifies, parses and queues, and that is all.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bot.metrics import register_collectors
from bot.queue import ArqQueue, JobQueue
from bot.settings import Settings
from bot.webhooks import Metrics, github_webhook, gitlab_webhook


async def healthz(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> JSONResponse:
    queue: JobQueue = request.state.queue
    try:
        ok = await queue.ping()
    except OSError:
        ok = False
    return JSONResponse({"redis": ok}, status_code=200 if ok else 503)


async def metrics(request: Request) -> Response:
    registry: CollectorRegistry = request.state.registry
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


def create_app(settings: Settings | None = None, queue: JobQueue | None = None) -> Starlette:
    """Build the receiver; `uvicorn --factory bot.app:create_app` calls this with no arguments."""
    resolved = settings or Settings.load()
    registry = CollectorRegistry()
    app_metrics = Metrics.create(registry)
    register_collectors(registry, resolved.redis_url)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        if queue is not None:
            yield _state(resolved, queue, registry, app_metrics)
            return
        if not resolved.redis_url:
            raise RuntimeError("FORGEBOT_REDIS_URL is not set (use `forgebot serve` for a private Redis)")
        opened = await ArqQueue.connect(resolved.redis_url)
        try:
            yield _state(resolved, opened, registry, app_metrics)
        finally:
            await opened.close()

    routes = [
        Route("/webhooks/gitlab", gitlab_webhook, methods=["POST"]),
        Route("/webhooks/github", github_webhook, methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def _state(settings: Settings, queue: JobQueue, registry: CollectorRegistry, metrics: Metrics) -> dict[str, Any]:
    return {"settings": settings, "queue": queue, "registry": registry, "metrics": metrics}
