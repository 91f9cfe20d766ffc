"""The console's routes: task list, task page, health page and the operator's login.

Access (docs/console.md): a task page opens with a signed, unexpired link for that task, or for a
logged-in operator; the list and health pages only for the operator (a session cookie set by
logging in with `console.operator_token`, or `Authorization: Bearer <token>` for scripts). With no
console secret configured every route answers 404, as if the console did not exist. Wrong tokens
are throttled per client and overall (`bot.console.throttle`); the login body is at most 4 KiB.

Every response forbids scripts, framing, caching and referrers: the pages carry redacted but
private data, and a task link must not leak through a `Referer` header.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from bot.console import links
from bot.console.records import Records
from bot.console.throttle import Throttle
from bot.intake.bodies import BodyRefused, read_body
from bot.tasks.inbox import TaskFilter
from foundation.settings import Settings

HERE = Path(__file__).parent
STATES = ("queued", "running", "waiting", "done", "failed", "cancelled")
MODES = ("implement", "analyze", "review")
_TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_REPO = re.compile(r"^(gitlab|github):[^\x00-\x1f]{1,300}$")
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self';"
                               " frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
Handler = Callable[[Request], Awaitable[Response]]
LOGIN_BODY_BYTES = 4096  # the form holds one token field

_env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
_env.filters["duration"] = lambda s: _duration(float(s))
_env.filters["when"] = lambda t: time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(t))) + " UTC"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def root(request: Request) -> str:
    """The path the console's address puts before `/console` (`/forgebot` for `https://tools.example/forgebot`).

    Behind a proxy that serves the console under a path and strips it, the pages' own links, the
    login's redirects and the session cookie must carry that path: they pointed at `/console/...` of
    the proxy's host, so the stylesheet, the navigation and the login itself missed the console.
    """
    return urlsplit(_settings(request).console.public_url).path.rstrip("/")


def _page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    page = _env.get_template(template).render(root=root(request), **context)
    return HTMLResponse(page, status_code=status, headers=HEADERS)


def _see(request: Request, path: str) -> RedirectResponse:
    return RedirectResponse(root(request) + path, status_code=303, headers=HEADERS)


def _settings(request: Request) -> Settings:
    settings: Settings = request.state.settings
    return settings


def _records(request: Request) -> Records:
    records: Records = request.state.console
    return records


def _client(request: Request) -> str:
    return request.client.host if request.client else "-"


def _throttle(request: Request) -> Throttle:
    throttle: Throttle = request.state.throttle
    return throttle


def _too_many(wait: int) -> dict[str, str]:
    return {**HEADERS, "Retry-After": str(wait)}


def operator(request: Request) -> bool:
    """A valid session cookie, or a Bearer token that is the operator's (wrong ones are throttled)."""
    console = _settings(request).console
    cookie = request.cookies.get(links.SESSION_COOKIE, "")
    if cookie and links.session_valid(console, cookie):
        return True
    header = request.headers.get("authorization", "")
    if not header.lower().startswith("bearer "):
        return False
    throttle, client = _throttle(request), _client(request)
    if wait := throttle.wait(client):  # refused before the token is compared: nothing is learnt
        raise HTTPException(429, "too many wrong operator tokens", headers=_too_many(wait))
    if links.token_valid(console, header[7:].strip()):
        return True
    throttle.failed(client)
    return False


def _enabled(handler: Handler) -> Handler:
    async def guarded(request: Request) -> Response:
        if not _settings(request).console.enabled or getattr(request.state, "console", None) is None:
            return Response("Not Found", status_code=404)
        return await handler(request)

    return guarded


def _operator_only(handler: Handler) -> Handler:
    async def guarded(request: Request) -> Response:
        if not operator(request):
            if _settings(request).console.operator_token is None:
                return _page(request, "denied.html", 403,
                             reason="the operator pages are off: no operator token is configured")
            return _see(request, "/console/login")
        return await handler(request)

    return _enabled(guarded)


async def login_form(request: Request) -> Response:
    return _page(request, "login.html", error="")


