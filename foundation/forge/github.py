"""GitHubForge: the Forge protocol over PyGithub.

Pull requests are issues, so conversation comments go through the issues API for both. Issue
comments are flat: a reply is a new comment quoting and linking the one it answers; diff comments
thread (`…/comments/{id}/replies`) and resolve through GraphQL (REST has no endpoint for it).
Inline notes are posted as one review with `line`/`side` (`position` is being retired). Writes are
spaced by a `WritePacer` because GitHub's secondary rate limits punish bursts of content creation.
Every request goes through `_retry.Calls` (reads retried, writes retried only once known not landed).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Sequence
from datetime import datetime
from functools import partial
from typing import Any, Literal
from urllib.parse import quote

import github
import requests
from github import GithubException
from github.PullRequest import ReviewComment
from pydantic import SecretStr

from foundation.forge import _retry
from foundation.forge._adapter import SdkAdapter
from foundation.forge._capped import read_capped
from foundation.forge._text import GITHUB_COMMENT_LIMIT, anchor, has_marker, inline_marker, with_marker
from foundation.forge.diff import parse_hunks
from foundation.forge.errors import ForgeConflict, ForgeError, ForgeNotFound, ForgeUnsupported
from foundation.forge.limits import MAX_PAGE, REDELIVERY_WINDOW
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
    HookState,
    InlineNote,
    Issue,
    IssueRef,
    LineKind,
    Marker,
    Reaction,
    Redelivery,
    RepoRef,
)

_REACTIONS = {Reaction.EYES: "eyes", Reaction.THUMBS_UP: "+1", Reaction.ROCKET: "rocket",
              Reaction.CONFUSED: "confused"}
_STATUS: dict[str, FileStatus] = {"added": "added", "removed": "deleted", "renamed": "renamed"}
# a pull request's review threads, a page at a time (a connection answers at most MAX_PAGE nodes)
_THREADS = (
    "query($owner: String!, $name: String!, $number: Int!, $after: String) {"
    " repository(owner: $owner, name: $name) { pullRequest(number: $number) {"
    f" reviewThreads(first: {MAX_PAGE}, after: $after) {{ pageInfo {{ hasNextPage endCursor }}"
    " nodes { id isResolved comments(first: 1) { nodes { databaseId } } } } } } }"
)


# what resolving a thread asks back (PyGithub wraps it in `mutation Mutation($input: …Input!) { … }`)
_RESOLVED = "thread { isResolved }"


def _failure(exc: Exception) -> _retry.Failure | None:
    """PyGithub's exceptions as (status, headers, message); a transport error has no status."""
    if isinstance(exc, GithubException):
        data = exc.data if isinstance(exc.data, dict) else {}
        message = str(data.get("message") or exc.data or "")
        # a 422's `errors` say what was refused (`Validation Failed` alone names nothing): each its own
        # `message`, or its resource, field and code (`Hook.url invalid`)
        errors = [e.get("message") or ".".join(str(e[k]) for k in ("resource", "field") if e.get(k)) +
                  (f" {e['code']}" if e.get("code") else "") for e in data.get("errors") or [] if isinstance(e, dict)]
        told = "; ".join(str(e) for e in errors if e)
        return exc.status, dict(exc.headers or {}), f"{message}: {told}" if told else message
    if isinstance(exc, requests.RequestException):
        return 0, {}, _retry.transport(exc)
    return None


