"""`forgebot serve` as a real process: receiver here, `forgebot worker` as its child, a private
redis-server, the real model client talking to a scripted endpoint over HTTP, the fake forge and a
git server over HTTP. Processes are found and checked through /proc.

* SIGTERM with a task inside a model call: the receiver stops at once, the task finishes, serve
  exits 0, and the worker and its redis-server are gone.
* SIGKILL: nothing of serve's is left (the parent-death signal stops its worker and redis-server).
* A model error whose message carries the API key is logged with the key redacted.
* A worker that dies stops serve with exit code 1 (and its redis-server with it).
* The receiver never waits for the worker: with the worker frozen (SIGSTOP: no progress at all,
  the limit of a worker busy with CPU work) /healthz answers and a delivery is accepted; once the
  worker runs again it takes the task.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from bot.tasks.inbox import Inbox
from graph.schemas import Decomposition
from tests.conftest import GITLAB_SECRET, GITLAB_TOKEN
from tests.e2e.conftest import pointed_at
from tests.fakes.forge_http import FakeForgeState, FakeIssue
from tests.fakes.model_server import Gate, ModelServer, answer
from tests.fakes.samples import sample_bytes
from tests.fakes.server import ServerThread, free_port
from tests.intake import deliveries

ROOT = Path(__file__).resolve().parents[2]
BLOCKED = {"criteria": [], "assumptions": [], "questions": ["Which endpoint?"]}  # one model call, then a report
MODEL_KEY = "sk-serve-test-key-0123456789abcdef"
START_TIMEOUT = 120.0  # two Python processes importing the product on a shared, busy machine


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def children_of(pid: int) -> dict[int, bytes]:
    """pid -> command line of each live child of `pid`."""
    found: dict[int, bytes] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                found[int(entry.name)] = (entry / "cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return found


def redis_servers_in(directory: Path) -> list[int]:
    """Live redis-server processes working in `directory` (redis chdirs to its --dir)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if b"redis-server" in (entry / "cmdline").read_bytes() and Path(os.readlink(entry / "cwd")).is_relative_to(
                directory
            ):
                pids.append(int(entry.name))
        except (FileNotFoundError, ProcessLookupError, PermissionError, OSError):
            continue
    return [pid for pid in pids if alive(pid)]


@dataclass
class Serve:
    proc: subprocess.Popen[bytes]
    url: str
    data_dir: Path
    log: Path
    # one client for the polls: `httpx.get` builds a client, and so a TLS context loading the CA
    # bundle, per call (measured: 10 CPU-s over this module's start-up polls)
    http: httpx.Client

    def healthz(self) -> int | None:
        """The status of GET /healthz, or None when nothing answers."""
        try:
            return self.http.get(f"{self.url}/healthz", timeout=5).status_code
        except httpx.TransportError:
            return None

    def parts(self) -> tuple[int, int]:
        """(worker pid, redis-server pid): serve's two children, once both are up."""
        found: dict[str, int] = {}

        def both() -> bool:
            for pid, cmdline in children_of(self.proc.pid).items():
                found["redis" if b"redis-server" in cmdline else "worker" if b"worker" in cmdline else "?"] = pid
            return "redis" in found and "worker" in found

        wait_until(both, START_TIMEOUT, "serve's worker and redis-server")
        return found["worker"], found["redis"]

    def logs(self) -> str:
        return self.log.read_text(errors="replace")

    def task_states(self) -> list[tuple[str, str]]:
        async def read() -> list[tuple[str, str]]:
            inbox = await Inbox.open(sqlite_path=self.data_dir / "inbox.sqlite")
            try:
                return [(t.state, t.detail) for t in await inbox.tasks()]
            finally:
                await inbox.close()

        return asyncio.run(read())


@pytest.fixture
def model() -> Iterator[tuple[Gate, ModelServer]]:
    gate = Gate(answer(Decomposition, BLOCKED))
    with ModelServer() as server:
        server.responder = gate
        yield gate, server
        gate.release()


@pytest.fixture
def serve(
    forge_server: ServerThread, fake_forge: FakeForgeState, model: tuple[Gate, ModelServer], origin_url: str
) -> Iterator[Serve]:
    data_dir = Path(tempfile.mkdtemp(prefix="fb-serve-"))  # short: the private Redis's Unix socket lives here
    port = free_port()
    git_host = origin_url.rsplit("/", 1)[0]
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("FORGEBOT_")},
        "FORGEBOT_DATA_DIR": str(data_dir),
        "FORGEBOT_HOST": "127.0.0.1",
        "FORGEBOT_PORT": str(port),
        "FORGEBOT_JOB_TIMEOUT": "120",
        "FORGEBOT_GITLAB__URL": f"{forge_server.url}/gitlab",
        "FORGEBOT_GITLAB__TOKEN": GITLAB_TOKEN,
        "FORGEBOT_GITLAB__WEBHOOK_SECRET": GITLAB_SECRET,
        "FORGEBOT_GITLAB__TIMEOUT": "5",
        "FORGEBOT_LLM__BASE_URL": model[1].openai_url,
        "FORGEBOT_LLM__API_KEY": MODEL_KEY,
        "FORGEBOT_LLM__MAX_RETRIES": "0",
        "FORGEBOT_QUESTIONS__MAX_ROUNDS": "0",
        "FORGEBOT_INTAKE__MAX_EVENT_AGE_HOURS": "0",  # the forge samples are years old
        "FORGEBOT_EMBEDDER__KIND": "off",  # the process model is under test, not the vector leg
        "FORGEBOT_TRIGGERS__ANALYZE_LABEL": "Platform",  # the GitLab sample adds "Platform"
        "FORGEBOT_WORKSPACE__ALLOWED_PROTOCOLS": '["http"]',
        "FORGEBOT_WORKSPACE__GIT_HOSTS": json.dumps([git_host]),
    }
    fake_forge.members[("gitlab", "1", "7")] = "30"  # the issue's author is a developer
    fake_forge.grant("gitlab", "1", "1", 30)  # the sample's actor, root (id 1)
    fake_forge.add_issue("gitlab", "1", 23, FakeIssue(title="New API: create/update/delete file", body="..."))
    log = data_dir / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bot", "serve"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    running = Serve(proc, f"http://127.0.0.1:{port}", data_dir, log, httpx.Client())
    try:
        wait_until(lambda: proc.poll() is not None or running.healthz() == 200, START_TIMEOUT, "serve's /healthz")
        assert proc.poll() is None, running.logs()
        yield running
    finally:
        running.http.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        wait_until(lambda: not redis_servers_in(data_dir), 30, "the private redis-server to stop")
        shutil.rmtree(data_dir, ignore_errors=True)


