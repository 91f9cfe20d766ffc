"""`forgebot check` on a bad first day: a forge that cannot be reached, a token it refuses, a GitLab
URL with the API path in it, a wrong GitHub API root and a pinned bot id that is not the token's
user are five different lines, each naming the one setting to fix."""

from __future__ import annotations

import base64
import datetime
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import certifi
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from foundation.cabundle import HINT
from tests.conftest import GITHUB_TOKEN, GITLAB_TOKEN
from tests.fakes.embeddings_http import EmbeddingsState, create_embeddings_app
from tests.fakes.forge_http import FakeForgeState, create_fake_forge
from tests.fakes.model_server import ModelServer, structured
from tests.fakes.private_ca import private_ca
from tests.fakes.server import ServerThread, free_port, serving
from tests.firstday.cli import Typed, forgebot
from tests.firstday.conftest import Launch
from tests.tools import need_namespaces

pytestmark = pytest.mark.timeout(300)
NO_CA = dict.fromkeys(("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"), "")
ONLY_FORGES = ["--skip", "redis", "--skip", "store", "--skip", "model", "--skip", "embedder", "--skip", "sandbox"]


def _check(tmp_path: Path, **env: str) -> Typed:
    return forgebot("check", *ONLY_FORGES, cwd=tmp_path, FORGEBOT_DATA_DIR=str(tmp_path / "data"),
                    FORGEBOT_GITLAB__MAX_RETRIES="0", FORGEBOT_GITHUB__MAX_RETRIES="0", **env)


def _row(seen: Typed, name: str) -> tuple[str, str]:
    (line,) = [line for line in seen.out if line.split()[:1] == [name]]
    _, status, detail = line.split(None, 2)
    return status, detail


@pytest.mark.wrong_forge_address
def test_each_forge_failure_names_its_own_cause(
    tmp_path: Path, forge_server: ServerThread, fake_forge: FakeForgeState
) -> None:
    fake_forge.tokens = {GITLAB_TOKEN, GITHUB_TOKEN}
    closed = f"http://127.0.0.1:{free_port()}"
    unreachable = _check(tmp_path, FORGEBOT_GITLAB__URL=closed, FORGEBOT_GITLAB__TOKEN=GITLAB_TOKEN,
                         FORGEBOT_GITHUB__API_URL=f"{forge_server.url}/github/nowhere",
                         FORGEBOT_GITHUB__TOKEN=GITHUB_TOKEN)
    assert unreachable.code == 1 and "Traceback" not in unreachable.text
    assert _row(unreachable, "gitlab") == (
        "FAIL", f"cannot connect to {closed} (ConnectionError): check FORGEBOT_GITLAB__URL and that this machine "
                "reaches it")
    assert _row(unreachable, "github") == (
        "FAIL", f"{forge_server.url}/github/nowhere/user answered 404: FORGEBOT_GITHUB__API_URL must be the REST API "
                "root (https://api.github.com; GitHub Enterprise: https://HOST/api/v3)")

    refused = _check(tmp_path, FORGEBOT_GITLAB__URL=f"{forge_server.url}/gitlab",
                     FORGEBOT_GITLAB__TOKEN="glpat-not-the-token-0123456789")
    status, detail = _row(refused, "gitlab")
    assert status == "FAIL" and detail.startswith(f"{forge_server.url}/gitlab refused the credentials (gitlab 401")
    assert detail.endswith("check FORGEBOT_GITLAB__TOKEN") and "glpat-not-the-token" not in refused.text

    api_path = _check(tmp_path, FORGEBOT_GITLAB__URL=f"{forge_server.url}/gitlab/api/v4",
                      FORGEBOT_GITLAB__TOKEN=GITLAB_TOKEN)
    assert _row(api_path, "gitlab") == (
        "FAIL", f"{forge_server.url}/gitlab/api/v4 answered 404: FORGEBOT_GITLAB__URL is the instance's address "
                f"without the API path; drop /api/v4 ({forge_server.url}/gitlab)")


