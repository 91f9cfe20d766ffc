"""Process runners behind `forgebot serve`, `web` and `worker`.

One process model: `web` is the receiver, `worker` is the arq worker, and `serve` is the same two
parts, the worker as a child process (`forgebot worker`), plus a private Redis when none is
configured. Nothing else differs between a one-box install and a scaled one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import uvicorn

from bot.app import create_app
from bot.children import die_with_parent
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


def run_worker(settings: Settings) -> None:
    from bot.jobs import build_worker

    assert settings.redis_url
    if settings.worker_metrics_port is not None:
        from bot.metrics import start_metrics_server

        start_metrics_server(settings.worker_metrics_port, redis_url=settings.redis_url)
    build_worker(settings, settings.redis_url).run()


WORKER_COMMAND = (sys.executable, "-m", "bot", "worker")
_STOP_MARGIN = 30.0  # beyond the worker's own grace (a job timeout) before it is killed


def start_worker_process(settings: Settings) -> subprocess.Popen[bytes]:
    """`forgebot worker` as a child process, on `settings.redis_url`, dying with this process.

    It reads the same environment and secret files as this process (so the same settings); only
    the Redis URL is added, for the private Redis this process started. Its own session keeps a
    terminal's Ctrl-C away from it: this process decides when it stops (`stop_worker`).
    """
    assert settings.redis_url
    env = {**os.environ, "FORGEBOT_REDIS_URL": settings.redis_url}
    return subprocess.Popen(
        WORKER_COMMAND, env=env, start_new_session=True, preexec_fn=die_with_parent(signal.SIGKILL)
    )


async def stop_worker(worker: subprocess.Popen[bytes], grace: float, poll: float = 0.2) -> int:
    """SIGTERM the worker (arq lets its running task finish within `grace`), wait, then kill it."""
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace + _STOP_MARGIN
    while worker.poll() is None and time.monotonic() < deadline:
        await asyncio.sleep(poll)
    if worker.poll() is None:
        log.error("worker %d did not stop within %.0f s: killed", worker.pid, grace + _STOP_MARGIN)
        worker.kill()
    return worker.wait()


async def _watch(worker: subprocess.Popen[bytes], server: uvicorn.Server, poll: float = 0.5) -> None:
    """Stop the receiver if the worker dies: accepting tasks nobody runs would hide the failure."""
    while worker.poll() is None:
        await asyncio.sleep(poll)
    if not server.should_exit:
        log.error("worker %d exited with %s: stopping forgebot serve", worker.pid, worker.returncode)
        server.should_exit = True


def _forward(worker: subprocess.Popen[bytes]) -> None:
    """After the receiver stops, SIGTERM/SIGINT go to the worker (uvicorn re-raises them on exit)."""

    def handler(signum: int, frame: object) -> None:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, handler)


async def _serve(settings: Settings, host: str, port: int) -> int:
    server = _server(settings, host, port)
    worker = start_worker_process(settings)
    log.info("worker process %d started", worker.pid)
    _forward(worker)
    watch = asyncio.create_task(_watch(worker, server))
    try:
        await server.serve()  # returns after SIGINT/SIGTERM (uvicorn's handlers) or when the worker died
    finally:
        watch.cancel()
        code = await stop_worker(worker, float(settings.job_timeout))
    log.info("worker process %d exited with %d", worker.pid, code)
    return 0 if code == 0 else 1


def run_serve(settings: Settings, host: str, port: int) -> int:
    """The receiver in this process, `forgebot worker` in a child, a private Redis unless one is configured.

    The worker runs in its own process so CPU-heavy work (parsing, indexing, regexes over untrusted
    text) never stalls the receiver's event loop. On SIGTERM the receiver stops taking deliveries,
    the worker finishes its running task within its grace period (arq's `job_completion_wait`),
    and only then is the private Redis stopped; the exit code is 0. If this process is killed
    outright, the parent-death signal stops the worker and the private Redis with it.
    """
    with redis_for(settings) as resolved:
        return asyncio.run(_serve(resolved, host, port))
