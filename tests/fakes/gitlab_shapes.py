"""The fake GitLab's representations, field for field as GitLab's API answers them.

Each shape has exactly the fields of GitLab's own response schema for the endpoint (several of those
schemas forbid any other field) or, where GitLab has no schema, of its documentation's example
(`forge-samples/gitlab/api/`). The contract layer checks every answer against them.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.forge_state import (
    FakeChange,
    FakeComment,
    FakeDelivery,
    FakeHook,
    FakeIssue,
    FakeProject,
    FakeThread,
    Kind,
)

WEB = "https://gitlab.example.com"
CREATED = "2026-01-01T00:00:00.000Z"


def user(name: str, user_id: int = 7) -> dict[str, Any]:
    """GitLab's basic user: the author of issues, merge requests and notes."""
    return {"id": user_id, "username": name, "name": name, "state": "active",
            "avatar_url": f"{WEB}/uploads/-/system/user/avatar/{user_id}/avatar.png", "web_url": f"{WEB}/{name}"}


def issue(project: str, iid: int, found: FakeIssue) -> dict[str, Any]:
    """`issue.json`."""
    closed = found.state == "closed"
    return {
        "id": iid + 10_000, "iid": iid, "project_id": int(project), "title": found.title,
        "description": found.body, "state": found.state, "created_at": found.updated_at,
        "updated_at": found.updated_at, "closed_at": found.updated_at if closed else None, "labels": found.labels,
        "milestone": None, "assignees": [], "assignee": None, "author": user(found.author),
        "user_notes_count": 0, "upvotes": 0, "downvotes": 0, "due_date": None, "confidential": found.confidential,
        "discussion_locked": None, "web_url": f"{WEB}/p/{project}/-/issues/{iid}",
    }


def _mr_common(project: str, iid: int, change: FakeChange) -> dict[str, Any]:
    return {
        "id": iid + 20_000, "iid": iid, "project_id": int(project), "title": change.title,
        "description": change.body, "state": change.state, "created_at": change.updated_at,
        "updated_at": change.updated_at, "target_branch": change.target_branch,
        "source_branch": change.source_branch, "upvotes": 0, "downvotes": 0, "author": user(change.author),
        "assignee": None, "source_project_id": int(project), "target_project_id": int(project), "labels": [],
        "work_in_progress": change.draft, "milestone": None, "merge_when_pipeline_succeeds": False,
        "merge_status": "can_be_merged", "sha": change.head_sha, "merge_commit_sha": None,
        "user_notes_count": 0, "should_remove_source_branch": None, "force_remove_source_branch": True,
        "web_url": f"{WEB}/p/{project}/-/merge_requests/{iid}", "squash": False,
    }


def merge_request(project: str, iid: int, change: FakeChange) -> dict[str, Any]:
    """`merge_request.json` (one merge request: also `draft` and the diff SHAs)."""
    return {**_mr_common(project, iid, change), "draft": change.draft, "assignees": [], "reviewers": [],
            "merged_at": change.updated_at if change.state == "merged" else None,
            "changes_count": str(len(change.files)),
            "diff_refs": {"base_sha": change.base_sha, "head_sha": change.head_sha, "start_sha": change.start_sha},
            "detailed_merge_status": "mergeable"}


def merge_request_listed(project: str, iid: int, change: FakeChange) -> dict[str, Any]:
    """An item of `merge_requests.json`, which allows no field beyond its own."""
    return {**_mr_common(project, iid, change), "approvals_before_merge": None}


def note(comment: FakeComment, thread: FakeThread, kind: Kind, iid: int) -> dict[str, Any]:
    """An item of `notes.json` (the answer to creating or editing a note)."""
    body: dict[str, Any] = {
        "id": comment.id, "type": _type(comment, thread), "body": comment.body, "attachment": None,
        "author": user(comment.author, comment.author_id or 7), "created_at": CREATED, "updated_at": CREATED,
        "system": comment.system,
        "noteable_id": iid + (10_000 if kind == "issue" else 20_000), "noteable_iid": iid,
        "noteable_type": "Issue" if kind == "issue" else "MergeRequest", "resolvable": _resolvable(thread, kind),
        "confidential": comment.internal, "internal": comment.internal, "commands_changes": {},
    }
    if body["resolvable"]:
        body.update(resolved=thread.resolved, resolved_by=None, resolved_at=None)
    return body


def _type(comment: FakeComment, thread: FakeThread) -> str | None:
    if comment.position:
        return "DiffNote"
    return None if thread.individual else "DiscussionNote"


def _resolvable(thread: FakeThread, kind: Kind) -> bool:
    return kind == "change" and not thread.individual


