"""The repository the end-to-end tasks analyse: the PHP fixture project as a bare repository,
served over HTTP by `git http-backend`, and webhook bodies pointed at it."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from foundation.settings import Settings
from graph.failure import TaskFailure
from tests.fakes.forge_http import FakeForgeState
from tests.fakes.git_http import create_git_server
from tests.fakes.server import serving
from tests.graph.conftest import FIXTURES, init_repo
from tests.intake import deliveries
from tests.intake.payloads import serve_samples

SAMPLE_CLONE_URLS = ("http://example.com/gitlabhq/gitlab-test.git", "https://github.com/Codertocat/Hello-World.git")


@pytest.fixture
def origin_url(tmp_path: Path, settings: Settings, fake_forge: FakeForgeState) -> Iterator[str]:
    """The clone URL of the fixture project (a bare repository with `main` and `master`), which the
    fake forge's API gives as every sample repository's `http_url_to_repo` / `clone_url`."""
    work = init_repo(shutil.copytree(FIXTURES / "php_project", tmp_path / "work"))
    served = tmp_path / "served"
    served.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(served / "app.git")], check=True)
    # the GitLab sample's default branch is `master`, the GitHub sample's `main`
    subprocess.run(["git", "-C", str(served / "app.git"), "branch", "master", "main"], check=True)
    with serving(create_git_server(served, None)) as server:
        settings.workspace.git_hosts = (server.url,)  # the test git server is not the fake API's port
        serve_samples(fake_forge, settings, clone_url=f"{server.url}/app.git", git_dir=str(served / "app.git"))
        yield f"{server.url}/app.git"


def pointed_at(body: bytes, url: str) -> bytes:
    """A webhook sample whose repository clone URL is `url` (the worker ignores it: the forge's API
    answers the clone URL; this keeps the payloads looking like the forge's)."""
    for sample_url in SAMPLE_CLONE_URLS:
        body = body.replace(sample_url.encode(), url.encode())
    return body


def allow_http_git(settings: Settings) -> None:
    settings.workspace.allowed_protocols = ("http",)


class NeedInfoScript:
    """Scripted models of one task that asks first: questions, then criteria once answered."""

    def __init__(self) -> None:
        from graph.schemas import AcceptanceCriterion, Analysis, Decomposition, Evidence
        from tests.fakes.model_server import answer, scripted
        from tests.graph.runtime.script import call

        self.decomposer = scripted([
            answer(Decomposition, Decomposition(questions=["Integers or floats?", "Which class?"])),
            answer(Decomposition, Decomposition(criteria=[AcceptanceCriterion(id=1, text="subtract(5, 3) is 2")])),
        ])
        analysis = Analysis(summary="subtract() goes beside add()", affected_files=["src/Calculator.php"],
                            evidence=[Evidence(path="src/Calculator.php", start_line=9, end_line=12, note="add()")])
        self.analyzer = scripted([call("finish_exploration", files=["src/Calculator.php"], reason="add() found"),
                                  answer(Analysis, analysis)])

    def __call__(self, role: str) -> Any:
        return {"decomposer": self.decomposer, "analyzer": self.analyzer}[role]


async def post(settings: Settings, forge: str, body: bytes, headers: dict[str, str]) -> int:
    """Deliver one webhook to a real receiver over HTTP; the status code."""
    import httpx

    from bot.web.app import create_app

    with serving(create_app(settings)) as receiver:
        async with httpx.AsyncClient() as client:
            response = await client.post(receiver.url + deliveries.path(forge, body), content=body, headers=headers)
    return response.status_code


async def work(settings: Settings, models: Any) -> Any:
    """Run a burst worker on the real Redis until the queue is empty; the worker, for its counters."""
    from bot.intake.identity import Identities
    from bot.worker.jobs import build_worker

    assert settings.redis_url
    worker = build_worker(settings, settings.redis_url, model_factory=models, burst=True, handle_signals=False,
                          identities=Identities(settings))  # as `forgebot worker`: the bot's identity first
    try:
        await worker.main()
    finally:
        await worker.close()
    return worker


async def failure_of_task(settings: Settings) -> TaskFailure:
    """The failure record of the one task the store holds."""
    from bot.tasks.inbox import Inbox

    inbox = await Inbox.open(sqlite_path=settings.inbox_path)
    try:
        (task,) = await inbox.tasks()
    finally:
        await inbox.close()
    record = TaskFailure.from_json(task.failure)
    assert record is not None
    return record


async def task_states(settings: Settings) -> list[tuple[str, str]]:
    from bot.tasks.inbox import Inbox

    inbox = await Inbox.open(sqlite_path=settings.inbox_path)
    try:
        return [(t.state, t.detail) for t in await inbox.tasks()]
    finally:
        await inbox.close()
