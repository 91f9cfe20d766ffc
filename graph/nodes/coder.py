"""coder: one session per task executing the checklist with the runtime's tool loop.

The session (its call budget, guard and ledger) lives for the whole checklist; its *history* lives
for one item. When `complete_item` closes an item, the loop ends and the next call starts from the
progress summary the checklist assembles by code — the closed item's tool history is gone, its files
are injected again from disk before every call. The session ends `finished` (finish accepted),
`looping` (the same complete_item failure on an unchanged diff, or the guard's verdict), `blocked`
(a plan blocker, the budget, or the model stopping with items open) or `infrastructure`.

The session's journal keeps the checklist and the task text the session began with (`Resumable`):
a worker that resumes the node after the first one died goes on from the same checklist and sends
the same first message the first worker would have, not one built from the worktree it left.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime

import prompts
from foundation.gitrunner import GitError
from foundation.settings import Settings
from foundation.signing import Committer
from graph import status
from graph.coder import patch as patching
from graph.coder.checklist import Checklist
from graph.coder.tools import FINISH_TOOLS, coder_tools
from graph.conventions import standards_for
from graph.deps import Deps
from graph.nodes import gates
from graph.nodes.planner import code_context, task_text
from graph.runtime.budget import call_budget
from graph.runtime.guard import Cause
from graph.runtime.loop import LoopResult
from graph.runtime.roles import RoleRun
from graph.schemas import Plan
from graph.state import CoderRecord, PlanDump, TaskState, dump
from graph.tools import tools_for
from graph.tools.code import graph_tools, search_tools
from project.embedding import embedder_for
from project.index.db import Connection, connect
from project.index.embed import Embedder
from project.index.taskindex import sync_task, task_index_path


def checklist_for(state: TaskState, settings: Settings, *, step_commits: bool = True
                  ) -> tuple[Checklist, patching.PatchPolicy]:
    """The session's checklist, with lint from the profile and the repository's path protection."""
    root = Path(state["workspace"])
    config = gates.repo_config(state)
    context = gates.check_context(state, settings, [])

    def lint(files: Any) -> list[str]:
        return gates.lint_problems(context.model_copy(update={"changed_files": tuple(files)}))

    defaults = patching.protection(config.protected_paths, config.allow_protected)

    def protected(path: str) -> bool:
        return defaults(path) or config.is_protected(path)

    workspace = settings.workspace
    identity = Committer(*workspace.author(state.get("forge", "")), workspace.signing_key)  # delivery's "own"
    checklist = Checklist(root=root, plan=Plan.model_validate(state["plan"]), base=state.get("base", "HEAD"),
                          lint=lint, step_commits=step_commits, protected=protected, author=identity,
                          subject=lambda title: config.commit_subject(title, state["number"]))
    policy = patching.PatchPolicy(writable=checklist.writable, protected=protected)
    return checklist, policy


def _index(state: TaskState, data_dir: Path) -> Connection | None:
    """The task's code index, read-only, when it has one (search then covers meaning and the graph)."""
    path = task_index_path(data_dir, state["task_id"])
    return connect(path, readonly=True) if path.is_file() else None


def _ends(checklist: Checklist, result: LoopResult) -> bool:
    """Map a loop result onto the checklist's end; True when the session is over."""
    if checklist.end:
        return True
    if result.outcome == "finished" and result.final is not None and result.final.tool_calls:
        return False  # complete_item closed an item: continue from the progress summary
    if result.verdict is not None and result.verdict.cause == Cause.INFRASTRUCTURE:
        # the machinery failed (git, disk, the index): no plan amendment can fix that
        checklist.end, checklist.end_reason = "infrastructure", result.reason
    elif result.outcome == "looping":
        checklist.end, checklist.end_reason = "looping", result.reason
    else:
        checklist.end = "blocked"
        checklist.end_reason = f"{result.outcome}: {result.reason}; open items remain"
    return True


@dataclass
class Resumable:
    """What the coder's session journal keeps besides the loop's state: the checklist and the intro."""

    checklist: Checklist
    intro: str  # the task text and code context the session began with

    def snapshot(self) -> dict[str, Any]:
        return {"checklist": self.checklist.snapshot(), "intro": self.intro}

    def restore(self, doc: dict[str, Any]) -> None:
        self.checklist.restore(doc["checklist"])
        self.intro = str(doc["intro"])


def _session(state: TaskState, runtime: Runtime[Deps], kept: Resumable) -> RoleRun:
    """One session for the whole checklist: its budget follows the open items, tokens the task's budget."""
    system = prompts.render("coder.system", forge_terms=prompts.terms(state["forge"]))
    system += "\n\n" + standards_for(state)
    checklist = kept.checklist
    role = RoleRun.open("coder", state, runtime.context)
    role.session(
        root=checklist.root, system=lambda: system + "\n\n" + checklist.progress(), targets=checklist.targets,
        max_calls=call_budget(runtime.context.settings.llm, "coder", open_items=len(checklist.plan.open_items)),
        finish_tools=FINISH_TOOLS, kept=kept,
    )
    return role


def _syncer(state: TaskState, settings: Settings, embedder: Embedder | None) -> Callable[[list[str]], None] | None:
    """After each accepted patch, the task index learns the patched files (graph, search, vectors)."""
    index = task_index_path(settings.data_dir, state["task_id"])
    if not index.is_file():
        return None

    def sync(paths: list[str]) -> None:
        sync_task(index, Path(state["workspace"]), embedder=embedder, changed_paths=paths)

    return sync


def _read_tools(root: Path, conn: Connection | None, embedder: Embedder | None) -> dict[str, BaseTool]:
    read: dict[str, BaseTool] = search_tools(root, conn, embedder)
    if conn is not None:
        read.update(graph_tools(root, conn))
    return read


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    """Run the checklist; each closed item restarts the history from the system message's progress."""
    settings = runtime.context.settings
    checklist, policy = checklist_for(state, settings)
    conn = _index(state, settings.data_dir)
    embedder = embedder_for(settings.embedder)
    read = _read_tools(checklist.root, conn, embedder)
    tools = tools_for("coder", coder_tools(checklist, policy, read, _syncer(state, settings, embedder)))
    intro = task_text(state, settings.data_dir)
    # the context engine: notes, the failed checks' output (budgeted), the diff so far, graph, search
    context, record = code_context(state, settings, intro, "coder", execution=state.get("fix_context", ""))
    kept = Resumable(checklist, f"{intro}\n\n{context}".strip())
    role = _session(state, runtime, kept)
    shown = status.phase_of("coder", state)  # what the status comment shows as the session starts
    try:
        while True:
            item = checklist.current()
            shown = await status.progress(runtime.context.forge, state, dump(checklist.plan, PlanDump), shown)
            step = f"Work on item {item.id}. {item.title}" if item else "No item is open: call `finish`."
            messages = [HumanMessage(kept.intro + "\n\n" + step)]  # the journal's intro once restored
            result = await role.loop(tools, messages)
            if _ends(checklist, result):
                break
    except (GitError, OSError) as exc:
        checklist.end, checklist.end_reason = "infrastructure", f"{type(exc).__name__}: {exc}"
    finally:
        if conn is not None:
            conn.close()
    update = role.update()
    update.update({
        **record,
        "plan": checklist.plan.model_dump(),
        "plan_decisions": checklist.decisions,
        "coder": CoderRecord(end=checklist.end, reason=checklist.end_reason, commits=checklist.commits,
                             reports={str(k): v for k, v in checklist.reports.items()}),
    })
    if state.get("status_comment_id") and shown:
        update["status_phase"] = shown
    return update
