"""What an operator sees of an implement run, from outside the service.

A label webhook goes over HTTP to the real receiver, a burst arq worker on the real Redis runs the
task through every role (scripted models), real PHPUnit gates, delivery to the fake GitLab. Then:

* the receiver's `/metrics` (and a worker's own metrics server) count the task, every role's
  tokens and cost, the gates, the forge errors and the rate-limit wait the fake forge injected;
* the footer's tokens and cost equal the per-role sum of what the scripted models reported, priced;
* `forgebot trace TASK`, run as the command a user types, tells every node transition with its
  reason and every role's model calls.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from prometheus_client.parser import text_string_to_metric_families

from bot.tasks.inbox import Inbox
from bot.web.app import create_app
from foundation.metrics import start_metrics_server
from foundation.settings import Settings
from tests.conftest import GITLAB_TOKEN
from tests.e2e import implement_harness as h
from tests.fakes.forge_http import FakeForgeState, Fault
from tests.fakes.model_server import as_reply, scripted
from tests.fakes.samples import sample
from tests.fakes.server import serving
from tests.graph.implement import route
from tests.intake import deliveries

pytestmark = pytest.mark.php

SAMPLE = sample("gitlab/issue.labels-changed.json")
PRICE = (300.0, 1500.0)  # USD per million input, output tokens: large, so the footer's 4 decimals are exact enough
ROLES = ("decomposer", "analyzer", "planner", "architect", "coder", "reviewer")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def served(tmp_path: Path, settings: Settings, fake_forge: FakeForgeState) -> Iterator[h.Served]:
    yield from h.served_sample(tmp_path / "forge", settings, fake_forge, "oauth2", GITLAB_TOKEN)


def _scripts() -> dict[str, list[AIMessage]]:
    """The happy implement run's scripts, kept so the test can add up what each call reported."""
    return {
        "decomposer": [route.decomposition()],
        "analyzer": [route.call("finish_exploration", files=[route.CALC], context_only=[route.TEST], reason="seen"),
                     route.analysis()],
        "planner": [route.plan(route.ONE_ITEM)],
        "architect": route.approve_plan(),
        "coder": route.coder_happy(),
        "reviewer": route.review(),
    }


