"""decomposer: issue title, body and discussion → numbered acceptance criteria, assumptions, or questions.

The first run snapshots the issue (members' text only, see `graph.discussion`) into the state; a
run after a need_info pause reads the snapshot from the checkpoint and adds the answers.

Criteria the issue states explicitly (list items under an "Acceptance criteria" heading, or a
checklist) are taken as written, without a model call: the author said what done means, and no
model may reword it or call the issue unclear. Otherwise the model decomposes. When it gives
neither criteria nor questions, or no usable answer even after its repair turn, the task is
blocked on the *model's* missing answer, and the report says so instead of asking the author.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

import prompts
from foundation.forge import IssueRef, RepoRef
from graph.deps import Deps
from graph.discussion import WITHHELD_QUESTION, take_snapshot
from graph.nodes.review_intake import list_items
from graph.runtime.roles import RoleRun
from graph.runtime.window import Window
from graph.schemas import Decomposition, settle_decomposition
from graph.state import TaskState
from graph.structured import StructuredOutputError


async def _snapshot(state: TaskState, deps: Deps) -> dict[str, Any]:
    """The issue text this task works from; taken once, at the task's first decomposer run."""
    if "discussion" in state:
        return {}
    if state["forge"] == "local":  # `forgebot run`: the text was typed by the person running it
        return {"discussion": [], "withheld": []}
    ref = IssueRef(repo=RepoRef.model_validate(state["repo"]), number=state["number"])
    room = Window.of(deps.settings.llm).prompt // 2  # the discussion's share: the roles' own text is the rest
    snapshot = await take_snapshot(deps.forge, ref, state["title"], state["body"], room)
    return snapshot.state()


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    """Criteria as the issue states them, else from the decomposer model; questions instead of guesses."""
    snapshot = await _snapshot(state, runtime.context)
    seen: dict[str, Any] = {**state, **snapshot}
    answers = seen.get("answers", [])
    rounds_left = state.get("question_rounds", 0) < runtime.context.settings.questions.max_rounds
    may_ask = rounds_left  # `forgebot run` asks too: `--answer` resumes it
    stated = list_items(seen["body"] or "")
    if stated:
        criteria = [{"id": i, "text": text} for i, text in enumerate(stated, 1)]
        return {**snapshot, "criteria": criteria, "criteria_source": "issue", "assumptions": [], "questions": [],
                "may_ask": may_ask}
    if not (seen["title"] or seen["body"] or seen.get("discussion") or answers):
        # nothing a member wrote: no model call, one question to a member
        return {**snapshot, "criteria": [], "assumptions": [], "questions": [WITHHELD_QUESTION], "may_ask": may_ask,
                "blocked_by": "author"}
    role = RoleRun.open("decomposer", state, runtime.context)
    messages = [
        SystemMessage(prompts.render("decomposer.system", forge_terms=prompts.terms(state["forge"]))),
        HumanMessage(prompts.render("decomposer.task", title=seen["title"], body=seen["body"],
                                    discussion=seen.get("discussion", []), answers=answers)),
    ]
    try:
        answer = await role.ask(Decomposition, messages, settle=settle_decomposition)
    except StructuredOutputError as exc:  # recorded in the trace as the model's invalid answer
        return {**snapshot, "criteria": [], "assumptions": [], "questions": [], "may_ask": may_ask,
                "blocked_by": "model", "blocked_reason": exc.failure.reason,
                **role.update()}
    # a "question" that asks nothing (a statement, a heading) would block the task on no question at all
    asked = [q.strip() for q in answer.questions if "?" in q]
    update: dict[str, Any] = {
        **snapshot,
        "criteria": [c.model_dump() for c in answer.criteria],
        "criteria_source": "model",
        "assumptions": answer.assumptions,
        "questions": asked,
        "may_ask": may_ask,
        **role.update(),
    }
    if not answer.criteria:
        update["blocked_by"] = "author" if asked else "model"
        if not asked:
            update["blocked_reason"] = "it answered with neither acceptance criteria nor questions"
            role.trace.event("empty_answer", role="decomposer", schema="Decomposition",
                             problem=update["blocked_reason"])
    return update
