"""`forgebot run` on a first day: the real command against a wire-level model server, asserting
what the terminal shows (text without forge HTML, no log noise, a closing line naming the trace),
the exit status (0 only when the task reached its goal), and that the run is a task like a
worker's: listed by `forgebot tasks`, its trace readable, its questions answered with `--answer`."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import model_server as wire
from tests.fakes.model_server import ModelServer
from tests.firstday.cli import Typed, forgebot
from tests.firstday.conftest import Launch
from tests.firstday.service import wait_until
from tests.repos import git, init_repo

pytestmark = pytest.mark.timeout(600)
TASK = "Add tax to totals\nThe cart total must include 20% VAT."
ANALYSIS = {"summary": "Cart::total computes the total without tax.", "affected_files": ["Cart.php"]}
Payload = dict[str, Any] | Callable[[], dict[str, Any]]


def answering(payloads: dict[str, Payload]) -> wire.Responder:
    """Answers each structured request with its schema's payload, anything else with a word."""

    def respond(request: wire.Request) -> wire.Reply:
        fmt = request.body.get("response_format") or {}
        name = (fmt.get("json_schema") or {}).get("name")
        choice = request.body.get("tool_choice")
        if not name and isinstance(choice, dict):
            name = (choice.get("function") or {}).get("name")
        if name in payloads:
            payload = payloads[name]
            return wire.structured(name, payload() if callable(payload) else payload)
        return wire.text("ok")

    return respond


def decomposition(*questions: str) -> dict[str, Any]:
    """The decomposer's answer: criteria, or (when it has questions) none, so the task asks."""
    criteria = [] if questions else [{"id": 1, "text": "The total includes 20% VAT"}]
    return {"criteria": criteria, "assumptions": [], "questions": list(questions)}


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer() as running:
        yield running


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    repo = tmp_path / "shop"
    repo.mkdir()
    (repo / "Cart.php").write_text("<?php\nclass Cart { public function total(): int { return 1; } }\n")
    return init_repo(repo)


def _env(tmp_path: Path, model: ModelServer | None = None, **extra: str) -> dict[str, str]:
    env = {"FORGEBOT_DATA_DIR": str(tmp_path / "data"), "FORGEBOT_EMBEDDER__KIND": "off",
           "FORGEBOT_LLM__MAX_RETRIES": "0", "FORGEBOT_LLM__TIMEOUT": "20"}
    if model is not None:
        env |= {"FORGEBOT_LLM__BASE_URL": model.openai_url, "FORGEBOT_LLM__MODEL": model.model}
    return env | extra


def _task_of(seen: Typed) -> str:
    last = seen.err[-1]
    assert last.startswith("forgebot run: ") and " · the whole story: forgebot trace " in last, seen.err
    return last.rsplit(" ", 1)[1]


def _listed(tmp_path: Path, task: str) -> list[str]:
    tasks = forgebot("tasks", cwd=tmp_path, **_env(tmp_path))
    assert tasks.code == 0, tasks.err
    (row,) = [line.split() for line in tasks.out if line.startswith(task)]
    return row


def test_analyze_prints_text_names_what_it_left_out_and_is_listed_as_a_task(
    tmp_path: Path, model: ModelServer, checkout: Path
) -> None:
    (checkout / "Cart.php").write_text("<?php\n// my edit, not committed\n")
    (checkout / "notes.txt").write_text("draft\n")
    model.responder = answering({"Decomposition": decomposition(), "Analysis": ANALYSIS})
    seen = forgebot("run", "--repo", str(checkout), "--mode", "analyze", "--task", TASK, cwd=tmp_path,
                    **_env(tmp_path, model))
    assert seen.code == 0, seen.err
    assert "Cart::total computes the total without tax." in seen.out
    assert not [line for line in seen.out if "<sub>" in line or "<!--" in line or "</" in line]
    assert all(line.startswith("forgebot run: ") for line in seen.err), seen.err  # no log lines
    head = git(checkout, "rev-parse", "--short", "HEAD").strip()
    assert seen.err[0] == (f"forgebot run: 2 uncommitted change(s) are not included (the run works on commit {head}): "
                           "M Cart.php, ?? notes.txt")
    task = _task_of(seen)
    assert seen.err[-1].startswith("forgebot run: done (reported) · ") and f" · task {task} · " in seen.err[-1]
    probe = model.requests[0].body
    assert "tools" not in probe and "response_format" not in probe  # the endpoint was asked first, plainly
    row = _listed(tmp_path, task)
    assert row[1:3] == ["done", "analyze"] and row[-1] == str(checkout)
    trace = forgebot("trace", task, cwd=tmp_path, **_env(tmp_path))
    assert trace.code == 0 and trace.out
    short = forgebot("trace", task[:8], cwd=tmp_path, **_env(tmp_path))  # the start of it, as git takes a commit's
    assert short.code == 0 and short.out == trace.out
    assert (checkout / "Cart.php").read_text() == "<?php\n// my edit, not committed\n"


