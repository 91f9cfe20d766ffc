"""Process runners behind `forgebot serve`, `web` and `worker`.

One process model: `web` is the receiver, `worker` is the arq worker, and `serve` is the same two
parts, the worker as a child process (`forgebot worker`), plus a private Redis when none is
configured. Nothing else differs between a one-box install and a scaled one.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

import uvicorn

from bot.cli.children import die_with_parent
from bot.cli.redisserver import RedisInUse, private_redis
from bot.intake.identity import Identities
from bot.web.app import create_app
from foundation.settings import Settings

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


def _server(settings: Settings, host: str, port: int, worker_metrics: str | None = None) -> uvicorn.Server:
    config = uvicorn.Config(
        create_app(settings, identities=Identities(settings), worker_metrics=worker_metrics),
        host=host,
        port=port,
        log_level="info",
        lifespan="on",
        limit_concurrency=settings.max_connections,  # bounds the sockets slow clients can hold open
        timeout_keep_alive=settings.keep_alive_seconds,
    )
    return uvicorn.Server(config)


def _unanswered(ask: Callable[[], str], tries: int, pause: float) -> str:
    """Why a service did not answer `ask` (which returns "" when it did, else why), after `tries` a `pause`
    apart: one started beside forgebot may still be coming up."""
    why = ""
    for attempt in range(tries):
        why = ask()
        if not why:
            return ""
        if attempt + 1 < tries:
            time.sleep(pause)
    return why


def redis_problem(url: str, tries: int = 5, pause: float = 1.0) -> str:
    """Why the Redis at `url` does not answer ("" when it does). `web` and `worker` ask it before anything
    else: a Redis that was down ended each in a traceback (the worker's after arq's own five warnings)."""
    import redis

    def ping() -> str:
        client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5)
        try:
            client.ping()
            return ""
        except (redis.RedisError, OSError) as exc:
            return str(exc) or type(exc).__name__
        finally:
            client.close()

    why = _unanswered(ping, tries, pause)
    return f"Redis at {_where(url)} does not answer ({why}): check FORGEBOT_REDIS_URL and that Redis runs" if why \
        else ""


def store_problem(url: str, tries: int = 5, pause: float = 1.0) -> str:
    """Why the PostgreSQL at `url` (FORGEBOT_DATABASE_URL) does not answer ("" when it does). `serve`, `web`
    and `worker` ask it before anything else: a database that was down, or a URL it refused, ended each
    in uvicorn's "Application startup failed" after psycopg's traceback."""
    import psycopg

    from foundation.redact import redact

    def connect() -> str:
        try:
            with psycopg.connect(url, connect_timeout=5):
                return ""
        except psycopg.Error as exc:
            return " ".join(str(exc).split()) or type(exc).__name__

    why = redact(_unanswered(connect, tries, pause), [urlsplit(url).password or ""])
    return (f"the store at {_where(url)} does not answer ({why}): check FORGEBOT_DATABASE_URL and that PostgreSQL "
            "runs") if why else ""


def _where(url: str) -> str:
    """A Redis or PostgreSQL URL without its credentials (`redis://:password@host` names no user for a
    redactor to key on)."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return f"unix://{parts.path}"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path}"


def run_web(settings: Settings, host: str, port: int) -> None:
    _server(settings, host, port).run()


def run_worker(settings: Settings) -> None:
    """The arq worker; it takes jobs once every configured forge has said who the bot is."""
    from bot.worker.jobs import build_worker

    assert settings.redis_url
    if settings.worker_metrics_port is not None:
        from foundation.metrics import start_metrics_server

        start_metrics_server(settings.worker_metrics_port, settings.worker_metrics_host, redis_url=settings.redis_url)
    build_worker(settings, settings.redis_url, identities=Identities(settings)).run()


# `-P`: the caller's working directory is not put on the module path, so a `bot/` directory there
# (another checkout, a project of the same name) is never run in place of the installed package
WORKER_COMMAND = (sys.executable, "-P", "-m", "bot", "worker")
_STOP_MARGIN = 30.0  # beyond the worker's own grace (a job timeout) before it is killed


