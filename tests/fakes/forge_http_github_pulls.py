"""Pull request routes of the fake GitHub: pulls, files, reviews, review comments and GraphQL threads."""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.fakes import github_shapes as shapes
from tests.fakes.forge_http_github import _error, _found, _repo, _state, api_root, comment_json, not_found
from tests.fakes.forge_pages import paginated
from tests.fakes.forge_state import FakeChange, FakeComment, FakeForgeState

_STATUS = {"added": "added", "deleted": "removed", "modified": "modified", "renamed": "renamed"}


def _clone(request: Request, full_name: str) -> str:
    found = _state(request).project("github", full_name)
    return (found.clone_url if found else "") or f"{request.base_url}github/{full_name}.git"


def pull_json(request: Request, full_name: str, number: int, change: FakeChange) -> dict[str, Any]:
    return shapes.pull(api_root(request), full_name, number, change, _clone(request, full_name))


def _change(request: Request) -> tuple[str, int, FakeChange | None]:
    full_name, number, found = _found(request)
    return full_name, number, found if isinstance(found, FakeChange) else None


async def pull(request: Request) -> JSONResponse:
    """`GET` or `PATCH` (its body, the one field the bot edits) one pull request."""
    full_name, number, change = _change(request)
    if change is None:
        return not_found()
    if request.method == "PATCH":
        payload = await request.json()
        with _state(request).lock:
            change.body = str(payload.get("body", change.body))
    return JSONResponse(pull_json(request, full_name, number, change))


async def pulls(request: Request) -> JSONResponse:
    full_name = _repo(request)
    state = _state(request)
    if request.method == "GET":
        owner = full_name.split("/")[0]
        head = request.query_params.get("head")
        wanted = {"open": ("opened",), "closed": ("closed", "merged"), "all": ("opened", "closed", "merged")}[
            request.query_params.get("state", "open")]
        with state.lock:
            found = [(n, c) for (f, p, n), c in state.changes.items()
                     if (f, p) == ("github", full_name) and c.state in wanted
                     and (head is None or head == f"{owner}:{c.source_branch}")]
        if request.query_params.get("sort") == "updated":
            found.sort(key=lambda pair: (pair[1].updated_at, pair[0]),
                       reverse=request.query_params.get("direction", "desc") == "desc")
        else:
            found.sort(reverse=request.query_params.get("direction", "desc") == "desc")
        return paginated(request, [pull_json(request, full_name, n, c) for n, c in found], "github")
    payload = await request.json()
    with state.lock:
        for (f, p, _), c in state.changes.items():
            if (f, p) == ("github", full_name) and c.source_branch == payload["head"] and c.state == "opened":
                message = f"A pull request already exists for {full_name.split('/')[0]}:{payload['head']}."
                errors = [{"resource": "PullRequest", "code": "custom", "message": message}]
                return _error(422, "Validation Failed", errors)
        numbers = [n for (f, p, n) in [*state.changes, *state.issues] if (f, p) == ("github", full_name)]
        number = 1 + max(numbers, default=0)
        change = FakeChange(title=str(payload["title"]), body=str(payload.get("body") or ""), author=state.bot_user,
                            source_branch=str(payload["head"]), target_branch=str(payload["base"]),
                            draft=bool(payload.get("draft", False)))
        state.changes[("github", full_name, number)] = change
    return JSONResponse(pull_json(request, full_name, number, change), status_code=201)


async def files(request: Request) -> JSONResponse:
    full_name, _, change = _change(request)
    if change is None:
        return not_found()
    root = api_root(request)
    listed = [shapes.diff_entry(root, full_name, change.head_sha, _STATUS[f.status], f.new_path, f.old_path, f.patch)
              for f in change.files]
    return paginated(request, listed, "github")


async def review_comments(request: Request) -> JSONResponse:
    full_name, number, change = _change(request)
    if change is None:
        return not_found()
    threads = [t for t in _state(request).threads_of("github", full_name, "change", number) if t.review]
    listed = sorted(((c, t) for t in threads for c in t.comments), key=lambda pair: pair[0].id)
    return paginated(request, [comment_json(request, full_name, c, t, number) for c, t in listed], "github")


def _on_diff(change: FakeChange, path: str, line: Any, side: Any) -> bool:
    for file in change.files:
        if file.new_path == path:
            for kind, old, new in file.rows():
                if side == "RIGHT" and kind != "removed" and new == line:
                    return True
                if side == "LEFT" and kind != "added" and old == line:
                    return True
    return False


