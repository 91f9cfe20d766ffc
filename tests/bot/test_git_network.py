"""git behind a private CA and an outbound proxy: what a self-managed forge or a corporate network needs.

The hardened runner gives git none of the worker's environment (`foundation.gitrunner`), so an
operator's `GIT_SSL_CAINFO` and `https_proxy` reach it only through the runner's short allow-list
of network settings. The API clients (requests, httpx) read the same variables; without them git
alone failed: the mirror said "SSL certificate problem" or could not connect, while every API call
worked. Turning verification off (`GIT_SSL_NO_VERIFY`) is not on the list: TLS stays verified.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from pydantic import SecretStr

from foundation.forge import GitCredentials
from foundation.gitrunner import GitError
from foundation.settings import WorkspaceSettings
from foundation.workspace import Origin, Workspaces, origin_of
from tests.bot.test_workspace import git, make_origin
from tests.fakes.connect_proxy import ConnectProxy
from tests.fakes.git_http import create_git_server
from tests.fakes.server import serving

TOKEN = "glpat-network-token-never-stored"
AUTH = GitCredentials(username="oauth2", token=SecretStr(TOKEN))
EXPECTED = "Basic " + base64.b64encode(f"oauth2:{TOKEN}".encode()).decode()


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _private_ca(directory: Path) -> tuple[Path, tuple[Path, Path]]:
    """A private CA's certificate, and (certificate, key) of a server at 127.0.0.1 it signed."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("forgebot test CA")).issuer_name(_name("forgebot test CA"))
          .public_key(ca_key.public_key()).serial_number(1).not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(hours=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    server = (x509.CertificateBuilder().subject_name(_name("127.0.0.1")).issuer_name(ca.subject)
              .public_key(key.public_key()).serial_number(2).not_valid_before(now - datetime.timedelta(hours=1))
              .not_valid_after(now + datetime.timedelta(hours=1))
              .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                             critical=False)
              .sign(ca_key, hashes.SHA256()))
    files = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    files[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    files[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return files[0], (files[1], files[2])


@pytest.fixture
def private_forge(tmp_path: Path) -> Iterator[tuple[str, Path, Origin]]:
    """The URL of a repository served over HTTPS by a private CA's certificate, the CA file, the origin."""
    origin = make_origin(tmp_path)
    ca, tls = _private_ca(tmp_path)
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
