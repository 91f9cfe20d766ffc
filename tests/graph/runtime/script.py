"""Building scripted tool-call replies for the runtime tests."""

from __future__ import annotations

import itertools
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

_ids = itertools.count(1)


def calls(*pairs: tuple[str, dict[str, Any]], tokens: int = 50) -> AIMessage:
    """One AI message asking for the given tool calls."""
    return AIMessage(
        content="",
        tool_calls=[{"name": n, "args": a, "id": f"c{next(_ids)}"} for n, a in pairs],
        usage_metadata={"input_tokens": tokens - 10, "output_tokens": 10, "total_tokens": tokens},
    )


def call(tool: str, /, **args: Any) -> AIMessage:
    return calls((tool, args))


def done(text: str = "done") -> AIMessage:
    return AIMessage(content=text, usage_metadata={"input_tokens": 40, "output_tokens": 10, "total_tokens": 50})


def tool_texts(messages: list[BaseMessage]) -> list[str]:
    return [str(m.content) for m in messages if isinstance(m, ToolMessage)]


def system_text(messages: list[BaseMessage]) -> str:
    (system,) = [m for m in messages if isinstance(m, SystemMessage)]
    return str(system.content)


def humans(messages: list[BaseMessage]) -> list[str]:
    return [str(m.content) for m in messages if isinstance(m, HumanMessage)]
