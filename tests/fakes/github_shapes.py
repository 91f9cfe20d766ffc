"""The fake GitHub's representations: GitHub's own example answers filled with the fake's state.

Each shape starts from the example GitHub publishes for that answer (`tests.fakes.contract.examples`)
so that every field GitHub documents is there, then takes the fake's values. URLs point back at the
fake (`api`), because PyGithub follows the URLs it is given. Where a published example lacks a field
its own schema requires, the fix is made here and says so.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from tests.fakes.contract.examples import github_example
from tests.fakes.forge_state import FakeChange, FakeComment, FakeDelivery, FakeHook, FakeIssue, FakeProject, FakeThread

WEB = "https://github.example"
_ROLES = ("read", "triage", "write", "maintain", "admin")
_EXAMPLE_API = "https://api.github.com"


def _rebase(node: Any, api_root: str) -> Any:
    """Every URL of an example pointed at the fake's API root (and github.com at a fake web host)."""
    if isinstance(node, dict):
        return {k: _rebase(v, api_root) for k, v in node.items()}
    if isinstance(node, list):
        return [_rebase(v, api_root) for v in node]
    if isinstance(node, str):
        return node.replace(_EXAMPLE_API, api_root).replace("https://github.com", WEB)
    return node


def example(name: str, api_root: str) -> Any:
    return _rebase(github_example(name), api_root)


def node_id(kind: str, number: int) -> str:
    return base64.b64encode(f"0:{kind}{number}".encode()).decode()


def user(api_root: str, login: str, user_id: int = 7) -> dict[str, Any]:
    data: dict[str, Any] = example("issue-comment", api_root)["user"]
    for key, value in list(data.items()):
        if isinstance(value, str):
            data[key] = value.replace("/octocat", f"/{login}")
    data.update(login=login, id=user_id, node_id=node_id("User", user_id),
                type="Bot" if login.endswith("[bot]") else "User")
    return data


def repo_api(api_root: str, full_name: str) -> str:
    return f"{api_root}/repos/{full_name}"


def label(api_root: str, full_name: str, index: int, name: str) -> dict[str, Any]:
    return {"id": index + 1, "node_id": node_id("Label", index + 1),
            "url": f"{repo_api(api_root, full_name)}/labels/{name}", "name": name, "description": None,
            "color": "ffffff", "default": False}


def issue(api_root: str, full_name: str, number: int, item: FakeIssue | FakeChange, user_id: int = 7) -> dict[str, Any]:
    """`GET /repos/{o}/{r}/issues/{n}`: a pull request is an issue too, marked by `pull_request`."""
    data: dict[str, Any] = example("issue-items", api_root)[0]
    api = repo_api(api_root, full_name)
    closed = item.state in ("closed", "merged")
    labels = item.labels if isinstance(item, FakeIssue) else []
    data.update(
        id=number + 10_000, node_id=node_id("Issue", number), number=number, title=item.title, body=item.body,
        state="closed" if closed else "open", state_reason="completed" if closed else None,
        url=f"{api}/issues/{number}", html_url=f"{WEB}/{full_name}/issues/{number}",
        repository_url=api, comments_url=f"{api}/issues/{number}/comments", events_url=f"{api}/issues/{number}/events",
        labels_url=f"{api}/issues/{number}/labels{{/name}}", updated_at=item.updated_at, created_at=item.updated_at,
        closed_at=item.updated_at if closed else None, closed_by=None, assignee=None, assignees=[], milestone=None,
        labels=[label(api_root, full_name, i, name) for i, name in enumerate(labels)], comments=0,
        user=user(api_root, item.author, user_id), author_association="MEMBER", pinned_comment=None,
    )
    if isinstance(item, FakeChange):
        data["pull_request"] = {"url": f"{api}/pulls/{number}", "html_url": f"{WEB}/{full_name}/pull/{number}",
                                "diff_url": f"{WEB}/{full_name}/pull/{number}.diff",
                                "patch_url": f"{WEB}/{full_name}/pull/{number}.patch",
                                "merged_at": item.updated_at if item.state == "merged" else None}
    else:
        data.pop("pull_request", None)
    return data


