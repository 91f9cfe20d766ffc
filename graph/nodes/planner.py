"""planner and planner_refine: criteria + analysis → a checklist; code rejects a bad plan first.

Before any model judges the plan, `plan_problems` rejects what code can decide: no plan although
there are criteria, criteria no item covers, empty steps (schema), and files in the write scope that
neither exist nor are declared new. Problems, like the architect's feedback, go to planner_refine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from pydantic import Field

import prompts
from foundation.settings import Settings
from graph.conventions import config_for, standards_for
from graph.deps import Deps
from graph.nodes import bounds
from graph.nodes.contracts import contracts_text
from graph.planning_context import budget_for, notes_part, planning_context
from graph.plantargets import check_targets
from graph.runtime.context import execution_part
from graph.runtime.injection import inject
from graph.runtime.roles import RoleRun
from graph.runtime.trace import Trace
from graph.schemas import AcceptanceCriterion, Answer, Plan, plan_problems
from graph.state import ScopeDump, TaskState
from graph.structured import StructuredOutputError
from project.embedding import embedder_for

MIN_CONTEXT_TOKENS = 64  # less cannot even name what was left out


class PlanProposal(Answer):
    """The planner's answer: the plan (None when it cannot plan) and the files it creates."""

    plan: Plan | None = None
    new_files: list[str] = Field(default_factory=list)


def task_text(state: TaskState, data_dir: Path) -> str:
    """Issue, criteria, analysis and override contracts, each inside its boundary."""
    criteria = "\n".join(f"{c['id']}. {c['text']}" for c in state.get("criteria", []))
    return "\n\n".join(
        [
            prompts.boundary("issue", "forge", f"{state.get('title', '')}\n\n{state.get('body', '')}"),
            prompts.boundary("criteria", "decomposer", criteria),
            prompts.boundary("analysis", "analyzer", json.dumps(state.get("analysis", {}), indent=1)),
            contracts_text(state, data_dir),
        ]
    )


def validate(proposal: PlanProposal, state: TaskState) -> list[str]:
    return _checked(proposal, state)[0]


def _checked(proposal: PlanProposal, state: TaskState) -> tuple[list[str], list[str]]:
    """(problems that send the plan back, warnings the architect sees) — all decided by code."""
    criteria = [AcceptanceCriterion.model_validate(c) for c in state.get("criteria", [])]
    root = Path(state["workspace"])
    problems = plan_problems(proposal.plan, criteria, root, proposal.new_files)
    if proposal.plan is None:
        return problems, []
    try:
        graph_symbols = not config_for(state).resolve_profile().search_only
    except ValueError:  # an unknown profile: the gates report it
        graph_symbols = False
    targets = check_targets(proposal.plan, root, state.get("index", ""), proposal.new_files, symbols=graph_symbols)
    return list(dict.fromkeys([*problems, *targets.blocking])), targets.warnings


async def propose(
    state: TaskState, runtime: Runtime[Deps], messages: list[BaseMessage], role: str = "planner"
) -> dict[str, Any]:
    """One planner call; a plan code rejects comes back as feedback, never reaches the architect."""
    run = RoleRun.open(role, state, runtime.context)
    try:
        proposal = await run.ask(PlanProposal, messages)
    except StructuredOutputError as exc:
        return {"plan": {}, "plan_feedback": [f"the plan did not validate: {exc}"], **run.update()}
    problems, warnings = _checked(proposal, state)
    if problems or proposal.plan is None:
        return {"plan": {}, "plan_feedback": problems or ["no plan"], **run.update()}
    return {"plan": proposal.plan.model_dump(), "new_files": proposal.new_files, "plan_feedback": [],
            "plan_warnings": warnings, **run.update()}


def _system(state: TaskState) -> SystemMessage:
    rendered = prompts.render("planner.system", forge_terms=prompts.terms(state["forge"]))
    return SystemMessage("\n\n".join(filter(None, [rendered, standards_for(state), injected_files(state)])))


def injected_files(state: TaskState) -> str:
    """Live injection for the planner roles: one snapshot from disk per node invoke, with
    the tool loops' tiers and limits — the files the analysis names and the scope of the plan so far."""
    none: ScopeDump = {"writable": [], "context_only": []}
    scope = state.get("scope", none)
    plan = state.get("plan")
    plan_scope = plan.get("scope", none) if plan else none
    analysis = state.get("analysis")
    targets = [*(analysis.get("affected_files", []) if analysis else []), *scope.get("writable", []),
               *plan_scope.get("writable", []), *scope.get("context_only", []), *plan_scope.get("context_only", [])]
    return inject(Path(state["workspace"]), [t for t in targets if isinstance(t, str)]).render()


def code_context(state: TaskState, settings: Settings, fixed_text: str, role: str, *,
                 execution: str = "", with_diff: bool = True, budget: int | None = None) -> tuple[str, dict[str, Any]]:
    """The code around the analysis, fitted by the context engine; the text and the state update
    recording its tokens for `role`. Tier 1: the investigation notes, `execution` output (checks'
    stdout/stderr, cut to its tail) and the task's diff; then graph signatures; then search hits.
    `budget` (tokens) replaces the default share of the window when the role has measured its room;
    below `MIN_CONTEXT_TOKENS` there is no room for context at all."""
    analysis = state.get("analysis", {})
    query = " ".join(c["text"] for c in state.get("criteria", []))
    budget = budget_for(settings.llm.context_window_tokens, fixed_text) if budget is None else budget
    if budget < MIN_CONTEXT_TOKENS:
        return "", {"context_tokens": {role: {"tokens": 0, "budget": max(0, budget), "by_kind": {}, "omitted": 0}}}
    first = notes_part(state.get("notes", {}))
    if execution:
        first.append(execution_part("gates and review", execution, budget // 2))
    assembled = planning_context(
        Path(state["workspace"]),
        state.get("index", ""),
        state.get("base", "") if with_diff else "",
        list(analysis.get("symbols", [])),
        query,
        budget,
        embedder_for(settings.embedder),
        first=first, role=role,
        trace=Trace.open(settings.data_dir, state["task_id"]) if state.get("task_id") else None,
    )
    record = {
        "tokens": assembled.tokens,
        "budget": assembled.budget,
        "by_kind": assembled.tokens_by_kind(),
        "omitted": len(assembled.omitted),
    }
    return assembled.text, {"context_tokens": {role: record}}  # TaskState merges it by role


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    """The first plan."""
    text = task_text(state, runtime.context.settings.data_dir)
    context, record = code_context(state, runtime.context.settings, text, "planner")
    update = await propose(state, runtime, [_system(state), HumanMessage(f"{text}\n\n{context}".strip())])
    return {**update, **record}


async def refine(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    """A new plan answering the feedback of code or the architect; counts one architect round."""
    feedback = "\n".join(f"- {f}" for f in state.get("plan_feedback", []))
    previous = json.dumps(state.get("plan") or {}, indent=1)
    text = (
        task_text(state, runtime.context.settings.data_dir)
        + "\n\n"
        + "\n\n".join(
            [
                prompts.boundary("plan", "planner", previous),
                prompts.boundary("feedback", "architect", feedback),
                "The plan above was rejected for the reasons in <feedback>. Answer with a corrected plan.",
            ]
        )
    )
    context, record = code_context(state, runtime.context.settings, text, "planner_refine")
    update = await propose(state, runtime, [_system(state), HumanMessage(f"{text}\n\n{context}".strip())])
    return {**update, **record, **bounds.spend(state, "architect")}