def test_a_run_that_asks_waits_with_exit_3_and_answer_resumes_it(
    tmp_path: Path, model: ModelServer, checkout: Path
) -> None:
    asked = iter([decomposition("Which rate applies to food?")])
    model.responder = answering({"Decomposition": lambda: next(asked, decomposition()), "Analysis": ANALYSIS})
    env = _env(tmp_path, model)
    first = forgebot("run", "--repo", str(checkout), "--mode", "analyze", "--task", TASK, cwd=tmp_path, **env)
    assert first.code == 3, first.err
    assert any("Which rate applies to food?" in line for line in first.out)
    task = _task_of(first)
    assert first.err[-1].startswith("forgebot run: waiting for your answer to 1 question(s) above; answer with: "
                                    f"forgebot run --repo {checkout} --answer 'YOUR ANSWER' · task {task}")
    assert _listed(tmp_path, task)[1] == "waiting"

    second = forgebot("run", "--repo", str(checkout), "--answer", "Food is taxed at 5%.", cwd=tmp_path, **env)
    assert second.code == 0, second.err
    assert _task_of(second) == task and "Cart::total computes the total without tax." in second.out
    assert _listed(tmp_path, task)[1] == "done"
    resumed = [r for r in model.requests if "Food is taxed at 5%." in str(r.body.get("messages"))]
    assert resumed  # the answer reached the model

    again = forgebot("run", "--repo", str(checkout), "--answer", "More.", cwd=tmp_path, **env)
    assert again.code == 2 and again.err == [
        f"forgebot run: no run of {checkout} is waiting for an answer (forgebot tasks --state waiting)"]


def test_a_failure_after_the_start_exits_1_and_is_listed_as_failed(
    tmp_path: Path, model: ModelServer, checkout: Path
) -> None:
    def respond(request: wire.Request) -> wire.Reply:
        if "tools" in request.body or "response_format" in request.body:
            return wire.error(400, "this server does not do that", error_type="invalid_request_error")
        return wire.text("ok")

    model.responder = respond
    seen = forgebot("run", "--repo", str(checkout), "--mode", "analyze", "--task", TASK, cwd=tmp_path,
                    **_env(tmp_path, model))
    assert seen.code == 1, seen.err
    assert "Traceback" not in seen.text
    task = _task_of(seen)
    assert seen.err[-2:] == [  # the task's failure record: its detail, then reason, kind, place and next step
        "forgebot run: model request rejected: HTTP 400: this server does not do that",
        "forgebot run: failed: the AI model service rejected a request of the decomposer step (model request "
        "rejected, in decomposer); the endpoint rejected the request: see the detail; check FORGEBOT_LLM__MODEL or "
        f"FORGEBOT_LLM__ROLES__DECOMPOSER__MODEL · task {task} · the whole story: forgebot trace {task}"]
    row = _listed(tmp_path, task)
    assert row[1] == "failed" and " ".join(row).endswith("(model request rejected)")


def test_a_git_command_past_its_time_limit_names_the_setting(tmp_path: Path, model: ModelServer,
                                                             checkout: Path) -> None:
    """A git command that runs past FORGEBOT_WORKSPACE__GIT_TIMEOUT (a large repository's first mirror): the
    run ended in a traceback from the clean-up of the mirror that was never made, hiding the timeout; when
    it did not, it said "the server did not answer ... check that the forge serves git"."""
    model.responder = answering({"Decomposition": decomposition(), "Analysis": ANALYSIS})
    seen = forgebot("run", "--repo", str(checkout), "--mode", "analyze", "--task", TASK, cwd=tmp_path,
                    **_env(tmp_path, model, FORGEBOT_WORKSPACE__GIT_TIMEOUT="0.001"))
    assert seen.code == 1 and "Traceback" not in seen.text, seen.text
    task = _task_of(seen)
    # which command runs out first depends on the machine's load: `git init`, or one after it (the clean-up
    # of a mirror that was made then timed out too, and its traceback replaced the record)
    assert re.fullmatch(
        r"forgebot run: failed: a git command on the repository took longer than forgebot allows \(git timeout, "
        r"in (mirror|worktree)\); git [a-z-]+ timed out after 0\.001s \(1 try of this task\): a large "
        r"repository's first mirror can need more; raise FORGEBOT_WORKSPACE__GIT_TIMEOUT "
        f"· task {task} · the whole story: forgebot trace {task}", seen.err[-1]), seen.err
    assert _listed(tmp_path, task)[1] == "failed"