def issue_comment(api_root: str, full_name: str, number: int, comment: FakeComment) -> dict[str, Any]:
    data: dict[str, Any] = example("issue-comment", api_root)
    api = repo_api(api_root, full_name)
    data.update(id=comment.id, node_id=node_id("IssueComment", comment.id), body=comment.body,
                url=f"{api}/issues/comments/{comment.id}", issue_url=f"{api}/issues/{number}",
                html_url=f"{WEB}/{full_name}/issues/{number}#issuecomment-{comment.id}",
                user=user(api_root, comment.author), author_association="MEMBER")
    return data


def review_comment(api_root: str, full_name: str, number: int, comment: FakeComment, thread: FakeThread,
                   head_sha: str) -> dict[str, Any]:
    data: dict[str, Any] = example("pull-request-review-comment", api_root)
    api = repo_api(api_root, full_name)
    position = comment.position or thread.comments[0].position or {}
    reply = comment is not thread.comments[0]
    line, start = position.get("line"), position.get("start_line")
    data.update(
        id=comment.id, node_id=node_id("PullRequestReviewComment", comment.id), body=comment.body,
        url=f"{api}/pulls/comments/{comment.id}", pull_request_url=f"{api}/pulls/{number}",
        html_url=f"{WEB}/{full_name}/pull/{number}#discussion_r{comment.id}", user=user(api_root, comment.author),
        path=position.get("path"), line=line, original_line=line, side=position.get("side") or "RIGHT",
        start_line=start, original_start_line=start, start_side=position.get("start_side") if start else None,
        commit_id=head_sha, original_commit_id=head_sha, pull_request_review_id=int(thread.id),
        subject_type="line", author_association="MEMBER",
    )
    for legacy in ("position", "original_position"):  # diff offsets, retired for `line`; optional
        data.pop(legacy, None)
    if reply:
        data["in_reply_to_id"] = int(thread.id)
    else:
        data.pop("in_reply_to_id", None)
    for key, link in data["_links"].items():
        link["href"] = {"self": data["url"], "html": data["html_url"], "pull_request": data["pull_request_url"]}.get(
            key, link["href"])
    return data


def reaction(api_root: str, reaction_id: int, content: str, login: str) -> dict[str, Any]:
    data: dict[str, Any] = example("reaction", api_root)
    data.update(id=reaction_id, node_id=node_id("Reaction", reaction_id), content=content, user=user(api_root, login))
    return data


def permission(api_root: str, login: str, role: str) -> dict[str, Any]:
    data: dict[str, Any] = example("repository-collaborator-permission-response-if-user-has-admin-permissions",
                                   api_root)
    legacy = {"maintain": "write", "triage": "read"}.get(role, role)
    data.update(permission=legacy, role_name=role)
    rank = ["read", "triage", "write", "maintain", "admin"].index(role) if role in _ROLES else 0
    allowed = {name: rank >= level for name, level in (("pull", 0), ("triage", 1), ("push", 2), ("maintain", 3),
                                                         ("admin", 4))}
    data["user"] = {**user(api_root, login), "permissions": allowed, "role_name": role}
    return data


def commit(api_root: str, full_name: str, sha: str) -> dict[str, Any]:
    data: dict[str, Any] = example("commit", api_root)
    api = repo_api(api_root, full_name)
    data.update(sha=sha, node_id=node_id("Commit", int(sha[:6], 16)), url=f"{api}/commits/{sha}",
                html_url=f"{WEB}/{full_name}/commit/{sha}", comments_url=f"{api}/commits/{sha}/comments")
    data["files"] = []  # the published example's files lack `sha` and `contents_url`, which its schema requires
    return data


def repository(api_root: str, found: FakeProject, clone_url: str) -> dict[str, Any]:
    data: dict[str, Any] = example("full-repository-default-response", api_root)
    owner, _, name = found.path.partition("/")
    data.update(id=found.id, node_id=node_id("Repository", found.id), name=name, full_name=found.path,
                owner=user(api_root, owner), private=True, visibility="private", default_branch=found.default_branch,
                clone_url=clone_url, html_url=found.web_url or f"{WEB}/{found.path}",
                url=repo_api(api_root, found.path), language=None)  # the published example lacks `language`
    for key in ("parent", "source", "organization", "template_repository"):
        data.pop(key, None)  # a repository that is no fork and belongs to a user
    data["fork"] = False
    return data


