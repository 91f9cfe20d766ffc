"""The bot knows itself from its token: `serve`, `web` and `worker` ask the forge
who the token is, so the bot's own comments never trigger it even when neither
FORGEBOT_GITLAB__BOT_USER_ID nor FORGEBOT_GITHUB__BOT_LOGIN is set. They ask in the background
(`bot.intake.identity.Identities`): starting never waits for the forge, and the worker takes no job until
the answer is in (tests/firstday/test_service_start.py runs that through `forgebot serve`)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
import redis
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pydantic import SecretStr

import bot.cli.serve
from bot.cli.main import main
from bot.intake.authz import Authorizer
from bot.intake.identity import Identities
from bot.tasks.events import parse_github, parse_gitlab
from bot.web.app import create_app
from bot.web.readiness import readiness
from bot.worker.jobs import build_worker
from foundation.forge import AccessLevel
from foundation.settings import Settings, TriggerSettings
from tests.conftest import GITHUB_SECRET, GITHUB_TOKEN, GITLAB_SECRET, GITLAB_TOKEN
from tests.fakes.forge import FakeForge
from tests.fakes.forge_http import FakeForgeState
from tests.fakes.server import serving
from tests.intake import deliveries
from tests.intake.payloads import github_comment, gitlab_note


def _bot_comment(forge: str, fake_forge: FakeForgeState) -> tuple[bytes, dict[str, str]]:
    """A `/implement` comment written by the bot's own account (as the fake forge's `/user` names it)."""
    if forge == "gitlab":
        payload = gitlab_note("/implement")
        payload["user"].update(id=fake_forge.bot_user_id, username=fake_forge.bot_user)
        payload["object_attributes"]["author_id"] = fake_forge.bot_user_id
        return deliveries.gitlab(payload, "Note Hook")
    payload = github_comment("/implement")
    payload["comment"]["user"].update(login=fake_forge.bot_user, id=fake_forge.bot_user_id)
    payload["sender"].update(login=fake_forge.bot_user, id=fake_forge.bot_user_id)
    return deliveries.github(payload, "issue_comment")


def _env(monkeypatch: pytest.MonkeyPatch, settings: Settings, redis_url: str, tmp_path: Any) -> None:
    for name, value in {
        "FORGEBOT_DATA_DIR": str(tmp_path / "web"),
        "FORGEBOT_REDIS_URL": redis_url,
        "FORGEBOT_GITLAB__URL": settings.gitlab.url,
        "FORGEBOT_GITLAB__TOKEN": GITLAB_TOKEN,
        "FORGEBOT_GITLAB__WEBHOOK_SECRET": GITLAB_SECRET,
        "FORGEBOT_GITHUB__API_URL": settings.github.api_url,
        "FORGEBOT_GITHUB__TOKEN": GITHUB_TOKEN,
        "FORGEBOT_GITHUB__WEBHOOK_SECRET": GITHUB_SECRET,
        "FORGEBOT_INTAKE__MAX_EVENT_AGE_HOURS": "0",  # the samples are years old
    }.items():
        monkeypatch.setenv(name, value)


@pytest.mark.parametrize("command", ["web", "worker", "serve"])
def test_no_service_waits_for_the_forge_to_start(
    monkeypatch: pytest.MonkeyPatch, settings: Settings, redis_url: str, fake_forge: FakeForgeState, tmp_path: Any,
    command: str,
) -> None:
    """`forgebot <command>` hands its settings to the runner at once: the identity is the runner's business."""
    _env(monkeypatch, settings, redis_url, tmp_path)
    started: list[Settings] = []
    runner = {"web": "run_web", "worker": "run_worker", "serve": "run_serve"}[command]
    monkeypatch.setattr(bot.cli.serve, runner, lambda s, *args: started.append(s) or 0)  # serve returns its exit code
    assert main([command]) == 0 and len(started) == 1
    assert fake_forge.requests_to("GET", "/user") == 0


