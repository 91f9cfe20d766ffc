"""What OpenAI and Anthropic refuse in the tool and output schemas a client sends, in their own words.

The scripted model server runs these checks on every request before it answers, so a test that goes
through a real client sees the HTTP 400 a provider would send for a schema it cannot take:

- OpenAI: a function or `response_format` name outside `^[a-zA-Z0-9_-]{1,64}$`; a function's
  parameters that are not an object schema; and with `strict: true` (what langchain-openai sends for
  `json_schema` structured output) the strict-mode rules: every object lists all its properties in
  `required` and sets `additionalProperties: false`, only the supported keywords appear (no
  `default`, `allOf`, `oneOf`, `minLength`, ...), the root is an object, at most 10 levels of nesting.
- Anthropic: a tool name outside `^[a-zA-Z0-9_-]{1,64}$`; an `input_schema` missing, not of type
  `object`, or not a valid JSON Schema (draft 2020-12); with `strict: true`, objects closed as above.

Each check returns the provider's error body (or None); the messages follow the texts those APIs
answer, so the product's classification of them (a `format` failure, and the next structured-output
method) is exercised as it would be against the real service.
"""

from __future__ import annotations

import re
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_DEPTH = 10
# the keywords OpenAI's strict mode supports (its "Supported schemas" list); anything else is refused
STRICT_KEYWORDS = frozenset({
    "type", "description", "title", "properties", "required", "additionalProperties", "items", "enum", "const",
    "anyOf", "$ref", "$defs", "definitions", "pattern", "format", "multipleOf", "maximum", "exclusiveMaximum",
    "minimum", "exclusiveMinimum", "minItems", "maxItems",
})
_SCHEMA_MAPS = ("properties", "$defs", "definitions")


class StrictViolation(Exception):
    """One refused part of a schema; `context` is the path OpenAI names (None: the schema as a whole)."""

    def __init__(self, context: tuple[str, ...] | None, message: str) -> None:
        self.context = context
        super().__init__(message)


def strict_problem(schema: Any) -> StrictViolation | None:
    """The first thing OpenAI's strict mode refuses in `schema`, or None."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        got = schema.get("type") if isinstance(schema, dict) else None
        return StrictViolation(None, f"schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{got}\"'.")
    try:
        _check_strict(schema, (), 0)
    except StrictViolation as found:
        return found
    return None


def _check_strict(node: Any, context: tuple[str, ...], depth: int) -> None:
    if not isinstance(node, dict):
        return
    if depth > MAX_DEPTH:
        raise StrictViolation(context, f"Schema nesting exceeds the limit of {MAX_DEPTH} levels.")
    for key in node:
        if key not in STRICT_KEYWORDS:
            raise StrictViolation(context, f"'{key}' is not permitted.")
    kinds = node.get("type")
    if kinds == "object" or (isinstance(kinds, list) and "object" in kinds) or "properties" in node:
        if node.get("additionalProperties") is not False:
            raise StrictViolation(context, "'additionalProperties' is required to be supplied and to be false.")
        properties = node.get("properties", {})
        required = node.get("required")
        missing = [name for name in properties if not isinstance(required, list) or name not in required]
        if missing:
            raise StrictViolation(context, "'required' is required to be supplied and to be an array including "
                                           f"every key in properties. Missing '{missing[0]}'.")
    for mapping in _SCHEMA_MAPS:
        for name, child in (node.get(mapping) or {}).items():
            _check_strict(child, (*context, mapping, name), depth + (mapping == "properties"))
    if "items" in node:
        _check_strict(node["items"], (*context, "items"), depth + 1)
    for index, option in enumerate(node.get("anyOf") or []):
        _check_strict(option, (*context, "anyOf", str(index)), depth)


def _openai_error(message: str, param: str | None, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def _openai_name(name: Any, param: str) -> dict[str, Any] | None:
    if not isinstance(name, str) or len(name) > 64:
        length = len(name) if isinstance(name, str) else 0
        return _openai_error(f"Invalid '{param}': string too long. Expected a string with maximum length 64, but "
                             f"got a string with length {length} instead.", param, "string_above_max_length")
    if not NAME.match(name):
        return _openai_error(f"Invalid '{param}': string does not match pattern. Expected a string that matches "
                             "the pattern '^[a-zA-Z0-9_-]+$'.", param, "invalid_value")
    return None


def openai_problem(body: dict[str, Any]) -> dict[str, Any] | None:
    """OpenAI's 400 body for the first tool or response_format schema it would refuse, or None."""
    for index, tool in enumerate(body.get("tools") or []):
        function = tool.get("function") or {}
        name = function.get("name")
        found = _openai_name(name, f"tools[{index}].function.name")
        if found:
            return found
        parameters = function.get("parameters", {"type": "object", "properties": {}})
        if function.get("strict") is True:
            violation = strict_problem(parameters)
        elif not isinstance(parameters, dict) or parameters.get("type") != "object":
            got = parameters.get("type") if isinstance(parameters, dict) else None
            violation = StrictViolation(None, f"schema must be a JSON Schema of 'type: \"object\"', got 'type: "
                                            f"\"{got}\"'.")
        else:
            violation = None
        if violation is not None:
            return _openai_error(f"Invalid schema for function '{name}': {_in(violation)}",
                                 f"tools[{index}].function.parameters", "invalid_function_parameters")
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        spec = response_format.get("json_schema") or {}
        found = _openai_name(spec.get("name"), "response_format.json_schema.name")
        if found:
            return found
        if spec.get("strict") is True:
            violation = strict_problem(spec.get("schema"))
            if violation is not None:
                return _openai_error(f"Invalid schema for response_format '{spec.get('name')}': {_in(violation)}",
                                     "response_format", None)
    return None


