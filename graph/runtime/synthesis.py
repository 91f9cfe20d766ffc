"""Ending an investigation: `finish_exploration` validates the declared files, synthesis answers.

Successful investigation ends when the model calls `finish_exploration` with the files it found
relevant; code checks every path exists in the worktree (a wrong path is a tool error the model can
fix). Structured synthesis then gets the role's system prompt and the code-built handoff — criteria,
scratchpad, read ranges, declared files — but none of the tool history.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool
from pydantic import BaseModel

from graph.runtime.accounting import Ledger
from graph.runtime.scratchpad import Memory, handoff_summary
from graph.runtime.trace import Trace, content_hash
from graph.runtime.window import Window, message_tokens, schema_tokens
from graph.state import CriterionDump
from graph.structured import Settle, ask_structured
from graph.tools.functiontool import function_tool
from graph.tools.paths import relative

T = TypeVar("T", bound=BaseModel)


@dataclass
class Declared:
    """The file scope an investigation declared when it finished: files a change may write, and
    files read for context only (never both)."""

    files: list[str] = field(default_factory=list)
    context_only: list[str] = field(default_factory=list)

    def tool(self, root: Path) -> BaseTool:
        def finish_exploration(files: list[str], reason: str, context_only: list[str] | None = None) -> str:
            """End the investigation: `files` a change would touch, `context_only` files read for context
            (relative paths, existing files only, no path in both lists)."""
            writable = [relative(root, f) for f in files]
            context = [relative(root, f) for f in context_only or []]
            missing = [f for f in [*writable, *context] if not (root / f).is_file()]
            if missing:
                raise ValueError(f"these files do not exist: {', '.join(missing)}; declare existing files only")
            both = sorted(set(writable) & set(context))
            if both:
                raise ValueError(f"declared both writable and context-only: {', '.join(both)}; pick one")
            self.files, self.context_only = list(dict.fromkeys(writable)), list(dict.fromkeys(context))
            return f"investigation finished: {reason}"

        return function_tool(finish_exploration)


async def synthesize(
    model: BaseChatModel, schema: type[T], *, role: str, system: str, criteria: Sequence[CriterionDump],
    memory: Memory, declared: Sequence[str], reason: str, ledger: Ledger, trace: Trace | None = None,
    notice: str = "", task: Sequence[BaseMessage] = (), window: Window | None = None,
    settle: Settle[T] | None = None,
) -> tuple[T, dict[str, Any]]:
    """One structured call from the handoff summary (and the fragment that ended the session, if any).

    `task` is what the role must still see to answer (the reviewer's diff, the architect's plan);
    the tool history never comes along. The call is counted once, in `ledger`. With a `window`, the
    scratchpad's notes are kept, oldest first, while the request fits it (the handoff says how many
    were left out).
    """
    fixed = [SystemMessage(system), *task] + ([HumanMessage(notice)] if notice else [])
    room = None if window is None else window.room(message_tokens(fixed), schema_tokens(schema))
    handoff = handoff_summary(criteria, memory, declared, reason, budget_tokens=room)
    messages = [SystemMessage(system), *task, HumanMessage(handoff)] + ([HumanMessage(notice)] if notice else [])
    answer, usage = await ask_structured(model, schema, messages, window=window, settle=settle, trace=trace)
    name = record_structured(ledger, role, usage)
    if trace is not None:
        trace.event("synthesis", role=role, model=name, schema=schema.__name__, tokens=usage["tokens"],
                    input_tokens=usage.get("input_tokens", 0), output_tokens=usage.get("output_tokens", 0),
                    estimated_tokens=usage.get("estimated_tokens", 0),
                    window=window.tokens if window is not None else None,
                    output_cap=window.output if window is not None else None,
                    context_hash=content_hash([system, handoff]), bytes=len(handoff.encode("utf-8")))
    return answer, usage


def record_structured(ledger: Ledger, role: str, usage: dict[str, Any]) -> str:
    """Count one `ask_structured` call in `ledger` (input and output priced apart); the model name.

    A provider that reports only a total has it counted as input tokens.
    """
    name = str(usage["models"][0])
    tokens_in, tokens_out = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
    if not tokens_in and not tokens_out:
        tokens_in = int(usage.get("tokens", 0))
    ledger.record(role, name, tokens_in, tokens_out)
    return name
