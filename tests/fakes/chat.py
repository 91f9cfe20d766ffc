"""ScriptedChatModel: a LangChain chat model that answers from a script, one message per call.

LangChain's fake chat models raise on `bind_tools` (and so on `with_structured_output`); this one
returns itself from `bind_tools`, so structured output works by answering with a tool call named
after the schema. Scripts are lists of `AIMessage`s next to each test.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import BaseModel, Field


class ScriptedChatModel(GenericFakeChatModel):
    """Answers with the next scripted message; records every prompt it was sent."""

    received: list[list[BaseMessage]] = Field(default_factory=list)
    disable_streaming: bool = True

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.received.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def scripted(messages: Sequence[AIMessage]) -> ScriptedChatModel:
    it: Iterator[AIMessage] = iter(list(messages))
    return ScriptedChatModel(messages=it)


_ids = itertools.count(1)


def answer(schema: type[BaseModel], payload: BaseModel | dict[str, Any], tokens: int = 100) -> AIMessage:
    """An AIMessage answering a structured-output call for `schema` with `payload`."""
    args = payload.model_dump() if isinstance(payload, BaseModel) else payload
    return AIMessage(
        content="",
        tool_calls=[{"name": schema.__name__, "args": args, "id": f"call_{next(_ids)}"}],
        usage_metadata={"input_tokens": tokens // 2, "output_tokens": tokens - tokens // 2, "total_tokens": tokens},
    )
