"""Forge-neutral records: repositories, issues, changes, comments, diffs.

Frozen pydantic models: the adapters translate SDK objects into these, and nothing above the
adapters sees an SDK type.
"""

from __future__ import annotations

import base64
from enum import IntEnum, StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, SecretStr

ForgeKind = Literal["gitlab", "github", "local"]  # "local": `forgebot run` on a checkout, no forge


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class RepoRef(_Frozen):
    """A repository: GitLab project id (as text) or GitHub `owner/name`."""

    forge: ForgeKind
    project: str
    path: str
    default_branch: str = "main"
    clone_url: str = ""
    web_url: str = ""
    id: int = 0  # the forge's numeric id (GitLab project id, GitHub repository id); 0: not resolved
    # who may see the repository, as the forge's API says: "private", "internal" (GitLab: any signed-in
    # user; GitHub Enterprise: the enterprise's members), "public"; "": not asked (a payload's, `forgebot run`)
    visibility: str = ""


class IssueRef(_Frozen):
    """An issue by its per-project number (GitLab `iid`, GitHub `number`)."""

    kind: Literal["issue"] = "issue"
    repo: RepoRef
    number: int


class ChangeRef(_Frozen):
    """A change (GitLab merge request `iid`, GitHub pull request `number`)."""

    kind: Literal["change"] = "change"
    repo: RepoRef
    number: int


Target = IssueRef | ChangeRef


def where_task_speaks(repo: RepoRef, number: int, *, target: str = "", mode: str = "") -> Target:
    """Where a task's notes go (acknowledgement, status, busy, cancel, expiry, failure): one rule.

    A task speaks where it was asked: a `/review` (mode `review`, or a trigger on a change) on the
    change, every other task on its issue. The job, the graph's status comment, the expiry sweep
    and the reaper all ask this, so a GitLab `/review`'s note lands on merge request !N, never on
    issue #N.
    """
    if target == "change" or mode == "review":
        return ChangeRef(repo=repo, number=number)
    return IssueRef(repo=repo, number=number)


def item_url(repo: RepoRef, target: str, number: int, web_root: str = "") -> str:
    """The web address of an issue or change ("" when it cannot be known).

    From the repository's own web URL as the forge answered it; without one (a task not resolved
    yet), from `web_root`, the forge's web address as the service is configured.
    """
    root = repo.web_url.rstrip("/") or (f"{web_root.rstrip('/')}/{repo.path}" if web_root and repo.path else "")
    if not root:
        return ""
    if repo.forge == "gitlab":
        return f"{root}/-/{'issues' if target == 'issue' else 'merge_requests'}/{number}"
    return f"{root}/{'issues' if target == 'issue' else 'pull'}/{number}"


class CommentRef(_Frozen):
    """A comment the bot can edit, reply to or react to.

    `thread` is the GitLab discussion id, or on GitHub the id of the top-level review comment of a
    diff thread; empty for a GitHub conversation comment (those are flat). `review` marks a GitHub
    review (diff) comment, which lives under a different endpoint than conversation comments.
    """

    target: IssueRef | ChangeRef
    id: int
    thread: str = ""
    review: bool = False
    url: str = ""

    @property
    def issue(self) -> IssueRef | ChangeRef:
        """Alias kept for callers written before changes existed."""
        return self.target


class Comment(_Frozen):
    ref: CommentRef
    author: str
    author_id: int = 0  # the forge's user id (0: unknown), for permission checks on the author
    body: str
    system: bool = False
    resolved: bool = False
    path: str = ""  # set for diff comments
    line: int | None = None
    internal: bool = False  # a GitLab internal note: members only, never repeated where others read


class Issue(_Frozen):
    ref: IssueRef
    title: str
    body: str
    labels: tuple[str, ...] = ()
    author: str = ""
    author_id: int = 0  # the forge's user id (0: unknown)
    comments: tuple[Comment, ...] = ()
    confidential: bool = False  # GitLab: only the project's members (Reporter and up) and its author see it


class Closed(_Frozen):
    """A merged change or a closed issue as the forge lists them: what project memory reads.

    Only the listing: the text in it (title, body) is anybody's until its author's access is asked
    (`graph.discussion`). `updated_at` is the forge's ISO 8601 time, the cursor of the next read.
    """

    ref: IssueRef | ChangeRef
    title: str
    body: str
    author: str = ""
    author_id: int = 0
    updated_at: str = ""


