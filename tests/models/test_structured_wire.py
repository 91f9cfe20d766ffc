"""Structured answers through the real LangChain clients against a wire-level server: every method,
the `auto` fallback when a server rejects or ignores a method, the repair turn, honest failures."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from foundation.llm import ModelCallError, chat_model
from graph.structured import LEARNED, StructuredOutputError, ask_structured
from tests.fakes import model_server as wire
from tests.fakes.model_server import ModelServer
from tests.models.conftest import llm_settings


class Answer(BaseModel):
    name: str
    count: int


GOOD = {"name": "ok", "count": 3}
ASK = [HumanMessage("Answer please.")]


def _kind(request: wire.Request) -> str:
    """Which structured-output method a recorded OpenAI/Ollama request used."""
    body = request.body
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema" or isinstance(body.get("format"), dict):
        return "json_schema"
    if fmt.get("type") == "json_object" or body.get("format") == "json":
        return "json_mode"
    return "function_calling" if body.get("tools") else "plain"


async def test_auto_falls_back_when_the_server_rejects_json_schema_and_remembers(server: ModelServer) -> None:
    server.script(wire.unsupported_json_schema(), wire.structured("Answer", GOOD), wire.structured("Answer", GOOD))
    model = chat_model(llm_settings(server), "decomposer")
    answer, usage = await ask_structured(model, Answer, ASK)
    assert answer == Answer(**GOOD) and usage["tokens"] == 30
    assert [_kind(r) for r in server.requests] == ["json_schema", "function_calling"]
    # the endpoint is remembered: the next call (another role, same endpoint) goes straight to the method
    await ask_structured(chat_model(llm_settings(server), "reviewer"), Answer, ASK)
    assert _kind(server.requests[-1]) == "function_calling"
    assert server.requests[1].body["tool_choice"]["function"]["name"] == "Answer"


async def test_auto_falls_back_on_llama_cpp_pythons_500_without_retrying(server: ModelServer) -> None:
    server.script(wire.llama_cpp_python_rejects_json_schema(), wire.structured("Answer", GOOD))
    answer, _ = await ask_structured(chat_model(llm_settings(server), "decomposer"), Answer, ASK)
    assert answer.count == 3
    assert [_kind(r) for r in server.requests] == ["json_schema", "function_calling"]


async def test_auto_falls_back_when_the_server_ignores_the_schema(server: ModelServer) -> None:
    server.script(wire.text("Sure! The name is ok and the count is 3."), wire.structured("Answer", GOOD))
    answer, _ = await ask_structured(chat_model(llm_settings(server), "architect"), Answer, ASK)
    assert answer.count == 3
    assert [_kind(r) for r in server.requests] == ["json_schema", "function_calling"]


@pytest.mark.parametrize("method", ["json_schema", "function_calling", "json_mode"])
async def test_each_configured_method_goes_over_the_wire(server: ModelServer, method: str) -> None:
    server.script(wire.structured("Answer", GOOD))
    model = chat_model(llm_settings(server, structured_output=method), "planner")
    answer, _ = await ask_structured(model, Answer, ASK)
    assert answer == Answer(**GOOD) and [_kind(r) for r in server.requests] == [method]


async def test_a_role_overrides_the_method(server: ModelServer) -> None:
    server.script(wire.structured("Answer", GOOD))
    settings = llm_settings(server, roles={"reviewer": {"structured_output": "json_mode"}})
    await ask_structured(chat_model(settings, "reviewer"), Answer, ASK)
    assert _kind(server.requests[0]) == "json_mode"


async def test_a_configured_method_the_server_rejects_fails_naming_the_setting(server: ModelServer) -> None:
    server.script(wire.unsupported_json_schema())
    model = chat_model(llm_settings(server, structured_output="json_schema"), "decomposer")
    with pytest.raises(ModelCallError) as caught:
        await ask_structured(model, Answer, ASK)
    assert caught.value.failure.kind == "format" and caught.value.role == "decomposer"
    assert "FORGEBOT_LLM__STRUCTURED_OUTPUT" in str(caught.value) and "not supported" in str(caught.value)
    assert len(server.requests) == 1


async def test_one_repair_turn_shows_the_validation_error(server: ModelServer) -> None:
    server.script(wire.off_schema(wire.structured("Answer", {"name": "ok", "count": "many"})),
                  wire.structured("Answer", GOOD))
    model = chat_model(llm_settings(server, structured_output="function_calling"), "decomposer")
    answer, usage = await ask_structured(model, Answer, ASK)
    assert answer.count == 3 and usage["tokens"] == 60
    repair = server.requests[1].messages[-1]
    assert repair["role"] == "user" and "count" in repair["content"] and "many" in repair["content"]


async def test_after_the_repair_turn_the_failure_names_role_schema_and_problem(server: ModelServer) -> None:
    bad = wire.off_schema(wire.structured("Answer", {"name": "ok"}))  # a server that does not enforce the schema
    server.script(bad, bad)
    model = chat_model(llm_settings(server, structured_output="json_schema"), "reviewer")
    with pytest.raises(StructuredOutputError) as caught:
        await ask_structured(model, Answer, ASK)
    text = str(caught.value)
    assert "reviewer" in text and "Answer" in text and "count" in text
    assert len(server.requests) == 2


async def test_auto_exhausting_every_method_is_an_honest_failure(server: ModelServer) -> None:
    server.script(wire.unsupported_json_schema(), wire.text("no"), wire.text("no"), wire.text("still no"))
    with pytest.raises(StructuredOutputError, match="decomposer"):
        await ask_structured(chat_model(llm_settings(server), "decomposer"), Answer, ASK)
    assert [_kind(r) for r in server.requests] == ["json_schema", "function_calling", "json_mode", "json_mode"]


async def test_a_refusal_is_reported_as_one(server: ModelServer) -> None:
    server.script(wire.refusal("I cannot help with that request."))
    model = chat_model(llm_settings(server, structured_output="json_schema"), "decomposer")
    with pytest.raises(ModelCallError) as caught:
        await ask_structured(model, Answer, ASK)
    assert caught.value.failure.kind == "refusal" and "cannot help" in str(caught.value)


AZURE_FILTERED = ("The response was filtered due to the prompt triggering Azure OpenAI's content management policy. "
                  "Please modify your prompt and retry. To learn more about our content filtering policies please read "
                  "our documentation: https://go.microsoft.com/fwlink/?linkid=2198766")
OPENAI_FLAGGED = ("Invalid prompt: your prompt was flagged as potentially violating our usage policy. Please try again "
                  "with a different prompt: https://platform.openai.com/docs/guides/reasoning#advice-on-prompting")


@pytest.mark.parametrize(("message", "code"), [(AZURE_FILTERED, "content_filter"), (OPENAI_FLAGGED, "invalid_prompt")],
                         ids=["azure-content-filter", "openai-usage-policy"])
async def test_a_prompt_a_content_filter_refused_is_a_refusal(server: ModelServer, message: str, code: str) -> None:
    """Repository text can trip a provider's content filter (Azure OpenAI's, OpenAI's for reasoning models):
    it was "a request the endpoint rejected, check FORGEBOT_LLM__MODEL"; it is the provider refusing, which
    the issue's author may get past by rephrasing, and it is not sent again."""
    server.script(wire.error(400, message, error_type="invalid_request_error", code=code))
    model = chat_model(llm_settings(server, structured_output="json_schema"), "decomposer")
    with pytest.raises(ModelCallError) as caught:
        await ask_structured(model, Answer, ASK)
    assert caught.value.failure.kind == "refusal" and len(server.requests) == 1


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_an_output_cap_above_the_models_names_the_cap_setting(server: ModelServer, provider: str) -> None:
    """A FORGEBOT_LLM__MAX_OUTPUT_TOKENS above what the model may write is refused by the provider in its own
    words; the failure sent the operator to FORGEBOT_LLM__MODEL, and now names the cap."""
    said = {"openai": "max_tokens is too large: 16384. This model supports at most 4096 completion tokens, whereas "
                      "you provided 16384.",
            "anthropic": "max_tokens: 16384 > 4096, which is the maximum allowed number of output tokens for "
                         "claude-3-haiku-20240307"}[provider]
    server.script(wire.error(400, said, error_type="invalid_request_error"))
    settings = llm_settings(server, provider, structured_output="function_calling", max_output_tokens=16384,
                            context_window_tokens=200_000)
    with pytest.raises(ModelCallError) as caught:
        await ask_structured(chat_model(settings, "decomposer"), Answer, ASK)
    assert caught.value.setting == "FORGEBOT_LLM__MAX_OUTPUT_TOKENS" and len(server.requests) == 1


