"""A real git checkout of the PHP fixture project, its real code index, and a graph runner."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel

from foundation.forge import AccessLevel, Issue, IssueRef, RepoRef
from foundation.settings import Settings
from graph.checkout import index_checkout
from graph.deps import Deps
from graph.state import TaskState
from tests.fakes.forge import FakeForge
from tests.graph.checkpointed import run_task
from tests.graph.conftest import FIXTURES, init_repo

REPO = RepoRef(forge="gitlab", project="1", path="group/app")
ISSUE = IssueRef(repo=REPO, number=5)
MEMBER, STRANGER = 7, 99


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "php_project"
    shutil.copytree(FIXTURES / "php_project", root)
    return init_repo(root)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(_env_file=None, _secrets_dir=None, data_dir=tmp_path / "data")  # type: ignore[call-arg]


@pytest.fixture
def forge() -> FakeForge:
    fake = FakeForge()
    fake.issues[ISSUE] = Issue(ref=ISSUE, title="Add subtraction", body="The calculator cannot subtract.",
                               author="alice", author_id=MEMBER)
    fake.access[(REPO.project, MEMBER)] = AccessLevel.DEVELOPER
    fake.access[(REPO.project, STRANGER)] = AccessLevel.REPORTER
    return fake


def task_state(root: Path, settings: Settings, **extra: Any) -> TaskState:
    state = TaskState(task_id="t1", mode="analyze", forge="gitlab", repo=REPO.model_dump(), number=5,
                      title="Add subtraction", body="The calculator cannot subtract.", workspace=str(root),
                      started_at=0.0, tokens=0, models=[])
    state.update(index_checkout(settings.data_dir, "gitlab-1", root, "t1"))  # type: ignore[typeddict-item]
    state.update(extra)  # type: ignore[typeddict-item]
    return state


class Runner:
    """One task's graph as the job runs it (`tests.graph.checkpointed`): run, then resume with an answer."""

    def __init__(self, settings: Settings, forge: FakeForge, models: Callable[[str], BaseChatModel],
                 start: TaskState) -> None:
        self.deps = Deps(settings=settings, forge=forge, model_for=models)
        self.start = start
        self.visited: list[str] = []

    async def run(self, answer: dict[str, str] | None = None) -> dict[str, Any]:
        result, self.visited = await run_task(self.deps.settings, self.deps, self.start, self.start["task_id"], answer)
        return result
