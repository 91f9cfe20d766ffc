"""`forgebot run`: one task on a local repository, the worker's path without a forge.

The run never touches the user's checkout: like a worker it mirrors the repository into the data
dir (git's `file` transport, allowed for this run only) and works in a worktree of that mirror on
a new `forgebot/run-...` branch started from HEAD (or `--base`). The user's branch, HEAD, index,
edits and untracked files stay as they were (their status is read without taking the index lock);
edits not committed are therefore not part of the run, and the run says which. Commits come back
as a new branch in the user's repository (a ref fetched from the mirror, never a checkout),
alongside the change's description and the patch.

The graph runs exactly as in the worker: the configured checkpointer with the safe serializer,
`run_or_resume` on a thread named by the task id, and an in-memory forge that keeps what the bot
would have written. The task is recorded in the task store like a worker's (already handled, so
no sweeper queues it and no reaper claims it), so `forgebot tasks`, `forgebot trace` and the
console show it; a run that asked questions waits there, with its worktree, until `--answer`
resumes it. Before any checkout work the model endpoints are asked one tiny question, so a model
that is down is reported in seconds rather than after the index is built.
"""

from __future__ import annotations

import asyncio
import getpass
import hashlib
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from dataclasses import replace as replaced
from functools import partial
from pathlib import Path
from typing import Any, cast

from langchain_core.messages import HumanMessage

from bot.tasks.checkpoints import most_spent, open_checkpointer, spent
from bot.tasks.events import Actor, ForgeEvent, Mode
from bot.tasks.inbox import Inbox, TaskRow, TaskStatus, open_inbox
from bot.tasks.localruns import owner
from bot.worker.jobcontext import ModelFactory
from bot.worker.jobs import run_graph
from foundation import gitrunner
from foundation.forge import Change, ChangeRef, Comment, Issue, IssueRef, RepoRef
from foundation.forge.diff import parse
from foundation.forge.inmemory import MemoryForge
from foundation.gitrunner import GitError, git
from foundation.llm import (
    ROLES,
    ModelCallError,
    ModelProblem,
    chat_model,
    check_config,
    invoke,
    profile,
    resolve,
    said_if_slow,
)
from foundation.redact import redact, secrets_of
from foundation.settings import LLMSettings, Settings
from foundation.workspace import Workspaces, repo_key
from graph.checkout import index_checkout, release
from graph.deps import Deps
from graph.failure import TaskFailure, failure_of, failure_of_state
from graph.routing import check_mode
from graph.runtime.phases import GRAPH, Phases, step
from graph.state import RepoDump, TaskState, dump

__all__ = ["LocalResult", "LocalRunError", "ModelProblem", "answer_local", "checkout_root", "local_change", "one_line",
           "probe_models", "run_local", "uncommitted"]

# how each mode's run ends when it reached its goal (anything else, but waiting for answers, did not)
log = logging.getLogger(__name__)
GOALS = frozenset({"reported", "delivered", "approve", "request_changes", "up_to_date"})
LISTED = 5  # uncommitted paths named before "and N more"


class LocalRunError(ValueError):
    """The checkout cannot serve the requested local run (not a repository, no branch to review)."""


def one_line(exc: BaseException, settings: Settings) -> str:
    """The error as one line for the terminal, every configured secret redacted."""
    return " ".join(redact(str(exc), secrets_of(settings)).split())


def _git(root: Path, *args: str) -> str:
    try:
        return git(root, *args)
    except GitError as exc:
        raise LocalRunError(str(exc)) from exc


def checkout_root(repo: Path) -> Path:
    """The top directory of the git checkout at `repo`, with a commit to start from; a clear error otherwise."""
    root = repo.resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"no such checkout: {repo}")
    if not (root / ".git").exists():
        parent = next((p for p in root.parents if (p / ".git").exists()), None)
        if parent is not None:
            raise LocalRunError(f"{root} is inside the git repository {parent}: pass --repo {parent}")
        raise LocalRunError(f"{root} is not a git repository: forgebot run works on a git checkout and its "
                            "commits (`git init && git add -A && git commit -m start` makes one)")
    try:
        git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    except GitError:
        raise LocalRunError(f"{root} has no commit yet: commit the work forgebot should start from") from None
    return root


