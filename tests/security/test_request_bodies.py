"""Every request body the web app reads is bounded in size and time; operator-token guesses are throttled.

Over a real uvicorn serving `create_app` (what `forgebot web` runs), with raw sockets so a body can be
declared huge, streamed without end, or stalled. Before: `POST /console/login` read its body whole
(no size cap, no time limit: a 300 MB POST grew the web process by 570 MB), and guesses of the
operator token were unlimited (300 in 2 s) at the form and as `Authorization: Bearer`.
"""

from __future__ import annotations

import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bot.web.app import create_app
from foundation.settings import ConsoleSettings, Settings
from tests.console.test_access import _Queue  # the console never enqueues
from tests.fakes.server import ServerThread, free_port, serving

OPERATOR = "operator-token-b1d3f5a7c9e1b3d5f7a9c1e3"
ROOT = Path(__file__).resolve().parents[2]


async def _later(request: Request) -> Response:
    """A route added after the limits were written, reading its body the plain Starlette way."""
    return Response(str(len(await request.body())))


@pytest.fixture
def web(settings: Settings) -> Iterator[ServerThread]:
    settings.body_timeout_seconds = 2.0
    settings.console = ConsoleSettings(operator_token=SecretStr(OPERATOR), failed_logins_per_client=5,
                                       failed_logins_overall=12)
    app = create_app(settings, queue=_Queue())
    app.router.routes.append(Route("/later", _later, methods=["POST"]))
    with serving(app) as server:
        yield server


def _connect(server: ServerThread) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.setblocking(False)
    return sock


def _answer(sock: socket.socket, within: float) -> bytes:
    deadline = time.monotonic() + within
    data = b""
    while time.monotonic() < deadline and b"\r\n\r\n" not in data:
        ready, _, _ = select.select([sock], [], [], 0.1)
        if ready:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return data


def _stream(server: ServerThread, path: str, total: int) -> tuple[int, bytes]:
    """POST `total` bytes as a chunked body without declaring its size; how much was sent before
    the server answered (it stops reading once it answers), and the answer's head."""
    sock = _connect(server)
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n".encode())
    chunk = b"%x\r\n" % 65536 + b"t" * 65536 + b"\r\n"
    sent, pending = 0, b""
    deadline = time.monotonic() + 60
    while sent < total and time.monotonic() < deadline:
        readable, writable, _ = select.select([sock], [sock], [], 0.5)
        if readable:
            break
        if writable:
            pending = pending or chunk
            try:
                count = sock.send(pending)
            except (BlockingIOError, ConnectionError):
                break
            pending = pending[count:]
            sent += count
    if sent >= total:
        sock.sendall(b"0\r\n\r\n")
    answer = _answer(sock, 10)
    sock.close()
    return sent, answer


def test_a_declared_huge_login_body_is_refused_before_a_byte_is_read(web: ServerThread) -> None:
    sock = _connect(web)
    sock.sendall(b"POST /console/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                 b"Content-Length: 314572800\r\n\r\n")  # 300 MB declared, none sent
    answer = _answer(sock, 5)
    sock.close()
    # a server that waited for the body would answer 408 at its body timeout, not 413
    assert answer.startswith(b"HTTP/1.1 413"), answer


@pytest.mark.parametrize("path", ["/console/login", "/later"])
def test_a_streamed_body_without_end_is_cut_at_the_limit(web: ServerThread, settings: Settings, path: str) -> None:
    sent, answer = _stream(web, path, 64 * 1024 * 1024)
    assert answer.startswith(b"HTTP/1.1 413"), answer
    # the server answered long before the 64 MiB were sent: it read up to its limit, not the body
    assert sent < settings.max_body_bytes + 8 * 1024 * 1024, sent


@pytest.mark.parametrize("path", ["/console/login", "/later"])
def test_a_stalled_body_is_408(web: ServerThread, path: str) -> None:
    sock = _connect(web)
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                 "Content-Length: 1000\r\n\r\ntoken=".encode())  # within every limit, never completed
    answer = _answer(sock, 8)
    sock.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer  # only the body timeout answers 408


def _login(server: ServerThread, token: str, client: str = "203.0.113.7") -> httpx.Response:
    # uvicorn takes the client's address from X-Forwarded-For when the peer is a trusted proxy
    # (loopback, its default): the way a deployment behind an ingress tells clients apart
    return httpx.post(server.url + "/console/login", data={"token": token}, headers={"x-forwarded-for": client},
                      follow_redirects=False, timeout=10)


def test_wrong_login_tokens_are_throttled_per_client(web: ServerThread) -> None:
    answers = [_login(web, f"guess-{n}").status_code for n in range(8)]
    assert answers[:5] == [401] * 5 and answers[5:] == [429] * 3, answers
    refused = _login(web, OPERATOR)  # even the right token: a throttled guess is not compared
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert "Too many wrong tokens" in refused.text
    assert _login(web, OPERATOR, client="198.51.100.9").status_code == 303  # another client signs in


def test_guesses_from_many_clients_meet_the_overall_ceiling(web: ServerThread) -> None:
    answers = [_login(web, "guess", client=f"192.0.2.{n}").status_code for n in range(15)]
    assert answers[:12] == [401] * 12 and answers[12:] == [429] * 3, answers


def test_wrong_bearer_tokens_are_throttled(web: ServerThread) -> None:
    def list_tasks(token: str) -> int:
        headers = {"authorization": f"Bearer {token}", "x-forwarded-for": "203.0.113.50"}
        return httpx.get(web.url + "/console/tasks", headers=headers, timeout=10).status_code

    answers = [list_tasks(f"guess-{n}") for n in range(7)]
    assert answers[:5] == [303] * 5 and answers[5:] == [429] * 2, answers  # 303: to the login page
    assert list_tasks(OPERATOR) == 429


def test_a_weak_operator_token_stops_the_service_at_start_up(tmp_path: Path, redis_url: str) -> None:
    # everything else a web process needs is there (a live Redis): only the token can stop it
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "FORGEBOT_DATA_DIR": str(tmp_path / "data"),
           "FORGEBOT_CONSOLE__OPERATOR_TOKEN": "hunter2", "FORGEBOT_REDIS_URL": redis_url,
           "FORGEBOT_PORT": str(free_port())}
    done = subprocess.run([sys.executable, "-m", "bot", "web"], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode != 0
    assert "FORGEBOT_CONSOLE__OPERATOR_TOKEN" in done.stderr and "too weak" in done.stderr, done.stderr
    assert "hunter2" not in done.stderr + done.stdout  # the refused secret is not printed
