"""GitHub REST (and the one GraphQL mutation) routes of the fake forge, under `/github`.

Shapes follow `forge-samples/github/api/`; every `url` points back at this server, because PyGithub
follows the URLs it is given. Review comments are checked the way GitHub checks them: `line` on
`side` must be part of the diff (RIGHT: added or context lines, LEFT: removed or context lines).
"""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.fakes.forge_state import (
    FakeChange,
    FakeComment,
    FakeForgeState,
    FakeHook,
    FakeIssue,
    FakeProject,
    FakeThread,
    Kind,
)
from tests.fakes.samples import sample

_REACTIONS = {"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}


def _state(request: Request) -> FakeForgeState:
    state: FakeForgeState = request.app.state.forge
    return state


def _error(status: int, message: str, errors: list[Any] | None = None) -> JSONResponse:
    return JSONResponse({"message": message, "errors": errors or []}, status_code=status)


def _repo(request: Request) -> tuple[str, str]:
    full_name = f"{request.path_params['owner']}/{request.path_params['repo']}"
    return full_name, f"{request.base_url}github/repos/{full_name}"


def _user(login: str) -> dict[str, Any]:
    return {"login": login, "id": 7, "type": "User"}


def _issue_json(api: str, number: int, issue: FakeIssue | FakeChange) -> dict[str, Any]:
    data: dict[str, Any] = sample("github/issues.labeled.json")["issue"]
    labels = issue.labels if isinstance(issue, FakeIssue) else []
    closed = issue.state in ("closed", "merged")
    data.update(number=number, title=issue.title, body=issue.body, state="closed" if closed else "open",
                url=f"{api}/issues/{number}", updated_at=issue.updated_at,
                labels=[{"id": i, "name": name, "color": "ffffff"} for i, name in enumerate(labels)])
    data["user"] = _user(issue.author)
    return data


def _comment_json(api: str, comment: FakeComment, thread: FakeThread, number: int) -> dict[str, Any]:
    if not thread.review:
        data = sample("github/api/issues.create_comment.response.json")
        data.update(id=comment.id, body=comment.body, url=f"{api}/issues/comments/{comment.id}",
                    html_url=f"https://github.example/pull/{number}#issuecomment-{comment.id}",
                    user=_user(comment.author))
        return data
    data = sample("github/api/pulls.create_review_comment.response.json")
    position = comment.position or thread.comments[0].position or {}
    data.update(id=comment.id, body=comment.body, url=f"{api}/pulls/comments/{comment.id}", user=_user(comment.author),
                html_url=f"https://github.example/pull/{number}#discussion_r{comment.id}", path=position.get("path"),
                line=position.get("line"), side=position.get("side"), start_line=position.get("start_line"),
                in_reply_to_id=None if comment is thread.comments[0] else int(thread.id))
    return data


def _found(request: Request) -> tuple[str, str, int, FakeIssue | FakeChange | None]:
    full_name, api = _repo(request)
    number = int(request.path_params["number"])
    state = _state(request)
    found = state.issues.get(("github", full_name, number)) or state.changes.get(("github", full_name, number))
    return full_name, api, number, found


async def issue(request: Request) -> JSONResponse:
    _, api, number, found = _found(request)
    return _error(404, "Not Found") if found is None else JSONResponse(_issue_json(api, number, found))


async def issues(request: Request) -> JSONResponse:
    """`GET /repos/{o}/{r}/issues?state=closed&since=`: closed issues (this fake lists no pull requests)."""
    full_name, api = _repo(request)
    if request.query_params.get("state") != "closed":
        return _error(422, "the fake lists closed issues only")
    found = _state(request).closed_items("github", full_name, "issue", request.query_params.get("since", ""))
    if request.query_params.get("direction", "desc") == "asc":
        found.reverse()
    return JSONResponse([_issue_json(api, n, i) for n, i in found])


async def issue_comments(request: Request) -> JSONResponse:
    full_name, api, number, found = _found(request)
    if found is None:
        return _error(404, "Not Found")
    kind: Kind = "issue" if isinstance(found, FakeIssue) else "change"
    state = _state(request)
    if request.method == "GET":
        threads = [t for t in state.threads_of("github", full_name, kind, number) if not t.review]
        return JSONResponse([_comment_json(api, c, t, number) for t in threads for c in t.comments])
    thread = state.add_thread(("github", full_name, kind, number), str((await request.json())["body"]))
    return JSONResponse(_comment_json(api, thread.comments[0], thread, number), status_code=201)


async def comment(request: Request) -> JSONResponse:
    full_name, api = _repo(request)
    located = _state(request).find_comment("github", full_name, int(request.path_params["id"]))
    review = "/pulls/" in request.url.path
    if located is None or located[0].review != review:
        return _error(404, "Not Found")
    thread, found = located
    if request.method == "PATCH":
        found.body = str((await request.json())["body"])
    return JSONResponse(_comment_json(api, found, thread, 0))


async def reactions(request: Request) -> JSONResponse:
    full_name, _ = _repo(request)
    state = _state(request)
    owner: Any
    if "id" in request.path_params:
        located = state.find_comment("github", full_name, int(request.path_params["id"]))
        owner = located[1] if located else None
    else:
        owner = _found(request)[3]
    content = str((await request.json())["content"])
    if owner is None:
        return _error(404, "Not Found")
    if content not in _REACTIONS:
        return _error(422, "Validation Failed")
    status = 200 if content in owner.reactions else 201  # GitHub answers an existing reaction with 200
    if status == 201:
        owner.reactions.append(content)
    return JSONResponse({"id": state.next_id(), "content": content, "user": _user(state.bot_user)}, status_code=status)


async def permission(request: Request) -> JSONResponse:
    full_name, _ = _repo(request)
    role = _state(request).members.get(("github", full_name, request.path_params["user"]))
    if role is None:
        return _error(404, "Not Found")
    legacy = {"maintain": "write", "triage": "read"}.get(role, role)
    return JSONResponse({"permission": legacy, "role_name": role, "user": _user(request.path_params["user"])})


async def commit(request: Request) -> JSONResponse:
    _, api = _repo(request)
    sha = request.path_params["sha"]
    return JSONResponse({"sha": sha, "url": f"{api}/commits/{sha}"})


def _repo_json(request: Request, found: FakeProject) -> dict[str, Any]:
    owner, _, name = found.path.partition("/")
    return {"id": found.id, "name": name, "full_name": found.path, "owner": _user(owner), "private": True,
            "default_branch": found.default_branch,
            "clone_url": found.clone_url or f"{request.base_url}github/{found.path}.git",
            "html_url": found.web_url or f"https://github.example/{found.path}",
            "url": f"{request.base_url}github/repos/{found.path}"}


async def repository(request: Request) -> JSONResponse:
    params = request.path_params
    key = str(params["id"]) if "id" in params else f"{params['owner']}/{params['repo']}"
    found = _state(request).project("github", key)
    if found is None:
        return _error(404, "Not Found")
    return JSONResponse(_repo_json(request, found))


async def contents(request: Request) -> JSONResponse:
    """`GET /repos/:owner/:name/contents/:path?ref=`: a file as GitHub describes it (base64), or 404."""
    full_name, api = _repo(request)
    found = _state(request).project("github", full_name)
    path = request.path_params["path"]
    content = found.file(request.query_params.get("ref", found.default_branch), path) if found else None
    if content is None:
        return _error(404, "Not Found")
    sha = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()
    return JSONResponse({"type": "file", "encoding": "base64", "size": len(content), "name": path.rsplit("/", 1)[-1],
                         "path": path, "content": base64.b64encode(content).decode(), "sha": sha,
                         "url": f"{api}/contents/{path}"})


async def current_user(request: Request) -> JSONResponse:
    state = _state(request)
    return JSONResponse({**_user(state.bot_user), "id": state.bot_user_id})


def _hook_json(request: Request, full_name: str, hook: FakeHook) -> dict[str, Any]:
    return {"id": hook.id, "type": "Repository", "name": "web", "active": True, "events": hook.events,
            "config": {"url": hook.url, "content_type": "json", "insecure_ssl": "0", "secret": "********"},
            "url": f"{request.base_url}github/repos/{full_name}/hooks/{hook.id}"}


async def hooks(request: Request) -> JSONResponse:
    state = _state(request)
    full_name, _ = _repo(request)
    found = state.project("github", full_name)
    if found is None:
        return _error(404, "Not Found")
    with state.lock:
        stored = state.hooks.setdefault(("github", str(found.id)), [])
        if request.method == "GET" and "hook_id" not in request.path_params:
            return JSONResponse([_hook_json(request, full_name, h) for h in stored])
        match = [h for h in stored if h.id == int(request.path_params.get("hook_id", -1))]
    if request.method == "POST":
        data = await request.json()
        config = data["config"]
        hook = FakeHook(id=state.next_id(), url=str(config["url"]), secret=str(config.get("secret", "")),
                        events=list(data.get("events") or ["push"]))
        with state.lock:
            stored.append(hook)
        return JSONResponse(_hook_json(request, full_name, hook), status_code=201)
    if not match:
        return _error(404, "Not Found")
    if request.method == "PATCH":
        data = await request.json()
        with state.lock:
            match[0].url = str(data["config"]["url"])
            match[0].secret = str(data["config"].get("secret", ""))
            match[0].events = list(data.get("events") or match[0].events)
    return JSONResponse(_hook_json(request, full_name, match[0]))


def routes() -> list[Route]:
    from tests.fakes.forge_http_github_pulls import pull_routes

    base = "/github/repos/{owner}/{repo}"
    return [
        Route("/github/repositories/{id:int}", repository, methods=["GET"]),
        Route(base, repository, methods=["GET"]),
        Route("/github/user", current_user, methods=["GET"]),
        Route("/github/app", app, methods=["GET"]),
        Route(base + "/hooks", hooks, methods=["GET", "POST"]),
        Route(base + "/hooks/{hook_id:int}", hooks, methods=["GET", "PATCH"]),
        Route(base + "/issues", issues, methods=["GET"]),
        Route(base + "/issues/{number:int}", issue, methods=["GET"]),
        Route(base + "/issues/{number:int}/comments", issue_comments, methods=["GET", "POST"]),
        Route(base + "/issues/{number:int}/reactions", reactions, methods=["POST"]),
        Route(base + "/issues/comments/{id:int}", comment, methods=["GET", "PATCH"]),
        Route(base + "/issues/comments/{id:int}/reactions", reactions, methods=["POST"]),
        Route(base + "/pulls/comments/{id:int}", comment, methods=["GET", "PATCH"]),
        Route(base + "/pulls/comments/{id:int}/reactions", reactions, methods=["POST"]),
        Route(base + "/collaborators/{user}/permission", permission, methods=["GET"]),
        Route(base + "/commits/{sha}", commit, methods=["GET"]),
        Route(base + "/contents/{path:path}", contents, methods=["GET"]),
        Route("/github/app/installations/{installation:int}/access_tokens", access_token, methods=["POST"]),
        *pull_routes(),
    ]


async def app(request: Request) -> JSONResponse:
    """The authenticated App (JWT only), as `GET /app` answers it."""
    state = _state(request)
    try:
        claims = jwt.decode(request.headers.get("authorization", "").removeprefix("Bearer "), state.app_key or "",
                            algorithms=["RS256"])
    except jwt.PyJWTError:
        return _error(401, "A JSON web token could not be decoded")
    slug = state.bot_user.removesuffix("[bot]")
    return JSONResponse({"id": int(claims.get("iss", 0)), "slug": slug, "name": slug, "owner": _user("octo-org")})


async def access_token(request: Request) -> JSONResponse:
    """Swap an App JWT (RS256, verified against the configured public key) for an installation token."""
    state = _state(request)
    bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
    try:
        jwt.decode(bearer, state.app_key or "", algorithms=["RS256"])
    except jwt.PyJWTError:
        return _error(401, "A JSON web token could not be decoded")
    with state.lock:
        token = f"ghs_installation_token_{len(state.installation_tokens)}"
        state.installation_tokens.append(token)
        state.tokens.add(token)
    expires = datetime.now(UTC) + timedelta(seconds=state.installation_token_ttl)
    return JSONResponse({"token": token, "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
                         "permissions": {"issues": "write"}, "repository_selection": "all"}, status_code=201)