def test_a_pinned_bot_that_is_not_the_tokens_user_fails(
    tmp_path: Path, forge_server: ServerThread, fake_forge: FakeForgeState
) -> None:
    seen = _check(tmp_path, FORGEBOT_GITLAB__URL=f"{forge_server.url}/gitlab", FORGEBOT_GITLAB__TOKEN=GITLAB_TOKEN,
                  FORGEBOT_GITLAB__WEBHOOK_SECRET="s", FORGEBOT_GITLAB__BOT_USER_ID="7",
                  FORGEBOT_GITHUB__API_URL=f"{forge_server.url}/github", FORGEBOT_GITHUB__TOKEN=GITHUB_TOKEN,
                  FORGEBOT_GITHUB__WEBHOOK_SECRET="s", FORGEBOT_GITHUB__BOT_LOGIN="FORGEBOT")
    assert seen.code == 1
    assert _row(seen, "gitlab") == (
        "FAIL", "FORGEBOT_GITLAB__BOT_USER_ID=7, but the token acts as @forgebot (id 4242): the bot would take its "
                "own comments for someone else's; unset it (the bot asks the forge) or pin the token's user")
    status, detail = _row(seen, "github")  # logins compare without case, as GitHub's do
    assert status == "ok" and "bot @forgebot (id 4242)" in detail


def test_a_misspelt_variable_fails_the_doctor(tmp_path: Path) -> None:
    seen = forgebot("check", *ONLY_FORGES, cwd=tmp_path, FORGEBOT_DATA_DIR=str(tmp_path / "data"),
                    FORGEBOT_GITLAB__WEBHOOK_SECRT="s")
    assert seen.code == 1
    assert _row(seen, "settings") == (
        "FAIL", "FORGEBOT_GITLAB__WEBHOOK_SECRT is not a forgebot setting and is ignored (did you mean "
                "FORGEBOT_GITLAB__WEBHOOK_SECRET?)")
    assert _row(seen, "gitlab")[0] == "skip"


def test_what_is_missing_is_what_readyz_names(tmp_path: Path, launch: Launch) -> None:
    """Nothing configured: the doctor and the running service name the same gaps, in the same words."""
    seen = forgebot("check", "--skip", "redis", "--skip", "embedder", cwd=tmp_path,
                    FORGEBOT_DATA_DIR=str(tmp_path / "data"))
    assert seen.code == 1
    rows = [line.split(None, 2)[1:] for line in seen.out if line.split()[:1] == ["missing"]]
    service = launch("serve").wait_healthy()
    _, ready = service.get_json("/readyz")
    assert rows == [["FAIL", gap] for gap in ready["missing"]]
    assert rows[0][1].startswith("forge: no forge is configured: set FORGEBOT_GITLAB__TOKEN")


ONLY_SANDBOX = [arg for name in ("settings", "missing", "redis", "store", "gitlab", "github", "model", "embedder")
                for arg in ("--skip", name)]


def test_the_sandbox_line_says_what_checks_get_here(tmp_path: Path) -> None:
    """One real command through the check sandbox with the server's settings: whether checks run at all
    (a root worker is refused unless accepted), and whether the memory and process limits are held."""
    need_namespaces()
    env = {"FORGEBOT_DATA_DIR": str(tmp_path / "data")}
    allowed = forgebot("check", *ONLY_SANDBOX, cwd=tmp_path, FORGEBOT_SANDBOX__ALLOW_ROOT="true", **env)
    status, detail = _row(allowed, "sandbox")
    assert allowed.code == 0 and status == "ok", allowed.text
    assert detail.startswith("namespaces available; ")
    assert "memory limit " in detail and "process limit " in detail
    default = forgebot("check", *ONLY_SANDBOX, cwd=tmp_path, **env)
    if os.geteuid() == 0:  # CI's case: the worker is root and nothing accepted that
        assert default.code == 1 and _row(default, "sandbox") == (
            "FAIL", "namespaces available; checks are NOT run: the worker runs as root, and a check run as root can "
                    "read every file root can; run the worker as an unprivileged user (the image does), or accept "
                    "it with `FORGEBOT_SANDBOX__ALLOW_ROOT=true`")
        assert "the worker runs as root, checks allowed (FORGEBOT_SANDBOX__ALLOW_ROOT=true)" in detail
    else:
        assert default.code == 0 and _row(default, "sandbox") == ("ok", detail)
        assert "process limit enforced" in detail


