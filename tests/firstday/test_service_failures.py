"""Every failure has a reason, a place and a next step; an outage is retried before it is one.

Through `forgebot serve` with the real OpenAI client against a wire-level model server:

* A model endpoint that answers 503 to the first two calls (a blip): the task is deferred twice
  with growing pauses and then finishes; the log has two `task deferred` lines and no failure
  (on main: `failed` at the first 503, 0 retries with FORGEBOT_MAX_TRIES=3). Its model is priced at
  0: the console says "free" (on main `$0.0000`, as for a model without a price).
* A model endpoint down for good, three tasks: each is tried FORGEBOT_MAX_TRIES times and then
  fails once. The issue's author reads, in the status and failure comments, what happened in plain
  words and what to do (no exception name, no server variable; on main: `ModelCallError`'s text with
  `check FORGEBOT_LLM__…`); the operator reads, on the console's task page, list and health page
  (grouped by reason, with the count), the kind, the place, the provider's message and the
  setting to check; the log has exactly one `task failed` line per task and no traceback.
* GitLab answers 502 to the report's comment twice: the task is deferred twice and posts its report
  once, resumed from its checkpoint (the model is not asked again).
"""

from __future__ import annotations

from tests.fakes.forge_http import FakeForgeState, FakeIssue, Fault
from tests.fakes.model_server import ModelServer, Reply, Request, error, length, structured
from tests.firstday.conftest import ISSUE, Launch, model_env
from tests.firstday.service import Service

BLOCKED = {"criteria": [], "assumptions": [], "questions": ["Which calculator?"]}
TRIES = 3


def _outage(calls_down: int) -> tuple[list[int], object]:
    """A responder that answers 503 to the first `calls_down` calls, then a blocked decomposition."""
    seen: list[int] = []

    def respond(request: Request) -> Reply:
        seen.append(1)
        if len(seen) <= calls_down:
            return error(503, "upstream connect error or disconnect/reset before headers")
        return structured("Decomposition", BLOCKED)

    return seen, respond


def _start(launch: Launch, forge_env: dict[str, str], model: ModelServer) -> Service:
    env = {**forge_env, **model_env(model, FORGEBOT_LLM__MAX_RETRIES="0"),
           "FORGEBOT_QUESTIONS__MAX_ROUNDS": "0", "FORGEBOT_MAX_TRIES": str(TRIES),
           "FORGEBOT_DURABILITY__RETRY_SECONDS": "0.5"}  # 0.5 s, then 2 s
    return launch("serve", **env).wait_healthy()


def test_a_model_blip_is_retried_and_the_task_finishes(
    launch: Launch, forge_env: dict[str, str], model: ModelServer, fake_forge: FakeForgeState, origin_url: str
) -> None:
    seen, respond = _outage(calls_down=2)
    model.responder = respond  # type: ignore[assignment]
    service = _start(launch, {**forge_env, "FORGEBOT_LLM__PRICES": f'{{"{model.model}": [0, 0]}}'}, model)
    assert service.label(origin_url) == 202
    service.wait_states(lambda states: states == ["done"], "the task to finish")
    assert service.task_states() == [("done", "blocked")]
    assert len(seen) == 3  # two refused calls, then the answer
    assert len(service.log_lines("task deferred")) == 2 and not service.log_lines("task failed")
    (status,) = [c.body for c in fake_forge.comments_on("gitlab", "1", ISSUE, status=True) if "Status:" in c.body]
    assert status.startswith("**Status: done (blocked)**")
    assert f"model {model.model}" in status  # the configured model, never "model none"
    (task,) = service.tasks()
    assert 'id="cost">free</dd>' in service.console(f"/console/tasks/{task.task_id}")  # priced at 0: free
    assert service.stop() == 0 and "Traceback" not in service.logs()


