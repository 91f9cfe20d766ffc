"""architect: investigates the plan read-only, then approves it or rejects it with feedback.

It sees the plan, the criteria, the override contracts and the files the plan touches (injected
from disk), may read further with read-only tools under the research budget (`write_scratchpad`
keeps facts past pruning), and answers one structured `ArchitectVerdict` from the handoff the
runtime assembles by code. It judges what code cannot (coverage by meaning, fit with the
structure). A rejection goes back to planner_refine, bounded by `bounds.Limits.architect`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime

import prompts
from graph.deps import Deps
from graph.nodes.planner import task_text
from graph.runtime.budget import call_budget
from graph.runtime.roles import RoleRun
from graph.runtime.scratchpad import Memory
from graph.schemas import ArchitectVerdict, settle_architect
from graph.state import PlanDump, TaskState
from graph.tools import tools_for
from graph.tools.code import search_tools
from graph.tools.files import file_tools
from graph.tools.investigation import open_index
from project.embedding import embedder_for
from project.index.db import Connection
from project.index.embed import Embedder


def _targets(plan: PlanDump | None) -> list[str]:
    scope = plan.get("scope") if plan else None
    if not scope:
        return []
    return [*scope.get("writable", []), *scope.get("context_only", [])]


def _tools(root: Path, memory: Memory, conn: Connection | None, embedder: Embedder | None) -> list[BaseTool]:
    """Files and the scratchpad; `search_memory` and `symbol_history` (why things are as they are) when
    the task has an index."""
    available: dict[str, BaseTool] = {**file_tools(root), "write_scratchpad": memory.scratchpad.tool()}
    if conn is not None:
        recall = search_tools(root, conn, embedder)
        available.update({name: recall[name] for name in ("search_memory", "symbol_history")})
    return tools_for("architect", available)


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    settings = runtime.context.settings
    plan = state.get("plan")
    root = Path(state["workspace"])
    criteria = state.get("criteria", [])
    system = prompts.render("architect.system", forge_terms=prompts.terms(state["forge"]))
    memory = Memory()
    role = RoleRun.open("architect", state, runtime.context)
    role.session(root=root, system=lambda: system, targets=lambda: _targets(plan), memory=memory,
                 max_calls=call_budget(settings.llm, "architect", criteria=len(criteria)))
    task = HumanMessage("\n\n".join([
        task_text(state, settings.data_dir),
        prompts.boundary("plan", "planner", json.dumps(plan or {}, indent=1)),
        *([prompts.boundary("plan_warnings", "code graph", "\n".join(state["plan_warnings"]))]
          if state.get("plan_warnings") else []),
        "Investigate what you need, then approve the plan or reject it with one actionable feedback line per "
        "problem.",
    ]))
    with open_index(state.get("index") or "") as conn:
        result = await role.loop(_tools(root, memory, conn, embedder_for(settings.embedder)), [task])
    verdict = await role.conclude(ArchitectVerdict, system=system, criteria=criteria, memory=memory, result=result,
                                  task=[task], settle=settle_architect)
    feedback = [] if verdict.approved else verdict.feedback
    return {**role.update(), "architect": verdict.model_dump(), "plan_feedback": feedback}