class WorkerProcess:
    """`forgebot worker` as a child process of `serve`, on the given Redis, dying with `serve`.

    It reads the same environment and secret files as this process (so the same settings); only
    the Redis URL is added, for the private Redis this process started. `FORGEBOT_*` variables no
    setting reads are left out: serve already named each once, and they change nothing, so the
    operator reads one warning per misspelt name, not one per process. Its own session keeps a
    terminal's Ctrl-C away from it: `serve` decides when it stops.
    """

    def __init__(self, redis_url: str, metrics: dict[str, str] | None = None) -> None:
        from foundation.variables import unknown_names

        ignored = set(unknown_names(Settings, os.environ))
        env = {**{k: v for k, v in os.environ.items() if k not in ignored}, "FORGEBOT_REDIS_URL": redis_url,
               **(metrics or {})}
        self.process = subprocess.Popen(
            WORKER_COMMAND, env=env, start_new_session=True, preexec_fn=die_with_parent(signal.SIGKILL)
        )
        self.stopping = False  # True once serve asked it to stop: its exit is then expected
        log.info("worker process %d started", self.process.pid)

    def terminate(self) -> None:
        """First call: SIGTERM (arq finishes the running task within its grace). Later calls (a second
        Ctrl-C): SIGKILL, for an operator who will not wait; the task resumes from its checkpoint."""
        if self.process.poll() is not None:
            return
        if self.stopping:
            log.warning("second stop signal: killing worker %d", self.process.pid)
            self.process.kill()
            return
        self.stopping = True
        self.process.send_signal(signal.SIGTERM)

    async def stop(self, grace: float, poll: float = 0.2) -> int:
        """Ask it to stop, wait up to `grace` plus a margin, then kill it; its exit code."""
        if not self.stopping:
            self.terminate()
        deadline = time.monotonic() + grace + _STOP_MARGIN
        while self.process.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(poll)
        if self.process.poll() is None:
            log.error("worker %d did not stop within %.0f s: killed", self.process.pid, grace + _STOP_MARGIN)
            self.process.kill()
        return self.process.wait()

    async def watch(self, server: uvicorn.Server, poll: float = 0.5) -> None:
        """Stop the receiver if the worker dies: accepting tasks nobody runs would hide the failure."""
        while self.process.poll() is None:
            await asyncio.sleep(poll)
        if not self.stopping:
            log.error("worker %d exited with %s: stopping forgebot serve", self.process.pid, self.process.returncode)
            server.should_exit = True


def worker_metrics(settings: Settings) -> tuple[str, dict[str, str]]:
    """Where serve's worker serves its metrics, and the variables that tell it so.

    The operator's port when one is set; else a free loopback port, so a one-box install is scraped at
    one address (serve's `/metrics`) without the worker's port showing on the network.
    """
    if settings.worker_metrics_port is not None:
        host = settings.worker_metrics_host
        reach = "127.0.0.1" if host in ("0.0.0.0", "") else host
        return f"http://{reach}:{settings.worker_metrics_port}/metrics", {}
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    env = {"FORGEBOT_WORKER_METRICS_PORT": str(port), "FORGEBOT_WORKER_METRICS_HOST": "127.0.0.1"}
    return f"http://127.0.0.1:{port}/metrics", env


def _forward_signals(worker: WorkerProcess) -> None:
    """SIGTERM/SIGINT reach the worker once the receiver has stopped: uvicorn holds them while it
    serves and re-raises them, to these handlers, when it returns."""

    def handler(signum: int, frame: object) -> None:
        worker.terminate()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, handler)


async def _serve(settings: Settings, host: str, port: int) -> int:
    assert settings.redis_url
    url, metrics = worker_metrics(settings)
    server = _server(settings, host, port, worker_metrics=url)
    worker = WorkerProcess(settings.redis_url, metrics)
    _forward_signals(worker)
    watch = asyncio.create_task(worker.watch(server))
    try:
        await server.serve()  # returns after SIGINT/SIGTERM (uvicorn's handlers) or when the worker died
    finally:
        died = not worker.stopping and worker.process.poll() is not None
        watch.cancel()
        code = await worker.stop(float(settings.job_timeout))
    log.info("worker process %d exited with %d", worker.process.pid, code)
    # a worker stopped while still starting (before its signal handlers) ends by the SIGTERM we sent: as asked
    asked = worker.stopping and code == -signal.SIGTERM
    return 1 if died or (code != 0 and not asked) else 0


def run_serve(settings: Settings, host: str, port: int) -> int:
    """The receiver in this process, `forgebot worker` in a child, a private Redis unless one is configured.

    The worker runs in its own process so CPU-heavy work (parsing, indexing, regexes over untrusted
    text) never stalls the receiver's event loop. On SIGTERM the receiver stops taking deliveries,
    the worker finishes its running task within its grace period (arq's `job_completion_wait`),
    and only then is the private Redis stopped; the exit code is 0. If this process is killed
    outright, the parent-death signal stops the worker and the private Redis with it.
    """
    taken = _port_taken(host, port)
    if taken:  # before a private Redis or a worker starts: the second `serve` a user forgot was running
        hint = "stop what listens there (another forgebot serve?), or" if taken.errno == errno.EADDRINUSE else \
            "choose another port or address:"
        sys.stderr.write(f"forgebot serve: cannot listen on {host}:{port} ({taken.strerror or taken}): {hint} set "
                         "FORGEBOT_HOST and FORGEBOT_PORT, or --host and --port\n")
        return 2
    try:
        with redis_for(settings) as resolved:
            return asyncio.run(_serve(resolved, host, port))
    except RedisInUse as exc:
        sys.stderr.write(f"forgebot serve: {exc}\n")
        return 2


def _port_taken(host: str, port: int) -> OSError | None:
    """Why `host:port` cannot be listened on now (None when it can: in use, a privileged port, an address
    this machine does not have): said before anything starts, where uvicorn said it only after the private
    Redis and the worker were up (and then stopped them)."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no obstacle
            probe.bind((host, port))
    except OSError as exc:  # socket.gaierror too: a host name that does not resolve
        return exc
    return None