async def test_an_azure_deployment_that_does_not_exist_names_the_model_setting(server: ModelServer) -> None:
    """Azure OpenAI's models are deployments, and its 404 for a misspelt one says "deployment", not "model": it
    was read as a base URL without a chat API ("is the base URL the API's root?"); it names the model setting."""
    server.script(wire.error(404, "The API deployment for this resource does not exist. If you created the "
                             "deployment within the last 5 minutes, please wait a moment and try again.",
                             error_type="invalid_request_error", code="DeploymentNotFound"))
    with pytest.raises(ModelCallError) as caught:
        await ask_structured(chat_model(llm_settings(server), "decomposer"), Answer, ASK)
    assert caught.value.failure.kind == "not_found" and "base URL" not in caught.value.failure.reason
    assert caught.value.setting == "FORGEBOT_LLM__MODEL or FORGEBOT_LLM__ROLES__DECOMPOSER__MODEL"


@pytest.mark.timeout(300)  # importing the anthropic SDK is slow on a loaded machine
async def test_anthropic_answers_with_a_tool_use_block(server: ModelServer) -> None:
    server.script(wire.structured("Answer", GOOD))
    answer, usage = await ask_structured(chat_model(llm_settings(server, "anthropic"), "reviewer"), Answer, ASK)
    assert answer == Answer(**GOOD) and usage["tokens"] == 30
    request = server.requests[0]
    assert request.protocol == "anthropic" and request.tool_names == ["Answer"]
    assert request.body["tool_choice"]["name"] == "Answer"
    assert "sk-ant-test-key-do-not-log" in str(request.headers), request.headers


