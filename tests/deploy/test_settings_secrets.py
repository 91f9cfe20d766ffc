"""Secrets from files: the layout the chart mounts (`FORGEBOT_SECRETS_DIR`, nested names)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from foundation.settings import Settings


def _write(directory: Path, name: str, value: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(value, encoding="utf-8")


def test_nested_secret_files_fill_nested_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = tmp_path / "secrets"
    _write(secrets, "gitlab__token", "glpat-from-file\n")  # `echo > file` adds a newline
    _write(secrets, "github__webhook_secret", "gh-hook")
    _write(secrets, "llm__api_key", "sk-file")
    _write(secrets, "redis_url", "redis://redis:6379/0")
    monkeypatch.setenv("FORGEBOT_SECRETS_DIR", str(secrets))

    settings = Settings.load()

    assert settings.gitlab.token is not None
    assert settings.gitlab.token.get_secret_value() == "glpat-from-file"
    assert settings.github.webhook_secret is not None
    assert settings.github.webhook_secret.get_secret_value() == "gh-hook"
    assert settings.llm.api_key is not None and settings.llm.api_key.get_secret_value() == "sk-file"
    assert settings.redis_url == "redis://redis:6379/0"


def test_environment_wins_over_files_and_siblings_survive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = tmp_path / "secrets"
    _write(secrets, "gitlab__token", "from-file")
    _write(secrets, "gitlab__webhook_secret", "hook-from-file")
    monkeypatch.setenv("FORGEBOT_SECRETS_DIR", str(secrets))
    monkeypatch.setenv("FORGEBOT_GITLAB__TOKEN", "from-env")
    monkeypatch.setenv("FORGEBOT_GITLAB__URL", "https://gitlab.example.org")

    settings = Settings.load()

    assert settings.gitlab.token is not None and settings.gitlab.token.get_secret_value() == "from-env"
    assert settings.gitlab.webhook_secret is not None
    assert settings.gitlab.webhook_secret.get_secret_value() == "hook-from-file"
    assert settings.gitlab.url == "https://gitlab.example.org"


def test_kubernetes_secret_volume_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Secret volume holds `..data -> ..<timestamp>/` and one symlink per key into `..data`."""
    secrets = tmp_path / "secrets"
    real = secrets / "..2026_12_02_14_00_00.000000001"
    _write(real, "gitlab__token", "glpat-k8s")
    os.symlink(real.name, secrets / "..data")
    os.symlink("..data/gitlab__token", secrets / "gitlab__token")
    monkeypatch.setenv("FORGEBOT_SECRETS_DIR", str(secrets))

    settings = Settings.load()

    assert settings.gitlab.token is not None and settings.gitlab.token.get_secret_value() == "glpat-k8s"


def test_missing_secrets_dir_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORGEBOT_SECRETS_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match="FORGEBOT_SECRETS_DIR=.*nowhere is not a directory"):
        Settings.load()


def test_secret_file_outside_the_directory_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    _write(tmp_path, "stolen", "outside")
    os.symlink(tmp_path / "stolen", secrets / "gitlab__token")
    monkeypatch.setenv("FORGEBOT_SECRETS_DIR", str(secrets))

    assert Settings.load().gitlab.token is None
