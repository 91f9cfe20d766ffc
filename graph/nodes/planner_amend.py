"""planner_amend: a blocked or looping coder session's open items get a revised plan.

ADJUST_PLAN keeps completed items (and their commits) and asks only for the remaining work, with
`completed_plan_steps` and `failed_step_context`. When amendments are used up, FULL_RESET resets
the worktree to the task's base and plans again from the criteria — a different message, because
the state after a reset is different. Both are bounded (`bounds.Limits`); past them the route
reports the failure. Infrastructure failures never come here (routing sends them to the report).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

import prompts
from graph.coder import gitstate
from graph.conventions import standards_for
from graph.deps import Deps
from graph.nodes import bounds
from graph.nodes.planner import PlanProposal, code_context, injected_files, propose, task_text, validate
from graph.schemas import ChecklistItem, FileScope, Plan
from graph.state import TaskState


def merge(completed: list[ChecklistItem], scope: FileScope, remaining: Plan) -> Plan:
    """Completed items first (kept as they are), then the revised remaining items, renumbered."""
    items = [i.model_copy(update={"id": n}) for n, i in enumerate(completed, 1)]
    items += [i.model_copy(update={"id": n, "status": "open"}) for n, i in enumerate(remaining.items, len(items) + 1)]
    writable = list(dict.fromkeys([*scope.writable, *remaining.scope.writable]))
    context = [p for p in dict.fromkeys([*scope.context_only, *remaining.scope.context_only]) if p not in writable]
    return Plan(items=items, scope=FileScope(writable=writable, context_only=context))


def failed_step_context(state: TaskState) -> str:
    coder = state.get("coder", {})
    lines = [f"The session ended {coder.get('end', 'blocked')}: {coder.get('reason', '')}"]
    lines += [
        f"- {d['kind']}: {d.get('reason', '')} {d.get('evidence', '')}".rstrip()
        for d in state.get("plan_decisions", [])
        if d.get("kind") == "blocker"
    ]
    return "\n".join(lines)


async def adjust(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    plan = Plan.model_validate(state["plan"])
    completed = [i for i in plan.items if i.status == "done"]
    fragment = prompts.render(
        "planner_amend.adjust_plan",
        completed_plan_steps=[i.model_dump() for i in completed],
        failed_step_context=failed_step_context(state),
    )
    text = (
        task_text(state, runtime.context.settings.data_dir)
        + "\n\n"
        + prompts.boundary("plan", "planner", plan.model_dump_json(indent=1))
        + "\n\n"
        + fragment
    )
    update = await _ask(state, runtime, text)
    if update.get("plan"):
        remaining = Plan.model_validate(update["plan"])
        merged = merge(completed, plan.scope, remaining)
        problems = validate(PlanProposal(plan=merged, new_files=update.get("new_files", [])), state)
        update.update({"plan": merged.model_dump(), "plan_feedback": problems})
    if update.get("plan_feedback"):  # keep the completed items in state; the route reports the failure
        why = "; ".join(update["plan_feedback"])
        update.update(plan=state["plan"], failure="the amended plan was rejected: " + why)
    return {**update, "fix_context": "", **bounds.spend(state, "amend")}


async def reset(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    await asyncio.to_thread(gitstate.reset_to, Path(state["workspace"]), state["base"])
    fragment = prompts.render(
        "planner_amend.full_reset", reason=failed_step_context(state), criteria=state.get("criteria", [])
    )
    update = await _ask(state, runtime, task_text(state, runtime.context.settings.data_dir) + "\n\n" + fragment)
    if update.get("plan_feedback"):
        update["failure"] = "the plan after a full reset was rejected: " + "; ".join(update["plan_feedback"])
    return {**update, "fix_context": "", **bounds.spend(state, "restart")}


async def _ask(state: TaskState, runtime: Runtime[Deps], text: str) -> dict[str, Any]:
    """One amend call, with the applied diff and the surrounding code fitted by the context engine."""
    system = prompts.render("planner_amend.system", forge_terms=prompts.terms(state["forge"]))
    system = "\n\n".join(filter(None, [system, standards_for(state), injected_files(state)]))
    context, record = code_context(state, runtime.context.settings, text, "planner_amend")
    message = HumanMessage(f"{text}\n\n{context}".strip())
    update = await propose(state, runtime, [SystemMessage(system), message], role="planner_amend")
    return {**update, **record}


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    """ADJUST_PLAN while amendments are left, then FULL_RESET while restarts are left, then stop."""
    budget = runtime.context.settings.llm.task_token_budget
    if bounds.tokens_left(state, budget) <= 0:
        return {"failure": f"the task token budget ({budget}) is spent: " + failed_step_context(state)}
    if bounds.left(state, "amend"):
        return await adjust(state, runtime)
    if bounds.left(state, "restart"):
        return await reset(state, runtime)
    return {"plan_feedback": [], "failure": "the plan could not be amended further: " + failed_step_context(state)}
