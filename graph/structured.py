"""ask_structured(): one model answer that must validate against a pydantic schema, on any server.

Servers differ in how they can be held to a schema: OpenAI and recent vLLM honour
`response_format: json_schema`; llama.cpp's server and its forks (and older vLLM) reject it with a
400, and some builds accept it but ignore the schema and answer in free text; nearly all support a
forced tool call (`function_calling`); some only JSON mode. The method is a setting per default and
per role (`llm.structured_output`). With `auto`, the methods are tried in the provider's order: a
server that rejects a method, or answers it without a schema-shaped reply, moves on to the next one,
and the method that worked is remembered per endpoint for the rest of the process.

An answer that is JSON but does not validate gets one repair turn that shows the model its
validation error. An answer that still breaks a rule code can check (a review that approves with
criteria it did not verify) is then settled by the caller's `settle` into the answer its content
supports; anything else is honest: a `StructuredOutputError` naming the role, the schema and what
was wrong, which the role turns into its own verdict or the task's failure. Either way the trace
records the invalid answer (`invalid_answer`), so a model that cannot do the work is told apart
from a product that broke.

Every request is measured against the model's window first (`graph.runtime.window`); a repair
turn that would not fit is sent without the schema's text, or not at all.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel, ValidationError

from foundation.llm import Failure, ModelCallError, Profile, invoke, model_name, profile
from graph.runtime.trace import Trace
from graph.runtime.window import Window, check, message_tokens, schema_tokens

T = TypeVar("T", bound=BaseModel)
# turns the JSON object of an answer that failed validation after its repair turn into the answer
# its content supports; raises ValueError (or a ValidationError) when it cannot
Settle = Callable[[dict[str, Any]], T]

# the order `auto` tries, per provider: the strictest first, JSON mode last (it has no schema)
AUTO_ORDER = {
    "openai": ("json_schema", "function_calling", "json_mode"),
    "ollama": ("json_schema", "function_calling", "json_mode"),
    "anthropic": ("function_calling", "json_schema"),
}
_REPAIR_CHARS = 2000


class StructuredOutputError(ModelCallError):
    """The model's answer did not validate against the schema, even after a repair turn."""

    def __init__(self, role: str, schema: str, problem: str, repaired: bool = True) -> None:
        self.schema = schema
        turn = "even after a repair turn" if repaired else "(a repair turn would not fit the window)"
        super().__init__(role, Failure("invalid", f"its {schema} answer could not be used {turn}: {problem}"))


class _Learned:
    """The method that worked per endpoint (process-wide: every task talks to the same servers)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._methods: dict[str, str] = {}

    def get(self, endpoint: str) -> str | None:
        with self._lock:
            return self._methods.get(endpoint)

    def set(self, endpoint: str, method: str) -> None:
        with self._lock:
            self._methods[endpoint] = method


LEARNED = _Learned()


def methods_for(prof: Profile) -> list[str | None]:
    """The methods to try, in order; `[None]` is the model class's own default (test doubles)."""
    order = AUTO_ORDER.get(prof.provider)
    if order is None:
        return [None]
    if prof.structured_output != "auto":
        return [prof.structured_output]
    learned = LEARNED.get(prof.endpoint)
    return [learned, *[m for m in order if m != learned]] if learned else list(order)


async def ask_structured(
    model: BaseChatModel, schema: type[T], messages: list[BaseMessage], *, window: Window | None = None,
    settle: Settle[T] | None = None, trace: Trace | None = None,
) -> tuple[T, dict[str, Any]]:
    """Return the parsed answer and its usage: `tokens`, `input_tokens`, `output_tokens`, `models`,
    `estimated_tokens` (the largest request by the window's estimate)."""
    prof = profile(model)
    methods = methods_for(prof)
    auto = prof.structured_output == "auto" and len(methods) > 1
    spent = [0, 0, 0]  # total, input, output tokens over every attempt (a repair turn costs too)
    index, repaired, sent = 0, False, list(messages)
    fixed = schema_tokens(schema)
    estimated = message_tokens(sent) + fixed
    if window is not None:
        check(prof.role, window, estimated)
    while True:
        method = methods[index]
        runnable = model.with_structured_output(schema, include_raw=True, **({"method": method} if method else {}))
        try:
            result = await invoke(runnable, sent, prof)
        except ModelCallError as exc:
            if auto and exc.failure.kind == "format" and index + 1 < len(methods):
                if trace is not None:  # a request the server refused: the trace keeps every one
                    trace.event("rejected", role=prof.role, method=method, reason=exc.failure.reason[:300])
                index += 1  # the server rejected this method: the next one
                continue
            raise
        except (ValidationError, ValueError) as exc:  # a client that validates while parsing (OpenAI's parse)
            result = {"raw": None, "parsed": None, "parsing_error": exc, "not_json": _not_json(exc)}
        raw = result.get("raw")
        spent = [s + t for s, t in zip(spent, _usage(raw), strict=True)]
        parsed = result.get("parsed")
        usage = {"tokens": spent[0], "input_tokens": spent[1], "output_tokens": spent[2],
                 "models": [model_name(model)], "estimated_tokens": estimated}
        if isinstance(parsed, schema):
            if auto and method is not None:
                LEARNED.set(prof.endpoint, method)
            return parsed, usage
        refused = _refusal(raw)
        if refused:
            raise ModelCallError(prof.role, Failure("refusal", f"the model refused: {refused}"))
        error = result.get("parsing_error")
        problem = _problem(error, raw)
        ignored = result.get("not_json") or _ignored(raw, method)
        if auto and ignored and index + 1 < len(methods):
            index += 1  # the server took the method but answered without it: the next one
            continue
        answer = _answer_object(raw, error)
        repair = None if repaired else _repair_fitted(schema, answer, problem, messages, fixed, window)
        if repair is None:
            return _final(prof.role, schema, answer, problem, repaired, settle, trace), usage
        repaired = True
        sent = [*messages, repair]
        estimated = max(estimated, message_tokens(sent) + fixed)