class GitHubForge(SdkAdapter):
    """GitHub or GitHub Enterprise reached through an injected `github.Github` client."""

    kind: ForgeKind = "github"
    capabilities = frozenset({Capability.RESOLVE_THREADS, Capability.MULTILINE_INLINE, Capability.DRAFT_CHANGES})

    def __init__(
        self,
        client: github.Github,
        policy: _retry.RetryPolicy | None = None,
        pacer: _retry.WritePacer | None = None,
        app: github.Auth.AppAuth | None = None,
        bot: BotIdentity | None = None,
    ) -> None:
        self._gh = client
        self._bot = bot or BotIdentity()  # unknown: no comment counts as the bot's
        self._app = app  # the App's own credentials (JWT), for what only the App may ask
        policy = dataclasses.replace(policy or _retry.RetryPolicy(), forge="github")
        self._calls = _retry.Calls("github", _failure, policy, pacer or _retry.WritePacer(interval=1.0))

    # --- plumbing ------------------------------------------------------------------------------

    def _repo(self, repo: RepoRef) -> Any:
        return self._gh.get_repo(repo.project)

    # --- conversations -------------------------------------------------------------------------

    async def get_issue(self, ref: IssueRef, *, comments: bool = True) -> Issue:
        def fetch() -> Issue:
            issue = self._repo(ref.repo).get_issue(ref.number)
            return Issue(
                ref=ref,
                title=issue.title,
                body=issue.body or "",
                labels=tuple(label.name for label in issue.labels),
                author=issue.user.login,
                author_id=int(issue.user.id or 0),
            )

        issue = await self._read(fetch)
        return issue.model_copy(update={"comments": tuple(await self.list_comments(ref))}) if comments else issue

    async def list_closed(
        self, repo: RepoRef, kind: Literal["issue", "change"], since: str, limit: int
    ) -> list[Closed]:
        """`GET /repos/{o}/{r}/issues?state=closed&since=` (pull requests left out) or
        `/pulls?state=closed` (merged ones, read newest first until one is older than `since`)."""

        def fetch() -> list[Closed]:
            gh_repo = self._repo(repo)
            start = datetime.fromisoformat(since.replace("Z", "+00:00")) if since else None
            found: list[Closed] = []
            if kind == "issue":
                listed = gh_repo.get_issues(state="closed", sort="updated", direction="desc",
                                            **({"since": start} if start else {}))
                issues = (i for i in listed if i.pull_request is None)
                found = [_closed(IssueRef(repo=repo, number=i.number), i) for i in itertools.islice(issues, limit)]
            else:
                pulls = gh_repo.get_pulls(state="closed", sort="updated", direction="desc")
                for pull in itertools.islice(pulls, 4 * limit):  # closed unmerged ones count toward the scan
                    if len(found) >= limit or (start and pull.updated_at and pull.updated_at < start):
                        break
                    if pull.merged_at is not None:
                        found.append(_closed(ChangeRef(repo=repo, number=pull.number), pull))
            return found[::-1]

        return await self._read(fetch)

    async def list_comments(self, target: IssueRef | ChangeRef) -> list[Comment]:
        def fetch() -> list[Comment]:
            repo = self._repo(target.repo)
            comments = [
                Comment(ref=CommentRef(target=target, id=c.id, url=c.html_url or ""), author=c.user.login,
                        author_id=int(c.user.id or 0), body=c.body or "")
                for c in repo.get_issue(target.number).get_comments()
            ]
            if isinstance(target, ChangeRef):
                comments += [_review_comment(target, c) for c in repo.get_pull(target.number).get_review_comments()]
            return comments

        return await self._read(fetch)

    async def post_comment(
        self, target: IssueRef | ChangeRef, body: str, marker: Marker | None = None
    ) -> CommentRef:
        if marker is not None and (found := await self._find(target, marker)) is not None:
            await self.edit_comment(found, body, marker)
            return found
        text = with_marker(body, marker, GITHUB_COMMENT_LIMIT)

        def create() -> CommentRef:
            created = self._repo(target.repo).get_issue(target.number).create_comment(text)
            return CommentRef(target=target, id=created.id, url=created.html_url or "")

        return await self._write(create, self._finder(target, marker))

    def _comment_object(self, comment: CommentRef) -> Any:
        repo = self._repo(comment.target.repo)
        if comment.review:
            return repo.get_pull(comment.target.number).get_review_comment(comment.id)
        return repo.get_issue(comment.target.number).get_comment(comment.id)

    async def edit_comment(self, comment: CommentRef, body: str, marker: Marker | None = None) -> None:
        text = with_marker(body, marker, GITHUB_COMMENT_LIMIT)

        async def landed() -> bool | None:  # the body already reads `text`: the lost edit landed
            return await self._read(lambda: self._comment_object(comment).body == text) or None

        await self._write(lambda: self._comment_object(comment).edit(text), landed)

    async def reply(self, comment: CommentRef, body: str, marker: Marker | None = None) -> CommentRef:
        target = comment.target
        if marker is not None and (found := await self._find(target, marker)) is not None:
            return found
        if not comment.review:  # conversation comments are flat: quote and link instead
            quoted = await self._read(partial(self._quote, comment))
            return await self.post_comment(target, f"{quoted} {body}", marker)
        text = with_marker(body, marker, GITHUB_COMMENT_LIMIT)
        top = int(comment.thread or comment.id)  # replies to replies are not supported

        def create() -> CommentRef:
            created = self._repo(target.repo).get_pull(target.number).create_review_comment_reply(top, text)
            return CommentRef(target=target, id=created.id, thread=str(top), review=True, url=created.html_url or "")

        return await self._write(create, self._finder(target, marker))

    def _quote(self, comment: CommentRef) -> str:
        """The first lines of `comment` as a Markdown quote, then a link to it (runs in the SDK thread)."""
        original = self._comment_object(comment)
        quoted = "\n".join(f"> {line}" for line in (original.body or "").splitlines()[:3])
        return f"{quoted}\n\n[@{original.user.login}]({original.html_url or ''})"

    async def resolve_thread(self, comment: CommentRef) -> None:
        """Resolve the diff thread holding `comment` (GraphQL `resolveReviewThread`)."""
        if not comment.review:
            raise ForgeUnsupported("GitHub conversation comments are flat: only diff threads resolve")
        top = int(comment.thread or comment.id)
        thread_id, resolved = await self._read(partial(self._review_thread, comment.target, top))
        if resolved:
            return

        def resolve() -> None:
            self._gh.requester.graphql_named_mutation("resolveReviewThread", {"threadId": thread_id}, _RESOLVED)

        async def landed() -> bool | None:  # the mutation's answer was lost: is the thread resolved now?
            return (await self._read(partial(self._review_thread, comment.target, top)))[1] or None

        await self._write(resolve, landed)

    def _review_thread(self, target: ChangeRef | IssueRef, top: int) -> tuple[str, bool]:
        """(GraphQL id, resolved) of the review thread whose first comment is `top`, read page by page."""
        owner, name = target.repo.project.split("/", 1)
        after: str | None = None
        while True:
            variables = {"owner": owner, "name": name, "number": target.number, "after": after}
            _, data = self._gh.requester.graphql_query(_THREADS, variables)
            threads = data["data"]["repository"]["pullRequest"]["reviewThreads"]
            for thread in threads["nodes"]:
                if any(c["databaseId"] == top for c in thread["comments"]["nodes"]):
                    return str(thread["id"]), bool(thread["isResolved"])
            if not threads["pageInfo"]["hasNextPage"]:
                raise ForgeNotFound(f"no review thread holds comment {top}")
            after = threads["pageInfo"]["endCursor"]

    async def add_reaction(self, target: IssueRef | ChangeRef | CommentRef, reaction: Reaction) -> None:
        def create() -> None:
            if isinstance(target, CommentRef):
                owner = self._comment_object(target)
            else:
                owner = self._repo(target.repo).get_issue(target.number)
            owner.create_reaction(_REACTIONS[reaction])  # 200 when it already exists

        await self._write(create, None)

    async def user_access(self, repo: RepoRef, user: ForgeUser) -> AccessLevel:
        """The collaborator's role (`role_name` distinguishes triage and maintain); 404 → none."""

        def fetch() -> AccessLevel:
            try:
                role = self._repo(repo).get_collaborator_role_name(user.username)
            except GithubException as exc:
                if exc.status == 404:
                    return AccessLevel.NONE
                raise
            return _GITHUB_ROLES.get(role, AccessLevel.NONE)

        return await self._read(fetch)

    # --- identity and hooks ----------------------------------------------------------------------

    async def resolve_repo(self, project_id: int | str) -> RepoRef:
        """`GET /repositories/:id` (or `/repos/:owner/:name`) at the configured API root."""

        def fetch() -> RepoRef:
            key = int(project_id) if str(project_id).isdigit() else str(project_id)
            repo = self._gh.get_repo(key)  # the client is lazy: reading an attribute fetches it
            return RepoRef(
                forge="github",
                project=str(repo.full_name),
                path=str(repo.full_name),
                default_branch=str(repo.default_branch or ""),
                clone_url=str(repo.clone_url or ""),
                web_url=str(repo.html_url or ""),
                id=int(repo.id),
                visibility="private" if repo.private else str(repo.visibility or "public"),
            )

        return await self._read(fetch)

    async def read_file(self, repo: RepoRef, path: str, ref: str, max_bytes: int) -> bytes | None:
        """`GET /repos/:owner/:name/contents/:path?ref=` in the raw media type, streamed and stopped
        past `max_bytes` (`_capped`); a 404 (no such file or branch) is None.

        PyGithub reads an answer whole (and base64 in JSON), so this one request goes through
        `requests` with the client's base URL and credentials. A directory answers its JSON listing.
        """

        def fetch() -> bytes | None:
            requester = self._gh.requester
            headers = {"Accept": "application/vnd.github.raw+json", "User-Agent": "forgebot"}
            if requester.auth is not None:
                requester.auth.authentication(headers)
            url = f"{requester.base_url}/repos/{repo.project}/contents/{quote(path)}"
            seconds = float(requester.kwargs.get("timeout") or 30)
            response = requests.get(url, params={"ref": ref}, headers=headers, stream=True, timeout=seconds)
            if response.status_code == 404:
                response.close()
                return None
            listing = "json" in response.headers.get("content-type", "")
            answer = read_capped(response, max_bytes, path, seconds)
            if response.status_code >= 400:
                raise GithubException(response.status_code, _json(answer), dict(response.headers))
            if listing:
                raise ForgeError(f"{path} is not a file")
            return answer

        return await self._read(fetch)

    async def whoami(self) -> BotIdentity:
        """`GET /user` for a token; an App acts as its bot user `<slug>[bot]` (`GET /app`, as the App)."""

        def fetch() -> BotIdentity:
            if self._app is not None:
                return BotIdentity(login=f"{self._integration().get_app().slug}[bot]")
            user = self._gh.get_user()
            found = BotIdentity(id=int(user.id), login=str(user.login))
            scopes = self._gh.oauth_scopes  # a classic token's `X-OAuth-Scopes`; None for fine-grained ones
            return found if scopes is None else found.model_copy(update={"scopes": tuple(scopes)})

        return await self._read(fetch)

    async def signing_keys(self) -> tuple[str, ...] | None:
        """`GET /user/ssh_signing_keys` for a token's user (a classic token needs `read:ssh_signing_key`:
        without it, None); an App has no account to hold such keys, so its pushed commits verify as none."""
        if self._app is not None:
            return None

        def fetch() -> tuple[str, ...] | None:
            try:
                _, data = self._gh.requester.requestJsonAndCheck("GET", "/user/ssh_signing_keys",
                                                                  parameters={"per_page": 100})
            except github.GithubException as exc:
                if exc.status in (403, 404):  # the token may not read them
                    return None
                raise
            return tuple(str(key["key"]) for key in data if isinstance(key, dict) and "key" in key) \
                if isinstance(data, list) else None

        return await self._read(fetch)

    async def list_hooks(self, repo: RepoRef) -> list[Hook]:
        def fetch() -> list[Hook]:
            return [_hook(h) for h in self._repo(repo).get_hooks()]

        return await self._read(fetch)

    def _integration(self) -> github.GithubIntegration:
        """The App itself (its JWT), for what only the App may ask."""
        return github.GithubIntegration(auth=self._app, base_url=self._gh.requester.base_url, retry=None)

    async def app_hook(self) -> Hook | None:
        """The App's webhook: where it delivers (`/app/hook/config`) and its newest delivery's answer."""
        if self._app is None:
            return None

        def fetch() -> Hook:
            requester = self._integration().requester
            _, config = requester.requestJsonAndCheck("GET", "/app/hook/config")
            _, deliveries = requester.requestJsonAndCheck("GET", "/app/hook/deliveries", parameters={"per_page": 1})
            url = str((config or {}).get("url") or "")
            newest = deliveries[0] if isinstance(deliveries, list) and deliveries else None
            if newest is None:
                return Hook(id=0, url=url, state="unused")
            code = int(newest.get("status_code") or 0)
            said = f"was answered HTTP {code} ({newest.get('status')})" if code else \
                f"got no answer ({newest.get('status')})"
            return Hook(id=0, url=url, state="ok" if 200 <= code < 300 else "failing",
                        detail=f"GitHub's last delivery to the App's webhook {said}", answer=code or None)

        return await self._read(fetch)

    async def redeliver(self, repo: RepoRef | None, hook_id: int) -> Redelivery:
        """GitHub lists a hook's deliveries with their answers, a redelivery sharing the original's `guid`, and
        sends one again on request (202: later, so the answer is not known here; past 3 days it refuses).
        `repo` None: the App's own webhook, asked as the App."""

        # one requester for every call (a new integration would open a new connection per redelivery)
        requester = self._integration().requester if repo is None else self._gh.requester

        def listed() -> tuple[str, list[tuple[int, str, int]]]:
            """The deliveries' address and (id, guid, status code) of each, newest first; read in the call's
            thread, as `get_repo` asks GitHub."""
            if repo is None:
                _, data = requester.requestJsonAndCheck("GET", "/app/hook/deliveries",
                                                        parameters={"per_page": MAX_PAGE})
                return "/app/hook/deliveries", [(int(d["id"]), str(d["guid"]), int(d.get("status_code") or 0))
                                                for d in data or []]
            found = self._repo(repo)
            deliveries = itertools.islice(found.get_hook_deliveries(hook_id), REDELIVERY_WINDOW)
            return (f"{found.url}/hooks/{hook_id}/deliveries",
                    [(int(d.id), str(d.guid), int(d.status_code or 0)) for d in deliveries])

        base, found = await self._read(listed)
        answered = {guid for _, guid, code in found if 200 <= code < 300}
        newest: dict[str, int] = {}
        for delivery_id, guid, _ in found:  # newest first
            if guid not in answered:
                newest.setdefault(guid, delivery_id)
        resent = 0
        for delivery_id in reversed(newest.values()):  # oldest first, as they came
            try:
                await self._write(partial(requester.requestJsonAndCheck, "POST", f"{base}/{delivery_id}/attempts"),
                                  None)
            except ForgeError as exc:
                return Redelivery(unanswered=len(newest), resent=resent, refused=str(exc))
            resent += 1
        return Redelivery(unanswered=len(newest), resent=resent)

    async def last_answer(self, repo: RepoRef, hook: Hook) -> Hook:
        return hook  # a GitHub hook carries its `last_response`

    async def test_hook(self, repo: RepoRef, hook_id: int) -> Hook | None:
        return None  # GitHub disables no hook by itself; `save_hook` makes an inactive one active

    async def save_hook(self, repo: RepoRef, url: str, secret: str, hook_id: int | None = None) -> Hook:
        config = {"url": url, "content_type": "json", "secret": secret, "insecure_ssl": "0"}
        events = ["issues", "issue_comment"]

        def save() -> Hook:
            found = self._repo(repo)
            if hook_id is None:
                hook = found.create_hook("web", config, events, active=True)
            else:
                hook = found.get_hook(hook_id)
                hook.edit("web", config, events, active=True)
            return Hook(id=hook.id, url=url)

        return await self._write(save, None)

    # --- changes -------------------------------------------------------------------------------

    async def get_change(self, ref: ChangeRef) -> Change:
        def fetch() -> Change:
            pr = self._repo(ref.repo).get_pull(ref.number)
            return Change(
                ref=ref,
                title=pr.title,
                body=pr.body or "",
                author=pr.user.login,
                author_id=int(pr.user.id or 0),
                source_branch=pr.head.ref,
                target_branch=pr.base.ref,
                base_sha=pr.base.sha,
                head_sha=pr.head.sha,
                start_sha=pr.base.sha,
                head_ref=f"refs/pull/{ref.number}/head",
                state=pr.state,
                draft=bool(pr.draft),
                url=pr.html_url or "",
                files=tuple(_file(f) for f in pr.get_files()),
            )

        return await self._read(fetch)

    async def post_inline(self, ref: ChangeRef, notes: Sequence[InlineNote], task: str) -> list[InlineNote]:
        change = await self.get_change(ref)
        bodies = [c.body for c in await self.list_comments(ref) if self._bot.wrote(c)]
        unanchored: list[InlineNote] = []
        comments: list[ReviewComment] = []
        markers: list[Marker] = []
        for note in notes:
            marker = inline_marker(task, note)
            located = anchor(change.files, note)
            if located is None:
                unanchored.append(note)
            elif not any(has_marker(body, marker) for body in bodies):
                comments.append(_review_item(with_marker(note.body, marker, GITHUB_COMMENT_LIMIT), *located))
                markers.append(marker)
        if comments:

            def create() -> None:
                repo = self._repo(ref.repo)
                pr = repo.get_pull(ref.number)
                summary = f"{len(comments)} comment(s) on the diff"
                pr.create_review(commit=repo.get_commit(change.head_sha), body=summary, event="COMMENT",
                                 comments=comments)

            # a review posts all its comments or none, so the first note's marker tells if it landed
            await self._write(create, self._finder(ref, markers[0]))
        return unanchored

    async def git_credentials(self) -> GitCredentials:
        """The token the API uses (for an App, the installation token, refreshed when near expiry)."""

        def current() -> str:
            auth = self._gh.requester.auth
            token = getattr(auth, "token", None)  # Auth.Token and Auth.AppInstallationAuth both have one
            if not isinstance(token, str):
                raise ForgeUnsupported(f"{type(auth).__name__} gives git no token")
            return token

        return GitCredentials(username="x-access-token", token=SecretStr(await self._read(current)))

    async def find_change(self, repo: RepoRef, source_branch: str) -> ChangeRef | None:
        owner = repo.project.split("/", 1)[0]

        def fetch() -> ChangeRef | None:
            for pr in self._repo(repo).get_pulls(state="open", head=f"{owner}:{source_branch}"):
                return ChangeRef(repo=repo, number=pr.number)
            return None

        return await self._read(fetch)

    async def open_change(self, repo: RepoRef, request: ChangeRequest) -> ChangeRef:
        if (existing := await self.find_change(repo, request.source_branch)) is not None:
            return existing
        text = with_marker(request.description, None, GITHUB_COMMENT_LIMIT)
        base = request.target_branch or repo.default_branch
        try:
            pr = await self._write(
                lambda: self._repo(repo).create_pull(
                    base=base, head=request.source_branch, title=request.title, body=text, draft=request.draft
                ),
                lambda: self.find_change(repo, request.source_branch),
            )
        except ForgeConflict:  # 422 "A pull request already exists for owner:branch."
            if (existing := await self.find_change(repo, request.source_branch)) is None:
                raise
            return existing
        return pr if isinstance(pr, ChangeRef) else ChangeRef(repo=repo, number=pr.number)


    async def edit_change(self, ref: ChangeRef, description: str) -> None:
        text = with_marker(description, None, GITHUB_COMMENT_LIMIT)
        await self._write(lambda: self._repo(ref.repo).get_pull(ref.number).edit(body=text), None)


