"""Starting a task again after a failure: re-adding the label must work, and a retried job must
find its own worktree.

* An implement task fails at its first model call (the endpoint refuses the key). Its worktree stays
  (retention keeps it for the operator), and with it the issue's branch `forgebot/<n>-<slug>`. The
  author re-adds the label once the key is fixed: the new task frees the branch from the failed
  task's worktree (removed, and git's record of it pruned) and runs (on main it failed in 0.4 s with
  `GitError`: git refuses a second checkout of a branch).
* An implement task whose model blips is deferred and tried again: the retry takes up the worktree
  its first try made (same branch, nothing to free), and the finished task's worktree is removed.
* A delivery the store took while Redis was away is queued by the sweeper while serve's only job
  slot runs a long task.
* A task that finishes while another process holds the store's write lock is recorded done once the
  lock is gone (its end is written again, one warning line a try), never failed.

Through `forgebot serve`, the real model client and git over HTTP.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.fakes.forge_http import FakeForgeState, FakeIssue
from tests.fakes.model_server import ModelServer, Reply, Request, error, structured
from tests.firstday.conftest import ISSUE, Launch, model_env
from tests.firstday.service import Service, wait_until

BLOCKED = {"criteria": [], "assumptions": [], "questions": ["Which calculator?"]}


def test_re_adding_the_label_after_a_failed_implement_task_starts_a_new_one(
    launch: Launch, forge_env: dict[str, str], model: ModelServer, fake_forge: FakeForgeState, origin_url: str
) -> None:
    model.responder = lambda request: error(401, "Incorrect API key provided", error_type="invalid_request_error")
    env = {**forge_env, **model_env(model, FORGEBOT_LLM__MAX_RETRIES="0"), "FORGEBOT_QUESTIONS__MAX_ROUNDS": "0",
           "FORGEBOT_TRIGGERS__ANALYZE_LABEL": "analyze", "FORGEBOT_TRIGGERS__IMPLEMENT_LABEL": "Platform"}
    service = launch("serve", **env).wait_healthy()
    assert service.label(origin_url) == 202
    service.wait_states(lambda states: states == ["failed"], "the first task to fail")
    assert service.task_states() == [("failed", "model credentials")]
    (kept,) = _task_trees(service)  # the failed task's worktree is kept, on the issue's branch
    assert kept.name == service.tasks()[0].task_id
    assert _branch(kept).startswith(f"refs/heads/forgebot/{ISSUE}-")

    model.responder = lambda request: structured("Decomposition", BLOCKED)  # the key is fixed
    assert service.label(origin_url) == 202  # the author re-adds the label
    service.wait_states(lambda states: len(states) == 2 and "running" not in states and "queued" not in states,
                        "the second task to end")
    first, second = service.tasks()
    assert (first.state, second.state) == ("failed", "done"), service.task_states()
    assert len(service.log_lines(f"frees branch forgebot/{ISSUE}-")) == 1
    assert not kept.exists() and _task_trees(service) == []  # freed, and the finished task's removed too
    assert _registered(service) == []  # git keeps no record of either
    notes = [c.body for c in fake_forge.comments_on("gitlab", "1", ISSUE) if second.task_id in c.body]
    assert notes and not any("could not finish" in note for note in notes), notes
    assert service.stop() == 0 and "Traceback" not in service.logs()


def test_a_retried_implement_task_takes_up_its_own_worktree(
    launch: Launch, forge_env: dict[str, str], model: ModelServer, fake_forge: FakeForgeState, origin_url: str
) -> None:
    calls: list[int] = []

    def blip(request: Request) -> Reply:
        calls.append(1)
        if len(calls) == 1:
            return error(503, "upstream connect error or disconnect/reset before headers")
        return structured("Decomposition", BLOCKED)

    model.responder = blip
    env = {**forge_env, **model_env(model, FORGEBOT_LLM__MAX_RETRIES="0"), "FORGEBOT_QUESTIONS__MAX_ROUNDS": "0",
           "FORGEBOT_TRIGGERS__ANALYZE_LABEL": "analyze", "FORGEBOT_TRIGGERS__IMPLEMENT_LABEL": "Platform",
           "FORGEBOT_MAX_TRIES": "3", "FORGEBOT_DURABILITY__RETRY_SECONDS": "0.5"}
    service = launch("serve", **env).wait_healthy()
    assert service.label(origin_url) == 202
    service.wait_states(lambda states: states == ["done"], "the task to end")
    assert service.task_states() == [("done", "blocked")] and len(calls) == 2
    assert len(service.log_lines("task deferred")) == 1 and not service.log_lines("frees branch")
    assert not service.log_lines("task failed") and not service.log_lines("already works on")
    assert _task_trees(service) == [] and _registered(service) == []
    assert service.stop() == 0 and "Traceback" not in service.logs()


def _task_trees(service: Service) -> list[Path]:
    tasks = service.data_dir / "workspaces" / "tasks"
    return sorted(tasks.iterdir()) if tasks.exists() else []


def _branch(worktree: Path) -> str:
    return subprocess.run(["git", "symbolic-ref", "HEAD"], cwd=worktree, capture_output=True, text=True,
                          check=True).stdout.strip()


def _registered(service: Service) -> list[str]:
    """The task worktrees the repository's mirror still records (git refuses a branch one of them holds)."""
    (mirror,) = (service.data_dir / "workspaces" / "mirrors").glob("*.git")
    listing = subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=mirror, capture_output=True, text=True,
                             check=True).stdout
    return [line for line in listing.splitlines() if line.startswith("worktree ") and "/tasks/" in line]


