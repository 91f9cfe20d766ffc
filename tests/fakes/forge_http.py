"""A local fake forge: a Starlette app answering the REST calls the adapters make.

The real python-gitlab and PyGithub clients talk to it over HTTP (GitLab under `/gitlab/api/v4`,
GitHub under `/github`). Response bodies start from the recorded shapes in `shared/forge-samples/`
and carry the fake's state. Tests read and seed `FakeForgeState` directly.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.fakes.samples import sample

Key = tuple[str, str, int]  # (forge, project, number)


@dataclass
class FakeIssue:
    title: str
    body: str
    labels: list[str] = field(default_factory=list)
    author: str = "alice"


@dataclass
class FakeComment:
    id: int
    body: str
    author: str


@dataclass
class FakeForgeState:
    """Everything the fake forge knows; guarded by a lock because uvicorn serves from a thread."""

    issues: dict[Key, FakeIssue] = field(default_factory=dict)
    comments: dict[Key, list[FakeComment]] = field(default_factory=dict)
    bot_user: str = "forgebot"
    # (forge, project, user): GitLab access level (int, key = user id) or GitHub role name (key = login)
    members: dict[tuple[str, str, str], int | str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1000))

    def add_issue(self, forge: str, project: str, number: int, issue: FakeIssue) -> None:
        with self.lock:
            self.issues[(forge, project, number)] = issue

    def grant(self, forge: str, project: str, user: str, level: int | str) -> None:
        with self.lock:
            self.members[(forge, project, user)] = level

    def comments_on(self, forge: str, project: str, number: int) -> list[FakeComment]:
        with self.lock:
            return list(self.comments.get((forge, project, number), []))

    def add_comment(self, key: Key, body: str) -> FakeComment:
        with self.lock:
            comment = FakeComment(id=next(self._ids), body=body, author=self.bot_user)
            self.comments.setdefault(key, []).append(comment)
            return comment


def _not_found() -> JSONResponse:
    return JSONResponse({"message": "404 Not Found"}, status_code=404)


# --- GitLab -------------------------------------------------------------------------------------


def _gitlab_issue_json(project: str, iid: int, issue: FakeIssue) -> dict[str, Any]:
    return {
        "id": iid + 10_000,
        "iid": iid,
        "project_id": int(project) if project.isdigit() else 1,
        "title": issue.title,
        "description": issue.body,
        "labels": issue.labels,
        "state": "opened",
        "author": {"id": 7, "username": issue.author, "name": issue.author},
    }


def _gitlab_note_json(project: str, iid: int, comment: FakeComment) -> dict[str, Any]:
    note = sample("gitlab/api/notes.merge_request.get.response.json")
    note.update(id=comment.id, body=comment.body, noteable_type="Issue", noteable_iid=iid)
    note["author"].update(username=comment.author)
    return note


async def gitlab_issue(request: Request) -> JSONResponse:
    state: FakeForgeState = request.app.state.forge
    project, iid = request.path_params["project"], int(request.path_params["iid"])
    issue = state.issues.get(("gitlab", project, iid))
    if issue is None:
        return _not_found()
    return JSONResponse(_gitlab_issue_json(project, iid, issue))


async def gitlab_notes(request: Request) -> JSONResponse:
    state: FakeForgeState = request.app.state.forge
    project, iid = request.path_params["project"], int(request.path_params["iid"])
    key = ("gitlab", project, iid)
    if key not in state.issues:
        return _not_found()
    if request.method == "GET":
        return JSONResponse([_gitlab_note_json(project, iid, c) for c in state.comments_on(*key)])
    payload = await request.json()
    comment = state.add_comment(key, str(payload["body"]))
    return JSONResponse(_gitlab_note_json(project, iid, comment), status_code=201)


async def gitlab_member(request: Request) -> JSONResponse:
    """`GET /projects/:id/members/all/:user_id`: effective access, 404 for non-members."""
    state: FakeForgeState = request.app.state.forge
    user = str(request.path_params["user"])
    level = state.members.get(("gitlab", request.path_params["project"], user))
    if not isinstance(level, int):
        return _not_found()
    return JSONResponse({"id": int(user), "username": f"user{user}", "state": "active", "access_level": level})


# --- GitHub -------------------------------------------------------------------------------------


def _github_issue_json(full_name: str, number: int, issue: FakeIssue) -> dict[str, Any]:
    data = sample("github/issues.labeled.json")["issue"]
    data.update(number=number, title=issue.title, body=issue.body, state="open")
    data["labels"] = [{"id": i, "name": name, "color": "ffffff"} for i, name in enumerate(issue.labels)]
    data["user"].update(login=issue.author)
    data["url"] = f"https://api.github.com/repos/{full_name}/issues/{number}"
    return data


def _github_comment_json(full_name: str, number: int, comment: FakeComment) -> dict[str, Any]:
    data = sample("github/api/issues.create_comment.response.json")
    data.update(id=comment.id, body=comment.body)
    data["url"] = f"https://api.github.com/repos/{full_name}/issues/comments/{comment.id}"
    data["html_url"] = f"https://github.com/{full_name}/issues/{number}#issuecomment-{comment.id}"
    data["user"].update(login=comment.author)
    return data


def _github_key(request: Request) -> tuple[str, int]:
    full_name = f"{request.path_params['owner']}/{request.path_params['repo']}"
    return full_name, int(request.path_params["number"])


async def github_issue(request: Request) -> JSONResponse:
    state: FakeForgeState = request.app.state.forge
    full_name, number = _github_key(request)
    issue = state.issues.get(("github", full_name, number))
    if issue is None:
        return _not_found()
    return JSONResponse(_github_issue_json(full_name, number, issue))


async def github_comments(request: Request) -> JSONResponse:
    state: FakeForgeState = request.app.state.forge
    full_name, number = _github_key(request)
    key = ("github", full_name, number)
    if key not in state.issues:
        return _not_found()
    if request.method == "GET":
        return JSONResponse([_github_comment_json(full_name, number, c) for c in state.comments_on(*key)])
    payload = await request.json()
    comment = state.add_comment(key, str(payload["body"]))
    return JSONResponse(_github_comment_json(full_name, number, comment), status_code=201)


async def github_permission(request: Request) -> JSONResponse:
    """`GET /repos/{owner}/{repo}/collaborators/{username}/permission`; 404 for strangers."""
    state: FakeForgeState = request.app.state.forge
    full_name, login = f"{request.path_params['owner']}/{request.path_params['repo']}", request.path_params["user"]
    role = state.members.get(("github", full_name, login))
    if not isinstance(role, str):
        return _not_found()
    legacy = {"maintain": "write", "triage": "read"}.get(role, role)
    return JSONResponse({"permission": legacy, "role_name": role, "user": {"login": login, "id": 1}})


def create_fake_forge(state: FakeForgeState | None = None) -> Starlette:
    """Build the fake forge app; `app.state.forge` is the shared `FakeForgeState`."""
    routes = [
        Route("/gitlab/api/v4/projects/{project}/issues/{iid:int}", gitlab_issue, methods=["GET"]),
        Route("/gitlab/api/v4/projects/{project}/issues/{iid:int}/notes", gitlab_notes, methods=["GET", "POST"]),
        Route("/gitlab/api/v4/projects/{project}/members/all/{user}", gitlab_member, methods=["GET"]),
        Route("/github/repos/{owner}/{repo}/collaborators/{user}/permission", github_permission, methods=["GET"]),
        Route("/github/repos/{owner}/{repo}/issues/{number:int}", github_issue, methods=["GET"]),
        Route("/github/repos/{owner}/{repo}/issues/{number:int}/comments", github_comments, methods=["GET", "POST"]),
    ]
    app = Starlette(routes=routes)
    app.state.forge = state or FakeForgeState()

    return app