def test_an_outage_that_outlasts_the_tries_fails_each_task_once_with_one_record(
    launch: Launch, forge_env: dict[str, str], model: ModelServer, fake_forge: FakeForgeState, origin_url: str
) -> None:
    model.responder = lambda request: error(503, "upstream connect error or disconnect/reset before headers")
    issues = [ISSUE, 24, 25]
    for number in issues[1:]:
        fake_forge.add_issue("gitlab", "1", number, FakeIssue(title=f"Issue {number}", body="Subtract numbers."))
    service = _start(launch, forge_env, model)
    for number in issues:
        assert service.label(origin_url, issue=number) == 202
    service.wait_states(lambda states: states == ["failed"] * 3, "the three tasks to fail", timeout=240)
    assert service.task_states() == [("failed", "model unavailable")] * 3
    assert len(model.requests) == TRIES * 3  # every task tried FORGEBOT_MAX_TRIES times

    # the issue's author: plain words and a next step, in the status comment and one failure comment
    for number in issues:
        comments = [c.body for c in fake_forge.comments_on("gitlab", "1", number, status=True)]
        (status,) = [c for c in comments if "Status:" in c]
        (note,) = [c for c in comments if "could not finish" in c]
        assert status.startswith("**Status: failed**")
        for text in (status, note):
            assert "the AI model service was unavailable while the decomposer step ran" in text
            assert "Start the task again (re-add the label or repeat the command) later" in text
            # no exception name, no server setting, not the provider's own words (the operator's detail):
            # a bare "503" is no test of that, the signed console link's hex can hold those digits
            assert "FORGEBOT_" not in text and "Error" not in text, text
            assert "HTTP 503" not in text and "upstream connect error" not in text, text

    # the operator: one record per task, on the console's task page, list and health page
    records = service.failures()
    assert [(r.kind, r.phase, r.role, r.transient) for r in records] == [
        ("model unavailable", "decomposer", "decomposer", True)] * 3
    assert "HTTP 503" in records[0].detail and "forgebot check" in records[0].operator_action
    task_id = service.tasks()[0].task_id
    page = service.console(f"/console/tasks/{task_id}")
    assert 'id="failure-kind">model unavailable (an outage: retried before it failed)' in page
    assert "HTTP 503: upstream connect error" in page and "failed 3 tries of this task" in page
    assert "no trace for this task" not in page  # the steps before the graph traced themselves
    for step in ("mirror", "worktree", "memory", "index", "decomposer"):
        assert f'data-node="{step}"' in page, step
    listing = service.console("/console/tasks?state=failed")
    assert listing.count("the AI model service was unavailable while the decomposer step ran") == 3
    health = service.console("/console/health")
    kinds = health.split('id="failure-kinds"', 1)[1].split("</table>", 1)[0]
    assert "model unavailable" in kinds and '<td class="num">3</td>' in kinds, kinds

    # the log: one line per failed task, two deferrals each, no traceback
    assert service.stop() == 0
    assert len(service.log_lines("task failed")) == 3
    assert len(service.log_lines("task deferred")) == 2 * 3
    assert "Traceback" not in service.logs()
    # what an operator filtering for warnings reads: those nine lines and nothing else (on main: 54
    # tracebacks in ~1,900 lines for 6 failed tasks)
    signal = [line for line in service.logs().splitlines() if " WARNING " in line or " ERROR " in line]
    assert len(signal) == 3 + 2 * 3, "\n".join(signal)
    assert len([line for line in signal if "try=1 of 3, again in 0.5 s: model unavailable" in line]) == 3


def test_a_model_too_slow_for_the_timeout_names_the_timeout(
    launch: Launch, forge_env: dict[str, str], model: ModelServer, origin_url: str
) -> None:
    """A model that answers after the timeout fails as an outage would (tried, then failed once), and the
    operator reads that its calls timed out and which setting bounds them: it used to name
    FORGEBOT_LLM__MAX_RETRIES, the setting that only made the wait longer."""
    model.responder = lambda request: Reply(text="late", delay=4)
    env = {**forge_env, **model_env(model, FORGEBOT_LLM__MAX_RETRIES="0", FORGEBOT_LLM__TIMEOUT="1"),
           "FORGEBOT_QUESTIONS__MAX_ROUNDS": "0", "FORGEBOT_MAX_TRIES": "1"}
    service = launch("serve", **env).wait_healthy()
    assert service.label(origin_url) == 202
    service.wait_states(lambda states: states == ["failed"], "the task to fail", timeout=60)
    (record,) = service.failures()
    assert (record.kind, record.detail) == ("model unavailable", "the model call timed out")
    assert record.operator_action.endswith("its calls timed out: a slow model needs a larger FORGEBOT_LLM__TIMEOUT")
    assert service.stop() == 0 and "Traceback" not in service.logs()


