"""The route's decisions by code: verdicts and gates, fix rounds, amendments, sync, the coder's plan tools."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from foundation.settings import Settings
from foundation.signing import Committer
from graph.coder import gitstate
from graph.coder import patch as patching
from graph.coder.checklist import Checklist, ItemRejected
from graph.coder.tools import coder_tools
from graph.deps import Deps
from graph.nodes import delivery, planner_amend, semantic_sync
from graph.schemas import FileScope, Plan
from graph.state import TaskState
from project.index.taskindex import task_index_path
from tests.fakes.forge import FakeForge
from tests.fakes.model_server import scripted
from tests.graph.implement import route
from tests.graph.implement.conftest import Project

GATES_FAILED = [{"name": "test_runner", "status": "failed", "mandatory": True, "detail": "assertion: 1 failed"},
                {"name": "php-lint", "status": "passed", "mandatory": True, "detail": ""},
                {"name": "smoke", "status": "disabled", "mandatory": True, "detail": "no smoke command configured"}]
APPROVE = {"verdict": "approve", "summary": "fine", "findings": [], "verified_criteria": [1],
           "unverified_criteria": []}
PLAN = {"items": [{"id": 1, "title": "Add multiply", "criteria": [1], "paths": [route.CALC]}],
        "scope": {"writable": [route.CALC, route.TEST], "context_only": []}}


def _state(**extra: Any) -> TaskState:
    base: dict[str, Any] = {"task_id": "t9", "mode": "implement", "forge": "gitlab", "number": 7, "title": "Multiply",
                            "criteria": [{"id": 1, "text": "Calculator multiplies"}], "plan": PLAN,
                            "gates": GATES_FAILED, "review": APPROVE, "started_at": 0.0}
    return cast(TaskState, {**base, **extra})


def test_an_approval_never_replaces_a_failed_gate() -> None:
    update = delivery.decide(_state())
    assert update["outcome"] == "fix_round" and update["review_problems"] == ["gate test_runner failed"]
    assert update["plan"]["items"][-1]["title"] == "Fix: gate test_runner failed"
    text = delivery.description(_state())
    assert "| test_runner | `failed` |" in text and "| smoke | `disabled` |" in text
    assert "### Review: `request_changes`" in text and "`passed` | assertion" not in text


def test_no_progress_and_exhausted_rounds_stop_the_fix_rounds() -> None:
    again = delivery.decide(_state(review_problems=["gate test_runner failed"]))
    assert "no progress" in again["failure"]
    other = delivery.decide(_state(review_problems=["major: something else"], rounds={"review": 2},
                                   review_findings=[[_finding("something else", line=3)]]))
    assert "review-rounds budget (2) is used up" in other["failure"]
    closed = delivery.decide(_state(review_problems=["gate test_runner failed", "major: xyz"], rounds={"review": 1},
                                    review_findings=[[_finding("xyz")]]))
    assert closed["outcome"] == "fix_round"  # one problem closed since the last round: progress
    assert closed["review_findings"] == [[]]  # this round's blocking findings, appended to the earlier ones


def _finding(message: str, line: int = 12, **extra: Any) -> dict[str, Any]:
    return {"severity": "major", "message": message, "path": route.CALC, "line": line, "criteria": [1], **extra}


def _reviewed(*findings: dict[str, Any]) -> dict[str, Any]:
    return {**APPROVE, "verdict": "request_changes", "findings": list(findings)}


def test_a_reworded_finding_at_the_same_place_is_no_progress() -> None:
    """Per-finding identity (path, lines, criterion), not wording: the reviewer rephrases each round."""
    before = _finding("multiply returns the sum of its arguments")
    again = _finding("multiply adds instead of multiplying", line=13)
    state = _state(gates=GATES_FAILED[1:], review=_reviewed(again),
                   review_problems=["major: multiply returns the sum of its arguments"], review_findings=[[before]])
    assert delivery.decide(state)["failure"].startswith("no progress in the last fix round: major: multiply adds")
    elsewhere = _state(gates=GATES_FAILED[1:], review=_reviewed(_finding("a new problem", line=40)),
                       review_problems=["major: multiply returns the sum"], review_findings=[[before]])
    assert delivery.decide(elsewhere)["outcome"] == "fix_round"  # the old finding closed: progress


def test_one_finding_back_in_every_round_is_a_dead_end_though_others_closed() -> None:
    stuck = _finding("multiply overflows")
    rounds = [[stuck, _finding("missing test", line=30)],
              [_finding("overflow unchecked", line=11), _finding("no docblock", line=50)]]
    state = _state(gates=GATES_FAILED[1:], review=_reviewed(_finding("still overflows", line=12)),
                   review_problems=["major: overflow unchecked"], review_findings=rounds, rounds={"review": 1})
    failure = delivery.decide(state)["failure"]
    assert failure.startswith("no progress on findings raised in each of the last 3 reviews: major: still overflows")


def test_a_broken_environment_is_reported_not_sent_for_a_fix() -> None:
    gates = [{**GATES_FAILED[0], "detail": "environment: could not find driver"}]
    update = delivery.decide(_state(gates=gates))
    assert "test environment is broken" in update["failure"] and "outcome" not in update


def test_adjust_plan_merge_keeps_completed_items() -> None:
    done = Plan.model_validate(PLAN).items[0].model_copy(update={"status": "done", "note": "kept"})
    remaining = Plan.model_validate({"items": [{"id": 1, "title": "Test multiply", "criteria": [1],
                                                "paths": [route.TEST]}], "scope": {"writable": [route.TEST]}})
    merged = planner_amend.merge([done], FileScope(writable=[route.CALC]), remaining)
    assert [(i.id, i.title, i.status) for i in merged.items] == [
        (1, "Add multiply", "done"), (2, "Test multiply", "open")]
    assert merged.scope.writable == [route.CALC, route.TEST]


async def test_full_reset_when_amendments_are_used_up(project: Project, settings: Settings) -> None:
    (project.root / route.CALC).write_text(route.MULTIPLY)
    gitstate.commit_all(project.root, "half done", Committer("f", "f@example.invalid"))
    model = scripted([route.plan(route.ONE_ITEM)])
    runtime = SimpleNamespace(context=Deps(settings=settings, forge=FakeForge(), model_for=lambda role: model))
    state = _state(workspace=str(project.root), base=project.base, rounds={"amend": 2},
                   coder={"end": "looping", "reason": "item 1: lint failed"})
    update = await planner_amend.run(state, runtime)  # type: ignore[arg-type]
    assert update["rounds"]["restart"] == 1 and update["plan"]["items"][0]["status"] == "open"
    assert gitstate.head(project.root) == project.base and project.text(route.CALC) == route.CALCULATOR
    prompt = str(model.received[0][-1].content)
    assert "FULL_RESET" in prompt and "ADJUST_PLAN" not in prompt and "lint failed" in prompt
    ended = await planner_amend.run({**state, "rounds": {"amend": 2, "restart": 1}}, runtime)  # type: ignore[arg-type]
    assert "could not be amended further" in ended["failure"]


def test_semantic_sync_skipped_without_index_and_degraded_on_failure(project: Project, tmp_path: Path) -> None:
    state = _state(workspace=str(project.root))
    assert semantic_sync.sync(state, tmp_path)["status"] == "skipped"
    index = task_index_path(tmp_path, "t9")
    index.parent.mkdir(parents=True)
    index.write_bytes(b"this is not a database" * 100)
    result = semantic_sync.sync(state, tmp_path)
    assert result["status"] == "degraded" and result["detail"]


def _tools(project: Project) -> tuple[Checklist, dict[str, Any]]:
    checklist = Checklist(root=project.root, plan=Plan.model_validate(PLAN), base=project.base, lint=lambda f: [],
                          author=Committer("forgebot", "forgebot@users.noreply.invalid"))
    policy = patching.PatchPolicy(writable=checklist.writable, protected=patching.protection((), ()))
    return checklist, coder_tools(checklist, policy)


def test_plan_decisions_are_kept(project: Project) -> None:
    checklist, tools = _tools(project)
    with pytest.raises(ItemRejected, match="request_file first"):
        tools["update_plan"].invoke({"action": "add", "reason": "docs", "title": "Document it", "paths": ["README"]})
    with pytest.raises(ItemRejected, match="protected"):
        tools["request_file"].invoke({"path": ".gitlab-ci.yml", "reason": "run the new test"})
    tools["request_file"].invoke({"path": "README", "reason": "document multiply"})
    tools["update_plan"].invoke({"action": "add", "reason": "docs", "title": "Document it", "paths": ["README"]})
    tools["update_plan"].invoke({"action": "reorder", "reason": "docs first", "order": [2, 1]})
    assert [i.title for i in checklist.plan.items] == ["Document it", "Add multiply"]
    tools["update_plan"].invoke({"action": "drop", "reason": "not needed", "item_id": 1})
    assert checklist.plan.items[0].status == "dropped"
    with pytest.raises(ItemRejected, match="path:line"):
        tools["report_plan_blocker"].invoke({"item_id": 2, "evidence": "src/Calculator.php:999", "reason": "x"})
    assert not checklist.end
    tools["report_plan_blocker"].invoke({"item_id": 2, "evidence": "src/Calculator.php:9", "reason": "exists"})
    assert str(checklist.end) == "blocked"
    kinds = [d["kind"] for d in checklist.decisions]
    assert kinds == ["request_file", "plan_add", "plan_reorder", "plan_drop", "blocker"]
    Plan.model_validate(checklist.plan.model_dump())  # the adapted plan is still a valid plan


async def test_spent_token_budget_stops_fix_rounds_and_amendments(settings: Settings) -> None:
    runtime = SimpleNamespace(context=Deps(settings=settings, forge=FakeForge(), model_for=lambda role: scripted([])))
    spent = _state(tokens=settings.llm.task_token_budget, coder={"end": "looping", "reason": "stuck"})
    assert "token budget" in (await delivery.decide_node(spent, runtime))["failure"]  # type: ignore[arg-type]
    assert "token budget" in (await planner_amend.run(spent, runtime))["failure"]  # type: ignore[arg-type]
