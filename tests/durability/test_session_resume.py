"""SIGKILL a real worker in the middle of a coder session: the restarted worker continues the session
at its next model call, never asking the model again for a call that completed.

The worker runs the product's own model client against the scripted model server (HTTP, in this
process, so it outlives the worker) and clones the fixture project from a git server over HTTP. The
coder's session is two patches, `complete_item` (its first run ends: the item is committed), then
`finish` (its second run). The server holds one coder request — the third (both patches ran), or
the second run's first (the item was closed) — and the test kills the worker while it waits, starts
another, and counts what the model server received: each completed coder call once, the held one
twice (the second time rebuilt from the journal: the same request), and the task delivers what an
uninterrupted run delivers. On SQLite, and on Postgres (checkpointer, journal and task store).
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bot.tasks.events import Actor, ForgeEvent, RepoRef
from graph.nodes.planner import PlanProposal
from graph.schemas import Analysis, ArchitectVerdict, Decomposition, Review
from tests.durability.harness import PROJECT, Cluster, seed_forge, submit, until, wait_for
from tests.e2e import implement_harness as h
from tests.fakes import model_server as wire
from tests.fakes.forge_http import FakeForgeState, FakeProject
from tests.graph.implement import route
from tests.graph.implement.conftest import make_patch

pytestmark = [pytest.mark.php, pytest.mark.timeout(600)]
TITLE = "Add multiplication"
PAYLOADS: dict[str, dict[str, Any]] = {
    "Decomposition": {"criteria": [{"id": 1, "text": "Calculator multiplies two integers"}]},
    "Analysis": {"summary": "Add Calculator::multiply", "affected_files": [route.CALC, route.TEST],
                 "symbols": ["App\\Calculator::add"]},
    "PlanProposal": {"plan": {"items": route.ONE_ITEM, "scope": {"writable": [route.CALC, route.TEST],
                                                                  "context_only": []}}, "new_files": []},
    "ArchitectVerdict": {"approved": True, "feedback": []},
    "Review": {"verdict": "approve", "summary": "review: approve", "findings": [], "verified_criteria": [1]},
}
SCHEMAS: dict[str, type[BaseModel]] = {
    s.__name__: s for s in (Decomposition, Analysis, PlanProposal, ArchitectVerdict, Review)}
CODER = [  # the coder's call by how many tool results its request carries (its first item's run)
    wire.call("apply_patch", patch=make_patch(route.CALC, route.CALCULATOR, route.MULTIPLY)),
    wire.call("apply_patch", patch=make_patch(route.TEST, route.CALCULATOR_TEST, route.MULTIPLY_TEST)),
    wire.call("complete_item", item_id=1, note="multiply added with a test"),
]
FINISH = -1  # the coder's second run: no item is open


class Script:
    """Answers by what each request is, so a resumed request gets the answer its content asks for."""

    def __init__(self, hold: int) -> None:
        self.hold = hold  # the coder request the worker dies waiting for (`coder_turn`)
        self.coder: list[int] = []  # `coder_turn` of each coder request
        self.held, self.release = threading.Event(), threading.Event()

    def __call__(self, request: wire.Request) -> wire.Reply:
        name = _schema(request)
        if name:
            return wire.answer(SCHEMAS[name], PAYLOADS[name])
        tools = request.tool_names
        if "finish_exploration" in tools:
            return wire.tools(wire.call("finish_exploration", files=[route.CALC], context_only=[route.TEST],
                                        reason="seen"))
        if "apply_patch" not in tools:
            return wire.text("Inspected.")  # the architect's and the reviewer's inspections
        turn = coder_turn(request)
        self.coder.append(turn)
        if turn == self.hold and not self.held.is_set():
            self.held.set()
            self.release.wait(timeout=300)  # the worker is killed meanwhile: nobody reads this answer
        return wire.tools(wire.call("finish") if turn == FINISH else CODER[turn])


def coder_turn(request: wire.Request) -> int:
    """Which coder call a request is: the tool results it carries in the first run, FINISH in the second."""
    if "No item is open" in json.dumps(request.messages[-1]):
        return FINISH
    return sum(m.get("role") == "tool" for m in request.messages)


def _schema(request: wire.Request) -> str:
    """The structured answer a request asks for: json_schema's name or the forced tool's."""
    fmt = request.body.get("response_format") or {}
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return str(fmt["json_schema"]["name"])
    choice = request.body.get("tool_choice")
    if isinstance(choice, dict):
        name = str((choice.get("function") or {}).get("name") or "")
        return name if name in PAYLOADS else ""
    return ""


@pytest.fixture
def served(tmp_path: Path, cluster: Cluster) -> Iterator[h.Served]:
    yield from h.served_project(tmp_path / "forge", "oauth2", cluster.config["gitlab_token"])


@pytest.fixture(params=[2, FINISH], ids=["after-two-patches", "after-the-item-closed"])
def model(request: pytest.FixtureRequest) -> Iterator[tuple[wire.ModelServer, Script]]:
    script = Script(hold=request.param)
    with wire.ModelServer() as server:
        server.responder = script
        yield server, script
        script.release.set()


def implement_event(served: h.Served) -> ForgeEvent:
    repo = RepoRef(forge="gitlab", project=PROJECT, path="group/project", clone_url=served.url,
                   default_branch="master")
    return ForgeEvent(forge="gitlab", delivery_id="resume-coder", repo=repo, repo_id=int(PROJECT), target="issue",
                      number=1, actor=Actor(id=1, username="root"), trigger="label", mode="implement", title=TITLE,
                      body="The calculator should multiply.", label="forgebot::implement", state="resume-coder")


async def test_sigkill_mid_coder_session_resumes_at_the_next_call(
    cluster: Cluster, fake_forge: FakeForgeState, served: h.Served, model: tuple[wire.ModelServer, Script]
) -> None:
    server, script = model
    llm = {"provider": "openai", "model": server.model, "base_url": server.openai_url, "timeout": 120,
           "max_retries": 0}
    cluster.configure(llm=llm, git_hosts=[served.url], job_timeout=400)
    seed_forge(fake_forge, [1])
    fake_forge.add_project("gitlab", FakeProject(id=int(PROJECT), path="group/project", clone_url=served.url,
                                                 default_branch="master"))  # the worker clones what the forge says
    [task] = await submit(cluster, [implement_event(served)])
    first = cluster.start_worker()
    try:
        await until(script.held.is_set, f"the coder's request {script.hold}")
    except AssertionError as exc:
        asked = [(r.tool_names[:3], _schema(r)) for r in server.requests]
        raise AssertionError(f"{exc}; asked {asked}\n{cluster.logs()[-6000:]}") from None
    first.send_signal(signal.SIGKILL)
    first.wait()
    script.release.set()
    states = await wait_for(cluster, [task], ("done", "failed", "cancelled"), workers=1)
    logs = cluster.logs()
    assert states == {task: "done"}, logs
    assert cluster.killed() == 1, logs
    # each completed coder call was asked once; the held one twice (killed, then from the journal)
    assert sorted(script.coder) == sorted([FINISH, 0, 1, 2, script.hold]), (script.coder, logs)
    held = [r for r in server.requests if "apply_patch" in r.tool_names and coder_turn(r) == script.hold]
    assert held[0].messages == held[1].messages  # the resumed request is the same (the patch results in it)
    # what an uninterrupted run delivers (tests/e2e: the same script without the kill)
    branch = h.expected_branch(1, TITLE)
    assert served.branch_log(branch)[:2] == ["Add multiply with its test", "initial"]  # committed once
    assert served.show(branch, route.CALC) == route.MULTIPLY and served.show(branch, route.TEST) == route.MULTIPLY_TEST
