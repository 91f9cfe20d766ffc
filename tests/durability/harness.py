"""A cluster of real worker processes on one Redis, the fake HTTP forge and the task store.

Shared by `tests/durability/` and `tests/chaos/chaos_workers.py`: tasks are recorded in the inbox
and queued exactly as the receiver does it (`Inbox.record` + `ArqQueue.enqueue`), workers are
`tests.durability.worker_main` processes, and kills are real signals.

Workers are forked by a multiprocessing forkserver that imported `tests.durability.worker_main` (and
so langchain, langgraph and the whole worker) once: a fresh interpreter spends seconds of CPU on those
imports, and these scenarios start dozens of workers. Each worker is still its own process, with its
own pid, event loop, signal handlers and exit status.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import multiprocessing
import multiprocessing.forkserver
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.tasks.events import Actor, ForgeEvent, RepoRef
from bot.tasks.inbox import Inbox, TaskRow, open_inbox
from bot.tasks.queue import ArqQueue
from tests.durability.worker_main import settings_from
from tests.fakes.forge_http import FakeForgeState, FakeIssue, FakeProject

ROOT = Path(__file__).resolve().parents[2]
TERMINAL = ("done", "failed", "cancelled", "waiting")
PROJECT = "1"
REAPER_PASS = "bot.worker.recovery reaper pass done"  # bot.worker.recovery's debug line, enabled by worker_main
# Deadlines of the polls below: upper bounds for a machine under heavy load (a worker process takes
# seconds to import and start there), never waited out when things go right.
DEADLINE = 120.0
WORKER_MODULE = "tests.durability.worker_main"
_FORKS = multiprocessing.get_context("forkserver")
# before the forkserver starts (collection imports this module before any test runs); with the
# modules the worker imports only when its first task opens a model client or the forge (measured:
# ~1 CPU-s per forked worker, most of it langchain_openai)
_FORKS.set_forkserver_preload([WORKER_MODULE, "langchain_openai", "gitlab.v4.objects", "foundation.forge.gitlab"])


def stop_forkserver() -> None:
    """Stop and reap the forkserver, so that its CPU time and its workers' count in this process's
    children (`scripts/test` reports that figure); multiprocessing itself leaves it running to exit."""
    multiprocessing.forkserver._forkserver._stop()  # type: ignore[attr-defined]


atexit.register(stop_forkserver)


def _run_worker(config_path: str, log_path: str) -> None:
    """A forked worker's body: stdout and stderr to its log, no FORGEBOT_* variable, then the worker."""
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.chdir(ROOT)
    for name in [n for n in os.environ if n.startswith("FORGEBOT_")]:
        del os.environ[name]
    from tests.durability.worker_main import main

    main(config_path)


