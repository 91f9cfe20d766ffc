"""Every limit holds in the running service: label webhook → receiver → Redis → worker → fake GitLab.

* a `.forgebot.yml` budget on the default branch (tokens, cost, review rounds) stops the task with
  one comment naming the budget;
* the recursion limit stops a cycling route and the comment says so;
* the workspace disk bound prunes a finished task's worktree and an idle mirror before a new task
  checks out, and the task still runs.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from foundation.forge.models import GitCredentials
from foundation.settings import Settings
from foundation.workspace import Workspaces, repo_key
from tests.conftest import GITLAB_TOKEN
from tests.e2e import implement_harness as h
from tests.fakes.forge_http import FakeForgeState
from tests.fakes.model_server import ScriptedModel
from tests.fakes.samples import sample
from tests.graph.implement.conftest import FORGEBOT_YML, git
from tests.intake import deliveries
from tests.intake.payloads import serve_samples

pytestmark = pytest.mark.php

SAMPLE = sample("gitlab/issue.labels-changed.json")
BRANCH = h.expected_branch(23, SAMPLE["object_attributes"]["title"])


@pytest.fixture
def served(tmp_path: Path, settings: Settings, fake_forge: FakeForgeState) -> Iterator[h.Served]:
    for project in h.served_project(tmp_path / "forge", "oauth2", GITLAB_TOKEN):
        settings.workspace.git_hosts = (project.url,)
        serve_samples(fake_forge, settings, clone_url=project.url)  # the repository as the forge resolves it
        yield project


def _configure(served: h.Served, tmp_path: Path, extra: str) -> None:
    """Commit `.forgebot.yml` with `extra` appended on the served repository's default branch."""
    clone = tmp_path / "config-clone"
    git(tmp_path, "clone", "-q", "-b", "master", str(served.origin), str(clone))
    (clone / ".forgebot.yml").write_text(FORGEBOT_YML + extra)
    git(clone, "commit", "-qam", "budgets")
    git(clone, "push", "-q", "origin", "master")


async def _run(settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served,
               roles: dict[str, ScriptedModel]) -> None:
    h.setup(settings, redis_url, "Platform")
    fake_forge.grant("gitlab", "1", "1", 30)
    fake_forge.grant("gitlab", "1", "7", 30)
    h.issue(fake_forge, "gitlab", "1", 23)
    assert await h.post(settings, "gitlab", *deliveries.gitlab(h.labelled(SAMPLE, served.url), "Issue Hook")) == 202
    assert (await h.work(settings, roles.__getitem__)).jobs_failed == 0


@pytest.mark.parametrize(("budget", "says"), [
    ("budgets:\n  max_tokens: 150\n", "the task's token budget set in `.forgebot.yml` (150 tokens) is used up"),
    ("budgets:\n  max_cost_usd: 0.01\n", "the task's cost budget set in `.forgebot.yml` ($0.01) is used up"),
], ids=["tokens", "cost"])
async def test_a_forgebot_yml_budget_stops_the_task_with_one_comment_naming_it(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served, tmp_path: Path,
    budget: str, says: str,
) -> None:
    _configure(served, tmp_path, budget)
    roles = h.implement_roles()
    # each role's model by its name; the decomposer's answer alone costs $0.09
    settings.llm.prices = {model.model_name: (300.0, 1500.0) for model in roles.values()}
    await _run(settings, redis_url, fake_forge, served, roles)
    (state, detail), = await h.task_states(settings)
    assert (state, detail.split(":")[0]) == ("failed", "budget")
    (comment,) = fake_forge.comments_on("gitlab", "1", 23)
    assert says in comment.body and "purpose=failure" in comment.body
    assert not fake_forge.changes and not roles["coder"].received  # stopped before any code was written
    statuses = [c.body for c in fake_forge.comments_on("gitlab", "1", 23, status=True) if ":purpose=status" in c.body]
    assert len(statuses) == 1 and statuses[0].startswith("**Status: stopped: a limit was reached**")
    assert re.search(r"· [1-9]\d* tokens", statuses[0])  # the footer shows what was spent, not the start


async def test_the_review_rounds_budget_ends_the_fix_rounds(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served, tmp_path: Path
) -> None:
    _configure(served, tmp_path, "budgets:\n  max_review_rounds: 0\n")
    roles = h.stuck_roles()  # the test stays red: without the budget a fix round would start
    await _run(settings, redis_url, fake_forge, served, roles)
    assert await h.task_states(settings) == [("failed", "did not finish")]
    (report,) = fake_forge.comments_on("gitlab", "1", 23)
    assert "the review-rounds budget (0) is used up" in report.body
    assert len(roles["reviewer"].received) == 2  # one review, no fix round


async def test_the_recursion_limit_stops_a_cycling_route_and_says_so(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served
) -> None:
    settings.llm.recursion_limit = 10  # the stuck route needs more steps than this (its fix round)
    await _run(settings, redis_url, fake_forge, served, h.stuck_roles())
    assert await h.task_states(settings) == [("failed", "recursion limit")]
    (comment,) = fake_forge.comments_on("gitlab", "1", 23)
    assert "it was stopped after 10 steps: its work kept going round in circles" in comment.body
    assert "FORGEBOT_" not in comment.body  # the setting is the operator's (the console's failure record)
    assert not fake_forge.changes


def _size(path: Path) -> int:
    return sum(os.lstat(Path(d) / f).st_size for d, _, files in os.walk(path) for f in files)


async def test_the_disk_bound_prunes_finished_worktrees_and_idle_mirrors_before_a_task(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, served: h.Served
) -> None:
    h.setup(settings, redis_url, "Platform")
    spaces = Workspaces.for_settings(settings)
    key = repo_key("gitlab", "1")
    # what earlier tasks left: the worktree of a task that died, and the mirror of a repository no task uses
    await spaces.mirror(key, served.url, auth=GitCredentials(username="oauth2", token=SecretStr(GITLAB_TOKEN)))
    stale = await spaces.worktree(key, "died-earlier", "forgebot/died", "origin/master")
    (stale / "build.bin").write_bytes(os.urandom(300_000))
    idle = spaces.mirror_path("gitlab-999")
    shutil.copytree(spaces.mirror_path(key), idle)
    shutil.rmtree(idle / "worktrees", ignore_errors=True)
    os.utime(idle / "FETCH_HEAD", (1, 1))  # fetched long ago
    # removing the worktree (and git's record of it in the mirror) is not enough: one mirror must go too
    settings.workspace.max_bytes = spaces.usage() - _size(stale) - _size(spaces.mirror_path(key) / "worktrees") - 1
    await _run(settings, redis_url, fake_forge, served, h.implement_roles())
    assert await h.task_states(settings) == [("done", "delivered")]
    assert not stale.exists() and not idle.exists()
    assert spaces.mirror_path(key).exists()  # the task's own repository was refreshed, not re-cloned from nothing
