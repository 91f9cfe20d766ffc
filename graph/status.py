"""The status comment: one comment per task, edited in place as the task moves through its phases.

The job acknowledges a task (`acknowledge`: a reaction on the trigger, then the status comment) and
writes its final state (`conclude`); between the two, `with_status` wraps every node of the graph
and edits the comment when the node starts a new phase — once per phase change, never per tool
call. The comment carries the hidden marker `Marker(task=..., purpose="status")`, so a retried job
edits the comment it already posted instead of posting a second one.

It lives in `graph` rather than `bot` because the node wrapper and the body (the footer, the plan's
checklist) are graph matters; the job only calls its two entry points.

Every write here is best effort: a forge that refuses the status comment is logged, and the task
carries on — a status failure is never a task failure.
"""

from __future__ import annotations

import logging
from typing import Any

from langgraph.runtime import Runtime

from foundation.forge import ChangeRef, CommentRef, Forge, IssueRef, Marker, RepoRef, where_task_speaks
from foundation.forge.models import Reaction
from graph.deps import Deps
from graph.failure import TaskFailure
from graph.nodes.publisher import footer
from graph.protections import note
from graph.runtime.boundaries import NodeFn
from graph.schemas import GateResult
from graph.state import PlanDump, TaskState

log = logging.getLogger(__name__)

PURPOSE = "status"

# node → the phase a user reads; nodes absent here (routers' helpers, index sync) keep the current phase
PHASES: dict[str, str] = {
    "decomposer": "understanding the issue",
    "analyzer": "investigating",
    "ask": "waiting for answers",  # need_info (the interrupt) re-runs on resume: it keeps this phase
    "planner": "planning",
    "planner_refine": "planning",
    "architect": "planning",
    "planner_amend": "planning",
    "coder": "implementing",
    "gates": "running checks",
    "review_intake": "reading the change",
    "reviewer": "reviewing",
    "implement_reviewer": "reviewing",
    "publisher": "publishing",
    "delivery": "publishing",
    "review_publisher": "publishing",
    "report_failure": "publishing",
}

# the task's final state by how it ended (the graph's `outcome`, or the job's verdict)
FINAL: dict[str, str] = {
    "need_info": "waiting for answers",
    "failed": "failed",
    "cancelled": "cancelled",
    "stopped": "stopped: a limit was reached",
}


def marker(task_id: str) -> Marker:
    return Marker(task=task_id, purpose=PURPOSE)


def target_of(state: TaskState) -> IssueRef | ChangeRef:
    """Where the status comment lives: the change for a review, the issue otherwise."""
    return where_task_speaks(RepoRef.model_validate(state["repo"]), state["number"], mode=state.get("mode", ""))


def phase_of(node: str, state: TaskState) -> str | None:
    """The phase `node` starts, with the checklist position for the coder; None keeps the current one."""
    phase = PHASES.get(node)
    if phase == "implementing":
        items = state.get("plan", {}).get("items", [])
        closed = sum(1 for item in items if item.get("status") != "open")
        if items:
            return f"implementing: item {min(closed + 1, len(items))} of {len(items)}"
    return phase


def checklist(state: TaskState) -> list[str]:
    """The plan's items as a task list (empty before a plan exists)."""
    lines = []
    for item in state.get("plan", {}).get("items", []):
        mark = {"done": "x", "dropped": "-"}.get(item.get("status", "open"), " ")
        title = str(item.get("title", "")).replace("\n", " ")
        lines.append(f"- [{mark}] {item.get('id', '?')}. {title}" if mark != "-" else f"- ~~{title}~~ (dropped)")
    return lines


def render(state: TaskState, phase: str, *, final: bool = False, failure: TaskFailure | None = None) -> str:
    """The status comment's body: the phase (or final state), why it failed, the checklist, the footer."""
    head = f"**Status: {phase}**" if final else f"**Working on it: {phase}**"
    parts = [head]
    if failure is not None:
        parts.append(failure.for_author())
    items = checklist(state)
    if items:
        parts.append("\n".join(items))
    chosen = state.get("profile", {}).get("line")
    if chosen:
        parts.append(f"Profile: {chosen}")
    sandbox = note([GateResult.model_validate(g) for g in state.get("gates", [])])
    if sandbox:
        parts.append("\n".join(sandbox))
    page = state.get("console_url", "")
    parts.append(f"<sub>{footer(state)}" + (f" · [task page]({page})" if page else "") + "</sub>")
    return "\n\n".join(parts)


async def write(forge: Forge, state: TaskState, phase: str, *, final: bool = False,
                failure: TaskFailure | None = None) -> CommentRef | None:
    """Post or edit (through the marker) the status comment; a forge failure is logged, not raised."""
    body = render(state, phase, final=final, failure=failure)
    try:
        return await forge.post_comment(target_of(state), body, marker(state["task_id"]))
    except Exception as exc:  # one line: the forge's outage is the task's story, told by its own record
        log.warning("status comment not written task=%s phase=%s: %s", state.get("task_id"), phase,
                    type(exc).__name__)
        return None


async def acknowledge(
    forge: Forge, state: TaskState, trigger: IssueRef | ChangeRef | CommentRef, phase: str = "started"
) -> int:
    """React to the trigger, then post (or edit) the status comment; its id, 0 when it was not written."""
    try:
        await forge.add_reaction(trigger, Reaction.EYES)
    except Exception as exc:
        log.warning("reaction not added task=%s: %s", state.get("task_id"), type(exc).__name__)
    ref = await write(forge, state, phase)
    return ref.id if ref is not None else 0


def final_phase(outcome: str) -> str:
    return FINAL.get(outcome, f"done ({outcome})" if outcome else "done")


async def conclude(forge: Forge, state: TaskState, outcome: str, failure: TaskFailure | None = None) -> None:
    """Write how the task ended into the status comment (done, failed, waiting, cancelled), and why it failed."""
    await write(forge, state, final_phase(outcome), final=True, failure=failure)


async def progress(forge: Forge, state: TaskState, plan: PlanDump, shown: str | None) -> str | None:
    """Inside the coder's session: when the next checklist item starts, edit the status; the phase shown.

    The coder works through the whole checklist in one node, so its node boundary alone would show
    only the first item; the session calls this as each item starts.
    """
    current: TaskState = {**state, "plan": plan}
    phase = phase_of("coder", current)
    if not state.get("status_comment_id") or phase is None or phase == shown:
        return shown
    await write(forge, current, phase)
    return phase


def with_status(name: str, run: NodeFn) -> NodeFn:
    """Wrap a node: when it starts a new phase of a task that has a status comment, edit the comment.

    The phase last written is kept in the state (`status_phase`), so a node that does not change the
    phase writes nothing, and a resumed or retried run does not repeat an edit it already made.
    """

    async def node(state: TaskState, *, runtime: Runtime[Deps]) -> dict[str, Any]:
        phase = phase_of(name, state)
        if not state.get("status_comment_id") or phase is None or phase == state.get("status_phase"):
            return await run(state, runtime=runtime)
        await write(runtime.context.forge, state, phase)
        update = await run(state, runtime=runtime)
        # a node that moved the status on by itself (the coder's items) says where it left it
        return {"status_phase": phase, **update} if isinstance(update, dict) else update

    node.__name__ = getattr(run, "__name__", name)
    node.__doc__ = run.__doc__
    return node
