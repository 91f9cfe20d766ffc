"""An install from a company's own package registry, as the check sandbox runs it.

The registry is reached only through the corporate proxy (its name resolves nowhere else) and its
certificate is signed by the company's CA. The install sees none of the worker's variables, so the CA the
operator named (`SSL_CERT_FILE`, `foundation.cabundle`) never reached it: composer refused the registry's
certificate and every implement task's checks ended at `install failed`. The sandbox now gives an install
with network its own copy of the operator's certificates and the public CAs, named by each installer's
variable. A CA certificate is no secret; the proxy's password still never enters the install.
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from foundation import cabundle
from foundation.redact import redact, secrets_of
from project.checks import CheckResult, context_for, run_checks, sandbox_policy
from project.repoconfig import parse_repo_config
from project.sandbox import open_sandbox
from tests.fakes.connect_proxy import ConnectProxy
from tests.fakes.private_ca import private_ca
from tests.fakes.server import serving
from tests.security.test_sandbox_host import ENV, _settings, _worker_files, host  # noqa: F401 - `host` is a fixture
from tests.tools import need, need_namespaces

REGISTRY = "registry.corp.invalid"
HELLO = "<?php\nnamespace Acme\\Hello;\n\nfinal class Hello\n{\n    public static function greet(): string\n" \
        "    {\n        return 'hello from the company registry';\n    }\n}\n"


def _registry(password: str = "") -> Starlette:
    """A Composer repository (`packages.json`) with one package, `acme/hello`, as a zip; with `password`, every
    request must carry it (HTTP basic auth, user `bot`), as a private registry's do."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("hello/src/Hello.php", HELLO)  # one top directory: composer unpacks its content
    package = {"name": "acme/hello", "version": "1.0.0", "type": "library",
               "dist": {"type": "zip", "url": f"https://{REGISTRY}/dist/hello-1.0.0.zip"},
               "autoload": {"psr-4": {"Acme\\Hello\\": "src/"}}}
    expected = "Basic " + base64.b64encode(f"bot:{password}".encode()).decode()

    def refused(request: Request) -> Response | None:
        if password and request.headers.get("authorization") != expected:
            return Response("credentials required", 401, {"WWW-Authenticate": 'Basic realm="registry"'})
        return None

    async def packages(request: Request) -> Response:
        return refused(request) or JSONResponse({"packages": {"acme/hello": {"1.0.0": package}}})

    async def dist(request: Request) -> Response:
        return refused(request) or Response(archive.getvalue(), media_type="application/zip")

    return Starlette(routes=[Route("/packages.json", packages), Route("/dist/hello-1.0.0.zip", dist)])


GREET = "php -r 'require \"vendor/autoload.php\"; echo Acme\\Hello\\Hello::greet(), PHP_EOL;'"


def _checks(where: Path, monkeypatch: pytest.MonkeyPatch, *, ca_named: bool = True, password: str = "",
            commands: str = "", **sandbox: Any) -> tuple[list[CheckResult], ConnectProxy]:
    """The php profile's install (and the `commands` of `.forgebot.yml`) against the company registry."""
    need_namespaces()
    need(shutil.which("composer") is not None, "composer")
    ca, tls = private_ca(where, REGISTRY)
    for name in cabundle.FILES:  # this machine names its system bundle in each: the operator's choice here
        monkeypatch.delenv(name, raising=False)
    if ca_named:
        monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    worktree = _worker_files(where, os.geteuid())["worktree"]
    (worktree / "composer.json").write_text(json.dumps({
        "repositories": [{"type": "composer", "url": f"https://{REGISTRY}"}, {"packagist.org": False}],
        "require": {"acme/hello": "1.0.0"},
    }))
    config = parse_repo_config(f"profile: php\ncommands:\n  install_network: true\n  test: {json.dumps(GREET)}\n"
                               f"  lint: false\n{commands}")
    with serving(_registry(password), tls) as registry:
        proxy = ConnectProxy(routes={f"{REGISTRY}:443": ("127.0.0.1", registry.port)})
        try:
            settings = _settings(where / "data", install_proxy=proxy.url, **sandbox)
            context = context_for(worktree, config, [], settings, ENV)
            results = run_checks(context, ("install", "test", "smoke")).results
        finally:
            proxy.close()
    return list(results), proxy


