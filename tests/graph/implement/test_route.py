"""The implement route end to end on the PHP fixture: real git, real PHPUnit, scripted models."""

from __future__ import annotations

from bot.forge import IssueRef, RepoRef
from bot.settings import Settings
from tests.graph.implement import route
from tests.graph.implement.conftest import Project, git


def _change(forge: route.FakeForge) -> tuple[str, str]:
    (change,) = forge.changes.values()
    return change.source_branch, change.body


async def test_happy_path_opens_a_change_listing_gate_statuses(project: Project, settings: Settings) -> None:
    roles = route.models(
        decomposer=[route.decomposition()], analyzer=[route.analysis()],
        planner=[route.plan(route.ONE_ITEM)], architect=[route.approve_plan()],
        coder=[route.call("finish"), *route.coder_happy()], reviewer=[route.review()],
    )
    state, forge = await route.run(project, settings, roles)
    assert state["outcome"] == "delivered"
    branch, body = _change(forge)
    assert branch == "forgebot/7-add-multiplication"
    assert "| test_runner | `passed` |" in body and "| php-lint | `passed` |" in body
    assert "- [x] 1. Add multiply with its test" in body and "### Review: `approve`" in body
    assert "Calculator multiplies two integers" in body
    # the early finish was refused by code and the session went on
    refusal = [m for m in roles["coder"].received[1] if getattr(m, "name", "") == "finish"]
    assert "items still open" in str(refusal[0].content)
    pushed = git(project.origin, "log", "--format=%s", branch)
    assert pushed.splitlines()[0] == "Add multiply with its test"
    issue = IssueRef(repo=RepoRef.model_validate(state["repo"]), number=7)
    assert any("Opened !" in c for c in forge.comments[issue])
    assert "override contracts were not checked" in str(roles["planner"].received[0][-1].content).lower()


async def test_delivery_is_idempotent(project: Project, settings: Settings) -> None:
    forge = route.FakeForge()
    for _ in range(2):
        roles = route.models(
            decomposer=[route.decomposition()], analyzer=[route.analysis()],
            planner=[route.plan(route.ONE_ITEM)], architect=[route.approve_plan()],
            coder=route.coder_happy(), reviewer=[route.review()],
        )
        git(project.root, "reset", "-q", "--hard", project.base)
        await route.run(project, settings, roles, forge)
    assert len(forge.changes) == 1