def uncommitted(root: Path) -> list[str]:
    """The checkout's uncommitted changes as `git status --short` lines (its index lock is not taken)."""
    out = git(root, "status", "--porcelain", env={"GIT_OPTIONAL_LOCKS": "0"})
    return [line for line in out.splitlines() if line.strip()]


def not_included(changes: list[str], start: str) -> str:
    """The notice for uncommitted changes: the run works on commits only."""
    shown = ", ".join(line.strip() for line in changes[:LISTED])
    more = f" and {len(changes) - LISTED} more" if len(changes) > LISTED else ""
    return (f"{len(changes)} uncommitted change(s) are not included (the run works on {start}): "
            f"{shown}{more}")


def _quiet(_: str) -> None:
    return None


async def probe_models(llm: LLMSettings, notify: Callable[[str], None] = _quiet) -> None:
    """One tiny call to each distinct model endpoint the roles use; a `ModelProblem` names the setting.

    Building the index of a large repository takes minutes; a model that is down, refuses the key
    or does not exist must be said before that, in the words a task's failure would use. A call still
    unanswered after a few seconds is said with how long it may go on, and which settings bound it.
    """
    seen: set[tuple[str, str | None, str, str | None, str]] = set()
    for role in sorted({*ROLES, *llm.roles}):
        found = resolve(llm, role)
        key = (found.provider, found.base_url, found.model, found.api_key.get_secret_value() if found.api_key else None,
               repr(sorted(found.header_values().items())))
        if key in seen:
            continue
        seen.add(key)
        own = found != resolve(llm, "")  # a role's own endpoint: its settings are the ones to check
        model = chat_model(llm, role if own else "")
        tries = f"{llm.max_retries + 1} tries" if llm.max_retries else "one try"
        waiting = (f"waiting for {found.model} at {found.base_url or found.provider} to answer a first test call "
                   f"(up to {found.timeout:.0f} s a try, {tries}: FORGEBOT_LLM__TIMEOUT, FORGEBOT_LLM__MAX_RETRIES)")
        try:
            await said_if_slow(invoke(_capped(model), [HumanMessage("Reply with the word: ok")], profile(model)),
                               partial(notify, waiting))
        except ModelCallError as exc:
            whose = f"the {role} role's model" if own else "the model"
            raise ModelProblem(f"{whose} failed a first test call, so nothing was started: {exc.failure.reason} "
                               f"(check {exc.setting})") from None


def _capped(model: Any) -> Any:
    """The model with a small output cap, by whichever field its provider names it with."""
    for name in ("max_tokens", "num_predict"):
        if name in type(model).model_fields:
            return model.model_copy(update={name: 16})
    return model


def local_change(ref: ChangeRef, root: Path, title: str, body: str, base: str | None) -> Change:
    """The checked-out branch as a change against `base` (default: main, else master)."""
    head_branch = _git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    if head_branch == "HEAD":
        raise LocalRunError("review needs a checked-out branch, not a detached HEAD")
    if base is None:
        known = _branches(root)
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
    comments: list[str]  # what the bot wrote on the "issue", and the description of the change it opened
    branch: str = ""  # the new branch in the user's repository holding the bot's commits ("" when none)
    commits: int = 0
    patch: bytes = b""  # the bot's change as a unified diff against where it started, as git wrote it
    failure: TaskFailure | None = None  # the task's failure record, as the task store keeps it
    error: Exception | None = None  # the exception that ended the run, when one did

    @property
    def outcome(self) -> str:
        return str(self.state.get("outcome") or "")

    @property
    def reached_goal(self) -> bool:
        return self.failure is None and self.outcome in GOALS


@dataclass(frozen=True)
class _Worktree:
    """The run's own checkout: a worktree of the data dir's mirror of the user's repository."""

    key: str
    mirror: Path
    path: Path
    branch: str
    start: str
    whole: bool = True  # False: the mirror holds the start commit alone (`_own_worktree`)


def _title_and_body(task: str) -> tuple[str, str]:
    first, _, rest = task.strip().partition("\n")
    return first.strip()[:200], rest.strip() or first.strip()


