"""The model's context window: every request is measured before it is sent, and fitted or refused.

A request is the system prompt (role prompt, standards, injected files), the messages, the tool
schemas or the answer's schema, and the room the answer may take (the output cap sent with every
call, `foundation.llm.output_cap`). All of it must fit `FORGEBOT_LLM__CONTEXT_WINDOW_TOKENS`. It is
measured with the pessimistic estimate of `graph.runtime.budget` (UTF-8 bytes / 3, plus a few
tokens per message for the chat template), so a request that fits here fits for every tokenizer
we have met; a server never has to reject it, and never silently cuts its start.

Callers fit what is elastic (the tool loop prunes old calls, injects files as outlines or not at
all and cuts an oversized tool result; roles budget their diff, code context and notes from
`Window.room`). What is left is the input the role cannot work without: when even that does not
fit, `WindowTooSmall` stops the task naming the smallest window that would hold it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

from foundation.llm import Failure, ModelCallError, output_cap
from foundation.settings import LLMSettings
from graph.runtime.budget import estimate_tokens
from graph.runtime.injection import Injection, InjectionLimits
from graph.runtime.scratchpad import prune, tool_groups

MESSAGE_OVERHEAD = 4  # role markers and separators a chat template adds around each message


@dataclass(frozen=True)
class Window:
    """The configured window and the output cap the settings give every call."""

    tokens: int
    max_output: int  # the setting; the cap actually sent is `output`

    @classmethod
    def of(cls, settings: LLMSettings) -> Window:
        return cls(tokens=settings.context_window_tokens, max_output=settings.max_output_tokens)

    @property
    def output(self) -> int:
        return self._cap(self.tokens)

    @property
    def prompt(self) -> int:
        """Tokens a request may hold: the window less the answer's reserve."""
        return self.tokens - self.output

    def room(self, *fixed: int) -> int:
        """Tokens left for elastic input once the `fixed` parts are in (never below 0)."""
        return max(0, self.prompt - sum(fixed))

    def needed(self, prompt_tokens: int) -> int:
        """The smallest window whose prompt room holds `prompt_tokens` (with the cap it would get)."""
        window = prompt_tokens
        while window - self._cap(window) < prompt_tokens:
            window += prompt_tokens - (window - self._cap(window))
        return max(window, 1024)

    def _cap(self, window: int) -> int:
        return output_cap(window, self.max_output)


class WindowTooSmall(ModelCallError):
    """The part of a request the role cannot do without does not fit the configured window."""

    def __init__(self, role: str, needed: int, window: int, what: str = "input") -> None:
        self.needed, self.window = needed, window
        reason = (f"{what} needs a context window of at least {needed} tokens, and "
                  f"FORGEBOT_LLM__CONTEXT_WINDOW_TOKENS is {window}")
        super().__init__(role, Failure("context", reason))
        self.args = (f"the {role}'s {reason} (use a model with a window that large and set it, or give "
                     "the task less to read)",)

    def __str__(self) -> str:
        return str(self.args[0])


def text_tokens(content: Any) -> int:
    """A message content (a string or a list of parts) by the estimate."""
    if isinstance(content, str):
        return estimate_tokens(content)
    return estimate_tokens(json.dumps(content, default=str))


def message_tokens(messages: Sequence[BaseMessage]) -> int:
    total = 0
    for message in messages:
        total += MESSAGE_OVERHEAD + text_tokens(message.content)
        if isinstance(message, AIMessage) and (message.tool_calls or message.invalid_tool_calls):
            calls: list[Any] = [[c["name"], c["args"]] for c in message.tool_calls]
            calls += [[c.get("name"), c.get("args")] for c in message.invalid_tool_calls]
            total += estimate_tokens(json.dumps(calls, default=str))
    return total


def tool_tokens(tools: Sequence[BaseTool]) -> int:
    """The tool schemas as the request carries them (OpenAI's function format; the others are alike)."""
    if not tools:
        return 0
    return estimate_tokens(json.dumps([convert_to_openai_tool(t) for t in tools]))


