"""GitHub REST routes of the fake forge, under `/github`.

Answers are GitHub's own published examples filled with the fake's state (`tests.fakes.github_shapes`),
errors carry GitHub's error body, and lists are paginated as GitHub documents (`tests.fakes.forge_pages`);
the contract layer (`tests.fakes.contract`) checks every exchange against GitHub's REST description.
Review comments are checked the way GitHub checks them: `line` on `side` must be part of the diff
(RIGHT: added or context lines, LEFT: removed or context lines).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.fakes import forge_deliveries
from tests.fakes import github_shapes as shapes
from tests.fakes.forge_pages import paginated
from tests.fakes.forge_state import (
    FakeChange,
    FakeComment,
    FakeForgeState,
    FakeHook,
    FakeIssue,
    FakeThread,
    Kind,
    local_address,
)

_REACTIONS = {"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}


def _state(request: Request) -> FakeForgeState:
    state: FakeForgeState = request.app.state.forge
    return state


def api_root(request: Request) -> str:
    return f"{request.base_url}github"


def _error(status: int, message: str, errors: list[Any] | None = None) -> JSONResponse:
    return JSONResponse(shapes.error(status, message, errors), status_code=status)


def not_found() -> JSONResponse:
    return _error(404, "Not Found")


def _repo(request: Request) -> str:
    return f"{request.path_params['owner']}/{request.path_params['repo']}"


def comment_json(
    request: Request, full_name: str, comment: FakeComment, thread: FakeThread, number: int
) -> dict[str, Any]:
    if not thread.review:
        return shapes.issue_comment(api_root(request), full_name, number, comment)
    change = _state(request).changes.get(("github", full_name, number))
    head = change.head_sha if change else "c" * 40
    return shapes.review_comment(api_root(request), full_name, number, comment, thread, head)


def _found(request: Request) -> tuple[str, int, FakeIssue | FakeChange | None]:
    full_name = _repo(request)
    number = int(request.path_params["number"])
    state = _state(request)
    found = state.issues.get(("github", full_name, number)) or state.changes.get(("github", full_name, number))
    return full_name, number, found


async def issue(request: Request) -> JSONResponse:
    full_name, number, found = _found(request)
    if found is None:
        return not_found()
    return JSONResponse(shapes.issue(api_root(request), full_name, number, found))


async def issues(request: Request) -> JSONResponse:
    """`GET /repos/{o}/{r}/issues?state=closed&since=`: closed issues and pull requests, newest update first."""
    full_name = _repo(request)
    if request.query_params.get("state") != "closed":
        return _error(422, "Validation Failed", [{"resource": "Issue", "code": "invalid", "field": "state"}])
    state, since = _state(request), request.query_params.get("since", "")
    found: list[tuple[int, FakeIssue | FakeChange]] = [*state.closed_items("github", full_name, "issue", since),
                                                       *state.closed_items("github", full_name, "change", since)]
    found.sort(key=lambda pair: (pair[1].updated_at, pair[0]), reverse=request.query_params.get("direction") != "asc")
    return paginated(request, [shapes.issue(api_root(request), full_name, n, i) for n, i in found], "github")


async def issue_comments(request: Request) -> JSONResponse:
    full_name, number, found = _found(request)
    if found is None:
        return not_found()
    kind: Kind = "issue" if isinstance(found, FakeIssue) else "change"
    state = _state(request)
    if request.method == "GET":
        threads = [t for t in state.threads_of("github", full_name, kind, number) if not t.review]
        listed = sorted(((c, t) for t in threads for c in t.comments), key=lambda pair: pair[0].id)
        return paginated(request, [comment_json(request, full_name, c, t, number) for c, t in listed], "github")
    thread = state.add_thread(("github", full_name, kind, number), str((await request.json())["body"]))
    return JSONResponse(comment_json(request, full_name, thread.comments[0], thread, number), status_code=201)


async def comment(request: Request) -> JSONResponse:
    full_name = _repo(request)
    located = _state(request).find_comment("github", full_name, int(request.path_params["id"]))
    review = "/pulls/" in request.url.path
    if located is None or located[0].review != review:
        return not_found()
    thread, found = located
    if request.method == "PATCH":
        found.body = str((await request.json())["body"])
    number = _state(request).number_of("github", full_name, thread)
    return JSONResponse(comment_json(request, full_name, found, thread, number))


async def reactions(request: Request) -> JSONResponse:
    full_name = _repo(request)
    state = _state(request)
    owner: Any
    if "id" in request.path_params:
        located = state.find_comment("github", full_name, int(request.path_params["id"]))
        owner = located[1] if located else None
    else:
        owner = _found(request)[2]
    content = str((await request.json())["content"])
    if owner is None:
        return not_found()
    if content not in _REACTIONS:
        return _error(422, "Validation Failed", [{"resource": "Reaction", "code": "invalid", "field": "content"}])
    status = 200 if content in owner.reactions else 201  # GitHub answers an existing reaction with 200
    if status == 201:
        owner.reactions.append(content)
    body = shapes.reaction(api_root(request), state.next_id(), content, state.bot_user)
    return JSONResponse(body, status_code=status)


async def permission(request: Request) -> JSONResponse:
    role = _state(request).members.get(("github", _repo(request), request.path_params["user"]))
    if role is None:
        return not_found()
    return JSONResponse(shapes.permission(api_root(request), request.path_params["user"], role))


async def commit(request: Request) -> JSONResponse:
    return JSONResponse(shapes.commit(api_root(request), _repo(request), request.path_params["sha"]))


async def repository(request: Request) -> JSONResponse:
    params = request.path_params
    key = str(params["id"]) if "id" in params else f"{params['owner']}/{params['repo']}"
    found = _state(request).project("github", key)
    if found is None:
        return not_found()
    clone = found.clone_url or f"{request.base_url}github/{found.path}.git"
    return JSONResponse(shapes.repository(api_root(request), found, clone))


async def contents(request: Request) -> Response:
    """`GET /repos/:owner/:name/contents/:path?ref=`: a file as GitHub describes it (base64), its bytes
    when the raw media type is asked for (`application/vnd.github.raw+json`), or 404."""
    full_name = _repo(request)
    found = _state(request).project("github", full_name)
    path = request.path_params["path"]
    ref = request.query_params.get("ref", found.default_branch if found else "main")
    content = found.file(ref, path) if found else None
    if content is None:
        return not_found()
    if "vnd.github.raw" in request.headers.get("accept", ""):
        return Response(content, media_type="application/vnd.github.raw")
    return JSONResponse(shapes.content_file(api_root(request), full_name, path, content, ref))


async def current_user(request: Request) -> JSONResponse:
    state = _state(request)
    scopes = state.token_scopes["github"]
    headers = {} if scopes is None else {"X-OAuth-Scopes": ", ".join(scopes)}
    return JSONResponse(shapes.private_user(api_root(request), state.bot_user, state.bot_user_id), headers=headers)


async def ssh_signing_keys(request: Request) -> JSONResponse:
    """`GET /user/ssh_signing_keys`: the token's user's signing keys; 404 for a classic token without
    `read:ssh_signing_key` (`token_scopes` names its scopes), as GitHub answers."""
    state = _state(request)
    scopes = state.token_scopes["github"]
    readable = {"read:ssh_signing_key", "write:ssh_signing_key", "admin:ssh_signing_key"}
    if scopes is not None and not readable & set(scopes):
        return not_found()
    return JSONResponse([{"key": key, "id": n, "title": f"key {n}", "created_at": "2026-01-01T00:00:00Z"}
                         for n, (key, _) in enumerate(state.ssh_keys["github"], 1)])


async def hooks(request: Request) -> JSONResponse:
    state = _state(request)
    full_name = _repo(request)
    found = state.project("github", full_name)
    if found is None:
        return not_found()
    root = api_root(request)
    with state.lock:
        stored = state.hooks.setdefault(("github", str(found.id)), [])
        if request.method == "GET" and "hook_id" not in request.path_params:
            return paginated(request, [shapes.hook(root, full_name, h) for h in stored], "github")
        match = [h for h in stored if h.id == int(request.path_params.get("hook_id", -1))]
    if request.method in ("POST", "PATCH"):
        data = await request.json()
        host = local_address(str((data.get("config") or {}).get("url", "")))
        if host and not state.local_hooks:
            return _error(422, "Validation Failed", [{
                "resource": "Hook", "code": "custom",
                "message": f"Sorry, the URL host {host} is not supported because it isn't reachable over the public "
                           "Internet"}])
    if request.method == "POST":
        config = data["config"]
        hook = FakeHook(id=state.next_id(), url=str(config["url"]), secret=str(config.get("secret", "")),
                        events=list(data.get("events") or ["push"]))
        with state.lock:
            stored.append(hook)
        return JSONResponse(shapes.hook(root, full_name, hook), status_code=201)
    if not match:
        return not_found()
    if request.method == "PATCH":
        with state.lock:
            match[0].url = str(data["config"]["url"])
            match[0].secret = str(data["config"].get("secret", ""))
            match[0].events = list(data.get("events") or match[0].events)
            match[0].active = bool(data.get("active", match[0].active))
    return JSONResponse(shapes.hook(root, full_name, match[0]))


def _repo_hook(request: Request) -> FakeHook | None:
    state = _state(request)
    found = state.project("github", _repo(request))
    if found is None:
        return None
    with state.lock:
        one = [h for h in state.hooks.get(("github", str(found.id)), []) if h.id == request.path_params["hook_id"]]
    return one[0] if one else None


def _deliveries(hook: FakeHook | None) -> JSONResponse:
    """`hook-delivery-item`s, newest first (one page: the tests' hooks hold few)."""
    return JSONResponse([shapes.hook_delivery(d) for d in reversed(hook.log)]) if hook else not_found()


async def _redelivered(hook: FakeHook | None, delivery_id: int) -> JSONResponse:
    """GitHub answers 202 and sends the delivery again, with the same guid (here before answering, where
    GitHub does it after)."""
    logged = [d for d in hook.log if d.id == delivery_id] if hook is not None else []
    if hook is None or not logged:
        return not_found()
    await asyncio.to_thread(forge_deliveries.send, hook, "github", logged[0].event, logged[0].payload, None,
                            logged[0])
    return JSONResponse({}, status_code=202)


async def hook_deliveries(request: Request) -> JSONResponse:
    """`repos/list-webhook-deliveries`."""
    return _deliveries(_repo_hook(request))


async def hook_redelivery(request: Request) -> JSONResponse:
    """`repos/redeliver-webhook-delivery`."""
    return await _redelivered(_repo_hook(request), request.path_params["delivery_id"])


def routes() -> list[Route]:
    from tests.fakes.forge_http_github_pulls import pull_routes

    base = "/github/repos/{owner}/{repo}"
    return [
        Route("/github/repositories/{id:int}", repository, methods=["GET"]),
        Route(base, repository, methods=["GET"]),
        Route("/github/user", current_user, methods=["GET"]),
        Route("/github/user/ssh_signing_keys", ssh_signing_keys, methods=["GET"]),
        Route("/github/app", app, methods=["GET"]),
        Route("/github/app/hook/config", app_hook, methods=["GET"]),
        Route("/github/app/hook/deliveries", app_hook, methods=["GET"]),
        Route("/github/app/hook/deliveries/{delivery_id:int}/attempts", app_hook, methods=["POST"]),
        Route(base + "/hooks", hooks, methods=["GET", "POST"]),
        Route(base + "/hooks/{hook_id:int}", hooks, methods=["GET", "PATCH"]),
        Route(base + "/hooks/{hook_id:int}/deliveries", hook_deliveries, methods=["GET"]),
        Route(base + "/hooks/{hook_id:int}/deliveries/{delivery_id:int}/attempts", hook_redelivery, methods=["POST"]),
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


def _jwt_claims(request: Request) -> dict[str, Any] | None:
    state = _state(request)
    try:
        claims: dict[str, Any] = jwt.decode(request.headers.get("authorization", "").removeprefix("Bearer "),
                                            state.app_key or "", algorithms=["RS256"])
    except jwt.PyJWTError:
        return None
    return claims


async def app(request: Request) -> JSONResponse:
    """The authenticated App (JWT only), as `GET /app` answers it."""
    claims = _jwt_claims(request)
    if claims is None:
        return _error(401, "A JSON web token could not be decoded")
    slug = _state(request).bot_user.removesuffix("[bot]")
    return JSONResponse(shapes.app(api_root(request), int(claims.get("iss", 0)), slug))


async def app_hook(request: Request) -> JSONResponse:
    """The App's own webhook (JWT only): `apps/get-webhook-config-for-app`, `apps/list-webhook-deliveries`
    and `apps/redeliver-webhook-delivery`."""
    if _jwt_claims(request) is None:
        return _error(401, "A JSON web token could not be decoded")
    hook = _state(request).app_hook
    if hook is None:
        return not_found()
    if request.url.path.endswith("/config"):
        return JSONResponse({"url": hook.url, "content_type": "json", "secret": "********", "insecure_ssl": "0"})
    if request.method == "GET":
        return _deliveries(hook)
    return await _redelivered(hook, request.path_params["delivery_id"])


async def access_token(request: Request) -> JSONResponse:
    """Swap an App JWT (RS256, verified against the configured public key) for an installation token."""
    state = _state(request)
    if _jwt_claims(request) is None:
        return _error(401, "A JSON web token could not be decoded")
    with state.lock:
        token = f"ghs_installation_token_{len(state.installation_tokens)}"
        state.installation_tokens.append(token)
        state.tokens.add(token)
    expires = datetime.now(UTC) + timedelta(seconds=state.installation_token_ttl)
    body = shapes.installation_token(api_root(request), token, expires.strftime("%Y-%m-%dT%H:%M:%SZ"))
    return JSONResponse(body, status_code=201)
