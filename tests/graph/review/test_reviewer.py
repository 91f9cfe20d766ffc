"""The unified reviewer on a real git repository with scripted models: diff, tools, verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.runtime import Runtime

from foundation.settings import LLMSettings, Settings
from graph.deps import Deps
from graph.nodes import reviewer
from graph.reviewdiff import DiffLimits, collect
from graph.schemas import Finding, Review
from project.index.taskindex import build_base
from tests.fakes.forge import FakeForge
from tests.fakes.model_server import ScriptedModel, answer, scripted
from tests.graph.review.conftest import ChangeRepo
from tests.graph.runtime.script import call, done, humans

CRITERIA = [{"id": 1, "text": "Totals count each item twice"}, {"id": 2, "text": "Discounts subtract one"}]


def _runtime(model: ScriptedModel, repo: ChangeRepo, **llm: Any) -> Runtime[Deps]:
    data_dir = repo.root.parent / "data"  # the trace's home, in the test's own directory
    settings = Settings(_env_file=None, data_dir=data_dir, llm=LLMSettings(**llm))  # type: ignore[call-arg]
    return Runtime(context=Deps(settings=settings, forge=FakeForge(), model_for=lambda role: model))


def _state(repo: ChangeRepo, **extra: Any) -> dict[str, Any]:
    return {"task_id": "review-1", "workspace": str(repo.root), "review_base": repo.base, "criteria": CRITERIA,
            "title": "Double", "forge": "gitlab", **extra}


async def test_reviewer_sees_the_diff_investigates_and_returns_findings(change_repo: ChangeRepo) -> None:
    finding = Finding(severity="major", message="negative discounts are not rejected", path="src/Discount.php",
                      line=4, criteria=[2], evidence="return $x - 1", suggestion="guard $x > 0")
    review = Review(verdict="request_changes", summary="One issue.", findings=[finding],
                    verified_criteria=[1, 2])
    model = scripted([call("search_code", pattern="discount("), done(), answer(Review, review)])
    out = await reviewer.run(_state(change_repo), _runtime(model, change_repo))  # type: ignore[arg-type]
    first = model.received[0]
    task = next(h for h in humans(first) if "<diff" in h)
    assert "+            $sum += $item * 2;" in task and "rename to src/Runner.php" in task
    assert "src/Discount.php" in task and "1. Totals count each item twice" in task
    assert out["review"]["findings"][0]["path"] == "src/Discount.php"
    assert out["verdict"] == "request_changes"
    assert out["review_scope"]["files"] == ["src/Cart.php", "src/Discount.php", "src/Runner.php"]
    assert out["sessions"][0]["outcome"] == "finished" and out["sessions"][0]["calls"] == 1


async def test_budget_exhaustion_is_never_an_approval(change_repo: ChangeRepo) -> None:
    approve = Review(verdict="approve", summary="Looks fine.", verified_criteria=[1])
    reads = [call("search_code", pattern=f"p{i}") for i in range(2)]
    model = scripted([*reads, answer(Review, approve)])
    runtime = _runtime(model, change_repo, research_base_calls=2, research_calls_per_criterion=0)
    out = await reviewer.run(_state(change_repo), runtime)  # type: ignore[arg-type]
    assert out["sessions"][0]["outcome"] == "budget_exhausted"
    assert out["review"]["verdict"] == "incomplete" and out["verdict"] == "incomplete"
    assert out["review"]["unverified_criteria"] == [2]
    synthesis = model.received[-1]
    assert any("must not approve" in str(m.content) for m in synthesis if isinstance(m, HumanMessage))


async def test_failed_mandatory_gate_overrides_an_approval(change_repo: ChangeRepo) -> None:
    approve = Review(verdict="approve", summary="Fine.", verified_criteria=[1, 2])
    model = scripted([done(), answer(Review, approve)])
    gates = [{"name": "tests", "status": "failed", "mandatory": True}]
    out = await reviewer.run(_state(change_repo, gates=gates), _runtime(model, change_repo))  # type: ignore[arg-type]
    assert out["review"]["verdict"] == "approve" and out["verdict"] == "request_changes"


async def test_no_criteria_reviews_against_the_general_criterion(change_repo: ChangeRepo) -> None:
    claims = Review(verdict="approve", summary="ok", verified_criteria=[])
    model = scripted([call("search_code", pattern="x"), answer(Review, claims)])
    runtime = _runtime(model, change_repo, research_base_calls=1, research_calls_per_criterion=0)
    out = await reviewer.run(_state(change_repo, criteria=[]), runtime)  # type: ignore[arg-type]
    assert "1. The change introduces no defect" in humans(model.received[0])[0]
    assert out["review"]["verdict"] == "incomplete" and out["review"]["unverified_criteria"] == [1]


async def test_stopped_inspection_with_every_criterion_verified_still_does_not_approve(
    change_repo: ChangeRepo,
) -> None:
    claims = Review(verdict="approve", summary="ok", verified_criteria=[1, 2])
    model = scripted([call("search_code", pattern="x"), answer(Review, claims)])
    runtime = _runtime(model, change_repo, research_base_calls=1, research_calls_per_criterion=0)
    out = await reviewer.run(_state(change_repo), runtime)  # type: ignore[arg-type]
    assert out["review"]["verdict"] == "request_changes" and "inspection stopped" in out["review"]["summary"]


def test_size_limits_apply_per_file_before_the_budget(change_repo: ChangeRepo) -> None:
    big = "".join(f"<?php // {n}\n" for n in range(300))
    change_repo.commit({"composer.lock": "{}\n", "src/Big.php": big})
    view = collect(change_repo.root, change_repo.base, DiffLimits(max_file_lines=100, budget_tokens=100_000))
    skipped = dict(view.skipped)
    assert skipped["composer.lock"] == "generated or vendored file"
    assert skipped["src/Big.php"].startswith("diff of 30") and "per-file limit of 100" in skipped["src/Big.php"]
    assert view.paths == ["src/Cart.php", "src/Discount.php", "src/Runner.php"]
    tight = collect(change_repo.root, change_repo.base, DiffLimits(budget_tokens=120))
    assert any("over the review's diff budget" in reason for _, reason in tight.skipped)
    assert tight.paths and len(tight.paths) < 3  # what fitted, in order; the rest listed, never cut silently


async def test_code_graph_and_contract_tools_come_with_an_index(change_repo: ChangeRepo, tmp_path: Path) -> None:
    index = build_base(tmp_path / "data", "shop", change_repo.root)
    review = Review(verdict="approve", summary="ok", verified_criteria=[1, 2])
    model = scripted([call("find_definition", name="Cart::total"), done(), answer(Review, review)])
    out = await reviewer.run(_state(change_repo, index=str(index)), _runtime(model, change_repo))  # type: ignore[arg-type]
    answer_text = next(str(m.content) for m in model.received[1] if isinstance(m, ToolMessage))
    assert "src/Cart.php" in answer_text  # the definition, from the real index
    assert out["verdict"] == "approve"
    tools = {t["function"]["name"] for t in _bound_tools(change_repo, str(index))}
    assert {"find_definition", "find_callers", "override_contract", "semantic_search"} <= tools


def _bound_tools(repo: ChangeRepo, index: str) -> list[dict[str, Any]]:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from graph.runtime.scratchpad import Memory
    from project.index.db import connect

    conn = connect(index, readonly=True)
    try:
        return [convert_to_openai_tool(t) for t in reviewer._tools(repo.root, conn, Memory(), None)]
    finally:
        conn.close()