def content_file(api_root: str, full_name: str, path: str, content: bytes, ref: str) -> dict[str, Any]:
    data: dict[str, Any] = example("content-file-response-if-content-is-a-file", api_root)
    api = repo_api(api_root, full_name)
    sha = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()
    data.update(name=path.rsplit("/", 1)[-1], path=path, sha=sha, size=len(content),
                content=base64.encodebytes(content).decode(), url=f"{api}/contents/{path}?ref={ref}",
                git_url=f"{api}/git/blobs/{sha}", html_url=f"{WEB}/{full_name}/blob/{ref}/{path}",
                download_url=f"{WEB}/{full_name}/raw/{ref}/{path}")
    data["_links"] = {"self": data["url"], "git": data["git_url"], "html": data["html_url"]}
    return data


def private_user(api_root: str, login: str, user_id: int) -> dict[str, Any]:
    data: dict[str, Any] = example("private-user-response-with-public-profile-information", api_root)
    data.update({k: v for k, v in user(api_root, login, user_id).items() if k in data})
    return data


def app(api_root: str, app_id: int, slug: str) -> dict[str, Any]:
    data: dict[str, Any] = example("integration", api_root)
    data.update(id=app_id, slug=slug, name=slug, node_id=node_id("App", app_id), owner=user(api_root, "octo-org"))
    return data


def hook(api_root: str, full_name: str, found: FakeHook) -> dict[str, Any]:
    data: dict[str, Any] = example("hook", api_root)
    url = f"{repo_api(api_root, full_name)}/hooks/{found.id}"
    data.update(id=found.id, events=found.events, active=found.active, url=url, test_url=f"{url}/test",
                ping_url=f"{url}/pings", deliveries_url=f"{url}/deliveries")
    code, status, message = found.last_response
    data["last_response"] = {"code": code, "status": status, "message": message}
    data["config"] = {"url": found.url, "content_type": "json", "insecure_ssl": "0"}
    if found.secret:
        data["config"]["secret"] = "********"  # GitHub masks a hook's secret in its answers
    return data


def hook_delivery(delivery: FakeDelivery) -> dict[str, Any]:
    """`hook-delivery-item`: GitHub's summary of one delivery (`status_code` 0 when no answer came)."""
    ok = delivery.status is not None and 200 <= delivery.status < 300
    repository = delivery.payload.get("repository")
    return {"id": delivery.id, "guid": delivery.key, "delivered_at": delivery.at, "redelivery": delivery.again,
            "duration": 0.01, "status": "OK" if ok else (f"Invalid HTTP Response: {delivery.status}"
                                                        if delivery.status else "failed to connect to host"),
            "status_code": delivery.status or 0, "event": delivery.event, "action": delivery.payload.get("action"),
            "installation_id": None,
            "repository_id": repository.get("id") if isinstance(repository, dict) else None}


def installation_token(api_root: str, token: str, expires_at: str) -> dict[str, Any]:
    data: dict[str, Any] = example("installation-token", api_root)
    data.update(token=token, expires_at=expires_at, permissions={"issues": "write", "pull_requests": "write",
                                                                  "contents": "write"},
                repository_selection="all")
    data.pop("repositories", None)
    return data