def _closed(ref: IssueRef | ChangeRef, item: Any) -> Closed:
    """An issue or pull request of a listing, as the forge-neutral record."""
    updated = item.updated_at.isoformat().replace("+00:00", "Z") if item.updated_at else ""
    return Closed(ref=ref, title=item.title or "", body=item.body or "", author=item.user.login,
                  author_id=int(item.user.id or 0), updated_at=updated)


def _review_comment(target: ChangeRef, c: Any) -> Comment:
    top = c.in_reply_to_id or c.id
    return Comment(
        ref=CommentRef(target=target, id=c.id, thread=str(top), review=True, url=c.html_url or ""),
        author=c.user.login,
        author_id=int(c.user.id or 0),
        body=c.body or "",
        path=c.path or "",
        line=c.line or c.original_line,
    )


def _file(f: Any) -> FileChange:
    return FileChange(
        old_path=f.previous_filename or f.filename,
        new_path=f.filename,
        status=_STATUS.get(f.status, "modified"),
        hunks=parse_hunks(f.patch or ""),
    )


def _side(line: DiffLine) -> tuple[int, str]:
    """LEFT is the old file (removed lines); RIGHT the new one (added and context lines)."""
    if line.kind is LineKind.REMOVED:
        return line.old_pos, "LEFT"
    return line.new_pos, "RIGHT"