def _final(role: str, schema: type[T], answer: str, problem: str, repaired: bool, settle: Settle[T] | None,
           trace: Trace | None) -> T:
    """An answer that is still invalid: settled by the caller's rule, or a `StructuredOutputError`;
    the trace records it either way."""
    settled = _settled(settle, answer)
    if trace is not None:
        trace.event("invalid_answer", role=role, schema=schema.__name__, problem=problem[:300], repaired=repaired,
                    settled=settled is not None)
    if settled is None:
        raise StructuredOutputError(role, schema.__name__, problem, repaired)
    return settled


def _repair_fitted(schema: type[BaseModel], answer: str, problem: str, messages: list[BaseMessage], fixed: int,
                   window: Window | None) -> HumanMessage | None:
    """The repair turn, without the schema's text when the window cannot hold it; None when even the
    short one does not fit (the answer is then final)."""
    for full in (True, False):
        repair = HumanMessage(_repair_text(schema, answer, problem, with_schema=full))
        if window is None or message_tokens([*messages, repair]) + fixed <= window.prompt:
            return repair
    return None


def _answer_object(raw: Any, error: Any) -> str:
    """The answer's text as the model gave it; a client that validated while parsing kept no raw
    message, but its validation error holds the object it read."""
    text = _answer_text(raw)
    if text or not isinstance(error, ValidationError):
        return text
    found = next((e["input"] for e in error.errors() if e["loc"] == () and isinstance(e["input"], dict)), None)
    return json.dumps(found) if found is not None else ""


def _settled(settle: Settle[T] | None, answer: str) -> T | None:
    """The caller's settled answer from the last answer's JSON object, or None."""
    if settle is None:
        return None
    try:
        data = json.loads(answer.strip().removeprefix("```json").strip("`"))
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    try:
        return settle(data)
    except ValueError:  # pydantic's ValidationError is one
        return None


def _usage(raw: Any) -> tuple[int, int, int]:
    """(total, input, output) tokens of one answer."""
    usage = getattr(raw, "usage_metadata", None) or {}
    tokens_in, tokens_out = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
    return int(usage.get("total_tokens", 0)) or tokens_in + tokens_out, tokens_in, tokens_out


def _refusal(raw: Any) -> str:
    if not isinstance(raw, AIMessage):
        return ""
    refusal = raw.additional_kwargs.get("refusal")
    if isinstance(refusal, str) and refusal:
        return refusal
    if raw.response_metadata.get("stop_reason") == "refusal":
        return str(raw.content)[:200] or "refusal"
    return ""


def _answer_text(raw: Any) -> str:
    if not isinstance(raw, AIMessage):
        return ""
    if raw.tool_calls:
        return json.dumps(raw.tool_calls[0]["args"])
    if raw.invalid_tool_calls:
        return str(raw.invalid_tool_calls[0].get("args") or "")
    return raw.text


def _ignored(raw: Any, method: str | None) -> bool:
    """The answer shows no sign of the method: no tool call for function calling, no JSON for the others."""
    if not isinstance(raw, AIMessage):
        return False
    if method == "function_calling":
        return not raw.tool_calls and not raw.invalid_tool_calls
    text = raw.text.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        return not isinstance(json.loads(text), dict)
    except ValueError:
        return True


def _not_json(exc: Exception) -> bool:
    if isinstance(exc, ValidationError):
        return any(e["type"] == "json_invalid" for e in exc.errors())
    return True


def _problem(error: Any, raw: Any) -> str:
    if isinstance(error, ValidationError) and not _not_json(error):
        parts = [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in error.errors()[:8]]
        return "; ".join(parts)
    text = " ".join(_answer_text(raw).split())
    if error is not None and text and _ignored(raw, None):
        # prose where JSON was asked for: its opening says what the model did; the parser's own
        # message adds only its troubleshooting link
        return f"the answer is not JSON (it began: {text[:160]!r})"
    if error is not None:
        return " ".join(str(error).split())[:300]
    return "the answer was empty" if not text else "the answer did not match the schema"


def _repair_text(schema: type[BaseModel], answer: str, problem: str, *, with_schema: bool = True) -> str:
    answer = answer[:_REPAIR_CHARS] or "(nothing)"
    text = (f"Your previous answer could not be used. It was:\n\n{answer}\n\nThe problem: {problem}\n\n"
            f"Answer again with one {schema.__name__} object")
    if not with_schema:
        return text + " that satisfies the schema you were given."
    return text + f" that satisfies this JSON schema:\n{json.dumps(schema.model_json_schema())[:6000]}"
