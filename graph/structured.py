"""ask_structured(): one model call that must answer with a pydantic schema, with its usage kept."""

from __future__ import annotations

from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from pydantic import BaseModel

T = TypeVar("T", bound=BaseModel)


class StructuredOutputError(RuntimeError):
    """The model's answer did not validate against the schema."""


def _model_name(model: BaseChatModel) -> str:
    for attr in ("model_name", "model"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


async def ask_structured(
    model: BaseChatModel, schema: type[T], messages: list[BaseMessage]
) -> tuple[T, dict[str, Any]]:
    """Return the parsed answer and its usage: `tokens`, `input_tokens`, `output_tokens`, `models`."""
    runnable = model.with_structured_output(schema, include_raw=True)
    result = await runnable.ainvoke(messages)
    assert isinstance(result, dict)
    parsed = result.get("parsed")
    if not isinstance(parsed, schema):
        raise StructuredOutputError(f"{schema.__name__}: {result.get('parsing_error')}")
    raw = result.get("raw")
    usage = getattr(raw, "usage_metadata", None) or {}
    tokens_in, tokens_out = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
    total = int(usage.get("total_tokens", 0)) or tokens_in + tokens_out
    return parsed, {"tokens": total, "input_tokens": tokens_in, "output_tokens": tokens_out,
                    "models": [_model_name(model)]}
