"""The live lane: every mode of `forgebot run`, and a need_info round-trip through the receiver and
worker, against SmolLM2-135M behind llama.cpp's server. A model this small solves nothing; these
tests prove the product survives real output: an honest terminal state, a footer, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from foundation.settings import Settings
from graph.llm import chat_model
from tests.e2e.conftest import allow_http_git, post, task_states, work
from tests.fakes.forge_http import FakeForgeState, FakeIssue
from tests.live.conftest import live_llm, php_checkout
from tests.live.llama import LlamaServer

pytestmark = [pytest.mark.live, pytest.mark.timeout(1800)]
TASK = "Add subtraction\nThe calculator needs a subtract(a, b) method returning a - b."


@pytest.mark.parametrize("mode", ["analyze", "implement", "review"])
def test_forgebot_run_ends_honestly_in_every_mode(llama: LlamaServer, tmp_path: Path, mode: str) -> None:
    repo = php_checkout(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORGEBOT_")}
    llm = live_llm(llama)
    env.update({"FORGEBOT_DATA_DIR": str(tmp_path / "data"), "FORGEBOT_LLM__BASE_URL": llm.base_url or "",
                "FORGEBOT_LLM__MODEL": llm.model, "FORGEBOT_LLM__TIMEOUT": str(llm.timeout),
                "FORGEBOT_LLM__RESEARCH_MAX_CALLS": "6", "FORGEBOT_LLM__CODER_MAX_CALLS": "8"})
    done = subprocess.run([sys.executable, "-m", "bot", "run", "--repo", str(repo), "--mode", mode, "--task", TASK,
                           "--base", "main"], env=env, capture_output=True, text=True, timeout=1700)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    if done.returncode == 2:  # a model problem: one line saying what and which setting
        (line,) = [s for s in done.stderr.splitlines() if s.startswith("forgebot run:")]
        assert "check FORGEBOT_LLM__" in line
    else:  # it reached its goal (0), or ended saying why not (1) or what it asks (3)
        assert done.returncode in (0, 1, 3), done.stderr[-3000:]
        assert "forgebot · task" in done.stdout and f"mode {mode}" in done.stdout
        assert "forgebot trace " in done.stderr.splitlines()[-1]


async def test_need_info_round_trip_through_the_service(
    llama: LlamaServer, settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin_url: str
) -> None:
    import json

    from tests.e2e.test_need_info_gitlab import _label, _reply
    from tests.fakes.samples import sample

    settings.redis_url = redis_url
    settings.llm = live_llm(llama)
    settings.triggers.analyze_label = "Platform"
    allow_http_git(settings)
    fake_forge.grant("gitlab", "1", "1", 30)
    fake_forge.grant("gitlab", "1", "7", 30)
    fake_forge.add_issue("gitlab", "1", 23, FakeIssue(title="Subtraction", body="The calculator cannot subtract."))

    def models(role: str) -> object:
        return chat_model(settings.llm, role)

    assert await post(settings, "gitlab", *_label(origin_url)) == 202
    first = await work(settings, models)
    states = await task_states(settings)
    comments = [c.body for c in fake_forge.comments_on("gitlab", "1", 23)]
    assert all("forgebot" in c for c in comments) and comments
    if states == [("waiting", "need_info")]:  # it asked: answer, and the task resumes to an end
        root = sample("gitlab/note.issue.json")["user"]
        reply = "It should subtract integers, in App\\Calculator::subtract(a, b)."
        assert await post(settings, "gitlab", *_reply(reply, root, 9001)) == 202
        second = await work(settings, models)
        states = await task_states(settings)
        assert first.jobs_failed == 0
        first = second
        comments = [c.body for c in fake_forge.comments_on("gitlab", "1", 23)]
    (state,) = states
    assert state[0] in ("done", "failed", "waiting"), json.dumps(states)
    if state[0] == "failed":  # said why: the role, the provider's reason and the setting
        assert any("could not finish this task" in c and "check FORGEBOT_LLM__" in c for c in comments), comments
    else:
        assert first.jobs_failed == 0
