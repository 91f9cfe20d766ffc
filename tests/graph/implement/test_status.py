"""The status comment on the implement route: planning, the checklist item, checks, review, publishing."""

from __future__ import annotations

from typing import Any, cast

from foundation.forge import IssueRef, RepoRef
from foundation.forge.models import Reaction
from foundation.settings import Settings
from graph import status
from graph.state import TaskState
from tests.graph.implement import route
from tests.graph.implement.conftest import Project, git
from tests.graph.statusforge import StatusForge, acknowledged

TWO = [route.item(1, "Add multiply", route.CALC), route.item(2, "Test multiply", route.TEST)]


def _roles(items: list[dict[str, Any]] = route.ONE_ITEM, coder: list[Any] | None = None) -> dict[str, Any]:
    return route.models(
        decomposer=[route.decomposition()], analyzer=[route.analysis()],
        planner=[route.plan(items)], architect=route.approve_plan(),
        coder=coder or route.coder_happy(), reviewer=route.review(),
    )


async def _task(project: Project, settings: Settings, forge: StatusForge,
                roles: dict[str, Any] | None = None) -> tuple[dict[str, Any], IssueRef]:
    """The job's part around the graph: acknowledge on the issue, run, conclude."""
    issue = IssueRef(repo=RepoRef.model_validate(route.initial(project)["repo"]), number=7)
    acked = await acknowledged(forge, cast(TaskState, route.initial(project)), issue)
    extra = {"status_comment_id": acked["status_comment_id"]}
    state, _ = await route.run(project, settings, roles or _roles(), forge, extra)
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


async def test_each_checklist_item_moves_the_status_once(project: Project, settings: Settings) -> None:
    coder = [route.patch(route.CALC, route.CALCULATOR, route.MULTIPLY),
             route.call("read_file_snippet", path=route.CALC, start_line=1, end_line=5),  # tool calls: no edit
             route.call("complete_item", item_id=1, note="multiply added"),
             route.patch(route.TEST, route.CALCULATOR_TEST, route.MULTIPLY_TEST),
             route.call("complete_item", item_id=2, note="tested"), route.call("finish")]
    forge = StatusForge()
    state, issue = await _task(project, settings, forge, _roles(TWO, coder))
    assert state["outcome"] == "delivered"
    implementing = [p for p in forge.phases if p.startswith("implementing")]
    assert implementing == ["implementing: item 1 of 2", "implementing: item 2 of 2"]
    second = forge.status_bodies[forge.phases.index("implementing: item 2 of 2")]
    assert "- [x] 1. Add multiply" in second and "- [ ] 2. Test multiply" in second
    assert forge.phases[-4:] == ["running checks", "reviewing", "publishing", "done (delivered)"]
