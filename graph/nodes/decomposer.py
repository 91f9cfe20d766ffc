"""decomposer: issue text → numbered acceptance criteria, assumptions, or blocking questions."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

import prompts
from graph.deps import Deps
from graph.schemas import Decomposition
from graph.state import TaskState
from graph.structured import ask_structured


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    """Ask the decomposer model for criteria; questions instead of guesses when information lacks."""
    model = runtime.context.model_for("decomposer")
    messages = [
        SystemMessage(prompts.render("decomposer.system", forge_terms=prompts.terms(state["forge"]))),
        HumanMessage(prompts.render("decomposer.task", title=state["title"], body=state["body"])),
    ]
    answer, usage = await ask_structured(model, Decomposition, messages)
    return {
        "criteria": [c.model_dump() for c in answer.criteria],
        "assumptions": answer.assumptions,
        "questions": answer.questions,
        **usage,
    }
