"""MemoryForge: an in-memory implementation of the Forge protocol.

`forgebot run` uses it as the forge of a local task (kind "local": comments are kept, nothing is
sent anywhere), and tests above the adapters use it as their fake.

It follows the same contract as the adapters (tests/bot/forge/test_contract.py runs one suite
against all three): markers make writes idempotent, inline notes anchor through the same diff
rules, `kind="github"` has flat issue comments (a reply quotes) while `kind="gitlab"` threads them.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import SecretStr

from foundation.forge import (
    AccessLevel,
    BotIdentity,
    Capability,
    Change,
    ChangeRef,
    ChangeRequest,
    Closed,
    Comment,
    CommentRef,
    ForgeConflict,
    ForgeError,
    ForgeKind,
    ForgeNotFound,
    ForgeUnsupported,
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
from foundation.forge._text import (
    GITHUB_COMMENT_LIMIT,
    GITLAB_COMMENT_LIMIT,
    anchor,
    inline_marker,
    marked,
    with_marker,
)

Target = IssueRef | ChangeRef
_LIMITS = {"gitlab": GITLAB_COMMENT_LIMIT, "github": GITHUB_COMMENT_LIMIT, "local": GITLAB_COMMENT_LIMIT}


@dataclass
class MemoryForge:
    kind: ForgeKind = "gitlab"
    issues: dict[IssueRef, Issue] = field(default_factory=dict)
    changes: dict[ChangeRef, Change] = field(default_factory=dict)
    access: dict[tuple[str, int], AccessLevel] = field(default_factory=dict)  # (project, user id)
    posted: dict[Target, list[Comment]] = field(default_factory=dict)
    reactions: list[tuple[Target | CommentRef, Reaction]] = field(default_factory=list)
    bot_user: str = "forgebot"
    bot_user_id: int | None = None
    signing_keys_held: tuple[str, ...] | None = None  # what `signing_keys` answers: None, the forge does not say
    # repositories by id as the forge's API reports them; `resolve_repo` knows only these
    repos: dict[str, RepoRef] = field(default_factory=dict)
    hooks: dict[str, list[tuple[Hook, str]]] = field(default_factory=dict)  # project → (hook, secret)
    files: dict[tuple[str, str, str], bytes] = field(default_factory=dict)  # (project, ref, path) → content
    git_token: str = "fake-git-token"
    closed: list[Closed] = field(default_factory=list)  # merged changes and closed issues, as listed
    # Graph tests post on issues they never seed; strict=True answers unknown targets with 404 like a forge.
    strict: bool = False
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def capabilities(self) -> frozenset[Capability]:
        common = {Capability.RESOLVE_THREADS, Capability.MULTILINE_INLINE, Capability.DRAFT_CHANGES}
        return frozenset(common | ({Capability.ISSUE_THREADS} if self.kind == "gitlab" else set()))

    @property
    def comments(self) -> dict[Target, list[str]]:
        """Bodies per issue or change, in posting order: what a user would read in the thread."""
        return {target: [c.body for c in comments] for target, comments in self.posted.items()}

    @property
    def _limit(self) -> int:
        return _LIMITS[self.kind]

    def _exists(self, target: Target) -> None:
        if not self.strict:
            return
        if (target not in self.issues) if isinstance(target, IssueRef) else (target not in self.changes):
            raise ForgeNotFound(f"{target.kind} {target.number}")

    def _add(self, target: Target, body: str, thread: str = "", review: bool = False, author: str = "",
             note: InlineNote | None = None, author_id: int = 0) -> CommentRef:
        number = next(self._ids)
        if not thread and (review or self.kind == "gitlab"):
            thread = str(number) if review else f"d{number}"  # GitHub diff threads are named by their first comment
        ref = CommentRef(target=target, id=number, thread=thread, review=review)
        comment = Comment(ref=ref, author=author or self.bot_user, author_id=author_id, body=body,
                          path=note.path if note else "", line=note.line if note else None)
        self.posted.setdefault(target, []).append(comment)
        return ref

    @property
    def bot(self) -> BotIdentity:
        return BotIdentity(id=self.bot_user_id, login=self.bot_user)

    def _find(self, target: Target, marker: Marker) -> CommentRef | None:
        return marked(self.posted.get(target, []), marker, self.bot)

    async def get_issue(self, ref: IssueRef, *, comments: bool = True) -> Issue:
        if ref not in self.issues:
            if not self.strict:  # an unseeded issue: no text, no known author (so nothing trusted)
                return Issue(ref=ref, title="", body="", comments=tuple(self.posted.get(ref, [])))
            raise ForgeNotFound(f"issue {ref.number}")
        listed = tuple(await self.list_comments(ref)) if comments else ()
        return self.issues[ref].model_copy(update={"comments": listed})

    async def list_closed(
        self, repo: RepoRef, kind: Literal["issue", "change"], since: str, limit: int
    ) -> list[Closed]:
        found = sorted((c for c in self.closed if c.ref.repo.project == repo.project and c.ref.kind == kind
                        and c.updated_at >= since), key=lambda c: c.updated_at)
        return found[-limit:] if limit > 0 else []

    async def list_comments(self, target: Target) -> list[Comment]:
        self._exists(target)
        return list(self.posted.get(target, []))

    async def post_comment(self, target: Target, body: str, marker: Marker | None = None) -> CommentRef:
        self._exists(target)
        if marker is not None and (found := self._find(target, marker)) is not None:
            await self.edit_comment(found, body, marker)
            return found
        return self._add(target, with_marker(body, marker, self._limit))

    async def edit_comment(self, comment: CommentRef, body: str, marker: Marker | None = None) -> None:
        comments = self.posted.get(comment.target, [])
        for i, existing in enumerate(comments):
            if existing.ref.id == comment.id:
                comments[i] = existing.model_copy(update={"body": with_marker(body, marker, self._limit)})
                return
        raise ForgeNotFound(f"comment {comment.id}")

    def _stored(self, comment: CommentRef) -> Comment:
        for existing in self.posted.get(comment.target, []):
            if existing.ref.id == comment.id:
                return existing
        raise ForgeNotFound(f"comment {comment.id}")

    async def reply(self, comment: CommentRef, body: str, marker: Marker | None = None) -> CommentRef:
        original = self._stored(comment)
        if marker is not None and (found := self._find(comment.target, marker)) is not None:
            return found
        if self.kind == "github" and not original.ref.review:
            quoted = "\n".join(f"> {line}" for line in original.body.splitlines()[:3])
            return await self.post_comment(comment.target, f"{quoted}\n\n@{original.author} {body}", marker)
        thread = original.ref.thread or str(original.ref.id)
        text = with_marker(body, marker, self._limit)
        return self._add(comment.target, text, thread=thread, review=original.ref.review)

    async def resolve_thread(self, comment: CommentRef) -> None:
        original = self._stored(comment)
        if isinstance(comment.target, IssueRef) or (self.kind == "github" and not comment.review):
            raise ForgeUnsupported("only diff threads and merge request discussions resolve")
        comments = self.posted[comment.target]
        thread = original.ref.thread
        for i, existing in enumerate(comments):
            if existing.ref.thread == thread:
                comments[i] = existing.model_copy(update={"resolved": True})

    async def add_reaction(self, target: Target | CommentRef, reaction: Reaction) -> None:
        if isinstance(target, CommentRef):
            self._stored(target)
        else:
            self._exists(target)
        if (target, reaction) not in self.reactions:
            self.reactions.append((target, reaction))

    async def user_access(self, repo: RepoRef, user: ForgeUser) -> AccessLevel:
        return self.access.get((repo.project, user.id), AccessLevel.NONE)

    def add_repo(self, repo: RepoRef, *ids: str) -> RepoRef:
        """Make `repo` resolvable by its project and any other `ids` (a GitHub repository's number)."""
        for key in (repo.project, *([str(repo.id)] if repo.id else []), *ids):
            self.repos[key] = repo
        return repo

    async def resolve_repo(self, project_id: int | str) -> RepoRef:
        found = self.repos.get(str(project_id))
        if found is None:
            raise ForgeNotFound(f"project {project_id}")
        return found

    async def read_file(self, repo: RepoRef, path: str, ref: str, max_bytes: int) -> bytes | None:
        found = self.files.get((repo.project, ref, path))
        if found is not None and len(found) > max_bytes:
            raise ForgeError(f"{path} is larger than {max_bytes} bytes")
        return found

    async def whoami(self) -> BotIdentity:
        return BotIdentity(id=self.bot_user_id, login=self.bot_user)

    async def signing_keys(self) -> tuple[str, ...] | None:
        return self.signing_keys_held

    async def list_hooks(self, repo: RepoRef) -> list[Hook]:
        return [hook for hook, _ in self.hooks.get(repo.project, [])]

    async def test_hook(self, repo: RepoRef, hook_id: int) -> Hook | None:
        return None  # it delivers nothing

    async def redeliver(self, repo: RepoRef | None, hook_id: int) -> Redelivery:
        return Redelivery(unanswered=0, resent=0)  # it delivers nothing

    async def app_hook(self) -> Hook | None:
        return None

    async def last_answer(self, repo: RepoRef, hook: Hook) -> Hook:
        return hook

    async def save_hook(self, repo: RepoRef, url: str, secret: str, hook_id: int | None = None) -> Hook:
        hooks = self.hooks.setdefault(repo.project, [])
        hook = Hook(id=hook_id or next(self._ids), url=url)
        hooks[:] = [(h, s) for h, s in hooks if h.id != hook.id] + [(hook, secret)]
        return hook

    async def get_change(self, ref: ChangeRef) -> Change:
        if ref not in self.changes:
            raise ForgeNotFound(f"change {ref.number}")
        return self.changes[ref]

    async def post_inline(self, ref: ChangeRef, notes: Sequence[InlineNote], task: str) -> list[InlineNote]:
        change = await self.get_change(ref)
        unanchored = []
        for note in notes:
            marker = inline_marker(task, note)
            if anchor(change.files, note) is None:
                unanchored.append(note)
            elif self._find(ref, marker) is None:
                review = self.kind == "github"
                self._add(ref, with_marker(note.body, marker, self._limit), review=review, note=note,
                          thread="" if review else f"d{next(self._ids)}")
        return unanchored

    async def git_credentials(self) -> GitCredentials:
        return GitCredentials(username="oauth2" if self.kind == "gitlab" else "x-access-token",
                              token=SecretStr(self.git_token))

    async def find_change(self, repo: RepoRef, source_branch: str) -> ChangeRef | None:
        return next((r for r, c in self.changes.items()
                     if r.repo == repo and c.source_branch == source_branch and c.state in ("opened", "open")), None)

    async def edit_change(self, ref: ChangeRef, description: str) -> None:
        self.changes[ref] = (await self.get_change(ref)).model_copy(update={"body": description})

    async def open_change(self, repo: RepoRef, request: ChangeRequest) -> ChangeRef:
        if (existing := await self.find_change(repo, request.source_branch)) is not None:
            return existing
        if not request.source_branch:
            raise ForgeConflict("a change needs a source branch")
        numbers = [r.number for r in self.changes if r.repo == repo] + [r.number for r in self.issues if r.repo == repo]
        ref = ChangeRef(repo=repo, number=1 + max(numbers, default=0))
        self.changes[ref] = Change(ref=ref, title=request.title, body=request.description, author=self.bot_user,
                                   source_branch=request.source_branch,
                                   target_branch=request.target_branch or repo.default_branch, base_sha="",
                                   head_sha="", start_sha="", state="opened", draft=request.draft)
        return ref