@pytest.mark.timeout(300)  # a 25 s model call, then a second task, on a shared machine
def test_a_stranded_delivery_is_queued_while_the_only_job_slot_runs_a_task(
    launch: Launch, forge_env: dict[str, str], model: ModelServer, fake_forge: FakeForgeState, origin_url: str
) -> None:
    """The sweeper works beside the job slot: a delivery the store took while Redis was away is queued
    within a sweep interval although serve's one worker is busy with a long model call (as an arq
    cron job it waited for the running task to end)."""
    import asyncio
    import dataclasses
    import json
    import time

    from bot.tasks.events import parse_gitlab
    from bot.tasks.inbox import Inbox
    from foundation.settings import TriggerSettings
    from tests.e2e.conftest import pointed_at
    from tests.fakes.samples import sample

    fake_forge.add_issue("gitlab", "1", 24, FakeIssue(title="Division", body="The calculator cannot divide."))
    started: list[float] = []

    def slow_first(request: Request) -> Reply:
        started.append(time.monotonic())
        return dataclasses.replace(structured("Decomposition", BLOCKED), delay=25.0 if len(started) == 1 else 0.0)

    model.responder = slow_first
    env = {**forge_env, **model_env(model, FORGEBOT_LLM__MAX_RETRIES="0", FORGEBOT_LLM__TIMEOUT="90"),
           "FORGEBOT_QUESTIONS__MAX_ROUNDS": "0", "FORGEBOT_INTAKE__SWEEP_INTERVAL": "5",
           "FORGEBOT_INTAKE__SWEEP_GRACE": "0"}
    service = launch("serve", **env).wait_healthy()
    assert service.label(origin_url) == 202
    wait_until(lambda: started, 120, "the first task's model call")  # the only job slot is taken

    payload = sample("gitlab/issue.labels-changed.json")
    payload["object_attributes"]["iid"] = 24
    event = parse_gitlab({"x-gitlab-event": "Issue Hook"}, json.loads(pointed_at(json.dumps(payload).encode(),
                         origin_url)), "gitlab:stranded-24", TriggerSettings(analyze_label="Platform"))
    assert event is not None

    async def strand() -> str:  # what the receiver writes when Redis does not answer in time
        inbox = await Inbox.open(sqlite_path=service.data_dir / "inbox.sqlite")
        try:
            return (await inbox.record("gitlab", event.delivery_id, "Issue Hook", event)).result
        finally:
            await inbox.close()

    assert asyncio.run(strand()) == "accepted"
    wait_until(lambda: service.log_lines("sweeper re-enqueued delivery=gitlab:stranded-24"), 30,
               "the sweeper to queue the stranded delivery")
    assert len(started) == 1 and [s for s, _ in service.task_states()][0] == "running"  # still in its first call
    service.wait_states(lambda states: states == ["done", "done"], "both tasks to end")
    assert service.stop() == 0 and "Traceback" not in service.logs()


@pytest.mark.timeout(300)
def test_a_finished_task_whose_end_meets_a_locked_store_is_recorded_done(
    launch: Launch, forge_env: dict[str, str], model: ModelServer, fake_forge: FakeForgeState, origin_url: str
) -> None:
    """Another process holds the task store's write lock for longer than a writer waits (10 s) just as
    the task finishes: writing its end fails with "database is locked" and is tried again, and the task
    is done, without a failure comment (on main the job raised, and the reaper later failed the finished
    task and told its author so)."""
    import sqlite3
    import threading
    import time

    released = threading.Event()

    def hold_the_store() -> None:
        lock = sqlite3.connect(service.data_dir / "inbox.sqlite", isolation_level=None, timeout=30)
        lock.execute("BEGIN EXCLUSIVE")
        time.sleep(22)
        lock.execute("COMMIT")
        lock.close()
        released.set()

    def answer_then_lock(request: Request) -> Reply:
        threading.Thread(target=hold_the_store, daemon=True).start()
        time.sleep(1)  # the lock is held before the answer leaves
        return structured("Decomposition", BLOCKED)

    model.responder = answer_then_lock
    env = {**forge_env, **model_env(model), "FORGEBOT_QUESTIONS__MAX_ROUNDS": "0"}
    service = launch("serve", **env).wait_healthy()
    assert service.label(origin_url) == 202
    wait_until(released.is_set, 120, "the store's lock to be held and released")  # the test reads it after
    service.wait_states(lambda states: states == ["done"], "the task to be recorded done", timeout=120)
    assert service.task_states() == [("done", "blocked")]
    retried = service.log_lines("task end not recorded yet (")
    assert retried and all("database is locked" in line for line in retried), retried
    assert not service.log_lines("task failed") and not service.log_lines("after 5 tries")
    assert not [c for c in fake_forge.comments_on("gitlab", "1", ISSUE) if "could not finish" in c.body]
    assert service.stop() == 0 and "Traceback" not in service.logs()
