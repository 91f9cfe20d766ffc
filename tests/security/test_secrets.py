"""Webhook secrets and body reading, against the real receiver served by uvicorn on loopback:
blank secrets fail closed, GitLab's token is checked before the body is read, and a body that
does not arrive in time is refused with 408. Nothing refused is ever queued."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import redis
import uvicorn
from pydantic import SecretStr

from bot.tasks.inbox import Inbox
from bot.web.app import create_app
from foundation.settings import GitHubSettings, GitLabSettings, Settings
from tests.intake import deliveries
from tests.intake.payloads import github_comment, gitlab_note


@dataclass
class Receiver:
    url: str
    port: int
    server: uvicorn.Server


def _bound() -> socket.socket:
    """A loopback socket bound to a free port (port 0), handed to uvicorn: no other test can take the
    port between choosing and listening."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP: asyncio then turns Nagle off
    sock.bind(("127.0.0.1", 0))
    return sock


@pytest.fixture
def intake_settings(settings: Settings, redis_url: str) -> Settings:
    settings.redis_url = redis_url
    settings.body_timeout_seconds = 1.0
    return settings


def _serve(settings: Settings) -> Iterator[Receiver]:
    sock = _bound()
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    with _run(uvicorn.Server(config), sock) as receiver:
        yield receiver


@contextlib.contextmanager
def _run(server: uvicorn.Server, sock: socket.socket) -> Iterator[Receiver]:
    """Run a configured receiver on a thread, serving `sock`, until the caller is done with it."""
    port = server.config.port
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "receiver did not start"
        time.sleep(0.02)
    try:
        yield Receiver(f"http://127.0.0.1:{port}", port, server)
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture
def receiver(intake_settings: Settings) -> Iterator[Receiver]:
    yield from _serve(intake_settings)


def queued(redis_url: str) -> int:
    count: int = redis.Redis.from_url(redis_url).zcard("arq:queue")  # type: ignore[assignment]
    return count


def recorded(settings: Settings) -> int:
    async def count() -> int:
        inbox = await Inbox.open(sqlite_path=settings.inbox_path)
        try:
            return len(await inbox.tasks())
        finally:
            await inbox.close()

    return asyncio.run(count())


def _valid(forge: str) -> tuple[bytes, dict[str, str]]:
    if forge == "github":
        return deliveries.github(github_comment("/implement"), "issue_comment")
    return deliveries.gitlab(gitlab_note("/implement"), "Note Hook")


def _blank_signed(forge: str, blank: str) -> tuple[bytes, dict[str, str]]:
    """A delivery authenticated with the blank secret itself: what a stranger can forge."""
    body, headers = _valid(forge)
    if forge == "github":
        from bot.intake.webhooks import github_signature

        return body, headers | {"x-hub-signature-256": github_signature(blank.encode(), body)}
    # HTTP strips a header value's surrounding whitespace: a blank token arrives as none at all
    headers = {k: v for k, v in headers.items() if k != "x-gitlab-token"}
    return body, headers


def test_the_valid_delivery_is_accepted(receiver: Receiver, redis_url: str) -> None:
    """The control: the same deliveries with the real secret are queued, so the 401s below mean something."""
    for forge in ("gitlab", "github"):
        body, headers = _valid(forge)
        assert httpx.post(receiver.url + deliveries.path(forge, body), content=body, headers=headers).status_code == 202
    assert queued(redis_url) == 2


@pytest.mark.parametrize("blank", ["", " ", "\n", " \t\n"])
def test_blank_secret_in_settings_is_unset(blank: str) -> None:
    assert GitLabSettings(webhook_secret=SecretStr(blank)).webhook_secret is None
    assert GitHubSettings(webhook_secret=blank).webhook_secret is None  # type: ignore[arg-type]
    assert GitLabSettings(webhook_secret=SecretStr(" x ")).webhook_secret is not None


@pytest.mark.parametrize("blank", ["", " ", "\n"])
def test_blank_secret_file_is_unset(tmp_path: Path, blank: str) -> None:
    (tmp_path / "gitlab__webhook_secret").write_text(blank)
    (tmp_path / "github__webhook_secret").write_text(blank)
    loaded = Settings(_env_file=None, _secrets_dir=tmp_path)  # type: ignore[call-arg]
    assert loaded.gitlab.webhook_secret is None and loaded.github.webhook_secret is None


