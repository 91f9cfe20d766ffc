"""A hook the forge stopped delivering to, said by `forgebot hooks` and brought back by `--register`.

The first day's way to lose every event: a hook added by hand with a mistyped secret, or while the
receiver was not up yet. GitLab answers each refused delivery by counting it and, after 4 in a row,
disables the hook (for a back-off up to a day, for good after 40); GitHub keeps the refusal as the hook's
last answer. Nothing reached the bot, so nothing on its side showed it: `forgebot hooks` printed the URL
and secret and exited 0, and `--register` saved the right secret into a hook GitLab still sent nothing to.
The forge here delivers as the real one does (`tests.fakes.forge_deliveries`) to the service the user runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pydantic import SecretStr

from bot.web.app import create_app
from foundation.settings import Settings
from tests.conftest import GITHUB_SECRET, GITHUB_TOKEN
from tests.fakes.forge_deliveries import deliver, deliver_to_app
from tests.fakes.forge_http import FakeForgeState, Fault
from tests.fakes.forge_state import FakeHook
from tests.fakes.model_server import ModelServer
from tests.fakes.server import ServerThread, free_port, serving
from tests.firstday.cli import forgebot
from tests.firstday.conftest import Launch, model_env
from tests.intake import deliveries
from tests.intake.payloads import github_comment, sample, serve_samples

GITLAB = 1  # forge_env's project: the label sample's
GITHUB = 186853002  # the GitHub samples' repository


def _hooks(*argv: str, cwd: Path, env: dict[str, str]) -> tuple[int, list[dict[str, Any]]]:
    typed = forgebot("hooks", "--json", *argv, cwd=cwd, **env)
    assert not typed.err, typed.text
    return typed.code, [json.loads(line) for line in typed.out]


def _label_event() -> dict[str, Any]:
    return sample("gitlab/issue.labels-changed.json")


def test_a_gitlab_hook_disabled_after_refused_deliveries_is_said_and_register_enables_it_again(
    launch: Launch, forge_env: dict[str, str], model: ModelServer, fake_forge: FakeForgeState, tmp_path: Path,
) -> None:
    fake_forge.local_hooks = True  # the receiver is on this machine: an administrator allowed it
    service = launch("serve", **forge_env, **model_env(model)).wait_healthy()
    url = f"{service.url}/webhooks/gitlab/{GITLAB}"
    hook = FakeHook(id=901, url=url, secret="mistyped-by-hand", events=["issues_events", "note_events"])
    fake_forge.hooks[("gitlab", str(GITLAB))] = [hook]
    env = {**forge_env, "FORGEBOT_INTAKE__ALLOWED_PROJECTS": json.dumps([str(GITLAB)]),
           "FORGEBOT_INTAKE__PUBLIC_URL": service.url}

    # each label the team adds is refused (401); GitLab keeps the hook enabled for 3, and says why
    assert [deliver(fake_forge, "gitlab", GITLAB, "Issue Hook", _label_event())[0] for _ in range(2)] == [401, 401]
    code, (line,) = _hooks(cwd=tmp_path, env=env)
    assert (code, line["state"]) == (1, "failing")
    assert line["detail"] == ("GitLab's last delivery was answered HTTP 401; the hook's secret is not the one above: "
                              "forgebot hooks --register saves it")
    # until GitLab stops sending
    assert [deliver(fake_forge, "gitlab", GITLAB, "Issue Hook", _label_event())[0] for _ in range(3)] \
        == [401, 401, None]
    code, (line,) = _hooks(cwd=tmp_path, env=env)
    assert code == 1
    assert line["state"] == "disabled"
    assert line["detail"].startswith(f"GitLab disabled it after failing deliveries, until {hook.disabled_until}; ")
    assert line["detail"].endswith("GitLab sends it nothing until a test delivery is answered 2xx: "
                                   "forgebot hooks --register sends one")

    # `forgebot check`, which an operator runs first when nothing happens, says it too
    checked = forgebot("check", *(f"--skip={name}" for name in ("redis", "store", "model", "embedder", "sandbox",
                                                                 "install")), cwd=tmp_path, **env)
    assert checked.code == 1
    assert [text for text in checked.out if text.startswith("hooks")] == [
        f"hooks     FAIL  gitlab {line['path']}: {line['detail']}"]

    code, (line,) = _hooks("--register", cwd=tmp_path, env=env)
    assert code == 0, line
    assert (line["registered"], line["state"]) == ("updated", "enabled")
    assert line["detail"] == "enabled again: GitLab's test delivery was answered 2xx"
    assert hook.secret == deliveries.secret("gitlab", GITLAB) and hook.alert_status == "executable"

    # the next label reaches the service and becomes a task
    assert deliver(fake_forge, "gitlab", GITLAB, "Issue Hook", _label_event()) == [202]
    code, (line,) = _hooks(cwd=tmp_path, env=env)
    assert (code, line["state"]) == (0, "ok")
    assert line["detail"] == "delivering: GitLab's last delivery was answered HTTP 202"
    checked = forgebot("check", "--skip=model", "--skip=embedder", "--skip=sandbox", "--skip=install", cwd=tmp_path,
                       **env)
    assert [text for text in checked.out if text.startswith("hooks")] == [
        "hooks     ok    1 hooks: 1 delivering"]


def test_a_test_delivery_the_receiver_does_not_answer_leaves_the_hook_disabled_and_says_what_to_look_at(
    forge_env: dict[str, str], fake_forge: FakeForgeState, tmp_path: Path,
) -> None:
    fake_forge.local_hooks = True
    down = f"http://127.0.0.1:{free_port()}"
    hook = FakeHook(id=902, url=f"{down}/webhooks/gitlab/{GITLAB}", secret="old", events=["note_events"],
                    failures=4, alert_status="temporarily_disabled", disabled_until="2026-01-01T00:01:00.000Z")
    fake_forge.hooks[("gitlab", str(GITLAB))] = [hook]
    env = {**forge_env, "FORGEBOT_INTAKE__ALLOWED_PROJECTS": json.dumps([str(GITLAB)]),
           "FORGEBOT_INTAKE__PUBLIC_URL": down}
    code, (line,) = _hooks("--register", cwd=tmp_path, env=env)
    assert code == 1
    assert (line["registered"], line["state"]) == ("updated", "disabled")
    assert line["detail"].endswith("the test delivery sent now was not answered 2xx: is the receiver up, at this "
                                   "URL, and reachable from GitLab?")
    assert hook.failures == 5


def test_a_github_hook_whose_deliveries_are_refused_is_said_until_one_is_answered(
    settings: Settings, redis_url: str, forge_server: ServerThread, fake_forge: FakeForgeState, tmp_path: Path,
) -> None:
    serve_samples(fake_forge, settings)
    fake_forge.local_hooks = True  # a GitHub Enterprise Server on the same network
    settings.redis_url = redis_url
    env = {"FORGEBOT_DATA_DIR": str(tmp_path / "cli"), "FORGEBOT_GITHUB__API_URL": settings.github.api_url,
           "FORGEBOT_GITHUB__TOKEN": GITHUB_TOKEN, "FORGEBOT_GITHUB__WEBHOOK_SECRET": GITHUB_SECRET,
           "FORGEBOT_GITHUB__MAX_RETRIES": "0", "FORGEBOT_INTAKE__ALLOWED_PROJECTS": '["Codertocat/Hello-World"]'}
    with serving(create_app(settings)) as receiver:
        env["FORGEBOT_INTAKE__PUBLIC_URL"] = receiver.url
        code, (line,) = _hooks(cwd=tmp_path, env=env)
        assert (code, line["state"]) == (0, "missing")
        assert line["detail"] == "no hook at this URL: add it with the secret above, or run forgebot hooks --register"

        hook = FakeHook(id=903, url=f"{receiver.url}/webhooks/github/{GITHUB}", secret="typo",
                        events=["issues", "issue_comment"])
        fake_forge.hooks[("github", str(GITHUB))] = [hook]
        assert deliver(fake_forge, "github", GITHUB, "issue_comment", github_comment("thanks")) == [401]
        code, (line,) = _hooks(cwd=tmp_path, env=env)
        assert (code, line["state"]) == (1, "failing")
        assert line["detail"] == ("GitHub's last delivery was answered HTTP 401 (failed: Invalid HTTP Response: 401); "
                                  "the hook's secret is not the one above: forgebot hooks --register saves it")

        code, (line,) = _hooks("--register", cwd=tmp_path, env=env)
        assert (code, line["registered"], line["state"]) == (0, "updated", "failing")
        assert line["detail"].endswith("saved again now: the next delivery tells")

        assert deliver(fake_forge, "github", GITHUB, "issue_comment", github_comment("thanks")) == [200]
        code, (line,) = _hooks(cwd=tmp_path, env=env)
        assert (code, line["state"]) == (0, "ok")
        assert line["detail"] == "delivering: GitHub's last delivery was answered HTTP 200 (OK)"


def test_a_receiver_on_a_local_network_the_forge_refuses_hooks_to_is_said_with_the_way_out(
    settings: Settings, forge_env: dict[str, str], fake_forge: FakeForgeState, tmp_path: Path,
) -> None:
    """A self-managed GitLab takes no hook URL on a local network unless an administrator allows it (off by
    default), and github.com none at all: the bot's first install, on an internal address, met both. The
    forge's 422 named the field in a form the command did not read, and the register ended in a traceback."""
    serve_samples(fake_forge, settings)
    internal = "http://10.20.0.15:8080"
    env = {**forge_env, "FORGEBOT_INTAKE__ALLOWED_PROJECTS": json.dumps([str(GITLAB), "Codertocat/Hello-World"]),
           "FORGEBOT_INTAKE__PUBLIC_URL": internal, "FORGEBOT_GITHUB__API_URL": settings.github.api_url,
           "FORGEBOT_GITHUB__TOKEN": GITHUB_TOKEN, "FORGEBOT_GITHUB__WEBHOOK_SECRET": GITHUB_SECRET,
           "FORGEBOT_GITHUB__MAX_RETRIES": "0"}
    code, (gitlab,) = _hooks("--register", "--forge=gitlab", str(GITLAB), cwd=tmp_path, env=env)
    assert code == 1
    code, (github,) = _hooks("--register", "--forge=github", "Codertocat/Hello-World", cwd=tmp_path, env=env)
    assert code == 1
    assert gitlab["registered"] == (
        "refused: GitLab refused the URL: url is blocked: Requests to the local network are not allowed; an "
        "administrator of GitLab allows it: Admin area → Settings → Network → Outbound requests → \"Allow requests "
        "to the local network from webhooks and integrations\", or the receiver's host in the allowlist there")
    assert github["registered"] == (
        "refused: GitHub refused the URL: Validation Failed: Sorry, the URL host 10.20.0.15 is not supported "
        "because it isn't reachable over the public Internet; GitHub.com delivers only to a public address: give "
        "the receiver one (FORGEBOT_INTAKE__PUBLIC_URL), or relay the deliveries to it")
    assert not any(fake_forge.hooks.values())
    fake_forge.local_hooks = True  # the administrator allowed it (GitHub: a GitHub Enterprise Server)
    for forge, project in (("gitlab", str(GITLAB)), ("github", "Codertocat/Hello-World")):
        code, (line,) = _hooks("--register", f"--forge={forge}", project, cwd=tmp_path, env=env)
        assert (code, line["registered"]) == (0, "created")


