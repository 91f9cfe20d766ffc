"""analyzer: criteria → affected files, symbols, impact, risks and open questions."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

import prompts
from graph.deps import Deps
from graph.schemas import Analysis
from graph.state import TaskState
from graph.structured import ask_structured


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    """Ask the analyzer model for a structured analysis of the criteria."""
    model = runtime.context.model_for("analyzer")
    messages = [
        SystemMessage(prompts.render("analyzer.system", forge_terms=prompts.terms(state["forge"]))),
        HumanMessage(
            prompts.render("analyzer.task", title=state["title"], body=state["body"], criteria=state["criteria"])
        ),
    ]
    answer, usage = await ask_structured(model, Analysis, messages)
    return {"analysis": answer.model_dump(), **usage}