@pytest.mark.parametrize("named", [True, False], ids=["ca-named", "ca-not-named"])
def test_composer_installs_from_a_registry_whose_certificate_the_operators_ca_signed(
    host: Path, monkeypatch: pytest.MonkeyPatch, named: bool  # noqa: F811 - the fixture
) -> None:
    results, proxy = _checks(host, monkeypatch, ca_named=named)
    install, test = results[:2]
    assert proxy.targets and set(proxy.targets) == {f"{REGISTRY}:443"}  # the registry, by name, through the proxy
    assert install.command and install.command.startswith("composer install"), install.command
    if named:
        assert install.status == "passed", install.output
        assert test.status == "passed" and "hello from the company registry" in test.output, test.output
    else:
        assert install.status == "failed", install.output
        assert "certificate verify failed" in install.output, install.output


PASSWORD = "registry-password-4f9c2b7e1d"
COMPOSER_AUTH = json.dumps({"http-basic": {REGISTRY: {"username": "bot", "password": PASSWORD}}})


def test_composer_installs_from_a_registry_that_asks_for_the_operators_credentials(
    host: Path, monkeypatch: pytest.MonkeyPatch  # noqa: F811 - the fixture
) -> None:
    """Before: no way to give the install a private registry's credentials (its HOME is fresh, the worker's
    environment never reaches it), so composer was refused (401) and the checks ended at `install failed`."""
    refused = _checks(host, monkeypatch, password=PASSWORD)[0][0]
    assert refused.status == "failed" and "401" in refused.output, refused.output
    given = {"COMPOSER_AUTH": COMPOSER_AUTH}
    install, test = _checks(host, monkeypatch, password=PASSWORD, install_secrets=given)[0][:2]
    assert install.status == "passed", install.output
    assert test.status == "passed" and "hello from the company registry" in test.output, test.output
    assert PASSWORD not in install.output + test.output


SHOW = "sh -c 'echo seen:$COMPOSER_AUTH:; env'"


@pytest.mark.parametrize("commands", [f"  install: {json.dumps(SHOW)}\n", f"  smoke: {json.dumps(SHOW)}\n"],
                         ids=["repository-install", "smoke"])
def test_a_command_the_repository_wrote_never_gets_the_operators_credentials(
    host: Path, monkeypatch: pytest.MonkeyPatch, commands: str  # noqa: F811 - the fixture
) -> None:
    """`.forgebot.yml` may replace the install (it keeps network) or add a smoke command: either could print
    the credentials into the merge request or send them anywhere its network reaches. Only the profile's own
    install, which runs none of the repository's code, gets them."""
    results, _ = _checks(host, monkeypatch, password=PASSWORD, install_secrets={"COMPOSER_AUTH": COMPOSER_AUTH},
                         commands=commands)
    shown = "\n".join(result.output for result in results)
    assert "seen::" in shown, shown  # the variable is empty where the command ran
    assert PASSWORD not in shown and "COMPOSER_AUTH=" not in shown, shown


def test_a_password_inside_the_json_of_a_secret_is_redacted_alone(tmp_path: Path) -> None:
    """What reaches a merge request (a gate's output) is redacted with the settings' secrets: a tool that
    prints one password of COMPOSER_AUTH alone is caught too, and a short user name is left alone."""
    settings = _settings(tmp_path, install_secrets={"COMPOSER_AUTH": COMPOSER_AUTH})
    said = redact(f"Authentication for {REGISTRY} as bot with {PASSWORD} failed", secrets_of(settings))
    assert PASSWORD not in said and "as bot with" in said, said


def test_a_link_a_check_left_in_home_is_never_written_through(
    host: Path, monkeypatch: pytest.MonkeyPatch  # noqa: F811 - the fixture
) -> None:
    """The copy of the CA is written from outside the sandbox (through its holder's root), as the worker's
    user: a link named like it, left by an earlier command of the run, pointed that write at a host file."""
    need_namespaces()
    ca, _ = private_ca(host)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    victim = host / "victim.txt"
    victim.write_text("the worker's own file\n")
    worktree = _worker_files(host, os.geteuid())["worktree"]
    policy = sandbox_policy(_settings(host / "data"), parse_repo_config(""))
    with open_sandbox(worktree, policy, ENV) as box:
        planted = box.run(f"ln -s {victim} $HOME/.forgebot-ca.pem && echo planted", policy)
        assert "planted" in planted.output, planted.output
        seen = box.run("echo cert:$SSL_CERT_FILE:", policy.model_copy(update={"network": True}))
    assert victim.read_text() == "the worker's own file\n"
    assert "cert::" in seen.output, seen.output  # the install keeps its tools' own CAs