def test_deliveries_reach_the_service_under_its_public_path_whether_the_proxy_strips_it_or_not(
    launch: Launch, forge_env: dict[str, str], model: ModelServer, fake_forge: FakeForgeState, tmp_path: Path,
) -> None:
    """`FORGEBOT_INTAKE__PUBLIC_URL` with a path (a shared host): `forgebot hooks` registers the hook under it,
    and a proxy that forwards the path as it came (an Ingress without a rewrite) passed
    `/forgebot/webhooks/gitlab/1`, answered 404: every delivery refused, the hook disabled after four."""
    fake_forge.local_hooks = True
    port = free_port()
    public = f"http://127.0.0.1:{port}/forgebot"
    env = {**forge_env, "FORGEBOT_INTAKE__ALLOWED_PROJECTS": json.dumps([str(GITLAB)]),
           "FORGEBOT_INTAKE__PUBLIC_URL": public, "FORGEBOT_CONSOLE__PUBLIC_URL": public}
    service = launch("serve", port=port, **env, **model_env(model)).wait_healthy()
    code, (line,) = _hooks("--register", cwd=tmp_path, env=env)
    assert (code, line["url"]) == (0, f"{public}/webhooks/gitlab/{GITLAB}")
    assert deliver(fake_forge, "gitlab", GITLAB, "Issue Hook", _label_event()) == [202]
    (hook,) = fake_forge.hooks[("gitlab", str(GITLAB))]
    hook.url = f"{service.url}/webhooks/gitlab/{GITLAB}"  # a proxy that strips the path: served as before
    assert deliver(fake_forge, "gitlab", GITLAB, "Issue Hook", _label_event()) == [200]  # the same event again
    assert service.http.get(f"{public}/console/login").status_code == 200
    assert service.http.get(f"{service.url}/forgebotx/healthz").status_code == 404  # only the path itself


