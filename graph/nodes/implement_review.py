"""The review seam of the implement route until the unified reviewer (issue 10) is merged.

Contract (the same the unified reviewer keeps): reads `criteria`, `plan`, `plan_decisions`, `gates`,
`workspace` and `base`; returns `{"review": Review dump}` plus usage. This stand-in is one
structured call over the task's diff; `builder._review_node` prefers `graph.nodes.reviewer.run`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

import prompts
from graph.coder import gitstate
from graph.deps import Deps
from graph.nodes.planner import task_text
from graph.schemas import Review
from graph.state import TaskState
from graph.structured import ask_structured

_DIFF_LIMIT = 60_000


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    root = Path(state["workspace"])
    diff = gitstate.diff(root, state["base"], "HEAD")[:_DIFF_LIMIT]
    text = "\n\n".join([
        task_text(state, runtime.context.settings.data_dir),
        prompts.boundary("plan", "planner", json.dumps(state.get("plan", {}), indent=1)),
        prompts.boundary("decisions", "coder", json.dumps(state.get("plan_decisions", []), indent=1)),
        prompts.boundary("gates", "checks", json.dumps(state.get("gates", []), indent=1)),
        prompts.boundary("diff", "git", diff),
    ])
    system = prompts.render("reviewer.system", forge_terms=prompts.terms(state["forge"]))
    review, usage = await ask_structured(runtime.context.model_for("reviewer"), Review,
                                         [SystemMessage(system), HumanMessage(text)])
    return {"review": review.model_dump(), **usage}
