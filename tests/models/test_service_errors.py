"""The service side of model problems: serve/worker refuse to start on a model configuration that
cannot work, and a task that fails on the model says which role, why (redacted) and what to check."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from bot.cli import main
from foundation.settings import Settings
from graph.llm import chat_model
from tests.e2e.conftest import allow_http_git, origin_url, post, task_states, work  # noqa: F401 - fixture
from tests.e2e.test_need_info_gitlab import _label
from tests.fakes import model_server as wire
from tests.fakes.forge_http import FakeForgeState, FakeIssue
from tests.fakes.model_server import ModelServer
from tests.models.conftest import llm_settings


@pytest.mark.parametrize("command", [["worker"], ["serve", "--port", "0"]])
def test_serve_and_worker_check_the_model_at_start_up(
    command: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FORGEBOT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("FORGEBOT_REDIS_URL", "redis://127.0.0.1:1/0")  # never reached: the check comes first
    with pytest.raises(SystemExit) as exited:
        main(command)
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "FORGEBOT_LLM__API_KEY" in err and "Traceback" not in err


@pytest.mark.timeout(180)
async def test_a_task_failing_on_the_model_says_role_reason_and_setting(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin_url: str, server: ModelServer  # noqa: F811
) -> None:
    key = "sk-proj-echoed-secret-0123456789abcdef"
    server.script(wire.error(401, f"Incorrect API key provided: {key}.", error_type="invalid_request_error"))
    settings.redis_url = redis_url
    settings.llm = llm_settings(server, api_key=SecretStr(key))
    settings.triggers.analyze_label = "Platform"
    allow_http_git(settings)
    fake_forge.grant("gitlab", "1", "1", 30)
    fake_forge.grant("gitlab", "1", "7", 30)  # the issue's author: its text reaches the decomposer
    fake_forge.add_issue("gitlab", "1", 23, FakeIssue(title="Subtraction", body="The calculator cannot subtract."))
    assert await post(settings, "gitlab", *_label(origin_url)) == 202
    await work(settings, lambda role: chat_model(settings.llm, role))
    assert await task_states(settings) == [("failed", "ModelCallError")]
    (note,) = [c.body for c in fake_forge.comments_on("gitlab", "1", 23) if "could not finish" in c.body]
    assert "the decomposer model call failed: HTTP 401" in note
    assert "check FORGEBOT_LLM__API_KEY or FORGEBOT_LLM__ROLES__DECOMPOSER__API_KEY" in note
    assert key not in note and "[REDACTED]" in note