def test_the_install_line_says_which_way_an_install_leaves(tmp_path: Path) -> None:
    """Behind a corporate proxy the worker's HTTPS_PROXY is the installs' way out: the line names it (never
    its password); one that is no http:// proxy leaves every install without network, and fails the line."""
    only = [arg for name in (*ONLY_SANDBOX[1::2], "sandbox") for arg in ("--skip", name)]
    env = {"FORGEBOT_DATA_DIR": str(tmp_path / "data"), "https_proxy": "", **NO_CA}
    direct = forgebot("check", *only, cwd=tmp_path, HTTPS_PROXY="", **env)
    assert direct.code == 0 and _row(direct, "install") == ("ok", "installs that ask for network connect directly")
    proxied = forgebot("check", *only, cwd=tmp_path, HTTPS_PROXY="http://bot:hunter2@proxy.corp:3128", **env)
    assert _row(proxied, "install") == (
        "ok", "installs that ask for network leave through the proxy proxy.corp:3128 (HTTPS_PROXY)")
    assert "hunter2" not in proxied.text
    socks = forgebot("check", *only, cwd=tmp_path, HTTPS_PROXY="socks5h://bot:hunter2@proxy.corp:1080", **env)
    assert socks.code == 1 and "hunter2" not in socks.text
    assert _row(socks, "install") == (
        "FAIL", "installs get no network: HTTPS_PROXY is unusable (an install proxy must be http://HOST:PORT "
                "(with USER:PASSWORD@ before the host when it asks for them), not socks5h://proxy.corp…); set "
                "FORGEBOT_SANDBOX__INSTALL_PROXY to an http:// proxy, or to `direct`")
    turned_off = forgebot("check", *only, cwd=tmp_path, HTTPS_PROXY="socks5h://proxy.corp:1080",
                          FORGEBOT_SANDBOX__INSTALL_PROXY="direct", **env)
    assert _row(turned_off, "install") == ("ok", "installs that ask for network connect directly")


def test_a_model_that_never_answers_is_one_try_said_while_waited_on(tmp_path: Path) -> None:
    """An endpoint that takes the connection and never answers: the check waited three tries of the
    timeout in silence (six minutes by default) and said "the model model call failed". It now tries once,
    says after ten seconds what it waits for, and names the timeout."""
    from tests.fakes.model_server import ModelServer, text

    with ModelServer() as model:
        model.responder = lambda request: text("ok", delay=30)
        skip = [a for name in ("redis", "store", "gitlab", "github", "embedder", "sandbox") for a in ("--skip", name)]
        seen = forgebot("check", *skip, cwd=tmp_path, FORGEBOT_DATA_DIR=str(tmp_path / "data"),
                        FORGEBOT_LLM__BASE_URL=model.openai_url, FORGEBOT_LLM__MODEL=model.model,
                        FORGEBOT_LLM__TIMEOUT="12", FORGEBOT_LLM__MAX_RETRIES="2")
        assert len(model.requests) == 1
    assert seen.code == 1
    assert _row(seen, "model") == ("FAIL", "the model call failed: the model call timed out (check "
                                           "FORGEBOT_LLM__TIMEOUT)")
    assert seen.err == [f"forgebot check: waiting for the model at openai {model.openai_url} {model.model} to answer "
                        "(up to 12 s: FORGEBOT_LLM__TIMEOUT)"]


