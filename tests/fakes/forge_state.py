"""The fake forge's state: issues, changes, threads, members, injected faults and a request log.

Shared by the GitLab and GitHub routes of the fake HTTP forge. Tests seed and read it directly;
every mutation happens under one lock because uvicorn serves from its own thread.
"""

from __future__ import annotations

import hashlib
import ipaddress
import itertools
import re
import subprocess
import threading
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["issue", "change"]
Key = tuple[str, str, int]  # (forge, project, number)
ThreadKey = tuple[str, str, Kind, int]
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass
class FakeIssue:
    title: str
    body: str
    labels: list[str] = field(default_factory=list)
    author: str = "alice"
    reactions: list[str] = field(default_factory=list)
    state: str = "opened"  # "closed": listed by `GET …/issues?state=closed`
    updated_at: str = "2026-01-01T00:00:00Z"
    confidential: bool = False  # GitLab: members only; `confidential=false` leaves it out of a listing


@dataclass
class FakeComment:
    """A note (GitLab) or a conversation or review comment (GitHub)."""

    id: int
    body: str
    author: str
    system: bool = False
    author_id: int = 0  # the bot's comments carry its user id (`bot_user_id`); 0: the fake's other users (7)
    position: dict[str, object] | None = None  # GitLab position or GitHub {path, line, side, start_line}
    reactions: list[str] = field(default_factory=list)
    internal: bool = False  # a GitLab internal note (members only)


@dataclass
class FakeThread:
    id: str
    comments: list[FakeComment]
    individual: bool = True
    review: bool = False  # a GitHub diff thread
    resolved: bool = False


@dataclass
class FakeFile:
    old_path: str
    new_path: str
    status: Literal["added", "modified", "deleted", "renamed"]
    patch: str

    def rows(self) -> list[tuple[str, int, int]]:
        """(kind, old counter, new counter) per diff line; parsed here independently of the bot."""
        rows: list[tuple[str, int, int]] = []
        old = new = 0
        for raw in self.patch.splitlines():
            match = _HUNK.match(raw)
            if match:
                old, new = int(match.group(1)), int(match.group(2))
            elif raw.startswith("+"):
                rows.append(("added", old, new))
                new += 1
            elif raw.startswith("-"):
                rows.append(("removed", old, new))
                old += 1
            elif not raw.startswith("\\"):
                rows.append(("context", old, new))
                old, new = old + 1, new + 1
        return rows


@dataclass
class FakeChange:
    title: str
    body: str
    source_branch: str
    target_branch: str = "main"
    files: list[FakeFile] = field(default_factory=list)
    author: str = "alice"
    base_sha: str = "b" * 40
    head_sha: str = "c" * 40
    start_sha: str = "a" * 40
    state: str = "opened"  # "merged": listed by GitLab `state=merged`, GitHub `state=closed` with `merged_at`
    draft: bool = False
    reactions: list[str] = field(default_factory=list)
    updated_at: str = "2026-01-01T00:00:00Z"


@dataclass
class FakeProject:
    """A repository as the forge's API reports it (GitLab `GET /projects/:id`, GitHub `/repositories/:id`)."""

    id: int
    path: str  # GitLab path_with_namespace, GitHub owner/name
    clone_url: str = ""  # "": on the fake forge's own host, as a real forge answers
    default_branch: str = "main"
    web_url: str = ""
    git_dir: str = ""  # a local repository whose files the file API serves ("": no files)
    visibility: str = "private"  # GitLab `visibility`: private, internal, public; "" leaves the field out

    def file(self, ref: str, path: str) -> bytes | None:
        """`path` at `ref` in `git_dir`, as the forge's file API reads it; None: no such file."""
        if not self.git_dir or ref.startswith("-") or path.startswith("-"):
            return None
        done = subprocess.run(["git", "--git-dir", self.git_dir, "show", f"{ref}:{path}"], capture_output=True)
        return done.stdout if done.returncode == 0 else None


@dataclass
class FakeHook:
    id: int
    url: str
    secret: str
    events: list[str] = field(default_factory=list)
    # what the forge keeps of its deliveries (`tests.fakes.forge_deliveries`): GitLab's run of failures and
    # `alert_status`/`disabled_until`; GitHub's `active` and `last_response` (code, status, message)
    failures: int = 0
    alert_status: str = "executable"
    disabled_until: str | None = None
    active: bool = True
    last_response: tuple[int | None, str, str | None] = (None, "unused", None)
    # every delivery, newest last: GitLab's hook events (`GET …/hooks/:id/events`), GitHub's deliveries
    # (`GET …/hooks/:id/deliveries`); each with what sending it again needs (`FakeDelivery`)
    log: list[FakeDelivery] = field(default_factory=list)