def deliver(serve: Serve, origin: str) -> None:
    sample = pointed_at(sample_bytes("gitlab/issue.labels-changed.json"), origin)
    body, headers = deliveries.gitlab(sample, "Issue Hook")
    response = serve.http.post(serve.url + deliveries.path("gitlab", body), content=body, headers=headers, timeout=10)
    assert response.status_code == 202, response.text


def test_sigterm_lets_the_running_task_finish_then_serve_exits_0(
    serve: Serve, model: tuple[Gate, ModelServer], fake_forge: FakeForgeState, origin_url: str
) -> None:
    script, server = model
    script.hold()
    worker, redis_pid = serve.parts()
    deliver(serve, origin_url)
    wait_until(lambda: bool(server.requests), START_TIMEOUT, "the task's model call")  # the task is mid-node
    serve.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: serve.healthz() is None, 30, "the receiver to stop")
    assert serve.proc.poll() is None and alive(worker) and alive(redis_pid)  # waiting for the task
    assert serve.task_states() == [("running", "")]
    script.release()
    assert serve.proc.wait(timeout=120) == 0, serve.logs()
    assert serve.task_states() == [("done", "blocked")], serve.logs()
    comments = [c.body for c in fake_forge.comments_on("gitlab", "1", 23)]
    assert any("Analysis blocked" in body for body in comments), comments
    wait_until(lambda: not alive(worker) and not alive(redis_pid), 10, "serve's children to be gone")


def test_sigkill_of_serve_leaves_no_worker_and_no_redis_server(serve: Serve) -> None:
    worker, redis_pid = serve.parts()
    assert redis_servers_in(serve.data_dir) == [redis_pid]
    serve.proc.send_signal(signal.SIGKILL)
    serve.proc.wait()
    wait_until(lambda: not alive(worker) and not redis_servers_in(serve.data_dir), 30, "the parent-death signals")
    assert not alive(redis_pid)


def test_the_receiver_answers_while_the_worker_makes_no_progress(
    serve: Serve, model: tuple[Gate, ModelServer], origin_url: str
) -> None:
    _, server = model
    worker, _ = serve.parts()
    assert worker != serve.proc.pid
    os.kill(worker, signal.SIGSTOP)
    try:
        for _ in range(20):
            assert serve.healthz() == 200
        deliver(serve, origin_url)
        assert serve.task_states() == [("queued", "")]  # recorded by the receiver alone
        assert not server.requests
    finally:
        os.kill(worker, signal.SIGCONT)
    wait_until(lambda: bool(server.requests), START_TIMEOUT, "the worker to take the task")
    wait_until(lambda: serve.task_states() == [("done", "blocked")], START_TIMEOUT, "the task to finish")


def test_a_dead_worker_stops_serve_with_an_error(serve: Serve) -> None:
    """A receiver without its worker would accept tasks nobody runs: serve exits 1 instead, for its
    supervisor (Docker's restart policy, Kubernetes) to start it again."""
    worker, redis_pid = serve.parts()
    os.kill(worker, signal.SIGKILL)
    assert serve.proc.wait(timeout=60) == 1, serve.logs()
    assert "worker" in serve.logs() and "stopping forgebot serve" in serve.logs()
    wait_until(lambda: not alive(redis_pid), 30, "the private redis-server to stop")


def test_a_model_error_carrying_the_key_is_logged_redacted(
    serve: Serve, model: tuple[Gate, ModelServer], origin_url: str
) -> None:
    """The gateway's 401 echoes `authorization: Bearer <key>`; the job logs the failure in one line
    with the provider's message. The log shows the failure, never the key."""
    script, _ = model
    script.refuse_with = 401
    deliver(serve, origin_url)
    wait_until(lambda: [s for s, _ in serve.task_states()] == ["failed"], START_TIMEOUT, "the task to fail")
    serve.proc.send_signal(signal.SIGTERM)
    assert serve.proc.wait(timeout=120) == 0, serve.logs()
    logs = serve.logs()
    (line,) = [line for line in logs.splitlines() if "task failed" in line]
    assert 'kind="model credentials"' in line and "[REDACTED]" in line, logs
    assert MODEL_KEY not in logs and "Traceback" not in logs