def _app_key(fake_forge: FakeForgeState) -> str:
    """A GitHub App's private key as GitHub hands it out; the fake forge verifies its JWTs."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    fake_forge.app_key = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption()).decode()


@pytest.mark.parametrize("form", ["escaped", "one line", "base64"])
def test_an_app_key_pasted_as_an_env_file_holds_it_is_read(
    tmp_path: Path, forge_server: ServerThread, fake_forge: FakeForgeState, form: str
) -> None:
    """An .env file or a Kubernetes secret made from a literal holds the .pem with `\\n` for its newlines;
    some tools base64 it. Both made every GitHub call fail with PyJWT's "InvalidKeyError: Could not parse
    the provided public key", naming no setting. A one-line field (spaces for newlines), which the key
    reader took already, stays accepted by the stricter setting."""
    pem = _app_key(fake_forge)
    pasted = {"escaped": pem.replace("\n", "\\n"), "one line": pem.strip().replace("\n", " "),
              "base64": base64.b64encode(pem.encode()).decode()}[form]
    seen = _check(tmp_path, FORGEBOT_GITHUB__API_URL=f"{forge_server.url}/github", FORGEBOT_GITHUB__APP_ID="99",
                  FORGEBOT_GITHUB__PRIVATE_KEY=pasted, FORGEBOT_GITHUB__WEBHOOK_SECRET="s")
    status, detail = _row(seen, "github")
    assert status == "ok", detail


def test_a_value_that_is_no_private_key_names_the_setting_and_never_shows_it(tmp_path: Path) -> None:
    seen = forgebot("check", *ONLY_FORGES, cwd=tmp_path, FORGEBOT_DATA_DIR=str(tmp_path / "data"),
                    FORGEBOT_GITHUB__APP_ID="99", FORGEBOT_GITHUB__PRIVATE_KEY="ghp_a-token-pasted-as-the-key")
    assert seen.code == 2 and "Traceback" not in seen.text
    assert seen.err == ["forgebot: FORGEBOT_GITHUB__PRIVATE_KEY: not a PEM private key "
                        "(-----BEGIN … PRIVATE KEY----- … -----END … PRIVATE KEY-----): use the .pem file GitHub "
                        "gave for the App, best mounted as a secret file"]
    assert "ghp_a-token" not in seen.text


def test_an_install_proxy_that_is_no_http_proxy_names_the_setting_and_never_its_password(tmp_path: Path) -> None:
    seen = forgebot("check", *ONLY_FORGES, cwd=tmp_path, FORGEBOT_DATA_DIR=str(tmp_path / "data"),
                    FORGEBOT_SANDBOX__INSTALL_PROXY="socks5://bot:hunter2@proxy.example.com:1080")
    assert seen.code == 2 and "Traceback" not in seen.text
    assert seen.err == ["forgebot: FORGEBOT_SANDBOX__INSTALL_PROXY: an install proxy must be http://HOST:PORT (with "
                        "USER:PASSWORD@ before the host when it asks for them), not socks5://proxy.example.com…"], \
        seen.err
    assert "hunter2" not in seen.text


def test_a_token_that_cannot_write_fails_naming_the_scope_it_needs(
    tmp_path: Path, forge_server: ServerThread, fake_forge: FakeForgeState
) -> None:
    """A GitLab token made with `read_api` (beside `api` in GitLab's form), a classic GitHub token without
    `repo`: `GET /user` answers for both, so check said ok, and the bot then failed at its first comment,
    where it could not even say why on the issue."""
    fake_forge.tokens = {GITLAB_TOKEN, GITHUB_TOKEN}
    fake_forge.token_scopes = {"gitlab": ["read_api", "read_repository"], "github": ["read:user", "gist"]}
    seen = _check(tmp_path, FORGEBOT_GITLAB__URL=f"{forge_server.url}/gitlab", FORGEBOT_GITLAB__TOKEN=GITLAB_TOKEN,
                  FORGEBOT_GITHUB__API_URL=f"{forge_server.url}/github", FORGEBOT_GITHUB__TOKEN=GITHUB_TOKEN)
    assert seen.code == 1
    assert _row(seen, "gitlab") == (
        "FAIL", "the token's scopes are `read_api`, `read_repository`: forgebot comments, pushes branches and opens "
                "changes, which needs `api`; check FORGEBOT_GITLAB__TOKEN")
    assert _row(seen, "github") == (
        "FAIL", "the token's scopes are `read:user`, `gist`: forgebot comments, pushes branches and opens changes, "
                "which needs `repo` (`public_repo` for public repositories only); check FORGEBOT_GITHUB__TOKEN")

    soon = (datetime.date.today() + datetime.timedelta(days=5)).isoformat()
    fake_forge.token_scopes, fake_forge.token_expires_at = {"gitlab": ["api"], "github": ["repo"]}, soon
    seen = _check(tmp_path, FORGEBOT_GITLAB__URL=f"{forge_server.url}/gitlab", FORGEBOT_GITLAB__TOKEN=GITLAB_TOKEN,
                  FORGEBOT_GITHUB__API_URL=f"{forge_server.url}/github", FORGEBOT_GITHUB__TOKEN=GITHUB_TOKEN,
                  FORGEBOT_GITLAB__WEBHOOK_SECRET="s", FORGEBOT_GITHUB__WEBHOOK_SECRET="s")
    status, detail = _row(seen, "gitlab")
    assert status == "ok" and f"bot @forgebot (id 4242), token expires on {soon} (in 5 days)" in detail, detail
    assert _row(seen, "github")[0] == "ok"


def test_an_author_the_gitlab_bot_user_does_not_own_is_said_before_a_push_rule_refuses_it(
    tmp_path: Path, forge_server: ServerThread, fake_forge: FakeForgeState
) -> None:
    """GitLab's push rules on commit authors ("Reject unverified users", "Commit author's email") refuse a
    commit whose email the bot user does not own, and a task learns it only when its push is refused,
    after all its work. Unset, the author is the bot user's own, and the gitlab line says whom commits name;
    set to none of the emails GitLab shows the bot user, the line names the one to set."""
    fake_forge.tokens = {GITLAB_TOKEN}
    fake_forge.bot_name = "Platform Bot"
    env = {"FORGEBOT_GITLAB__URL": f"{forge_server.url}/gitlab", "FORGEBOT_GITLAB__TOKEN": GITLAB_TOKEN,
           "FORGEBOT_GITLAB__WEBHOOK_SECRET": "s"}
    status, detail = _row(_check(tmp_path, **env), "gitlab")
    assert status == "ok"
    assert detail.endswith("; commits authored as Platform Bot <4242-forgebot@users.noreply.gitlab.example.com>, "
                           "the bot account's"), detail
    other = _row(_check(tmp_path, FORGEBOT_WORKSPACE__AUTHOR_EMAIL="bot@elsewhere.example", **env), "gitlab")
    assert other[0] == "ok"
    assert other[1].endswith("; author bot@elsewhere.example is no email of @forgebot, which push rules on authors "
                             "refuse: set FORGEBOT_WORKSPACE__AUTHOR_EMAIL=4242-forgebot@users.noreply.gitlab"
                             ".example.com, or unset it for the account's own"), other[1]
    for own in ("4242-forgebot@users.noreply.gitlab.example.com", "Forgebot@Corp.example"):
        configured = _check(tmp_path, FORGEBOT_WORKSPACE__AUTHOR_EMAIL=own, **env)
        assert "is no email of" not in _row(configured, "gitlab")[1]
        assert "commits authored as" not in _row(configured, "gitlab")[1]
    fake_forge.bot_commit_email = fake_forge.bot_email = ""  # a GitLab that shows none: nothing to compare or say
    assert "author" not in _row(_check(tmp_path, **env), "gitlab")[1]


def _ssh_key(where: Path, passphrase: str = "") -> tuple[str, str]:
    """A new ed25519 key pair as `ssh-keygen` writes it: (private key text, public line)."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", "bot@corp.example", "-f", str(where)],
                   check=True, stdin=subprocess.DEVNULL)
    return where.read_text(), where.with_suffix(".pub").read_text().strip()


