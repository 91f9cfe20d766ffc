"""The implement route as a job, shared by the GitLab and GitHub end-to-end tests.

A label delivery goes over HTTP to the real receiver, a burst arq worker on the real Redis runs
`bot/worker/jobs.py`, the task worktree comes from a mirror of the PHP fixture project served by real
`git http-backend` (which demands the forge token), the gates run real `php -l` and PHPUnit, and
delivery pushes the branch back to the served repository and opens the change on the fake forge
through the real python-gitlab / PyGithub client.
"""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage

from foundation.settings import Settings
from graph.nodes.delivery import branch_name
from tests.e2e.conftest import allow_http_git, pointed_at, post, task_states, work
from tests.fakes.forge_http import FakeChange, FakeComment, FakeForgeState, FakeIssue
from tests.fakes.git_http import create_git_server
from tests.fakes.model_server import ScriptedModel
from tests.fakes.server import serving
from tests.graph.implement import route
from tests.graph.implement.conftest import GIT_ENV, make_project, need_php
from tests.intake.payloads import serve_samples

__all__ = ["Served", "implement_roles", "post", "served_project", "served_sample", "task_states", "tool_answers",
           "work"]


@dataclass
class Served:
    """The fixture project as the forge's repository: its bare copy and its clone URL."""

    origin: Path
    url: str

    def branch_log(self, branch: str) -> list[str]:
        """Commit subjects on `branch` of the served repository, newest first."""
        done = subprocess.run(["git", "-C", str(self.origin), "log", "--format=%s", branch, "--"],
                              capture_output=True, text=True, env=GIT_ENV, check=True)
        return done.stdout.splitlines()

    def show(self, revision: str, path: str) -> str:
        done = subprocess.run(["git", "-C", str(self.origin), "show", f"{revision}:{path}"],
                              capture_output=True, text=True, env=GIT_ENV, check=True)
        return done.stdout


def served_project(root: Path, username: str, token: str) -> Iterator[Served]:
    """Serve the fixture project (default branch `master`, as in both samples) demanding `token`."""
    need_php()
    project = make_project(root)
    subprocess.run(["git", "-C", str(project.origin), "branch", "-m", "main", "master"], env=GIT_ENV, check=True)
    expected = "Basic " + base64.b64encode(f"{username}:{token}".encode()).decode()
    with serving(create_git_server(root, expected)) as server:
        yield Served(origin=project.origin, url=f"{server.url}/{project.origin.name}")


def served_sample(root: Path, settings: Settings, fake_forge: FakeForgeState, username: str, token: str
                  ) -> Iterator[Served]:
    """`served_project`, named by the fake forge API as the samples' repository and allowed as a git host."""
    for project in served_project(root, username, token):
        settings.workspace.git_hosts = (project.url,)  # the test git server is not the fake API's port
        serve_samples(fake_forge, settings, clone_url=project.url)
        yield project


def tool_answers(received: list[list[BaseMessage]]) -> list[str]:
    """What the tools answered, as the role's last request carried them to the model."""
    return [str(m.content) for m in received[-1] if isinstance(m, ToolMessage)]


def implement_roles() -> dict[str, ScriptedModel]:
    """One pass through every role: criteria, analysis, a one-item plan, approval, the patch, approval."""
    return route.models(
        decomposer=[route.decomposition()], analyzer=[route.analysis()],
        planner=[route.plan(route.ONE_ITEM)], architect=route.approve_plan(),
        coder=route.coder_happy(), reviewer=route.review(),
    )


def setup(settings: Settings, redis_url: str, label: str) -> None:
    settings.redis_url = redis_url
    settings.triggers.implement_label = label  # the label the sample adds
    allow_http_git(settings)


def issue(fake_forge: FakeForgeState, forge: str, project: str, number: int) -> None:
    fake_forge.add_issue(forge, project, number, FakeIssue(title="Add multiplication",
                                                           body="The calculator should multiply."))


def labelled(sample_body: dict[str, Any], url: str) -> bytes:
    import json

    return pointed_at(json.dumps(sample_body).encode(), url)


def expected_branch(number: int, title: str, prefix: str = "forgebot/") -> str:
    return branch_name(number, title, prefix)


def the_change(fake_forge: FakeForgeState, forge: str, project: str) -> FakeChange:
    (change,) = [c for (f, p, _), c in fake_forge.changes.items() if (f, p) == (forge, project)]
    return change


def link_comments(fake_forge: FakeForgeState, forge: str, project: str, number: int) -> list[FakeComment]:
    return [c for c in fake_forge.comments_on(forge, project, number) if "purpose=change-link" in c.body]


def assert_delivered(change: FakeChange, branch: str, served: Served) -> None:
    """The pushed branch carries the coder's commit and the change describes criteria, checklist, gates."""
    assert change.source_branch == branch and change.target_branch == "master"
    assert served.branch_log(branch)[0] == "Add multiply with its test"
    assert "return $a * $b;" in served.show(branch, route.CALC)
    assert "| test_runner | `passed` |" in change.body and "| php-lint | `passed` |" in change.body
    assert "- [x] 1. Add multiply with its test" in change.body and "### Review: `approve`" in change.body
    assert "Calculator multiplies two integers" in change.body


def assert_resumed_at_delivery(roles: dict[str, ScriptedModel]) -> None:
    """The retry continued from the checkpoint: no role before delivery was asked again."""
    assert len(roles["decomposer"].received) == 1 and len(roles["reviewer"].received) == 2
    assert len(roles["coder"].received) == 4  # two patches, complete_item, finish: once each


def stuck_roles() -> dict[str, ScriptedModel]:
    """The test stays red through the fix round (a comment is all it changes): no progress, a failure report."""
    wrong, commented = route.WRONG_MULTIPLY, route.WRONG_MULTIPLY.replace(
        "    public function multiply", "    /** Multiplies. */\n    public function multiply")
    return route.models(
        decomposer=[route.decomposition()], analyzer=[route.analysis()],
        planner=[route.plan(route.ONE_ITEM)], architect=route.approve_plan(),
        coder=[route.patch(route.CALC, route.CALCULATOR, wrong),
               route.patch(route.TEST, route.CALCULATOR_TEST, route.MULTIPLY_TEST),
               route.call("complete_item", item_id=1, note="multiply"), route.call("finish"),
               route.patch(route.CALC, wrong, commented),
               route.call("complete_item", item_id=2, note="documented"), route.call("finish")],
        reviewer=[*route.review(), *route.review()],
    )
