"""Who may see what: the console off without a secret, signed links bound to one task and expiring,
operator pages only with the token, nothing secret rendered, nothing writable.

Over a real uvicorn serving `create_app` (what `forgebot web` runs), with the SQLite task store.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bot.console import links
from bot.tasks.inbox import Inbox
from bot.web.app import create_app
from foundation.settings import ConsoleSettings, Settings
from tests.conftest import GITLAB_TOKEN
from tests.console.store import add_task, event
from tests.fakes.server import ServerThread, serving

OPERATOR = "operator-token-1b2c3d-4e5f6a7b8c9d0e1f2a3b"


class _Queue:
    """The receiver's queue is not under test here: the console never enqueues."""

    async def enqueue(self, event: object) -> bool:
        raise AssertionError("the console must not enqueue")

    async def ping(self) -> bool:
        return True

    async def close(self) -> None:
        return None


@pytest.fixture
async def tasks(settings: Settings) -> list[str]:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    inbox = await Inbox.open(sqlite_path=settings.inbox_path)
    try:
        done = await add_task(inbox, event(1))
        # a failure whose detail carries a token: the page must not show it
        leaked = f"boom Authorization: Bearer {GITLAB_TOKEN}"
        failed = await add_task(inbox, event(2, mode="implement"), "failed", leaked)
        return [done, failed]
    finally:
        await inbox.close()


@pytest.fixture
def console(settings: Settings, tasks: list[str]) -> Iterator[ServerThread]:
    settings.console = ConsoleSettings(operator_token=SecretStr(OPERATOR), public_url="http://console.example")
    with serving(create_app(settings, queue=_Queue())) as server:
        yield server


def test_console_is_off_without_a_secret(settings: Settings, tasks: list[str]) -> None:
    with serving(create_app(settings, queue=_Queue())) as server:
        for path in ("/console", "/console/tasks", "/console/health", f"/console/tasks/{tasks[0]}", "/console/login"):
            assert httpx.get(server.url + path).status_code == 404, path
        assert httpx.post(server.url + "/console/login", data={"token": ""}).status_code == 404


def test_a_signed_link_opens_its_task_only(settings: Settings, console: ServerThread, tasks: list[str]) -> None:
    link = links.task_link(settings.console, tasks[0])
    local = link.replace("http://console.example", console.url)
    page = httpx.get(local)
    assert page.status_code == 200 and tasks[0] in page.text
    other = httpx.get(local.replace(tasks[0], tasks[1]))
    assert other.status_code == 403 and tasks[1] not in other.text
    forged = httpx.get(re.sub(r"sig=[0-9a-f]+", "sig=" + "f" * 64, local))
    assert forged.status_code == 403
    stretched = httpx.get(re.sub(r"expires=(\d+)", lambda m: f"expires={int(m.group(1)) + 3600}", local))
    assert stretched.status_code == 403  # the expiry is signed: moving it breaks the signature


def test_an_expired_link_is_refused(settings: Settings, console: ServerThread, tasks: list[str]) -> None:
    old = links.task_link(settings.console, tasks[0], now=0).replace("http://console.example", console.url)
    response = httpx.get(old)
    assert response.status_code == 403 and "expired" in response.text


def test_links_signed_with_another_secret_are_refused(settings: Settings, console: ServerThread,
                                                      tasks: list[str]) -> None:
    other = ConsoleSettings(operator_token=SecretStr("another-deployment-0f9e8d7c6b5a49382716"), public_url=console.url)
    assert httpx.get(links.task_link(other, tasks[0])).status_code == 403


@pytest.mark.parametrize("path", ["/console", "/console/tasks", "/console/health"])
def test_operator_pages_need_the_token(console: ServerThread, path: str) -> None:
    assert httpx.get(console.url + path).status_code == 303
    wrong = httpx.get(console.url + path, headers={"authorization": "Bearer nope"})
    assert wrong.status_code == 303
    forged = httpx.get(console.url + path, cookies={links.SESSION_COOKIE: "99999999999.00"})
    assert forged.status_code == 303
    assert httpx.get(console.url + path, headers={"authorization": f"Bearer {OPERATOR}"}, follow_redirects=True
                     ).status_code == 200