def test_the_signing_line_prints_the_public_key_to_register(tmp_path: Path) -> None:
    """Where a push rule refuses unsigned commits the operator sets the bot's SSH signing key: the line says
    which key signs and prints its public half to register on the bot account; a key with a passphrase (the
    bot signs unattended) fails the line before a first push is refused, and a public key pasted in its
    place stops the command naming the variable."""
    only = [arg for name in (*ONLY_SANDBOX[1::2], "sandbox", "install") for arg in ("--skip", name)]
    env = {"FORGEBOT_DATA_DIR": str(tmp_path / "data"), "FORGEBOT_WORKSPACE__AUTHOR_EMAIL": "bot@corp.example"}
    unset = forgebot("check", *only, cwd=tmp_path, **env)
    assert unset.code == 0 and _row(unset, "signing") == (
        "skip", "FORGEBOT_WORKSPACE__SIGNING_KEY not set: commits are not signed")
    private, public = _ssh_key(tmp_path / "bot")
    fingerprint = subprocess.run(["ssh-keygen", "-l", "-f", str(tmp_path / "bot.pub")], capture_output=True,
                                 text=True, check=True).stdout.strip()
    signed = forgebot("check", *only, cwd=tmp_path, FORGEBOT_WORKSPACE__SIGNING_KEY=private, **env)
    assert signed.code == 0 and _row(signed, "signing") == (
        "ok", f"commits are signed by {fingerprint} as bot@corp.example; register its public key on the bot account "
              f"as a signing key: {public}")
    assert "PRIVATE KEY" not in signed.text and private.splitlines()[1] not in signed.text
    locked, _ = _ssh_key(tmp_path / "locked", passphrase="correct horse")
    refused = forgebot("check", *only, cwd=tmp_path, FORGEBOT_WORKSPACE__SIGNING_KEY=locked, **env)
    status, detail = _row(refused, "signing")
    assert refused.code == 1 and status == "FAIL" and "Traceback" not in refused.text
    assert detail.startswith("commits cannot be signed: the signing key cannot be read by ssh-keygen: ")
    assert detail.endswith("(it has a passphrase: the bot signs unattended, so its key may have none)")
    pasted = forgebot("check", *only, cwd=tmp_path, FORGEBOT_WORKSPACE__SIGNING_KEY=public, **env)
    assert pasted.code == 2 and "Traceback" not in pasted.text
    assert any("FORGEBOT_WORKSPACE__SIGNING_KEY" in line and "ssh-keygen -t ed25519" in line for line in pasted.err)


