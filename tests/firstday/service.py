"""A `forgebot` service as its operator runs it: the installed console script in its own process.

`Service` starts `forgebot serve` (or `web`, `worker`) from a scratch directory (never the source
tree: the process must run the installed package), with `FORGEBOT_*` variables pointing at the fake
forge, a wire-level model server and a git server, and its output in a log file. The helpers
deliver signed webhooks, read the task store, the console (as the operator, with a bearer token)
and the log, the way a person would look at them.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bot.tasks.inbox import Inbox, TaskRow
from graph.failure import TaskFailure
from tests.e2e.conftest import pointed_at
from tests.fakes.samples import sample
from tests.intake import deliveries

START_TIMEOUT = 120.0  # Python processes importing the product on a shared, busy machine
OPERATOR_TOKEN = "operator-token-for-the-first-day"
FORGEBOT = Path(sys.executable).parent / "forgebot"  # the console script `pip install` wrote
_EVENTS = itertools.count(1)  # each label delivery a new event (the issue's `updated_at` differs)


def wait_until(check: Callable[[], Any], timeout: float, what: str, poll: float = 0.1) -> Any:
    """Poll `check` until it returns something truthy; that value. Fails the test after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(poll)


@dataclass
class Service:
    """One running `forgebot` command and what its operator can look at."""

    command: str
    env: dict[str, str]
    data_dir: Path
    url: str
    log: Path
    cwd: Path
    proc: subprocess.Popen[bytes] | None = None
    # the service closes a connection idle for 5 s (`keep_alive_seconds`): a client that reused one the
    # server was closing got "Server disconnected without sending a response" (a console read after a
    # `forgebot run` that took over 5 s on a loaded machine). Idle ones are dropped here well before.
    http: httpx.Client = field(default_factory=lambda: httpx.Client(limits=httpx.Limits(keepalive_expiry=1.0)))

    def start(self) -> Service:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen([str(FORGEBOT), self.command], cwd=self.cwd, env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT)
        return self

    def wait_healthy(self, timeout: float = START_TIMEOUT) -> Service:
        """Wait for /healthz; fails with the log if the process exits first."""
        assert self.proc is not None
        wait_until(lambda: self.proc.poll() is not None or self.status("/healthz") == 200, timeout,  # type: ignore[union-attr]
                   f"{self.command}'s /healthz")
        assert self.proc.poll() is None, f"{self.command} exited {self.proc.returncode}:\n{self.logs()}"
        return self

    def stop(self, timeout: float = 120) -> int:
        """SIGTERM, then wait; the exit code (killed after `timeout`)."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    # --- what the operator sees ------------------------------------------------------------------

    def status(self, path: str) -> int | None:
        try:
            return self.http.get(self.url + path, timeout=5).status_code
        except httpx.TransportError:
            return None

    def get_json(self, path: str) -> tuple[int, Any]:
        response = self.http.get(self.url + path, timeout=10)
        return response.status_code, response.json()

    def console(self, path: str) -> str:
        """A console page as the operator's browser gets it (bearer token: the scripts' way in)."""
        response = self.http.get(self.url + path, headers={"authorization": f"Bearer {OPERATOR_TOKEN}"}, timeout=10)
        assert response.status_code == 200, (response.status_code, response.text[:500])
        return response.text

    def logs(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def log_lines(self, needle: str) -> list[str]:
        return [line for line in self.logs().splitlines() if needle in line]

    def tasks(self) -> list[TaskRow]:
        async def read() -> list[TaskRow]:
            inbox = await Inbox.open(sqlite_path=self.data_dir / "inbox.sqlite")
            try:
                return await inbox.tasks()
            finally:
                await inbox.close()

        return asyncio.run(read())

    def task_states(self) -> list[tuple[str, str]]:
        return [(t.state, t.detail) for t in self.tasks()]

    def failures(self) -> list[TaskFailure]:
        """The failure records of the failed tasks, oldest task first."""
        found = [TaskFailure.from_json(t.failure) for t in self.tasks() if t.state == "failed"]
        return [record for record in found if record is not None]

    def wait_states(self, done: Callable[[list[str]], bool], what: str, timeout: float = START_TIMEOUT) -> None:
        wait_until(lambda: done([t.state for t in self.tasks()]), timeout, f"{what}; log:\n{self.logs()[-4000:]}")

    # --- what the forge sends --------------------------------------------------------------------

    def label(self, origin: str = "", *, issue: int = 23) -> int:
        """The GitLab sample that adds label "Platform" to an issue of project 1 (23: the sample's own),
        as a new event each call (the issue's `updated_at` differs: re-adding the label)."""
        payload = sample("gitlab/issue.labels-changed.json")
        payload["object_attributes"]["iid"] = issue
        n = next(_EVENTS)
        payload["object_attributes"]["updated_at"] = f"2013-12-03T17:{n // 60 % 60:02d}:{n % 60:02d}Z"
        raw = pointed_at(json.dumps(payload).encode(), origin) if origin else json.dumps(payload).encode()
        body, headers = deliveries.gitlab(raw, "Issue Hook")
        response = self.http.post(self.url + deliveries.path("gitlab", body), content=body, headers=headers,
                                  timeout=15)
        return response.status_code


def environment(data_dir: Path, port: int, **extra: str) -> dict[str, str]:
    """The process environment: the caller's minus every `FORGEBOT_*`, plus these settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORGEBOT_")}
    env.update({
        "FORGEBOT_DATA_DIR": str(data_dir),
        "FORGEBOT_HOST": "127.0.0.1",
        "FORGEBOT_PORT": str(port),
        "FORGEBOT_JOB_TIMEOUT": "120",
        "FORGEBOT_INTAKE__MAX_EVENT_AGE_HOURS": "0",  # the forge samples are years old
        "FORGEBOT_EMBEDDER__KIND": "off",
        "FORGEBOT_CONSOLE__OPERATOR_TOKEN": OPERATOR_TOKEN,
        "FORGEBOT_CONSOLE__PUBLIC_URL": f"http://127.0.0.1:{port}",
    })
    env.update(extra)
    return env