def discussion_note(project: str, comment: FakeComment, thread: FakeThread, kind: Kind, iid: int) -> dict[str, Any]:
    """A note inside a discussion, with the fields of the documentation's discussion examples."""
    body: dict[str, Any] = {
        "id": comment.id, "type": _type(comment, thread), "body": comment.body, "attachment": None,
        "author": user(comment.author, comment.author_id or 7), "created_at": CREATED, "updated_at": CREATED,
        "system": comment.system,
        "noteable_id": iid + (10_000 if kind == "issue" else 20_000), "noteable_iid": iid,
        "noteable_type": "Issue" if kind == "issue" else "MergeRequest", "project_id": int(project),
        "resolvable": _resolvable(thread, kind), "resolved": thread.resolved, "resolved_by": None,
        "resolved_at": None, "internal": comment.internal, "confidential": comment.internal,
    }
    if comment.position:
        body["position"] = comment.position
        body["commit_id"] = comment.position.get("head_sha")
    return body


def discussion(project: str, thread: FakeThread, kind: Kind, iid: int) -> dict[str, Any]:
    return {"id": thread.id, "individual_note": thread.individual,
            "notes": [discussion_note(project, c, thread, kind, iid) for c in thread.comments]}


def version(iid: int, change: FakeChange) -> dict[str, Any]:
    """One merge request version, with the fields of the documentation's example."""
    return {"id": iid * 100, "head_commit_sha": change.head_sha, "base_commit_sha": change.base_sha,
            "start_commit_sha": change.start_sha, "created_at": CREATED, "merge_request_id": iid + 20_000,
            "state": "collected", "real_size": str(len(change.files))}


def project(found: FakeProject, web: str, clone: str) -> dict[str, Any]:
    """An item of `projects.json`: exactly its fields, and `visibility` (`contract.gitlab_rest.PROJECT`)."""
    namespace, _, name = found.path.rpartition("/")
    shown = {"visibility": found.visibility} if found.visibility else {}
    return {**shown, "id": found.id, "name": name, "name_with_namespace": f"{namespace} / {name}", "description": None,
            "path": name, "path_with_namespace": found.path, "created_at": CREATED,
            "default_branch": found.default_branch, "tag_list": [],
            "ssh_url_to_repo": f"git@gitlab.example.com:{found.path}.git", "http_url_to_repo": clone,
            "web_url": web, "avatar_url": None, "star_count": 0, "forks_count": 0, "last_activity_at": CREATED}


def member(user_id: int, level: int) -> dict[str, Any]:
    """An item of `members.json`."""
    return {**user(f"user{user_id}", user_id), "access_level": level, "expires_at": None}


HOOK_EVENTS = ("push_events", "tag_push_events", "merge_requests_events", "repository_update_events",
               "issues_events", "confidential_issues_events", "note_events", "confidential_note_events",
               "pipeline_events", "wiki_page_events", "job_events", "deployment_events", "releases_events",
               "emoji_events")


def hook(project_id: int, found: FakeHook, ssl: bool = True) -> dict[str, Any]:
    """`project_hook.json`: exactly its fields (the token is never answered back)."""
    return {"id": found.id, "project_id": project_id, "url": found.url, "created_at": CREATED,
            **{event: event in found.events for event in HOOK_EVENTS}, "push_events_branch_filter": None,
            "enable_ssl_verification": ssl, "alert_status": found.alert_status, "disabled_until": found.disabled_until,
            "custom_webhook_template": None}


_TRIGGERS = {"Issue Hook": "issue_hooks", "Confidential Issue Hook": "confidential_issue_hooks",
             "Note Hook": "note_hooks", "Confidential Note Hook": "confidential_note_hooks", "Push Hook": "push_hooks"}


def hook_event(found: FakeHook, delivery: FakeDelivery) -> dict[str, Any]:
    """An entry of doc/api/project_webhooks.md "Get a list of project webhook events" (GitLab 17.3; no schema
    published): `response_status` is a string, "internal error" when no answer came."""
    return {"id": delivery.id, "url": found.url, "trigger": _TRIGGERS.get(delivery.event, "push_hooks"),
            "request_headers": {"Content-Type": "application/json", "User-Agent": "GitLab/17.11.0",
                                "Idempotency-Key": delivery.key, "X-Gitlab-Event": delivery.event,
                                "X-Gitlab-Token": "[REDACTED]"},
            "request_data": delivery.payload, "response_headers": {}, "response_body": "",
            "execution_duration": 0.01,
            "response_status": str(delivery.status) if delivery.status is not None else "internal error"}


def award(award_id: int, name: str, login: str, awardable_id: int, awardable_type: str) -> dict[str, Any]:
    """An award emoji as doc/api/emoji_reactions.md describes it (GitLab has no schema or example file)."""
    return {"id": award_id, "name": name, "user": user(login), "created_at": CREATED, "updated_at": CREATED,
            "awardable_id": awardable_id, "awardable_type": awardable_type}


def error(message: str | dict[str, Any]) -> dict[str, Any]:
    """GitLab's error body: `{"message": ...}` (a string, or field errors)."""
    return {"message": message}
