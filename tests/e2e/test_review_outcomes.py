"""End to end per forge: an exhausted inspection budget is never an approval, and a missing source
branch gets a clear reply without a review (the reviewer is never even asked)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from foundation.settings import Settings
from graph.schemas import Review
from tests.e2e.review_harness import Models, deliver, fake_change, prepare, work
from tests.fakes.forge_http import FakeForgeState, FakeIssue, Fault
from tests.fakes.model_server import answer
from tests.graph.review.conftest import make_change_repo
from tests.graph.review.test_review_route import FIRST
from tests.graph.runtime.script import call, done

PROJECT = {"gitlab": "5", "github": "Codertocat/Hello-World"}


def _bodies(fake_forge: FakeForgeState, forge: str) -> list[str]:
    return [c.body for c in fake_forge.comments_on(forge, PROJECT[forge], 1, "change")]


@pytest.mark.php  # runs PHP tools (the review gates, the checks)
@pytest.mark.parametrize("forge", ["gitlab", "github"])
async def test_budget_exhaustion_is_not_approved_and_lists_unverified_criteria(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, tmp_path: Path, forge: str
) -> None:
    repo = make_change_repo(tmp_path / "repo")
    prepare(settings, redis_url, fake_forge, repo.root)
    settings.llm.research_base_calls, settings.llm.research_calls_per_criterion = 2, 0
    fake_forge.add_change(forge, PROJECT[forge], 1, fake_change(repo))
    claims = Review(verdict="approve", summary="All good.", verified_criteria=[1])  # the model tries to approve
    models = Models([call("search_code", pattern="double"), call("search_code", pattern="Runner"),
                     answer(Review, claims)])
    await deliver(settings, forge, 301, f"file://{repo.root}")
    await work(settings, redis_url, models)
    (summary,) = [b for b in _bodies(fake_forge, forge) if "### Review" in b]
    assert "### Review: incomplete, not approved" in summary
    assert "not verified: 2. Runner keeps working" in summary
    assert "inspection stopped before it finished" in summary


@pytest.mark.parametrize("forge", ["gitlab", "github"])
async def test_missing_branch_gets_a_clear_reply(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, tmp_path: Path, forge: str
) -> None:
    repo = make_change_repo(tmp_path / "repo")
    prepare(settings, redis_url, fake_forge, repo.root)
    # the branch was deleted, and the head the forge reports is nowhere in the repository (force-pushed
    # away); a head the repository still holds is reviewed, deleted branch or not (test_review_fork.py)
    fake_forge.add_change(forge, PROJECT[forge], 1, replace(fake_change(repo, branch="was-deleted"), head_sha="d" * 40))
    models = Models([])
    await deliver(settings, forge, 401, f"file://{repo.root}")
    await work(settings, redis_url, models)
    assert models.asked == []
    (reply,) = [b for b in _bodies(fake_forge, forge) if "forgebot" in b and "/review" != b.strip()]
    assert "head commit `dddddddddddd` (branch `was-deleted`) cannot be fetched from the repository" in reply


@pytest.mark.php  # runs PHP tools (the review gates, the checks)
async def test_one_refused_anchor_does_not_abort_the_rest(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, tmp_path: Path
) -> None:
    repo = make_change_repo(tmp_path / "repo")
    prepare(settings, redis_url, fake_forge, repo.root)
    fake_forge.add_change("gitlab", "5", 1, fake_change(repo))
    fake_forge.faults.append(Fault(method="POST", path="/merge_requests/1/discussions", status=400,
                                   message="400 Bad request - Note {:line_code=>[\"must be a valid line code\"]}"))
    await deliver(settings, "gitlab", 501, f"file://{repo.root}")
    await work(settings, redis_url, Models([done(), answer(Review, FIRST)]))
    threads = fake_forge.threads_of("gitlab", "5", "change", 1)
    inline = [t.comments[0].position for t in threads if t.comments[0].position]
    assert len(inline) == 2  # the first note was refused; the other two were still posted
    (summary,) = [t.comments[0].body for t in threads if "### Review" in t.comments[0].body]
    assert "`src/Cart.php:8` doubling belongs in a pricing rule (criterion 1) — not anchored on the diff" in summary


TEMPLATED = """## Summary
<!-- What does this change do? Link the issue. -->
Doubles totals.

## Acceptance criteria
<!-- One line per criterion, e.g.:
- the API answers 404 for an unknown id -->
- Totals count each item twice
- Runner keeps working

## Checklist
<!--
- [ ] I have read CONTRIBUTING.md
- [ ] I have added tests
-->

## How to try it
```
- [ ] composer test
```
"""


@pytest.mark.php  # runs PHP tools (the review gates)
async def test_a_templates_hidden_checklist_is_not_reviewed_as_criteria(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, tmp_path: Path
) -> None:
    repo = make_change_repo(tmp_path / "repo")
    prepare(settings, redis_url, fake_forge, repo.root)
    fake_forge.add_change("github", PROJECT["github"], 1, replace(fake_change(repo), body=TEMPLATED))
    models = Models([done(), answer(Review, Review(verdict="approve", summary="Fine.", verified_criteria=[1, 2]))])
    await deliver(settings, "github", 701, f"file://{repo.root}")
    await work(settings, redis_url, models)
    (summary,) = [b for b in _bodies(fake_forge, "github") if "### Review" in b]
    assert summary.startswith("### Review: approved")
    for hidden in ("404", "CONTRIBUTING", "composer test", "I have added tests"):
        assert hidden not in summary
        assert all(hidden not in str(m.content) for request in models.reviewer.received for m in request)
    assert "- verified: 1. Totals count each item twice\n- verified: 2. Runner keeps working\n" in summary


@pytest.mark.php  # runs PHP tools (the review gates)
@pytest.mark.parametrize("visibility", ["public", "private"])
async def test_a_confidential_issues_criteria_reach_a_review_only_in_a_private_project(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, tmp_path: Path, visibility: str
) -> None:
    """A merge request closes a confidential issue (a security fix): the issue's criteria would be quoted in
    the review, which everyone who sees the project reads. Left out unless the project is private."""
    repo = make_change_repo(tmp_path / "repo")
    prepare(settings, redis_url, fake_forge, repo.root)
    project = fake_forge.project("gitlab", PROJECT["gitlab"])
    assert project is not None
    project.visibility = visibility
    fake_forge.add_issue("gitlab", PROJECT["gitlab"], 12, FakeIssue(
        title="SQL injection in the login form", body="## Acceptance criteria\n- Escape the login query\n",
        confidential=True))
    closing = replace(fake_change(repo), body="Doubles totals.\n\nCloses #12")
    fake_forge.add_change("gitlab", PROJECT["gitlab"], 1, closing)
    models = Models([done(), answer(Review, Review(verdict="approve", summary="Fine.", verified_criteria=[1]))])
    await deliver(settings, "gitlab", 702, f"file://{repo.root}")
    await work(settings, redis_url, models)
    (summary,) = [b for b in _bodies(fake_forge, "gitlab") if "### Review" in b]
    prompts = str([m.content for request in models.reviewer.received for m in request])
    if visibility == "private":
        assert "Escape the login query" in summary and "Escape the login query" in prompts
        return
    assert "Escape the login query" not in summary + prompts and "SQL injection in the login" not in summary + prompts
    assert "issue #12: it is confidential, and this review is not" in summary
