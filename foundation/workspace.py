"""Git workspaces: a bare mirror per repository and a worktree per task, hardened for untrusted code.

Layout under `root` (normally `<data_dir>/workspaces`):

    mirrors/<repo key>.git   bare, fetched incrementally; remote branches under refs/remotes/origin/
    tasks/<task id>/         a worktree of the mirror on the task's own branch
    locks/<repo key>.lock    serialises git on one mirror across worker processes

Every git command goes through `foundation.gitrunner` (minimal environment, `-c` overrides that beat the
repository's config, an explicit git dir, the mirror's config and each worktree's `.git` verified
before every command). A token reaches git only for the one command that needs it, as an
`http.extraHeader` in `GIT_CONFIG_*` variables — never in argv, a remote URL or `.git/config`.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import logging
import os
import re
import shutil
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit

from foundation import gitrunner
from foundation.forge.models import GitCredentials
from foundation.gitrunner import MIRRORS, TASKS, GitError, GitTampered, Repo
from foundation.settings import Settings, WorkspaceSettings

log = logging.getLogger(__name__)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class CredentialsRefused(GitError):
    """Credentials were asked to go to a URL that is not the configured forge's own host."""


Origin = tuple[str, str, int]
_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> Origin | None:
    """`(scheme, host, port)` of an http(s) URL; None for anything else (a path, `file://`, ssh)."""
    try:
        parts = urlsplit(url)
        scheme, host, port = parts.scheme.lower(), (parts.hostname or "").lower(), parts.port
    except ValueError:
        return None
    if scheme not in _PORTS or not host:
        return None
    return scheme, host, port or _PORTS[scheme]


def forge_origins(settings: Settings) -> frozenset[Origin]:
    """Where the bot's git credentials may go: the configured GitLab URL and GitHub's web host."""
    found = {origin_of(settings.gitlab.url), *(origin_of(url) for url in settings.workspace.git_hosts)}
    github = origin_of(settings.github.api_url)
    if github is not None:  # api.github.com serves the API; clones live on github.com
        found.add(("https", "github.com", 443) if github[1] == "api.github.com" else github)
    return frozenset(o for o in found if o is not None)


class WorkspaceFull(GitError):
    """The disk bound is reached even after removing finished tasks and idle mirrors."""


class PushRefused(GitError):
    """The forge refused a push: a protected branch, a push rule, a missing permission or scope.

    `reason` is the forge's own message. Trying again changes nothing until someone changes those rules
    or the bot's rights, so it is never retried, and a failure says so instead of "git failed".
    """

    def __init__(self, branch: str, reason: str) -> None:
        super().__init__(f"the forge refused the push of {branch}: {reason}")
        self.branch, self.reason = branch, reason


# What git prints when the other side, not the network, refused a push: a rejected ref (a hook, a
# protected branch, GitHub's workflow permission) or the HTTP answer to an account without push rights.
_REJECTED = re.compile(r"^\s*! \[remote rejected\] \S+ -> \S+ \((?P<why>.*)\)\s*$", re.M)
_DENIED = re.compile(r"returned error: 403|Permission to \S+ denied|not allowed to push", re.I)


def push_refusal(stderr: str) -> str | None:
    """The forge's reason when `git push` printed `stderr` because the push was refused, else None.

    The `remote:` lines are the forge's words (GitLab's and GitHub's protected branches, push rules); a
    rejected ref's own note (`pre-receive hook declined`, GitHub's `refusing to allow a GitHub App to
    create or update workflow … without workflows permission`) is added when it says more.
    """
    rejected = [m.group("why") for m in _REJECTED.finditer(stderr)]
    if not rejected and not _DENIED.search(stderr):
        return None
    said = [line.strip()[len("remote:"):].strip() for line in stderr.splitlines() if line.strip().startswith("remote:")]
    said = [line.removeprefix("error:").strip() for line in said if line.strip()]
    notes = [why for why in dict.fromkeys(rejected) if why != "pre-receive hook declined" or not said]
    return " ".join([*said, *notes]) or "refused (HTTP 403)"


def _not_an_option(value: str, what: str) -> str:
    """A URL or revision starting with `-` would be read by git as an option."""
    if not value or value.startswith("-"):
        raise ValueError(f"{what} {value!r} must not be empty or start with '-'")
    return value


def check_name(value: str, what: str) -> str:
    """Repository keys and task ids become directory names: no separators, no dot-dot, no options."""
    if not _NAME.fullmatch(value) or ".." in value:
        raise ValueError(f"{what} {value!r} must match {_NAME.pattern} without '..'")
    return value


