"""git behind a private CA and an outbound proxy: what a self-managed forge or a corporate network needs.

The hardened runner gives git none of the worker's environment (`foundation.gitrunner`), so an
operator's `GIT_SSL_CAINFO` and `https_proxy` reach it only through the runner's short allow-list
of network settings. The API clients (requests, httpx) read the same variables; without them git
alone failed: the mirror said "SSL certificate problem" or could not connect, while every API call
worked. Turning verification off (`GIT_SSL_NO_VERIFY`) is not on the list: TLS stays verified.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from foundation.forge import GitCredentials
from foundation.gitrunner import GitError
from foundation.settings import WorkspaceSettings
from foundation.workspace import Origin, Workspaces, origin_of
from tests.bot.test_workspace import git, make_origin
from tests.fakes.connect_proxy import ConnectProxy
from tests.fakes.git_http import create_git_server
from tests.fakes.private_ca import private_ca
from tests.fakes.server import serving

TOKEN = "glpat-network-token-never-stored"
AUTH = GitCredentials(username="oauth2", token=SecretStr(TOKEN))
EXPECTED = "Basic " + base64.b64encode(f"oauth2:{TOKEN}".encode()).decode()


@pytest.fixture
def private_forge(tmp_path: Path) -> Iterator[tuple[str, Path, Origin]]:
    """The URL of a repository served over HTTPS by a private CA's certificate, the CA file, the origin."""
    origin = make_origin(tmp_path)
    ca, tls = private_ca(tmp_path)
    with serving(create_git_server(origin.parent, EXPECTED), tls) as server:
        found = origin_of(server.url)
        assert found is not None
        yield f"{server.url}/{origin.name}", ca, found


def _workspaces(tmp_path: Path, origin: Origin) -> Workspaces:
    return Workspaces(tmp_path / "ws", WorkspaceSettings(allowed_protocols=("https",)), origins=frozenset({origin}))


async def test_the_operators_ca_bundle_reaches_git(private_forge: tuple[str, Path, Origin], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    url, ca, origin = private_forge
    with pytest.raises(GitError, match="certificate"):  # verified against the system's CAs: refused
        await _workspaces(tmp_path, origin).mirror("gitlab-1", url, AUTH)
    monkeypatch.setenv("GIT_SSL_NO_VERIFY", "1")  # never passed on: verification cannot be turned off
    with pytest.raises(GitError, match="certificate"):
        await _workspaces(tmp_path, origin).mirror("gitlab-1", url, AUTH)
    monkeypatch.setenv("GIT_SSL_CAINFO", str(ca))
    mirror = await _workspaces(tmp_path, origin).mirror("gitlab-1", url, AUTH)
    assert git("rev-parse", "refs/remotes/origin/main", cwd=mirror)


async def test_git_goes_through_the_operators_proxy(private_forge: tuple[str, Path, Origin], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    url, ca, origin = private_forge
    proxy = ConnectProxy()
    try:
        monkeypatch.setenv("GIT_SSL_CAINFO", str(ca))
        monkeypatch.setenv("https_proxy", proxy.url)
        await _workspaces(tmp_path, origin).mirror("gitlab-1", url, AUTH)
        assert proxy.targets and set(proxy.targets) == {f"127.0.0.1:{origin[2]}"}
        monkeypatch.setenv("no_proxy", "127.0.0.1")  # the operator's exceptions hold too
        before = len(proxy.targets)
        await _workspaces(tmp_path, origin).mirror("gitlab-1", url, AUTH)
        assert len(proxy.targets) == before
    finally:
        proxy.close()
