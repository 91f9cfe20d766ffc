"""The synthetic model: a scripted, LLM-free stand-in that lets the harness run every route offline.

It answers the two kinds of call the graph makes. A structured-output call (`with_structured_output`
binds one tool named after the schema, with `ls_structured_output_format`) gets `Baseline.structured`;
a tool-loop turn (`bind_tools` with the role's tools) gets `Baseline.turn` — the coder gives up on
its item, every other role ends its loop with text. What it answers is in `bot/evaluation/baseline.py`.
It proves the machinery (workspaces, routes, gates, checks, reports); its results say nothing about
any model's effectiveness, and reports made with it are marked synthetic.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

from bot.evaluation.baseline import Baseline, ScriptedModelError, find_declarations, mentioned_names

__all__ = ["SYNTHETIC_MODEL", "Baseline", "ScriptedModelError", "SyntheticChatModel", "baseline_responder",
           "find_declarations", "mentioned_names"]

SYNTHETIC_MODEL = "forgebot-synthetic-baseline"


class SyntheticChatModel(BaseChatModel):
    """One role's synthetic model: structured answers by schema, tool-loop turns by role."""

    baseline: Baseline
    role: str = ""
    tool_names: tuple[str, ...] = ()
    structured: bool = False  # bound by `with_structured_output`, not by a tool loop
    model_name: str = SYNTHETIC_MODEL

    @property
    def _llm_type(self) -> str:
        return "forgebot-synthetic"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> SyntheticChatModel:
        names = tuple(convert_to_openai_tool(t)["function"]["name"] for t in tools)
        structured = "ls_structured_output_format" in kwargs
        return self.model_copy(update={"tool_names": names, "structured": structured})

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        if not self.tool_names:
            raise ScriptedModelError(f"the synthetic model answers tool loops and structured calls only ({self.role})")
        if self.structured:
            schema = self.tool_names[0]
            arguments = self.baseline.structured(schema, messages, self.role)
            reply = AIMessage(content="", tool_calls=[{"name": schema, "args": arguments, "id": f"synthetic-{schema}"}])
        else:
            reply = self.baseline.turn(self.role, self.tool_names, messages)
        prompt_tokens = sum(len(str(m.content).encode()) for m in messages) // 4
        answer_tokens = len((str(reply.content) + repr(reply.tool_calls)).encode()) // 4
        # sizes, not a provider's count: bytes / 4 keeps the token columns of a synthetic report filled
        reply.usage_metadata = {"input_tokens": prompt_tokens, "output_tokens": answer_tokens,
                                "total_tokens": prompt_tokens + answer_tokens}
        return ChatResult(generations=[ChatGeneration(message=reply)])


def baseline_responder(task_text: str, workspace: Path) -> Baseline:
    """The synthetic answers for one task (one `Baseline` shared by every role's model)."""
    return Baseline(task_text=task_text, workspace=workspace)
