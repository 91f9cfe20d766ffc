"""The scripted model server refuses what the providers refuse, in their words, through the real clients;
the product's own answer schemas pass those rules; a scripted reply that breaks the schema the
request sent is a script error, not an answer."""

from __future__ import annotations

import contextlib
import inspect
from typing import Any

import anthropic
import openai
import pytest
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, SecretStr, ValidationError

import graph.schemas
from bot.cli.check import CheckAnswer
from foundation.llm import chat_model
from graph.nodes.planner import PlanProposal
from graph.runtime.trace import Trace, read_trace
from graph.structured import ask_structured
from tests.fakes import model_server as wire
from tests.fakes.model_server import ModelServer
from tests.models.conftest import llm_settings


class Labels(BaseModel):
    """A free-form map: pydantic writes `additionalProperties: {"type": "string"}`, strict mode refuses it."""

    title: str
    labels: dict[str, str]


# langchain-openai warns beside the 400 (a warning, not an error, in the running service)
LANGCHAIN_SAYS = "Invalid schema for OpenAI's structured output feature"


def _openai(server: ModelServer) -> ChatOpenAI:
    return ChatOpenAI(model="m", base_url=server.openai_url, api_key=SecretStr("k"), max_retries=0)


async def test_openai_strict_mode_refuses_an_open_object_with_openais_400(server: ModelServer) -> None:
    with pytest.raises(openai.BadRequestError) as caught, pytest.warns(UserWarning, match=LANGCHAIN_SAYS):
        await _openai(server).with_structured_output(Labels, method="json_schema").ainvoke("hi")
    assert caught.value.status_code == 400
    assert caught.value.body == {
        "message": "Invalid schema for response_format 'Labels': In context=('properties', 'labels'), "
                   "'additionalProperties' is required to be supplied and to be false.",
        "type": "invalid_request_error", "param": "response_format", "code": None}
    (refused,) = server.requests
    assert refused.rejected is not None and server.pending == 0  # no scripted reply was taken


@pytest.mark.parametrize(("parameters", "problem"), [
    ({"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}, "required": ["q"],
      "additionalProperties": False},
     "In context=(), 'required' is required to be supplied and to be an array including every key in properties. "
     "Missing 'n'."),
    ({"type": "object", "properties": {"q": {"type": "string", "minLength": 3}}, "required": ["q"],
      "additionalProperties": False},
     "In context=('properties', 'q'), 'minLength' is not permitted."),
    ({"type": "object", "properties": {"q": {"type": "string", "default": "x"}}, "required": ["q"],
      "additionalProperties": False},
     "In context=('properties', 'q'), 'default' is not permitted."),
])
async def test_openai_strict_function_rules(server: ModelServer, parameters: dict[str, Any], problem: str) -> None:
    tool = {"type": "function", "function": {"name": "find", "description": "Find.", "parameters": parameters,
                                             "strict": True}}
    with pytest.raises(openai.BadRequestError) as caught:
        await _openai(server).bind_tools([tool]).ainvoke("hi")
    assert caught.value.body == {"message": f"Invalid schema for function 'find': {problem}",
                                 "type": "invalid_request_error", "param": "tools[0].function.parameters",
                                 "code": "invalid_function_parameters"}


async def test_openai_refuses_a_function_name_outside_its_pattern(server: ModelServer) -> None:
    tool = {"type": "function", "function": {"name": "read file", "parameters": {"type": "object"}}}
    with pytest.raises(openai.BadRequestError) as caught:
        await _openai(server).bind_tools([tool]).ainvoke("hi")
    assert isinstance(caught.value.body, dict) and caught.value.body["code"] == "invalid_value"
    assert caught.value.body["param"] == "tools[0].function.name"


