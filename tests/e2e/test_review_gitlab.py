"""End to end on GitLab: `/review` note → receiver over HTTP → real Redis → worker → review graph →
discussions on the fake GitLab through python-gitlab, then a second `/review` after a new commit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from foundation.settings import Settings
from graph.schemas import Finding, Review
from tests.e2e.review_harness import Models, deliver, fake_change, prepare, work
from tests.fakes.forge_http import FakeComment, FakeForgeState
from tests.fakes.forge_state import FakeThread
from tests.fakes.model_server import answer
from tests.graph.review.conftest import make_change_repo
from tests.graph.review.test_review_route import FIRST
from tests.graph.runtime.script import done


def _threads(fake_forge: FakeForgeState) -> tuple[list[dict[str, Any]], list[str], list[FakeThread]]:
    threads = fake_forge.threads_of("gitlab", "5", "change", 1)
    inline = [t.comments[0].position for t in threads if t.comments[0].position]
    summaries = [t.comments[0].body for t in threads if "### Review" in t.comments[0].body]
    return inline, summaries, threads


@pytest.mark.php  # runs PHP tools (the review gates, the checks)
async def test_review_then_incremental_re_review(settings: Settings, redis_url: str, fake_forge: FakeForgeState,
                                                 tmp_path: Path) -> None:
    repo = make_change_repo(tmp_path / "repo")
    prepare(settings, redis_url, fake_forge, repo.root)
    fake_forge.add_change("gitlab", "5", 1, fake_change(repo))
    removed = Finding(severity="minor", message="the old summing was clearer", path="src/Cart.php", line=8,
                      side="old", concern="readability")
    first = FIRST.model_copy(update={"findings": [*FIRST.findings, removed]})
    models = Models([done(), answer(Review, first)])
    await deliver(settings, "gitlab", 101, f"file://{repo.root}")
    await work(settings, redis_url, models)
    assert set(models.asked) == {"reviewer"}
    inline, summaries, _ = _threads(fake_forge)
    by_line = {(p["new_path"], p.get("new_line")): p for p in inline}
    assert set(by_line) == {("src/Cart.php", 8), ("src/Cart.php", 7), ("src/Runner.php", 2), ("src/Cart.php", None)}
    assert by_line[("src/Cart.php", None)]["old_line"] == 8  # a removed line: old side only
    assert by_line[("src/Cart.php", 8)].get("old_line") is None  # an added line
    assert by_line[("src/Cart.php", 7)]["old_line"] == 7  # a context line carries both sides
    assert by_line[("src/Runner.php", 2)]["old_path"] == "src/Legacy.php"  # the renamed file
    assert len(summaries) == 1 and "`src/Discount.php:40`" in summaries[0]

    runner = next(t for t in _threads(fake_forge)[2] if t.comments[0].position
                  and t.comments[0].position["new_path"] == "src/Runner.php")
    runner.comments.append(FakeComment(id=fake_forge.next_id(), body="Intended.", author="alice"))
    cart = (repo.root / "src/Cart.php").read_text().replace("$item * 2", "$this->double($item)")
    repo.commit({"src/Cart.php": cart, "src/Extra.php": "<?php\nfunction extra(): int\n{\n    return 1;\n}\n"})
    fake_forge.add_change("gitlab", "5", 1, fake_change(repo))
    second = Review(verdict="request_changes", summary="One new problem.", verified_criteria=[1, 2], findings=[
        Finding(severity="major", message="Runner still named oddly", path="src/Runner.php", line=2, criteria=[2]),
        Finding(severity="major", message="extra() is unused", path="src/Extra.php", line=2, concern="dead code"),
    ])
    models = Models([done(), answer(Review, second)])
    await deliver(settings, "gitlab", 102, f"file://{repo.root}")
    await work(settings, redis_url, models)
    diff = next(str(m.content) for m in models.reviewer.received[0] if "<diff" in str(m.content))
    assert "src/Extra.php" in diff and "src/Discount.php" not in diff  # only what changed since
    inline, summaries, threads = _threads(fake_forge)
    assert sorted((p["new_path"], p.get("new_line") or 0) for p in inline) == [
        ("src/Cart.php", 0), ("src/Cart.php", 7), ("src/Cart.php", 8), ("src/Extra.php", 2),
        ("src/Runner.php", 2)]  # no duplicates
    assert len(summaries) == 1 and "changes since the last review" in summaries[0]  # edited in place
    assert "doubling belongs in a pricing rule" in summaries[0].split("**Fixed since the last review**")[1]
    resolved = {t.comments[0].position.get("new_line") for t in threads if t.comments[0].position and t.resolved}
    assert resolved == {8}


@pytest.mark.php  # runs PHP tools (the review gates, the checks)
async def test_a_gitlab_before_15_7_without_diffs_is_reviewed_from_changes(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, tmp_path: Path
) -> None:
    """GitLab added `/merge_requests/:iid/diffs` in 15.7; before it, the route answers 404. The review took
    that for a merge request gone: nothing was posted at all. It reads `/changes` there, and anchors alike."""
    fake_forge.gitlab_without_diffs = True
    repo = make_change_repo(tmp_path / "repo")
    prepare(settings, redis_url, fake_forge, repo.root)
    fake_forge.add_change("gitlab", "5", 1, fake_change(repo))
    await deliver(settings, "gitlab", 103, f"file://{repo.root}")
    await work(settings, redis_url, Models([done(), answer(Review, FIRST)]))
    inline, summaries, _ = _threads(fake_forge)
    assert len(summaries) == 1 and {(p["new_path"], p.get("new_line")) for p in inline} >= {("src/Cart.php", 8)}
    assert fake_forge.requests_to("GET", "/merge_requests/1/changes") > 0
