"""The implement route end to end on the PHP fixture: real git, real PHPUnit, scripted models."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from foundation.forge import IssueRef, RepoRef
from foundation.settings import EmbedderSettings, Settings
from graph.checkout import index_checkout
from project.index.taskindex import task_index_path
from tests.fakes.model_server import ScriptedModel, scripted
from tests.graph.implement import route
from tests.graph.implement.conftest import Project, git


def _change(forge: route.FakeForge) -> tuple[str, str]:
    (change,) = forge.changes.values()
    return change.source_branch, change.body


async def test_happy_path_opens_a_change_listing_gate_statuses(project: Project, settings: Settings) -> None:
    roles = route.models(
        decomposer=[route.decomposition()], analyzer=[route.analysis()],
        planner=[route.plan(route.ONE_ITEM)], architect=route.approve_plan(),
        coder=[route.call("finish"), *route.coder_happy()], reviewer=route.review(),
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
            planner=[route.plan(route.ONE_ITEM)], architect=route.approve_plan(),
            coder=route.coder_happy(), reviewer=route.review(),
        )
        git(project.root, "reset", "-q", "--hard", project.base)
        await route.run(project, settings, roles, forge)
    assert len(forge.changes) == 1


async def test_failing_test_leads_to_a_fix_round(project: Project, settings: Settings) -> None:
    roles = route.models(
        decomposer=[route.decomposition()], analyzer=[route.analysis()],
        planner=[route.plan(route.ONE_ITEM)], architect=route.approve_plan(),
        coder=[route.patch(route.CALC, route.CALCULATOR, route.WRONG_MULTIPLY),
               route.patch(route.TEST, route.CALCULATOR_TEST, route.MULTIPLY_TEST),
               route.call("complete_item", item_id=1, note="multiply"), route.call("finish"),
               # fix round: the failing test's output is in the prompt; the checklist has a Fix item
               route.patch(route.CALC, route.WRONG_MULTIPLY, route.MULTIPLY),
               route.call("complete_item", item_id=2, note="multiply multiplies"), route.call("finish")],
        reviewer=[*route.review(), *route.review()],  # the reviewer approves even while the test fails
    )
    state, forge = await route.run(project, settings, roles)
    assert state["outcome"] == "delivered" and state["rounds"]["review"] == 1
    # TaskState's reducers: one list of findings per fix round, context tokens kept for every role
    assert state["review_findings"] == [[]] and {"planner", "coder", "reviewer"} <= state["context_tokens"].keys()
    fix_prompt = str(roles["coder"].received[4][-1].content)
    assert "testMultiply" in fix_prompt and "gate test_runner failed" in fix_prompt
    _, body = _change(forge)
    assert "| test_runner | `passed` |" in body and "- [x] 2. Fix: gate test_runner failed" in body


async def test_failed_gate_is_never_reported_as_passed_when_the_reviewer_approves(
    project: Project, settings: Settings
) -> None:
    commented = route.WRONG_MULTIPLY.replace("    public function multiply",
                                             "    /** Multiplies. */\n    public function multiply")
    roles = route.models(
        decomposer=[route.decomposition()], analyzer=[route.analysis()],
        planner=[route.plan(route.ONE_ITEM)], architect=route.approve_plan(),
        coder=[route.patch(route.CALC, route.CALCULATOR, route.WRONG_MULTIPLY),
               route.patch(route.TEST, route.CALCULATOR_TEST, route.MULTIPLY_TEST),
               route.call("complete_item", item_id=1, note="multiply"), route.call("finish"),
               # the fix round changes something, but not the failing behaviour: no progress
               route.patch(route.CALC, route.WRONG_MULTIPLY, commented),
               route.call("complete_item", item_id=2, note="documented"), route.call("finish")],
        reviewer=[*route.review(), *route.review()],
    )
    state, forge = await route.run(project, settings, roles)
    assert state["outcome"] == "failed" and not forge.changes
    gates = {g["name"]: g["status"] for g in state["gates"]}
    assert gates["test_runner"] == "failed"
    issue = IssueRef(repo=RepoRef.model_validate(state["repo"]), number=7)
    (comment,) = forge.comments[issue]
    assert "no progress" in comment and "gate test_runner failed" in comment
    assert "could not finish" in comment and "kept on branch `forgebot/7-add-multiplication`" in comment
    assert git(project.origin, "rev-parse", "--verify", "forgebot/7-add-multiplication").strip()


async def test_looping_session_goes_to_planner_amend_with_completed_items_kept(
    project: Project, settings: Settings
) -> None:
    two = [route.item(1, "Add multiply", route.CALC), route.item(2, "Test multiply", route.TEST)]
    roles = route.models(
        decomposer=[route.decomposition()], analyzer=[route.analysis()],
        planner=[route.plan(two)], architect=route.approve_plan(),
        coder=[route.patch(route.CALC, route.CALCULATOR, route.MULTIPLY),
               route.call("complete_item", item_id=1, note="multiply added"),
               route.call("complete_item", item_id=2), route.call("complete_item", item_id=2),  # looping
               # second session, on the amended plan
               route.patch(route.TEST, route.CALCULATOR_TEST, route.MULTIPLY_TEST),
               route.call("complete_item", item_id=2, note="tested"), route.call("finish")],
        planner_amend=[route.plan([route.item(1, "Add testMultiply to the test case", route.TEST)])],
        reviewer=route.review(),
    )
    state, forge = await route.run(project, settings, roles)
    assert state["outcome"] == "delivered" and state["rounds"]["amend"] == 1
    after_close = roles["coder"].received[2]  # the first call after item 1 closed
    assert len(after_close) == 2, "the closed item's tool history is replaced by the progress summary"
    system = str(after_close[0].content)
    assert "[x] 1. Add multiply" in system and "note: multiply added" in system and "Next item: 2." in system
    assert "public function multiply" in system  # the changed file, injected again from disk
    amend_prompt = str(roles["planner_amend"].received[0][-1].content)
    assert "ADJUST_PLAN" in amend_prompt and "- 1. Add multiply — multiply added" in amend_prompt
    assert "looping" in amend_prompt and "nothing changed since item 2 began" in amend_prompt
    items = state["plan"]["items"]
    assert [(i["title"], i["status"]) for i in items] == [
        ("Add multiply", "done"), ("Add testMultiply to the test case", "done")]
    subjects = git(project.origin, "log", "--format=%s", "forgebot/7-add-multiplication").splitlines()
    assert subjects[:3] == ["Add testMultiply to the test case", "Add multiply", "initial"]


async def test_architect_rejection_goes_back_to_the_planner(project: Project, settings: Settings) -> None:
    missing = [route.item(1, "Add multiply", "src/Missing.php")]
    roles = route.models(
        decomposer=[route.decomposition()], analyzer=[route.analysis()],
        planner=[route.plan(missing, writable=("src/Missing.php",)),  # rejected by code, not the architect
                 route.plan([route.item(1, "Add multiply", route.CALC)], writable=(route.CALC,)),
                 route.plan(route.ONE_ITEM)],
        architect=[*route.verdict(False, "Add a test for multiply"), *route.approve_plan()],
        coder=route.coder_happy(), reviewer=route.review(),
    )
    state, forge = await route.run(project, settings, roles)
    assert state["outcome"] == "delivered" and state["rounds"]["architect"] == 2
    assert len(roles["architect"].received) == 4  # two sessions of two calls: the code-rejected plan never got one
    first_call = roles["architect"].received[0]
    assert "final class Calculator" in str(first_call[0].content)  # the plan's files, injected from disk
    assert "Override contracts were not checked" in str(first_call[1].content)
    second, third = (str(m[-1].content) for m in roles["planner"].received[1:])
    assert "src/Missing.php is in the write scope but does not exist" in second
    assert "Add a test for multiply" in third


async def test_architect_rounds_are_bounded(project: Project, settings: Settings) -> None:
    bad = route.plan([route.item(1, "Add multiply", "src/Missing.php")], writable=("src/Missing.php",))
    roles = route.models(decomposer=[route.decomposition()], analyzer=[route.analysis()], planner=[bad] * 4)
    state, forge = await route.run(project, settings, roles)
    assert state["outcome"] == "failed" and state["rounds"]["architect"] == 3
    issue = IssueRef(repo=RepoRef.model_validate(state["repo"]), number=7)
    assert "the plan was rejected" in forge.comments[issue][0]
    # the failure record says why too (a local run's closing line said "the task stopped without a result")
    from graph.failure import failure_of_state

    assert failure_of_state(state).reason.startswith("the plan was rejected: ")


class _BreaksIndexFirst(ScriptedModel):
    """The coder's model; before its first answer the task's index file is destroyed on disk."""

    index: str = ""

    async def _agenerate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        if not self.received:
            Path(self.index).write_bytes(b"not a database" * 512)
        return await super()._agenerate(messages, *args, **kwargs)


async def test_an_infrastructure_failure_in_the_coder_loop_is_reported_not_amended(
    project: Project, settings: Settings
) -> None:
    """An infrastructure failure is not disguised as a need to rewrite the plan."""
    index_checkout(settings.data_dir, "demo", project.root, "task9", EmbedderSettings(kind="off"))
    roles = route.models(
        decomposer=[route.decomposition()], analyzer=[route.analysis()],
        planner=[route.plan(route.ONE_ITEM)], architect=route.approve_plan(),
    )
    coder = scripted([route.call("semantic_search", query="add")], cls=_BreaksIndexFirst,
                     index=str(task_index_path(settings.data_dir, "task9")))
    roles["coder"] = coder  # no planner_amend script: reaching it would fail the run
    state, forge = await route.run(project, settings, roles)
    assert state["coder"]["end"] == "infrastructure"
    # SQLite names the damage by the first page it reads: the header (an index opened after the damage)
    # or a table's page (one opened before it)
    assert re.search(r"DatabaseError: (file is not a database|database disk image is malformed)",
                     state["coder"]["reason"])
    assert state["outcome"] == "failed" and "amend" not in state.get("rounds", {})
    issue = IssueRef(repo=RepoRef.model_validate(state["repo"]), number=7)
    (comment,) = forge.comments[issue]
    assert "could not finish this task: the coder stopped: semantic_search failed" in comment


async def test_plan_targets_are_checked_against_the_code_graph_before_the_architect(
    project: Project, settings: Settings
) -> None:
    """A plan naming a class that exists nowhere goes back to the planner; a method not there yet
    only warns, and the architect sees the warning."""
    indexed = index_checkout(settings.data_dir, "demo", project.root, "task9", EmbedderSettings(kind="off"))
    wrong = [route.item(1, "Make `Invoice::total` multiply", route.CALC, route.TEST)]
    right = [route.item(1, "Add `Calculator::multiply` next to `App\\Calculator::add`", route.CALC, route.TEST)]
    roles = route.models(
        decomposer=[route.decomposition()], analyzer=[route.analysis()],
        planner=[route.plan(wrong), route.plan(right)], architect=route.approve_plan(),  # planner_refine: 2nd
        coder=route.coder_happy(), reviewer=route.review(),
    )
    state, _ = await route.run(project, settings, roles, extra={"index": indexed["index"]})
    assert state["outcome"] == "delivered"
    refine = str(roles["planner"].received[1][-1].content)
    assert "item 1 names `Invoice`, which the code graph does not know" in refine
    architect_task = "\n".join(str(m.content) for m in roles["architect"].received[0])
    assert "<plan_warnings" in architect_task
    assert "item 1 names `Calculator::multiply`, which does not exist yet" in architect_task
    assert "App\\Calculator::add" not in architect_task.split("<plan_warnings")[1]  # it exists: no warning
