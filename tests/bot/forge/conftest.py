"""Backends for the contract suite: FakeForge in memory, and both adapters against the fake HTTP forge.

A `Backend` seeds the same data into whichever store backs the forge and reads back the ground
truth (what a user would see on the forge), so the suite asserts on outcomes, not on calls.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import github
import pytest

from foundation.forge import (
    AccessLevel,
    BotIdentity,
    Change,
    ChangeRef,
    FileChange,
    Forge,
    ForgeUser,
    IssueRef,
    RepoRef,
)
from foundation.forge._retry import RetryPolicy, WritePacer
from foundation.forge.diff import parse_hunks
from foundation.forge.github import GitHubForge
from foundation.forge.gitlab import GitLabClient, GitLabForge
from tests.conftest import GITHUB_TOKEN, GITLAB_TOKEN
from tests.fakes.forge import FakeForge
from tests.fakes.forge_http import FakeChange, FakeFile, FakeForgeState, FakeIssue, FakeProject
from tests.fakes.server import ServerThread

APP_PATCH = "\n".join([
    "@@ -1,6 +1,7 @@",
    " <?php",
    " namespace App;",
    "-use Old\\Thing;",
    "+use New\\Thing;",
    "+use New\\Other;",
    " ",
    " function run(): void",
    " {",
    "@@ -20,3 +21,3 @@ function helper()",
    " {",
    "-    return 1;",
    "+    return 2;",
    " }",
    "",
])
RENAME_PATCH = "@@ -1,4 +1,4 @@\n <?php\n-namespace Legacy;\n+namespace Mail;\n \n class Mailer {}\n"
ADDED_PATCH = "@@ -0,0 +1,3 @@\n+<?php\n+\n+echo 'hi';\n"
DELETED_PATCH = "@@ -1,2 +0,0 @@\n-<?php\n-echo 'bye';\n"
FILES = [
    FakeFile("src/app.php", "src/app.php", "modified", APP_PATCH),
    FakeFile("src/Legacy/Mailer.php", "src/Mail/Mailer.php", "renamed", RENAME_PATCH),
    FakeFile("src/Added.php", "src/Added.php", "added", ADDED_PATCH),
    FakeFile("src/Gone.php", "src/Gone.php", "deleted", DELETED_PATCH),
]
_ROLES = {AccessLevel.REPORTER: "read", AccessLevel.TRIAGE: "triage", AccessLevel.DEVELOPER: "write",
          AccessLevel.MAINTAINER: "maintain", AccessLevel.OWNER: "admin"}


@dataclass
class Backend:
    name: str
    forge: Forge
    repo: RepoRef
    state: FakeForgeState | None = None
    fake: FakeForge | None = None
    sleeps: list[float] = field(default_factory=list)

    @property
    def forge_name(self) -> str:
        return self.repo.forge

    def seed_issue(self, number: int, title: str = "Add a file API", body: str = "Please.",
                   labels: tuple[str, ...] = ("backend",), author: str = "alice") -> IssueRef:
        ref = IssueRef(repo=self.repo, number=number)
        if self.fake is not None:
            from foundation.forge import Issue

            self.fake.issues[ref] = Issue(ref=ref, title=title, body=body, labels=labels, author=author)
        else:
            assert self.state is not None
            self.state.add_issue(self.forge_name, self.repo.project, number,
                                 FakeIssue(title=title, body=body, labels=list(labels), author=author))
        return ref

    def seed_change(self, number: int, source_branch: str = "feature/files") -> ChangeRef:
        ref = ChangeRef(repo=self.repo, number=number)
        seeded = FakeChange(title="File API", body="Adds it.", source_branch=source_branch, files=list(FILES))
        if self.fake is not None:
            files = tuple(FileChange(old_path=f.old_path, new_path=f.new_path, status=f.status,
                                     hunks=parse_hunks(f.patch)) for f in FILES)
            self.fake.changes[ref] = Change(
                ref=ref, title=seeded.title, body=seeded.body, author=seeded.author, source_branch=source_branch,
                target_branch="main", base_sha=seeded.base_sha, head_sha=seeded.head_sha, start_sha=seeded.start_sha,
                state="opened", files=files)
        else:
            assert self.state is not None
            self.state.add_change(self.forge_name, self.repo.project, number, seeded)
        return ref

    def close(self, target: IssueRef | ChangeRef, updated_at: str) -> None:
        """Close an issue or merge a change at `updated_at` (what `list_closed` then lists)."""
        if self.fake is not None:
            from foundation.forge import Closed

            item = self.fake.issues.get(target) if isinstance(target, IssueRef) else self.fake.changes.get(target)
            assert item is not None
            self.fake.closed.append(Closed(ref=target, title=item.title, body=item.body, author=item.author,
                                           author_id=item.author_id, updated_at=updated_at))
            return
        assert self.state is not None
        key = (self.forge_name, self.repo.project, target.number)
        found = self.state.issues[key] if isinstance(target, IssueRef) else self.state.changes[key]
        found.state, found.updated_at = ("closed" if isinstance(target, IssueRef) else "merged"), updated_at

    def seed_comment(self, target: IssueRef | ChangeRef, body: str, author: str = "alice") -> None:
        if self.fake is not None:
            self.fake.seed_comment(target, body, author)
        else:
            assert self.state is not None
            self.state.add_thread((self.forge_name, self.repo.project, target.kind, target.number), body, author=author)

    def bodies(self, target: IssueRef | ChangeRef) -> list[str]:
        """What a user sees on the forge, in posting order (diff comments included)."""
        if self.fake is not None:
            return self.fake.comments.get(target, [])
        assert self.state is not None
        return [c.body for c in self.state.comments_on(self.forge_name, self.repo.project, target.number, target.kind,
                                                   status=True)]

    def resolved_threads(self, target: ChangeRef) -> int:
        if self.fake is not None:
            return len({c.ref.thread for c in self.fake.posted.get(target, []) if c.resolved})
        assert self.state is not None
        threads = self.state.threads_of(self.forge_name, self.repo.project, "change", target.number)
        return sum(1 for t in threads if t.resolved)

    def open_changes(self, source_branch: str) -> int:
        if self.fake is not None:
            return sum(1 for c in self.fake.changes.values() if c.source_branch == source_branch)
        assert self.state is not None
        return sum(1 for c in self.state.changes.values() if c.source_branch == source_branch)

    def seed_repo(self, repo_id: int, clone_url: str) -> None:
        """The backend's repository as the forge's API describes it, under the numeric `repo_id`."""
        if self.fake is not None:
            self.fake.add_repo(self.repo.model_copy(update={"id": repo_id, "clone_url": clone_url,
                                                            "default_branch": "trunk"}))
        else:
            assert self.state is not None
            self.state.add_project(self.forge_name, FakeProject(id=repo_id if self.forge_name == "github" else
                                                                int(self.repo.project), path=self.repo.path,
                                                                clone_url=clone_url, default_branch="trunk"))

    def seed_file(self, repo_id: int, path: str, content: bytes, work: Path) -> None:
        """`path` holding `content` on the default branch (`trunk`) of the repository `seed_repo` made."""
        if self.fake is not None:
            self.fake.files[(self.repo.project, "trunk", path)] = content
            return
        assert self.state is not None
        checkout = work / "checkout"
        subprocess.run(["git", "init", "-q", "-b", "trunk", str(checkout)], check=True)
        (checkout / path).write_bytes(content)
        git = ["git", "-C", str(checkout), "-c", "user.name=dev", "-c", "user.email=dev@example.com"]
        subprocess.run([*git, "add", path], check=True)
        subprocess.run([*git, "commit", "-qm", "file"], check=True)
        project = self.state.project(self.forge_name, str(repo_id))
        assert project is not None
        project.git_dir = str(checkout / ".git")

    def grant(self, user: ForgeUser, level: AccessLevel) -> None:
        if self.fake is not None:
            self.fake.access[(self.repo.project, user.id)] = level
        elif self.forge_name == "gitlab":
            assert self.state is not None
            self.state.members[("gitlab", self.repo.project, str(user.id))] = str(int(level))
        else:
            assert self.state is not None
            self.state.members[("github", self.repo.project, user.username)] = _ROLES[level]


GITLAB_REPO = RepoRef(forge="gitlab", project="1", path="group/app")
GITHUB_REPO = RepoRef(forge="github", project="octo/app", path="octo/app")


def recording_policy(sleeps: list[float]) -> RetryPolicy:
    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    return RetryPolicy(attempts=4, sleep=sleep, jitter=lambda: 1.0)


def gitlab_backend(server: ServerThread, state: FakeForgeState, token: str = GITLAB_TOKEN) -> Backend:
    sleeps: list[float] = []
    client = GitLabClient(f"{server.url}/gitlab", private_token=token, timeout=5)
    forge = GitLabForge(client, recording_policy(sleeps), BotIdentity(id=state.bot_user_id))  # as learned at start-up
    return Backend("gitlab", forge, GITLAB_REPO, state=state, sleeps=sleeps)


def github_backend(server: ServerThread, state: FakeForgeState, token: str = GITHUB_TOKEN) -> Backend:
    sleeps: list[float] = []
    client = github.Github(auth=github.Auth.Token(token), base_url=f"{server.url}/github", timeout=5, retry=None,
                           seconds_between_requests=0, seconds_between_writes=0, lazy=True)

    async def no_wait(seconds: float) -> None:
        return None  # pacing has its own test with a fake clock

    forge = GitHubForge(client, recording_policy(sleeps), WritePacer(interval=1.0, sleep=no_wait),
                        bot=BotIdentity(login=state.bot_user))
    return Backend("github", forge, GITHUB_REPO, state=state, sleeps=sleeps)


@pytest.fixture
def http_state(fake_forge: FakeForgeState) -> FakeForgeState:
    fake_forge.tokens = {GITLAB_TOKEN, GITHUB_TOKEN}
    return fake_forge


@pytest.fixture(params=["fake-gitlab", "fake-github", "gitlab", "github"])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    name = request.param
    if name.startswith("fake-"):
        kind = name.removeprefix("fake-")
        fake = FakeForge(kind="gitlab" if kind == "gitlab" else "github", strict=True)
        yield Backend(name, fake, GITLAB_REPO if kind == "gitlab" else GITHUB_REPO, fake=fake)
        return
    server: ServerThread = request.getfixturevalue("forge_server")
    state: FakeForgeState = request.getfixturevalue("http_state")
    yield gitlab_backend(server, state) if name == "gitlab" else github_backend(server, state)


@pytest.fixture(params=["gitlab", "github"])
def http_backend(request: pytest.FixtureRequest, forge_server: ServerThread, http_state: FakeForgeState) -> Backend:
    if request.param == "gitlab":
        return gitlab_backend(forge_server, http_state)
    return github_backend(forge_server, http_state)