def pull(api_root: str, full_name: str, number: int, change: FakeChange, clone_url: str) -> dict[str, Any]:
    data: dict[str, Any] = example("pull-request", api_root)
    api = repo_api(api_root, full_name)
    owner = full_name.split("/")[0]
    merged = change.state == "merged"
    data.update(
        id=number + 20_000, node_id=node_id("PullRequest", number), number=number, title=change.title,
        body=change.body, draft=change.draft, state="open" if change.state == "opened" else "closed",
        url=f"{api}/pulls/{number}", html_url=f"{WEB}/{full_name}/pull/{number}",
        diff_url=f"{WEB}/{full_name}/pull/{number}.diff", patch_url=f"{WEB}/{full_name}/pull/{number}.patch",
        issue_url=f"{api}/issues/{number}", comments_url=f"{api}/issues/{number}/comments",
        commits_url=f"{api}/pulls/{number}/commits", review_comments_url=f"{api}/pulls/{number}/comments",
        review_comment_url=f"{api}/pulls/comments{{/number}}", statuses_url=f"{api}/statuses/{change.head_sha}",
        updated_at=change.updated_at, created_at=change.updated_at, merged=merged,
        merged_at=change.updated_at if merged else None,
        closed_at=None if change.state == "opened" else change.updated_at,
        merge_commit_sha=None, user=user(api_root, change.author), assignee=None, assignees=[], labels=[],
        milestone=None, merged_by=None, requested_reviewers=[], author_association="MEMBER",
        changed_files=len(change.files), mergeable=None, mergeable_state="unknown", comments=0, review_comments=0,
        requested_teams=[],  # the published example's team lacks `type`, which its schema requires
    )
    for side, branch, sha in (("head", change.source_branch, change.head_sha), ("base", change.target_branch,
                                                                                 change.base_sha)):
        data[side].update(ref=branch, sha=sha, label=f"{owner}:{branch}", user=user(api_root, owner))
        repo = FakeProject(id=abs(hash(full_name)) % 1_000_000, path=full_name)
        data[side]["repo"] = repository(api_root, repo, clone_url)
    data["_links"] = {"self": {"href": data["url"]}, "html": {"href": data["html_url"]},
                      "issue": {"href": data["issue_url"]}, "comments": {"href": data["comments_url"]},
                      "review_comments": {"href": data["review_comments_url"]},
                      "review_comment": {"href": data["review_comment_url"]},
                      "commits": {"href": data["commits_url"]}, "statuses": {"href": data["statuses_url"]}}
    return data


def diff_entry(api_root: str, full_name: str, head_sha: str, status: str, new_path: str, old_path: str,
               patch: str) -> dict[str, Any]:
    data: dict[str, Any] = example("diff-entry-items", api_root)[0]
    api = repo_api(api_root, full_name)
    added = sum(1 for line in patch.splitlines() if line.startswith("+"))
    removed = sum(1 for line in patch.splitlines() if line.startswith("-"))
    data.update(filename=new_path, status=status, patch=patch, additions=added, deletions=removed,
                changes=added + removed, sha=hashlib.sha1(patch.encode()).hexdigest(),
                blob_url=f"{WEB}/{full_name}/blob/{head_sha}/{new_path}",
                raw_url=f"{WEB}/{full_name}/raw/{head_sha}/{new_path}",
                contents_url=f"{api}/contents/{new_path}?ref={head_sha}")
    if status == "renamed":
        data["previous_filename"] = old_path
    else:
        data.pop("previous_filename", None)
    return data


def review(api_root: str, full_name: str, number: int, review_id: int, body: str, head_sha: str,
           login: str) -> dict[str, Any]:
    data: dict[str, Any] = example("pull-request-review", api_root)
    api = repo_api(api_root, full_name)
    data.update(id=review_id, node_id=node_id("PullRequestReview", review_id), body=body, state="COMMENTED",
                commit_id=head_sha, pull_request_url=f"{api}/pulls/{number}", user=user(api_root, login),
                html_url=f"{WEB}/{full_name}/pull/{number}#pullrequestreview-{review_id}",
                author_association="MEMBER")
    data["_links"] = {"html": {"href": data["html_url"]}, "pull_request": {"href": data["pull_request_url"]}}
    return data


def error(status: int, message: str, errors: list[Any] | None = None) -> dict[str, Any]:
    """GitHub's error body: `message`, `documentation_url` and (since 2024) `status` as a string."""
    body: dict[str, Any] = {"message": message, "documentation_url": "https://docs.github.com/rest",
                            "status": str(status)}
    if errors is not None:
        body["errors"] = errors
    return body
