"""Fixtures of the first-day suite: a wire-level model server, the fake forge set up with one issue,
and `launch`, which starts `forgebot` commands as processes and stops them after the test."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import GITLAB_SECRET, GITLAB_TOKEN
from tests.e2e.conftest import origin_url  # noqa: F401 - a fixture, used by name
from tests.fakes.forge_http import FakeForgeState, FakeIssue
from tests.fakes.model_server import ModelServer
from tests.fakes.server import ServerThread, free_port
from tests.firstday.service import Service, environment

Launch = Callable[..., Service]
MODEL_KEY = "sk-first-day-test-key-0123456789abcdef"
ISSUE = 23  # the GitLab label sample's issue, in project 1


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer() as running:
        yield running


@pytest.fixture
def forge_env(forge_server: ServerThread, fake_forge: FakeForgeState, origin_url: str) -> dict[str, str]:  # noqa: F811
    """GitLab settings for the fake forge, whose project 1 holds issue 23 and clones from `origin_url`."""
    fake_forge.grant("gitlab", "1", "1", 30)  # the sample's actor (root, id 1) is a developer
    fake_forge.grant("gitlab", "1", "7", 30)  # the issue's author: its text reaches the model
    fake_forge.add_issue("gitlab", "1", ISSUE, FakeIssue(title="Subtraction", body="The calculator cannot subtract."))
    return {
        "FORGEBOT_GITLAB__URL": f"{forge_server.url}/gitlab",
        "FORGEBOT_GITLAB__TOKEN": GITLAB_TOKEN,
        "FORGEBOT_GITLAB__WEBHOOK_SECRET": GITLAB_SECRET,
        "FORGEBOT_GITLAB__TIMEOUT": "5",
        "FORGEBOT_TRIGGERS__ANALYZE_LABEL": "Platform",  # the label the GitLab sample adds
        "FORGEBOT_WORKSPACE__ALLOWED_PROTOCOLS": '["http"]',
        "FORGEBOT_WORKSPACE__GIT_HOSTS": json.dumps([origin_url.rsplit("/", 1)[0]]),
    }


def model_env(model: ModelServer, **extra: str) -> dict[str, str]:
    return {"FORGEBOT_LLM__BASE_URL": model.openai_url, "FORGEBOT_LLM__MODEL": model.model,
            "FORGEBOT_LLM__API_KEY": MODEL_KEY, "FORGEBOT_LLM__TIMEOUT": "10", **extra}


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Launch]:
    """`launch(command, **env)`: a started `forgebot <command>`; every one is stopped at teardown.

    The data directory is short-named in /tmp (the private Redis's Unix socket path is limited) and
    shared by the commands one test launches (`web` and `worker` of one installation)."""
    data_dir = Path(tempfile.mkdtemp(prefix="fb-day-"))
    started: list[Service] = []

    def start(command: str = "serve", *, port: int | None = None, **env: str) -> Service:
        port = port or free_port()
        service = Service(command, environment(data_dir, port, **env), data_dir, f"http://127.0.0.1:{port}",
                          data_dir / f"{command}-{len(started)}.log", tmp_path)
        started.append(service.start())
        return service

    yield start
    for service in reversed(started):
        service.stop(timeout=60)
        service.http.close()
    shutil.rmtree(data_dir, ignore_errors=True)
