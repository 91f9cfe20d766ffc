"""Driving the implement route end to end: scripted models per role, a memory forge, the fixture project."""

from __future__ import annotations

import itertools
from typing import Any

from langchain_core.messages import AIMessage

from foundation.forge import AccessLevel, Issue, IssueRef, RepoRef
from foundation.settings import Settings
from graph.deps import Deps
from graph.nodes.planner import PlanProposal
from graph.schemas import Analysis, ArchitectVerdict, Decomposition, Review
from tests.fakes.forge import FakeForge
from tests.fakes.model_server import ScriptedModel, answer, scripted
from tests.graph.checkpointed import run_task
from tests.graph.implement.conftest import CALCULATOR, CALCULATOR_TEST, Project, make_patch

__all__ = ["CALCULATOR", "CALCULATOR_TEST", "FakeForge"]

CALC = "src/Calculator.php"
TEST = "tests/CalculatorTest.php"
_ids = itertools.count(1)

MULTIPLY = CALCULATOR.replace(
    "        return $a + $b;\n    }\n",
    "        return $a + $b;\n    }\n\n    public function multiply(int $a, int $b): int\n    {\n"
    "        return $a * $b;\n    }\n",
)
WRONG_MULTIPLY = MULTIPLY.replace("return $a * $b;", "return $a + $b;")
MULTIPLY_TEST = CALCULATOR_TEST.replace(
    "        $this->assertSame(5, (new Calculator())->add(2, 3));\n    }\n",
    "        $this->assertSame(5, (new Calculator())->add(2, 3));\n    }\n\n"
    "    public function testMultiply(): void\n    {\n"
    "        $this->assertSame(6, (new Calculator())->multiply(2, 3));\n    }\n",
)


def call(name: str, **args: Any) -> AIMessage:
    """A model turn asking for one tool call."""
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"tc_{next(_ids)}"}],
                     usage_metadata={"input_tokens": 50, "output_tokens": 10, "total_tokens": 60})


def patch(path: str, old: str, new: str) -> AIMessage:
    return call("apply_patch", patch=make_patch(path, old, new))


def decomposition() -> AIMessage:
    return answer(Decomposition, {"criteria": [{"id": 1, "text": "Calculator multiplies two integers"}]})


def analysis() -> AIMessage:
    return answer(Analysis, {"summary": "Add Calculator::multiply", "affected_files": [CALC, TEST],
                             "symbols": ["App\\Calculator::add"]})


def plan(items: list[dict[str, Any]], writable: tuple[str, ...] = (CALC, TEST), new: tuple[str, ...] = ()) -> AIMessage:
    body = {"items": items, "scope": {"writable": list(writable), "context_only": []}}
    return answer(PlanProposal, {"plan": body, "new_files": list(new)})


def item(n: int, title: str, *paths: str) -> dict[str, Any]:
    return {"id": n, "title": title, "criteria": [1], "paths": list(paths)}


ONE_ITEM = [item(1, "Add multiply with its test", CALC, TEST)]


def inspected() -> AIMessage:
    """A tool-loop role's turn that ends its investigation without tools."""
    return AIMessage(content="Inspected.", usage_metadata={"input_tokens": 40, "output_tokens": 5, "total_tokens": 45})


def verdict(approved: bool, *feedback: str) -> list[AIMessage]:
    """The architect's turns: its investigation ends, then the structured verdict."""
    return [inspected(), answer(ArchitectVerdict, {"approved": approved, "feedback": list(feedback)})]


def approve_plan() -> list[AIMessage]:
    return verdict(True)


def review(verdict: str = "approve", findings: list[dict[str, Any]] | None = None) -> list[AIMessage]:
    """The unified reviewer's turns: its inspection ends without tools, then the structured Review."""
    body = {"verdict": verdict, "summary": f"review: {verdict}", "findings": findings or [], "verified_criteria": [1]}
    return [inspected(), answer(Review, body)]


def coder_happy() -> list[AIMessage]:
    return [patch(CALC, CALCULATOR, MULTIPLY), patch(TEST, CALCULATOR_TEST, MULTIPLY_TEST),
            call("complete_item", item_id=1, note="multiply added with a test"), call("finish")]


def models(**scripts: list[AIMessage]) -> dict[str, ScriptedModel]:
    """Scripted roles; the analyzer (a tool loop) first ends its exploration, then answers."""
    if "analyzer" in scripts:
        scripts["analyzer"] = [call("finish_exploration", files=[CALC], context_only=[TEST], reason="seen"),
                               *scripts["analyzer"]]
    return {role: scripted(messages) for role, messages in scripts.items()}


REPO_FIELDS = {"forge": "gitlab", "project": "1", "path": "group/app", "default_branch": "main"}


def initial(project: Project) -> dict[str, Any]:
    repo = RepoRef(**REPO_FIELDS, clone_url=str(project.origin))  # type: ignore[arg-type]
    return {"task_id": "task9", "mode": "implement", "forge": "gitlab", "repo": repo.model_dump(), "number": 7,
            "title": "Add multiplication", "body": "The calculator should multiply.", "started_at": 0.0,
            "tokens": 0, "models": [], "workspace": str(project.root), "base": project.base,
            "branch": "forgebot/7-add-multiplication"}


async def run(project: Project, settings: Settings, roles: dict[str, ScriptedModel],
              forge: FakeForge | None = None, extra: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], FakeForge]:
    """Run the route once; `extra` adds to the initial state (e.g. the status comment's id)."""
    forge = forge or FakeForge()
    # the issue's author is a Developer: only members' text reaches a prompt (graph/discussion.py)
    repo = RepoRef.model_validate(initial(project)["repo"])
    ref = IssueRef(repo=repo, number=7)
    forge.issues[ref] = Issue(ref=ref, title="Add multiplication", body="The calculator should multiply.",
                              author="alice", author_id=7)
    forge.access[(repo.project, 7)] = AccessLevel.DEVELOPER
    deps = Deps(settings=settings, forge=forge, model_for=roles.__getitem__)
    state, _ = await run_task(settings, deps, {**initial(project), **(extra or {})}, "task9")
    return state, forge