def test_login_sets_a_cookie_that_is_not_the_token(console: ServerThread) -> None:
    with httpx.Client(base_url=console.url) as client:
        refused = client.post("/console/login", data={"token": "guess"})
        assert refused.status_code == 401 and links.SESSION_COOKIE not in client.cookies
        accepted = client.post("/console/login", data={"token": OPERATOR})
        assert accepted.status_code == 303
        cookie = client.cookies[links.SESSION_COOKIE]
        assert OPERATOR not in cookie
        assert "HttpOnly" in accepted.headers["set-cookie"] and "SameSite=strict" in accepted.headers["set-cookie"]
        assert client.get("/console/tasks").status_code == 200


def test_pages_render_no_secret_and_forbid_scripts(settings: Settings, console: ServerThread,
                                                   tasks: list[str]) -> None:
    auth = {"authorization": f"Bearer {OPERATOR}"}
    for path in ("/console/tasks", "/console/health", f"/console/tasks/{tasks[1]}"):
        response = httpx.get(console.url + path, headers=auth)
        assert response.status_code == 200, path
        assert GITLAB_TOKEN not in response.text and OPERATOR not in response.text
        assert "<script" not in response.text
        policy = response.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src" not in policy
        assert response.headers["referrer-policy"] == "no-referrer"
        assert response.headers["cache-control"] == "no-store"
    assert "[REDACTED]" in httpx.get(console.url + "/console/tasks?state=failed", headers=auth).text


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_the_console_is_read_only(console: ServerThread, tasks: list[str], method: str) -> None:
    auth = {"authorization": f"Bearer {OPERATOR}"}
    for path in ("/console/tasks", f"/console/tasks/{tasks[0]}", "/console/health"):
        assert httpx.request(method, console.url + path, headers=auth).status_code == 405


def test_bad_filters_and_ids_are_clear_refusals(console: ServerThread) -> None:
    auth = {"authorization": f"Bearer {OPERATOR}"}
    odd = httpx.get(console.url + "/console/tasks", params={"state": "'; DROP TABLE tasks; --", "page": "x" * 50,
                                                             "repo": "gitlab:1\x00"}, headers=auth)
    assert odd.status_code == 200 and "2 in all" in odd.text  # odd values are not errors: ignored or cleaned
    assert httpx.get(console.url + "/console/tasks/..%2F..%2Fetc", headers=auth).status_code == 404
    assert httpx.get(console.url + "/console/tasks/ffffffffffffffff", headers=auth).status_code == 404


async def test_health_shows_queue_depth_and_the_leases_workers_hold(settings: Settings, redis_url: str,
                                                                     tasks: list[str]) -> None:
    import os
    import socket

    import redis

    from bot.tasks.leases import lease

    settings.redis_url = redis_url
    settings.console = ConsoleSettings(operator_token=SecretStr(OPERATOR))
    redis.Redis.from_url(redis_url).zadd("arq:queue", {"waiting-job": 1_000})  # enqueued at t = 1 s: very old
    auth = {"authorization": f"Bearer {OPERATOR}"}
    with serving(create_app(settings, queue=_Queue())) as server:
        async with lease(redis_url, "job-running", 30), httpx.AsyncClient() as client:
            page = (await client.get(server.url + "/console/health", headers=auth)).text
    assert '<dd id="depth">1</dd>' in page
    assert "h" in page.split('id="oldest">')[1].split("<")[0]  # decades old: shown in hours
    assert "job-running" in page and f"{socket.gethostname()}:{os.getpid()}" in page