def run_branch(task_id: str, title: str) -> str:
    """The bot's branch for one run: new every run, so it never replaces one of the user's."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40].strip("-") or "change"
    return f"forgebot/run-{task_id[:8]}-{slug}"


def _project(root: Path) -> str:
    return hashlib.sha256(str(root).encode()).hexdigest()[:16]


def _with_file_protocol(settings: Settings) -> Settings:
    """The settings of a local run: git may fetch from the user's repository (`file`), for this run only."""
    workspace = settings.workspace.model_copy(
        update={"allowed_protocols": (*settings.workspace.allowed_protocols, "file")})
    return settings.model_copy(update={"workspace": workspace})


async def _own_worktree(settings: Settings, root: Path, project: str, task_id: str, branch: str,
                        base: str | None) -> _Worktree:
    """Mirror the user's repository and add a worktree on `branch` at HEAD (or `base`)."""
    start = _git(root, "rev-parse", "--verify", "--end-of-options", f"{base or 'HEAD'}^{{commit}}").strip()
    if _git(root, "for-each-ref", f"refs/heads/{branch}").strip():
        raise LocalRunError(f"branch {branch} already exists in {root}")
    spaces = Workspaces.for_settings(settings)
    key = repo_key("local", project)
    async with step("mirror"):
        incomplete: GitError | None = None
        try:
            mirror = await spaces.mirror(key, str(root))
        except GitError as exc:
            # a partial clone (`--filter=blob:none`) or a damaged repository lacks objects of its history:
            # git cannot copy the branches, but the start commit's own tree is usually all there
            incomplete, mirror = exc, spaces.mirror_path(key)
        # HEAD may be detached or `base` a commit no branch names: fetch the start commit itself
        depth = ["--depth", "1"] if incomplete else []
        refspec = f"+{start}:refs/forgebot/start/{task_id}"
        done = gitrunner.run(["fetch", "--quiet", "--no-tags", *depth, "origin", refspec], gitrunner.Repo.at(mirror),
                             protocols=("file",))
        if done.returncode != 0:
            if incomplete is not None:
                raise incomplete  # not even the start commit is whole: git's own message says what is missing
            raise LocalRunError(f"git fetch of {start} failed: {done.stderr[-400:]}")
    async with step("worktree"):
        path = await spaces.worktree(key, task_id, branch, start)
    return _Worktree(key=key, mirror=mirror, path=path, branch=branch, start=start, whole=incomplete is None)


def _whole_start(root: Path, base: str | None) -> None:
    """Refuse a start commit whose own files git cannot read (a damaged repository: phpunit's snapshot
    lacks a .phar of HEAD). No run can copy such a commit, and the run failed in its mirror step saying
    that "the server did not answer", after it was recorded; a missing object of the history only is
    worked around (`_own_worktree`)."""
    start = _git(root, "rev-parse", "--verify", "--end-of-options", f"{base or 'HEAD'}^{{commit}}").strip()
    missing = [line[1:] for line in _git(root, "rev-list", "--objects", "--missing=print", "--no-walk", start).split()
               if line.startswith("?")]
    if not missing:
        return
    lost = set(missing)
    paths = [line.split("\t", 1)[1] for line in _git(root, "ls-tree", "-r", "-t", "--full-tree", start).splitlines()
             if "\t" in line and line.split("\t", 1)[0].split()[-1] in lost]
    named = ", ".join(paths[:LISTED]) + (f" and {len(paths) - LISTED} more" if len(paths) > LISTED else "")
    raise LocalRunError(f"{root} lacks {len(missing)} object(s) of commit {start[:12]} itself ({named or 'unnamed'}): "
                        "no run can copy it; `git fsck` lists what is missing. Fetch them again from where the "
                        "repository was cloned, or pass --base a commit whose files are all there")


