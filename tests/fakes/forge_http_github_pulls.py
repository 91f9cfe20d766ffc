"""Pull request routes of the fake GitHub: pulls, files, reviews, review comments and GraphQL threads."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.fakes.forge_http_github import _comment_json, _error, _found, _repo, _state, _user
from tests.fakes.forge_state import FakeChange, FakeComment, FakeFile, FakeForgeState
from tests.fakes.samples import sample

_STATUS = {"added": "added", "deleted": "removed", "modified": "modified", "renamed": "renamed"}


def _pull_json(api: str, number: int, change: FakeChange) -> dict[str, Any]:
    data = sample("github/api/pulls.create.response.json")
    data.update(number=number, title=change.title, body=change.body, draft=change.draft,
                state="open" if change.state == "opened" else "closed", url=f"{api}/pulls/{number}",
                updated_at=change.updated_at, merged_at=change.updated_at if change.state == "merged" else None,
                issue_url=f"{api}/issues/{number}", html_url=f"https://github.example/pull/{number}",
                user=_user(change.author))
    owner = api.rsplit("/", 2)[-2]
    data["head"].update(ref=change.source_branch, sha=change.head_sha, label=f"{owner}:{change.source_branch}")
    data["base"].update(ref=change.target_branch, sha=change.base_sha, label=f"{owner}:{change.target_branch}")
    data["head"]["repo"] = data["base"]["repo"] = None
    return data


def _change(request: Request) -> tuple[str, str, int, FakeChange | None]:
    full_name, api, number, found = _found(request)
    return full_name, api, number, found if isinstance(found, FakeChange) else None


async def pull(request: Request) -> JSONResponse:
    _, api, number, change = _change(request)
    return _error(404, "Not Found") if change is None else JSONResponse(_pull_json(api, number, change))


async def pulls(request: Request) -> JSONResponse:
    full_name, api = _repo(request)
    state = _state(request)
    if request.method == "GET":
        owner = full_name.split("/")[0]
        head = request.query_params.get("head")
        wanted = {"open": "opened", "closed": "closed"}.get(request.query_params.get("state", "open"))
        if wanted == "closed" and request.query_params.get("sort") == "updated":  # newest update first
            merged = state.closed_items("github", full_name, "change")
            return JSONResponse([_pull_json(api, n, c) for n, c in merged if isinstance(c, FakeChange)])
        return JSONResponse([
            _pull_json(api, n, c) for (f, p, n), c in sorted(state.changes.items())
            if (f, p) == ("github", full_name) and (head is None or head == f"{owner}:{c.source_branch}")
            and (wanted is None or c.state == wanted)
        ])
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
    return JSONResponse(_pull_json(api, number, change), status_code=201)


def _file_json(file: FakeFile) -> dict[str, Any]:
    listed: Any = sample("github/api/pulls.list_files.response.json")
    data: dict[str, Any] = listed[0]
    data.update(filename=file.new_path, status=_STATUS[file.status], patch=file.patch)
    if file.status == "renamed":
        data["previous_filename"] = file.old_path
    return data


async def files(request: Request) -> JSONResponse:
    _, _, _, change = _change(request)
    return _error(404, "Not Found") if change is None else JSONResponse([_file_json(f) for f in change.files])


async def review_comments(request: Request) -> JSONResponse:
    full_name, api, number, change = _change(request)
    if change is None:
        return _error(404, "Not Found")
    threads = [t for t in _state(request).threads_of("github", full_name, "change", number) if t.review]
    return JSONResponse([_comment_json(api, c, t, number) for t in threads for c in t.comments])


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
    full_name, api, number, change = _change(request)
    if change is None:
        return _error(404, "Not Found")
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
    data = sample("github/api/pulls.create_review.response.json")
    data.update(id=state.next_id(), body=payload.get("body", ""), state="COMMENTED", commit_id=change.head_sha,
                pull_request_url=f"{api}/pulls/{number}", user=_user(state.bot_user))
    return JSONResponse(data)


async def reply(request: Request) -> JSONResponse:
    full_name, api, number, change = _change(request)
    state = _state(request)
    threads = state.threads_of("github", full_name, "change", number) if change else []
    top = [t for t in threads if t.review and t.id == str(request.path_params["id"])]
    if not top:  # "Replies to replies are not supported."
        return _error(404, "Not Found")
    comment = FakeComment(id=state.next_id(), body=str((await request.json())["body"]), author=state.bot_user)
    with state.lock:
        top[0].comments.append(comment)
    return JSONResponse(_comment_json(api, comment, top[0], number), status_code=201)


def _graphql_threads(state: FakeForgeState, variables: dict[str, Any]) -> dict[str, Any]:
    full_name = f"{variables['owner']}/{variables['name']}"
    threads = [t for t in state.threads_of("github", full_name, "change", int(variables["number"])) if t.review]
    nodes = [{"id": f"PRRT_{t.id}", "isResolved": t.resolved, "comments": {"nodes": [{"databaseId": int(t.id)}]}}
             for t in threads]
    return {"data": {"repository": {"pullRequest": {"reviewThreads": {"nodes": nodes}}}}}


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
        return JSONResponse(_graphql_threads(state, variables))
    return JSONResponse({"errors": [{"message": "the fake knows two GraphQL operations"}]})


def pull_routes() -> list[Route]:
    base = "/github/repos/{owner}/{repo}/pulls"
    return [
        Route(base, pulls, methods=["GET", "POST"]),
        Route(base + "/{number:int}", pull, methods=["GET"]),
        Route(base + "/{number:int}/files", files, methods=["GET"]),
        Route(base + "/{number:int}/comments", review_comments, methods=["GET"]),
        Route(base + "/{number:int}/comments/{id:int}/replies", reply, methods=["POST"]),
        Route(base + "/{number:int}/reviews", reviews, methods=["POST"]),
        Route("/github/graphql", graphql, methods=["POST"]),
    ]
