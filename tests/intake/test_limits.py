"""Body limits on a streamed body, and fuzzing: no input makes the receiver answer 500."""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from bot.intake.webhooks import Metrics
from bot.tasks.events import ForgeEvent, PayloadError, parse_github, parse_gitlab
from bot.tasks.inbox import Inbox
from bot.web.app import create_app
from foundation.settings import Settings, TriggerSettings
from tests.intake import deliveries
from tests.intake.payloads import github_comment, gitlab_note


class RecordingQueue:
    """A JobQueue that keeps what it was given (the receiver's contract, without Redis)."""

    def __init__(self) -> None:
        self.events: list[str] = []

    async def enqueue(self, event: Any) -> bool:
        self.events.append(event.delivery_id)
        return True

    async def ping(self) -> bool:
        return True

    async def close(self) -> None:
        return None


async def _call(
    settings: Settings, inbox: Inbox, path: str, headers: dict[str, str], chunks: list[bytes]
) -> tuple[int, int]:
    """Send `chunks` as a streamed request body; return (status, how many chunks the app pulled)."""
    app = create_app(settings)
    state = {
        "settings": settings,
        "queue": RecordingQueue(),
        "inbox": inbox,
        "metrics": Metrics.create(CollectorRegistry()),
    }
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
        "state": state,
    }
    pulled = 0
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal pulled
        pulled += 1
        if pulled > len(chunks):
            return {"type": "http.disconnect"}
        return {"type": "http.request", "body": chunks[pulled - 1], "more_body": pulled < len(chunks)}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    if any(b"delivery not understood" in m.get("body", b"") for m in sent):
        raise AssertionError("the receiver's last-resort handler caught an exception")
    return int(sent[0]["status"]), pulled


@pytest.fixture
async def inbox(tmp_path: Path) -> Any:
    opened = await Inbox.open(sqlite_path=tmp_path / "inbox.sqlite")
    yield opened
    await opened.close()


async def test_streamed_body_over_the_limit_is_413_without_reading_the_rest(settings: Settings, inbox: Inbox) -> None:
    settings.max_body_bytes = 64 * 1024
    token = deliveries.secret("gitlab", 5)
    headers = {"content-type": "application/json", "x-gitlab-event": "Note Hook", "x-gitlab-token": token}
    chunks = [b" " * (16 * 1024)] * 1000  # 16 MiB offered without a Content-Length
    status, pulled = await _call(settings, inbox, "/webhooks/gitlab/5", headers, chunks)
    assert status == 413
    assert pulled == 5  # 4 chunks fit in 64 KiB; the 5th crosses the limit and nothing after it is read
    assert await inbox.deliveries() == []


async def test_declared_length_over_the_limit_is_413_before_reading(settings: Settings, inbox: Inbox) -> None:
    settings.max_body_bytes = 1024
    body, headers = deliveries.gitlab(gitlab_note("/implement"), "Note Hook")
    hook = deliveries.path("gitlab", body)
    status, pulled = await _call(settings, inbox, hook, headers | {"content-length": "999999"}, [body])
    assert (status, pulled) == (413, 0)


async def test_streamed_body_under_the_limit_is_read_whole(settings: Settings, inbox: Inbox) -> None:
    body, headers = deliveries.gitlab(gitlab_note("/implement"), "Note Hook")
    hook = deliveries.path("gitlab", body)
    status, _ = await _call(settings, inbox, hook, headers, [body[:10], body[10:100], body[100:]])
    assert status == 202


# --- fuzzing ------------------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=25,
)
GITLAB_EVENTS = st.sampled_from(["Issue Hook", "Confidential Issue Hook", "Note Hook", "Confidential Note Hook", "x"])
GITHUB_EVENTS = st.sampled_from(["issues", "issue_comment", "ping", "pull_request", ""])