def _deliver(root: Path, work: _Worktree) -> tuple[int, bytes]:
    """The run's commits as a new branch in the user's repository; (commits, patch).

    The patch is git's bytes: a file in Windows-1252 (`project.filetext`) keeps its bytes, so what the
    run prints is a patch `git apply` takes (decoded as UTF-8 it was not).

    A fetch from the bot's mirror writes one ref and the objects it needs: no checkout, no index,
    no FETCH_HEAD, and the branch must be new (no `+`: an existing one is never replaced).
    """
    commits = git(work.path, "rev-list", f"{work.start}..HEAD").split()
    if not commits:
        return 0, b""
    patch = gitrunner.git_bytes(work.path, "diff", "--no-ext-diff", "--no-textconv", "--no-renames", work.start, "HEAD")
    done = gitrunner.run(
        ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", str(work.mirror),
         f"refs/heads/{work.branch}:refs/heads/{work.branch}"],
        gitrunner.Repo.at(root), protocols=("file",),
    )
    if done.returncode != 0:
        raise LocalRunError(f"could not create branch {work.branch} in {root}: {done.stderr[-400:]}")
    return len(commits), patch


def _event(root: Path, mode: Mode, title: str, body: str, base: str | None, number: int) -> ForgeEvent:
    """The task as the store keeps it: a "local" repository at the checkout's path; `state` holds `--base`."""
    repo = RepoRef(forge="local", project=_project(root), path=root.name, clone_url=str(root),
                   default_branch=_default_branch(root, base))
    return ForgeEvent(forge="local", delivery_id=f"local:{uuid.uuid4().hex}", repo=repo, target="issue",
                      number=number, actor=Actor(id=0, username=_user()), trigger="command", mode=mode, title=title,
                      body=body, state=f"base={base}" if base else "")


def _default_branch(root: Path, base: str | None) -> str:
    """The branch a run reads the repository's own settings from (`.forgebot.yml`, the profile), as a forge
    reads its default branch: `--base` when it names a branch, else main, else master, else the checked-out
    branch. A checkout whose default is master was read as if it were main: its review ran with no profile
    ("revision `origin/main` not found") and without its `.forgebot.yml`."""
    known = _branches(root)
    current = _git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    return next((name for name in (base, "main", "master", current) if name and name in known), "main")


def _branches(root: Path) -> set[str]:
    """The checkout's local branch names."""
    return set(_git(root, "for-each-ref", "--format=%(refname:short)", "refs/heads").split())


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container's arbitrary uid)
        return "local"


def _base_of(event: ForgeEvent) -> str | None:
    return event.state.removeprefix("base=") if event.state.startswith("base=") else None


def _forge(event: ForgeEvent, root: Path) -> tuple[MemoryForge, list[IssueRef | ChangeRef]]:
    """The in-memory forge answering for the run's one repository, its issue and (review) change."""
    ref = IssueRef(repo=event.repo, number=event.number)
    forge = MemoryForge(kind="local")
    forge.add_repo(event.repo)  # the local "forge" answers for its one repository, as a real one would
    forge.issues[ref] = Issue(ref=ref, title=event.title, body=event.body)
    targets: list[IssueRef | ChangeRef] = [ref]
    if event.mode == "review":
        change = ChangeRef(repo=event.repo, number=event.number)
        forge.changes[change] = local_change(change, root, event.title, event.body, _base_of(event))
        targets.append(change)
    return forge, targets


async def _written(forge: MemoryForge, targets: list[IssueRef | ChangeRef]) -> list[str]:
    """What the bot wrote: the comments on the issue (and reviewed change), then any change it opened."""
    found: list[Comment] = [c for target in targets for c in await forge.list_comments(target)]
    opened = [f"# {c.title}\n\n{c.body}" for ref, c in forge.changes.items() if ref not in targets]
    return [c.body for c in found] + opened


async def _record(inbox: Inbox, root: Path, mode: Mode, title: str, body: str, base: str | None) -> TaskRow:
    """Record the run as a running task of the checkout ("local run #n"); retried if a parallel run took n."""
    prefix = f"local:{_project(root)}:"
    for _ in range(5):
        number = 1 + len(await inbox.keyed(prefix))
        event = _event(root, mode, title, body, base, number)
        try:
            return await inbox.record_run(event, owner())
        except inbox.integrity_errors:
            continue
    raise LocalRunError(f"could not record the run in the task store ({prefix})")