def _scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels` (0 when none)."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


def _delta(before: Any, after: Any, name: str, **labels: str) -> float:
    return _value(after, name, **labels) - _value(before, name, **labels)


async def _task_id(settings: Settings) -> str:
    inbox = await Inbox.open(sqlite_path=settings.inbox_path)
    try:
        (task,) = await inbox.tasks()
        return task.task_id
    finally:
        await inbox.close()


def _trace_cli(settings: Settings, task_id: str) -> str:
    """`forgebot trace TASK` as a user runs it, in its own process."""
    env = {"PATH": os.environ.get("PATH", ""), "FORGEBOT_DATA_DIR": str(settings.data_dir),
           "HOME": str(settings.data_dir)}
    done = subprocess.run([sys.executable, "-m", "bot", "trace", task_id], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_an_implement_run_is_metered_priced_and_traced(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served
) -> None:
    h.setup(settings, redis_url, "Platform")
    fake_forge.grant("gitlab", "1", "1", 30)
    fake_forge.grant("gitlab", "1", "7", 30)
    h.issue(fake_forge, "gitlab", "1", 23)
    # the first read of the issue's discussion is rate limited for a second, the next one fails with a 503
    fake_forge.faults += [Fault("GET", "/issues/23/discussions", 429, headers={"Retry-After": "1"}),
                          Fault("GET", "/issues/23/discussions", 503)]
    scripts = _scripts()
    roles = {role: scripted(messages) for role, messages in scripts.items()}
    settings.llm.prices = {model.model_name: PRICE for model in roles.values()}  # each role's model by its name
    with serving(create_app(settings)) as receiver:
        before = _scrape(f"{receiver.url}/metrics")
        delivery = deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook")
        assert await h.post(settings, "gitlab", *delivery) == 202
        assert (await h.work(settings, roles.__getitem__)).jobs_failed == 0
        after = _scrape(f"{receiver.url}/metrics")
    assert await h.task_states(settings) == [("done", "delivered")]

    # what each role's model reported, call by call, priced: the footer must be exactly this sum
    used = {role: scripts[role][: len(roles[role].received)] for role in ROLES}
    tokens = {role: [as_reply(m).usage[0] for m in msgs] for role, msgs in used.items()}
    outputs = {role: [as_reply(m).usage[1] for m in msgs] for role, msgs in used.items()}
    total = sum(sum(tokens[r]) + sum(outputs[r]) for r in ROLES)
    cost = {r: (sum(tokens[r]) * PRICE[0] + sum(outputs[r]) * PRICE[1]) / 1e6 for r in ROLES}
    assert all(len(roles[r].received) == len(scripts[r]) for r in ROLES)  # every scripted call was made
    change = h.the_change(fake_forge, "gitlab", "1")
    footer = re.search(r"(\d+) tokens · \$([\d.]+)", change.body)
    assert footer is not None, change.body
    assert int(footer.group(1)) == total
    assert footer.group(2) == f"{sum(cost.values()):.4f}"

    # /metrics: the task, every role's tokens and cost, the gates, the forge's errors and waits
    assert _delta(before, after, "forgebot_tasks_total", mode="implement", outcome="delivered") == 1
    assert _delta(before, after, "forgebot_task_duration_seconds_count", mode="implement") == 1
    for role in ROLES:
        assert _delta(before, after, "forgebot_llm_tokens_total", role=role, direction="input") == sum(tokens[role])
        assert _delta(before, after, "forgebot_llm_tokens_total", role=role, direction="output") == sum(outputs[role])
        assert _delta(before, after, "forgebot_llm_cost_usd_total", role=role) == pytest.approx(cost[role])
    assert _delta(before, after, "forgebot_gate_results_total", gate="test_runner", status="passed") == 1
    assert _delta(before, after, "forgebot_forge_api_errors_total", forge="gitlab", kind="rate_limited") == 1
    assert _delta(before, after, "forgebot_forge_api_errors_total", forge="gitlab", kind="unavailable") == 1
    assert _delta(before, after, "forgebot_forge_rate_limit_waits_total", forge="gitlab") == 1
    assert _delta(before, after, "forgebot_forge_rate_limit_wait_seconds_total", forge="gitlab") == 1.0

    # a `forgebot worker` process serves the same task families on its own port (FORGEBOT_WORKER_METRICS_PORT)
    server = start_metrics_server(0, "127.0.0.1", redis_url=redis_url)
    try:
        worker_side = _scrape(f"http://127.0.0.1:{server.server_port}/metrics")
    finally:
        server.shutdown()
        server.server_close()
    assert _value(worker_side, "forgebot_tasks_total", mode="implement", outcome="delivered") >= 1
    assert _value(worker_side, "forgebot_queue_up") == 1

    # the trace tells the whole run: every transition with its reason, every role's calls
    story = _trace_cli(settings, await _task_id(settings))
    transitions = ["START → decomposer: mode implement", "decomposer → analyzer: 1 acceptance criteria",
                   "analyzer → planner: implement mode", "planner → architect: the plan passed code's checks",
                   "architect → coder: the architect approved the plan", "coder → semantic_sync",
                   "semantic_sync → gates: the coder finished its checklist", "gates → implement_reviewer",
                   "implement_reviewer → decide", "decide → delivery: approved", "delivery → __end__"]
    for transition in transitions:
        assert transition in story, transition
    assert story.index(transitions[0]) < story.index(transitions[5]) < story.index(transitions[-1])
    for role in ROLES:
        assert f"[{role}]" in story, role
    assert "[coder] apply_patch(" in story and "[analyzer] session ended: finished" in story
    assert "[decomposer] answer Decomposition" in story and "[reviewer] synthesis Review" in story
    assert "state after delivery:" in story and "gates: " in story and "test_runner passed" in story
