"""Semantic search through the running service: a labelled issue runs as a job on the worker, whose
analyzer searches the task index by meaning and whose planner gets searched context, both with the
vector leg (the offline model shipped with the package) or, with the leg off, a note saying so; the
coder's search right after a patch finds the patched code (index sync after each accepted patch).
The same run shows the other context mechanisms on their real path: standards in the planner's,
coder's and reviewer's prompts, the planner's live injection, the analyzer's notes read again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from foundation.settings import Settings
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


@pytest.mark.parametrize("kind", ["offline", "off"])
async def test_agent_search_in_a_task_carries_the_vector_leg(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served, kind: str
) -> None:
    h.setup(settings, redis_url, "Platform")
    fake_forge.grant("gitlab", "1", "1", 30)
    fake_forge.grant("gitlab", "1", "7", 30)
    h.issue(fake_forge, "gitlab", "1", 23)
    settings.embedder.kind = kind  # type: ignore[assignment]
    settings.embedder.wait_seconds = 300  # the fixture's vectors take a second; never race them here
    roles = h.implement_roles()
    roles["analyzer"] = scripted([
        route.call("semantic_search", query="sum of two numbers", k=3),
        route.call("write_scratchpad", kind="fact", text="add() at src/Calculator.php:9 returns int"),
        route.call("finish_exploration", files=[route.CALC], context_only=[route.TEST], reason="seen"),
        route.analysis(),
    ])
    roles["coder"] = scripted([
        route.patch(route.CALC, route.CALCULATOR, route.MULTIPLY),
        route.call("semantic_search", query="multiply", k=3),
        route.call("read_file_snippet", path="phpunit.xml", start_line=1, end_line=3),
        route.patch(route.TEST, route.CALCULATOR_TEST, route.MULTIPLY_TEST),
        route.call("complete_item", item_id=1, note="multiply added with a test"),
        route.call("finish"),
    ])
    delivery = deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook")
    assert await h.post(settings, "gitlab", *delivery) == 202
    assert (await h.work(settings, roles.__getitem__)).jobs_failed == 0
    assert await h.task_states(settings) == [("done", "delivered")]
    (searched,) = h.tool_answers(roles["analyzer"].received[:2])
    planner_context = str(roles["planner"].received[0][-1].content)
    # the task index learnt the accepted patch at once: the coder's next search finds the new method
    after_patch = h.tool_answers(roles["coder"].received[:3])[-1]
    assert "Calculator::multiply" in after_patch and "changed since indexing" not in after_patch
    # the progress summary that replaces a closed item's history lists the files the coder read
    assert "Files read so far: phpunit.xml" in str(roles["coder"].received[-1][0].content)
    # the analyzer's scratchpad is read again: planner, coder and reviewer get it from the context engine
    note = '<scratchpad origin="investigation notes">\nfact: add() at src/Calculator.php:9 returns int'
    assert note in planner_context
    for role in ("coder", "reviewer"):
        assert note in "\n".join(str(m.content) for m in roles[role].received[0]), role
    # the planner gets live injection: the analysis' files, current from disk, in its system message
    planner_system = str(roles["planner"].received[0][0].content)
    assert '<file origin="repository" path="src/Calculator.php" tier="full"' in planner_system
    # the profile's standards reach the system prompts of the roles that plan, write and judge code
    for role in ("planner", "coder", "reviewer"):
        assert '<standards origin="standards/php.md">' in str(roles[role].received[0][0].content), role
    if kind == "offline":  # found by meaning: no word of the query is in the code
        assert "src/Calculator.php" in searched and "Calculator::add" in searched
        assert "legs: lexical, graph, vector" in searched and "vector leg absent" not in searched
        assert "vector)" in searched  # each hit names the legs that found it
        assert "search legs: lexical, graph, vector" in planner_context
    else:
        assert "legs: lexical, graph\n\nno hits" in searched
        assert "vector leg absent: no embedder configured" in searched
        assert "vector leg absent: no embedder configured" in planner_context