@pytest.mark.parametrize("forge", ["gitlab", "github"])
@pytest.mark.parametrize("blank", ["", "   ", "\t\n"])
@pytest.mark.parametrize("via", ["validated", "assigned"])
def test_blank_secret_refuses_every_delivery(
    intake_settings: Settings, redis_url: str, forge: str, blank: str, via: str
) -> None:
    """Validated: Settings normalises it to None. Assigned: set after validation, `_verify_*` still refuses."""
    if via == "validated":
        intake_settings.gitlab = GitLabSettings(url=intake_settings.gitlab.url, webhook_secret=SecretStr(blank))
        intake_settings.github = GitHubSettings(api_url=intake_settings.github.api_url, webhook_secret=SecretStr(blank))
    else:
        intake_settings.gitlab.webhook_secret = SecretStr(blank)
        intake_settings.github.webhook_secret = SecretStr(blank)
    for server in _serve(intake_settings):
        for delivery in (_valid(forge), _blank_signed(forge, blank), _blank_signed(forge, "")):
            body, headers = delivery
            response = httpx.post(server.url + deliveries.path(forge, body), content=body, headers=headers)
            assert response.status_code == 401, response.text
    assert queued(redis_url) == 0
    assert recorded(intake_settings) == 0


def _stalled(receiver: Receiver, forge: str, headers: dict[str, str], declared: int) -> bytes:
    """Send the headers and the first bytes of a `declared`-byte body, then stall; the answer."""
    body, _ = _valid(forge)
    hook = deliveries.path(forge, b"")
    lines = [f"POST {hook} HTTP/1.1", f"host: 127.0.0.1:{receiver.port}", f"content-length: {declared}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    with socket.create_connection(("127.0.0.1", receiver.port), timeout=10) as conn:
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body[:10])
        return conn.recv(65536)


def test_gitlab_wrong_token_is_refused_before_the_body_is_read(
    receiver: Receiver, intake_settings: Settings, redis_url: str
) -> None:
    """A 4 MiB body is declared and never sent; the answer is the 401, not the 408 a receiver that
    waited for the body would give at its body timeout."""
    intake_settings.body_timeout_seconds = 5.0
    _, headers = _valid("gitlab")
    answer = _stalled(receiver, "gitlab", headers | {"x-gitlab-token": "guess"}, 4 * 1024 * 1024 - 1)
    assert answer.startswith(b"HTTP/1.1 401"), answer
    assert queued(redis_url) == 0


@pytest.mark.parametrize("forge", ["gitlab", "github"])
def test_stalled_body_is_408(receiver: Receiver, intake_settings: Settings, redis_url: str, forge: str) -> None:
    _, headers = _valid(forge)
    answer = _stalled(receiver, forge, headers, 5000)
    assert answer.startswith(b"HTTP/1.1 408"), answer  # only the body timeout answers 408
    assert queued(redis_url) == 0
    assert recorded(intake_settings) == 0