class WorkerProcess:
    """One forked worker, with the parts of `subprocess.Popen` the scenarios use (exit status, signals)."""

    def __init__(self, config_path: Path, log_path: Path) -> None:
        log_path.touch()  # the scenarios read logs as soon as a worker is started
        self._process = _FORKS.Process(target=_run_worker, args=(str(config_path), str(log_path)), daemon=False)
        self._process.start()
        self.pid = self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        return self._process.exitcode

    def send_signal(self, signum: int) -> None:
        if self._process.exitcode is None:
            os.kill(self._process.pid or 0, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired(WORKER_MODULE, timeout or 0)
        return self._process.exitcode


def analyze_event(number: int, delivery: str, trigger: str = "label") -> ForgeEvent:
    """An analyze request on GitLab issue `number` of project 1 by a Developer (user 1)."""
    return ForgeEvent(
        forge="gitlab",
        delivery_id=delivery,
        repo=RepoRef(forge="gitlab", project=PROJECT, path="group/project"),
        repo_id=int(PROJECT),
        target="issue",
        number=number,
        actor=Actor(id=1, username="root"),
        trigger=trigger,  # type: ignore[arg-type]
        mode="analyze" if trigger in ("label", "command") else None,
        title=f"Issue {number}",
        body="Add create/update/delete to the file API.",
        label="forgebot::analyze" if trigger == "label" else "",
        state=f"{delivery}",
    )


def fresh_schema(database_url: str) -> str:
    """A new schema on the Postgres at `database_url`, and a URL whose connections use it."""
    import psycopg

    schema = f"d_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database_url, autocommit=True, connect_timeout=3) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{database_url}?options=-csearch_path%3D{schema}"


def drop_schema(schema_url: str) -> None:
    """Drop the schema `fresh_schema` made (the shared `test` database is listed by other tests)."""
    import psycopg

    base, _, options = schema_url.partition("?options=-csearch_path%3D")
    with psycopg.connect(base, autocommit=True, connect_timeout=3) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {options} CASCADE")


def seed_forge(forge: FakeForgeState, numbers: range | list[int]) -> None:
    forge.add_project("gitlab", FakeProject(id=int(PROJECT), path="group/project"))  # what the worker resolves
    forge.grant("gitlab", PROJECT, "1", 30)  # the trigger's actor
    forge.grant("gitlab", PROJECT, "7", 30)  # the fake's issue authors: only members' text reaches a model
    for number in numbers:
        forge.add_issue("gitlab", PROJECT, number, FakeIssue(title=f"Issue {number}", body="..."))


@dataclass
class Cluster:
    """Worker subprocesses sharing one config file (and so one Redis, store and forge)."""

    workdir: Path
    config: dict[str, Any]
    procs: list[WorkerProcess] = field(default_factory=list)

    @classmethod
    def create(cls, workdir: Path, redis_url: str, forge_url: str, **overrides: Any) -> Cluster:
        (workdir / "kill").mkdir(parents=True, exist_ok=True)
        config: dict[str, Any] = {
            "data_dir": str(workdir / "data"),
            "redis_url": redis_url,
            "forge_url": forge_url,
            "gitlab_token": "glpat-test-token-do-not-log",
            "kill_dir": str(workdir / "kill"),
            "job_timeout": 30,
            "lease_seconds": 1.5,
            "reap_interval": 1,
            "max_tries": 4,
            **overrides,
        }
        (workdir / "worker.json").write_text(json.dumps(config))
        return cls(workdir, config)

    def configure(self, **changes: Any) -> None:
        """Change the config of workers started from now on."""
        self.config.update(changes)
        (self.workdir / "worker.json").write_text(json.dumps(self.config))

    @property
    def settings(self) -> Any:
        return settings_from(self.config)

    def log_path(self, proc: WorkerProcess) -> Path:
        return self.workdir / f"worker-{self.procs.index(proc)}.log"

    def start_worker(self) -> WorkerProcess:
        proc = WorkerProcess(self.workdir / "worker.json", self.workdir / f"worker-{len(self.procs)}.log")
        self.procs.append(proc)
        return proc

    def arm(self, task_id: str, node: str) -> None:
        """The task's next model answer or forge write inside `node` SIGKILLs its worker."""
        (Path(self.config["kill_dir"]) / task_id).write_text(node)

    def armed(self) -> list[str]:
        return sorted(p.name for p in Path(self.config["kill_dir"]).iterdir())

    def keep(self, count: int) -> int:
        """Start workers until `count` are alive (a supervisor restarting killed ones); returns how many started."""
        missing = max(count - len(self.alive()), 0)
        for _ in range(missing):
            self.start_worker()
        return missing

    def killed(self) -> int:
        return sum(p.returncode == -signal.SIGKILL for p in self.procs if p.poll() is not None)

    def alive(self) -> list[WorkerProcess]:
        return [p for p in self.procs if p.poll() is None]

    def stop(self) -> None:
        for proc in self.alive():
            proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.workdir.glob("worker-*.log")))

    def ready(self) -> int:
        """How many live workers are polling the queue: their first reaper pass is done, and the reaper
        starts at the end of the worker's start-up, right before arq's first poll."""
        return sum(REAPER_PASS in self.log_path(p).read_text(errors="replace") for p in self.alive())

    def reaped_since(self, since: float, passes: int) -> bool:
        """Whether every live worker logged `passes` finished reaper passes after `since` (a `time.time()`)."""
        for proc in self.alive():
            lines = self.log_path(proc).read_text(errors="replace").splitlines()
            times = [float(line.split(" ", 1)[0]) for line in lines if REAPER_PASS in line]
            if sum(t > since for t in times) < passes:
                return False
        return True


async def submit(cluster: Cluster, events: list[ForgeEvent]) -> list[str]:
    """Record and queue `events` as the receiver would; returns their task ids."""
    inbox = await open_inbox(cluster.settings)
    queue = await ArqQueue.connect(cluster.config["redis_url"])
    try:
        for event in events:
            result = await inbox.record(event.forge, event.delivery_id, "Issue Hook", event)
            assert result.result == "accepted", result
            assert await queue.enqueue(event)
    finally:
        await queue.close()
        await inbox.close()
    return [e.task_id for e in events]


async def task_rows(cluster: Cluster) -> dict[str, TaskRow]:
    inbox: Inbox = await open_inbox(cluster.settings)
    try:
        return {t.task_id: t for t in await inbox.tasks()}
    finally:
        await inbox.close()


async def until(condition: Callable[[], bool], what: str, timeout: float = DEADLINE) -> None:
    """Poll `condition` until it holds; fail with `what` when the deadline passes first."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s waiting for {what}"
        await asyncio.sleep(0.1)


async def workers_ready(cluster: Cluster, count: int) -> None:
    """Start workers until `count` are alive and wait until they all poll the queue, so that a test
    timing work against a running task does not count a worker's start-up instead."""
    cluster.keep(count)
    starting = cluster.alive()

    def ready() -> bool:
        dead = [p.returncode for p in starting if p.poll() is not None]
        assert not dead, f"a worker exited while starting ({dead}):\n{cluster.logs()[-4000:]}"  # not a 120 s wait
        return cluster.ready() >= count

    await until(ready, f"{count} workers to start")


async def reaper_settled(cluster: Cluster) -> None:
    """Wait until every live worker's reaper finished two passes from now: the second began after
    this call, so anything a reaper would (wrongly) post about the current state has been posted."""
    since = time.time()
    await until(lambda: cluster.reaped_since(since, passes=2), "two reaper passes in every worker")


async def wait_for(
    cluster: Cluster, task_ids: list[str], states: tuple[str, ...], timeout: float = DEADLINE, workers: int = 0
) -> dict[str, str]:
    """Poll the task store until every task is in one of `states` (or the time is up); with
    `workers`, restart killed workers so that many stay alive."""
    deadline = time.monotonic() + timeout
    while True:
        if workers:
            cluster.keep(workers)
        rows = await task_rows(cluster)
        current = {t: rows[t].state if t in rows else "?" for t in task_ids}
        if all(s in states for s in current.values()) or time.monotonic() > deadline:
            return current
        await asyncio.sleep(0.2)
