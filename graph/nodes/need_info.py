"""need_info: pause the task until someone answers the questions `ask` posted.

`interrupt` saves the checkpoint and ends the run; the job returns and holds no worker. A reply
resumes the same thread with `Command(resume={"author": ..., "body": ...})`; this node then runs
again from its start (which is why it writes nothing), returns the answer, and the decomposer and
the analyzer read it with the issue. Authorizing the reply is the intake's job, before resuming.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from graph.deps import Deps
from graph.state import TaskState


class BadAnswer(ValueError):
    """The resume value is not an answer (an author and a non-empty body)."""


def parse_answer(value: object) -> dict[str, str]:
    if not isinstance(value, dict) or not isinstance(value.get("body"), str) or not value["body"].strip():
        raise BadAnswer("resume with {'author': str, 'body': non-empty str}")
    return {"author": str(value.get("author", "")), "body": value["body"].strip()}


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    """Wait for the answer; on resume, hand it to the decomposer with the questions it answers."""
    value = interrupt({"questions": state.get("questions", []), "round": state.get("question_rounds", 0),
                       "comment_id": state.get("questions_comment_id", 0)})
    answer = parse_answer(value)
    return {"answers": [{**answer, "questions": state.get("questions", [])}], "outcome": "resumed"}
