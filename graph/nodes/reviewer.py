"""reviewer: the unified reviewer of the review route and of the implement route's fix rounds.

One role checks requirements, architecture, security and tests (no separate post-code
architect). It reads the diff, investigates with read-only tools (files, search, code graph and
override contracts when an index is open) under an inspection budget, then answers a structured
`Review`. Code, not the model, guarantees that an inspection that ran out of budget
(or was stopped by the loop guard) is never an approval: the runtime's
`reviewer.inspection_budget_exhausted` fragment asks for the unverified criteria, and
`_not_approved` enforces it whatever the model answers.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime

import prompts
from foundation.settings import Settings
from graph.conventions import standards_for
from graph.deps import Deps
from graph.nodes.planner import code_context
from graph.reviewdiff import DiffLimits, DiffView, collect
from graph.runtime.budget import call_budget, estimate_tokens
from graph.runtime.roles import RoleRun
from graph.runtime.scratchpad import Memory
from graph.runtime.window import Window, WindowTooSmall, message_tokens, tool_tokens
from graph.schemas import GateResult, Review, final_verdict, settle_answer, settle_verdict
from graph.state import CriterionDump, TaskState
from graph.structured import StructuredOutputError
from graph.tools import tools_for
from graph.tools.code import graph_tools, search_tools
from graph.tools.files import file_tools
from project.embedding import embedder_for
from project.index.db import Connection, connect
from project.index.embed import Embedder

# A review always checks something: with no stated criteria, the change is checked for this one.
GENERAL_CRITERION: CriterionDump = {
    "id": 1, "text": "The change introduces no defect, security problem or architecture violation"}
STOPPED = frozenset({"budget_exhausted", "tokens_exhausted", "report", "looping"})


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    """Review `git diff review_base..HEAD` of the workspace against the criteria.

    State read:
      workspace (str, required)    checkout whose HEAD is the code under review
      review_base (str, required)  revision to diff from: the change's base, the last reviewed
                                   head on a re-review, or the implement route's start commit
      criteria (list)              AcceptanceCriterion dumps; none → GENERAL_CRITERION
      title, forge                 for the prompt (forge vocabulary)
      review_limits (dict)         optional DiffLimits fields (max_file_lines, budget_tokens)
      review_open (list[str])      optional: findings still open from earlier rounds, one line each
      plan_decisions, gates        optional: the coder's decisions; gates for `final_verdict`
      index (str)                  optional: a code index for the search and code-graph tools
    State written:
      review        Review dump (verdict approve | request_changes | incomplete, findings, criteria)
      verdict       final_verdict(review, gates): an approval never replaces a failed mandatory gate
      review_scope  {"base", "head", "files": reviewed paths, "skipped": [[path, reason]]}
      sessions, usage, tokens, models, notes, read_ranges  (the runtime's `state_update`)
    """
    settings = runtime.context.settings
    root = Path(state["workspace"])
    criteria = state.get("criteria") or [GENERAL_CRITERION]
    ids = [int(c["id"]) for c in criteria]
    memory = Memory()
    role = RoleRun.open("reviewer", state, runtime.context)
    index = state.get("index")
    conn = connect(index, readonly=True) if index and Path(index).is_file() else None
    try:
        tools = _tools(root, conn, memory, embedder_for(settings.embedder))
        view, task, record = _fitted_task(state, settings, role.window, criteria, tools)
        role.session(root=root, system=lambda: _system(state), targets=lambda: view.paths, memory=memory,
                     max_calls=call_budget(settings.llm, "reviewer", criteria=len(criteria)))
        result = await role.loop(tools, [task])
    finally:
        if conn is not None:
            conn.close()
    try:
        review = await role.conclude(Review, system=_system(state), criteria=criteria, memory=memory, result=result,
                                     task=[task], settle=lambda data: settle_answer(data, ids))
    except StructuredOutputError as exc:  # no usable answer even after the repair turn: nothing is verified
        review = Review(verdict="incomplete", unverified_criteria=ids,
                        summary=f"The model gave no usable review ({exc.failure.reason}), so nothing was verified.")
    review = settle_verdict(review, ids)
    if result.outcome in STOPPED:
        review = _not_approved(review, criteria, result.reason)
    gates = [GateResult.model_validate(g) for g in state.get("gates", [])]
    return {
        **role.update(),
        **record,
        "review": review.model_dump(),
        "verdict": final_verdict(review, gates),
        "review_scope": {"base": view.base, "head": view.head, "files": view.paths,
                         "skipped": [list(s) for s in view.skipped]},
    }


def _fitted_task(state: TaskState, settings: Settings, window: Window, criteria: list[CriterionDump],
                 tools: list[BaseTool]) -> tuple[DiffView, HumanMessage, dict[str, Any]]:
    """The review's task message fitted to the model's window: the prompt, standards, tools and task
    text are fixed; the diff takes up to two thirds of the rest, the code context half of what is then
    left, and the tool loop fits the injected files and its history into the remainder."""
    root = Path(state["workspace"])
    limits = DiffLimits(**state.get("review_limits", {}))
    bare = _task(state, criteria, DiffView(base="", head=""))
    fixed = message_tokens([SystemMessage(_system(state)), HumanMessage(bare)]) + tool_tokens(tools)
    room = window.room(fixed)
    view = collect(root, state["review_base"], replace(limits, budget_tokens=min(limits.budget_tokens, room * 2 // 3)))
    if not view.files and any("diff budget" in reason for _, reason in view.skipped):
        whole = collect(root, state["review_base"], replace(limits, budget_tokens=10**9))
        smallest = min(estimate_tokens(f.text) for f in whole.files)
        raise WindowTooSmall("reviewer", window.needed(fixed + smallest * 3 // 2), window.tokens,
                             "input (its prompt, standards and tools with the smallest file of the diff)")
    text = _task(state, criteria, view)
    # the context engine: investigation notes and failed checks' output first, then graph and search
    # (the diff is already in the task, so it is not assembled twice)
    context, record = code_context(state, settings, text, "reviewer", execution=state.get("fix_context", ""),
                                   with_diff=False, budget=(room - estimate_tokens(view.text)) // 2)
    return view, HumanMessage(f"{text}\n\n{context}".strip()), record


def _system(state: TaskState) -> str:
    rendered = prompts.render("reviewer.system", forge_terms=prompts.terms(state.get("forge", "gitlab")))
    return rendered + "\n\n" + standards_for(state)


def _task(state: TaskState, criteria: list[CriterionDump], view: DiffView) -> str:
    terms = prompts.terms(state.get("forge", "gitlab"))
    decisions = [str(d.get("reason", d)) for d in state.get("plan_decisions", [])]
    return prompts.render(
        "reviewer.task", origin=terms["change"], title=state.get("title", ""), criteria=criteria,
        decisions=decisions, open_findings=state.get("review_open", []), skipped=view.skipped,
        base=view.base[:12], head=view.head[:12], diff=view.text or "(empty diff)",
    )


def _tools(root: Path, conn: Connection | None, memory: Memory, embedder: Embedder | None) -> list[BaseTool]:
    """Files always; search; the code graph and override contracts when the task has an index."""
    available: dict[str, BaseTool] = {**file_tools(root), **search_tools(root, conn, embedder)}
    if conn is not None:
        available.update(graph_tools(root, conn))
    available["write_scratchpad"] = memory.scratchpad.tool()
    return tools_for("reviewer", available)


def _not_approved(review: Review, criteria: list[CriterionDump], reason: str) -> Review:
    """An unfinished inspection: every criterion not shown verified is listed, and it never approves."""
    ids = [int(c["id"]) for c in criteria]
    verified = [i for i in review.verified_criteria if i in ids]
    unverified = sorted(set(review.unverified_criteria) | (set(ids) - set(verified)))
    # everything verified before the stop: the findings decide, but approval is still withheld
    verdict: Literal["request_changes", "incomplete"] = "incomplete" if unverified else "request_changes"
    summary = review.summary if "inspection stopped" in review.summary else (
        f"{review.summary}\n\nThe inspection stopped before it finished ({reason}).")
    return Review(verdict=verdict, summary=summary, findings=review.findings,
                  verified_criteria=[i for i in verified if i not in unverified], unverified_criteria=unverified)
