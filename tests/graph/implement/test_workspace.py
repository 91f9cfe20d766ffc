"""The job prepares the implement route's worktree: mirror, task branch, base commit."""

from __future__ import annotations

from pathlib import Path

from bot.tasks.events import Actor, ForgeEvent
from bot.worker.jobs import prepare_workspace
from foundation.forge import RepoRef
from foundation.settings import Settings
from tests.fakes.forge import FakeForge
from tests.graph.implement.conftest import Project, git


async def test_prepare_workspace_gives_a_task_branch_from_the_default_branch(
    project: Project, settings: Settings
) -> None:
    repo = RepoRef(forge="gitlab", project="1", path="group/app", clone_url=str(project.origin))
    event = ForgeEvent(forge="gitlab", delivery_id="d1", repo=repo, target="issue", number=7, trigger="label",
                       actor=Actor(id=1, username="dev"), mode="implement", title="Add multiplication!")
    first = await prepare_workspace(settings, FakeForge(), event, "task9")
    assert first["branch"] == "forgebot/7-add-multiplication" and first["base"] == project.base
    root = Path(first["workspace"])
    assert git(root, "symbolic-ref", "--short", "HEAD").strip() == "forgebot/7-add-multiplication"
    again = await prepare_workspace(settings, FakeForge(), event, "task9")  # a retried job reuses it
    assert again == first
