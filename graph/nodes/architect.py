"""architect: approves the plan or rejects it with feedback the planner can act on.

It sees the plan, the criteria, the override contracts and the current text of the files the plan
writes; it judges what code cannot (coverage by meaning, fit with the structure). A rejection goes
back to planner_refine, bounded by `bounds.Limits.architect`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

import prompts
from graph.deps import Deps
from graph.nodes.planner import task_text
from graph.runtime.injection import InjectionLimits, inject
from graph.schemas import ArchitectVerdict
from graph.state import TaskState
from graph.structured import ask_structured


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    plan = state.get("plan") or {}
    root = Path(state["workspace"])
    paths = [*plan.get("scope", {}).get("writable", []), *plan.get("scope", {}).get("context_only", [])]
    files = inject(root, paths, InjectionLimits())
    text = "\n\n".join([
        task_text(state, runtime.context.settings.data_dir),
        prompts.boundary("plan", "planner", json.dumps(plan, indent=1)),
        files.render() if files.files else "",
        "Approve the plan, or reject it with one actionable feedback line per problem.",
    ])
    system = prompts.render("architect.system", forge_terms=prompts.terms(state["forge"]))
    verdict, usage = await ask_structured(
        runtime.context.model_for("architect"), ArchitectVerdict, [SystemMessage(system), HumanMessage(text)]
    )
    feedback = [] if verdict.approved else verdict.feedback
    return {"architect": verdict.model_dump(), "plan_feedback": feedback, **usage}
