"""End to end on GitHub: `/review` comment on a pull request → receiver → Redis → worker → review
comments (line/side, multi-line) and the summary on the fake GitHub through PyGithub; re-review."""

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

REPO = "Codertocat/Hello-World"
MULTI = Finding(severity="minor", message="the loop body could be one expression", path="src/Cart.php", line=7,
                end_line=9, concern="style")


def _threads(fake_forge: FakeForgeState) -> list[FakeThread]:
    return list(fake_forge.threads_of("github", REPO, "change", 1))


def _pos(thread: FakeThread) -> dict[str, Any]:
    return dict(thread.comments[0].position or {})


@pytest.mark.php  # runs PHP tools (the review gates, the checks)
async def test_review_then_incremental_re_review(settings: Settings, redis_url: str, fake_forge: FakeForgeState,
                                                 tmp_path: Path) -> None:
    repo = make_change_repo(tmp_path / "repo")
    prepare(settings, redis_url, fake_forge, repo.root)
    fake_forge.add_change("github", REPO, 1, fake_change(repo))
    first = FIRST.model_copy(update={"findings": [*FIRST.findings[:1], FIRST.findings[2], FIRST.findings[3], MULTI]})
    models = Models([done(), answer(Review, first)])
    await deliver(settings, "github", 201, f"file://{repo.root}")
    await work(settings, redis_url, models)
    threads = _threads(fake_forge)
    review = [t for t in threads if t.review]
    positions = {(_pos(t)["path"], _pos(t)["line"]): _pos(t) for t in review}
    assert set(positions) == {("src/Cart.php", 8), ("src/Runner.php", 2), ("src/Cart.php", 9)}
    assert positions[("src/Cart.php", 8)]["side"] == "RIGHT"
    assert positions[("src/Cart.php", 9)]["start_line"] == 7  # a multi-line comment over context lines
    summaries = [t.comments[0].body for t in threads if "### Review" in t.comments[0].body]
    assert len(summaries) == 1 and "`src/Discount.php:40`" in summaries[0]

    runner = next(t for t in review if _pos(t)["path"] == "src/Runner.php")
    runner.comments.append(FakeComment(id=fake_forge.next_id(), body="Intended, callers moved.", author="Codertocat"))
    cart = (repo.root / "src/Cart.php").read_text().replace("$item * 2", "$this->double($item)")
    repo.commit({"src/Cart.php": cart})
    fake_forge.add_change("github", REPO, 1, fake_change(repo))
    again = Review(verdict="request_changes", summary="Still one.", verified_criteria=[1, 2], findings=[
        Finding(severity="major", message="Runner is still misnamed", path="src/Runner.php", line=2, criteria=[2])])
    models = Models([done(), answer(Review, again)])
    await deliver(settings, "github", 202, f"file://{repo.root}")
    await work(settings, redis_url, models)
    threads = _threads(fake_forge)
    review = [t for t in threads if t.review]
    assert len(review) == 3  # nothing posted twice
    fixed = [t for t in review if t.resolved]
    # both findings covering the changed line 8 are fixed; the Runner one, raised again unchanged, stays open
    assert sorted(int(_pos(t)["line"]) for t in fixed) == [8, 9]
    summaries = [t.comments[0].body for t in threads if "### Review" in t.comments[0].body]
    assert len(summaries) == 1 and "changes since the last review" in summaries[0]
    assert "callers still say Legacy (answered by the author)" in summaries[0]
    assert not any("Still applies" in c.body for t in review for c in t.comments)