def test_a_gateway_that_asks_for_its_own_key_header_gets_it_on_every_request(
    tmp_path: Path, model: ModelServer, checkout: Path
) -> None:
    """Azure API Management in front of the model (or another gateway) asks for its own key header
    (`Ocp-Apim-Subscription-Key`), not a bearer token: every call was refused with 401 and no setting could
    send it. FORGEBOT_LLM__HEADERS does, on every request, and its value is a secret: in no output or file."""
    key = "apim-subscription-key-0123456789abcdef"
    answers = answering({"Decomposition": decomposition(), "Analysis": ANALYSIS})

    def gateway(request: wire.Request) -> wire.Reply:
        if request.headers.get("ocp-apim-subscription-key") != key:
            return wire.error(401, "Access denied due to missing subscription key. Make sure to include subscription "
                                   "key when making requests to an API.", error_type="invalid_request_error")
        return answers(request)

    model.responder = gateway
    refused = forgebot("run", "--repo", str(checkout), "--mode", "analyze", "--task", TASK, cwd=tmp_path,
                       **_env(tmp_path, model))
    assert refused.code == 2 and refused.err[-1].endswith(
        "Access denied due to missing subscription key. Make sure to include subscription key when making requests "
        "to an API. (check FORGEBOT_LLM__API_KEY, or FORGEBOT_LLM__HEADERS for a gateway's own key header)"
    ), refused.err
    headers = json.dumps({"Ocp-Apim-Subscription-Key": key})
    seen = forgebot("run", "--repo", str(checkout), "--mode", "analyze", "--task", TASK, cwd=tmp_path,
                    **_env(tmp_path, model, FORGEBOT_LLM__HEADERS=headers))
    assert seen.code == 0, seen.err
    assert "Cart::total computes the total without tax." in seen.out
    sent = [r for r in model.requests if r.headers.get("ocp-apim-subscription-key") == key]
    assert len(sent) >= 3  # the first test call, the decomposer's and the analyzer's
    trace = forgebot("trace", _task_of(seen), cwd=tmp_path, **_env(tmp_path))
    assert trace.code == 0 and key not in seen.text + refused.text + trace.text
    for path in (tmp_path / "data").rglob("*"):
        assert not path.is_file() or key.encode() not in path.read_bytes(), path


def test_a_model_that_is_down_is_said_before_any_checkout_work(tmp_path: Path, checkout: Path) -> None:
    with ModelServer() as gone:
        closed = gone.openai_url
    seen = forgebot("run", "--repo", str(checkout), "--mode", "analyze", "--task", TASK, cwd=tmp_path,
                    **_env(tmp_path, FORGEBOT_LLM__BASE_URL=closed))
    assert seen.code == 2 and seen.out == []
    assert seen.err == ["forgebot run: the model failed a first test call, so nothing was started: cannot reach the "
                        "model endpoint (Connection error.) (check FORGEBOT_LLM__BASE_URL)"]
    assert not (tmp_path / "data" / "workspaces").exists()  # no mirror, no worktree, no index
    assert not list((tmp_path / "data").glob("**/*.sqlite*")) or not (tmp_path / "data" / "indexes").exists()


def test_a_model_that_never_answers_is_said_while_it_is_waited_on(tmp_path: Path, model: ModelServer,
                                                                   checkout: Path) -> None:
    """An endpoint that accepts the connection and never answers (a local server still loading its model,
    a proxy in front of a dead one) was waited on in silence for the whole timeout at every try, six minutes
    by default, and then named MAX_RETRIES. The run now says after ten seconds what it waits for and which
    settings bound the wait, and the failure names the timeout."""
    model.responder = lambda request: wire.text("ok", delay=30)
    seen = forgebot("run", "--repo", str(checkout), "--mode", "analyze", "--task", TASK, cwd=tmp_path,
                    **_env(tmp_path, model, FORGEBOT_LLM__TIMEOUT="12"))
    assert seen.code == 2 and seen.out == []
    assert seen.err == [
        f"forgebot run: waiting for {model.model} at {model.openai_url} to answer a first test call (up to 12 s a "
        "try, one try: FORGEBOT_LLM__TIMEOUT, FORGEBOT_LLM__MAX_RETRIES)",
        "forgebot run: the model failed a first test call, so nothing was started: the model call timed out (check "
        "FORGEBOT_LLM__TIMEOUT)"]
    assert not (tmp_path / "data" / "workspaces").exists()