def test_a_task_that_fails_after_spending_says_what_it_spent(
    launch: Launch, forge_env: dict[str, str], model: ModelServer, fake_forge: FakeForgeState, origin_url: str
) -> None:
    """The analyzer's answers are cut at the output cap twice and the task fails: its status comment said
    "0 tokens" and its row 0, though the decomposer and the analyzer had made three calls. A node's spend
    reached the checkpoint only when the node returned; the failed node's calls now count (30 tokens a
    call: the wire server's usage)."""

    def respond(request: Request) -> Reply:
        if "response_format" in request.body or isinstance(request.body.get("tool_choice"), dict):
            return structured("Decomposition", {"criteria": [{"id": 1, "text": "Subtraction works"}],
                                                "assumptions": [], "questions": []})
        return length()

    model.responder = respond  # type: ignore[assignment]
    service = _start(launch, forge_env, model)
    assert service.label(origin_url) == 202
    service.wait_states(lambda states: states == ["failed"], "the task to fail")
    assert service.task_states() == [("failed", "model answer cut off")]
    (task,) = service.tasks()
    page = service.console(f"/console/tasks/{task.task_id}")
    assert 'id="tokens">90</dd>' in page, page.split('id="tokens"')[1][:80]
    (status,) = [c.body for c in fake_forge.comments_on("gitlab", "1", ISSUE, status=True) if "Status:" in c.body]
    assert status.startswith("**Status: failed**") and " · 90 tokens · " in status, status
    assert service.stop() == 0 and "Traceback" not in service.logs()


def test_a_failure_before_the_graph_is_a_step_on_the_timeline_with_its_trace(
    launch: Launch, forge_env: dict[str, str], model: ModelServer, fake_forge: FakeForgeState, origin_url: str
) -> None:
    """The repository cannot be fetched (the forge names a clone URL its git server does not have): the
    task fails in its `mirror` step, before any model call. The author reads that forgebot could not
    prepare a working copy (on main: `forgebot could not finish this task: GitError.`); the console's
    page draws the failed step with its duration, shows where it failed and git's own message, and
    has the step's trace (on main: no timeline, and "no trace for this task in this server's data
    directory", blaming the deployment)."""
    fake_forge.projects[("gitlab", "1")].clone_url = origin_url.replace("/app.git", "/gone.git")
    model.responder = lambda request: structured("Decomposition", BLOCKED)
    service = _start(launch, forge_env, model)
    assert service.label(origin_url) == 202
    service.wait_states(lambda states: states == ["failed"], "the task to fail")
    (record,) = service.failures()
    assert (record.kind, record.phase, record.transient) == ("git", "mirror", False)
    assert not model.requests  # it never reached the graph
    (note,) = [c.body for c in fake_forge.comments_on("gitlab", "1", ISSUE) if "could not finish" in c.body]
    assert "forgebot could not prepare a working copy of the repository" in note and "GitError" not in note

    page = service.console(f"/console/tasks/{service.tasks()[0].task_id}")
    assert '<g class="bar failed" data-node="mirror">' in page, page
    assert 'id="failure-where">mirror</dd>' in page and "not found" in page  # git's message, for the operator
    assert "step mirror:" in page and "no trace for this task" not in page
    assert service.stop() == 0
    assert len(service.log_lines("task failed")) == 1 and "Traceback" not in service.logs()


def test_a_forge_blip_while_reporting_is_retried_from_the_checkpoint(
    launch: Launch, forge_env: dict[str, str], model: ModelServer, fake_forge: FakeForgeState, origin_url: str
) -> None:
    """GitLab answers 502 to the report's comment twice (its own retries off): the task is deferred
    twice and then posts the report once, resuming after the model's answer (the model is asked once),
    and nobody is told it failed."""
    model.responder = lambda request: structured("Decomposition", BLOCKED)
    fake_forge.faults.append(Fault("POST", "/gitlab/api/v4/projects/1/issues/23/notes", 502, count=2, skip=1))
    service = _start(launch, {**forge_env, "FORGEBOT_GITLAB__MAX_RETRIES": "0"}, model)
    assert service.label(origin_url) == 202
    service.wait_states(lambda states: states == ["done"], "the task to finish")
    assert service.task_states() == [("done", "blocked")]
    assert len(model.requests) == 1  # resumed from its checkpoint, not asked again
    deferred = service.log_lines("task deferred")
    assert len(deferred) == 2 and all("forge" in line and "502" in line for line in deferred), deferred
    comments = [c.body for c in fake_forge.comments_on("gitlab", "1", ISSUE)]
    assert len([c for c in comments if "Analysis blocked" in c]) == 1, comments
    assert not [c for c in comments if "could not finish" in c]
    assert service.stop() == 0 and "Traceback" not in service.logs() and not service.log_lines("task failed")