def _in(violation: StrictViolation) -> str:
    return str(violation) if violation.context is None else f"In context={violation.context!r}, {violation}"


def anthropic_problem(body: dict[str, Any]) -> dict[str, Any] | None:
    """Anthropic's 400 body for the first tool it would refuse, or None."""
    for index, tool in enumerate(body.get("tools") or []):
        if "input_schema" not in tool and tool.get("type") not in (None, "custom"):
            continue  # a server tool (web search, ...) has no input schema
        where = f"tools.{index}.custom"
        name = tool.get("name")
        if not isinstance(name, str) or not NAME.match(name):
            return _anthropic_error(f"{where}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'")
        schema = tool.get("input_schema")
        if not isinstance(schema, dict):
            return _anthropic_error(f"{where}.input_schema: Field required")
        if schema.get("type") != "object":
            return _anthropic_error(f"{where}.input_schema.type: Input should be 'object'")
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError:
            return _anthropic_error(f"{where}.input_schema: JSON schema is invalid. It must match JSON Schema "
                                    "draft 2020-12 (https://json-schema.org/draft/2020-12).")
        if tool.get("strict") is True:
            violation = strict_problem(schema)
            if violation is not None:
                return _anthropic_error(f"{where}.input_schema: {_in(violation)}")
    return None


def _anthropic_error(message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


# OpenAI's reasoning models (o1, o3, o4-mini, gpt-5 and later) refuse `max_tokens` (their name for it is
# `max_completion_tokens`) and any sampling temperature but their own: o1, o3, o4-mini and gpt-5 refuse a
# temperature other than 1 ("default-only"), o3-mini and o1-mini the parameter itself ("none"). Azure OpenAI
# and gateways (LiteLLM, OpenRouter) answer the same bodies for them.
REASONING_RULES = ("default-only", "none")


def openai_reasoning_problem(body: dict[str, Any], rule: str) -> dict[str, Any] | None:
    """OpenAI's 400 body for a parameter a reasoning model of `rule` refuses, or None ("": not one)."""
    if not rule:
        return None
    if "max_tokens" in body:
        return _openai_error("Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                             "'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter")
    if "temperature" not in body:
        return None
    value = body["temperature"]
    if rule == "none":
        return _openai_error("Unsupported parameter: 'temperature' is not supported with this model.",
                             "temperature", "unsupported_parameter")
    if value != 1:
        return _openai_error(f"Unsupported value: 'temperature' does not support {value} with this model. Only the "
                             "default (1) value is supported.", "temperature", "unsupported_value")
    return None


# vLLM started without `--enable-auto-tool-choice --tool-call-parser NAME` answers a request that lets the
# model choose its tool calls (`tool_choice` "auto", or absent with tools: what a tool loop sends) so; a
# forced (named) call it served, before December 2025, by guided decoding
VLLM_NO_AUTO_TOOLS = {"object": "error", "message": '"auto" tool choice requires --enable-auto-tool-choice and '
                      "--tool-call-parser to be set", "type": "BadRequestError", "param": None, "code": 400}


def vllm_tools_problem(body: dict[str, Any], auto_tools: bool) -> dict[str, Any] | None:
    """vLLM's 400 body for a request whose tool choice the server was not started for, or None."""
    if auto_tools or not body.get("tools") or body.get("tool_choice", "auto") != "auto":
        return None
    return VLLM_NO_AUTO_TOOLS


# llama.cpp's llama-server started without `--jinja` (its default before 2026) answers any request with tools
# so, with HTTP 500
LLAMA_CPP_NO_JINJA = {"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}}