def test_the_events_of_an_outage_are_sent_again_and_become_tasks_once(
    launch: Launch, forge_env: dict[str, str], model: ModelServer, fake_forge: FakeForgeState, tmp_path: Path,
) -> None:
    """The receiver was down (a deploy of `forgebot serve`, a node drained) when a label was added: GitLab's one
    delivery got no answer, and GitLab sends no delivery again by itself, so the label was never a task.
    `forgebot hooks --redeliver` has GitLab send again what no attempt got a 2xx for; the receiver takes it
    once (the resend keeps the delivery's Idempotency-Key)."""
    fake_forge.local_hooks = True
    port = free_port()
    env = {**forge_env, "FORGEBOT_INTAKE__ALLOWED_PROJECTS": json.dumps([str(GITLAB)]),
           "FORGEBOT_INTAKE__PUBLIC_URL": f"http://127.0.0.1:{port}"}
    assert _hooks("--register", cwd=tmp_path, env=env)[0] == 0
    assert deliver(fake_forge, "gitlab", GITLAB, "Issue Hook", _label_event()) == [None]  # nothing listening

    service = launch("serve", port=port, **env, **model_env(model)).wait_healthy()
    assert service.tasks() == []
    code, (line,) = _hooks("--redeliver", cwd=tmp_path, env=env)
    assert code == 0, line
    assert line["redelivered"] == "1 of 1 deliveries no attempt of which was answered 2xx sent again, 1 answered " \
        "2xx now"
    assert len(service.tasks()) == 1
    code, (line,) = _hooks("--redeliver", cwd=tmp_path, env=env)
    assert (code, line["redelivered"]) == (0, "nothing to send again: GitLab answered 2xx every delivery it keeps "
                                              "(7 days)")
    assert len(service.tasks()) == 1