@pytest.mark.timeout(300)  # importing the anthropic SDK is slow on a loaded machine
async def test_anthropic_refuses_a_tool_name_and_a_non_object_schema(server: ModelServer) -> None:
    model = ChatAnthropic(model_name="claude", base_url=server.url, api_key=SecretStr("k"), max_retries=0,
                          timeout=30, stop=None)
    for tool, message in [
        ({"name": "read file", "description": "Read.", "input_schema": {"type": "object"}},
         "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"),
        ({"name": "read", "description": "Read.", "input_schema": {"type": "string"}},
         "tools.0.custom.input_schema.type: Input should be 'object'"),
    ]:
        with pytest.raises(anthropic.BadRequestError) as caught:
            await model.bind_tools([tool]).ainvoke("hi")
        assert caught.value.status_code == 400
        assert caught.value.body == {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


async def test_a_refused_schema_is_a_format_failure_the_product_moves_past(server: ModelServer, tmp_path: Any) -> None:
    """The product's `auto` method meets OpenAI's 400 for a schema strict mode cannot take: it is
    traced as a rejected request and the next method answers."""
    server.script(wire.structured("Labels", {"title": "t", "labels": {"a": "b"}}))
    trace = Trace.open(tmp_path, "task-1")
    with pytest.warns(UserWarning, match=LANGCHAIN_SAYS):
        answer, _ = await ask_structured(chat_model(llm_settings(server), "decomposer"), Labels,
                                         [HumanMessage("Label it.")], trace=trace)
    assert answer.labels == {"a": "b"}
    assert [r.rejected is not None for r in server.requests] == [True, False]
    (rejected,) = [e for e in read_trace(trace.path) if e["kind"] == "rejected"]
    assert "additionalProperties" in rejected["reason"] and rejected["method"] == "json_schema"


def _answer_schemas() -> list[type[BaseModel]]:
    found = [cls for _, cls in inspect.getmembers(graph.schemas, inspect.isclass)
             if issubclass(cls, graph.schemas.Answer) and cls is not graph.schemas.Answer]
    return [*found, PlanProposal, CheckAnswer]


@pytest.mark.parametrize("schema", _answer_schemas(), ids=lambda cls: cls.__name__)
async def test_every_answer_schema_of_the_product_is_one_strict_mode_takes(
    server: ModelServer, schema: type[BaseModel]
) -> None:
    """Each schema as langchain-openai sends it (`json_schema`, `strict: true`) passes OpenAI's rules."""
    server.responder = lambda request: wire.off_schema(wire.text("{}"))  # the answer is not under test
    with contextlib.suppress(ValidationError):  # `{}` is not a valid answer: only the request is
        await _openai(server).with_structured_output(schema, method="json_schema").ainvoke("hi")
    (sent,) = server.requests
    assert sent.rejected is None and sent.body["response_format"]["json_schema"]["strict"] is True


async def test_the_strict_rules_see_what_the_product_leaves_out(server: ModelServer) -> None:
    """Without the product's `Answer` base, a schema with a default is refused (what the base fixes,
    so the test above could fail)."""

    class Bare(BaseModel):
        text: str = ""

    with pytest.raises(openai.BadRequestError, match="'default' is not permitted"), \
            pytest.warns(UserWarning, match=LANGCHAIN_SAYS):
        await _openai(server).with_structured_output(Bare, method="json_schema").ainvoke("hi")


async def test_a_scripted_call_breaking_the_sent_schema_is_a_script_error(server: ModelServer) -> None:
    tool = {"type": "function", "function": {"name": "read_file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}
    server.script(wire.tools(wire.call("read_file", line=3)), wire.tools(wire.call("delete_file", path="a")))
    try:
        for _ in range(2):
            with pytest.raises(openai.InternalServerError, match="breaks the request's schema"):
                await _openai(server).bind_tools([tool]).ainvoke("hi")
        assert wire.SCRIPT_ERRORS == [
            "the arguments of 'read_file' break the schema sent at []: 'path' is a required property",
            "a call to 'delete_file', which the request did not offer (it offered ['read_file'])"]
    finally:
        wire.SCRIPT_ERRORS.clear()  # seen here on purpose: the suite's check would fail the test
    server.script(wire.off_schema(wire.tools(wire.call("read_file", line=3))))  # a weak model, on purpose
    answered = await _openai(server).bind_tools([tool]).ainvoke("hi")
    assert answered.tool_calls[0]["args"] == {"line": 3}
