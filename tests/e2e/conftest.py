"""The repository the end-to-end tasks analyse: the PHP fixture project as a bare repository,
served over HTTP by `git http-backend`, and webhook bodies pointed at it."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.settings import Settings
from tests.fakes.git_http import create_git_server
from tests.fakes.server import serving
from tests.graph.conftest import FIXTURES, init_repo

SAMPLE_CLONE_URLS = ("http://example.com/gitlabhq/gitlab-test.git", "https://github.com/Codertocat/Hello-World.git")


@pytest.fixture
def origin_url(tmp_path: Path) -> Iterator[str]:
    """The clone URL of the fixture project (a bare repository with `main` and `master`)."""
    work = init_repo(shutil.copytree(FIXTURES / "php_project", tmp_path / "work"))
    served = tmp_path / "served"
    served.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(served / "app.git")], check=True)
    # the GitLab sample's default branch is `master`, the GitHub sample's `main`
    subprocess.run(["git", "-C", str(served / "app.git"), "branch", "master", "main"], check=True)
    with serving(create_git_server(served, None)) as server:
        yield f"{server.url}/app.git"


def pointed_at(body: bytes, url: str) -> bytes:
    """A webhook sample whose repository clone URL is `url`."""
    for sample_url in SAMPLE_CLONE_URLS:
        body = body.replace(sample_url.encode(), url.encode())
    return body


def allow_http_git(settings: Settings) -> None:
    settings.workspace.allowed_protocols = ("http",)