async def test_the_repository_filter_takes_a_path_and_never_ignores_one(settings: Settings, tasks: list[str]) -> None:
    """`?repo=` by the select's key, by the path people type or link (any case, with or without the
    forge), and a name with no tasks: that says so instead of listing every task (on main a path was
    ignored: every task was listed)."""
    inbox = await Inbox.open(sqlite_path=settings.inbox_path)
    try:
        other = await add_task(inbox, event(3, project="9", path="other/service"))
    finally:
        await inbox.close()
    settings.console = ConsoleSettings(operator_token=SecretStr(OPERATOR), public_url="http://console.example")
    with serving(create_app(settings, queue=_Queue())) as server:
        async with httpx.AsyncClient(base_url=server.url, headers={"authorization": f"Bearer {OPERATOR}"}) as client:
            async def listed(repo: str) -> str:
                response = await client.get("/console/tasks", params={"repo": repo})
                assert response.status_code == 200
                return response.text

            for name in ("gitlab:9", "other/service", "Other/Service", "gitlab:other/service"):
                page = await listed(name)
                assert other in page and tasks[0] not in page and tasks[1] not in page, name
            page = await listed("nobody/here")
            assert "No repository named nobody/here has tasks." in page and other not in page


def _stripping_proxy(upstream: str, prefix: str) -> Starlette:
    """A reverse proxy serving `upstream` under `prefix` and stripping it, as an ingress or nginx's
    `location /forgebot/ { proxy_pass http://forgebot:8080/; }` does. Redirects pass through untouched."""

    async def forward(request: Request) -> Response:
        path = request.url.path
        if not path.startswith(prefix + "/"):
            return Response("not this proxy's path", status_code=404)
        async with httpx.AsyncClient(base_url=upstream) as client:
            answer = await client.request(request.method, path[len(prefix):], params=request.query_params,
                                          content=await request.body(),
                                          headers={k: v for k, v in request.headers.items() if k != "host"})
        headers = {k: v for k, v in answer.headers.items() if k not in ("content-length", "content-encoding")}
        return Response(answer.content, status_code=answer.status_code, headers=headers)

    return Starlette(routes=[Route("/{path:path}", forward, methods=["GET", "POST"])])


def test_the_console_works_under_the_path_of_its_public_address(settings: Settings, tasks: list[str]) -> None:
    """Served at `https://tools.example/forgebot` behind a proxy that strips `/forgebot`: the pages linked
    `/console/...` of the proxy's host, so the stylesheet, the navigation, the login and its cookie all
    missed the console. Everything a page links, a redirect names or a cookie is scoped to is under the path."""
    settings.console = ConsoleSettings(operator_token=SecretStr(OPERATOR), public_url="http://tools.example/forgebot")
    with serving(create_app(settings, queue=_Queue())) as console:
        with serving(_stripping_proxy(console.url, "/forgebot")) as proxy:
            with httpx.Client(base_url=proxy.url, follow_redirects=True) as browser:
                login = browser.get("/forgebot/console")
                assert login.status_code == 200 and login.url.path == "/forgebot/console/login"
                listed = browser.post("/forgebot/console/login", data={"token": OPERATOR})
                assert listed.status_code == 200 and listed.url.path == "/forgebot/console/tasks"
                assert "Path=/forgebot/console" in listed.history[0].headers["set-cookie"]
                pages = [listed]
                for link in sorted(set(re.findall(r'(?:href|action)="(/[^"#]*)"', listed.text))):  # the site's own
                    assert link.startswith("/forgebot/console"), link
                    pages.append(browser.get(link.replace("&amp;", "&")))
                assert all(page.status_code == 200 for page in pages), [(p.url, p.status_code) for p in pages]
                assert any(p.headers["content-type"].startswith("text/css") for p in pages)
                assert any(f"/forgebot/console/tasks/{tasks[0]}" == p.url.path for p in pages)
            signed = links.task_link(settings.console, tasks[1])  # as a status comment links it
            page = httpx.get(signed.replace("http://tools.example", proxy.url))
            assert page.status_code == 200 and 'href="/forgebot/console/static/console.css"' in page.text
