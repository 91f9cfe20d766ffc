"""UsageRecorder: tokens, model ids and requested tool calls per role, read from model callbacks.

The runner attaches one recorder to each role's chat model, so per-role figures exist even while
the graph's state only carries a task total. Tool calls are the ones the models requested; a call
named like a pydantic schema (CapitalisedName) is a structured-output answer, not a tool use.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.outputs import ChatGeneration, LLMResult

from foundation.llm import model_name


@dataclass
class RoleUsage:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    models: list[str] = field(default_factory=list)
    tool_calls: Counter[str] = field(default_factory=Counter)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class UsageRecorder(BaseCallbackHandler):
    """Accumulates usage per role over one task."""

    def __init__(self) -> None:
        self.roles: dict[str, RoleUsage] = {}

    def attach(self, role: str, model: BaseChatModel) -> BaseChatModel:
        """Record `model`'s calls under `role`; returns the same model."""
        usage = self.roles.setdefault(role, RoleUsage())
        name = model_name(model)
        if name not in usage.models:
            usage.models.append(name)
        model.callbacks = [*(model.callbacks if isinstance(model.callbacks, list) else []), _RoleHandler(usage)]
        return model

    def tool_calls(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for usage in self.roles.values():
            total.update(usage.tool_calls)
        return dict(sorted(total.items()))


class _RoleHandler(BaseCallbackHandler):
    def __init__(self, usage: RoleUsage) -> None:
        self.usage = usage

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        self.usage.calls += 1
        for generations in response.generations:
            for gen in generations:
                if not isinstance(gen, ChatGeneration):
                    continue
                meta = getattr(gen.message, "usage_metadata", None) or {}
                self.usage.input_tokens += int(meta.get("input_tokens", 0))
                self.usage.output_tokens += int(meta.get("output_tokens", 0))
                for call in getattr(gen.message, "tool_calls", []) or []:
                    name = str(call.get("name", ""))
                    if name and not name[0].isupper():
                        self.usage.tool_calls[name] += 1
