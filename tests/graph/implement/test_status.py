"""The status comment on the implement route: planning, the checklist item, checks, review, publishing."""

from __future__ import annotations

from typing import Any, cast

from bot.forge import IssueRef, RepoRef
from bot.forge.models import Reaction
from bot.settings import Settings
from graph import status
from graph.state import TaskState
from tests.graph.implement import route
from tests.graph.implement.conftest import Project, git
from tests.graph.statusforge import StatusForge, acknowledged


def _roles() -> dict[str, Any]:
    return route.models(
        decomposer=[route.decomposition()], analyzer=[route.analysis()],
        planner=[route.plan(route.ONE_ITEM)], architect=route.approve_plan(),
        coder=route.coder_happy(), reviewer=route.review(),
    )


async def _task(project: Project, settings: Settings, forge: StatusForge) -> tuple[dict[str, Any], IssueRef]:
    """The job's part around the graph: acknowledge on the issue, run, conclude."""
    issue = IssueRef(repo=RepoRef.model_validate(route.initial(project)["repo"]), number=7)
    acked = await acknowledged(forge, cast(TaskState, route.initial(project)), issue)
    state, _ = await route.run(project, settings, _roles(), forge, {"status_comment_id": acked["status_comment_id"]})
    await status.conclude(forge, cast(TaskState, state), str(state["outcome"]))
    return state, issue


async def test_the_status_comment_walks_the_implement_phases(project: Project, settings: Settings) -> None:
    forge = StatusForge()
    state, issue = await _task(project, settings, forge)
    assert state["outcome"] == "delivered"
    assert forge.reactions == [(issue, Reaction.EYES)]
    assert forge.phases == ["started", "understanding the issue", "investigating", "planning",
                            "implementing: item 1 of 1", "running checks", "reviewing", "publishing",
                            "done (delivered)"]
    (comment,) = forge.status_comments(issue)
    assert "- [x] 1. Add multiply with its test" in comment  # the checklist as it ended
    assert "forgebot · task task9 · mode implement" in comment
    (link,) = forge.others(issue)  # the issue's link to the change is still its own comment
    assert "Opened !" in link


async def test_a_retry_and_a_refusing_forge_leave_the_change_as_it_was(project: Project, settings: Settings) -> None:
    forge = StatusForge()
    for fail in (False, False, True):  # retried twice; the last time every status write fails
        git(project.root, "reset", "-q", "--hard", project.base)
        forge.fail_status = fail
        state, issue = await _task(project, settings, forge)
        assert state["outcome"] == "delivered" and len(forge.changes) == 1
        assert len(forge.status_comments(issue)) == 1 and len(forge.others(issue)) == 1
    assert forge.phases.count("done (delivered)") == 2
