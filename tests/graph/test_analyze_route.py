"""The analyze route on an in-memory checkpointer and forge, with scripted models."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from bot.forge import IssueRef, RepoRef
from bot.settings import Settings
from graph import routing
from graph.builder import build_graph
from graph.deps import Deps
from graph.schemas import AcceptanceCriterion, Analysis, Decomposition
from tests.fakes.chat import ScriptedChatModel, answer, scripted
from tests.fakes.forge import FakeForge

REPO = RepoRef(forge="gitlab", project="1", path="group/app")


def _state() -> dict[str, Any]:
    return {
        "task_id": "t1",
        "mode": "analyze",
        "forge": "gitlab",
        "repo": REPO.model_dump(),
        "number": 5,
        "title": "Make it faster",
        "body": "It is slow.",
        "started_at": 0.0,
        "tokens": 0,
        "models": [],
    }


async def _run(models: dict[str, ScriptedChatModel], forge: FakeForge) -> dict[str, Any]:
    deps = Deps(settings=Settings(_env_file=None), forge=forge, model_for=models.__getitem__)  # type: ignore[call-arg]
    compiled = build_graph().compile(checkpointer=InMemorySaver())
    return await compiled.ainvoke(_state(), {"configurable": {"thread_id": "t1"}}, context=deps)


async def test_missing_information_gives_blocked_report_with_questions() -> None:
    forge = FakeForge()
    decomposer = scripted(
        [answer(Decomposition, Decomposition(questions=["Which endpoint is slow?", "What latency is acceptable?"]))]
    )
    analyzer = scripted([])  # must not be called
    result = await _run({"decomposer": decomposer, "analyzer": analyzer}, forge)
    assert result["outcome"] == "blocked"
    assert analyzer.received == []
    (body,) = forge.comments[IssueRef(repo=REPO, number=5)]
    assert "Analysis blocked" in body
    assert "1. Which endpoint is slow?" in body and "2. What latency is acceptable?" in body


async def test_criteria_flow_through_analyzer_into_report() -> None:
    forge = FakeForge()
    decomposition = Decomposition(criteria=[AcceptanceCriterion(id=1, text="p95 under 200 ms")])
    models = {
        "decomposer": scripted([answer(Decomposition, decomposition)]),
        "analyzer": scripted([answer(Analysis, Analysis(summary="Slow query in Repo::find"))]),
    }
    result = await _run(models, forge)
    assert result["outcome"] == "reported"
    assert "p95 under 200 ms" in str(models["analyzer"].received[0][-1].content)  # criteria reach the analyzer
    assert "Slow query in Repo::find" in forge.comments[IssueRef(repo=REPO, number=5)][0]


def test_routing_after_decomposer() -> None:
    assert routing.after_decomposer({"criteria": [{"id": 1, "text": "x y z"}]}) == "analyzer"
    assert routing.after_decomposer({"criteria": []}) == "publisher"


def test_routing_by_mode_refuses_unbuilt_routes() -> None:
    import pytest

    assert routing.route_by_mode({"mode": "analyze"}) == "analyze"
    assert routing.route_by_mode({"mode": "review"}) == "review"
    assert routing.route_by_mode({"mode": "implement"}) == "implement"
    with pytest.raises(routing.ModeUnavailable):
        routing.route_by_mode({"mode": "deploy"})