async def _waiting(inbox: Inbox, root: Path, task_id: str | None) -> TaskRow:
    """The run `--answer` resumes: `task_id`, or the newest run of this checkout waiting for an answer."""
    prefix = f"local:{_project(root)}:"
    if task_id is not None:
        found = await inbox.task(task_id)
        if found is None or not found.task_key.startswith(prefix):
            raise LocalRunError(f"no run {task_id} of {root} in the task store")
        if found.state != "waiting":
            raise LocalRunError(f"run {task_id} is {found.state}, not waiting for an answer")
        return found
    waiting = await inbox.keyed(prefix, ("waiting",))
    if not waiting:
        raise LocalRunError(f"no run of {root} is waiting for an answer (forgebot tasks --state waiting)")
    return waiting[0]


async def _drive(settings: Settings, inbox: Inbox, task: TaskRow, root: Path, models: ModelFactory,
                 start: Callable[[], Awaitable[TaskState]] | None, answer: dict[str, str] | None) -> LocalResult:
    """Run (or resume) the task's graph and record how it ended; a failure is recorded and returned."""
    event = ForgeEvent.model_validate_json(task.event_json)
    forge, targets = _forge(event, root)
    deps = Deps(settings=settings, forge=forge, model_for=models)
    phases = Phases(settings.data_dir, task.task_id)
    result: dict[str, Any] = {}
    commits, patch, branch = 0, b"", ""
    try:
        result = cast(dict[str, Any], await run_graph(settings, deps, task.task_id, start or _no_start, answer,
                                                      phases))
        work = _work_of(settings, result)
        if work is not None and result.get("outcome") not in ("need_info", "failed"):
            phases.current = "delivery"
            commits, patch = _deliver(root, work)
            branch = work.branch if commits else ""
    except Exception as exc:
        record = failure_of(exc, phase=phases.current or GRAPH, secrets=secrets_of(settings))
        if record.bug:  # nothing explains it: the traceback is for a bug report, there is no worker log
            log.error("internal error in task %s", task.task_id, exc_info=exc)
            record = replaced(record, operator_action="a bug: the traceback is printed above; please report it")
        await _end(settings, inbox, task.task_id, "failed", record, spent_then=deps.spent_at_failure)
        await release(settings, event.repo, task.task_id)
        return LocalResult(task.task_id, result, await _written(forge, targets), failure=record, error=exc)
    except BaseException:  # Ctrl-C: the run stops here and says so in the store
        await inbox.set_state(task.task_id, "cancelled", "interrupted", only_from=("running",))
        await release(settings, event.repo, task.task_id)
        raise
    outcome = str(result.get("outcome") or "")
    failed = failure_of_state(result, secrets_of(settings)) if outcome == "failed" else None
    final: TaskStatus = "waiting" if outcome == "need_info" else "failed" if failed else "done"
    await _end(settings, inbox, task.task_id, final, failed, outcome)
    if final != "waiting":
        await release(settings, event.repo, task.task_id)
    return LocalResult(task.task_id, result, await _written(forge, targets), branch=branch, commits=commits,
                       patch=patch, failure=failed)


async def _end(settings: Settings, inbox: Inbox, task_id: str, state: TaskStatus, failure: TaskFailure | None,
               detail: str = "", spent_then: dict[str, Any] | None = None) -> None:
    """Record the run's end as a worker records a task's: what it spent (also a failed node's calls,
    `spent_then`), its state and failure record."""
    async with open_checkpointer(settings) as saver:
        await inbox.spent(task_id, *most_spent(await spent(saver, task_id), spent_then))
    await inbox.set_state(task_id, state, failure.kind if failure else detail, only_from=("running",),
                          failure=failure.to_json() if failure else "")


async def _no_start() -> TaskState:
    raise LocalRunError("the run has no saved state to resume")


def _work_of(settings: Settings, state: dict[str, Any]) -> _Worktree | None:
    """The run's worktree as its state records it (None for a review, which has none of its own)."""
    if not state.get("branch") or not state.get("base") or state.get("mode") == "review":
        return None
    key = repo_key("local", RepoRef.model_validate(state["repo"]).project)
    return _Worktree(key=key, mirror=Workspaces.for_settings(settings).mirror_path(key), path=Path(state["workspace"]),
                     branch=str(state["branch"]), start=str(state["base"]))


