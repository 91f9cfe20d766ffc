"""What the operator of a running installation looks at: the health page, `/metrics`, the processes.

* `forgebot web` + `forgebot worker` on one Redis: the health page lists the live worker as idle;
  after the worker is killed it says no worker has reported (on main both looked the same: "No job
  is running").
* `forgebot serve` runs an analyze task: serve's own `/metrics` has the worker's task and token
  series (on main they were counted in the worker child and never shown; docs/alerts.md said they
  were), and every series docs/alerts.md's rules read. Its model has no price: the console and
  `forgebot tasks` say "no price", not `$0.0000`; the console's list filters by the path people
  type; and `forgebot tasks`, run from a shell that has only the data directory set, links the
  issue where the forge said it is (on main: built from that shell's variables, https://gitlab.com/...).
* `forgebot serve` started from a directory holding a `bot/` package of its own: its worker child
  runs the installed forgebot, not that directory (on main `python -m bot worker` ran the decoy,
  which exited, and serve stopped with exit 1).
"""

from __future__ import annotations

import os
import re
import signal
import textwrap
import time
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.test_serve_process import children_of
from tests.fakes.forge_http import FakeForgeState
from tests.fakes.model_server import ModelServer, structured
from tests.firstday.cli import forgebot
from tests.firstday.conftest import ISSUE, Launch, model_env
from tests.firstday.service import FORGEBOT, Service, wait_until

BLOCKED = {"criteria": [], "assumptions": [], "questions": ["Which calculator?"]}
WEB = "https://gitlab.example.test/gitlabhq/gitlab-test"
ROOT = Path(__file__).resolve().parents[2]


def _worker_pid(parent: int) -> int | None:
    return next((pid for pid, cmd in children_of(parent).items() if b"worker" in cmd), None)


def test_the_health_page_tells_a_live_idle_worker_from_a_dead_one(launch: Launch, redis_url: str) -> None:
    env = {"FORGEBOT_REDIS_URL": redis_url, "FORGEBOT_DURABILITY__REAP_INTERVAL": "1"}
    web = launch("web", **env).wait_healthy()
    worker = launch("worker", **env)
    page = wait_until(lambda: "idle" in (text := web.console("/console/health")) and text, 120, "the worker to report")
    rows = page.split('id="workers"', 1)[1].split("</table>", 1)[0]
    assert f":{worker.proc.pid}</td><td>idle</td>" in rows, rows  # type: ignore[union-attr]
    assert 'id="no-worker"' not in page

    os.kill(worker.proc.pid, signal.SIGKILL)  # type: ignore[union-attr]
    worker.proc.wait()  # type: ignore[union-attr]
    page = wait_until(lambda: 'id="no-worker"' in (text := web.console("/console/health")) and text, 30,
                      "the dead worker to be gone from the page")
    assert "No worker has reported in the last 3 s: queued tasks will not run until one starts." in page
    web.stop()  # uvicorn re-raises the SIGTERM it handled: -15, as before


def _samples(text: str, name: str) -> dict[frozenset[tuple[str, str]], float]:
    return {frozenset(s.labels.items()): s.value for family in text_string_to_metric_families(text)
            for s in family.samples if s.name == name}


def test_serve_metrics_include_the_worker_childs_task_series(
    launch: Launch, forge_env: dict[str, str], model: ModelServer, fake_forge: FakeForgeState, origin_url: str
) -> None:
    model.responder = lambda request: structured("Decomposition", BLOCKED)
    fake_forge.projects[("gitlab", "1")].web_url = WEB  # where the forge says the project lives
    service = launch("serve", **forge_env, **model_env(model), FORGEBOT_QUESTIONS__MAX_ROUNDS="0").wait_healthy()
    assert service.label(origin_url) == 202
    service.wait_states(lambda states: states == ["done"], "the task to finish")
    text = service.http.get(service.url + "/metrics", timeout=10).text
    assert _samples(text, "forgebot_worker_metrics_up") == {frozenset(): 1.0}
    assert _samples(text, "forgebot_tasks_total") == {frozenset({("mode", "analyze"), ("outcome", "blocked")}): 1.0}
    tokens = _samples(text, "forgebot_llm_tokens_total")
    assert sum(tokens.values()) > 0 and all(dict(labels)["role"] == "decomposer" for labels in tokens), tokens
    assert _samples(text, "forgebot_webhook_deliveries_total")  # the receiver's own series stay
    assert len(_samples(text, "forgebot_queue_up")) == 1  # the queue once, from the receiver
    # every series docs/alerts.md's rules read is in this one scrape (it says one scrape of serve has them)
    (rules,) = re.findall(r"```yaml\n(.*?)```", (ROOT / "docs" / "alerts.md").read_text(), re.S)
    used = set(re.findall(r"\bforgebot_[a-z_]+", rules))
    declared = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
    assert len(used) >= 5 and {m for m in used if re.sub(r"_(bucket|sum|count)$", "", m) not in declared} == set()

    (task,) = service.tasks()
    assert 'id="cost">no price</dd>' in service.console(f"/console/tasks/{task.task_id}")
    # the console's repository filter by the path people type (on main a path was ignored: all were listed)
    for name in ("gitlabhq/gitlab-test", "GitLabHQ/GitLab-Test", "gitlab:gitlabhq/gitlab-test"):
        assert f"/console/tasks/{task.task_id}" in service.console(f"/console/tasks?repo={name}"), name
    other = service.console("/console/tasks?repo=nobody/here")
    assert "No repository named nobody/here has tasks." in other and task.task_id not in other
    listed = forgebot("tasks", cwd=service.cwd, FORGEBOT_DATA_DIR=str(service.data_dir))  # another shell
    (line,) = [row for row in listed.out if row.startswith(task.task_id)]
    assert f"{WEB}/-/issues/{ISSUE}" in line and "no price" in line and "gitlab.com" not in line, listed.text
    assert service.stop() == 0


def test_serve_started_beside_a_bot_package_runs_the_installed_worker(launch: Launch, tmp_path: Path) -> None:
    decoy = tmp_path / "bot"  # the harness starts every service from tmp_path
    decoy.mkdir()
    (decoy / "__init__.py").write_text("")
    (decoy / "__main__.py").write_text(textwrap.dedent(f"""
        import pathlib, sys
        pathlib.Path({str(tmp_path / 'decoy-ran')!r}).write_text(" ".join(sys.argv))
        sys.exit(3)
    """))
    service: Service = launch("serve").wait_healthy()
    assert service.cwd == tmp_path and FORGEBOT.exists()
    pid = wait_until(lambda: _worker_pid(service.proc.pid), 60, "serve's worker child")  # type: ignore[union-attr]
    time.sleep(3)  # the decoy exits at once; the installed worker keeps running
    assert not (tmp_path / "decoy-ran").exists()
    assert service.proc.poll() is None and _worker_pid(service.proc.pid) == pid  # type: ignore[union-attr]
    assert service.stop() == 0
