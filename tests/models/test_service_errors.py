"""The service side of model problems: a task that fails on the model tells the issue's author what
happened in plain words, and the operator (the task's failure record) which role, the provider's
reason (redacted) and the setting to check. (Starting without a usable model: tests/firstday.)"""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from foundation.llm import chat_model
from foundation.settings import Settings
from tests.e2e.conftest import (  # noqa: F401 - fixture
    allow_http_git,
    failure_of_task,
    origin_url,
    post,
    task_states,
    work,
)
from tests.e2e.test_need_info_gitlab import _label
from tests.fakes import model_server as wire
from tests.fakes.forge_http import FakeForgeState, FakeIssue
from tests.fakes.model_server import ModelServer
from tests.models.conftest import llm_settings


@pytest.mark.timeout(180)
async def test_a_task_failing_on_the_model_says_role_reason_and_setting(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin_url: str, server: ModelServer  # noqa: F811
) -> None:
    key = "sk-proj-echoed-secret-0123456789abcdef"
    server.script(wire.error(401, f"Incorrect API key provided: {key}.", error_type="invalid_request_error"))
    settings.llm = llm_settings(server, api_key=SecretStr(key))
    note = await _failed_analysis(settings, redis_url, fake_forge, origin_url, "model credentials")
    assert "the AI model service refused forgebot's credentials" in note
    assert "FORGEBOT_" not in note and "Error" not in note and key not in note  # for the author: no settings
    record = await failure_of_task(settings)
    assert (record.role, record.phase) == ("decomposer", "decomposer")
    assert "check FORGEBOT_LLM__API_KEY or FORGEBOT_LLM__ROLES__DECOMPOSER__API_KEY" in record.operator_action
    assert "HTTP 401" in record.detail and key not in record.detail and "[REDACTED]" in record.detail


async def _failed_analysis(settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin: str,
                           kind: str) -> str:
    """Label an issue for analysis and run the worker on `settings.llm`: the task fails as `kind`; its comment."""
    settings.redis_url = redis_url
    settings.triggers.analyze_label = "Platform"
    allow_http_git(settings)
    fake_forge.grant("gitlab", "1", "1", 30)
    fake_forge.grant("gitlab", "1", "7", 30)  # the issue's author: its text reaches the decomposer
    fake_forge.add_issue("gitlab", "1", 23, FakeIssue(title="Subtraction", body="The calculator cannot subtract."))
    assert await post(settings, "gitlab", *_label(origin)) == 202
    await work(settings, lambda role: chat_model(settings.llm, role))
    assert await task_states(settings) == [("failed", kind)]
    (note,) = [c.body for c in fake_forge.comments_on("gitlab", "1", 23) if "could not finish" in c.body]
    return str(note)


@pytest.mark.timeout(180)
async def test_an_ollama_window_smaller_than_forgebots_fails_the_task_instead_of_reading_cut_prompts(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin_url: str, server: ModelServer  # noqa: F811
) -> None:
    """Through Ollama's OpenAI-compatible API a prompt longer than the server's window (4096 tokens by default)
    was cut from its start without an error, and the task went on with answers about what was left. The
    first answer of such an endpoint now fails the task as a setting to fix, naming the provider setting."""
    server.ollama = True
    server.script(wire.structured("Decomposition", {"criteria": [{"id": 1, "text": "subtract(5, 3) is 2"}]}))
    settings.llm = llm_settings(server)
    note = await _failed_analysis(settings, redis_url, fake_forge, origin_url, "model window")
    assert "the AI model service reads less text at once than the decomposer step sends it" in note
    assert "FORGEBOT_" not in note
    record = await failure_of_task(settings)
    assert "check FORGEBOT_LLM__PROVIDER" in record.operator_action
    assert "runs scripted-model with a 4096-token window" in record.detail
    assert record.detail.endswith("or FORGEBOT_LLM__CONTEXT_WINDOW_TOKENS=4096")  # whole: every way out
    assert len(server.requests) == 1  # not asked again: a setting, not an outage


@pytest.mark.timeout(180)
async def test_an_account_without_quota_fails_the_task_at_once_instead_of_waiting_as_for_an_outage(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin_url: str, server: ModelServer  # noqa: F811
) -> None:
    """A new API key whose account has no credit: OpenAI answers 429, the status of a rate limit, so every call
    was tried again and the task deferred try after try, to end as "model unavailable ... check that it is
    up". No wait refills an account: the task fails at its first call, naming the plan and billing."""
    said = ("You exceeded your current quota, please check your plan and billing details. For more information on "
            "this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.")
    server.script(wire.error(429, said, error_type="insufficient_quota", code="insufficient_quota"))
    settings.llm = llm_settings(server, api_key=SecretStr("sk-proj-no-credit-0123456789abcdef"))
    note = await _failed_analysis(settings, redis_url, fake_forge, origin_url, "model quota")
    assert "the AI model service's account has no credit or quota left" in note
    record = await failure_of_task(settings)
    assert "has used its quota or credit: check its plan and billing" in record.operator_action
    assert len(server.requests) == 1  # neither retried nor deferred