async def _ready(settings: Settings, model_factory: ModelFactory | None,
                 notify: Callable[[str], None] = _quiet) -> ModelFactory:
    """The role models, after the configuration and every endpoint answered (a `ModelProblem` otherwise)."""
    if model_factory is not None:
        return model_factory
    check_config(settings.llm)
    await probe_models(settings.llm, notify)
    llm = settings.llm
    return lambda role: chat_model(llm, role)


async def run_local(
    settings: Settings,
    repo: Path,
    mode: Mode,
    task: str,
    model_factory: ModelFactory | None = None,
    base: str | None = None,
    notify: Callable[[str], None] = _quiet,
) -> LocalResult:
    """Run one task on the checkout at `repo`: the final state, what the bot wrote, and its delivery.

    Review mode reviews the checked-out branch against `base` as if it were a change; the other
    modes work in the run's own worktree started at HEAD or `base`. `notify` hears what the user
    should know before the run ends (uncommitted changes it leaves out, the profile chosen and why).
    """
    check_mode(mode)
    root = checkout_root(repo)
    title, body = _title_and_body(task)
    models = await _ready(settings, model_factory, notify)  # before any checkout work
    dirty = uncommitted(root)
    if dirty:
        start_at = f"the commits of {_git(root, 'rev-parse', '--abbrev-ref', 'HEAD').strip()}" if mode == "review" \
            else f"commit {_git(root, 'rev-parse', '--short', base or 'HEAD').strip()}"
        notify(not_included(dirty, start_at))
    if mode == "review":
        local_change(ChangeRef(repo=RepoRef(forge="local", project="-", path="-"), number=1), root, title, body, base)
    else:
        _whole_start(root, base)
    settings = _with_file_protocol(settings)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    inbox = await open_inbox(settings)
    try:
        row = await _record(inbox, root, mode, title, body, base)
        work: _Worktree | None = None

        async def start() -> TaskState:
            nonlocal work
            event = ForgeEvent.model_validate_json(row.event_json)
            state = TaskState(
                task_id=row.task_id, mode=mode, forge="local", repo=dump(event.repo, RepoDump), number=event.number,
                title=title, body=body, workspace=str(root), started_at=time.time(), tokens=0, models=[],
            )
            if mode != "review":  # the review route checks out the branch under review itself
                work = await _own_worktree(settings, root, event.repo.project, row.task_id,
                                           run_branch(row.task_id, title), base)
                state["workspace"], state["branch"], state["base"] = str(work.path), work.branch, work.start
                if not work.whole:
                    notify(f"{root} lacks objects of its history (a partial clone, or a damaged repository): this "
                           f"run works on commit {work.start[:12]} alone, and its project memory has no history")
                async with step("index"):
                    indexed = await asyncio.to_thread(index_checkout, settings.data_dir, work.key, work.path,
                                                      row.task_id, settings.embedder, settings.memory.max_commits)
                state.update(indexed)
                notify(f"profile: {indexed['profile']['line']}")
            return state

        result = await _drive(settings, inbox, row, root, models, start, None)
        if mode == "review" and result.state.get("profile"):  # the review route read it from the base branch
            notify(f"profile: {result.state['profile']['line']}")
        return result
    finally:
        await inbox.close()


async def answer_local(
    settings: Settings, repo: Path, text: str, task_id: str | None = None, model_factory: ModelFactory | None = None,
) -> LocalResult:
    """Resume the run of `repo` that waits for an answer (the newest, or `task_id`) with `text`."""
    root = checkout_root(repo)
    if not text.strip():
        raise LocalRunError("the answer is empty")
    settings = _with_file_protocol(settings)
    inbox = await open_inbox(settings)
    try:
        row = await _waiting(inbox, root, task_id)
        models = await _ready(settings, model_factory)
        claimed = await inbox.claim(row.task_id, owner(), from_state="waiting")
        if claimed is None:
            raise LocalRunError(f"run {row.task_id} is no longer waiting (answered or cancelled meanwhile)")
        return await _drive(settings, inbox, claimed, root, models, None, {"author": _user(), "body": text.strip()})
    finally:
        await inbox.close()
