"""End to end per forge: a change from a fork is reviewed at the head the forge reports.

A fork's branch is not a branch of the target repository: the forge keeps the change's head under
its own ref there (GitHub `refs/pull/N/head`, GitLab `refs/merge-requests/N/head`), and a fork's
branch is often named like one of the target's (`main`, `patch-1`). The review must read the
change's head commit, never the target's branch of the same name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from foundation.gitrunner import git
from foundation.settings import Settings
from graph.schemas import Review
from tests.e2e.review_harness import Models, deliver, fake_change, prepare, work
from tests.fakes.forge_http import FakeForgeState
from tests.fakes.model_server import answer
from tests.graph.review.conftest import ChangeRepo, make_change_repo
from tests.graph.review.test_review_route import FIRST
from tests.graph.runtime.script import done

PROJECT = {"gitlab": "5", "github": "Codertocat/Hello-World"}
HEAD_REF = {"gitlab": "refs/merge-requests/1/head", "github": "refs/pull/1/head"}


def _forked(tmp_path: Path, forge: str) -> ChangeRepo:
    """The target repository as the forge keeps it: `main`, and the fork's head only under the change's ref."""
    repo = make_change_repo(tmp_path / "repo")
    git(repo.root, "update-ref", HEAD_REF[forge], repo.head)
    git(repo.root, "checkout", "-q", "main")
    git(repo.root, "branch", "-q", "-D", "feature")
    return repo


def _bodies(fake_forge: FakeForgeState, forge: str) -> list[str]:
    return [c.body for t in fake_forge.threads_of(forge, PROJECT[forge], "change", 1) for c in t.comments]


@pytest.mark.php  # runs PHP tools (the review gates)
@pytest.mark.parametrize("forge", ["gitlab", "github"])
async def test_a_change_from_a_fork_is_reviewed_at_its_head(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, tmp_path: Path, forge: str
) -> None:
    repo = _forked(tmp_path, forge)
    prepare(settings, redis_url, fake_forge, repo.root)
    # the fork's branch is called `main`, like the target's: reading that branch would review nothing
    fake_forge.add_change(forge, PROJECT[forge], 1, fake_change(repo, branch="main"))
    models = Models([done(), answer(Review, FIRST)])
    await deliver(settings, forge, 601, f"file://{repo.root}")
    await work(settings, redis_url, models)
    assert models.asked == ["reviewer"]
    seen = "\n".join(str(m.content) for request in models.reviewer.received for m in request)
    assert "$sum += $item * 2;" in seen and "class Runner" in seen  # the fork's code, not `main`'s
    bodies = _bodies(fake_forge, forge)
    (summary,) = [b for b in bodies if "### Review" in b]
    assert "doubling belongs in a pricing rule" in "\n".join(bodies)
    assert "src/Runner.php" in "\n".join(bodies)
    assert "does not exist" not in summary