async def test_ollama_native_uses_format_and_falls_back_to_tools(server: ModelServer) -> None:
    server.script(wire.error(400, "invalid format: json schema not supported"), wire.structured("Answer", GOOD))
    answer, _ = await ask_structured(chat_model(llm_settings(server, "ollama"), "planner"), Answer, ASK)
    assert answer == Answer(**GOOD)
    assert [r.protocol for r in server.requests] == ["ollama", "ollama"]
    assert [_kind(r) for r in server.requests] == ["json_schema", "function_calling"]


def test_the_learned_method_is_per_endpoint() -> None:
    LEARNED.set("openai http://a/v1 m", "json_mode")
    assert LEARNED.get("openai http://b/v1 m") is None


@pytest.mark.parametrize("method", ["json_schema", "function_calling", "json_mode"])
async def test_each_method_over_ollamas_native_api(server: ModelServer, method: str) -> None:
    server.script(wire.structured("Answer", GOOD))
    model = chat_model(llm_settings(server, "ollama", structured_output=method), "planner")
    answer, _ = await ask_structured(model, Answer, ASK)
    assert answer == Answer(**GOOD) and [_kind(r) for r in server.requests] == [method]


@pytest.mark.timeout(300)  # importing the anthropic SDK is slow on a loaded machine
async def test_anthropic_json_schema_method(server: ModelServer) -> None:
    server.script(wire.structured("Answer", GOOD))
    model = chat_model(llm_settings(server, "anthropic", structured_output="json_schema"), "reviewer")
    answer, _ = await ask_structured(model, Answer, ASK)
    assert answer == Answer(**GOOD)
    assert not server.requests[0].body.get("tools")  # the schema travels as an output format, not a tool
