"""Budgets scale with the task, stop the loop visibly, and the ledger counts tokens and cost."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from foundation.settings import LLMSettings
from graph.runtime.accounting import Ledger
from graph.runtime.budget import call_budget, estimate_tokens, fit_to_budget
from graph.runtime.loop import invoke_llm_with_tools
from tests.fakes.model_server import scripted
from tests.graph.runtime.conftest import make_session, tools
from tests.graph.runtime.script import call, calls, humans, tool_texts


def test_estimate_is_pessimistic_bytes_over_three() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abc") == 1 and estimate_tokens("abcd") == 2
    assert estimate_tokens("é") == 1  # two UTF-8 bytes still cost a token


def test_fit_keeps_order_and_reports_what_it_dropped() -> None:
    fit = fit_to_budget(["a" * 30, "b" * 30, "c" * 6, "d"], budget_tokens=21)
    assert fit.kept == ["a" * 30, "b" * 30] and fit.dropped == 2 and fit.tokens == 20  # stops, no skipping
    with pytest.raises(ValueError):
        fit_to_budget(["x"], -1)


def test_research_budget_scales_with_criteria_up_to_its_cap() -> None:
    settings = LLMSettings(research_base_calls=8, research_calls_per_criterion=4, research_max_calls=30)
    assert [call_budget(settings, "analyzer", criteria=n) for n in (0, 1, 3, 10)] == [8, 12, 20, 30]
    assert call_budget(settings, "reviewer", criteria=2) == call_budget(settings, "architect", criteria=2) == 16


def test_coder_budget_scales_with_open_items() -> None:
    settings = LLMSettings(coder_base_calls=10, coder_calls_per_item=8, coder_max_calls=50)
    assert [call_budget(settings, "coder", open_items=n) for n in (0, 2, 9)] == [10, 26, 50]
    with pytest.raises(ValueError, match="no tool loop"):
        call_budget(settings, "planner", criteria=1)
    with pytest.raises(ValueError):
        call_budget(settings, "coder", open_items=-1)


def test_ledger_counts_per_role_and_prices_known_models() -> None:
    ledger = Ledger(token_budget=1_000, prices={"m": (2.0, 10.0)})
    ledger.record("analyzer", "m", 300, 100)
    ledger.record("reviewer", "local", 200, 50)
    assert ledger.tokens == 650 and ledger.roles["analyzer"].tokens == 400
    assert ledger.cost_usd == pytest.approx((300 * 2 + 100 * 10) / 1e6)
    assert ledger.snapshot()["unpriced"] == ["local"]
    assert ledger.exhausted() is None
    ledger.record("analyzer", "m", 350, 0)
    spent = ledger.exhausted()
    assert spent is not None and (spent.kind, spent.limit, spent.used) == ("tokens", 1_000, 1_000)


async def test_call_budget_stops_reviewer_with_inspection_fragment(worktree: Path) -> None:
    model = scripted([
        call("list_files"),
        calls(("list_files", {"directory": "src"}), ("read_file", {"path": "src/Small.php"})),
    ])
    session = make_session(worktree, "reviewer", max_calls=2)
    result = await invoke_llm_with_tools(model, tools(worktree), [HumanMessage("review")], session)
    assert result.outcome == "budget_exhausted" and result.calls == 2
    assert tool_texts(result.messages)[-1] == "Not run: call budget exhausted."  # answered, not dropped
    fragment = humans(result.messages)[-1]
    assert "must not approve" in fragment and "2 of 2" in fragment
    assert result.exhausted is not None and result.exhausted.kind == "calls"


async def test_token_budget_stops_analyzer_with_research_fragment(worktree: Path) -> None:
    model = scripted([call("list_files"), call("list_files", directory="src")])
    session = make_session(worktree, "analyzer", token_budget=60)
    result = await invoke_llm_with_tools(model, tools(worktree), [HumanMessage("go")], session)
    assert result.outcome == "tokens_exhausted"
    assert "tokens budget is exhausted" in humans(result.messages)[-1]
    assert len(model.received) == 2  # stopped before a third call


async def test_investigation_role_cannot_be_given_a_write_tool(worktree: Path) -> None:
    from tests.graph.runtime.conftest import write_tool

    session = make_session(worktree, "analyzer")
    with pytest.raises(PermissionError, match="apply_patch"):
        await invoke_llm_with_tools(scripted([]), tools(worktree, write_tool(worktree)), [], session)


async def test_exhaustion_notice_reaches_synthesis(worktree: Path) -> None:
    from graph.runtime.scratchpad import Memory
    from graph.runtime.synthesis import synthesize
    from graph.schemas import Review
    from tests.fakes.model_server import answer

    session = make_session(worktree, "reviewer", max_calls=1)
    result = await invoke_llm_with_tools(scripted([call("list_files")]), tools(worktree), [], session)
    assert "must not approve" in result.notice
    incomplete = Review(verdict="incomplete", summary="ran out", unverified_criteria=[1])
    model = scripted([answer(Review, incomplete)])
    review, _ = await synthesize(
        model, Review, role="reviewer", system="You review.", criteria=[{"id": 1, "text": "x y"}],
        memory=Memory(), declared=[], reason=result.reason, ledger=session.ledger, notice=result.notice,
    )
    assert review.verdict == "incomplete" and "must not approve" in str(model.received[0][-1].content)