def test_github_sends_again_the_deliveries_no_attempt_of_which_was_answered(
    settings: Settings, redis_url: str, forge_server: ServerThread, fake_forge: FakeForgeState, tmp_path: Path,
) -> None:
    serve_samples(fake_forge, settings)
    fake_forge.local_hooks = True
    settings.redis_url = redis_url
    with serving(create_app(settings)) as receiver:
        env = {"FORGEBOT_DATA_DIR": str(tmp_path / "cli"), "FORGEBOT_GITHUB__API_URL": settings.github.api_url,
               "FORGEBOT_GITHUB__TOKEN": GITHUB_TOKEN, "FORGEBOT_GITHUB__WEBHOOK_SECRET": GITHUB_SECRET,
               "FORGEBOT_GITHUB__MAX_RETRIES": "0", "FORGEBOT_INTAKE__ALLOWED_PROJECTS": '["Codertocat/Hello-World"]',
               "FORGEBOT_INTAKE__PUBLIC_URL": receiver.url}
        assert _hooks("--register", cwd=tmp_path, env=env)[0] == 0
        (hook,) = fake_forge.hooks[("github", str(GITHUB))]
        url, hook.url = hook.url, f"http://127.0.0.1:{free_port()}/webhooks/github/{GITHUB}"  # the receiver down
        assert deliver(fake_forge, "github", GITHUB, "issue_comment", github_comment("/review", on="change")) == [None]
        assert deliver(fake_forge, "github", GITHUB, "issue_comment", github_comment("thanks")) == [None]
        hook.url = url  # up again
        code, (line,) = _hooks("--redeliver", cwd=tmp_path, env=env)
        assert code == 0, line
        assert line["detail"] == ("GitHub's last delivery got no answer (timeout); is the receiver up, at this URL, "
                                  "and reachable from GitHub? Once it is, --redeliver sends again")
        assert line["redelivered"] == ("2 of 2 deliveries no attempt of which was answered 2xx sent again; GitHub "
                                       "sends them shortly, and forgebot hooks --redeliver then finds none left")
        assert [(d.again, d.status) for d in hook.log] == [(False, None), (False, None), (True, 202), (True, 200)]
        assert hook.log[2].key == hook.log[0].key  # the same delivery: the receiver takes it once
        code, (line,) = _hooks("--redeliver", cwd=tmp_path, env=env)
        assert line["redelivered"] == "nothing to send again: GitHub answered 2xx every delivery it keeps (3 days)"