async def login(request: Request) -> Response:
    console = _settings(request).console
    throttle, client = _throttle(request), _client(request)
    if wait := throttle.wait(client):  # before the body is read or the token compared
        refused = _page(request, "login.html", 429, error=f"Too many wrong tokens: try again in {wait} s.")
        refused.headers["Retry-After"] = str(wait)
        return refused
    try:
        body = await read_body(request, LOGIN_BODY_BYTES)
    except BodyRefused as exc:
        return _page(request, "login.html", exc.status_code, error="That form is not the login form.")
    fields = parse_qs(body.decode("utf-8", errors="replace"))
    offered = (fields.get("token") or [""])[0]
    if console.operator_token is None or not links.token_valid(console, offered):
        throttle.failed(client)
        return _page(request, "login.html", 401, error="That token is not the operator token.")
    response = _see(request, "/console/tasks")
    secure = console.public_url.startswith("https://")
    response.set_cookie(links.SESSION_COOKIE, links.session_cookie(console), max_age=links.SESSION_SECONDS,
                        httponly=True, samesite="strict", secure=secure, path=f"{root(request)}/console")
    return response


def _filter(request: Request, size: int) -> tuple[TaskFilter, int]:
    params = request.query_params
    state = params.get("state", "")
    mode = params.get("mode", "")
    repo = params.get("repo", "")
    page = params.get("page", "1")
    number = int(page) if page.isdigit() and 0 < len(page) < 7 else 1
    return TaskFilter(
        state=state if state in STATES else "",
        mode=mode if mode in MODES else "",
        repo=repo if _REPO.match(repo) else "",
        offset=(max(number, 1) - 1) * size,
        limit=size,
    ), max(number, 1)


async def task_list(request: Request) -> Response:
    size = _settings(request).console.page_size
    query, number = _filter(request, size)
    records = _records(request)
    named = "".join(ch for ch in request.query_params.get("repo", "")[:300] if ch.isprintable())
    unknown = ""
    if named:  # the select's key, or a path typed or linked (`group/app`): filtered by, never ignored
        key = await records.repo_key(named)
        if key is None:
            unknown = named
        query = replace(query, repo=key or "")
    if unknown:
        return _page(request, "tasks.html", tasks=[], total=0, page=1, pages=1, query=query, states=STATES,
                     modes=MODES, repos=await records.repos(), prev="", next="", unknown=unknown)
    tasks, total = await records.page(query)
    pages = max((total + size - 1) // size, 1)
    kept = {k: v for k, v in (("state", query.state), ("mode", query.mode), ("repo", query.repo)) if v}

    def href(n: int) -> str:
        return f"{root(request)}/console/tasks?" + urlencode({**kept, "page": n})

    return _page(request, "tasks.html", tasks=tasks, total=total, page=number, pages=pages, query=query,
                 states=STATES, modes=MODES, repos=await records.repos(), prev=href(number - 1) if number > 1 else "",
                 next=href(number + 1) if number < pages else "")


async def task_page(request: Request) -> Response:
    task_id = request.path_params["task_id"]
    console = _settings(request).console
    if not _TASK_ID.match(task_id):
        return _page(request, "denied.html", 404, reason="no such task")
    params = request.query_params
    signed = links.link_valid(console, task_id, params.get("expires", ""), params.get("sig", ""))
    is_operator = operator(request)
    if not signed and not is_operator:
        reason = "this link has expired" if _expired(params.get("expires", "")) else "this link is not valid"
        return _page(request, "denied.html", 403, reason=reason)
    detail = await _records(request).detail(task_id)
    if detail is None:
        return _page(request, "denied.html", 404, reason="no such task")
    return _page(request, "task.html", task=detail, operator=is_operator, width=760)


def _expired(expires: str) -> bool:
    return expires.isdigit() and len(expires) < 13 and int(expires) < time.time()


async def health(request: Request) -> Response:
    return _page(request, "health.html", health=await _records(request).health())


async def stylesheet(request: Request) -> Response:
    return FileResponse(HERE / "static" / "console.css", media_type="text/css", headers=HEADERS)


async def index(request: Request) -> Response:
    return _see(request, "/console/tasks")


def routes() -> list[BaseRoute]:
    return [
        Route("/console", _operator_only(index), methods=["GET"]),
        Route("/console/login", _enabled(login_form), methods=["GET"]),
        Route("/console/login", _enabled(login), methods=["POST"]),
        Route("/console/tasks", _operator_only(task_list), methods=["GET"]),
        Route("/console/tasks/{task_id}", _enabled(task_page), methods=["GET"]),
        Route("/console/health", _operator_only(health), methods=["GET"]),
        Route("/console/static/console.css", _enabled(stylesheet), methods=["GET"]),
    ]
