"""Starting a task again after a failure: re-adding the label must work, and a retried job must
find its own worktree.

* An implement task fails at its first model call (the endpoint refuses the key). Its worktree stays
  (retention keeps it for the operator), and with it the issue's branch `forgebot/<n>-<slug>`. The
  author re-adds the label once the key is fixed: the new task frees the branch from the failed
  task's worktree (removed, and git's record of it pruned) and runs (on main it failed in 0.4 s with
  `GitError`: git refuses a second checkout of a branch).
* An implement task whose model blips is deferred and tried again: the retry takes up the worktree
  its first try made (same branch, nothing to free), and the finished task's worktree is removed.

Through `forgebot serve`, the real model client and git over HTTP.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.fakes.forge_http import FakeForgeState
from tests.fakes.model_server import ModelServer, Reply, Request, error, structured
from tests.firstday.conftest import ISSUE, Launch, model_env
from tests.firstday.service import Service

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
