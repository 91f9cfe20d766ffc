"""decomposer: issue title, body and discussion → numbered acceptance criteria, assumptions, or questions.

The first run snapshots the issue (members' text only, see `graph.discussion`) into the state; a
run after a need_info pause reads the snapshot from the checkpoint and adds the answers.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

import prompts
from foundation.forge import IssueRef, RepoRef
from graph.deps import Deps
from graph.discussion import WITHHELD_QUESTION, take_snapshot
from graph.runtime.roles import RoleRun
from graph.schemas import Decomposition
from graph.state import TaskState

UNCLEAR_QUESTION = "What should be true when this issue is done? Please describe the expected behaviour."


async def _snapshot(state: TaskState, deps: Deps) -> dict[str, Any]:
    """The issue text this task works from; taken once, at the task's first decomposer run."""
    if "discussion" in state:
        return {}
    if state["forge"] == "local":  # `forgebot run`: the text was typed by the person running it
        return {"discussion": [], "withheld": []}
    ref = IssueRef(repo=RepoRef.model_validate(state["repo"]), number=state["number"])
    names = [n for n in (deps.settings.github.bot_login,) if n]
    snapshot = await take_snapshot(deps.forge, ref, state["title"], state["body"], bot_names=names)
    return snapshot.state()


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    """Ask the decomposer model for criteria; questions instead of guesses when information lacks."""
    snapshot = await _snapshot(state, runtime.context)
    seen: dict[str, Any] = {**state, **snapshot}
    answers = seen.get("answers", [])
    rounds_left = state.get("question_rounds", 0) < runtime.context.settings.questions.max_rounds
    may_ask = rounds_left  # `forgebot run` asks too: `--answer` resumes it
    if not (seen["title"] or seen["body"] or seen.get("discussion") or answers):
        # nothing a member wrote: no model call, one question to a member
        return {**snapshot, "criteria": [], "assumptions": [], "questions": [WITHHELD_QUESTION], "may_ask": may_ask}
    role = RoleRun.open("decomposer", state, runtime.context)
    messages = [
        SystemMessage(prompts.render("decomposer.system", forge_terms=prompts.terms(state["forge"]))),
        HumanMessage(prompts.render("decomposer.task", title=seen["title"], body=seen["body"],
                                    discussion=seen.get("discussion", []), answers=answers)),
    ]
    answer = await role.ask(Decomposition, messages)
    # a "question" that asks nothing (a statement, a heading) would block the task on no question at all
    asked = [q.strip() for q in answer.questions if "?" in q]
    questions = asked or ([] if answer.criteria else [UNCLEAR_QUESTION])
    return {
        **snapshot,
        "criteria": [c.model_dump() for c in answer.criteria],
        "assumptions": answer.assumptions,
        "questions": questions,
        "may_ask": may_ask,
        **role.update(),
    }
