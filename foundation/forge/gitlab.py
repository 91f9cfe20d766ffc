"""GitLabForge: the Forge protocol over python-gitlab.

Comments are notes; threads are discussions (issues and merge requests both have them; only merge
request threads resolve). Inline notes are merge request discussions with a `position` built from
the latest version's SHAs and the parsed diff, so added, removed and context lines, renamed and new
files all anchor (see `_position`). Every request goes through `_retry.Calls` (reads retried,
writes retried only once known not landed).
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Literal
from urllib.parse import quote

import gitlab
import requests
from gitlab.exceptions import GitlabError, GitlabGetError, GitlabHttpError
from pydantic import SecretStr

from foundation.forge import _retry
from foundation.forge._adapter import SdkAdapter
from foundation.forge._capped import read_capped
from foundation.forge._text import (
    GITLAB_COMMENT_LIMIT,
    anchor,
    has_marker,
    inline_marker,
    line_code,
    with_marker,
)
from foundation.forge.diff import parse_hunks
from foundation.forge.errors import ForgeConflict, ForgeError, ForgeNotFound, ForgeUnsupported
from foundation.forge.limits import GITLAB_DESCRIPTION_LIMIT, MAX_PAGE, REDELIVERY_WINDOW
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
    DiffLine,
    FileChange,
    FileStatus,
    ForgeKind,
    ForgeUser,
    GitCredentials,
    Hook,
    InlineNote,
    Issue,
    IssueRef,
    LineKind,
    Marker,
    Reaction,
    Redelivery,
    RepoRef,
)

# what the bot's hook subscribes to: issue labels and comments (`/review` is a merge request note)
_HOOK_EVENTS = {
    "issues_events": True, "confidential_issues_events": True, "note_events": True,
    "confidential_note_events": True, "push_events": False, "merge_requests_events": False,
    "enable_ssl_verification": True,
}
_EMOJI = {Reaction.EYES: "eyes", Reaction.THUMBS_UP: "thumbsup", Reaction.ROCKET: "rocket",
          Reaction.CONFUSED: "confused"}


class GitLabClient(gitlab.Gitlab):
    """python-gitlab with its own sleeping turned off and the last response's headers kept.

    python-gitlab sleeps through 429s (up to 10 times) inside the call; waiting is the adapter's
    policy instead, and a long wait must reach the job as `ForgeRateLimited`. The headers carry
    `Retry-After`, which python-gitlab's exceptions drop.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._local = threading.local()
        self.session.hooks["response"].append(self._remember)

    def _remember(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        self._local.headers = dict(response.headers)

    def last_headers(self) -> Mapping[str, str]:
        headers: Mapping[str, str] = getattr(self._local, "headers", {})
        return headers

    def http_request(self, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.update(obey_rate_limit=False, retry_transient_errors=False)
        return super().http_request(*args, **kwargs)




class GitLabForge(SdkAdapter):
    """A GitLab instance reached through an injected `gitlab.Gitlab` client."""

    kind: ForgeKind = "gitlab"
    capabilities = frozenset(
        {Capability.ISSUE_THREADS, Capability.RESOLVE_THREADS, Capability.MULTILINE_INLINE, Capability.DRAFT_CHANGES}
    )

    def __init__(
        self, client: gitlab.Gitlab, policy: _retry.RetryPolicy | None = None, bot: BotIdentity | None = None
    ) -> None:
        self._gl = client
        self._bot = bot or BotIdentity()  # unknown: no comment counts as the bot's
        policy = dataclasses.replace(policy or _retry.RetryPolicy(), forge="gitlab")
        self._calls = _retry.Calls("gitlab", self._failure, policy)

    # --- plumbing ------------------------------------------------------------------------------

    def _failure(self, exc: Exception) -> _retry.Failure | None:
        """python-gitlab's exceptions as (status, headers, message); runs in the call's worker thread,
        so the thread-local headers are this call's."""
        if isinstance(exc, GitlabError):
            headers = self._gl.last_headers() if isinstance(self._gl, GitLabClient) else {}
            return exc.response_code or 0, headers, _said(exc.error_message)
        if isinstance(exc, requests.RequestException):
            return 0, {}, _retry.transport(exc)
        return None

    def _project(self, repo: RepoRef) -> Any:
        return self._gl.projects.get(repo.project, lazy=True)

    def _noteable(self, target: IssueRef | ChangeRef) -> Any:
        project = self._project(target.repo)
        manager = project.issues if isinstance(target, IssueRef) else project.mergerequests
        return manager.get(target.number, lazy=True)

    def _create_discussion(self, ref: ChangeRef, data: dict[str, Any]) -> Any:
        return self._noteable(ref).discussions.create(data)

    # --- conversations -------------------------------------------------------------------------

    async def get_issue(self, ref: IssueRef, *, comments: bool = True) -> Issue:
        issue = await self._read(lambda: self._project(ref.repo).issues.get(ref.number))
        return Issue(
            ref=ref,
            title=str(issue.title),
            body=str(issue.description or ""),
            labels=tuple(str(label) for label in issue.labels),
            author=str(issue.author["username"]),
            author_id=int(issue.author.get("id") or 0),
            comments=tuple(await self.list_comments(ref)) if comments else (),
            confidential=bool(issue.attributes.get("confidential")),
        )

    async def list_closed(
        self, repo: RepoRef, kind: Literal["issue", "change"], since: str, limit: int
    ) -> list[Closed]:
        """`GET /projects/:id/issues?state=closed` or `/merge_requests?state=merged`, newest `limit` updates."""

        def fetch() -> list[Closed]:
            project = self._project(repo)
            manager = project.issues if kind == "issue" else project.mergerequests
            query: dict[str, Any] = {"state": "closed" if kind == "issue" else "merged", "order_by": "updated_at",
                                     "sort": "desc", "per_page": min(max(limit, 1), MAX_PAGE), "iterator": True}
            if kind == "issue":  # a confidential issue is for members only: memory feeds public comments
                query["confidential"] = "false"  # as GitLab spells it; python-gitlab sends a bool as "False"
            if since:
                query["updated_after"] = since
            found = []
            for item in itertools.islice(manager.list(**query), max(limit, 0)):
                if item.attributes.get("confidential"):  # also where the filter is not known
                    continue
                number = int(item.iid)
                ref: IssueRef | ChangeRef = (IssueRef(repo=repo, number=number) if kind == "issue"
                                             else ChangeRef(repo=repo, number=number))
                author = item.attributes.get("author") or {}
                found.append(Closed(ref=ref, title=str(item.title or ""), body=str(item.description or ""),
                                    author=str(author.get("username") or ""), author_id=int(author.get("id") or 0),
                                    updated_at=str(item.attributes.get("updated_at") or "")))
            return found[::-1]

        return await self._read(fetch)

    async def list_comments(self, target: IssueRef | ChangeRef) -> list[Comment]:
        discussions = await self._read(lambda: self._noteable(target).discussions.list(get_all=True))
        return [_comment(target, d.id, note) for d in discussions for note in d.attributes["notes"]]

    async def post_comment(
        self, target: IssueRef | ChangeRef, body: str, marker: Marker | None = None
    ) -> CommentRef:
        text = with_marker(body, marker, GITLAB_COMMENT_LIMIT)
        if marker is not None and (found := await self._find(target, marker)) is not None:
            await self.edit_comment(found, body, marker)
            return found
        note = await self._write(
            lambda: self._noteable(target).notes.create({"body": text}),
            self._finder(target, marker),
        )
        if isinstance(note, CommentRef):
            return note
        return CommentRef(target=target, id=int(note.id))  # a note's answer names no discussion

    async def edit_comment(self, comment: CommentRef, body: str, marker: Marker | None = None) -> None:
        text = with_marker(body, marker, GITLAB_COMMENT_LIMIT)

        def save() -> None:
            note = self._noteable(comment.target).notes.get(comment.id, lazy=True)
            note.body = text
            note.save()

        async def landed() -> bool | None:  # the body already reads `text`: the lost edit landed
            found = await self.list_comments(comment.target)
            return any(c.ref.id == comment.id and c.body == text for c in found) or None

        await self._write(save, landed)

    async def reply(self, comment: CommentRef, body: str, marker: Marker | None = None) -> CommentRef:
        target = comment.target
        thread = comment.thread or await self._thread_of(comment)
        text = with_marker(body, marker, GITLAB_COMMENT_LIMIT)
        if marker is not None and (found := await self._find(target, marker)) is not None:
            return found
        note = await self._write(
            lambda: self._noteable(target).discussions.get(thread, lazy=True).notes.create({"body": text}),
            self._finder(target, marker),
        )
        return note if isinstance(note, CommentRef) else CommentRef(target=target, id=int(note.id), thread=thread)

    async def _thread_of(self, comment: CommentRef) -> str:
        for other in await self.list_comments(comment.target):
            if other.ref.id == comment.id:
                return other.ref.thread
        raise ForgeNotFound(f"note {comment.id} is in no discussion")

    async def resolve_thread(self, comment: CommentRef) -> None:
        if isinstance(comment.target, IssueRef):
            raise ForgeUnsupported("GitLab issue threads cannot be resolved")
        thread = comment.thread or await self._thread_of(comment)

        def save() -> None:
            discussion = self._noteable(comment.target).discussions.get(thread, lazy=True)
            discussion.resolved = True
            discussion.save()

        async def landed() -> bool | None:  # the answer was lost: is the thread resolved now?
            found = await self.list_comments(comment.target)
            return any(c.ref.thread == thread and c.resolved for c in found) or None

        await self._write(save, landed)

    async def add_reaction(self, target: IssueRef | ChangeRef | CommentRef, reaction: Reaction) -> None:
        def create() -> None:
            if isinstance(target, CommentRef):
                owner = self._noteable(target.target).notes.get(target.id, lazy=True)
            else:
                owner = self._noteable(target)
            owner.awardemojis.create({"name": _EMOJI[reaction]})

        try:
            await self._write(create, None)
        except ForgeError as exc:
            # GitLab answers a repeated award with 404 "Award Emoji Name has already been taken".
            if "already been taken" not in str(exc) and not isinstance(exc, ForgeConflict):
                raise

    async def user_access(self, repo: RepoRef, user: ForgeUser) -> AccessLevel:
        """Effective access including inherited group membership (`members/all`); 404 → none."""

        def fetch() -> AccessLevel:
            try:
                member = self._project(repo).members_all.get(user.id)
            except GitlabGetError as exc:
                if exc.response_code == 404:
                    return AccessLevel.NONE
                raise
            return _gitlab_level(int(member.access_level))

        return await self._read(fetch)

    # --- identity and hooks ----------------------------------------------------------------------

    async def resolve_repo(self, project_id: int | str) -> RepoRef:
        """`GET /projects/:id` at the configured instance: the project's own id, path and URLs."""
        project = await self._read(lambda: self._gl.projects.get(project_id))
        attrs = project.attributes
        return RepoRef(
            forge="gitlab",
            project=str(int(attrs["id"])),
            path=str(attrs["path_with_namespace"]),
            default_branch=str(attrs.get("default_branch") or ""),
            clone_url=str(attrs.get("http_url_to_repo") or ""),
            web_url=str(attrs.get("web_url") or ""),
            id=int(attrs["id"]),
            visibility=str(attrs.get("visibility") or ""),  # doc/api/projects.md: private, internal, public
        )

    async def read_file(self, repo: RepoRef, path: str, ref: str, max_bytes: int) -> bytes | None:
        """`GET /projects/:id/repository/files/:path/raw?ref=`, streamed and stopped past `max_bytes`
        (`_capped`); a 404 (no such file or branch) is None."""

        def fetch() -> bytes | None:
            where = f"/projects/{quote(repo.project, safe='')}/repository/files/{quote(path, safe='')}/raw"
            try:
                response = self._gl.http_get(where, query_data={"ref": ref}, streamed=True, raw=True)
            except GitlabError as exc:
                if exc.response_code == 404:
                    return None
                raise
            assert isinstance(response, requests.Response)
            return read_capped(response, max_bytes, path, float(self._gl.timeout or 30))

        return await self._read(fetch)

    async def whoami(self) -> BotIdentity:
        """`GET /user`: the token's user (a project or group token has its own bot user)."""

        def fetch() -> BotIdentity:
            self._gl.auth()
            user = self._gl.user
            if user is None:
                raise ForgeNotFound("the token has no user")
            try:  # GitLab 15.5+, for personal, project and group tokens; others (OAuth) answer 401/404
                token = self._gl.http_get("/personal_access_tokens/self")
            except GitlabError:
                token = None
            scopes = token.get("scopes") if isinstance(token, dict) else None
            shown = user.asdict()
            emails = dict.fromkeys(str(shown[key]) for key in ("commit_email", "email", "public_email")
                                   if isinstance(shown.get(key), str) and "@" in shown[key])
            return BotIdentity(id=int(user.id), login=str(user.username), emails=tuple(emails),
                               name=str(shown.get("name") or ""),
                               scopes=tuple(str(s) for s in scopes) if isinstance(scopes, list) else None,
                               expires_at=str(token.get("expires_at") or "") if isinstance(token, dict) else "")

        return await self._read(fetch)

    async def signing_keys(self) -> tuple[str, ...] | None:
        """`GET /user/keys`: the user's SSH keys whose usage includes signing (GitLab 15.7+ verifies SSH
        signatures only with those; an older GitLab names no usage, and verifies none)."""

        def fetch() -> tuple[str, ...]:
            self._gl.auth()
            user = self._gl.user
            if user is None:
                raise ForgeNotFound("the token has no user")
            keys = user.keys.list(get_all=True)
            return tuple(str(key.key) for key in keys
                         if getattr(key, "usage_type", "") in ("signing", "auth_and_signing"))

        return await self._read(fetch)

    async def list_hooks(self, repo: RepoRef) -> list[Hook]:
        hooks = await self._read(lambda: self._project(repo).hooks.list(get_all=True))
        return [_hook(h.attributes) for h in hooks]

    async def test_hook(self, repo: RepoRef, hook_id: int) -> Hook:
        """Have GitLab send hook `hook_id` a test push and read the hook again: the way GitLab documents to
        re-enable a hook it disabled after failing deliveries (a test answered 2xx enables it). A push is
        what the bot ignores (answered 200), where a test comment would replay the project's last one."""

        def test() -> Any:
            hook = self._project(repo).hooks.get(hook_id, lazy=True)
            try:
                hook.test("push_events")
            except GitlabError as exc:  # python-gitlab raises its GitlabHookTestError
                if exc.response_code not in (400, 422):  # the test was not made, or not answered 2xx: the
                    raise  # hook read next says what GitLab now thinks of it
            return self._project(repo).hooks.get(hook_id)

        tested = await self._write(test, None)
        return _hook(tested.attributes)

    async def app_hook(self) -> Hook | None:
        return None  # GitLab has no App: every hook is a project's

    async def last_answer(self, repo: RepoRef, hook: Hook) -> Hook:
        """An enabled hook's newest event (GitLab 17.3; before, none is listed and the hook stays `enabled`):
        GitLab disables a hook only after 4 failures in a row, so `enabled` alone hid the first three."""
        if hook.state != "enabled":
            return hook
        path = f"{self._project(repo).hooks.path}/{hook.id}/events"
        try:
            newest = await self._read(lambda: self._gl.http_list(path, page=1, per_page=1, get_all=False))
        except ForgeNotFound:
            return hook
        events = list(newest)
        if not events:
            return hook.model_copy(update={"state": "unused"})
        status = str(events[0].get("response_status") or "")
        code = int(status) if status.isdigit() else None
        said = f"was answered HTTP {code}" if code is not None else f"got no answer ({status or 'none'})"
        return hook.model_copy(update={"state": "ok" if _answered(status) else "failing", "answer": code,
                                       "detail": f"GitLab's last delivery {said}"})

    async def redeliver(self, repo: RepoRef | None, hook_id: int) -> Redelivery:
        """GitLab lists a hook's events of the last 7 days with their answers (GitLab 17.3) and sends one
        again on request (17.4, 5 a minute per hook and user). An event is one request: its
        `Idempotency-Key`, which a resend keeps, so one answered 2xx on any try is done."""
        if repo is None:
            raise ForgeUnsupported("GitLab has no App hook")
        path = f"{self._project(repo).hooks.path}/{hook_id}/events"
        listed = await self._read(lambda: list(itertools.islice(
            self._gl.http_list(path, iterator=True, per_page=MAX_PAGE), REDELIVERY_WINDOW)))
        answered: set[str] = set()
        failed: dict[str, int] = {}  # key → the newest event id of it (the list is newest first)
        for event in listed:
            headers = event.get("request_headers") or {}
            key = str(headers.get("Idempotency-Key") or event.get("id"))
            if _answered(event.get("response_status")):
                answered.add(key)
            else:
                failed.setdefault(key, int(event["id"]))
        unanswered = [event_id for key, event_id in failed.items() if key not in answered]
        resent = ok = 0
        for event_id in reversed(unanswered):  # oldest first, as they came
            try:
                said = await self._write(partial(self._gl.http_post, f"{path}/{event_id}/resend"), None)
            except ForgeError as exc:  # the rate limit past the retry policy's waits, a disabled hook
                return Redelivery(unanswered=len(unanswered), resent=resent, answered=ok, refused=str(exc))
            resent += 1
            ok += _answered(said.get("response_status") if isinstance(said, dict) else None)
        return Redelivery(unanswered=len(unanswered), resent=resent, answered=ok)

    async def save_hook(self, repo: RepoRef, url: str, secret: str, hook_id: int | None = None) -> Hook:
        data = {"url": url, "token": secret, **_HOOK_EVENTS}

        def save() -> Any:
            hooks = self._project(repo).hooks
            if hook_id is None:
                return hooks.create(data)
            return hooks.update(hook_id, data)

        saved = await self._write(save, None)
        found = saved.attributes if hasattr(saved, "attributes") else saved
        return Hook(id=int(found.get("id") or hook_id or 0), url=str(found.get("url") or url))

    # --- changes -------------------------------------------------------------------------------

    async def get_change(self, ref: ChangeRef) -> Change:
        def fetch() -> tuple[Any, Any, list[Any]]:
            mr = self._project(ref.repo).mergerequests.get(ref.number)
            versions = mr.diffs.list(get_all=False, per_page=1)  # latest version first
            try:
                diffs = list(self._gl.http_list(f"{mr.manager.path}/{ref.number}/diffs", get_all=True))
            except GitlabHttpError as exc:
                if exc.response_code != 404:
                    raise
                # the merge request was just read: a GitLab before 15.7, which has no /diffs, only
                # /changes (deprecated since, not paginated; the same diff entries)
                changed = mr.changes()
                diffs = list(changed.get("changes") or []) if isinstance(changed, dict) else []
            return mr, versions, diffs

        mr, versions, diffs = await self._read(fetch)
        # Positions must use the latest version's SHAs (gitlab-org/gitlab#296829); `diff_refs` is
        # the fallback while GitLab has not yet computed a version.
        refs = mr.attributes.get("diff_refs") or {}
        shas = (
            (versions[0].base_commit_sha, versions[0].head_commit_sha, versions[0].start_commit_sha)
            if versions else (refs.get("base_sha"), refs.get("head_sha"), refs.get("start_sha"))
        )
        return Change(
            ref=ref,
            title=str(mr.title),
            body=str(mr.description or ""),
            author=str(mr.author["username"]),
            author_id=int(mr.author.get("id") or 0),
            source_branch=str(mr.source_branch),
            target_branch=str(mr.target_branch),
            base_sha=str(shas[0] or ""),
            head_sha=str(shas[1] or ""),
            start_sha=str(shas[2] or ""),
            head_ref=f"refs/merge-requests/{ref.number}/head",
            state=str(mr.state),
            draft=bool(mr.attributes.get("draft", False)),
            url=str(mr.attributes.get("web_url", "")),
            files=tuple(_file(d) for d in diffs),
        )

    async def post_inline(self, ref: ChangeRef, notes: Sequence[InlineNote], task: str) -> list[InlineNote]:
        change = await self.get_change(ref)
        bodies = [c.body for c in await self.list_comments(ref) if self._bot.wrote(c)]
        unanchored: list[InlineNote] = []
        for note in notes:
            marker = inline_marker(task, note)
            located = anchor(change.files, note)
            if located is None:
                unanchored.append(note)
                continue
            if any(has_marker(body, marker) for body in bodies):
                continue
            text = with_marker(note.body, marker, GITLAB_COMMENT_LIMIT)
            data = {"body": text, "position": _position(change, *located)}
            await self._write(partial(self._create_discussion, ref, data), self._finder(ref, marker))
        return unanchored

    async def git_credentials(self) -> GitCredentials:
        """The API token doubles as the git password, with the user name `oauth2`."""
        token = self._gl.private_token or self._gl.oauth_token or ""
        return GitCredentials(username="oauth2", token=SecretStr(token))

    async def find_change(self, repo: RepoRef, source_branch: str) -> ChangeRef | None:
        found = await self._read(
            lambda: self._project(repo).mergerequests.list(source_branch=source_branch, state="opened", get_all=False)
        )
        return ChangeRef(repo=repo, number=int(found[0].iid)) if found else None

    async def open_change(self, repo: RepoRef, request: ChangeRequest) -> ChangeRef:
        source = request.source_branch
        if (existing := await self.find_change(repo, source)) is not None:
            return existing
        data = {
            "source_branch": source,
            "target_branch": request.target_branch or repo.default_branch,
            "title": f"Draft: {request.title}" if request.draft else request.title,
            "description": with_marker(request.description, None, GITLAB_DESCRIPTION_LIMIT),
            "remove_source_branch": True,
        }
        try:
            mr = await self._write(
                lambda: self._project(repo).mergerequests.create(data), lambda: self.find_change(repo, source)
            )
        except ForgeConflict:  # 409 "Another open merge request already exists for this source branch"
            if (existing := await self.find_change(repo, source)) is None:
                raise
            return existing
        return mr if isinstance(mr, ChangeRef) else ChangeRef(repo=repo, number=int(mr.iid))


    async def edit_change(self, ref: ChangeRef, description: str) -> None:
        def save() -> None:
            mr = self._project(ref.repo).mergerequests.get(ref.number, lazy=True)
            mr.description = with_marker(description, None, GITLAB_DESCRIPTION_LIMIT)
            mr.save()

        await self._write(save, None)


def _comment(target: IssueRef | ChangeRef, thread: str, note: dict[str, Any]) -> Comment:
    position = note.get("position") or {}
    return Comment(
        ref=CommentRef(target=target, id=int(note["id"]), thread=str(thread)),
        author=str(note["author"]["username"]),
        author_id=int(note["author"].get("id") or 0),
        body=str(note["body"]),
        system=bool(note.get("system", False)),
        resolved=bool(note.get("resolved", False)),
        internal=bool(note.get("internal") or note.get("confidential")),
        path=str(position.get("new_path") or ""),
        line=position.get("new_line") or position.get("old_line"),
    )


def _file(diff: dict[str, Any]) -> FileChange:
    status: FileStatus = "modified"
    if diff.get("new_file"):
        status = "added"
    elif diff.get("deleted_file"):
        status = "deleted"
    elif diff.get("renamed_file"):
        status = "renamed"
    return FileChange(
        old_path=str(diff["old_path"]), new_path=str(diff["new_path"]), status=status,
        hunks=parse_hunks(str(diff.get("diff") or "")),
    )


def _lines(line: DiffLine) -> dict[str, int | None]:
    """Added → new_line only; removed → old_line only; context → both (doc/api/discussions.md)."""
    return {"old_line": line.old_line, "new_line": line.new_line}


def _range_end(file: FileChange, line: DiffLine) -> dict[str, Any]:
    kind = "old" if line.kind is LineKind.REMOVED else "new"
    return {"line_code": line_code(file.new_path, line), "type": kind, **_lines(line)}


def _position(change: Change, file: FileChange, first: DiffLine, last: DiffLine) -> dict[str, Any]:
    position: dict[str, Any] = {
        "base_sha": change.base_sha,
        "start_sha": change.start_sha,
        "head_sha": change.head_sha,
        "position_type": "text",
        "old_path": file.old_path,  # both paths are required, and differ for a renamed file
        "new_path": file.new_path,
        **{k: v for k, v in _lines(last).items() if v is not None},
    }
    if first != last:
        position["line_range"] = {"start": _range_end(file, first), "end": _range_end(file, last)}
    return position


def _gitlab_level(value: int) -> AccessLevel:
    for level in sorted(AccessLevel, reverse=True):
        if value >= level and level != AccessLevel.TRIAGE:
            return level
    return AccessLevel.NONE


def _hook(found: dict[str, Any]) -> Hook:
    """A hook as `project_hook.json` describes it: `alert_status` is `executable`, `temporarily_disabled`
    (after 4 failing deliveries in a row, for a back-off that doubles up to a day: `disabled_until`) or
    `disabled` (for good, after 40; before GitLab 17.11 after one 4xx streak)."""
    status = str(found.get("alert_status") or "")
    until = str(found.get("disabled_until") or "")
    if status == "executable":
        return Hook(id=int(found["id"]), url=str(found["url"]), state="enabled")
    if status == "temporarily_disabled":
        detail = "GitLab disabled it after failing deliveries" + (f", until {until}" if until else "")
        return Hook(id=int(found["id"]), url=str(found["url"]), state="disabled", detail=detail)
    if status == "disabled":
        return Hook(id=int(found["id"]), url=str(found["url"]), state="disabled",
                    detail="GitLab disabled it for good after failing deliveries")
    return Hook(id=int(found["id"]), url=str(found["url"]))


def _said(message: object) -> str:
    """GitLab's error `message` as one line: a string as it is, field errors (`{"url": ["is blocked: …"]}`,
    what a refused attribute gets) as `url is blocked: …`; they read "error" before, naming nothing."""
    if isinstance(message, str):
        return message
    if isinstance(message, dict) and message:
        return "; ".join(f"{field} {'; '.join(map(str, said)) if isinstance(said, list) else said}"
                         for field, said in message.items())
    if isinstance(message, list) and message:
        return "; ".join(map(str, message))
    return "error"


def _answered(status: object) -> bool:
    """A hook event's `response_status` (a string, "internal error" when no answer came) in 2xx."""
    return str(status).isdigit() and 200 <= int(str(status)) < 300
