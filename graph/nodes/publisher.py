"""publisher: the analysis report (or a blocked report with questions) posted on the issue."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

import prompts
from bot.forge import IssueRef, RepoRef
from graph.deps import Deps
from graph.state import TaskState


def footer(state: TaskState) -> str:
    """Every comment ends with task id, mode, models, tokens and duration."""
    seconds = time.time() - state.get("started_at", time.time())
    models = ", ".join(dict.fromkeys(state.get("models", []))) or "none"
    return (
        f"forgebot · task {state['task_id']} · mode {state['mode']} · model {models} · "
        f"{state.get('tokens', 0)} tokens · {seconds:.0f}s"
    )


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    """Render the report and post it as one comment on the issue."""
    blocked = not state.get("criteria")
    body = prompts.render(
        "publisher.report",
        analysis=state.get("analysis", {}),
        criteria=state.get("criteria", []),
        assumptions=state.get("assumptions", []),
        questions=state.get("questions", []),
        blocked=blocked,
        footer=footer(state),
    )
    ref = IssueRef(repo=RepoRef.model_validate(state["repo"]), number=state["number"])
    comment = await runtime.context.forge.post_comment(ref, body)
    return {"report_comment_id": comment.id, "outcome": "blocked" if blocked else "reported"}
