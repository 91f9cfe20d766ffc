"""The task's repository: a read-only checkout of the default branch and its code index.

The analyzer reads the repository through tools; this prepares what they read. The checkout is a
worktree of the bot's mirror (`bot.workspace`, with the forge's git credentials) at the tip of the
default branch; the index is a private copy of the base index of that commit (`taskindex`), built
without the vector leg (no model download at run time), so full-text search and the code graph
work. `.forgebot.yml` is read from the default branch, never from a change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bot.forge import Forge, RepoRef
from bot.settings import Settings
from bot.workspace import Workspaces, repo_key
from graph.index.taskindex import build_base, copy_for_task, task_index_path
from graph.repoconfig import load_repo_config

# how a job gets its checkout: `prepare` in production; tests pass one over a local repository
Checkout = Callable[[Settings, Forge, RepoRef, str], Awaitable[dict[str, Any]]]


async def prepare(settings: Settings, forge: Forge, repo: RepoRef, task_id: str) -> dict[str, Any]:
    """Mirror, check out and index `repo` for `task_id`; the state keys the analyzer reads."""
    if not repo.clone_url:
        raise ValueError(f"repository {repo.path} has no clone URL")
    workspaces = Workspaces.for_settings(settings)
    key = repo_key(repo.forge, repo.project)
    await workspaces.mirror(key, repo.clone_url, await forge.git_credentials())
    branch = f"forgebot/read-{task_id}"
    root = await workspaces.worktree(key, task_id, branch, f"origin/{repo.default_branch}")
    return {**await asyncio.to_thread(index_checkout, settings.data_dir, key, root, task_id), "workspace": str(root)}


def index_checkout(data_dir: Path, key: str, root: Path, task_id: str) -> dict[str, Any]:
    """The task index of the checkout at `root` and the database `.forgebot.yml` names ("" if none)."""
    base = build_base(data_dir, key, root, embedder=None)
    index = copy_for_task(base, data_dir, task_id)
    config = load_repo_config(root, "HEAD")
    return {"index": str(index), "database": config.database or ""}


async def release(settings: Settings, repo: RepoRef, task_id: str) -> None:
    """Remove a finished task's worktree and index copy (a waiting task keeps both for its resume)."""
    await Workspaces.for_settings(settings).cleanup(repo_key(repo.forge, repo.project), task_id)
    task_index_path(settings.data_dir, task_id).unlink(missing_ok=True)
