"""The task's repository: a read-only checkout of the default branch and its code index.

The analyzer reads the repository through tools; this prepares what they read. The checkout is a
worktree of the bot's mirror (`foundation.workspace`, with the forge's git credentials) at the tip of the
default branch; the index is a private copy of the base index of that commit (`taskindex`): code
graph and full-text search at once, the vector leg from a background build (`basevectors`) that the
task waits for only `embedder.wait_seconds`, then picks up whenever it ends. The index carries the
project memory (docs/memory.md): the base's documents and history, and the forge's merged changes and
closed issues read at this task's start (`graph.forge_memory`). `.forgebot.yml` is read from the
default branch, never from a change.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

from foundation.forge import Forge, RepoRef
from foundation.gitrunner import GitError
from foundation.settings import EmbedderSettings, Settings
from foundation.workspace import Workspaces, repo_key
from graph import forge_memory
from graph.runtime.phases import step
from graph.runtime.trace import Trace
from graph.state import ProfileNote, TaskState
from graph.tools.database import connection_for
from project.embedding import embedder_for
from project.index import basecomplete, basevectors
from project.index.embed import Embedder
from project.index.memory_history import MAX_COMMITS
from project.index.store import default_workers
from project.index.taskindex import build_base, copy_for_task, task_index_path
from project.profiles.detect import ProfileChoice
from project.repoconfig import load_repo_config

log = logging.getLogger(__name__)

# how a job gets its checkout: `prepare` in production; tests pass one over a local repository
Checkout = Callable[[Settings, Forge, RepoRef, str], Awaitable[TaskState]]


async def prepare(settings: Settings, forge: Forge, repo: RepoRef, task_id: str) -> TaskState:
    """Mirror, check out and index `repo` for `task_id`; the state keys the analyzer reads."""
    if not repo.clone_url:
        raise ValueError(f"repository {repo.path} has no clone URL")
    workspaces = Workspaces.for_settings(settings)
    key = repo_key(repo.forge, repo.project)
    async with step("mirror"):
        await workspaces.mirror(key, repo.clone_url, await forge.git_credentials())
    branch = f"forgebot/read-{task_id}"
    async with step("worktree"):
        root = await workspaces.worktree(key, task_id, branch, f"origin/{repo.default_branch}")
    return {**await index_with_memory(settings, forge, repo, key, root, task_id), "workspace": str(root)}


async def index_with_memory(
    settings: Settings, forge: Forge, repo: RepoRef, key: str, root: Path, task_id: str
) -> TaskState:
    """`index_checkout`, with the forge's new discussions read first and taken into the task index.

    Every task that gets an index comes through here (analyze and implement alike), so each task
    start is a memory sync: the base of a new commit, the merged changes and closed issues since.
    """
    store = forge_memory.store_path(settings.data_dir, repo)
    async with step("memory"):
        fetched = await forge_memory.fetch(forge, repo, store, limit=settings.memory.discussions_per_sync)
    async with step("index"):
        indexed = await asyncio.to_thread(index_checkout, settings.data_dir, key, root, task_id, settings.embedder,
                                          settings.memory.max_commits)
        if indexed["database"]:  # refused before any role runs: the failure comment says why
            connection_for(settings, repo, indexed["database"])
        try:
            await asyncio.to_thread(forge_memory.remember, store, Path(indexed["index"]), fetched)
        except Exception as exc:  # the boundary (a locked or broken store): the task goes on with the base's memory
            log.warning("project memory: discussions not taken into %s: %s", task_id, exc)
    return indexed


def index_checkout(
    data_dir: Path, key: str, root: Path, task_id: str, embedding: EmbedderSettings | None = None,
    memory_commits: int = MAX_COMMITS,
) -> TaskState:
    """The task index of the checkout at `root` and the database `.forgebot.yml` names ("" if none).

    The base's vectors are started in the background; the task waits for them at most
    `embedding.wait_seconds` (a small repository is done by then), so a large one starts at once.
    A large repository's task (with `embedding` given, as the service does) starts on the code graph
    alone: the full-text tables and the project memory follow in the background (`basecomplete`),
    waited for as long as the vectors, and the task's searches take them in when they are built.
    """
    defer = basecomplete.DEFER_FROM_FILES if embedding is not None else None
    base = build_base(data_dir, key, root, workers=default_workers(), memory_commits=memory_commits,
                      defer_from=defer, defer_commits=basecomplete.DEFER_FROM_COMMITS)
    index = copy_for_task(base, data_dir, task_id)
    embedder = embedder_for(embedding) if embedding is not None else None
    if basecomplete.is_graph_only(base) and embedding is not None:
        _rest_behind(base, root, embedder, embedding, memory_commits)
        basecomplete.adopt(index, root)  # at once when it was quick
        if embedder is not None:
            basevectors.state(index, embedder)
    elif embedder is not None and embedding is not None:
        basevectors.start(base, embedder).wait(embedding.wait_seconds)
        basevectors.state(index, embedder)  # adopt them now when they are there
    config = load_repo_config(root, "HEAD")
    return {"index": str(index), "database": config.database or "",
            "profile": profile_note(config.profile_choice(), data_dir, task_id)}


def profile_note(choice: ProfileChoice, data_dir: Path, task_id: str) -> ProfileNote:
    """The task's profile and why, as its state keeps it; traced once, where the task's story is read."""
    Trace.open(data_dir, task_id).event("profile", name=choice.name or "", reason=choice.reason,
                                        detected=choice.detected, line=choice.describe())
    return {"name": choice.name or "", "reason": choice.reason, "detected": choice.detected,
            "line": choice.describe()}


def _rest_behind(graph: Path, root: Path, embedder: Embedder | None, embedding: EmbedderSettings,
                 memory_commits: int) -> Path | None:
    """Start the rest of a graph-only base (full text, memory, then its vectors) in the background and
    wait for it at most `embedding.wait_seconds`; the whole base when it came in time."""
    then = partial(_vectors_of, embedder) if embedder is not None else None
    basecomplete.start(graph, root, memory_commits=memory_commits, then=then).wait(embedding.wait_seconds)
    whole = basecomplete.whole_path(graph)
    return whole if whole.is_file() else None


def _vectors_of(embedder: Embedder, whole: Path) -> None:
    basevectors.start(whole, embedder)  # in its own thread: the whole base's background ends here


def review_index(data_dir: Path, key: str, root: Path, embedding: EmbedderSettings,
                 memory_commits: int = MAX_COMMITS) -> str:
    """The index a review reads: the head's base, with its vectors when they are ready in time.

    A review never writes its index (it is shared per commit), so it reads the vectors file when it
    exists after `embedding.wait_seconds`, else the base on the lexical and graph legs. A large checkout,
    or a first base with a long history to remember, starts on its code graph as a task does (sympy's
    first review was not ready after 20 minutes of history; now 14.5 s); the rest follows in the
    background, and the review reads it when it comes within the wait.
    """
    base = build_base(data_dir, key, root, workers=default_workers(), memory_commits=memory_commits,
                      defer_from=basecomplete.DEFER_FROM_FILES, defer_commits=basecomplete.DEFER_FROM_COMMITS)
    embedder = embedder_for(embedding)
    if basecomplete.is_graph_only(base):
        whole = _rest_behind(base, root, embedder, embedding, memory_commits)
        if whole is None:
            return str(base)
        base = whole
    if embedder is not None:
        basevectors.start(base, embedder).wait(embedding.wait_seconds)
    return str(basevectors.ready_path(base, embedder))


async def release(settings: Settings, repo: RepoRef, task_id: str) -> None:
    """Remove a finished task's worktree and index copy (a waiting task keeps both for its resume).

    A clean-up git refuses (a timeout, a mirror never made whole) is logged, not raised: it ran in the
    path that records how the task ended, and its traceback replaced that record (a run past
    FORGEBOT_WORKSPACE__GIT_TIMEOUT ended so). What stays behind, the service's daily retention pass
    (`bot.worker.retention`) or the disk bound removes later.
    """
    try:
        await Workspaces.for_settings(settings).cleanup(repo_key(repo.forge, repo.project), task_id)
    except GitError as exc:
        log.warning("task %s: its worktree was not removed (%s); removed later", task_id, exc)
    task_index_path(settings.data_dir, task_id).unlink(missing_ok=True)
