"""Per-project webhook secrets against the real receiver served by uvicorn.

Each project's hook is `/webhooks/{forge}/{id}` with its own secret, HMAC(master, "forge:id"); the
payload must name that same project. A maintainer knows their own project's secret and can forge
nothing for another; the master secret itself authenticates no project URL; the project-less
URLs fail closed unless a GitHub App is configured (its own secret) or `intake.unscoped_hooks`
is set for a migration. `forgebot hooks --register` saves each project's URL and secret through
the forge API, and a delivery signed as the forge would sign it is then accepted.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pydantic import SecretStr

from bot.cli.main import main
from bot.intake.webhooks import github_signature, project_secret
from bot.tasks.inbox import Inbox
from bot.web.app import create_app
from foundation.settings import Settings
from tests.conftest import GITHUB_SECRET, GITHUB_TOKEN, GITLAB_SECRET, GITLAB_TOKEN
from tests.fakes.forge_http import FakeForgeState, Fault
from tests.fakes.server import ServerThread, serving
from tests.intake import deliveries
from tests.intake.payloads import github_comment, gitlab_note, serve_samples

A = {"gitlab": 5, "github": 186853002}  # Mallory's project: the samples'
B = {"gitlab": 1, "github": 4242}  # the victim's


@pytest.fixture
def receiver(settings: Settings, redis_url: str) -> Iterator[ServerThread]:
    settings.redis_url = redis_url
    with serving(create_app(settings)) as server:
        yield server


def queued(redis_url: str) -> int:
    return int(redis.Redis.from_url(redis_url).zcard("arq:queue"))  # type: ignore[arg-type]


def recorded(settings: Settings) -> int:
    async def count() -> int:
        inbox = await Inbox.open(sqlite_path=settings.inbox_path)
        try:
            return len(await inbox.deliveries())
        finally:
            await inbox.close()

    return asyncio.run(count())


def _payload(forge: str, project_id: int) -> dict[str, Any]:
    """An `/implement` comment on project `project_id` (one comment id per project)."""
    if forge == "gitlab":
        payload = gitlab_note("/implement", id=700 + project_id)
        payload["project"]["id"] = payload["project_id"] = project_id
        return payload
    payload = github_comment("/implement", id=700 + project_id)
    payload["repository"]["id"] = project_id
    return payload


def _signed(forge: str, payload: dict[str, Any], key: str) -> tuple[bytes, dict[str, str]]:
    body, headers = deliveries.gitlab(payload, "Note Hook") if forge == "gitlab" else deliveries.github(
        payload, "issue_comment")
    if forge == "gitlab":
        return body, headers | {"x-gitlab-token": key}
    return body, headers | {"x-hub-signature-256": github_signature(key.encode(), body)}


def _post(server: ServerThread, path: str, delivery: tuple[bytes, dict[str, str]]) -> httpx.Response:
    body, headers = delivery
    return httpx.post(server.url + path, content=body, headers=headers)


@pytest.mark.parametrize("forge", ["gitlab", "github"])
def test_one_projects_secret_forges_nothing_for_another(
    receiver: ServerThread, settings: Settings, redis_url: str, forge: str
) -> None:
    mallory = deliveries.secret(forge, A[forge])
    master = GITLAB_SECRET if forge == "gitlab" else GITHUB_SECRET
    victim = _payload(forge, B[forge])
    attempts = {
        "B's payload at A's URL, A's secret": (f"/webhooks/{forge}/{A[forge]}", _signed(forge, victim, mallory)),
        "B's payload at B's URL, A's secret": (f"/webhooks/{forge}/{B[forge]}", _signed(forge, victim, mallory)),
        "the master secret at B's URL": (f"/webhooks/{forge}/{B[forge]}", _signed(forge, victim, master)),
        "the master secret, no project URL": (f"/webhooks/{forge}", _signed(forge, victim, master)),
        "A's secret, no project URL": (f"/webhooks/{forge}", _signed(forge, victim, mallory)),
    }
    for case, (path, delivery) in attempts.items():
        response = _post(receiver, path, delivery)
        assert response.status_code == 401, (case, response.text)
    assert queued(redis_url) == 0 and recorded(settings) == 0
    # the controls: each project's own secret at its own URL is accepted
    own = _signed(forge, victim, deliveries.secret(forge, B[forge]))
    assert _post(receiver, f"/webhooks/{forge}/{B[forge]}", own).status_code == 202
    assert _post(receiver, f"/webhooks/{forge}/{A[forge]}", _signed(forge, _payload(forge, A[forge]), mallory)
                 ).status_code == 202
    assert queued(redis_url) == 2


def test_derived_secrets_differ_per_project_and_forge() -> None:
    secrets = {project_secret(b"master", forge, n) for forge in ("gitlab", "github") for n in (1, 2, 10, 12)}  # type: ignore[arg-type]
    assert len(secrets) == 8 and all(len(s) == 64 for s in secrets)
    assert project_secret(b"master", "gitlab", 1) != project_secret(b"other", "gitlab", 1)


@pytest.mark.parametrize("forge", ["gitlab", "github"])
def test_unscoped_urls_accept_the_master_secret_only_when_migrating(
    settings: Settings, redis_url: str, forge: str
) -> None:
    settings.redis_url = redis_url
    settings.intake.unscoped_hooks = True
    master = GITLAB_SECRET if forge == "gitlab" else GITHUB_SECRET
    with serving(create_app(settings)) as server:
        assert _post(server, f"/webhooks/{forge}", _signed(forge, _payload(forge, B[forge]), master)).status_code == 202
        wrong = _signed(forge, _payload(forge, B[forge]), deliveries.secret(forge, B[forge]))
        assert _post(server, f"/webhooks/{forge}", wrong).status_code == 401  # a project secret is not the master
    assert queued(redis_url) == 1


def _app_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def test_github_app_deliveries_keep_the_app_secret(settings: Settings, redis_url: str) -> None:
    settings.redis_url = redis_url
    settings.github.app_id, settings.github.private_key = 1, SecretStr(_app_key())
    payload = _payload("github", B["github"]) | {"installation": {"id": 77}}
    with serving(create_app(settings)) as server:
        assert _post(server, "/webhooks/github", _signed("github", payload, GITHUB_SECRET)).status_code == 202
        forged = _signed("github", payload, deliveries.secret("github", A["github"]))
        assert _post(server, "/webhooks/github", forged).status_code == 401
    assert queued(redis_url) == 1


def _cli_env(monkeypatch: pytest.MonkeyPatch, settings: Settings, tmp_path: Any) -> None:
    env = {
        "FORGEBOT_DATA_DIR": str(tmp_path / "cli"),
        "FORGEBOT_GITLAB__URL": settings.gitlab.url,
        "FORGEBOT_GITLAB__TOKEN": GITLAB_TOKEN,
        "FORGEBOT_GITLAB__WEBHOOK_SECRET": GITLAB_SECRET,
        "FORGEBOT_GITHUB__API_URL": settings.github.api_url,
        "FORGEBOT_GITHUB__TOKEN": GITHUB_TOKEN,
        "FORGEBOT_GITHUB__WEBHOOK_SECRET": GITHUB_SECRET,
        "FORGEBOT_GITHUB__MAX_RETRIES": "0",
        "FORGEBOT_INTAKE__ALLOWED_PROJECTS": json.dumps(["gitlab-org/gitlab-test", "1", "Codertocat/Hello-World"]),
        "FORGEBOT_INTAKE__PUBLIC_URL": "https://bot.example.org/",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def test_forgebot_hooks_registers_each_projects_url_and_secret_and_the_forge_then_gets_in(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], settings: Settings, redis_url: str,
    fake_forge: FakeForgeState, tmp_path: Any,
) -> None:
    serve_samples(fake_forge, settings)
    _cli_env(monkeypatch, settings, tmp_path)
    assert main(["hooks", "--json"]) == 0  # prints only
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {(p["forge"], p["url"]) for p in printed} == {
        ("gitlab", "https://bot.example.org/webhooks/gitlab/5"),
        ("gitlab", "https://bot.example.org/webhooks/gitlab/1"),
        ("github", "https://bot.example.org/webhooks/github/186853002"),
    }
    assert {p["state"] for p in printed} == {"missing"}
    assert not any(fake_forge.hooks.values())
    for _ in range(2):  # registering again updates the same hooks
        assert main(["hooks", "--register", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["registered"] for line in lines] == ["created"] * 3 + ["updated"] * 3
    saved = {(forge, project): [(h.url, h.secret, h.events) for h in hooks]
             for (forge, project), hooks in fake_forge.hooks.items()}
    assert saved[("gitlab", "5")] == [("https://bot.example.org/webhooks/gitlab/5", deliveries.secret("gitlab", 5),
                                       ["confidential_issues_events", "confidential_note_events", "issues_events",
                                        "note_events"])]
    assert saved[("github", "186853002")] == [("https://bot.example.org/webhooks/github/186853002",
                                               deliveries.secret("github", 186853002), ["issues", "issue_comment"])]
    # the forge delivers with the secret it was given, to the path it was given: accepted
    settings.redis_url = redis_url
    with serving(create_app(settings)) as server:
        for (forge, project), hooks in fake_forge.hooks.items():
            path = hooks[0].url.removeprefix("https://bot.example.org")
            delivery = _signed(forge, _payload(forge, int(project)), hooks[0].secret)
            assert _post(server, path, delivery).status_code == 202, (forge, project)


def test_forgebot_hooks_says_which_address_did_not_answer(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], settings: Settings, tmp_path: Any,
) -> None:
    """A forge that cannot be reached: each project's line said "gitlab: ConnectionError", naming neither
    the address nor the setting; it now says both, as `forgebot check` does."""
    from tests.fakes.server import free_port

    _cli_env(monkeypatch, settings, tmp_path)
    closed = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("FORGEBOT_GITLAB__URL", closed)
    monkeypatch.setenv("FORGEBOT_GITLAB__MAX_RETRIES", "0")
    main(["hooks", "--forge", "gitlab", "group/app"])
    assert capsys.readouterr().err.splitlines() == [
        f"forgebot hooks: gitlab project group/app: cannot connect to {closed} (ConnectionError): check "
        "FORGEBOT_GITLAB__URL and that this machine reaches it"]


def test_forgebot_hooks_register_without_the_right_prints_what_to_add_by_hand(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], settings: Settings,
    fake_forge: FakeForgeState, tmp_path: Any,
) -> None:
    """A bot token with the Developer role (enough for everything else) may not manage webhooks: `--register`
    ended in a traceback and printed nothing. Each project's line now says it was refused and why, with the
    URL and secret to add by hand; the exit status says not everything was registered."""
    serve_samples(fake_forge, settings)
    _cli_env(monkeypatch, settings, tmp_path)
    fake_forge.faults.append(Fault("GET", "/gitlab/api/v4/projects/5/hooks", 403, message="403 Forbidden"))
    assert main(["hooks", "--register", "--forge", "gitlab", "--json", "5"]) == 1
    (line,) = [json.loads(text) for text in capsys.readouterr().out.splitlines()]
    assert line["url"] == "https://bot.example.org/webhooks/gitlab/5"
    assert line["secret"] == deliveries.secret("gitlab", 5)
    said = line["registered"]
    assert said.startswith("refused: the token may not manage this project's webhooks (role Maintainer)")
    assert said.endswith("add the URL and secret by hand")
    assert fake_forge.hooks == {}
