"""GitLab REST routes of the fake forge (`/gitlab/api/v4`): issues, merge requests, notes,
discussions with diff positions, award emoji, members. Answers have the fields of GitLab's own
response schemas or documentation examples (`tests.fakes.gitlab_shapes`), lists are paginated as
GitLab documents (`tests.fakes.forge_pages`), and the contract layer checks every exchange.

Diff positions are checked the way GitLab checks them: the three SHAs must be the latest
version's, added lines carry only `new_line`, removed only `old_line`, context lines both, and a
`line_range` needs valid `line_code`s — the errors users of other bots hit.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.fakes import forge_deliveries
from tests.fakes import gitlab_shapes as shapes
from tests.fakes.forge_pages import paginated
from tests.fakes.forge_state import (
    FakeChange,
    FakeComment,
    FakeFile,
    FakeForgeState,
    FakeHook,
    FakeIssue,
    FakeProject,
    FakeThread,
    Kind,
    local_address,
)

_EMOJI = {"eyes", "thumbsup", "rocket", "confused"}


def _state(request: Request) -> FakeForgeState:
    state: FakeForgeState = request.app.state.forge
    return state


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse(shapes.error(message), status_code=status)


def _kind(request: Request) -> Kind:
    return "change" if "/merge_requests/" in request.url.path else "issue"


def _target(request: Request) -> tuple[str, Kind, int, Any]:
    state, project, kind = _state(request), request.path_params["project"], _kind(request)
    number = int(request.path_params["iid"])
    store: dict[Any, Any] = state.issues if kind == "issue" else state.changes
    if request.path_params.get("noteable", "issues") not in ("issues", "merge_requests"):
        return project, kind, number, None
    return project, kind, number, store.get(("gitlab", project, number))


_note = shapes.note


async def issue(request: Request) -> JSONResponse:
    project, _, iid, found = _target(request)
    if found is None:
        return _error(404, "404 Issue Not Found")
    return JSONResponse(shapes.issue(project, iid, found))


def _listed(request: Request, kind: Kind) -> list[tuple[int, Any]]:
    """`state=closed` issues or `state=merged` merge requests, `updated_after`, `sort` by `updated_at`."""
    query = request.query_params
    found = _state(request).closed_items("gitlab", request.path_params["project"], kind,
                                         query.get("updated_after", ""))
    return found if query.get("sort", "desc") == "desc" else found[::-1]


async def issues(request: Request) -> JSONResponse:
    if request.query_params.get("state") != "closed":
        return _error(400, "the fake lists closed issues only")
    project = request.path_params["project"]
    wanted = request.query_params.get("confidential")
    listed = [(n, i) for n, i in _listed(request, "issue")
              if wanted is None or isinstance(i, FakeIssue) and i.confidential == (wanted == "true")]
    return paginated(request, [shapes.issue(project, n, i) for n, i in listed], "gitlab")


async def notes(request: Request) -> JSONResponse:
    project, kind, iid, found = _target(request)
    if found is None:
        return _error(404, "404 Noteable Not Found")
    payload = await request.json()
    thread = _state(request).add_thread(("gitlab", project, kind, iid), str(payload["body"]))
    return JSONResponse(_note(thread.comments[0], thread, kind, iid), status_code=201)


async def note(request: Request) -> JSONResponse:
    project, kind, iid, found = _target(request)
    located = _state(request).find_comment("gitlab", project, int(request.path_params["note_id"]))
    if found is None or located is None:
        return _error(404, "404 Note Not Found")
    thread, comment = located
    comment.body = str((await request.json())["body"])
    return JSONResponse(_note(comment, thread, kind, iid))


async def discussions(request: Request) -> JSONResponse:
    project, kind, iid, found = _target(request)
    if found is None:
        return _error(404, "404 Noteable Not Found")
    state = _state(request)
    if request.method == "GET":
        listed = [shapes.discussion(project, t, kind, iid) for t in state.threads_of("gitlab", project, kind, iid)]
        return paginated(request, listed, "gitlab")
    payload = await request.json()
    position = payload.get("position")
    if position is not None:
        problem = _position_problem(found, position) if kind == "change" else "positions need a merge request"
        if problem:
            return _error(400, f"400 Bad request - Note {problem}")
    thread = state.add_thread(("gitlab", project, kind, iid), str(payload["body"]), individual=False,
                              position=position)
    return JSONResponse(shapes.discussion(project, thread, kind, iid), status_code=201)


def _thread(request: Request) -> tuple[FakeThread | None, Kind, int]:
    project, kind, iid, found = _target(request)
    if found is None:
        return None, kind, iid
    threads = _state(request).threads_of("gitlab", project, kind, iid)
    match = [t for t in threads if t.id == request.path_params["discussion_id"]]
    return (match[0] if match else None), kind, iid


async def discussion(request: Request) -> JSONResponse:
    thread, kind, iid = _thread(request)
    if thread is None:
        return _error(404, "404 Discussion Not Found")
    resolved = request.query_params.get("resolved") or str((await request.json()).get("resolved", ""))
    if kind == "issue" or thread.individual:
        return _error(400, "400 Bad request - discussion is not resolvable")
    thread.resolved = resolved.lower() == "true"
    return JSONResponse(shapes.discussion(request.path_params["project"], thread, kind, iid))


async def discussion_notes(request: Request) -> JSONResponse:
    thread, kind, iid = _thread(request)
    if thread is None:
        return _error(404, "404 Discussion Not Found")
    state = _state(request)
    comment = FakeComment(id=state.next_id(), body=str((await request.json())["body"]), author=state.bot_user,
                          author_id=state.bot_user_id)
    with state.lock:
        thread.comments.append(comment)
        thread.individual = False  # replying to a stand-alone comment makes it a thread
    return JSONResponse(_note(comment, thread, kind, iid), status_code=201)


async def award_emoji(request: Request) -> JSONResponse:
    project, kind, iid, found = _target(request)
    if found is None:
        return _error(404, "404 Not Found")
    owner: Any = found
    awardable = (iid + (10_000 if kind == "issue" else 20_000), "Issue" if kind == "issue" else "MergeRequest")
    if "note_id" in request.path_params:
        located = _state(request).find_comment("gitlab", project, int(request.path_params["note_id"]))
        if located is None:
            return _error(404, "404 Note Not Found")
        owner = located[1]
        awardable = (owner.id, "Note")
    name = str((await request.json())["name"])
    if name not in _EMOJI:
        return _error(400, "400 Bad request - name is invalid")
    if name in owner.reactions:
        return _error(404, "404 Award Emoji Name has already been taken Not Found")
    owner.reactions.append(name)
    state = _state(request)
    return JSONResponse(shapes.award(state.next_id(), name, state.bot_user, *awardable), status_code=201)


async def member(request: Request) -> JSONResponse:
    level = _state(request).members.get(("gitlab", request.path_params["project"], request.path_params["user"]))
    if level is None:
        return _error(404, "404 Member Not Found")
    return JSONResponse(shapes.member(int(request.path_params["user"]), int(level)))


# --- merge requests ------------------------------------------------------------------------------


async def merge_request(request: Request) -> JSONResponse:
    """`GET` or `PUT` (its description, the one field the bot edits) one merge request."""
    project, _, iid, found = _target(request)
    if found is None:
        return _error(404, "404 Merge Request Not Found")
    if request.method == "PUT":
        payload = await request.json()
        with _state(request).lock:
            found.body = str(payload.get("description", found.body))
    return JSONResponse(shapes.merge_request(project, iid, found))


async def merge_requests(request: Request) -> JSONResponse:
    state, project = _state(request), request.path_params["project"]
    if request.method == "GET":
        wanted = request.query_params
        if wanted.get("state") == "merged":
            merged = [shapes.merge_request_listed(project, n, c) for n, c in _listed(request, "change")]
            return paginated(request, merged, "gitlab")
        with state.lock:
            found = [shapes.merge_request_listed(p, n, c)
                     for (f, p, n), c in sorted(state.changes.items(), reverse=True) if (f, p) == ("gitlab", project)
                     and c.source_branch == wanted.get("source_branch", c.source_branch)
                     and c.state == wanted.get("state", c.state)]
        return paginated(request, found, "gitlab")
    payload = await request.json()
    with state.lock:
        for (f, p, n), c in state.changes.items():
            if (f, p) == ("gitlab", project) and c.source_branch == payload["source_branch"] and c.state == "opened":
                return _error(409, f"Another open merge request already exists for this source branch: !{n}")
        title = str(payload["title"])
        change = FakeChange(title=title, body=str(payload.get("description", "")), author=state.bot_user,
                            source_branch=str(payload["source_branch"]), target_branch=str(payload["target_branch"]),
                            draft=title.startswith(("Draft:", "[Draft]", "(Draft)")))
        number = 1 + max([n for (f, p, n) in state.changes if (f, p) == ("gitlab", project)], default=0)
        state.changes[("gitlab", project, number)] = change
    return JSONResponse(shapes.merge_request(project, number, change), status_code=201)


async def versions(request: Request) -> JSONResponse:
    _, _, iid, found = _target(request)
    if found is None:
        return _error(404, "404 Merge Request Not Found")
    return paginated(request, [shapes.version(iid, found)], "gitlab")


def _diff_entries(found: FakeChange) -> list[dict[str, Any]]:
    return [{
        "old_path": f.old_path, "new_path": f.new_path, "a_mode": "100644", "b_mode": "100644", "diff": f.patch,
        "new_file": f.status == "added", "renamed_file": f.status == "renamed", "deleted_file": f.status == "deleted",
        "generated_file": False,
    } for f in found.files]


async def diffs(request: Request) -> JSONResponse:
    _, _, _, found = _target(request)
    if _state(request).gitlab_without_diffs:
        return _error(404, "404 Not Found")  # GitLab's answer to a route it does not have
    if found is None:
        return _error(404, "404 Merge Request Not Found")
    return paginated(request, _diff_entries(found), "gitlab")


async def changes(request: Request) -> JSONResponse:
    """doc/api/merge_requests.md "Get single merge request changes": the merge request and its diffs."""
    project, _, iid, found = _target(request)
    if found is None:
        return _error(404, "404 Merge Request Not Found")
    entries = [{k: v for k, v in entry.items() if k != "generated_file"} for entry in _diff_entries(found)]
    return JSONResponse({**shapes.merge_request(project, iid, found), "changes": entries, "overflow": False})


def _line_code(path: str, old: int, new: int) -> str:
    return f"{hashlib.sha1(path.encode()).hexdigest()}_{old}_{new}"


def _row_for(file: FakeFile, old: Any, new: Any) -> tuple[str, int, int] | None:
    for kind, o, n in file.rows():
        if kind == "context" and (o, n) == (old, new):
            return kind, o, n
        if kind == "added" and old is None and n == new:
            return kind, o, n
        if kind == "removed" and new is None and o == old:
            return kind, o, n
    return None


def _position_problem(change: FakeChange, position: dict[str, Any]) -> str:
    if (position.get("base_sha"), position.get("head_sha"), position.get("start_sha")) != (
        change.base_sha, change.head_sha, change.start_sha
    ):
        return "position SHAs are not the latest version's"
    paths = (position.get("old_path"), position.get("new_path"))
    files = [f for f in change.files if (f.old_path, f.new_path) == paths]
    if not files:
        return "position paths match no diff file"
    if _row_for(files[0], position.get("old_line"), position.get("new_line")) is None:
        return "{:line_code=>[\"can't be blank\", \"must be a valid line code\"]}"
    for end in (position.get("line_range") or {}).values():
        row = _row_for(files[0], end.get("old_line"), end.get("new_line"))
        if row is None or end.get("line_code") != _line_code(files[0].new_path, row[1], row[2]):
            return "{:line_range=>[\"must be a valid line code\"]}"
    return ""


def _project_json(request: Request, found: FakeProject) -> dict[str, Any]:
    web = found.web_url or f"{request.base_url}gitlab/{found.path}"
    clone = found.clone_url or f"{request.base_url}gitlab/{found.path}.git"
    return shapes.project(found, web, clone)


async def project(request: Request) -> JSONResponse:
    found = _state(request).project("gitlab", request.path_params["project"])
    if found is None:
        return _error(404, "404 Project Not Found")
    return JSONResponse(_project_json(request, found))


async def raw_file(request: Request) -> Response:
    """`GET /projects/:id/repository/files/:path/raw?ref=`: the bytes, or 404 like GitLab."""
    found = _state(request).project("gitlab", request.path_params["project"])
    content = found.file(request.query_params.get("ref", found.default_branch), request.path_params["path"]) \
        if found else None
    return _error(404, "404 File Not Found") if content is None else Response(content, media_type="text/plain")


async def current_user(request: Request) -> JSONResponse:
    state = _state(request)
    found = shapes.user(state.bot_user, state.bot_user_id)
    found["web_url"] = f"{request.base_url}gitlab/{state.bot_user}"  # the instance's own host: python-gitlab checks
    found["name"] = state.bot_name
    own = {"commit_email": state.bot_commit_email, "email": state.bot_email}  # what a user is shown of itself
    return JSONResponse({**found, "bot": True, **{key: value for key, value in own.items() if value}})


async def user_keys(request: Request) -> JSONResponse:
    """`GET /user/keys` (doc/api/user_keys.md): the user's SSH keys, with their usage (GitLab 15.7+)."""
    keys = _state(request).ssh_keys["gitlab"]
    return JSONResponse([{"id": n, "title": f"key {n}", "created_at": "2026-01-01T00:00:00.000Z", "expires_at": None,
                          "key": key, "usage_type": usage} for n, (key, usage) in enumerate(keys, 1)])


