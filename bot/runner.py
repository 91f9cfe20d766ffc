"""Process runners behind `forgebot serve`, `web` and `worker`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Iterator

import uvicorn

from bot.app import create_app
from bot.redisserver import private_redis
from bot.settings import Settings

log = logging.getLogger(__name__)


@contextlib.contextmanager
def redis_for(settings: Settings) -> Iterator[Settings]:
    """Yield settings with a Redis URL: the configured one, or a private server's for this run."""
    if settings.redis_url:
        yield settings
        return
    with private_redis(settings.data_dir / "redis") as server:
        log.info("started private redis at %s", server.url)
        yield settings.model_copy(update={"redis_url": server.url})


def _server(settings: Settings, host: str, port: int) -> uvicorn.Server:
    config = uvicorn.Config(
        create_app(settings),
        host=host,
        port=port,
        log_level="info",
        lifespan="on",
        limit_concurrency=settings.max_connections,  # bounds the sockets slow clients can hold open
        timeout_keep_alive=settings.keep_alive_seconds,
    )
    return uvicorn.Server(config)


def run_web(settings: Settings, host: str, port: int) -> None:
    _server(settings, host, port).run()


def check_models(settings: Settings) -> None:
    """Fail at start-up, in one line, when the model configuration cannot work (not at the first task)."""
    from graph.llm import ModelConfigError, check_config

    try:
        check_config(settings.llm)
    except ModelConfigError as exc:
        sys.stderr.write(f"forgebot: model configuration: {exc}\n")
        raise SystemExit(2) from None


def run_worker(settings: Settings) -> None:
    from bot.jobs import build_worker

    assert settings.redis_url
    check_models(settings)
    if settings.worker_metrics_port is not None:
        from bot.metrics import start_metrics_server

        start_metrics_server(settings.worker_metrics_port, redis_url=settings.redis_url)
    build_worker(settings, settings.redis_url).run()


async def _serve(settings: Settings, host: str, port: int) -> None:
    from bot.jobs import build_worker

    assert settings.redis_url
    server = _server(settings, host, port)
    worker = build_worker(settings, settings.redis_url, handle_signals=False)
    worker_task = asyncio.create_task(worker.async_run())
    try:
        await server.serve()  # returns on SIGINT/SIGTERM (uvicorn installs the handlers)
    finally:
        worker_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await worker_task
        await worker.close()


def run_serve(settings: Settings, host: str, port: int) -> None:
    """Receiver and worker in one process, with a private Redis unless one is configured."""
    check_models(settings)
    with redis_for(settings) as resolved:
        asyncio.run(_serve(resolved, host, port))
