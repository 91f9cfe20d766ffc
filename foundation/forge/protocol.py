"""The Forge protocol: what the bot does on a forge, in forge-neutral words.

Two small protocols rather than one long one: `Conversations` (issues, comments, threads,
permissions) and `Changes` (diffs, inline notes, merge/pull requests). `Forge` is both.

Every write that takes a `Marker` is idempotent: the adapter looks for the marker first and edits
or skips instead of posting again, so a retried task never duplicates what it already wrote.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from foundation.forge.models import (
    AccessLevel,
    BotIdentity,
    Capability,
    Change,
    ChangeRef,
    ChangeRequest,
    Closed,
    Comment,
    CommentRef,
    ForgeKind,
    ForgeUser,
    GitCredentials,
    Hook,
    InlineNote,
    Issue,
    IssueRef,
    Marker,
    Reaction,
    Redelivery,
    RepoRef,
)


class Conversations(Protocol):
    @property
    def kind(self) -> ForgeKind: ...

    @property
    def capabilities(self) -> frozenset[Capability]:
        """What this forge can do beyond the common ground; branch on these, never on the class."""
        ...

    @property
    def bot(self) -> BotIdentity:
        """Who the bot is here (learned at start-up): its own comments are the ones it authored."""
        ...

    async def get_issue(self, ref: IssueRef, *, comments: bool = True) -> Issue:
        """Read an issue's title, body, labels, author and, unless `comments` is False (its flags or
        description are all the caller reads: no listing of every note), comments with their thread ids."""
        ...

    async def list_closed(
        self, repo: RepoRef, kind: Literal["issue", "change"], since: str, limit: int
    ) -> list[Closed]:
        """Closed issues (`kind` "issue") or merged changes ("change") updated at or after `since`
        (ISO 8601; "" for any time): the `limit` most recently updated, returned oldest update first."""
        ...

    async def list_comments(self, target: IssueRef | ChangeRef) -> list[Comment]:
        """Every comment on an issue or change, oldest first (on a change: diff comments too)."""
        ...

    async def post_comment(
        self, target: IssueRef | ChangeRef, body: str, marker: Marker | None = None
    ) -> CommentRef:
        """Post a comment; with a marker, a comment already carrying it is edited instead."""
        ...

    async def edit_comment(self, comment: CommentRef, body: str, marker: Marker | None = None) -> None:
        """Replace a comment's body (the status comment is edited in place as a task moves)."""
        ...

    async def reply(self, comment: CommentRef, body: str, marker: Marker | None = None) -> CommentRef:
        """Answer in `comment`'s thread; without issue threads (GitHub), a new comment quoting it."""
        ...

    async def resolve_thread(self, comment: CommentRef) -> None:
        """Mark the thread containing `comment` resolved (needs `Capability.RESOLVE_THREADS`)."""
        ...

    async def add_reaction(self, target: IssueRef | ChangeRef | CommentRef, reaction: Reaction) -> None:
        """React to an issue, change or comment; reacting twice is not an error."""
        ...

    async def user_access(self, repo: RepoRef, user: ForgeUser) -> AccessLevel:
        """The user's effective access to the repository, read through the forge's permission API."""
        ...

    async def resolve_repo(self, project_id: int | str) -> RepoRef:
        """The repository as the forge's API names it: id, path, default branch, clone and web URL.

        The one source of a repository's identity: a webhook payload only names the id to ask about.
        """
        ...

    async def read_file(self, repo: RepoRef, path: str, ref: str, max_bytes: int) -> bytes | None:
        """A file's bytes at `ref` (a branch name), or None when there is no such file.

        A file larger than `max_bytes` raises `ForgeError` unread where the API tells the size first.
        """
        ...

    async def whoami(self) -> BotIdentity:
        """The user (or App bot) the token acts as."""
        ...

    async def signing_keys(self) -> tuple[str, ...] | None:
        """The SSH keys (`ssh-ed25519 AAAA… title`) the forge verifies the bot account's commit signatures
        with; None when it does not say (a GitHub App has no such keys; a token may not read them)."""
        ...

    async def list_hooks(self, repo: RepoRef) -> list[Hook]:
        """The repository's webhooks: URLs and what the forge says of their deliveries (secrets cannot be
        read back)."""
        ...

    async def save_hook(self, repo: RepoRef, url: str, secret: str, hook_id: int | None = None) -> Hook:
        """Create the bot's webhook on `repo`, or update hook `hook_id` to `url` and `secret`."""
        ...

    async def app_hook(self) -> Hook | None:
        """A GitHub App's own webhook, which delivers every installation's events, as `list_hooks` tells a
        repository's (its id 0); None where the credentials are not an App's."""
        ...

    async def redeliver(self, repo: RepoRef | None, hook_id: int) -> Redelivery:
        """Have the forge send again each delivery of hook `hook_id` it still keeps (GitLab 7 days, GitHub 3)
        that no attempt of was answered 2xx: neither forge sends a failed delivery again by itself, so the
        events of a receiver's outage are otherwise lost. The receiver takes each at most once (a delivery
        sent again keeps its id). `repo` None: the GitHub App's own webhook (`app_hook`)."""
        ...

    async def last_answer(self, repo: RepoRef, hook: Hook) -> Hook:
        """`hook` with its last delivery's answer where the forge keeps it apart from the hook (GitLab 17.3's
        hook events: an enabled hook may have failed 3 times in a row); as it is where the hook carries it
        (GitHub) or the forge does not say."""
        ...

    async def test_hook(self, repo: RepoRef, hook_id: int) -> Hook | None:
        """Have the forge send hook `hook_id` a test delivery and return the hook as it then stands; None
        where the forge disables no hook by itself and so needs no test to bring one back (GitHub)."""
        ...


class Changes(Protocol):
    async def get_change(self, ref: ChangeRef) -> Change:
        """Read a change: branches, base/head/start SHAs and the changed files with parsed hunks."""
        ...

    async def post_inline(self, ref: ChangeRef, notes: Sequence[InlineNote], task: str) -> list[InlineNote]:
        """Post notes on diff lines of the change's latest version; return the notes that could not
        be anchored on the diff (the caller lists them in the summary). Notes already posted by
        `task` are skipped."""
        ...

    async def find_change(self, repo: RepoRef, source_branch: str) -> ChangeRef | None:
        """The open change whose source branch is `source_branch`, if any."""
        ...

    async def open_change(self, repo: RepoRef, request: ChangeRequest) -> ChangeRef:
        """Open the change `request` asks for, or return the open one from its source branch."""
        ...

    async def edit_change(self, ref: ChangeRef, description: str) -> None:
        """Replace the description of the bot's own change (a later task replaced the work on its branch)."""
        ...

    async def git_credentials(self) -> GitCredentials:
        """What git needs to fetch and push over HTTPS as the bot (a fresh token for GitHub Apps)."""
        ...


class Forge(Conversations, Changes, Protocol):
    """Everything the bot does on a forge."""