class Workspaces:
    """Mirrors and task worktrees under one root, bounded to `settings.max_bytes`."""

    def __init__(self, root: Path, settings: WorkspaceSettings, origins: frozenset[Origin] = frozenset()) -> None:
        self.root = root
        self.settings = settings
        self.origins = origins  # the only hosts credentials are sent to; empty: none

    @classmethod
    def for_settings(cls, settings: Settings) -> Workspaces:
        """Workspaces under `<data_dir>/workspaces`."""
        return cls(settings.data_dir / "workspaces", settings.workspace, origins=forge_origins(settings))

    def mirror_path(self, key: str) -> Path:
        return self.root / MIRRORS / f"{check_name(key, 'repository key')}.git"

    def task_path(self, task: str) -> Path:
        return self.root / TASKS / check_name(task, "task id")

    def _credentials_for(self, url: str, auth: GitCredentials | None) -> GitCredentials | None:
        """`auth` if `url` is on a configured forge host; None for a local path; else refuse, sending nothing."""
        if auth is None:
            return None
        origin = origin_of(url)
        local = url.lower().startswith("file://") or ("://" not in url and not re.match(r"^[^/]+@[^/]+:", url))
        if local:
            return None  # a local path or file:// URL (`forgebot run`, tests): no credentials at all
        if origin is None or origin not in self.origins:
            raise CredentialsRefused(
                f"refusing to send forge credentials to {origin or 'a non-HTTP URL'}: not the configured forge host"
            )
        return auth

    # --- git plumbing ----------------------------------------------------------------------------

    async def _run(self, args: Sequence[str], cwd: Path | None = None, auth: GitCredentials | None = None) -> str:
        """`git <args>` through the hardened runner, on the mirror or worktree at `cwd` (None: no repository)."""
        name, email = self.settings.author("")  # the reflogs' (no command here commits): configured, or forgebot's
        identity = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name,
                    "GIT_COMMITTER_EMAIL": email}
        config = {"http.extraHeader": auth.header()} if auth is not None else {}
        secrets = [auth.token.get_secret_value(), auth.header()] if auth is not None else []
        repo = Repo.at(cwd) if cwd is not None else None
        done = await asyncio.to_thread(
            gitrunner.run, args, repo, env=identity, config=config, protocols=self.settings.allowed_protocols,
            secrets=secrets, timeout=self.settings.git_timeout,
        )
        if done.returncode != 0:
            raise GitError(f"git {args[0]} failed ({done.returncode}): {done.stderr[-800:]}")
        return done.stdout

    @asynccontextmanager
    async def _locked(self, key: str) -> AsyncIterator[None]:
        path = self.root / "locks" / f"{check_name(key, 'repository key')}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = path.open("a")
        try:
            await asyncio.to_thread(fcntl.flock, handle, fcntl.LOCK_EX)
            yield
        finally:
            handle.close()  # closing releases the lock

    # --- operations ------------------------------------------------------------------------------

    async def mirror(self, key: str, url: str, auth: GitCredentials | None = None) -> Path:
        """Create or refresh the bare mirror of `url`; only new objects are fetched."""
        path = self.mirror_path(key)
        _not_an_option(url, "url")
        auth = self._credentials_for(url, auth)
        async with self._locked(key):
            if not (path / "HEAD").exists():
                path.mkdir(parents=True, exist_ok=True)
                await self._run(["init", "--bare", "--quiet", str(path)])
                await self._run(["remote", "add", "origin", url], cwd=path)
                await self._run(["config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"], cwd=path)
            else:
                await self._run(["remote", "set-url", "origin", url], cwd=path)
            await self._run(["fetch", "--prune", "--no-tags", "--quiet", "origin"], cwd=path, auth=auth)
        return path

    async def fetch_ref(self, key: str, ref: str, local: str, auth: GitCredentials | None = None) -> str:
        """Fetch one ref of the mirror's origin into `local` of the mirror; the commit it names.

        For a change's head (`refs/pull/7/head`): the mirror fetches branches only, and a change from a
        fork has no branch in the repository. GitError when origin has no such ref.
        """
        mirror = self.mirror_path(key)
        for value, what in ((ref, "ref"), (local, "local ref")):
            _not_an_option(value, what)
            await self._run(["check-ref-format", value])
        async with self._locked(key):
            url = (await self._run(["remote", "get-url", "origin"], cwd=mirror)).strip()
            await self._run(["fetch", "--no-tags", "--quiet", "origin", f"+{ref}:{local}"], cwd=mirror,
                            auth=self._credentials_for(url, auth))
            return (await self._run(["rev-parse", "--verify", "--quiet", f"{local}^{{commit}}"], cwd=mirror)).strip()

    async def worktree(self, key: str, task: str, branch: str, start: str) -> Path:
        """A worktree for `task` on `branch`, created from `start` (e.g. `origin/main`); reused on retry."""
        mirror, path = self.mirror_path(key), self.task_path(task)
        await self._run(["check-ref-format", "--branch", branch])
        _not_an_option(start, "start revision")
        async with self._locked(key):
            if os.path.lexists(path / ".git"):  # a retry: the runner checks this `.git` is still the bot's
                current = (await self._run(["symbolic-ref", "--short", "HEAD"], cwd=path)).strip()
                if current != branch:
                    raise GitError(f"task {task} already works on {current}, not {branch}")
                return path
            path.parent.mkdir(parents=True, exist_ok=True)
            await self._run(["worktree", "add", "--quiet", "--no-track", "-B", branch, str(path), start], cwd=mirror)
        Repo.at(path).verify()  # the layout the runner relies on from now on (GitTampered if not)
        return path

    async def holder(self, key: str, branch: str) -> str | None:
        """The task whose worktree has `branch` checked out (git allows one per branch), or None.

        A new task on an item works on the item's branch; an earlier task on it that failed keeps its
        worktree (retention) and with it the branch, so the new task asks who holds it to free it.
        """
        mirror = self.mirror_path(key)
        if not (mirror / "HEAD").exists():
            return None
        listing = await self._run(["worktree", "list", "--porcelain"], cwd=mirror)
        tasks = (self.root / TASKS).resolve()
        for block in listing.split("\n\n"):
            fields = dict(line.partition(" ")[::2] for line in block.splitlines() if line)
            path = Path(fields.get("worktree", ""))
            if fields.get("branch") == f"refs/heads/{branch}" and path.parent.resolve() == tasks:
                return path.name
        return None

    async def others_commits(self, key: str, branch: str, base: str, own: Sequence[str]) -> tuple[str, int]:
        """The commit `branch` names in the mirror's origin ("" when there is no such branch), and how many
        of its commits since `base` someone wrote whose email is none of `own` (the bot's).

        Read from the mirror as last fetched: a caller about to replace the branch fetches it first, since
        a person may have pushed to the bot's branch since the task began (a fix on its merge request).
        Authors count, not committers, and merges do not: GitLab's "Rebase" button commits the bot's
        own commits again as the person who pressed it, and GitHub's "Update branch" adds a merge of the
        default branch; neither holds anyone's work but the bot's.
        """
        mirror = self.mirror_path(key)
        await self._run(["check-ref-format", "--branch", branch])
        _not_an_option(base, "base revision")
        try:
            tip = (await self._run(["rev-parse", "--verify", "--quiet", f"refs/remotes/origin/{branch}^{{commit}}"],
                                   cwd=mirror)).strip()
        except GitError:
            return "", 0
        authors = (await self._run(["log", "--no-merges", "--format=%ae", tip, "--not", base, "--"],
                                   cwd=mirror)).split()
        mine = {email.lower() for email in own}
        return tip, sum(1 for author in authors if author.lower() not in mine)

    async def push(self, worktree: Path, url: str, branch: str, auth: GitCredentials | None = None,
                   *, lease: str | None = None) -> None:
        """Push HEAD to `branch` at `url`, the token passed for this command only.

        Without `lease`, only a fast-forward. With it, the bot's own branch is replaced (after a reset or
        by a new task), but only while it still names that commit ("": only while there is no such
        branch), so a push by someone else since it was read is refused, not overwritten.
        """
        await self._run(["check-ref-format", "--branch", branch])
        _not_an_option(url, "url")
        auth = self._credentials_for(url, auth)
        options = [f"--force-with-lease=refs/heads/{branch}:{lease}"] if lease is not None else []
        refspec = f"HEAD:refs/heads/{branch}"
        try:
            await self._run(["push", "--quiet", "--no-verify", *options, url, refspec], cwd=worktree, auth=auth)
        except GitError as exc:
            reason = push_refusal(str(exc).partition("): ")[2])  # `_run`'s "git push failed (N): <stderr>"
            if reason is None or isinstance(exc, CredentialsRefused):
                raise
            raise PushRefused(branch, reason) from exc

    async def cleanup(self, key: str, task: str) -> None:
        """Remove a finished task's worktree and its local branch bookkeeping.

        A worktree whose `.git` a check replaced is deleted without asking git about it first;
        `worktree prune` then forgets its admin dir.
        """
        path, mirror = self.task_path(task), self.mirror_path(key)
        async with self._locked(key):
            # a mirror whose `git init` never finished (a timeout, a full disk) holds no worktree: asking git
            # to prune it failed again, and hid the task's own failure behind that one
            if (mirror / "HEAD").exists():
                if path.exists() and _is_the_bots(path):
                    await self._run(["worktree", "remove", "--force", str(path)], cwd=mirror)
                shutil.rmtree(path, ignore_errors=True)
                await self._run(["worktree", "prune"], cwd=mirror)
        shutil.rmtree(path, ignore_errors=True)

    async def is_clean(self, worktree: Path) -> bool:
        """True when nothing is modified, staged or untracked (a task may finish only then)."""
        return not (await self._run(["status", "--porcelain"], cwd=worktree)).strip()

    async def read_file(self, key: str, revision: str, path: str) -> str | None:
        """A file at a revision of the mirror (e.g. `.forgebot.yml` on `origin/main`); None if absent."""
        _not_an_option(revision, "revision")
        if path.startswith(("/", "-")) or ".." in Path(path).parts:
            raise ValueError(f"path {path!r} must be relative to the repository root")
        mirror = self.mirror_path(key)
        listed = await self._run(["ls-tree", "--name-only", revision, "--", path], cwd=mirror)
        if not listed.strip():
            return None
        return await self._run(["show", f"{revision}:{path}"], cwd=mirror)

    def usage(self) -> int:
        """Bytes used under the root (files as stored, symlinks not followed)."""
        total = 0
        for directory, _, files in os.walk(self.root):
            total += sum(os.lstat(os.path.join(directory, name)).st_size for name in files)
        return total

    async def enforce_bound(self, active: set[str]) -> list[str]:
        """Fit under `max_bytes` before a new worktree: what was removed (task ids and mirror keys).

        First finished tasks' worktrees go (every task not in `active`, oldest first); if that is not
        enough, mirrors no remaining worktree uses, least recently fetched first (the next task on
        that repository clones it again). Still over: WorkspaceFull, so the task fails loudly rather
        than filling the disk.
        """
        removed: list[str] = []
        if self.usage() <= self.settings.max_bytes:
            return removed
        tasks = self.root / TASKS
        finished = [p for p in tasks.iterdir() if p.name not in active] if tasks.exists() else []
        for path in sorted(finished, key=lambda p: p.stat().st_mtime):
            if self.usage() <= self.settings.max_bytes:
                break
            log.info("workspace over its bound: removing finished task %s", path.name)
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name)
        for mirror in self._mirrors():
            await self._run(["worktree", "prune"], cwd=mirror)  # forget the removed worktrees
        for mirror in sorted(self._mirrors(), key=_last_fetch):
            if self.usage() <= self.settings.max_bytes:
                break
            key = mirror.name.removesuffix(".git")
            async with self._locked(key):
                if any((mirror / "worktrees").glob("*")):
                    continue  # a task still works from it
                log.info("workspace over its bound: removing idle mirror %s", key)
                shutil.rmtree(mirror, ignore_errors=True)
                removed.append(key)
        if self.usage() > self.settings.max_bytes:
            raise WorkspaceFull(f"workspaces use {self.usage()} bytes, bound {self.settings.max_bytes}")
        return removed

    def _mirrors(self) -> list[Path]:
        return sorted((self.root / MIRRORS).glob("*.git"))


def _last_fetch(mirror: Path) -> float:
    """When the mirror was last refreshed (FETCH_HEAD), else created."""
    fetched = mirror / "FETCH_HEAD"
    return (fetched if fetched.exists() else mirror).stat().st_mtime


def _is_the_bots(worktree: Path) -> bool:
    try:
        Repo.at(worktree).verify()
    except GitTampered:
        return False
    return True


def repo_key(forge: str, project: str) -> str:
    """The mirror's directory name for a repository (`gitlab-42`, `github-octo__app`).

    A name that cannot be one as it is — longer than 128 characters (a GitHub owner of 39 and a
    repository name of 100 are allowed), or holding `..` — gets a readable prefix and a digest of the
    whole name: it stopped every task on such a repository with a ValueError.
    """
    key = f"{forge}-{project.replace('/', '__')}"
    if _NAME.fullmatch(key) and ".." not in key:
        return key
    readable = re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9._-]", "_", key))[:96]
    return check_name(f"{readable}-{hashlib.sha256(project.encode()).hexdigest()[:16]}", "repository key")
