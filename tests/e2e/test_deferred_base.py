"""A large repository's task through the running service: it starts on the code graph alone, its first
search says so and answers from the definitions, and once the rest of the base is built its next
search (the coder's, right after a patch) runs the full-text leg and finds the patched code.

"Large" is the fixture repository with the threshold lowered to one file; the background build is
held until the analyzer's first search has answered, so the order is the one a real large
repository has, not a race."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from foundation.settings import Settings
from graph.tools import code_search
from project.index import basecomplete
from project.index.search import Answer
from tests.conftest import GITLAB_TOKEN
from tests.e2e import implement_harness as h
from tests.fakes.forge_http import FakeForgeState
from tests.fakes.model_server import scripted
from tests.fakes.samples import sample
from tests.graph.implement import route
from tests.intake import deliveries

pytestmark = pytest.mark.php

SAMPLE = sample("gitlab/issue.labels-changed.json")


@pytest.fixture
def served(tmp_path: Path, settings: Settings, fake_forge: FakeForgeState) -> Iterator[h.Served]:
    yield from h.served_sample(tmp_path / "forge", settings, fake_forge, "oauth2", GITLAB_TOKEN)


async def test_a_large_repositorys_task_starts_on_the_graph_and_takes_in_full_text_mid_run(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    h.setup(settings, redis_url, "Platform")
    fake_forge.grant("gitlab", "1", "1", 30)
    fake_forge.grant("gitlab", "1", "7", 30)
    h.issue(fake_forge, "gitlab", "1", 23)
    settings.embedder.kind = "off"  # type: ignore[assignment]
    settings.embedder.wait_seconds = 0
    monkeypatch.setattr(basecomplete, "DEFER_FROM_FILES", 1)
    held: list[tuple[Path, Path]] = []

    def hold(graph: Path, root: Path, **kwargs: Any) -> threading.Event:
        held.append((graph, root))  # built once the first search has answered, below
        return threading.Event()

    searched_early = code_search.definition_search

    def then_build(*args: Any, **kwargs: Any) -> Answer:
        answer = searched_early(*args, **kwargs)
        for graph, root in held:
            basecomplete.complete(graph, root)
        return answer

    monkeypatch.setattr(basecomplete, "start", hold)
    monkeypatch.setattr(code_search, "definition_search", then_build)
    roles = h.implement_roles()
    roles["analyzer"] = scripted([
        route.call("semantic_search", query="Calculator add", k=3),
        route.call("finish_exploration", files=[route.CALC], context_only=[route.TEST], reason="seen"),
        route.analysis(),
    ])
    roles["coder"] = scripted([
        route.patch(route.CALC, route.CALCULATOR, route.MULTIPLY),
        route.call("semantic_search", query="multiply two numbers", k=3),
        route.patch(route.TEST, route.CALCULATOR_TEST, route.MULTIPLY_TEST),
        route.call("complete_item", item_id=1, note="multiply added with a test"),
        route.call("finish"),
    ])
    delivery = deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook")
    assert await h.post(settings, "gitlab", *delivery) == 202
    assert (await h.work(settings, roles.__getitem__)).jobs_failed == 0
    assert await h.task_states(settings) == [("done", "delivered")]
    assert held, "the task did not start on the code graph alone"
    (early,) = h.tool_answers(roles["analyzer"].received[:2])
    assert "legs: definitions\n" in early and "Calculator::add" in early
    assert "being built in the background" in early
    later = h.tool_answers(roles["coder"].received[:3])[-1]
    assert "legs: lexical, graph\n" in later and "Calculator::multiply" in later
    assert "being built in the background" not in later and "changed since indexing" not in later