@dataclass
class FakeDelivery:
    id: int
    key: str  # GitLab's Idempotency-Key, GitHub's delivery guid: the same when it is sent again
    event: str  # X-Gitlab-Event / X-GitHub-Event
    payload: dict[str, Any]
    status: int | None  # the answer's status; None: none came
    at: str  # when it was sent (ISO 8601, UTC)
    again: bool = False  # sent again (GitHub's `redelivery`)


@dataclass
class Fault:
    """Answer the next `count` requests matching `method` and `path` (a substring) with `status`.

    `after=True` processes the request first and then fails: the write landed, the answer was lost.
    `skip` lets that many matching requests through first (e.g. the status comment before a report).
    """

    method: str
    path: str
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    count: int = 1
    after: bool = False
    message: str = ""
    skip: int = 0


@dataclass
class FakeForgeState:
    """Everything the fake forge knows."""

    issues: dict[Key, FakeIssue] = field(default_factory=dict)
    changes: dict[Key, FakeChange] = field(default_factory=dict)
    threads: dict[ThreadKey, list[FakeThread]] = field(default_factory=dict)
    members: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (forge, project, user) → level/role
    tokens: set[str] = field(default_factory=set)  # accepted tokens; empty accepts any
    app_key: str | None = None  # GitHub App public key (PEM); JWTs are verified against it
    installation_tokens: list[str] = field(default_factory=list)
    installation_token_ttl: int = 3600
    faults: list[Fault] = field(default_factory=list)
    log: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)  # (method, path, headers)
    bot_user: str = "forgebot"
    bot_name: str = "forgebot"  # GitLab's `name` of the bot user (a project token's bot: the token's name)
    bot_user_id: int = 4242  # GitLab's `GET /user` id and GitHub's for the token's user
    # the bot user's emails GitLab's `GET /user` shows it: its commit email (GitLab's private one, unless the
    # user picked another) and its primary email; "" leaves the field out
    bot_commit_email: str = "4242-forgebot@users.noreply.gitlab.example.com"
    bot_email: str = "forgebot@corp.example"
    # the bot account's SSH keys by forge: (public key line, GitLab's usage type) as `GET /user/keys` and
    # GitHub's `GET /user/ssh_signing_keys` list them (GitHub's list holds signing keys only)
    ssh_keys: dict[str, list[tuple[str, str]]] = field(default_factory=lambda: {"gitlab": [], "github": []})
    # the token's scopes: GitLab's `GET /personal_access_tokens/self`, a classic GitHub token's `X-OAuth-Scopes`
    # (None there: a fine-grained token, which sends no such header)
    token_scopes: dict[str, list[str] | None] = field(default_factory=lambda: {"gitlab": ["api"], "github": None})
    token_expires_at: str | None = None
    # a GitLab before 15.7: `GET /merge_requests/:iid/diffs` is no route there (404), only `/changes`
    gitlab_without_diffs: bool = False
    projects: dict[tuple[str, str], FakeProject] = field(default_factory=dict)  # (forge, id or path)
    hooks: dict[tuple[str, str], list[FakeHook]] = field(default_factory=dict)  # (forge, id or path)
    # whether the forge takes a hook URL on a local network (a loopback or private address, `localhost`):
    # GitLab only when an administrator allows it ("Allow requests to the local network from webhooks and
    # integrations", off by default), GitHub.com never (GitHub Enterprise Server does)
    local_hooks: bool = False
    # a GitHub App's own webhook (`/app/hook/config`), which delivers every installation's events
    app_hook: FakeHook | None = None
    lock: threading.RLock = field(default_factory=threading.RLock)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1000))

    def next_id(self) -> int:
        with self.lock:
            return next(self._ids)

    def grant(self, forge: str, project: str, user: str, level: int | str) -> None:
        """Make `user` (GitLab user id, GitHub login) a member: GitLab access level or GitHub role name."""
        with self.lock:
            self.members[(forge, project, user)] = str(level)

    def add_project(self, forge: str, project: FakeProject) -> FakeProject:
        """Make `project` answer by id and by path (GitLab accepts both; GitHub by owner/name too)."""
        with self.lock:
            self.projects[(forge, str(project.id))] = project
            self.projects[(forge, project.path)] = project
        return project

    def project(self, forge: str, key: str) -> FakeProject | None:
        with self.lock:
            return self.projects.get((forge, key))

    def add_issue(self, forge: str, project: str, number: int, issue: FakeIssue) -> None:
        with self.lock:
            self.issues[(forge, project, number)] = issue

    def add_change(self, forge: str, project: str, number: int, change: FakeChange) -> None:
        with self.lock:
            self.changes[(forge, project, number)] = change

    def closed_items(
        self, forge: str, project: str, kind: Kind, since: str = ""
    ) -> list[tuple[int, FakeIssue | FakeChange]]:
        """Closed issues or merged changes updated at or after `since`, most recently updated first."""
        with self.lock:
            store: dict[Key, FakeIssue] | dict[Key, FakeChange] = self.issues if kind == "issue" else self.changes
            wanted = "closed" if kind == "issue" else "merged"
            found = [(n, item) for (f, p, n), item in store.items()
                     if (f, p) == (forge, project) and item.state == wanted and item.updated_at >= since]
        return sorted(found, key=lambda pair: (pair[1].updated_at, pair[0]), reverse=True)

    def threads_of(self, forge: str, project: str, kind: Kind, number: int) -> list[FakeThread]:
        with self.lock:
            return self.threads.setdefault((forge, project, kind, number), [])

    def comments_on(self, forge: str, project: str, number: int, kind: Kind = "issue",
                    *, status: bool = False) -> list[FakeComment]:
        """Every comment on an issue or change, in posting order, diff comments included.

        The task's status comment (edited in place as it moves) is left out unless `status`: tests
        about what a route writes count its writes, not the acknowledgement.
        """
        with self.lock:
            threads = self.threads.get((forge, project, kind, number), [])
            found = sorted((c for t in threads for c in t.comments), key=lambda c: c.id)
        return [c for c in found if status or ":purpose=status -->" not in c.body]

    def add_thread(self, key: ThreadKey, body: str, *, individual: bool = True, review: bool = False,
                   position: dict[str, object] | None = None, author: str | None = None,
                   author_id: int = 0, internal: bool = False) -> FakeThread:
        """A thread whose first comment is by `author` (the bot when None; GitLab ids: the bot's own,
        `author_id`, or the fake's 7 for everyone else)."""
        with self.lock:
            by = author or self.bot_user
            comment = FakeComment(id=next(self._ids), body=body, author=by, position=position,
                                  author_id=author_id or (self.bot_user_id if by == self.bot_user else 0),
                                  internal=internal)
            thread_id = str(comment.id) if review else hashlib.sha1(str(comment.id).encode()).hexdigest()
            thread = FakeThread(id=thread_id, comments=[comment], individual=individual, review=review)
            self.threads.setdefault(key, []).append(thread)
            return thread

    def add_comment(self, key: Key, body: str) -> FakeComment:
        """Post a conversation comment on an issue (kept for the walking-skeleton tests)."""
        return self.add_thread((key[0], key[1], "issue", key[2]), body).comments[0]

    def find_comment(self, forge: str, project: str, comment_id: int) -> tuple[FakeThread, FakeComment] | None:
        with self.lock:
            for (f, p, _, _), threads in self.threads.items():
                if (f, p) != (forge, project):
                    continue
                for thread in threads:
                    for comment in thread.comments:
                        if comment.id == comment_id:
                            return thread, comment
            return None

    def number_of(self, forge: str, project: str, thread: FakeThread) -> int:
        """The issue or change number holding `thread` (0 when none does)."""
        with self.lock:
            for (f, p, _, number), threads in self.threads.items():
                if (f, p) == (forge, project) and any(t is thread for t in threads):
                    return number
            return 0

    def take_fault(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.count > 0 and fault.method == method and fault.path in path:
                    if fault.skip > 0:
                        fault.skip -= 1
                        return None
                    fault.count -= 1
                    return fault
            return None

    def requests_to(self, method: str, fragment: str) -> int:
        with self.lock:
            return sum(1 for m, p, _ in self.log if m == method and fragment in p)


def local_address(url: str) -> str:
    """The host of `url` when it is on a local network as the forges tell (loopback, private, link-local,
    `localhost`), else "". A name is not resolved: the fake has no DNS of its own."""
    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return host
    try:
        found = ipaddress.ip_address(host)
    except ValueError:
        return ""
    return host if found.is_private or found.is_loopback or found.is_link_local else ""
