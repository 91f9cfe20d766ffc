"""`forgebot run`: one task on a local repository, the worker's path without a forge.

The run never touches the user's checkout: like a worker it mirrors the repository into the data
dir (git's `file` transport, allowed for this run only) and works in a worktree of that mirror on
a new `forgebot/run-...` branch started from HEAD (or `--base`). The user's branch, HEAD, index,
edits and untracked files stay as they were; a FULL_RESET resets the bot's worktree, not theirs.
Commits come back as a new branch in the user's repository (a ref fetched from the mirror, never
a checkout), alongside a printed summary and the patch.

The graph runs exactly as in the worker: the configured checkpointer with the safe serializer,
`run_or_resume`, and an in-memory forge that keeps what the bot would have written.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from bot.checkpoints import SqlJournal, open_checkpointer
from bot.events import Mode
from bot.jobs import ModelFactory
from foundation import gitrunner
from foundation.forge import Change, ChangeRef, Issue, IssueRef, RepoRef
from foundation.forge.diff import parse
from foundation.forge.memory import MemoryForge
from foundation.gitrunner import GitError, git
from foundation.settings import Settings

__all__ = ["LocalRunError", "LocalResult", "ModelProblem", "local_change", "one_line", "run_local"]
from foundation.workspace import Workspaces, repo_key
from graph.builder import build_graph
from graph.checkout import index_checkout, release
from graph.coder.gitstate import diff
from graph.deps import Deps
from graph.llm import ModelProblem, chat_model, check_config
from graph.redact import redact, secrets_of
from graph.resume import run_or_resume
from graph.routing import check_mode
from graph.runtime.boundaries import graph_config
from graph.state import TaskState


class LocalRunError(ValueError):
    """The checkout cannot serve the requested local run (no branch to review, no base)."""


def one_line(exc: BaseException, settings: Settings) -> str:
    """The error as one line for the terminal, every configured secret redacted."""
    return " ".join(redact(str(exc), secrets_of(settings)).split())


def _git(root: Path, *args: str) -> str:
    try:
        return git(root, *args)
    except GitError as exc:
        raise LocalRunError(str(exc)) from exc


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
        files=tuple(f.change() for f in parse(_git(
            root, "diff", "-M", "--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/",
            f"{merge_base}..HEAD",
        ))),
    )


@dataclass(frozen=True)
class LocalResult:
    task_id: str
    state: dict[str, Any]
    comments: list[str]
    branch: str = ""  # the new branch in the user's repository holding the bot's commits ("" when none)
    commits: int = 0
    patch: str = ""  # the bot's change as a unified diff against where it started


@dataclass(frozen=True)
class _Worktree:
    """The run's own checkout: a worktree of the data dir's mirror of the user's repository."""

    key: str
    mirror: Path
    path: Path
    branch: str
    start: str


def _title_and_body(task: str) -> tuple[str, str]:
    first, _, rest = task.strip().partition("\n")
    return first.strip()[:200], rest.strip() or first.strip()


def run_branch(task_id: str, title: str) -> str:
    """The bot's branch for one run: new every run, so it never replaces one of the user's."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40].strip("-") or "change"
    return f"forgebot/run-{task_id[:8]}-{slug}"


async def _own_worktree(settings: Settings, root: Path, project: str, task_id: str, branch: str,
                        base: str | None) -> _Worktree:
    """Mirror the user's repository and add a worktree on `branch` at HEAD (or `base`)."""
    start = _git(root, "rev-parse", "--verify", "--end-of-options", f"{base or 'HEAD'}^{{commit}}").strip()
    if _git(root, "for-each-ref", f"refs/heads/{branch}").strip():
        raise LocalRunError(f"branch {branch} already exists in {root}")
    spaces = Workspaces.for_settings(settings)
    key = repo_key("local", project)
    mirror = await spaces.mirror(key, str(root))
    # HEAD may be detached or `base` a commit no branch names: fetch the start commit itself
    done = gitrunner.run(["fetch", "--quiet", "--no-tags", "origin", f"+{start}:refs/forgebot/start/{task_id}"],
                         gitrunner.Repo.at(mirror), protocols=("file",))
    if done.returncode != 0:
        raise LocalRunError(f"git fetch of {start} failed: {done.stderr[-400:]}")
    path = await spaces.worktree(key, task_id, branch, start)
    return _Worktree(key=key, mirror=mirror, path=path, branch=branch, start=start)


