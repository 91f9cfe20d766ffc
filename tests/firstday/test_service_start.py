"""Start, then say what is missing: `forgebot serve` as a new user starts it.

* With nothing configured but a data directory, serve comes up (on main it exited 2 after a model
  check); `/readyz` answers 200 (deliveries can be taken) and names every missing variable, and a
  delivery for the forge without a secret is still refused (fail closed). No traceback in the log;
  a misspelt variable is named once, not once by serve and again by its worker child.
* With the forge down while serve starts (its `/user` answers 503), serve comes up anyway (on main:
  exit 2, a crash loop under a supervisor); deliveries are accepted; the task waits in the queue,
  neither failed nor run, and `/readyz` says the forge has not said who the bot is. Once the forge
  answers, the task runs, and a `/analyze` comment the bot itself wrote during the outage (accepted:
  nobody knew the bot's id yet) is refused as the bot's own. The console's health page says the worker
  waits for the forge.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.fakes.forge_http import FakeForgeState, Fault
from tests.fakes.model_server import ModelServer, structured
from tests.fakes.server import free_port
from tests.firstday.cli import FORGEBOT
from tests.firstday.conftest import ISSUE, Launch, model_env
from tests.firstday.service import environment, wait_until
from tests.intake import deliveries
from tests.intake.payloads import gitlab_note

BLOCKED = {"criteria": [], "assumptions": [], "questions": ["Which calculator?"]}


def test_serve_with_nothing_configured_starts_and_readyz_names_what_is_missing(launch: Launch) -> None:
    service = launch("serve", FORGEBOT_GITLAB__TOKN="x").wait_healthy()  # and a misspelt variable
    status, ready = service.get_json("/readyz")
    assert status == 200 and ready["redis"] is True and ready["store"] is True, ready
    missing = "\n".join(ready["missing"])
    assert "no forge is configured: set FORGEBOT_GITLAB__TOKEN" in missing, missing
    assert "FORGEBOT_LLM__API_KEY is not set" in missing, missing
    assert service.label() == 401  # no GitLab secret: refused, as before
    assert service.stop() == 0, service.logs()
    assert "Traceback" not in service.logs(), service.logs()
    assert len(service.log_lines("not configured: ")) == len(ready["missing"])  # each gap once, at start
    # named once (by serve; on main its worker child said it again), with the likely spelling
    assert service.log_lines("FORGEBOT_GITLAB__TOKN") == [
        "forgebot: FORGEBOT_GITLAB__TOKN is not a forgebot setting and is ignored (did you mean "
        "FORGEBOT_GITLAB__TOKEN?)"]


def _bot_note(fake_forge: FakeForgeState) -> tuple[bytes, dict[str, str]]:
    """`/analyze` commented by the bot's own account (as the forge's `/user` will name it)."""
    payload = gitlab_note("/analyze")
    payload["user"].update(id=fake_forge.bot_user_id, username=fake_forge.bot_user)
    payload["object_attributes"]["author_id"] = fake_forge.bot_user_id
    return deliveries.gitlab(payload, "Note Hook")


def test_a_forge_down_at_start_delays_tasks_without_failing_them(
    launch: Launch, forge_env: dict[str, str], model: ModelServer, fake_forge: FakeForgeState, origin_url: str
) -> None:
    model.responder = lambda request: structured("Decomposition", BLOCKED)
    fake_forge.faults.append(Fault("GET", "/gitlab/api/v4/user", 503, count=10_000))
    env = {**forge_env, **model_env(model), "FORGEBOT_GITLAB__MAX_RETRIES": "0", "FORGEBOT_QUESTIONS__MAX_ROUNDS": "0"}
    service = launch("serve", **env).wait_healthy()
    assert service.label(origin_url) == 202
    body, headers = _bot_note(fake_forge)
    response = service.http.post(service.url + deliveries.path("gitlab", body), content=body, headers=headers)
    assert response.status_code == 202  # the receiver cannot tell the bot yet: the worker will
    wait_until(lambda: len(service.log_lines("cannot ask gitlab who the bot is")) >= 2, 60, "a retried question")
    status, ready = service.get_json("/readyz")
    assert status == 200 and ready["bot"] == {"gitlab": None}, ready
    assert any("gitlab: the forge has not said who the bot is" in m and "503" in m for m in ready["missing"]), ready
    assert [state for state, _ in service.task_states()] == ["queued", "queued"]  # waiting: not run, not failed
    # the operator sees why nothing runs: the worker is up, waiting for the forge
    wait_until(lambda: "waiting for gitlab to say who the bot is" in service.console("/console/health"), 60,
               "the worker to say what it waits for")
    assert not model.requests

    fake_forge.faults.clear()  # the forge is back
    service.wait_states(lambda states: sorted(states) == ["cancelled", "done"], "both deliveries to be handled")
    assert sorted(service.task_states()) == [("cancelled", "refused: the bot's own event"), ("done", "blocked")]
    # the receiver asks on its own schedule (pauses doubling up to a minute): its answer follows
    ready = wait_until(lambda: (body := service.get_json("/readyz")[1])["bot"]["gitlab"] and body, 90,
                       "the receiver to learn the bot")
    assert ready["bot"] == {"gitlab": f"id {fake_forge.bot_user_id}"} and not ready["missing"], ready
    report = [c.body for c in fake_forge.comments_on("gitlab", "1", ISSUE) if "Analysis blocked" in c.body]
    assert len(report) == 1
    assert service.stop() == 0
    assert "Traceback" not in service.logs()


def test_a_second_serve_leaves_the_running_one_alone(launch: Launch, tmp_path: Path) -> None:
    """`forgebot serve` started again while one runs (left in another terminal): the second one started its
    own private Redis on the same socket and append-only file, unlinked the first one's socket when it
    exited on the taken port, and the running service could no longer reach its queue. Now: on the same
    port it stops before starting anything; on another port with the same data directory it stops at the
    Redis; either way in one line, exit 2, and the first one goes on."""
    first = launch("serve").wait_healthy()
    socket = first.data_dir / "redis" / "redis.sock"
    assert socket.exists()
    env = environment(first.data_dir, int(first.url.rsplit(":", 1)[1]))
    same_port = subprocess.run([str(FORGEBOT), "serve"], env=env, capture_output=True, text=True, timeout=60)
    assert same_port.returncode == 2, same_port.stderr
    assert same_port.stderr.splitlines() == [
        f"forgebot serve: cannot listen on 127.0.0.1:{env['FORGEBOT_PORT']} (Address already in use): stop what "
        "listens there (another forgebot serve?), or set FORGEBOT_HOST and FORGEBOT_PORT, or --host and --port"]
    other = subprocess.run([str(FORGEBOT), "serve"], env={**env, "FORGEBOT_PORT": str(free_port())},
                           capture_output=True, text=True, timeout=60)
    assert other.returncode == 2, other.stderr
    assert other.stderr.splitlines()[-1] == (
        f"forgebot serve: another forgebot serve (process {first.proc.pid}) runs on {first.data_dir}: stop it "  # type: ignore[union-attr]
        "first, or give this one its own FORGEBOT_DATA_DIR")
    assert socket.exists() and first.get_json("/readyz")[1]["redis"] is True
    assert first.label() == 401  # still taking (and judging) deliveries
    assert first.stop() == 0 and "Traceback" not in first.logs()


def test_an_address_this_machine_does_not_have_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    """FORGEBOT_HOST set to another machine's address (copied from a deployment): uvicorn said so only
    after the private Redis and the worker had started, in its own log line among theirs."""
    env = environment(tmp_path / "data", free_port(), FORGEBOT_HOST="192.0.2.1")  # TEST-NET-1: nobody's
    done = subprocess.run([str(FORGEBOT), "serve"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"forgebot serve: cannot listen on 192.0.2.1:{env['FORGEBOT_PORT']} (Cannot assign requested address): "
        "choose another port or address: set FORGEBOT_HOST and FORGEBOT_PORT, or --host and --port"]
    assert not (tmp_path / "data" / "redis").exists()  # nothing was started


@pytest.mark.parametrize("command", ["web", "worker"])
def test_a_redis_that_does_not_answer_is_one_line(tmp_path: Path, command: str) -> None:
    """`web` and `worker` on a Redis that is down: the worker logged arq's five retries and a traceback,
    the web process uvicorn's "Application startup failed" after one. Now: one line that names the
    address (never its password) and the setting, exit 1, after the same five seconds of trying."""
    closed = free_port()
    env = environment(tmp_path / "data", free_port(), FORGEBOT_REDIS_URL=f"redis://:hunter2pw@127.0.0.1:{closed}/0")
    done = subprocess.run([str(FORGEBOT), command], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines() == [
        f"forgebot {command}: Redis at redis://127.0.0.1:{closed}/0 does not answer (Error 111 connecting to "
        f"127.0.0.1:{closed}. Connection refused.): check FORGEBOT_REDIS_URL and that Redis runs"]


@pytest.mark.parametrize("command", ["serve", "web", "worker"])
def test_a_postgres_that_does_not_answer_is_one_line(tmp_path: Path, redis_url: str, command: str) -> None:
    """FORGEBOT_DATABASE_URL on a PostgreSQL that is down: each command ended in uvicorn's "Application
    startup failed" after psycopg's traceback. Now: one line naming the address (never its password) and
    the setting, exit 1, before anything starts."""
    closed = free_port()
    env = environment(tmp_path / "data", free_port(), FORGEBOT_REDIS_URL=redis_url,
                      FORGEBOT_DATABASE_URL=f"postgresql://forgebot:hunter2pw@127.0.0.1:{closed}/forgebot")
    done = subprocess.run([str(FORGEBOT), command], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr and "hunter2pw" not in done.stderr, done.stderr
    assert done.stderr.splitlines() == [
        f"forgebot {command}: the store at postgresql://127.0.0.1:{closed}/forgebot does not answer (connection "
        f'failed: connection to server at "127.0.0.1", port {closed} failed: Connection refused Is the server '
        "running on that host and accepting TCP/IP connections?): check FORGEBOT_DATABASE_URL and that PostgreSQL "
        "runs"]
    assert not (tmp_path / "data" / "redis").exists()  # nothing was started


@pytest.mark.parametrize(("url", "said"), [
    ("mysql://forgebot:hunter2pw@127.0.0.1/forgebot", "must be a postgresql:// URL"),
    ("postgresql://forgebot:hunter2@pw@127.0.0.1/forgebot", "the password holds `@`, `/` or `#` as they are"),
])
def test_a_database_url_that_cannot_be_postgres_is_refused_without_showing_it(tmp_path: Path, url: str,
                                                                             said: str) -> None:
    """psycopg quoted such a URL whole, password included, in the traceback that ended the start."""
    env = environment(tmp_path / "data", free_port(), FORGEBOT_DATABASE_URL=url)
    done = subprocess.run([str(FORGEBOT), "serve"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "hunter2" not in done.stderr + done.stdout, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"forgebot: FORGEBOT_DATABASE_URL: {said}"), line


def test_a_token_that_cannot_write_is_named_by_readyz(
    launch: Launch, forge_env: dict[str, str], model: ModelServer, fake_forge: FakeForgeState
) -> None:
    """A GitLab token made with `read_api`: serve came up ready and every task failed at its first comment,
    which it could not post; nothing on the issue and nothing in `/readyz` said why."""
    fake_forge.token_scopes = {"gitlab": ["read_api"], "github": None}
    service = launch("serve", **forge_env, **model_env(model)).wait_healthy()
    ready = wait_until(lambda: (body := service.get_json("/readyz")[1])["bot"].get("gitlab") and body, 60,
                       "the receiver to learn the bot")
    assert ("gitlab: the token's scopes are `read_api`: forgebot comments, pushes branches and opens changes, "
            "which needs `api` (FORGEBOT_GITLAB__TOKEN): tasks fail at their first comment") in ready["missing"], ready
    assert service.log_lines("the gitlab token cannot write")
