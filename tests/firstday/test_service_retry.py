"""Starting a task again after a failure: re-adding the label must work.

An implement task fails at its first model call (the endpoint refuses the key). Its worktree stays
(retention keeps it for the operator), and with it the issue's branch `forgebot/<n>-<slug>`. The
author re-adds the label once the key is fixed: the new task frees the branch from the failed task's
worktree and runs (on main it failed in 0.4 s with `GitError`: git refuses a second checkout of a
branch). Through `forgebot serve`, the real model client and git over HTTP.
"""

from __future__ import annotations

from tests.fakes.forge_http import FakeForgeState
from tests.fakes.model_server import ModelServer, error, structured
from tests.firstday.conftest import ISSUE, Launch, model_env

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
    kept = list((service.data_dir / "workspaces" / "tasks").iterdir())
    assert len(kept) == 1  # the failed task's worktree is kept, on the issue's branch

    model.responder = lambda request: structured("Decomposition", BLOCKED)  # the key is fixed
    assert service.label(origin_url) == 202  # the author re-adds the label
    service.wait_states(lambda states: len(states) == 2 and "running" not in states and "queued" not in states,
                        "the second task to end")
    first, second = service.tasks()
    assert (first.state, second.state) == ("failed", "done"), service.task_states()
    assert len(service.log_lines(f"frees branch forgebot/{ISSUE}-")) == 1
    notes = [c.body for c in fake_forge.comments_on("gitlab", "1", ISSUE) if second.task_id in c.body]
    assert notes and not any("could not finish" in note for note in notes), notes
    assert service.stop() == 0 and "Traceback" not in service.logs()