async def token_self(request: Request) -> JSONResponse:
    """`GET /personal_access_tokens/self` (doc/api/personal_access_tokens.md): the token's own record."""
    state = _state(request)
    return JSONResponse({"id": 1, "name": "forgebot", "revoked": False, "created_at": "2026-01-01T00:00:00.000Z",
                         "description": None, "scopes": state.token_scopes["gitlab"], "user_id": state.bot_user_id,
                         "last_used_at": None, "active": True, "expires_at": state.token_expires_at})


_hook_json = shapes.hook


async def hooks(request: Request) -> JSONResponse:
    state = _state(request)
    found = state.project("gitlab", request.path_params["project"])
    if found is None:
        return _error(404, "404 Project Not Found")
    with state.lock:
        stored = state.hooks.setdefault(("gitlab", str(found.id)), [])
        if request.method == "GET" and "hook_id" in request.path_params:
            one = [h for h in stored if h.id == int(request.path_params["hook_id"])]
            return JSONResponse(_hook_json(found.id, one[0])) if one else _error(404, "404 Not found")
        if request.method == "GET":
            return paginated(request, [_hook_json(found.id, h) for h in stored], "gitlab")
    data = await request.json()
    if not state.local_hooks and local_address(str(data.get("url", ""))):  # GitLab's own words, per field
        return JSONResponse(shapes.error({"url": ["is blocked: Requests to the local network are not allowed"]}),
                            status_code=422)
    events = sorted(k for k, v in data.items() if k.endswith("_events") and v is True)
    with state.lock:
        if request.method == "POST":
            hook = FakeHook(id=state.next_id(), url=str(data["url"]), secret=str(data.get("token", "")), events=events)
            stored.append(hook)
            return JSONResponse(_hook_json(found.id, hook), status_code=201)
        match = [h for h in stored if h.id == int(request.path_params["hook_id"])]
        if not match:
            return _error(404, "404 Not found")
        match[0].url, match[0].secret, match[0].events = str(data["url"]), str(data.get("token", "")), events
        return JSONResponse(_hook_json(found.id, match[0]))


