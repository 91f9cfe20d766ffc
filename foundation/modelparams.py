"""Request parameters an endpoint refuses, learned from its first refusal and left out after it.

Why: OpenAI's reasoning models (o1, o3, o4-mini, gpt-5 and later) refuse two parameters every other chat
model takes, with an HTTP 400 that stopped every first call of a task:
- a sampling temperature other than their own: `Unsupported value: 'temperature' does not support 0 with
  this model. Only the default (1) value is supported.`; o3-mini and o1-mini refuse the parameter itself
  (`Unsupported parameter: 'temperature' ...`); gateways in front of them say `does not support
  parameters: ['temperature']`;
- `max_tokens`: `Unsupported parameter: 'max_tokens' is not supported with this model. Use
  'max_completion_tokens' instead.` forgebot sends `max_tokens` to any endpoint with a base URL (the
  compatible servers read no other name), and Azure OpenAI and gateways serve these models there.
LangChain adapts neither by the answer, only the temperature by a model name starting `gpt-5`, which a
deployment's own name (Azure, a gateway) need not. Both are the same on every call of an endpoint, so
`foundation.llm.invoke` sends the refused call again once without the parameter, and every later call of
the process to that endpoint goes without it from the start.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable


def _no_temperature(model: BaseChatModel) -> bool:
    if getattr(model, "temperature", None) is None:
        return False
    model.temperature = None  # type: ignore[attr-defined]  # ChatOpenAI, ChatAnthropic, ChatOllama: not sent
    return True


def _completion_tokens(model: BaseChatModel) -> bool:
    """The output cap under OpenAI's newer name (`_openai` puts it in `extra_body` for a base URL)."""
    if not hasattr(model, "extra_body"):
        return False
    extra = dict(getattr(model, "extra_body", None) or {})
    cap = extra.pop("max_tokens", None) or getattr(model, "max_tokens", None)
    if cap is None:
        return False
    model.extra_body = {**extra, "max_completion_tokens": cap}
    model.max_tokens = None  # type: ignore[attr-defined]
    return True


@dataclass(frozen=True)
class Refusal:
    """One parameter an endpoint may refuse: how its 400 says so, and how a chat model leaves it out."""

    said: re.Pattern[str]
    leave_out: Callable[[BaseChatModel], bool]  # whether the model had it to leave out
    done: str  # for the log and `forgebot check`


REFUSALS = (
    Refusal(re.compile(r"\btemperature\b.{0,40}(not supported|does not support|unsupported|only the default)"
                       r"|(unsupported|not supported|does not support).{0,40}\btemperature\b", re.I),
            _no_temperature, "it takes no temperature but its own: calls go without one"),
    Refusal(re.compile(r"\bmax_tokens\b.{0,80}\bmax_completion_tokens\b", re.I),
            _completion_tokens, "it takes no max_tokens: calls cap the output with max_completion_tokens"),
)


class _Learned:
    """The refusals learned per endpoint (process-wide: every task calls the same endpoints)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_endpoint: dict[str, tuple[Refusal, ...]] = {}

    def of(self, endpoint: str) -> tuple[Refusal, ...]:
        with self._lock:
            return self._by_endpoint.get(endpoint, ())

    def add(self, endpoint: str, refusal: Refusal) -> None:
        with self._lock:
            known = self._by_endpoint.get(endpoint, ())
            if refusal not in known:
                self._by_endpoint[endpoint] = (*known, refusal)


_LEARNED = _Learned()


def _chat_models(runnable: Any) -> list[BaseChatModel]:
    """The chat models `runnable` calls: itself, or those LangChain bound for tools or a schema."""
    found, seen, todo = [], set(), [runnable]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, BaseChatModel):
            found.append(node)
        elif isinstance(node, Runnable):
            todo.extend(getattr(node, "__dict__", {}).values())
        elif isinstance(node, list | tuple):
            todo.extend(node)
        elif isinstance(node, dict):
            todo.extend(node.values())
    return found


def adapt(runnable: Any, endpoint: str) -> None:
    """Leave out of `runnable`'s requests what `endpoint` is known to refuse."""
    for refusal in _LEARNED.of(endpoint):
        for model in _chat_models(runnable):
            refusal.leave_out(model)


def refused(reason: str, runnable: Any, endpoint: str) -> Refusal | None:
    """The refusal a 400's `reason` says, once left out of `runnable` and learned for `endpoint`; None when
    it says none, or `runnable` had nothing of it to leave out (sending it again would change nothing)."""
    for refusal in REFUSALS:
        if refusal.said.search(reason):
            changed = [refusal.leave_out(model) for model in _chat_models(runnable)]
            if any(changed):
                _LEARNED.add(endpoint, refusal)
                return refusal
    return None


def said(endpoint: str) -> str:
    """What `endpoint` refused, for `forgebot check` ("" when nothing)."""
    return "".join(f"; {refusal.done}" for refusal in _LEARNED.of(endpoint))