def test_the_signing_line_says_whether_each_forge_holds_the_key_as_the_bot_accounts_signing_key(
    tmp_path: Path, forge_server: ServerThread, fake_forge: FakeForgeState
) -> None:
    """A key nobody registered signs commits GitLab shows unverified and a GitHub ruleset requiring signed
    commits refuses (it wants verified signatures), after a task's work: the line asks each forge whether the
    bot account holds the key for signing (GitLab: a key for authentication only does not count), and says
    when a forge cannot tell (a classic GitHub token without `read:ssh_signing_key`)."""
    fake_forge.tokens = {GITLAB_TOKEN, GITHUB_TOKEN}
    only = [arg for name in (*ONLY_SANDBOX[1::2], "sandbox", "install", "gitlab", "github") for arg in ("--skip", name)]
    private, public = _ssh_key(tmp_path / "bot")
    env = {"FORGEBOT_DATA_DIR": str(tmp_path / "data"), "FORGEBOT_WORKSPACE__SIGNING_KEY": private,
           "FORGEBOT_GITLAB__URL": f"{forge_server.url}/gitlab", "FORGEBOT_GITLAB__TOKEN": GITLAB_TOKEN,
           "FORGEBOT_GITHUB__API_URL": f"{forge_server.url}/github", "FORGEBOT_GITHUB__TOKEN": GITHUB_TOKEN,
           "FORGEBOT_GITLAB__MAX_RETRIES": "0", "FORGEBOT_GITHUB__MAX_RETRIES": "0"}
    fake_forge.token_scopes = {"gitlab": ["api"], "github": ["repo", "read:ssh_signing_key"]}
    fake_forge.ssh_keys = {"gitlab": [(public, "auth")], "github": []}
    nowhere = forgebot("check", *only, cwd=tmp_path, **env)
    status, detail = _row(nowhere, "signing")
    assert nowhere.code == 1 and status == "FAIL", nowhere.text
    assert detail.endswith(", which gitlab and github do not hold as a signing key of the bot account: register "
                           f"its public key there: {public}"), detail
    fake_forge.ssh_keys = {"gitlab": [(public, "auth_and_signing")], "github": [(public, "")]}
    held = forgebot("check", *only, cwd=tmp_path, **env)
    assert _row(held, "signing")[0] == "ok"
    assert _row(held, "signing")[1].endswith(" as the GitLab bot account's commit email (forgebot@users.noreply"
                                             ".invalid on GitHub); gitlab holds it as a signing key "
                                             "of the bot account; github holds it as a signing key of the bot "
                                             "account"), held.text
    fake_forge.token_scopes = {"gitlab": ["api"], "github": ["repo"]}  # a classic token that may not read them
    unsure = forgebot("check", *only, cwd=tmp_path, **env)
    status, detail = _row(unsure, "signing")
    assert status == "ok" and "github does not say whether it holds the key (the token may not read signing " \
                              "keys); register its public key on the bot account as a signing key: " in detail, detail