async def hook_test(request: Request) -> JSONResponse:
    """doc/api/project_webhooks.md "Trigger a test project webhook": GitLab sends the hook sample data of
    the trigger, whatever its state, and an answer in 2xx enables it again (`forge_deliveries`)."""
    state = _state(request)
    found = state.project("gitlab", request.path_params["project"])
    if found is None:
        return _error(404, "404 Project Not Found")
    with state.lock:
        one = [h for h in state.hooks.get(("gitlab", str(found.id)), []) if h.id == int(request.path_params["hook_id"])]
    if not one:
        return _error(404, "404 Not found")
    if request.path_params["trigger"] != "push_events":  # the only sample this fake has
        return _error(400, "trigger does not have a valid value")
    status = await asyncio.to_thread(forge_deliveries.send, one[0], "gitlab", "Push Hook",
                                     forge_deliveries.test_push(found.id, found.path))
    if status is None or not 200 <= status < 300:
        return _error(422, f"[Hook execution failed: {status or 'no answer'}]")
    return JSONResponse({"message": "201 Created"}, status_code=201)


def _one_hook(request: Request) -> tuple[FakeProject | None, FakeHook | None]:
    state = _state(request)
    found = state.project("gitlab", request.path_params["project"])
    if found is None:
        return None, None
    with state.lock:
        one = [h for h in state.hooks.get(("gitlab", str(found.id)), []) if h.id == int(request.path_params["hook_id"])]
    return found, one[0] if one else None