def test_a_github_apps_own_webhook_is_said_and_its_failed_deliveries_sent_again(
    settings: Settings, redis_url: str, forge_server: ServerThread, fake_forge: FakeForgeState, tmp_path: Path,
) -> None:
    """A GitHub App delivers every installation's events through its own webhook, set in the App's settings:
    `forgebot hooks` said of each repository only that the App delivers instead, and `--redeliver` could not
    reach the App's deliveries. It now reads the App's webhook as the App (its JWT)."""
    serve_samples(fake_forge, settings)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    fake_forge.app_key = key.public_key().public_bytes(serialization.Encoding.PEM,
                                                       serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    settings.redis_url = redis_url
    settings.github.app_id, settings.github.private_key = 99, SecretStr(pem)
    with serving(create_app(settings)) as receiver:
        hook = fake_forge.app_hook = FakeHook(id=1, url=f"{receiver.url}/webhooks/github", secret=GITHUB_SECRET)
        env = {"FORGEBOT_DATA_DIR": str(tmp_path / "cli"), "FORGEBOT_GITHUB__API_URL": settings.github.api_url,
               "FORGEBOT_GITHUB__APP_ID": "99", "FORGEBOT_GITHUB__PRIVATE_KEY": pem,
               "FORGEBOT_GITHUB__INSTALLATION_ID": "77", "FORGEBOT_GITHUB__WEBHOOK_SECRET": GITHUB_SECRET,
               "FORGEBOT_GITHUB__MAX_RETRIES": "0", "FORGEBOT_INTAKE__ALLOWED_PROJECTS": '["Codertocat/Hello-World"]',
               "FORGEBOT_INTAKE__PUBLIC_URL": receiver.url}
        code, (repository, app) = _hooks(cwd=tmp_path, env=env)
        assert (code, repository["state"], app["path"], app["state"]) == (0, "missing", "the GitHub App", "unused")
        assert app["secret"] == "FORGEBOT_GITHUB__WEBHOOK_SECRET (the App's webhook secret)"

        comment = github_comment("thanks") | {"installation": {"id": 77}}
        hook.url = f"http://127.0.0.1:{free_port()}/webhooks/github"  # the receiver down
        assert deliver_to_app(fake_forge, "issue_comment", comment) is None
        hook.url = f"{receiver.url}/webhooks/github"
        code, (_, app) = _hooks(cwd=tmp_path, env=env)
        assert (code, app["state"]) == (1, "failing")
        assert app["detail"] == ("GitHub's last delivery to the App's webhook got no answer (failed to connect to "
                                 "host); is the receiver up, at this URL, and reachable from GitHub? Once it is, "
                                 "--redeliver sends again")
        code, (_, app) = _hooks("--redeliver", cwd=tmp_path, env=env)
        assert code == 0, app
        assert app["redelivered"].startswith("1 of 1 deliveries no attempt of which was answered 2xx sent again")
        code, (_, app) = _hooks(cwd=tmp_path, env=env)
        assert (code, app["detail"]) == (0, "delivering: GitHub's last delivery to the App's webhook was answered "
                                            "HTTP 200 (OK)")

        hook.url = "https://elsewhere.example/webhooks/github"  # the App's settings name another address
        code, (_, app) = _hooks(cwd=tmp_path, env=env)
        assert (code, app["detail"]) == (1, "the App's webhook points at https://elsewhere.example/webhooks/github, "
                                            "not here: set its URL in the App's settings (General → Webhook)")


def test_a_gitlab_without_the_test_api_leaves_the_hook_disabled_and_says_how_to_test_it_by_hand(
    forge_env: dict[str, str], fake_forge: FakeForgeState, tmp_path: Path,
) -> None:
    """GitLab added the test API in 16.11; an older one answers 404, which ended `--register` in a traceback
    after it had saved the hook."""
    fake_forge.local_hooks = True
    hook = FakeHook(id=904, url=f"http://127.0.0.1:{free_port()}/webhooks/gitlab/{GITLAB}", secret="old",
                    events=["note_events"], failures=4, alert_status="temporarily_disabled",
                    disabled_until="2026-01-01T00:01:00.000Z")
    fake_forge.hooks[("gitlab", str(GITLAB))] = [hook]
    fake_forge.faults.append(Fault("POST", f"/hooks/{hook.id}/test/", 404, message="404 Not Found"))
    env = {**forge_env, "FORGEBOT_INTAKE__ALLOWED_PROJECTS": json.dumps([str(GITLAB)]),
           "FORGEBOT_INTAKE__PUBLIC_URL": hook.url.removesuffix(f"/webhooks/gitlab/{GITLAB}")}
    code, (line,) = _hooks("--register", cwd=tmp_path, env=env)
    assert (code, line["registered"], line["state"]) == (1, "updated", "disabled")
    assert line["detail"] == ("GitLab disabled it after failing deliveries, until 2026-01-01T00:01:00.000Z; GitLab "
                              "sent no test (gitlab 404: 404 Not Found): send one from the hook's settings (Edit → "
                              "Test → Push events), which enables it when answered 2xx")
    assert hook.secret == deliveries.secret("gitlab", GITLAB)
