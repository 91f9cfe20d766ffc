"""publisher: the analysis report (or a blocked report with questions) posted on the issue.

Report format (docs/analyze.md): acceptance criteria, affected files and symbols with `path:line`
evidence, impact, risks, open questions; a blocked report lists numbered questions instead. Every
write carries a hidden marker with the task id, so a retried or resumed run edits its own comment
instead of posting a second one.
"""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

import prompts
from foundation.forge import IssueRef, Marker, RepoRef
from graph.deps import Deps
from graph.state import TaskState


def footer(state: TaskState) -> str:
    """Every comment ends with task id, mode, models, tokens, cost and duration.

    Tokens and cost are the task's `usage`: the sum of every role's ledger (the state key's reducer
    adds them), each call priced by `LLMSettings.prices`; models without a price are named, so a
    cost that leaves some out says so.
    """
    seconds = time.time() - state.get("started_at", time.time())
    models = ", ".join(dict.fromkeys(state.get("models", []))) or state.get("configured_model") or "none"
    usage = state.get("usage", {})
    tokens = int(usage.get("tokens", state.get("tokens", 0)))
    cost = float(usage.get("cost_usd") or 0.0)
    unpriced = usage.get("unpriced") or []
    spent = f" · ${cost:.4f}" if cost else ""
    if unpriced:
        spent += f" · no price for {', '.join(unpriced)}"
    return (
        f"forgebot · task {state['task_id']} · mode {state['mode']} · model {models} · "
        f"{tokens} tokens{spent} · {seconds:.0f}s"
    )


def report_body(state: TaskState, *, wait_hours: float = 0) -> str:
    """The report for `state`: blocked (with its questions) when there are no criteria."""
    return prompts.render(
        "publisher.report",
        analysis=state.get("analysis", {}),
        criteria=state.get("criteria", []),
        assumptions=state.get("assumptions", []),
        questions=state.get("questions", []),
        blocked=not state.get("criteria"),
        footer=footer(state),
        mode=state["mode"],
        wait_hours=f"{wait_hours:g}" if wait_hours else 0,
        context_only=state.get("scope", {}).get("context_only", []),
        withheld=state.get("withheld", []),
        blocked_by=state.get("blocked_by", "author"),
        blocked_reason=state.get("blocked_reason", ""),
        criteria_source=state.get("criteria_source", "model"),
        forge_terms=prompts.terms(state["forge"]),
    )


def issue_of(state: TaskState) -> IssueRef:
    return IssueRef(repo=RepoRef.model_validate(state["repo"]), number=state["number"])


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    """Render the report and post it as one comment on the issue."""
    blocked = not state.get("criteria")
    marker = Marker(task=state["task_id"], purpose="report")
    comment = await runtime.context.forge.post_comment(issue_of(state), report_body(state), marker)
    return {"report_comment_id": comment.id, "outcome": "blocked" if blocked else "reported"}