def _review_item(body: str, file: FileChange, first: DiffLine, last: DiffLine) -> ReviewComment:
    number, side = _side(last)
    item: ReviewComment = {"path": file.new_path, "body": body, "line": number, "side": side}
    if first != last:
        item["start_line"], item["start_side"] = _side(first)
    return item


_GITHUB_ROLES = {
    "read": AccessLevel.REPORTER,
    "triage": AccessLevel.TRIAGE,
    "write": AccessLevel.DEVELOPER,
    "maintain": AccessLevel.MAINTAINER,
    "admin": AccessLevel.OWNER,
}



def _json(answer: bytes) -> Any:
    """An error answer's body as GithubException carries it ({} when it is not JSON)."""
    try:
        return json.loads(answer)
    except ValueError:
        return {}


def _hook(found: Any) -> Hook:
    """A hook as GitHub's `hook` schema describes it: `active`, and `last_response` (`code`, `status`,
    `message`) of its last delivery: status `unused` before the first, a code outside 2xx (or none: GitHub
    got no answer, `timeout`) when it failed. GitHub disables no hook by itself; a person can. Read from the
    listed object's attributes (its `raw_data` would fetch each hook again)."""
    config = found.config or {}
    url = str(config.get("url", "")) if isinstance(config, dict) else ""
    last = found.last_response
    code = last.code if last is not None else None
    status = str(last.status or "") if last is not None else ""
    message = str(last.message or "") if last is not None else ""
    if found.active is False:
        return Hook(id=int(found.id), url=url, state="disabled", detail="made inactive on GitHub: it sends nothing")
    if status == "unused" or (code is None and not status):
        return Hook(id=int(found.id), url=url, state="unused")
    words = ": ".join(part for part in (status if status != "active" else "", message) if part)
    said = f"was answered HTTP {code}" if isinstance(code, int) else "got no answer"
    said += f" ({words})" if words else ""
    state: HookState = "ok" if isinstance(code, int) and 200 <= code < 300 else "failing"
    return Hook(id=int(found.id), url=url, state=state, detail=f"GitHub's last delivery {said}",
                answer=code if isinstance(code, int) else None)
