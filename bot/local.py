"""`forgebot run`: one task on a local checkout, no forge needed.

The graph runs exactly as in the worker; an in-memory forge stands in for the forge and keeps what
the bot would have written, so the report can be printed and evaluation can read it.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from bot.events import Mode
from bot.forge import Issue, IssueRef, RepoRef
from bot.forge.memory import MemoryForge
from bot.jobs import ModelFactory
from bot.settings import Settings
from graph.builder import build_graph
from graph.coder.gitstate import head
from graph.deps import Deps
from graph.llm import chat_model
from graph.routing import check_mode
from graph.state import TaskState


@dataclass(frozen=True)
class LocalResult:
    task_id: str
    state: dict[str, Any]
    comments: list[str]


def _title_and_body(task: str) -> tuple[str, str]:
    first, _, rest = task.strip().partition("\n")
    return first.strip()[:200], rest.strip() or first.strip()


async def run_local(
    settings: Settings, repo: Path, mode: Mode, task: str, model_factory: ModelFactory | None = None
) -> LocalResult:
    """Run one task on the checkout at `repo` and return the final state and the bot's comments."""
    check_mode(mode)
    root = repo.resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"no such checkout: {repo}")
    title, body = _title_and_body(task)
    ref = IssueRef(repo=RepoRef(forge="local", project=str(root), path=root.name), number=1)
    forge = MemoryForge(kind="local")
    forge.issues[ref] = Issue(ref=ref, title=title, body=body)
    models = model_factory or (lambda role: chat_model(settings.llm, role))
    task_id = hashlib.sha256(f"{root}\0{mode}\0{task}\0{time.time_ns()}".encode()).hexdigest()[:16]
    state = TaskState(
        task_id=task_id,
        mode=mode,
        forge="local",
        repo=ref.repo.model_dump(),
        number=1,
        title=title,
        body=body,
        workspace=str(root),
        started_at=time.time(),
        tokens=0,
        models=[],
    )
    if mode == "implement":  # the route diffs, gates and reviews from the checkout's current commit
        state["base"] = head(root)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(settings.checkpoint_path)) as saver:
        compiled = build_graph().compile(checkpointer=saver)
        config: RunnableConfig = {"configurable": {"thread_id": f"local-{task_id}"}}
        result = await compiled.ainvoke(state, config, context=Deps(settings=settings, forge=forge, model_for=models))
    comments = [c.body for c in await forge.list_comments(ref)]
    return LocalResult(task_id=task_id, state=cast(dict[str, Any], result), comments=comments)