def schema_tokens(schema: type[BaseModel]) -> int:
    """A structured answer's schema, sent as a response format or a forced tool."""
    return estimate_tokens(json.dumps(schema.model_json_schema()))


def check(role: str, window: Window, tokens: int, what: str = "input") -> None:
    """Refuse a request of `tokens` (everything but the answer's reserve) that the window cannot hold."""
    if tokens > window.prompt:
        raise WindowTooSmall(role, window.needed(tokens), window.tokens, what)


@dataclass(frozen=True)
class Turn:
    """One tool-loop request after fitting: the history and injection to send, and its size."""

    history: list[BaseMessage]
    injection: Injection
    tokens: int
    pruned: int = 0  # tool calls dropped from the history for the window
    cut: int = 0  # tool results shortened for the window


def fit_turn(role: str, window: Window, system: str, history: list[BaseMessage], fixed: int,
             inject_with: Callable[[InjectionLimits | None], Injection], reminder: bool) -> Turn:
    """Fit one tool-loop request: old call groups go first, then injected files become outlines or
    are left out, then the last call's results are cut; what remains must fit or the task stops.

    `fixed` is what the request carries besides the messages (the tool schemas); `inject_with`
    snapshots the role's target files under the given limits (None: the role's own).
    """
    base = message_tokens([SystemMessage(system)]) + fixed
    injection = inject_with(None)

    def size(hist: list[BaseMessage], inj: Injection) -> int:
        extra = message_tokens([HumanMessage(inj.reminder())]) if reminder and inj.files else 0
        return base + estimate_tokens(inj.render()) + message_tokens(hist) + extra

    pruned = 0
    while size(history, injection) > window.prompt and len(tool_groups(history)) > 1:
        history, removed = prune(history, keep_groups=len(tool_groups(history)) - 1)
        pruned += removed
    if size(history, injection) > window.prompt and injection.files:
        injection = _smaller_injection(window.prompt - size(history, Injection(())), injection, inject_with)
    cut = 0
    if size(history, injection) > window.prompt:
        history, cut = _cut_results(history, size(history, injection) - window.prompt)
    tokens = size(history, injection)
    check(role, window, tokens)
    return Turn(history=history, injection=injection, tokens=tokens, pruned=pruned, cut=cut)


def _smaller_injection(room: int, injection: Injection,
                       inject_with: Callable[[InjectionLimits | None], Injection]) -> Injection:
    """The target files re-injected into `room` tokens: outlines for what is too large, or nothing."""
    budget = room * 3  # bytes, by the estimate's own ratio
    while budget > 0:
        smaller = inject_with(InjectionLimits(full_max_bytes=budget, total_max_bytes=budget))
        if estimate_tokens(smaller.render()) <= room:
            return smaller
        budget = budget * 3 // 4 if budget > 256 else 0
    return Injection(())


def _cut_results(history: list[BaseMessage], over: int) -> tuple[list[BaseMessage], int]:
    """Shorten the tool results of the last call group by `over` tokens (largest first), saying so."""
    groups = tool_groups(history)
    if not groups:
        return history, 0
    start, end = groups[-1]
    out = list(history)
    cut = 0
    for index in sorted(range(start + 1, end), key=lambda i: -len(str(history[i].content))):
        if over <= 0:
            break
        message = history[index]
        text = str(message.content)
        keep = max(0, len(text.encode("utf-8")) - (over + 40) * 3)
        shortened = text.encode("utf-8")[:keep].decode("utf-8", errors="ignore")
        notice = f"\n[cut to fit the model's context window: {len(text) - len(shortened)} characters left out; " \
                 "read a smaller range]"
        out[index] = message.model_copy(update={"content": shortened + notice})
        over -= estimate_tokens(text) - estimate_tokens(shortened + notice)
        cut += 1
    return out, cut