def _now(offset_hours: float = 0.0) -> str:
    from datetime import UTC, datetime, timedelta

    return (datetime.now(UTC) - timedelta(hours=offset_hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _dated(forge: str, hours_ago: float | None) -> tuple[bytes, dict[str, str]]:
    """The /implement comment as captured (2015-2019 timestamps), or re-dated `hours_ago` hours back."""
    if forge == "github":
        payload = github_comment("/implement")
        if hours_ago is not None:
            for section in ("comment", "issue"):
                payload[section]["created_at"] = payload[section]["updated_at"] = _now(hours_ago)
        return deliveries.github(payload, "issue_comment")
    payload = gitlab_note("/implement")
    if hours_ago is not None:
        payload["object_attributes"]["created_at"] = payload["object_attributes"]["updated_at"] = _now(hours_ago)
    return deliveries.gitlab(payload, "Note Hook")


@pytest.mark.parametrize("forge", ["gitlab", "github"])
def test_replayed_old_event_is_ignored_and_not_queued(
    intake_settings: Settings, redis_url: str, forge: str
) -> None:
    """A captured delivery replayed under a fresh delivery id: authentic, but its own timestamps are
    years old, so it is 200 `ignored` and never becomes a task; a fresh one still is."""
    intake_settings.intake.max_event_age_hours = 24.0
    for server in _serve(intake_settings):
        for hours_ago in (None, 25.0):
            body, headers = _dated(forge, hours_ago)
            response = httpx.post(server.url + deliveries.path(forge, body), content=body, headers=headers)
            assert (response.status_code, response.json()["result"]) == (200, "ignored"), (hours_ago, response.text)
        assert queued(redis_url) == 0
        assert recorded(intake_settings) == 0
        body, headers = _dated(forge, 1.0)
        response = httpx.post(server.url + deliveries.path(forge, body), content=body, headers=headers)
        assert response.status_code == 202, response.text
    assert queued(redis_url) == 1
    assert recorded(intake_settings) == 1


@pytest.mark.parametrize("forge", ["gitlab", "github"])
def test_replay_guard_is_on_by_default(intake_settings: Settings, redis_url: str, forge: str) -> None:
    """Out of the box (no FORGEBOT_INTAKE__MAX_EVENT_AGE_HOURS), a captured delivery four days old is
    ignored and a fresh one is queued; the default stays below the dedupe window."""
    defaults = Settings(_env_file=None, _secrets_dir=None)  # type: ignore[call-arg]
    assert defaults.intake.max_event_age_hours == 72.0 < defaults.intake.dedupe_hours
    intake_settings.intake = intake_settings.intake.model_copy(
        update={"max_event_age_hours": defaults.intake.max_event_age_hours})
    for server in _serve(intake_settings):
        for hours_ago in (None, 96.0):
            body, headers = _dated(forge, hours_ago)
            response = httpx.post(server.url + deliveries.path(forge, body), content=body, headers=headers)
            assert (response.status_code, response.json()["result"]) == (200, "ignored"), hours_ago
        assert queued(redis_url) == 0
        body, headers = _dated(forge, 2.0)
        assert httpx.post(server.url + deliveries.path(forge, body), content=body, headers=headers).status_code == 202
    assert queued(redis_url) == 1


def test_replay_guard_is_off_at_zero(receiver: Receiver, redis_url: str) -> None:
    """`0` turns it off (the test settings do, for the years-old shared samples)."""
    body, headers = _dated("github", None)
    assert httpx.post(receiver.url + deliveries.path("github", body), content=body, headers=headers).status_code == 202
    assert queued(redis_url) == 1


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("2019-05-15T15:20:18Z", "2019-05-15T15:20:18+00:00"),
        ("2019-06-05T14:32:20.211Z", "2019-06-05T14:32:20.211000+00:00"),
        ("2015-05-17 17:06:40 UTC", "2015-05-17T17:06:40+00:00"),
        ("2024-01-02T03:04:05+02:00", "2024-01-02T03:04:05+02:00"),
    ],
)
def test_forge_timestamps_are_understood(text: str, iso: str) -> None:
    from bot.intake.webhooks import _parse_time

    parsed = _parse_time(text)
    assert parsed is not None and parsed.isoformat() == iso
    assert _parse_time("yesterday") is None and _parse_time(17) is None


def test_receiver_server_limits_connections_and_keep_alive(intake_settings: Settings) -> None:
    """`forgebot web`/`serve` build uvicorn with the connection limit and keep-alive from settings,
    and past the limit a real connection gets 503 instead of a slot."""
    from bot.cli.serve import _server

    intake_settings.max_connections = 2  # uvicorn counts the asking connection too
    intake_settings.keep_alive_seconds = 2
    sock = _bound()
    server = _server(intake_settings, "127.0.0.1", sock.getsockname()[1])
    assert (server.config.limit_concurrency, server.config.timeout_keep_alive) == (2, 2)
    with _run(server, sock) as receiver:
        holder = socket.create_connection(("127.0.0.1", receiver.port), timeout=10)  # takes the one slot
        try:
            assert _healthz_becomes(receiver, 503)
        finally:
            holder.close()
        assert _healthz_becomes(receiver, 200)


def _healthz_becomes(receiver: Receiver, status: int) -> bool:
    """Wait on the condition (not a fixed sleep): the receiver's /healthz answers `status` within 5 s."""
    deadline = time.monotonic() + 5
    with httpx.Client() as http:  # one client: each `httpx.get` would load the CA bundle again
        while time.monotonic() < deadline:
            if http.get(f"{receiver.url}/healthz").status_code == status:
                return True
            time.sleep(0.05)
    return False