async def hook_events(request: Request) -> JSONResponse:
    """doc/api/project_webhooks.md "Get a list of project webhook events" (17.3): the last 7 days, newest first."""
    found, hook = _one_hook(request)
    if found is None or hook is None:
        return _error(404, "404 Not found")
    return paginated(request, [shapes.hook_event(hook, d) for d in reversed(hook.log)], "gitlab")


async def hook_event_resend(request: Request) -> JSONResponse:
    """doc/api/project_webhooks.md "Resend a project webhook event" (17.4): the logged request sent again, its
    Idempotency-Key the same; GitLab answers with the new answer's status."""
    found, hook = _one_hook(request)
    if found is None or hook is None:
        return _error(404, "404 Not found")
    logged = [d for d in hook.log if d.id == int(request.path_params["event_id"])]
    if not logged:
        return _error(404, "404 Not found")
    status = await asyncio.to_thread(forge_deliveries.send, hook, "gitlab", logged[0].event, logged[0].payload,
                                     None, logged[0])
    return JSONResponse({"response_status": status if status is not None else "internal error"}, status_code=201)


def routes() -> list[Route]:
    base = "/gitlab/api/v4/projects/{project}"
    noteable = base + "/{noteable:str}/{iid:int}"
    return [
        Route(base, project, methods=["GET"]),
        Route("/gitlab/api/v4/user", current_user, methods=["GET"]),
        Route("/gitlab/api/v4/user/keys", user_keys, methods=["GET"]),
        Route("/gitlab/api/v4/personal_access_tokens/self", token_self, methods=["GET"]),
        Route(base + "/hooks", hooks, methods=["GET", "POST"]),
        Route(base + "/hooks/{hook_id:int}", hooks, methods=["GET", "PUT"]),
        Route(base + "/hooks/{hook_id:int}/test/{trigger}", hook_test, methods=["POST"]),
        Route(base + "/hooks/{hook_id:int}/events", hook_events, methods=["GET"]),
        Route(base + "/hooks/{hook_id:int}/events/{event_id:int}/resend", hook_event_resend, methods=["POST"]),
        Route(base + "/issues", issues, methods=["GET"]),
        Route(base + "/issues/{iid:int}", issue, methods=["GET"]),
        Route(base + "/repository/files/{path:path}/raw", raw_file, methods=["GET"]),
        Route(base + "/merge_requests", merge_requests, methods=["GET", "POST"]),
        Route(base + "/merge_requests/{iid:int}", merge_request, methods=["GET", "PUT"]),
        Route(base + "/merge_requests/{iid:int}/versions", versions, methods=["GET"]),
        Route(base + "/merge_requests/{iid:int}/diffs", diffs, methods=["GET"]),
        Route(base + "/merge_requests/{iid:int}/changes", changes, methods=["GET"]),
        Route(base + "/members/all/{user}", member, methods=["GET"]),
        Route(noteable + "/notes", notes, methods=["GET", "POST"]),
        Route(noteable + "/notes/{note_id:int}", note, methods=["PUT"]),
        Route(noteable + "/notes/{note_id:int}/award_emoji", award_emoji, methods=["POST"]),
        Route(noteable + "/award_emoji", award_emoji, methods=["POST"]),
        Route(noteable + "/discussions", discussions, methods=["GET", "POST"]),
        Route(noteable + "/discussions/{discussion_id}", discussion, methods=["PUT"]),
        Route(noteable + "/discussions/{discussion_id}/notes", discussion_notes, methods=["POST"]),
        Route("/gitlab/api/v4/projects/{project:path}", project, methods=["GET"]),  # by path: `group%2Fname`
    ]