class LineKind(StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    CONTEXT = "context"


class DiffLine(_Frozen):
    """One line of a hunk with both position counters; the absent side is the next line's number.

    GitLab's `line_code` uses both counters even for added/removed lines, so both are kept.
    """

    kind: LineKind
    old_pos: int
    new_pos: int
    text: str

    @property
    def old_line(self) -> int | None:
        return None if self.kind is LineKind.ADDED else self.old_pos

    @property
    def new_line(self) -> int | None:
        return None if self.kind is LineKind.REMOVED else self.new_pos


class Hunk(_Frozen):
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: tuple[DiffLine, ...]


FileStatus = Literal["added", "modified", "deleted", "renamed"]


class FileChange(_Frozen):
    old_path: str
    new_path: str
    status: FileStatus
    hunks: tuple[Hunk, ...] = ()


class Change(_Frozen):
    """A change with the SHAs inline comments must anchor on and its files with parsed hunks."""

    ref: ChangeRef
    title: str
    body: str
    author: str
    source_branch: str
    target_branch: str
    base_sha: str
    head_sha: str
    start_sha: str
    state: str
    draft: bool = False
    url: str = ""
    files: tuple[FileChange, ...] = ()
    author_id: int = 0  # the forge's user id (0: unknown, so never a member)
    # The ref of the target repository that holds the head, whether the source branch is there or in a
    # fork (GitHub `refs/pull/N/head`, GitLab `refs/merge-requests/N/head`): a fork's branch is no branch
    # of the target, and is often named like one of its own (`main`). Empty: the source branch itself.
    head_ref: str = ""


class ChangeRequest(_Frozen):
    """What the bot asks a forge to open: a change from an already pushed `source_branch`."""

    source_branch: str
    title: str
    body: str
    target_branch: str | None = None  # None: the repository's default branch
    draft: bool = False
    closes: IssueRef | None = None

    @property
    def description(self) -> str:
        """The body with the closing keyword both forges honour, so merging the change closes `closes`."""
        return self.body + (f"\n\nCloses #{self.closes.number}" if self.closes else "")


Side = Literal["new", "old"]


class InlineNote(_Frozen):
    """A comment on `line` of `path` (new side: added or context lines; old side: removed lines).

    `start_line` (same side) makes it a multi-line comment ending at `line`.
    """

    path: str
    line: int
    body: str
    side: Side = "new"
    start_line: int | None = None


class Marker(_Frozen):
    """What a write is for: the task id and a purpose; rendered as a hidden HTML comment."""

    task: str
    purpose: str


class Reaction(StrEnum):
    """Reactions the bot uses, named forge-neutrally; adapters map them to emoji names."""

    EYES = "eyes"
    THUMBS_UP = "thumbs_up"
    ROCKET = "rocket"
    CONFUSED = "confused"


class Capability(StrEnum):
    """What an adapter can do beyond the common ground; callers branch on these, never on a class."""

    ISSUE_THREADS = "issue_threads"  # replies nest under a comment on issues (GitLab discussions)
    RESOLVE_THREADS = "resolve_threads"
    MULTILINE_INLINE = "multiline_inline"
    DRAFT_CHANGES = "draft_changes"


class AccessLevel(IntEnum):
    """A user's access to a repository, on GitLab's scale; GitHub roles map onto it.

    GitLab: guest 10, reporter 20, developer 30, maintainer 40, owner 50.
    GitHub: read → REPORTER, triage → TRIAGE, write → DEVELOPER, maintain → MAINTAINER, admin → OWNER.
    Triggering needs DEVELOPER (GitLab Developer, GitHub write) or more.
    """

    NONE = 0
    GUEST = 10
    REPORTER = 20
    TRIAGE = 25
    DEVELOPER = 30
    MAINTAINER = 40
    OWNER = 50


class GitCredentials(_Frozen):
    """HTTP basic credentials for git: GitLab takes user `oauth2`, GitHub `x-access-token`."""

    username: str
    token: SecretStr

    def header(self) -> str:
        """The `Authorization` header git sends (via `http.extraHeader`, never stored)."""
        pair = f"{self.username}:{self.token.get_secret_value()}".encode()
        return "Authorization: Basic " + base64.b64encode(pair).decode()


class BotIdentity(_Frozen):
    """Who the bot's token acts as, asked of the forge at start-up: its events never trigger, and its
    own comments are known by their author, never by the hidden marker anyone can type."""

    id: int | None = None
    login: str = ""
    # what the token may do, where the forge says: a GitLab personal, project or group token's scopes, a
    # classic GitHub token's `X-OAuth-Scopes`; None where it does not (a GitHub App, a fine-grained token)
    scopes: tuple[str, ...] | None = None
    expires_at: str = ""  # the token's last day (GitLab), "" when unknown or never
    # the account's emails the forge shows its own user, its commit email first (GitLab): a push rule on
    # commit authors accepts only these, so `forgebot check` compares the configured author with them
    emails: tuple[str, ...] = ()
    name: str = ""  # the account's display name (GitLab; a project or group token's bot: the token's name)

    def wrote(self, comment: Comment) -> bool:
        """Whether the bot is `comment`'s author: the forge's user id when both are known (GitLab),
        else the login (GitHub logins are unique; an App's `<slug>[bot]` cannot be registered)."""
        if self.id is not None and comment.author_id:
            return comment.author_id == self.id
        return bool(self.login) and comment.author.lower() == self.login.lower()


# what a forge says of a hook's deliveries: "ok" (GitHub: the last one was answered 2xx), "enabled" (GitLab:
# not disabled; it shows no last answer), "unused" (nothing delivered yet), "failing" (the last answer was
# not 2xx, or none came), "disabled" (GitLab disabled it after failing deliveries; GitHub: made inactive),
# "unknown" (the forge did not say)
HookState = Literal["ok", "enabled", "unused", "failing", "disabled", "unknown"]


class Hook(_Frozen):
    """A project's webhook as the forge stores it (the secret is write-only on both forges), and what the
    forge says of its deliveries: a hook GitLab disabled after failing deliveries sends nothing more, and
    nothing on the bot's side shows it (`forgebot hooks` does)."""

    id: int
    url: str
    state: HookState = "unknown"
    detail: str = ""  # the forge's own words: the last answer (GitHub), until when it is disabled (GitLab)
    answer: int | None = None  # the last delivery's HTTP status where the forge keeps it (GitHub); None: none


class Redelivery(_Frozen):
    """What asking the forge to send a hook's failed deliveries again did (`Forge.redeliver`)."""

    unanswered: int  # deliveries in the window no attempt of which was answered 2xx
    resent: int  # of those, sent again now (the rest: the forge refused, or its rate limit held them)
    answered: int | None = None  # of those sent again, answered 2xx: GitLab says at once; GitHub later (None)
    refused: str = ""  # why the forge sent nothing (more) again, in its words


class ForgeUser(_Frozen):
    """A user as the forge knows them; `id` is stable, `username` may change."""

    id: int
    username: str