def _deliver(root: Path, work: _Worktree) -> tuple[int, str]:
    """The run's commits as a new branch in the user's repository; (commits, patch).

    A fetch from the bot's mirror writes one ref and the objects it needs: no checkout, no index,
    no FETCH_HEAD, and the branch must be new (no `+`: an existing one is never replaced).
    """
    commits = git(work.path, "rev-list", f"{work.start}..HEAD").split()
    if not commits:
        return 0, ""
    patch = diff(work.path, work.start, "HEAD")
    done = gitrunner.run(
        ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", str(work.mirror),
         f"refs/heads/{work.branch}:refs/heads/{work.branch}"],
        gitrunner.Repo.at(root), protocols=("file",),
    )
    if done.returncode != 0:
        raise LocalRunError(f"could not create branch {work.branch} in {root}: {done.stderr[-400:]}")
    return len(commits), patch


async def run_local(
    settings: Settings,
    repo: Path,
    mode: Mode,
    task: str,
    model_factory: ModelFactory | None = None,
    base: str | None = None,
) -> LocalResult:
    """Run one task on the repository at `repo` and return the final state, comments and delivery.

    Review mode reviews the checked-out branch against `base` as if it were a change; the other
    modes work in the run's own worktree started at HEAD or `base`. A directory that is not a git
    repository can only be analyzed, in place, with file tools.
    """
    check_mode(mode)
    root = repo.resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"no such checkout: {repo}")
    title, body = _title_and_body(task)
    is_git = (root / ".git").exists()
    if not is_git and mode != "analyze":
        raise LocalRunError(f"{root} is not a git repository: only --mode analyze runs there")
    project = hashlib.sha256(str(root).encode()).hexdigest()[:16]
    repo_ref = RepoRef(forge="local", project=project, path=root.name, clone_url=str(root))
    ref = IssueRef(repo=repo_ref, number=1)
    forge = MemoryForge(kind="local")
    forge.add_repo(repo_ref)  # the local "forge" answers for its one repository, as a real one would
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
    if model_factory is None:
        check_config(settings.llm)  # a missing key fails here, before any checkout work
    models = model_factory or (lambda role: chat_model(settings.llm, role))
    task_id = hashlib.sha256(f"{root}\0{mode}\0{task}\0{time.time_ns()}".encode()).hexdigest()[:16]
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    work: _Worktree | None = None
    if is_git and mode != "review":  # the review route checks out the branch under review itself
        work = await _own_worktree(settings, root, project, task_id, run_branch(task_id, title), base)

    async def start() -> TaskState:
        state = TaskState(
            task_id=task_id, mode=mode, forge="local", repo=repo_ref.model_dump(), number=1, title=title,
            body=body, workspace=str(work.path if work else root), started_at=time.time(), tokens=0, models=[],
        )
        if work is not None:  # the code graph and search for the analyzer; without git, file tools only
            state["branch"], state["base"] = work.branch, work.start
            state.update(index_checkout(settings.data_dir, work.key, work.path, task_id, settings.embedder))  # type: ignore[typeddict-item]
        return state

    deps = Deps(settings=settings, forge=forge, model_for=models)
    try:
        async with open_checkpointer(settings) as saver:
            compiled = build_graph().compile(checkpointer=saver)
            config = graph_config(settings.llm, f"local-{task_id}")  # the thread and the recursion limit
            result = await run_or_resume(compiled, config, start, replace(deps, journal=SqlJournal(saver)))
        commits, patch = _deliver(root, work) if work is not None else (0, "")
    finally:
        if work is not None:
            await release(settings, repo_ref, task_id)
    comments = [c.body for target in targets for c in await forge.list_comments(target)]
    return LocalResult(task_id=task_id, state=cast(dict[str, Any], result), comments=comments,
                       branch=work.branch if work is not None and commits else "", commits=commits, patch=patch)