def test_a_failed_run_is_listed_with_what_it_spent(tmp_path: Path, model: ModelServer, checkout: Path) -> None:
    """A run whose analyzer failed after two calls (its answers cut at the output cap) was listed with 0
    tokens: what a node spends reaches the checkpoint only when it returns. The failed node's calls now
    count: one decomposition and two analyzer calls, 30 tokens each (the wire server's usage)."""

    def respond(request: wire.Request) -> wire.Reply:
        if "response_format" in request.body or isinstance(request.body.get("tool_choice"), dict):
            return answering({"Decomposition": decomposition()})(request)
        return wire.length()

    model.responder = respond
    seen = forgebot("run", "--repo", str(checkout), "--mode", "analyze", "--task", TASK, cwd=tmp_path,
                    **_env(tmp_path, model))
    assert seen.code == 1 and "(model answer cut off, in analyzer)" in seen.err[-1], seen.err
    row = _listed(tmp_path, _task_of(seen))
    assert row[1] == "failed" and row[4] == "90", row


def test_a_start_commit_git_cannot_read_whole_is_refused_before_the_run(tmp_path: Path, model: ModelServer,
                                                                         checkout: Path) -> None:
    """A damaged repository that lacks a file of HEAD itself (phpunit's snapshot lacks a .phar): the run was
    recorded, then failed in its mirror step saying "the server did not answer ... check that the forge
    serves git". It is now refused at once, naming the file and what to do, and nothing is recorded."""
    (checkout / "tools").mkdir()
    (checkout / "tools" / "tool.phar").write_bytes(b"PK\x03\x04 a tool's archive")
    git(checkout, "add", "-A")
    git(checkout, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "add a tool")
    blob = git(checkout, "rev-parse", "HEAD:tools/tool.phar").strip()
    (checkout / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # loose, as a fresh commit's are
    head = git(checkout, "rev-parse", "HEAD").strip()
    model.responder = answering({"Decomposition": decomposition(), "Analysis": ANALYSIS})
    seen = forgebot("run", "--repo", str(checkout), "--mode", "analyze", "--task", TASK, cwd=tmp_path,
                    **_env(tmp_path, model))
    assert seen.code == 2 and seen.out == []
    assert seen.err[-1] == (
        f"forgebot run: {checkout} lacks 1 object(s) of commit {head[:12]} itself (tools/tool.phar): no run can "
        "copy it; `git fsck` lists what is missing. Fetch them again from where the repository was cloned, or "
        "pass --base a commit whose files are all there")
    assert not (tmp_path / "data" / "workspaces").exists()
    tasks = forgebot("tasks", cwd=tmp_path, **_env(tmp_path))
    assert tasks.code == 0 and len(tasks.out) <= 1, tasks.out  # the header at most: no run recorded


def test_a_page_where_the_api_belongs_is_said_before_any_checkout_work(tmp_path: Path, model: ModelServer,
                                                                        checkout: Path) -> None:
    """A proxy's login page (or a server's web UI at a base URL without /v1) answered 200 with HTML: the run
    ended in a ValueError traceback from the SDK. It now says what came back and which setting to check."""
    model.responder = lambda request: wire.page("<html><body><h1>Proxy login required</h1></body></html>")
    seen = forgebot("run", "--repo", str(checkout), "--mode", "analyze", "--task", TASK, cwd=tmp_path,
                    **_env(tmp_path, model))
    assert seen.code == 2 and seen.out == []
    assert seen.err == [
        "forgebot run: the model failed a first test call, so nothing was started: the endpoint answered with a "
        "page, not the API's JSON (it began: '<html><body><h1>Proxy login required</h1></body></html>'): is the "
        "base URL the API's root, often ending in /v1? (check FORGEBOT_LLM__BASE_URL)"]


def test_a_wrong_path_and_an_unknown_model_name_their_own_settings(tmp_path: Path, model: ModelServer,
                                                                    checkout: Path) -> None:
    """Both answer 404. A base URL without the API's path (`http://host:8000` for `…/v1`) said "HTTP 404:
    Error code: 404 (check FORGEBOT_LLM__MODEL)"; the route is missing, not the model. A 404 that names
    no model is now the base URL's; one that names the model stays the model's."""
    wrong = forgebot("run", "--repo", str(checkout), "--mode", "analyze", "--task", TASK, cwd=tmp_path,
                     **_env(tmp_path, model, FORGEBOT_LLM__BASE_URL=f"{model.url}/api"))
    assert wrong.code == 2
    assert wrong.err == [
        "forgebot run: the model failed a first test call, so nothing was started: HTTP 404: no route "
        "/api/chat/completions: the endpoint has no chat API at this address; is the base URL the API's root, "
        "often ending in /v1? (check FORGEBOT_LLM__BASE_URL)"]
    model.responder = lambda request: wire.error(404, "The model `gpt-nope` does not exist or you do not have "
                                                 "access to it.", error_type="invalid_request_error",
                                                 code="model_not_found")
    unknown = forgebot("run", "--repo", str(checkout), "--mode", "analyze", "--task", TASK, cwd=tmp_path,
                       **_env(tmp_path, model))
    assert unknown.code == 2 and unknown.err[-1].endswith("does not exist or you do not have access to it. (check "
                                                          "FORGEBOT_LLM__MODEL)"), unknown.err


def test_a_directory_that_is_not_a_checkout_is_refused(tmp_path: Path, checkout: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    seen = forgebot("run", "--repo", str(plain), "--mode", "analyze", "--task", TASK, cwd=tmp_path, **_env(tmp_path))
    assert seen.code == 2 and seen.err == [
        f"forgebot run: {plain} is not a git repository: forgebot run works on a git checkout and its commits "
        "(`git init && git add -A && git commit -m start` makes one)"]
    (checkout / "src").mkdir()
    inside = forgebot("run", "--repo", str(checkout / "src"), "--mode", "analyze", "--task", TASK, cwd=tmp_path,
                      **_env(tmp_path))
    assert inside.code == 2 and inside.err == [
        f"forgebot run: {checkout / 'src'} is inside the git repository {checkout}: pass --repo {checkout}"]


def test_ctrl_c_ends_the_run_as_cancelled_without_a_traceback(
    tmp_path: Path, model: ModelServer, checkout: Path
) -> None:
    import os
    import signal
    import subprocess
    import time

    from tests.firstday.cli import FORGEBOT

    def slow(request: wire.Request) -> wire.Reply:
        if "tools" in request.body or "response_format" in request.body:
            return wire.Reply(text="{}", delay=15.0)
        return wire.text("ok")

    model.responder = slow
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORGEBOT_")} | _env(tmp_path, model)
    proc = subprocess.Popen([str(FORGEBOT), "run", "--repo", str(checkout), "--mode", "analyze", "--task", TASK],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not any("response_format" in r.body or "tools" in r.body for r in model.requests):
        assert time.monotonic() < deadline and proc.poll() is None, "the run never reached its first role"
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert err.splitlines()[-1] == "forgebot run: interrupted; a started run is recorded as cancelled (forgebot tasks)"
    tasks = forgebot("tasks", cwd=tmp_path, **_env(tmp_path))
    (row,) = [line.split() for line in tasks.out[1:]]
    assert row[1] == "cancelled"


def _killed_run(tmp_path: Path, model: ModelServer, checkout: Path, data_dir: Path) -> int:
    """A `forgebot run` killed with SIGKILL at its first role's call (nothing it could write down); its pid."""
    import os
    import signal
    import subprocess
    import time

    from tests.firstday.cli import FORGEBOT

    def slow(request: wire.Request) -> wire.Reply:
        if "tools" in request.body or "response_format" in request.body:
            return wire.Reply(text="{}", delay=30.0)
        return wire.text("ok")

    model.responder = slow
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORGEBOT_")} | _env(
        tmp_path, model, FORGEBOT_DATA_DIR=str(data_dir))
    proc = subprocess.Popen([str(FORGEBOT), "run", "--repo", str(checkout), "--mode", "analyze", "--task", TASK],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not any("response_format" in r.body or "tools" in r.body for r in model.requests):
        assert time.monotonic() < deadline and proc.poll() is None, "the run never reached its first role"
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL
    return proc.pid


def test_a_run_killed_outright_is_listed_as_lost_not_running_forever(
    tmp_path: Path, model: ModelServer, checkout: Path
) -> None:
    """kill -9 leaves the run no chance to record its end: `forgebot tasks` finds its process gone and
    says so (on main the run read `running` forever)."""
    pid = _killed_run(tmp_path, model, checkout, tmp_path / "data")
    tasks = forgebot("tasks", cwd=tmp_path, **_env(tmp_path))
    (row,) = tasks.out[1:]
    assert row.split()[1] == "failed" and row.endswith("(run lost)"), tasks.text
    again = forgebot("tasks", "--json", cwd=tmp_path, **_env(tmp_path))
    assert again.code == 0 and '"state": "failed"' in again.out[0]
    trace = forgebot("trace", row.split()[0], cwd=tmp_path, **_env(tmp_path))
    assert trace.code == 0 and trace.out  # what it did before it was killed is still there
    assert str(pid) not in row  # the operator's detail (which process, where) is for the console


def test_a_run_killed_outright_is_settled_on_the_console_by_the_services_reaper(
    tmp_path: Path, model: ModelServer, checkout: Path, launch: Launch
) -> None:
    service = launch("serve", FORGEBOT_DURABILITY__REAP_INTERVAL="1").wait_healthy()
    pid = _killed_run(tmp_path, model, checkout, service.data_dir)
    (task,) = service.tasks()
    path = f"/console/tasks/{task.task_id}"
    page = wait_until(lambda: 'id="failure-kind">run lost' in (text := service.console(path)) and text, 60,
                      "the reaper to settle the lost run")
    assert f"process {pid} on " in page and "is gone without having recorded the run" in page
    assert [(t.state, t.detail) for t in service.tasks()] == [("failed", "run lost")]
    assert len(service.log_lines("task failed")) == 1 and "Traceback" not in service.logs()


def test_a_local_run_is_on_the_console_beside_the_services_tasks(
    tmp_path: Path, model: ModelServer, checkout: Path, launch: Launch
) -> None:
    service = launch("serve").wait_healthy()
    model.responder = answering({"Decomposition": decomposition(), "Analysis": ANALYSIS})
    seen = forgebot("run", "--repo", str(checkout), "--mode", "analyze", "--task", TASK, cwd=tmp_path,
                    **_env(tmp_path, model, FORGEBOT_DATA_DIR=str(service.data_dir)))
    assert seen.code == 0, seen.err
    task = _task_of(seen)
    listing = service.console("/console/tasks")
    assert f"/console/tasks/{task}" in listing and f"local run #1 in {checkout}" in listing
    page = service.console(f"/console/tasks/{task}")
    assert f"local run #1 in {checkout}" in page and "analyzer" in page  # its timeline from its checkpoints


def test_a_partial_clone_runs_on_its_start_commit_and_says_so(tmp_path: Path, model: ModelServer,
                                                                checkout: Path) -> None:
    """A blobless partial clone (`git clone --filter=blob:none`, how large repositories are often cloned)
    lacks the blobs of its history: git cannot copy its branches into the run's mirror ("possible
    repository corruption on the remote side"), and every run failed there. The run now works on the
    start commit alone, whose tree the clone holds, and says what it goes without."""
    (checkout / "Cart.php").write_text("<?php\nclass Cart { public function total(): int { return 2; } }\n")
    git(checkout, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qam", "total is two")
    git(checkout, "config", "uploadpack.allowFilter", "true")
    partial = tmp_path / "partial"
    done = subprocess.run(["git", "clone", "-q", "--filter=blob:none", f"file://{checkout}", str(partial)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "?" in git(partial, "rev-list", "--objects", "--all", "--missing=print")  # the first commit's blob
    model.responder = answering({"Decomposition": decomposition(), "Analysis": ANALYSIS})
    seen = forgebot("run", "--repo", str(partial), "--mode", "analyze", "--task", TASK, cwd=tmp_path,
                    **_env(tmp_path, model))
    assert seen.code == 0, seen.err
    head = git(partial, "rev-parse", "HEAD").strip()
    assert seen.err[0] == (f"forgebot run: {partial} lacks objects of its history (a partial clone, or a damaged "
                           f"repository): this run works on commit {head[:12]} alone, and its project memory has no "
                           "history")
    assert "Cart::total computes the total without tax." in seen.out
