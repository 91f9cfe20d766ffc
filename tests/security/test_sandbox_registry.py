"""An install from a company's own package registry, as the check sandbox runs it.

The registry is reached only through the corporate proxy (its name resolves nowhere else) and its
certificate is signed by the company's CA. The install sees none of the worker's variables, so the CA the
operator named (`SSL_CERT_FILE`, `foundation.cabundle`) never reached it: composer refused the registry's
certificate and every implement task's checks ended at `install failed`. The sandbox now gives an install
with network its own copy of the operator's certificates and the public CAs, named by each installer's
variable. A CA certificate is no secret; the proxy's password still never enters the install.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from foundation import cabundle
from project.checks import context_for, run_checks
from project.repoconfig import parse_repo_config
from tests.fakes.connect_proxy import ConnectProxy
from tests.fakes.private_ca import private_ca
from tests.fakes.server import serving
from tests.security.test_sandbox_host import ENV, _settings, _worker_files, host  # noqa: F401 - `host` is a fixture
from tests.tools import need, need_namespaces

REGISTRY = "registry.corp.invalid"
HELLO = "<?php\nnamespace Acme\\Hello;\n\nfinal class Hello\n{\n    public static function greet(): string\n" \
        "    {\n        return 'hello from the company registry';\n    }\n}\n"


def _registry() -> Starlette:
    """A Composer repository (`packages.json`) with one package, `acme/hello`, as a zip."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("hello/src/Hello.php", HELLO)  # one top directory: composer unpacks its content
    package = {"name": "acme/hello", "version": "1.0.0", "type": "library",
               "dist": {"type": "zip", "url": f"https://{REGISTRY}/dist/hello-1.0.0.zip"},
               "autoload": {"psr-4": {"Acme\\Hello\\": "src/"}}}

    async def packages(request: Request) -> Response:
        return JSONResponse({"packages": {"acme/hello": {"1.0.0": package}}})

    async def dist(request: Request) -> Response:
        return Response(archive.getvalue(), media_type="application/zip")

    return Starlette(routes=[Route("/packages.json", packages), Route("/dist/hello-1.0.0.zip", dist)])


@pytest.mark.parametrize("named", [True, False], ids=["ca-named", "ca-not-named"])
def test_composer_installs_from_a_registry_whose_certificate_the_operators_ca_signed(
    host: Path, monkeypatch: pytest.MonkeyPatch, named: bool  # noqa: F811 - the fixture
) -> None:
    need_namespaces()
    need(shutil.which("composer") is not None, "composer")
    ca, tls = private_ca(host, REGISTRY)
    for name in cabundle.FILES:  # this machine names its system bundle in each: the operator's choice here
        monkeypatch.delenv(name, raising=False)
    if named:
        monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    worktree = _worker_files(host, os.geteuid())["worktree"]
    (worktree / "composer.json").write_text(json.dumps({
        "repositories": [{"type": "composer", "url": f"https://{REGISTRY}"}, {"packagist.org": False}],
        "require": {"acme/hello": "1.0.0"},
    }))
    # the php profile's own install (composer install --no-scripts --no-plugins …); the test uses what it left
    greet = "php -r 'require \"vendor/autoload.php\"; echo Acme\\Hello\\Hello::greet(), PHP_EOL;'"
    config = parse_repo_config(f"profile: php\ncommands:\n  install_network: true\n  test: {json.dumps(greet)}\n"
                               "  lint: false\n")
    with serving(_registry(), tls) as registry:
        proxy = ConnectProxy(routes={f"{REGISTRY}:443": ("127.0.0.1", registry.port)})
        try:
            settings = _settings(host / "data", install_proxy=proxy.url)
            install, test = run_checks(context_for(worktree, config, [], settings, ENV), ("install", "test")).results
        finally:
            proxy.close()
    assert proxy.targets and set(proxy.targets) == {f"{REGISTRY}:443"}  # the registry, by name, through the proxy
    assert install.command and install.command.startswith("composer install"), install.command
    if named:
        assert install.status == "passed", install.output
        assert test.status == "passed" and "hello from the company registry" in test.output, test.output
    else:
        assert install.status == "failed", install.output
        assert "certificate verify failed" in install.output, install.output