def test_a_model_and_an_embedder_behind_a_ca_not_named_say_so_and_trust_it_once_ssl_cert_file_names_it(
    tmp_path: Path,
) -> None:
    """httpx read SSL_CERT_FILE, but a machine whose REQUESTS_CA_BUNDLE already names the system's CAs (this one
    does) is blanked here: the operator sets only what the test sets."""
    ca, tls = private_ca(tmp_path)
    state = EmbeddingsState(dimension=16)
    only = [arg for name in ("redis", "store", "gitlab", "github", "sandbox") for arg in ("--skip", name)]
    with ModelServer(tls=tls) as model, serving(create_embeddings_app(state), tls) as embeddings:
        model.responder = lambda request: (structured("echo", {"word": "ready"}) if request.tool_names
                                           else structured("CheckAnswer", {"word": "ready"}))
        env = {**dict.fromkeys(("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"), ""),
               "FORGEBOT_LLM__BASE_URL": model.openai_url, "FORGEBOT_LLM__MODEL": model.model,
               "FORGEBOT_LLM__API_KEY": "sk-check", "FORGEBOT_EMBEDDER__KIND": "http",
               "FORGEBOT_EMBEDDER__BASE_URL": f"{embeddings.url}/v1", "FORGEBOT_EMBEDDER__MODEL": "tiny",
               "FORGEBOT_EMBEDDER__DIMENSION": "16"}
        untrusted = forgebot("check", *only, cwd=tmp_path, FORGEBOT_DATA_DIR=str(tmp_path / "data"), **env)
        trusted = forgebot("check", *only, cwd=tmp_path, FORGEBOT_DATA_DIR=str(tmp_path / "data"),
                           **{**env, "SSL_CERT_FILE": str(ca)})
    assert _row(untrusted, "model") == (
        "FAIL", "the model call failed: the model endpoint's TLS certificate is not trusted here (unable to get local "
                "issuer certificate); a private CA's certificates go in a PEM file (check SSL_CERT_FILE)")
    assert _row(untrusted, "embedder") == (
        "FAIL", f"{embeddings.url}/v1: its TLS certificate is not trusted here (unable to get local issuer "
                f"certificate); {HINT}")
    assert _row(trusted, "model")[0] == "ok", trusted.text
    assert _row(trusted, "embedder") == ("ok", "tiny: 16 dimensions"), trusted.text


def test_forges_behind_a_ca_not_named_say_so_and_answer_once_ssl_cert_file_names_it(tmp_path: Path) -> None:
    """Before: `cannot connect to … (SSLError): check FORGEBOT_GITLAB__URL`, and with SSL_CERT_FILE set the same
    (requests does not read it)."""
    ca, tls = private_ca(tmp_path)
    app = create_fake_forge()
    app.state.forge = FakeForgeState()
    with serving(app, tls) as server:
        env = {**dict.fromkeys(("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"), ""),
               "FORGEBOT_GITLAB__URL": f"{server.url}/gitlab", "FORGEBOT_GITLAB__TOKEN": GITLAB_TOKEN,
               "FORGEBOT_GITHUB__API_URL": f"{server.url}/github", "FORGEBOT_GITHUB__TOKEN": GITHUB_TOKEN}
        untrusted = _check(tmp_path, **env)
        trusted = _check(tmp_path, **{**env, "SSL_CERT_FILE": str(ca)})
        # a base image's own choice for requests, which the operator's SSL_CERT_FILE does not override
        overridden = _check(tmp_path, **{**env, "SSL_CERT_FILE": str(ca), "REQUESTS_CA_BUNDLE": certifi.where()})
        missing = _check(tmp_path, **{**env, "SSL_CERT_FILE": str(tmp_path / "no-such.pem")})
    for kind in ("gitlab", "github"):
        assert _row(untrusted, kind) == ("FAIL", f"{server.url}/{kind}: its TLS certificate is not trusted here "
                                                 f"(unable to get local issuer certificate); {HINT}")
        assert "credentials valid, bot @forgebot" in _row(trusted, kind)[1], trusted.text
        assert _row(overridden, kind) == (
            "FAIL", f"{server.url}/{kind}: its TLS certificate is not trusted here (unable to get local issuer "
                    f"certificate); it reads REQUESTS_CA_BUNDLE={certifi.where()}, not SSL_CERT_FILE: unset "
                    "REQUESTS_CA_BUNDLE (forgebot then gives SSL_CERT_FILE's certificates to every client) or add "
                    "the CA there")
    assert missing.code == 2 and missing.err == [
        f"forgebot: SSL_CERT_FILE={tmp_path / 'no-such.pem'}: no readable file there; it must name the CA "
        "certificates (PEM) forgebot's clients are to trust"]


