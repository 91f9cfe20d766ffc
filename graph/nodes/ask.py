"""ask: post the decomposer's questions once, before the task pauses for an answer.

The forge write happens here and not in `need_info`: LangGraph runs an interrupted node again from
its start on resume, so a write before the interrupt would be repeated. This node finished before
the pause and is never replayed; its marker (task id and round) makes even a retried job edit the
same comment instead of posting twice. On GitLab the comment opens a discussion; on GitHub it is
an issue comment — a reply in either resumes the task.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from foundation.forge import Marker
from graph.deps import Deps
from graph.nodes.publisher import issue_of, report_body
from graph.state import TaskState


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    """Post the numbered questions (the blocked report, with how to answer) and mark the task waiting."""
    round_ = state.get("question_rounds", 0) + 1
    hours = runtime.context.settings.questions.wait_hours
    marker = Marker(task=state["task_id"], purpose=f"questions-{round_}")
    comment = await runtime.context.forge.post_comment(issue_of(state), report_body(state, wait_hours=hours), marker)
    return {"question_rounds": 1, "questions_comment_id": comment.id, "outcome": "need_info"}  # added up