async def reviews(request: Request) -> JSONResponse:
    full_name, number, change = _change(request)
    if change is None:
        return not_found()
    payload = await request.json()
    if payload.get("commit_id") not in (None, change.head_sha):
        return _error(422, "Unprocessable Entity", ["commit_id is not part of the pull request"])
    comments = payload.get("comments") or []
    for item in comments:
        start = item.get("start_line")
        if not _on_diff(change, item["path"], item["line"], item.get("side", "RIGHT")) or (
            start is not None and not _on_diff(change, item["path"], start, item.get("start_side", "RIGHT"))
        ):
            return _error(422, "Unprocessable Entity", ["Pull request review thread line must be part of the diff"])
    state = _state(request)
    for item in comments:  # all or nothing, like GitHub
        position = {k: item.get(k) for k in ("path", "line", "side", "start_line", "start_side")}
        state.add_thread(("github", full_name, "change", number), str(item["body"]), review=True, position=position)
    body = shapes.review(api_root(request), full_name, number, state.next_id(), str(payload.get("body", "")),
                         change.head_sha, state.bot_user)
    return JSONResponse(body)


async def reply(request: Request) -> JSONResponse:
    full_name, number, change = _change(request)
    state = _state(request)
    threads = state.threads_of("github", full_name, "change", number) if change else []
    top = [t for t in threads if t.review and t.id == str(request.path_params["id"])]
    if not top:  # "Replies to replies are not supported."
        return not_found()
    comment = FakeComment(id=state.next_id(), body=str((await request.json())["body"]), author=state.bot_user,
                          author_id=state.bot_user_id)
    with state.lock:
        top[0].comments.append(comment)
    return JSONResponse(comment_json(request, full_name, comment, top[0], number), status_code=201)


_FIRST = re.compile(r"reviewThreads\(first:\s*(\d+)")


def _graphql_threads(state: FakeForgeState, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    """A page of review threads as GitHub's connections page: at most `first` (≤ 100) after a cursor."""
    full_name = f"{variables['owner']}/{variables['name']}"
    threads = [t for t in state.threads_of("github", full_name, "change", int(variables["number"])) if t.review]
    found = _FIRST.search(query)
    first = int(found.group(1)) if found else 0
    if not 1 <= first <= 100:
        return {"errors": [{"type": "MISSING_PAGINATION_BOUNDARIES", "message": "Requesting 101 records on the "
                            "`reviewThreads` connection exceeds the `first` limit of 100 records."}]}
    start = int(variables.get("after") or 0)
    page = threads[start : start + first]
    nodes = [{"id": f"PRRT_{t.id}", "isResolved": t.resolved, "comments": {"nodes": [{"databaseId": int(t.id)}]}}
             for t in page]
    info = {"hasNextPage": start + first < len(threads), "endCursor": str(start + len(page)) if page else None}
    return {"data": {"repository": {"pullRequest": {"reviewThreads": {"nodes": nodes, "pageInfo": info}}}}}


async def graphql(request: Request) -> JSONResponse:
    state = _state(request)
    payload = await request.json()
    query, variables = str(payload["query"]), payload.get("variables") or {}
    if "resolveReviewThread" in query:
        wanted = str(variables["input"]["threadId"]).removeprefix("PRRT_")
        with state.lock:
            for thread in (t for threads in state.threads.values() for t in threads):
                if thread.review and thread.id == wanted:
                    thread.resolved = True
                    return JSONResponse({"data": {"resolveReviewThread": {"thread": {"isResolved": True}}}})
        return JSONResponse({"errors": [{"type": "NOT_FOUND", "message": "Could not resolve to a node"}]})
    if "reviewThreads" in query:
        return JSONResponse(_graphql_threads(state, query, variables))
    return JSONResponse({"errors": [{"message": "the fake knows two GraphQL operations"}]})


def pull_routes() -> list[Route]:
    base = "/github/repos/{owner}/{repo}/pulls"
    return [
        Route(base, pulls, methods=["GET", "POST"]),
        Route(base + "/{number:int}", pull, methods=["GET", "PATCH"]),
        Route(base + "/{number:int}/files", files, methods=["GET"]),
        Route(base + "/{number:int}/comments", review_comments, methods=["GET"]),
        Route(base + "/{number:int}/comments/{id:int}/replies", reply, methods=["POST"]),
        Route(base + "/{number:int}/reviews", reviews, methods=["POST"]),
        Route("/github/graphql", graphql, methods=["POST"]),
    ]