def test_the_receiver_learns_the_bot_while_it_serves_and_then_ignores_its_own_comments(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState
) -> None:
    settings.redis_url = redis_url
    learning = Identities(settings)
    with serving(create_app(settings, identities=learning)) as receiver:
        deadline = time.monotonic() + 30
        while learning.pending():
            assert time.monotonic() < deadline, learning.problems
            time.sleep(0.02)
        assert (settings.gitlab.bot_user_id, settings.github.bot_login) == (fake_forge.bot_user_id, fake_forge.bot_user)
        for forge in ("gitlab", "github"):
            body, headers = _bot_comment(forge, fake_forge)
            response = httpx.post(receiver.url + deliveries.path(forge, body), content=body, headers=headers)
            assert (response.status_code, response.json()["result"]) == (200, "ignored"), forge
            # the control: the same comment by a person is a trigger
            person = deliveries.github(github_comment("/implement"), "issue_comment") if forge == "github" else \
                deliveries.gitlab(gitlab_note("/implement"), "Note Hook")
            assert httpx.post(receiver.url + deliveries.path(forge, person[0]), content=person[0],
                              headers=person[1]).status_code == 202
    assert redis.Redis.from_url(redis_url).zcard("arq:queue") == 2  # the two people's comments only
    assert fake_forge.requests_to("GET", "/gitlab/api/v4/user") == 1
    assert fake_forge.requests_to("GET", "/github/user") == 1


async def test_the_worker_learns_the_bot_before_its_first_job(settings: Settings, redis_url: str,
                                                               fake_forge: FakeForgeState) -> None:
    worker = build_worker(settings, redis_url, burst=True, handle_signals=False, identities=Identities(settings))
    try:
        await worker.main()
    finally:
        await worker.close()
    assert (settings.gitlab.bot_user_id, settings.github.bot_login) == (fake_forge.bot_user_id, fake_forge.bot_user)


def test_the_worker_refuses_a_bot_event_already_queued(settings: Settings, fake_forge: FakeForgeState) -> None:
    """An event of the bot's that reached the queue anyway (queued before the identity was known) is
    refused by the worker's authorizer, which uses the learned identity too."""
    asyncio.run(Identities(settings).learn())
    memory = FakeForge()
    memory.access[("5", fake_forge.bot_user_id)] = AccessLevel.MAINTAINER
    payload = gitlab_note("/implement")
    payload["user"].update(id=fake_forge.bot_user_id, username=fake_forge.bot_user)
    event = parse_gitlab({"x-gitlab-event": "Note Hook"}, payload, "gitlab:b1", TriggerSettings())  # parsed unaware
    assert event is not None
    decision = asyncio.run(Authorizer(settings).decide(memory, event))
    assert (decision.allowed, decision.reason) == (False, "the bot's own event")
    github = github_comment("/implement")
    github["comment"]["user"]["login"] = github["sender"]["login"] = fake_forge.bot_user
    assert parse_github({"x-github-event": "issue_comment"}, github, "github:b1", TriggerSettings(),
                        settings.github.bot_login) is None


def test_configured_identities_are_kept(settings: Settings, fake_forge: FakeForgeState) -> None:
    settings.gitlab.bot_user_id, settings.github.bot_login = 77, "pinned[bot]"
    asyncio.run(Identities(settings).learn())
    assert (settings.gitlab.bot_user_id, settings.github.bot_login) == (77, "pinned[bot]")
    assert fake_forge.requests_to("GET", "/user") == 0


def test_a_github_app_learns_its_bot_login_from_the_app(settings: Settings, fake_forge: FakeForgeState) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    fake_forge.app_key = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    fake_forge.bot_user = "forgebot-app[bot]"
    settings.github.token = None
    settings.github.app_id = 12
    settings.github.private_key = SecretStr(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode())
    asyncio.run(Identities(settings).learn())
    assert settings.github.bot_login == "forgebot-app[bot]"


async def test_a_refused_token_is_asked_again_and_named_in_readyz(
    settings: Settings, fake_forge: FakeForgeState
) -> None:
    """A revoked GitLab token: the service keeps running and keeps asking (a token fixed in the forge
    is picked up), `/readyz` names the forge and its answer, and the bot id stays unknown (the worker
    takes no job meanwhile: tests/firstday/test_service_start.py)."""
    settings.gitlab.max_retries = 0
    fake_forge.tokens = {GITHUB_TOKEN}  # the GitLab token is refused (401)
    learning = Identities(settings, first_pause=0.01, max_pause=0.05)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(learning.learn(), timeout=1.0)
    assert settings.gitlab.bot_user_id is None and settings.github.bot_login == fake_forge.bot_user
    assert fake_forge.requests_to("GET", "/gitlab/api/v4/user") >= 3
    _, body = readiness(settings, [], learning, True, True)
    (gap,) = body["missing"]
    assert gap.startswith("gitlab: the forge has not said who the bot is") and "401" in gap, gap
    fake_forge.tokens = set()  # the token is fixed on the forge
    await asyncio.wait_for(learning.learn(), timeout=10)
    assert settings.gitlab.bot_user_id == fake_forge.bot_user_id