def _mutations(base: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """The real payload with one top-level or nested value replaced by arbitrary JSON."""

    def mutate(path: list[str], value: Any) -> dict[str, Any]:
        payload: dict[str, Any] = json.loads(json.dumps(base))
        node = payload
        for key in path[:-1]:
            node = node.setdefault(key, {}) if isinstance(node.get(key), dict) else node
        node[path[-1]] = value
        return payload

    keys = st.lists(st.sampled_from(sorted(_all_keys(base))), min_size=1, max_size=3)
    return st.builds(mutate, keys, JSON)


def _all_keys(payload: Any) -> set[str]:
    if isinstance(payload, dict):
        return set(payload) | {k for value in payload.values() for k in _all_keys(value)}
    return set()


def _accepted(event: ForgeEvent, forge: str, repo: Any, user: Any, number: Any) -> None:
    """What an accepted event must be, whatever the payload: the payload's own facts (repository id,
    actor, item number) and the same event after the queue's JSON round trip."""
    assert event.forge == forge and event.delivery_id == f"{forge}:f"
    assert event.repo_id == int(repo["id"]) and event.number == int(number)
    login = user["login" if forge == "github" else "username"]
    assert event.actor.id == int(user["id"]) and event.actor.username == str(login)
    assert ForgeEvent.model_validate_json(event.model_dump_json()) == event


def _gitlab(event: str, payload: dict[str, Any]) -> ForgeEvent | None:
    return parse_gitlab({"x-gitlab-event": event}, payload, "gitlab:f", TriggerSettings(), bot_user_id=3)


def _github(event: str, payload: dict[str, Any]) -> ForgeEvent | None:
    return parse_github({"x-github-event": event}, payload, "github:f", TriggerSettings(), bot_login="bot")


def test_the_fuzzed_payloads_are_triggers_before_mutation() -> None:
    """The fuzz below starts from payloads the parsers accept, so their properties are exercised."""
    assert _gitlab("Note Hook", gitlab_note("/implement")) is not None
    assert _github("issue_comment", github_comment("/review", on="change")) is not None


@hyp_settings(max_examples=120, deadline=None)
@given(event=GITLAB_EVENTS, payload=_mutations(gitlab_note("/implement")) | st.dictionaries(st.text(), JSON))
def test_gitlab_parser_accepts_only_well_formed_events(event: str, payload: dict[str, Any]) -> None:
    try:
        parsed = _gitlab(event, payload)
    except PayloadError:
        return
    if parsed is not None:
        section = "object_attributes" if "Issue" in event else ("issue" if parsed.target == "issue"
                                                                else "merge_request")
        _accepted(parsed, "gitlab", payload["project"], payload["user"], payload[section]["iid"])
        assert parsed.actor.id != 3  # never the bot's own


@hyp_settings(max_examples=120, deadline=None)
@given(
    event=GITHUB_EVENTS, payload=_mutations(github_comment("/review", on="change")) | st.dictionaries(st.text(), JSON)
)
def test_github_parser_accepts_only_well_formed_events(event: str, payload: dict[str, Any]) -> None:
    try:
        parsed = _github(event, payload)
    except PayloadError:
        return
    if parsed is not None:
        user = payload["comment"]["user"] if event == "issue_comment" else payload["sender"]
        _accepted(parsed, "github", payload["repository"], user, payload["issue"]["number"])
        assert parsed.actor.username.lower() != "bot"  # never the bot's own


@hyp_settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    forge=st.sampled_from(["gitlab", "github"]),
    body=st.binary(max_size=300) | JSON.map(lambda v: json.dumps(v).encode()),
    headers=st.dictionaries(
        st.sampled_from(
            [
                "content-type",
                "x-github-event",
                "x-gitlab-event",
                "idempotency-key",
                "x-github-delivery",
                "content-length",
                "x-hub-signature-256",
            ]
        ),
        st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40),
    ),
)
async def test_receiver_never_answers_500(
    settings: Settings, inbox: Inbox, forge: str, body: bytes, headers: dict[str, str]
) -> None:
    signed = (
        deliveries.github(body, "issue_comment")[1] if forge == "github" else deliveries.gitlab(body, "Note Hook")[1]
    )
    status, _ = await _call(settings, inbox, deliveries.path(forge, body), signed | headers, [body])
    assert status < 500
