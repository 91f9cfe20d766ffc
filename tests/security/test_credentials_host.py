"""Forge credentials go only to the configured forge host (defence in depth).

An attacker's host is a plain loopback socket server on another port: it must see no connection
at all, so no `Authorization` header can reach it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from foundation.forge import GitCredentials
from foundation.settings import Settings, WorkspaceSettings
from foundation.workspace import CredentialsRefused, Workspaces, forge_origins

TOKEN = "glpat-secret-token-123"
AUTH = GitCredentials(username="oauth2", token=SecretStr(TOKEN))


def _spaces(tmp_path: Path, forge_port: int) -> Workspaces:
    settings = Settings(
        data_dir=tmp_path,
        gitlab={"url": f"http://127.0.0.1:{forge_port}/gitlab"},  # type: ignore[arg-type]
        workspace=WorkspaceSettings(allowed_protocols=("http",)),
    )
    return Workspaces.for_settings(settings)


async def test_mirror_refuses_credentials_for_another_host(tmp_path: Path, attacker: tuple[int, list[bytes]]) -> None:
    port, received = attacker
    spaces = _spaces(tmp_path, port + 1 if port < 65535 else port - 1)
    with pytest.raises(CredentialsRefused) as refused:
        await spaces.mirror("gitlab-1", f"http://127.0.0.1:{port}/victim/repo.git", auth=AUTH)
    assert TOKEN not in str(refused.value)
    assert received == []


async def test_push_refuses_credentials_for_another_host(tmp_path: Path, attacker: tuple[int, list[bytes]]) -> None:
    port, received = attacker
    spaces = _spaces(tmp_path, port + 1 if port < 65535 else port - 1)
    with pytest.raises(CredentialsRefused):
        await spaces.push(tmp_path, f"http://127.0.0.1:{port}/victim/repo.git", "forgebot/1-a", auth=AUTH)
    assert received == []


async def test_same_host_other_scheme_is_refused(tmp_path: Path, attacker: tuple[int, list[bytes]]) -> None:
    port, received = attacker
    spaces = _spaces(tmp_path, port)
    with pytest.raises(CredentialsRefused):
        await spaces.mirror("gitlab-1", f"https://127.0.0.1:{port}/victim/repo.git", auth=AUTH)
    assert received == []


def test_github_origins_default_to_github_com() -> None:
    assert ("https", "github.com", 443) in forge_origins(Settings())
    assert ("https", "gitlab.com", 443) in forge_origins(Settings())