def test_the_install_line_says_which_ca_and_which_secrets_an_install_gets(tmp_path: Path) -> None:
    """What an operator set for a company registry, checked before a task's install fails on it: the CA file
    installs trust, which install each secret goes to, and a secret that can never work."""
    ca, _ = private_ca(tmp_path)
    only = [arg for name in (*ONLY_SANDBOX[1::2], "sandbox") for arg in ("--skip", name)]
    env = {"FORGEBOT_DATA_DIR": str(tmp_path / "data"), "https_proxy": "", "HTTPS_PROXY": "", **NO_CA,
           "SSL_CERT_FILE": str(ca)}
    auth = '{"COMPOSER_AUTH": "{\\"http-basic\\": {\\"registry.corp\\": {\\"username\\": \\"bot\\", ' \
           '\\"password\\": \\"s3cret-registry-pass\\"}}}"}'
    given = forgebot("check", *only, cwd=tmp_path, FORGEBOT_SANDBOX__INSTALL_SECRETS=auth, **env)
    assert _row(given, "install") == (
        "ok", f"installs that ask for network connect directly; they trust the CAs of SSL_CERT_FILE={ca} and the "
              "public ones; COMPOSER_AUTH to the php install")
    assert "s3cret-registry-pass" not in given.text
    unknown = forgebot("check", *only, cwd=tmp_path, FORGEBOT_SANDBOX__INSTALL_SECRETS='{"NPM_TOKEN": "t0ken-value"}',
                       **env)
    assert unknown.code == 1 and _row(unknown, "install") == (
        "FAIL", "FORGEBOT_SANDBOX__INSTALL_SECRETS names NPM_TOKEN, which no profile's install takes (they take: "
                "COMPOSER_AUTH (php)); it is never given")
    broken = forgebot("check", *only, cwd=tmp_path, FORGEBOT_SANDBOX__INSTALL_SECRETS='{"COMPOSER_AUTH": "bot:pw"}',
                      **env)
    assert broken.code == 1 and _row(broken, "install")[1].startswith(
        "COMPOSER_AUTH in FORGEBOT_SANDBOX__INSTALL_SECRETS is not a JSON object")


@pytest.mark.parametrize("config", ["refused", "allowed"])
def test_a_redis_that_may_evict_queued_jobs_fails_the_redis_line_also_where_config_is_refused(
    tmp_path: Path, config: str,
) -> None:
    """A managed Redis (ElastiCache's default policy is volatile-lru) refuses CONFIG: the receiver and the
    worker logged "could not read redis maxmemory-policy" and `forgebot check` said only "PING answered",
    while arq's expiring job keys were Redis's to evict. INFO says the policy; the line fails on it."""
    from bot.cli.redisserver import redis_binary

    directory = Path(tempfile.mkdtemp(prefix="fb-mr-"))  # short: a Unix socket's path is limited
    socket = directory / "r.sock"
    args = [redis_binary(), "--port", "0", "--unixsocket", str(socket), "--save", "", "--appendonly", "no",
            "--maxmemory", "64mb", "--maxmemory-policy", "volatile-lru", "--dir", str(directory)]
    if config == "refused":
        args += ["--rename-command", "CONFIG", ""]
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if socket.exists():
                break
            time.sleep(0.05)
        said = forgebot("check", *(f"--skip={name}" for name in ("store", "gitlab", "github", "model", "embedder",
                                                                 "sandbox", "install", "signing", "hooks")),
                        cwd=tmp_path, FORGEBOT_DATA_DIR=str(tmp_path / "data"), FORGEBOT_REDIS_URL=f"unix://{socket}")
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(directory, ignore_errors=True)
    assert said.code == 1
    (line,) = [text for text in said.out if text.startswith("redis")]
    assert line.split()[1] == "FAIL", line
    assert "; maxmemory-policy volatile-lru: under memory pressure Redis evicts queued jobs" in line
    assert line.endswith("set it to noeviction (a managed Redis: in its parameter group)")
