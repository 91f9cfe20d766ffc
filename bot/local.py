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
from bot.forge import Change, ChangeRef, FileChange, Issue, IssueRef, RepoRef
from bot.forge._text import parse_hunks
from bot.forge.memory import MemoryForge
from bot.forge.models import FileStatus
from bot.gitrunner import GitError, git
from bot.jobs import ModelFactory
from bot.settings import Settings
from graph.builder import build_graph
from graph.checkout import index_checkout
from graph.coder.gitstate import head
from graph.deps import Deps
from graph.llm import chat_model
from graph.reviewdiff import FileDiff, split_files
from graph.routing import check_mode
from graph.state import TaskState


class LocalRunError(ValueError):
    """The checkout cannot serve the requested local run (no branch to review, no base)."""


def _git(root: Path, *args: str) -> str:
    try:
        return git(root, *args)
    except GitError as exc:
        raise LocalRunError(str(exc)) from exc


def _file_change(part: FileDiff) -> FileChange:
    """One file of the diff, its status read from the git headers, its hunks parsed as the forges do."""
    header = part.text.split("\n@@", 1)[0]
    status: FileStatus = "modified"
    if "\nnew file mode" in header:
        status = "added"
    elif "\ndeleted file mode" in header:
        status = "deleted"
    elif part.old_path != part.path:
        status = "renamed"
    hunks_at = part.text.find("\n@@")
    hunks = parse_hunks(part.text[hunks_at + 1 :]) if hunks_at >= 0 else ()
    return FileChange(old_path=part.old_path, new_path=part.path, status=status, hunks=hunks)


def local_change(ref: ChangeRef, root: Path, title: str, body: str, base: str | None) -> Change:
    """The checked-out branch as a change against `base` (default: main, else master)."""
    head_branch = _git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    if head_branch == "HEAD":
        raise LocalRunError("review needs a checked-out branch, not a detached HEAD")
    if base is None:
        known = set(_git(root, "for-each-ref", "--format=%(refname:short)", "refs/heads").split())
        base = next((b for b in ("main", "master") if b in known and b != head_branch), None)
        if base is None:
            raise LocalRunError("no base branch: pass --base")
    start = _git(root, "rev-parse", base).strip()
    merge_base = _git(root, "merge-base", base, "HEAD").strip()
    return Change(
        ref=ref,
        title=title,
        body=body,
        author="local",
        source_branch=head_branch,
        target_branch=base,
        base_sha=merge_base,
        head_sha=_git(root, "rev-parse", "HEAD").strip(),
        start_sha=start,
        state="opened",
        files=tuple(
            _file_change(f) for f in split_files(_git(root, "diff", "-M", "--no-color", f"{merge_base}..HEAD"))
        ),
    )


@dataclass(frozen=True)
class LocalResult:
    task_id: str
    state: dict[str, Any]
    comments: list[str]


def _title_and_body(task: str) -> tuple[str, str]:
    first, _, rest = task.strip().partition("\n")
    return first.strip()[:200], rest.strip() or first.strip()


async def run_local(
    settings: Settings,
    repo: Path,
    mode: Mode,
    task: str,
    model_factory: ModelFactory | None = None,
    base: str | None = None,
) -> LocalResult:
    """Run one task on the checkout at `repo` and return the final state and the bot's comments.

    Review mode reviews the checked-out branch against `base` as if it were a change; the
    repository is mirrored from the local path (git's `file` transport, allowed for this run only).
    """
    check_mode(mode)
    root = repo.resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"no such checkout: {repo}")
    title, body = _title_and_body(task)
    repo_ref = RepoRef(
        forge="local",
        project=f"{root.name}-{hashlib.sha256(str(root).encode()).hexdigest()[:8]}",
        path=root.name,
        clone_url=str(root),
    )
    ref = IssueRef(repo=repo_ref, number=1)
    forge = MemoryForge(kind="local")
    forge.issues[ref] = Issue(ref=ref, title=title, body=body)
    targets: list[IssueRef | ChangeRef] = [ref]
    if mode == "review":
        change = ChangeRef(repo=repo_ref, number=1)
        forge.changes[change] = local_change(change, root, title, body, base)
        targets.append(change)
        workspace = settings.workspace.model_copy(
            update={"allowed_protocols": (*settings.workspace.allowed_protocols, "file")}
        )
        settings = settings.model_copy(update={"workspace": workspace})
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
    if (root / ".git").exists():  # the code graph and search for the analyzer; without git, file tools only
        state.update(index_checkout(settings.data_dir, f"local-{task_id}", root, task_id))  # type: ignore[typeddict-item]
    async with AsyncSqliteSaver.from_conn_string(str(settings.checkpoint_path)) as saver:
        compiled = build_graph().compile(checkpointer=saver)
        config: RunnableConfig = {"configurable": {"thread_id": f"local-{task_id}"}}
        result = await compiled.ainvoke(state, config, context=Deps(settings=settings, forge=forge, model_for=models))
    comments = [c.body for target in targets for c in await forge.list_comments(target)]
    return LocalResult(task_id=task_id, state=cast(dict[str, Any], result), comments=comments)
